"""The source distribution carries the kernels' Cython sources (a package built from it compiles
them), not the C files generated from them; the package declares the compiled modules."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_sdist_holds_the_kernel_sources(tmp_path):
    pytest.importorskip("build")
    pytest.importorskip("Cython")  # the build requirements, installed by the test extra
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--sdist",
            "--no-isolation",
            "--outdir",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (sdist,) = tmp_path.glob("neardup-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {Path(n).name for n in tar.getnames() if "/_kernels/" in n}
    pyx = {p.name for p in (ROOT / "src" / "neardup" / "_kernels").glob("*.pyx")}
    assert pyx and pyx <= names and "_common.pxd" in names
    assert not any(n.endswith((".c", ".so", ".pyd")) for n in names)


def test_every_kernel_source_is_a_built_module():
    import importlib

    for pyx in (ROOT / "src" / "neardup" / "_kernels").glob("*.pyx"):
        mod = importlib.import_module(f"neardup._kernels.{pyx.stem}")
        assert Path(mod.__file__).suffix in (".so", ".pyd"), mod.__file__
