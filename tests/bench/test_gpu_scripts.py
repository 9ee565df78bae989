"""bench/gpu_kit.sh and bench/gpu_lease.sh, the scripts for a GPU machine without a package
index: both parse, and every package the kit downloads is pinned in requirements.lock (the
kit refuses an unpinned one), so a lock update cannot silently leave the kit behind."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

BENCH = Path("bench")


def test_scripts_parse():
    for script in ("gpu_kit.sh", "gpu_lease.sh"):
        subprocess.run(["bash", "-n", str(BENCH / script)], check=True)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_kit_package_is_pinned_in_the_lock():
    text = (BENCH / "gpu_kit.sh").read_text()
    listed = re.search(r'DEVICE_MISSING="([^"]+)"', text).group(1).split()
    pinned = {_norm(line.split("==")[0]) for line in Path("requirements.lock").read_text().splitlines()
              if "==" in line and not line.startswith("#")}
    assert len(listed) >= 10 and "gymnasium" in listed
    assert [n for n in listed + ["ray", "pybullet"] if _norm(n) not in pinned] == []
