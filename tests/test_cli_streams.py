"""Inputs read once (standard input as ``-``, a named pipe) and runs that fail while writing:
a user gets the same outputs as from a file, and a failed run leaves no output that looks
complete."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from neardup.cli import main

ROOT = Path(__file__).resolve().parents[1]
NEWS = ROOT / "examples" / "news.jsonl"


def _neardup(*args: str, stdin: bytes | None = None, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neardup.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture(scope="module")
def from_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("file") / "out"
    assert main(["dedup", str(NEWS), "--id-field", "id", "-o", str(out), "--quiet"]) == 0
    return out


def _same_outputs(a: Path, b: Path, name_a: str, name_b: str) -> None:
    for table in ("clusters.parquet", "pairs.parquet"):
        assert pq.read_table(a / table).equals(pq.read_table(b / table)), table
    assert (a / "deduplicated" / name_a).read_bytes() == (b / "deduplicated" / name_b).read_bytes()


@pytest.mark.parametrize("compress", [False, True])
def test_standard_input_gives_the_outputs_of_the_file(tmp_path, from_file, compress):
    data = NEWS.read_bytes()
    proc = _neardup(
        "dedup",
        "-",
        "--id-field",
        "id",
        "-o",
        "out",
        "--quiet",
        stdin=gzip.compress(data) if compress else data,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = tmp_path / "out"
    # the deduplicated copy of a compressed JSONL input is written uncompressed
    _same_outputs(out, from_file, "stdin.jsonl", "news.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"] == ["-"]
    assert sorted(p.name for p in out.iterdir()) == [
        "clusters.parquet",
        "deduplicated",
        "pairs.parquet",
        "summary.json",
    ]


def test_a_named_pipe_is_read_once_and_copied(tmp_path, from_file):
    fifo = tmp_path / "feed.jsonl"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(NEWS.read_bytes()))
    writer.start()
    rc = main(["dedup", str(fifo), "--id-field", "id", "-o", str(tmp_path / "out"), "--quiet"])
    writer.join()
    assert rc == 0
    _same_outputs(tmp_path / "out", from_file, "feed.jsonl", "news.jsonl")


def test_read_once_commands_take_standard_input(tmp_path):
    proc = _neardup(
        "fca",
        "-",
        "--id-field",
        "id",
        "-o",
        "fca",
        "--min-common",
        "40",
        "--quiet",
        stdin=NEWS.read_bytes(),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert (
        main(
            [
                "fca",
                str(NEWS),
                "--id-field",
                "id",
                "-o",
                str(tmp_path / "ref"),
                "--min-common",
                "40",
                "--quiet",
            ]
        )
        == 0
    )
    assert (tmp_path / "fca" / "clusters-k40.jsonl").read_text() == (
        tmp_path / "ref" / "clusters-k40.jsonl"
    ).read_text()


def test_standard_input_that_is_not_json_lines_needs_a_format(tmp_path):
    proc = _neardup(
        "dedup", "-", "-o", "out", "--quiet", stdin=b"text\nhello world\n", cwd=tmp_path
    )
    assert proc.returncode == 3
    assert b"give it with --input-format" in proc.stderr
    assert not (tmp_path / "out").exists()
    proc = _neardup(
        "dedup",
        "-",
        "-o",
        "out",
        "--quiet",
        "--input-format",
        "csv",
        stdin=b"text\nhello world\nhello world\n",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert (tmp_path / "out" / "deduplicated" / "stdin.csv").read_text() == "text\nhello world\n"


def test_a_run_that_fails_while_writing_leaves_no_output(tmp_path, capsys):
    """The corpus cannot be written (``deduplicated`` is a file): the tables written meanwhile
    are removed, and so is an earlier run's summary, which no longer describes the folder."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    (out / "deduplicated").write_text("in the way")
    rc = main(["dedup", str(NEWS), "--id-field", "id", "-o", str(out), "--quiet"])
    assert rc == 4
    err = capsys.readouterr().err
    assert "no output of this run was left" in err
    assert sorted(p.name for p in out.iterdir()) == ["deduplicated"]
    assert (out / "deduplicated").read_text() == "in the way"


def test_an_interrupt_says_what_it_left(tmp_path):
    """SIGINT (here: KeyboardInterrupt raised in the run) gives exit 130 and a message that
    is true for the command: a dedup run leaves nothing of its own."""
    code = f"""
import sys
import time
from neardup.cli import main

def interrupted(*a, **k):
    time.sleep(0.5)  # the tables, written meanwhile, are in place
    raise KeyboardInterrupt

import neardup.io
neardup.io.write_deduplicated = interrupted
sys.exit(main(["dedup", {str(NEWS)!r}, "--id-field", "id", "-o", "out", "--quiet"]))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip() == (
        "neardup: interrupted; no output of this run was left behind, nor its scratch folder; "
        "run the same command again to start over"
    )
    assert list((tmp_path / "out").iterdir()) == []


def test_the_dask_engine_refuses_standard_input_clearly(tmp_path):
    proc = _neardup(
        "dedup", "-", "-o", "out", "--engine", "dask", stdin=NEWS.read_bytes(), cwd=tmp_path
    )
    assert proc.returncode == 2
    assert b"read by the local engine only" in proc.stderr and b"Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
