"""The package as a user installs it: a wheel built from this checkout, installed into a fresh
virtual environment with the core dependencies only (no extra). The batch library and
``neardup dedup`` work there; every feature of an extra says, in one line, which extra to
install; and the installation holds none of the extras' packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEWS = ROOT / "examples" / "news.jsonl"

#: distributions that only extras bring (a core install must hold none of them)
EXTRA_ONLY = (
    "fastapi",
    "uvicorn",
    "python-multipart",
    "starlette",
    "redis",
    "dask",
    "distributed",
    "matplotlib",
    "scikit-learn",
    "scipy",
    "pandas",
    "pyfim",
    "httpx",
)


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory):
    """(wheel, venv) : this checkout's wheel installed with its core dependencies only."""
    pytest.importorskip("build")
    pytest.importorskip("Cython")
    work = tmp_path_factory.mktemp("install")
    wheels = work / "wheels"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(wheels),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = wheels.glob("neardup-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    proc = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0 and "No matching distribution" in proc.stderr:
        pytest.skip(f"the core dependencies cannot be installed here: {proc.stderr[-500:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return wheel, venv


def _run(venv: Path, *args: str, cwd: Path, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        **kw,
    )


def test_the_wheel_carries_compiled_kernels_and_type_information(core_venv):
    wheel, _ = core_venv
    names = zipfile.ZipFile(wheel).namelist()
    assert "neardup/py.typed" in names
    assert any(n.startswith("neardup/_kernels/") and n.endswith(".so") for n in names)
    assert not any(n.endswith((".pyx", ".c")) for n in names)


def test_a_core_install_holds_no_extra(core_venv, tmp_path):
    _, venv = core_venv
    proc = _run(venv, "pip", "list", "--format=json", cwd=tmp_path)
    installed = {d["name"].lower() for d in json.loads(proc.stdout)}
    assert {"neardup", "numpy", "pyarrow", "xxhash", "orjson", "rich"} <= installed
    assert not installed & set(EXTRA_ONLY), installed & set(EXTRA_ONLY)


def test_dedup_runs_from_a_core_install(core_venv, tmp_path):
    """The command and the library, outside the repository, give the clusters that this
    checkout's own installation gives."""
    _, venv = core_venv
    proc = _run(
        venv,
        "neardup",
        "dedup",
        str(NEWS),
        "--id-field",
        "id",
        "-o",
        "out",
        "--quiet",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())

    from neardup.cli import main

    assert (
        main(["dedup", str(NEWS), "--id-field", "id", "-o", str(tmp_path / "here"), "--quiet"]) == 0
    )
    here = json.loads((tmp_path / "here" / "summary.json").read_text())
    for key in ("documents", "distinct_texts", "clusters", "removed", "duplicate_pairs"):
        assert summary[key] == here[key] > 0, key
    code = (
        "import neardup\n"
        "r = neardup.dedup(['one two three four five six', 'one two three four five "
        "seven', 'something else entirely here'], threshold=0.5, shingle='word:2')\n"
        "print(r.labels.tolist())"
    )
    proc = _run(venv, "python", "-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[0, 0, 1]"


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["serve", "--index", "x.db", "--create"], "server"),
        (["index", "create", "redis://127.0.0.1:1/0"], "redis"),
        (["dedup", str(NEWS), "--id-field", "id", "-o", "out", "--engine", "dask"], "dask"),
        (
            [
                "fca",
                str(NEWS),
                "--id-field",
                "id",
                "-o",
                "out",
                "--min-common",
                "3",
                "--truth",
                "ref.csv",
                "--baseline-clusters",
                "3",
            ],
            "fca",
        ),
    ],
)
def test_a_missing_extra_is_named_in_one_line(core_venv, tmp_path, args, extra):
    _, venv = core_venv
    (tmp_path / "ref.csv").write_text("id_a,id_b\nn1,n2\n")
    proc = _run(venv, "neardup", *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"pip install 'neardup[{extra}]'" in lines[0]
    assert "Traceback" not in proc.stderr


def test_figures_are_left_out_with_a_note_when_matplotlib_is_missing(core_venv, tmp_path):
    _, venv = core_venv
    proc = _run(venv, "neardup", "analyze", "scurve", "-o", "curves", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'neardup[plots]'" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "curves").iterdir()) == ["scurve.csv", "scurve.md"]
