"""The progress display of ``neardup dedup``: on a terminal the read stage shows its speed
(MB/s, documents/s) and the time left; in a log or a pipe its lines are as they were."""

from __future__ import annotations

import io

import orjson
from rich.console import Console

from neardup import dedup_files
from neardup.cli import main
from neardup.cli.common import RichProgress, read_rates
from neardup.synth import make_corpus


def test_read_rates():
    assert read_rates(0, 100, 0, 1.0) == ""
    assert read_rates(10, 100, None, 0.0) == ""
    assert read_rates(50_000_000, 200_000_000, 25_000, 2.0) == (
        " 25.0 MB/s 12.5k docs/s ETA 0:00:06"
    )
    assert read_rates(1_000_000_000, 1_000_000_000, 486_000, 2.0) == " 500 MB/s 243k docs/s"
    assert read_rates(5_000_000, 5_000_000, None, 0.5) == " 10.0 MB/s"
    assert read_rates(1_000_000, 7_201_000_000, 10, 1.0) == " 1.0 MB/s 10 docs/s ETA 2:00:00"
    assert read_rates(1_000_000, None, 3_000_000, 1.0) == " 1.0 MB/s 3.0M docs/s"


def _render(terminal: bool) -> tuple[str, str]:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=160, color_system=None)
    p = RichProgress(console)
    p.start("read", 4_000_000)
    p.update("read", 1_000_000, 4_000_000, documents=500)
    during = p._extra("read", 1_000_000, 4_000_000)
    p.finish("read")
    p.update("verify", 12, None)
    p.finish("verify")
    p.close()
    return during, buf.getvalue()


def test_rates_and_time_left_on_a_terminal():
    during, out = _render(terminal=True)
    assert during.startswith("1.0 MB ") and " MB/s " in during and " docs/s ETA 0:00:" in during
    last = [line for line in out.splitlines() if "read, shingle, sketch" in line][-1]
    assert "MB/s" in last and "docs/s" in last and "ETA" not in last


def test_no_rates_off_a_terminal():
    during, out = _render(terminal=False)
    assert during == "1.0 MB"
    assert "MB/s" not in out and "docs/s" not in out and "ETA" not in out
    assert "1.0 MB" in out


class _Recorder:
    """A progress object as the protocol has it, which counts documents."""

    counts_documents = True

    def __init__(self):
        self.docs: list[int] = []

    def start(self, stage, total):
        pass

    def update(self, stage, done, total=None, documents=None):
        if stage == "read":
            assert documents is not None
            self.docs.append(documents)

    def finish(self, stage):
        pass


class _Plain:
    """A progress object of the protocol only (no documents)."""

    def __init__(self):
        self.reads = 0

    def start(self, stage, total):
        pass

    def update(self, stage, done, total=None):
        self.reads += stage == "read"

    def finish(self, stage):
        pass


def test_the_job_reports_documents_to_a_display_that_counts_them(tmp_path):
    texts, _ = make_corpus(120, seed=2)
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"text": t}) + b"\n" for t in texts))
    rec = _Recorder()
    dedup_files([path], tmp_path / "a", progress=rec, chunk_size=50)
    assert rec.docs and rec.docs[-1] == 120 and rec.docs == sorted(rec.docs)
    plain = _Plain()
    dedup_files([path], tmp_path / "b", progress=plain, chunk_size=50)
    assert plain.reads >= 1


def test_command_line_stderr_off_a_terminal(tmp_path, capsys):
    texts, _ = make_corpus(60, seed=4)
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"text": t}) + b"\n" for t in texts))
    assert main(["dedup", str(path), "-o", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "read, shingle, sketch" in err and " MB" in err
    assert "MB/s" not in err and "docs/s" not in err and "ETA" not in err
    assert main(["dedup", str(path), "-o", str(tmp_path / "q"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
