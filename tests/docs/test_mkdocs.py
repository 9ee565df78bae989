"""The documentation: the MkDocs site builds with --strict, every nav page is rendered, and the
README stays a short front page whose relative links all lead somewhere.

`mkdocs build --strict` turns every warning into a failure: a link to a missing page or
anchor (`validation.links` in mkdocs.yml), a nav entry without a file. The last test checks
that this strictness is really on, by building a copy of the site with one broken link and
one nav entry whose page is missing.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

MKDOCS_YML = REPO / "mkdocs.yml"
DOCS = REPO / "docs"
README = REPO / "README.md"
README_MAX_LINES = 450
# [text](target) and ![alt](target); a target ends at whitespace or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
         "--site-dir", str(site)],
        capture_output=True, text=True, timeout=300, cwd=config.parent)


def _nav_pages(nav) -> list[str]:
    """Every page file named in a mkdocs nav (nested sections included)."""
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages += _nav_pages(value)
        elif isinstance(value, str) and not re.match(r"[a-z]+://", value):
            pages.append(value)
    return pages


def _rendered(site: Path, page: str) -> Path:
    """Where MkDocs writes a page with directory URLs (its default): a/b.md -> a/b/index.html."""
    stem = page[:-3]
    if stem == "index" or stem.endswith("/index"):
        return site / f"{stem}.html"
    return site / stem / "index.html"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = _build(MKDOCS_YML, out)
    assert built.returncode == 0, (
        f"mkdocs build --strict failed (exit {built.returncode}):\n{built.stdout}\n{built.stderr}")
    return out


def test_the_site_builds_strictly_and_every_nav_page_is_rendered(site):
    config = yaml.safe_load(MKDOCS_YML.read_text())
    assert config.get("strict") is True, "mkdocs.yml must keep strict: true"
    pages = _nav_pages(config["nav"])
    assert len(pages) == len(set(pages)), f"a page is in the nav twice: {pages}"
    for page in pages:
        assert (DOCS / page).is_file(), f"nav names {page}, which docs/ lacks"
        out = _rendered(site, page)
        assert out.is_file(), f"{page} was not rendered to {out.relative_to(site)}"
        title = (DOCS / page).read_text().splitlines()[0].lstrip("# ").strip()
        assert title, f"{page} does not open with a title"
        assert html.escape(title.split("`")[0], quote=False) in out.read_text(), (
            f"{out}: page title {title!r} missing")


def test_every_page_in_docs_is_in_the_nav():
    config = yaml.safe_load(MKDOCS_YML.read_text())
    in_nav = set(_nav_pages(config["nav"]))
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk - in_nav == set(), "pages a reader can only reach by URL; add them to the nav"


def test_the_site_has_the_pages_a_newcomer_needs():
    names = set(_nav_pages(yaml.safe_load(MKDOCS_YML.read_text())["nav"]))
    for page in ("index.md", "configuring.md", "thesis.md", "slurm.md", "aws.md", "failures.md",
                 "tracking.md", "architecture.md", "benchmarks.md", "history.md",
                 "offpolicy-rhythm.md"):
        assert page in names, f"the nav lacks {page}"
    history = (DOCS / "history.md").read_text()
    assert "history" in history.splitlines()[0].lower(), "history.md must say it is history"


def test_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move detail to docs/")


def test_every_relative_link_in_the_readme_points_to_an_existing_file(site):
    text = README.read_text()
    targets = LINK.findall(text)
    assert targets, "no links found in README.md (has the link syntax changed?)"
    broken = []
    for target in targets:
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # http(s), mailto: not checked here; an anchor of the README itself
        path, _, anchor = target.partition("#")
        if not (REPO / path).exists():
            broken.append(target)
        elif anchor and path.startswith("docs/") and path.endswith(".md"):
            # a section of a docs page: the heading ids are the site's (GitHub's agree for
            # plain headings)
            page = _rendered(site, path[len("docs/"):]).read_text()
            if f'id="{anchor}"' not in page:
                broken.append(target)
    assert not broken, f"README.md links to files or sections that do not exist: {broken}"


def test_the_readme_names_its_sections_for_the_thesis_and_the_default_study():
    text = README.read_text()
    assert re.search(r"^#+ Reproducing the thesis", text, re.M), "README lost 'Reproducing the thesis'"
    section = text.split("Reproducing the thesis", 1)[1]
    assert re.search(r"^\|.*\|\s*$", section, re.M), "the 'Reproducing the thesis' section has no table"
    assert "| experiment | algorithm | env |" in text, "README lost the default study's returns table"


def test_a_broken_link_or_a_missing_page_fails_the_build(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(MKDOCS_YML, copy / "mkdocs.yml")
    assert _build(copy / "mkdocs.yml", tmp_path / "ok").returncode == 0

    page = copy / "docs" / "index.md"
    original = page.read_text()
    page.write_text(original + "\nSee [a page that is not there](no-such-page.md).\n")
    broken = _build(copy / "mkdocs.yml", tmp_path / "broken")
    assert broken.returncode != 0 and "no-such-page.md" in broken.stdout + broken.stderr

    page.write_text(original + "\nSee [an anchor that is not there](configuring.md#no-such-anchor).\n")
    anchor = _build(copy / "mkdocs.yml", tmp_path / "anchor")
    assert anchor.returncode != 0 and "no-such-anchor" in anchor.stdout + anchor.stderr

    page.write_text(original)
    (copy / "docs" / "tracking.md").unlink()
    missing = _build(copy / "mkdocs.yml", tmp_path / "missing")
    assert missing.returncode != 0 and "tracking.md" in missing.stdout + missing.stderr
