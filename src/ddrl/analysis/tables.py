"""Tables as CSV (data), Markdown (README, report) and LaTeX booktabs (thesis), atomically.

Every table ddrl writes goes through :func:`write_table` (or :func:`write_formats` when a rule
names each file): scaling, cost, provenance, returns and search leaderboards alike.

A table is a DataFrame plus a column spec: which columns to show in the Markdown and LaTeX
versions, under which header, with how many decimals. The CSV keeps every column at full
precision, so nothing is lost to formatting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ddrl import atomic

FORMATS = ("csv", "md", "tex")


@dataclass(frozen=True)
class Column:
    name: str           # DataFrame column
    header: str         # header text (plain; LaTeX-escaped when written)
    decimals: int | None = None  # None: as is (ints, text)
    float_format: str | None = None  # e.g. ".4g": a format spec for floats instead of decimals


def distinguishing_columns(df: pd.DataFrame, columns: Sequence[Column], by: Sequence[str],
                           key: str = "config_id", header: str = "Config") -> list[Column]:
    """``columns``, with ``key`` (a configuration identity) shown after the last of ``by`` when
    some rows differ in ``key`` but agree in every column of ``by`` (e.g. runs aggregated
    without their experiment names): then the rows could not be told apart otherwise."""
    if df.empty or key not in df or not df.groupby(list(by), dropna=False)[key].nunique().gt(1).any():
        return list(columns)
    names = [c.name for c in columns]
    at = max(names.index(b) for b in by if b in names) + 1
    return [*columns[:at], Column(key, header), *columns[at:]]


def _cell(value: Any, decimals: int | None, float_format: str | None = None) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if math.isinf(value):
            return "inf"
        if float_format is not None:
            return format(value, float_format)
        if decimals is None:
            return repr(round(value, 6))
        return f"{value:.{decimals}f}"
    if hasattr(value, "item"):  # numpy scalars
        return _cell(value.item(), decimals, float_format)
    return str(value)


def _numeric(df: pd.DataFrame, columns: Sequence[Column]) -> list[bool]:
    """Right-align numbers (not booleans, which print as yes/no)."""
    return [c.decimals is not None or (pd.api.types.is_numeric_dtype(df[c.name])
                                       and not pd.api.types.is_bool_dtype(df[c.name]))
            for c in columns]


def _rows(df: pd.DataFrame, columns: Sequence[Column]) -> list[list[str]]:
    return [[_cell(row[c.name], c.decimals, c.float_format) for c in columns]
            for _, row in df.iterrows()]


def to_markdown(df: pd.DataFrame, columns: Sequence[Column], caption: str = "") -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    numeric = _numeric(df, columns)
    lines = []
    if caption:
        lines += [caption, ""]
    lines.append("| " + " | ".join(esc(c.header) for c in columns) + " |")
    lines.append("|" + "|".join("---:" if n else ":---" for n in numeric) + "|")
    for cells in _rows(df, columns):
        lines.append("| " + " | ".join(esc(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
                  "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "\\": r"\textbackslash{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(df: pd.DataFrame, columns: Sequence[Column], caption: str = "",
             label: str = "") -> str:
    """A ``table`` with a booktabs ``tabular`` (needs ``\\usepackage{booktabs}``)."""
    numeric = _numeric(df, columns)
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [r"\begin{table}[htbp]", r"\centering"]
    if caption:
        lines.append(r"\caption{" + latex_escape(caption) + "}")
    if label:
        lines.append(r"\label{" + label + "}")
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule",
              " & ".join(latex_escape(c.header) for c in columns) + r" \\", r"\midrule"]
    for cells in _rows(df, columns):
        lines.append(" & ".join(latex_escape(c) for c in cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_table(df: pd.DataFrame, columns: Sequence[Column], stem: str | Path, *,
                caption: str = "", label: str = "", footer: str = "") -> list[Path]:
    """Write ``<stem>.csv``, ``<stem>.md`` and ``<stem>.tex``; return the three paths.

    ``footer`` (e.g. how the runs were timed) goes under the Markdown table and into a
    LaTeX comment.
    """
    stem = Path(stem)
    paths = {ext: stem.with_name(f"{stem.name}.{ext}") for ext in FORMATS}
    write_formats(df, columns, paths, caption=caption, label=label or f"tab:{stem.name}",
                  footer=footer)
    return list(paths.values())


def write_formats(df: pd.DataFrame, columns: Sequence[Column], paths: Mapping[str, str | Path], *,
                  csv_df: pd.DataFrame | None = None, caption: str = "", label: str = "",
                  footer: str = "") -> None:
    """Write the formats named in ``paths`` (``csv``, ``md``, ``tex``: path).

    The CSV holds ``csv_df`` when given (the data), else ``df``; Markdown and LaTeX show
    ``columns`` of ``df``.
    """
    unknown = sorted(set(paths) - set(FORMATS))
    if unknown:
        raise ValueError(f"unknown table format(s) {unknown}; expected some of {FORMATS}")
    missing = [c.name for c in columns if c.name not in df.columns]
    if missing:
        raise KeyError(f"table {Path(next(iter(paths.values()))).stem}: no column(s) {missing} in the data")
    if "csv" in paths:
        with atomic.atomic_path(paths["csv"]) as tmp:
            (df if csv_df is None else csv_df).to_csv(tmp, index=False)
    if "md" in paths:
        md = to_markdown(df, columns, caption)
        if footer:
            md += "\n" + footer.strip() + "\n"
        atomic.write_text(paths["md"], md)
    if "tex" in paths:
        tex = to_latex(df, columns, caption, label)
        if footer:
            tex = "".join(f"% {line}\n" for line in footer.strip().splitlines()) + tex
        atomic.write_text(paths["tex"], tex)
