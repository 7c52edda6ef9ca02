"""neardup runs from an installation nobody may write to (a container image, a system install,
a non-root user): its kernels are compiled when the package is built, so a run neither compiles
nor caches anything, and nothing in the package, the home folder or the temporary folder is
written by it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import neardup


def _can_mount_read_only() -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("unshare"):
        return "needs Linux, root and unshare for a read-only bind mount"
    probe = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp",
        ],
        capture_output=True,
        text=True,
    )
    return None if probe.returncode == 0 else f"cannot mount read-only: {probe.stderr.strip()}"


def test_dedup_runs_with_a_read_only_package_home_and_tmp(tmp_path):
    """End to end: the package folder, HOME and TMPDIR mounted read-only; ``import neardup``,
    ``neardup.dedup`` and ``neardup dedup`` to a writable output folder work."""
    why = _can_mount_read_only()
    if why:
        pytest.skip(why)
    pkg = Path(neardup.__file__).parent
    home, tmp, out = tmp_path / "home", tmp_path / "tmp", tmp_path / "out"
    for d in (home, tmp, out):
        d.mkdir()
    news = Path(__file__).resolve().parents[1] / "examples" / "news.jsonl"
    code = (
        "import sys, neardup\n"
        "r = neardup.dedup(['one two three four five six', 'one two three four five "
        "seven'], threshold=0.5, shingle='word:2')\n"
        "print(r.summary['clusters'])\n"
        "from neardup.cli import main\n"
        f"sys.exit(main(['dedup', {str(news)!r}, '--id-field', 'id', '-o', "
        f"{str(out / 'run')!r}, '--quiet']))\n"
    )
    mounts = " && ".join(
        f"mount --bind {d} {d} && mount -o remount,bind,ro {d}" for d in (pkg, home, tmp)
    )
    script = f'{mounts} && exec "$0" -c "$1"'
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(tmp))
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, sys.executable, code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1"]
    assert (out / "run" / "summary.json").exists()
    assert not list(home.iterdir()) and not list(tmp.iterdir())


def test_the_batch_path_loads_no_compiler():
    """A dedup run imports no just-in-time compiler: the kernels are machine code already."""
    code = (
        "import sys, neardup\n"
        "neardup.dedup(['a b c d e f', 'a b c d e g'], threshold=0.5, shingle='word:2')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('numba', 'llvmlite', 'scipy')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
