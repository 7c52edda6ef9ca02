"""The compiled kernels' cache works on read-only installations: when neither the package's
folder nor the user's cache folder can be written, neardup gives numba a private folder in the
temporary directory instead of failing with "no locator available"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import neardup
from neardup import _jit


@pytest.fixture
def unwritable(monkeypatch):
    """Make the folders under the given roots look read-only to ``_jit`` (root may write
    anywhere, so real permissions cannot show it here)."""
    roots: list[Path] = []
    real = os.access

    def access(path, mode, *a, **kw):
        if mode & os.W_OK and any(Path(path) == r or r in Path(path).parents for r in roots):
            return False
        return real(path, mode, *a, **kw)

    monkeypatch.setattr(_jit.os, "access", access)
    return roots


def test_numba_keeps_its_own_choice_when_a_default_place_is_writable(tmp_path, unwritable):
    pkg, user, tmp = tmp_path / "pkg", tmp_path / "home" / ".cache" / "numba", tmp_path / "tmp"
    for d in (pkg, tmp, tmp_path / "home"):
        d.mkdir(parents=True)
    assert _jit.fallback_cache_dir(pkg, user, tmp) is None  # __pycache__ can be made
    unwritable.append(pkg)
    assert _jit.fallback_cache_dir(pkg, user, tmp) is None  # the user's cache can be made
    assert not list(tmp.iterdir())


def test_a_private_folder_in_tmp_when_nothing_else_is_writable(tmp_path, unwritable):
    pkg, home, tmp = tmp_path / "pkg", tmp_path / "home", tmp_path / "tmp"
    for d in (pkg, home, tmp):
        d.mkdir()
    unwritable += [pkg, home]
    got = _jit.fallback_cache_dir(pkg, home / ".cache" / "numba", tmp)
    assert got == tmp / f"neardup-numba-{os.getuid()}"
    assert got.is_dir() and got.stat().st_mode & 0o777 == 0o700
    assert _jit.fallback_cache_dir(pkg, home / ".cache" / "numba", tmp) == got  # reused
    # a folder of that name that others can write into is not trusted: a fresh one instead
    got.chmod(0o777)
    other = _jit.fallback_cache_dir(pkg, home / ".cache" / "numba", tmp)
    assert other is not None and other != got and other.parent == tmp
    assert other.stat().st_mode & 0o777 == 0o700


def _can_mount_read_only() -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("unshare"):
        return "needs Linux, root and unshare for a read-only bind mount"
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"cannot mount read-only: {probe.stderr.strip()}"


def test_dedup_runs_with_a_read_only_package_and_home(tmp_path):
    """End to end: the installed package folder and HOME mounted read-only, no
    NUMBA_CACHE_DIR; ``import neardup`` and a first ``dedup`` work, and the kernels are cached
    in the temporary directory."""
    why = _can_mount_read_only()
    if why:
        pytest.skip(why)
    pkg = Path(neardup.__file__).parent
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    code = ("import neardup, numba\n"
            "r = neardup.dedup(['one two three four five six', 'one two three four five "
            "seven'], threshold=0.5, shingle='word:2')\n"
            "print(r.summary['clusters'], numba.config.CACHE_DIR)\n")
    script = (f"mount --bind {pkg} {pkg} && mount -o remount,bind,ro {pkg} && "
              f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && "
              f"exec \"$0\" -c \"$1\"")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(tmp))
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                           sys.executable, code], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    clusters, cache = proc.stdout.split()
    assert clusters == "1" and Path(cache) == tmp / f"neardup-numba-{os.getuid()}"
    assert list(Path(cache).rglob("*.nbi"))


def test_the_first_run_says_that_it_compiles(tmp_path):
    """With an empty kernel cache the first ``neardup dedup`` says on stderr that it compiles
    the kernels (once); the next run, and any ``--quiet`` run, says nothing of it."""
    news = Path(__file__).resolve().parents[1] / "examples" / "news.jsonl"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def dedup(*extra):
        proc = subprocess.run([sys.executable, "-m", "neardup.cli", "dedup", str(news),
                               "--id-field", "id", "-o", str(tmp_path / "out"), "--json",
                               *extra], capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stderr

    first = dedup()
    assert "first run on this installation: compiling the kernels" in first
    assert "first run" not in dedup()
    assert list((tmp_path / "cache").rglob("*.nbi"))


def test_quiet_and_kernel_free_commands_do_not_announce(monkeypatch, capsys):
    import argparse

    import neardup.stages
    from neardup.cli.common import run_command

    monkeypatch.setattr(neardup.stages, "first_run", lambda: True)
    for ns, said in ((dict(uses_kernels=True, quiet=False), True),
                     (dict(uses_kernels=True, quiet=True), False),
                     (dict(quiet=False), False)):
        assert run_command(argparse.Namespace(func=lambda a: 0, **ns)) == 0
        assert ("compiling the kernels" in capsys.readouterr().err) is said
