"""`neardup index`, `neardup stream` and `neardup dedup --save-index`, and an index that
survives a writer killed with SIGKILL in the middle of a batch."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from neardup import DedupConfig, Index, choose_bands
from neardup.cli import main
from neardup.synth import make_corpus

ROOT = Path(__file__).resolve().parents[1]
NEWS = ROOT / "examples" / "news.jsonl"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(x) for x in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_index_commands(tmp_path, capsys):
    db = tmp_path / "news.db"
    code, out, _ = run(capsys, "index", "create", db, "--threshold", "0.7", "--json")
    assert code == 0 and json.loads(out)["threshold"] == 0.7
    code, out, _ = run(capsys, "index", "add", db, NEWS, "--id-field", "id", "--json")
    assert code == 0 and json.loads(out)["added"] == 330
    records = [json.loads(line) for line in NEWS.read_text().splitlines()]
    q = tmp_path / "q.txt"
    q.write_text(records[0]["text"])
    code, out, _ = run(capsys, "index", "query", db, "--file", q, "--json")
    got = json.loads(out)[0]["matches"]
    with Index(db) as idx:
        want = [{"id": m.id, "similarity": m.similarity} for m in idx.query(records[0]["text"])]
    assert code == 0 and got == want and got[0] == {"id": records[0]["id"], "similarity": 1.0}
    code, out, _ = run(capsys, "index", "query", db, "nothing like any news item at all")
    assert code == 0 and "unique" in out
    code, out, _ = run(
        capsys, "index", "remove", db, records[0]["id"], "nope", "--json", "--strict"
    )
    assert code == 3 and json.loads(out) == {"removed": 1, "not_found": ["nope"], "documents": 329}
    code, out, _ = run(capsys, "index", "stats", db, "--json")
    st = json.loads(out)
    # the banding the default --min-recall chooses for the threshold 0.7
    want = choose_bands(0.7, 128, DedupConfig().lsh.min_recall)
    assert st["documents"] == 329 and (st["bands"], st["rows"]) == want == (32, 4)
    # errors: repeated ids, nothing to query, no such index, an existing one created again
    code, _, err = run(capsys, "index", "add", db, NEWS, "--id-field", "id")
    assert code == 3 and "already in the index" in err and "0 documents were added" in err
    assert run(capsys, "index", "query", db)[0] == 2
    code, _, err = run(capsys, "index", "stats", tmp_path / "missing.db")
    assert code == 4 and "neardup index create" in err
    code, _, err = run(capsys, "index", "create", db)
    assert code == 4 and "exists" in err


def test_stream_decisions(tmp_path, capsys, monkeypatch):
    db = tmp_path / "s.db"
    assert run(capsys, "index", "create", db, "--threshold", "0.6")[0] == 0
    base = " ".join(f"word{i}" for i in range(40))
    lines = [
        json.dumps({"id": "a", "text": base}),
        json.dumps({"id": "b", "text": base.replace("word7", "other")}),
        "not json",
        json.dumps({"id": "c"}),
        "",
        json.dumps({"id": 4, "text": "something new and different, nothing in common"}),
    ]
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(("\n".join(lines) + "\n").encode()))
    )
    code, out, err = run(capsys, "stream", db)
    got = [json.loads(x) for x in out.splitlines()]
    assert code == 0
    assert got[0] == {"id": "a", "decision": "unique", "added": True, "matches": []}
    assert got[1]["decision"] == "duplicate" and got[1]["matches"][0]["id"] == "a"
    assert got[2]["decision"] == "error" and got[2]["line"] == 3 and "malformed" in got[2]["error"]
    assert got[3]["line"] == 4 and "field 'text'" in got[3]["error"]
    assert got[4] == {"id": "4", "decision": "unique", "added": True, "matches": []}
    assert "5 lines, 2 unique, 1 duplicates, 2 errors" in err
    with Index(db) as idx:
        assert sorted(idx.ids()) == ["4", "a"]


def test_stream_reads_through_the_record_path(tmp_path, capsys, monkeypatch):
    """stream reports the readers' reasons and locations, uses "stdin:LINE" for a record
    without an id, and reports an id the index already holds as an error line."""
    db = tmp_path / "s.db"
    assert run(capsys, "index", "create", db)[0] == 0
    text = " ".join(f"w{i}" for i in range(30))
    raw = b"\n".join(
        [
            json.dumps({"text": text}).encode(),
            b"[1, 2]",
            json.dumps({"id": "x", "text": 5}).encode(),
            b'{"id": "y", "text": "caf\xe9"}',
            json.dumps({"id": "stdin:1", "text": "other words entirely here"}).encode(),
        ]
    )
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw + b"\n")))
    code, out, err = run(capsys, "stream", db)
    got = [json.loads(x) for x in out.splitlines()]
    assert code == 0
    assert got[0]["id"] == "stdin:1" and got[0]["decision"] == "unique"
    assert [g.get("line") for g in got[1:]] == [2, 3, 4, 5]
    assert got[1]["error"].startswith("<stdin>:2: ") and "object" in got[1]["error"]
    assert "field 'text'" in got[2]["error"]
    assert "not valid UTF-8" in got[3]["error"]
    assert "stdin:1" in got[4]["error"]  # the index holds that id already
    assert "5 lines, 1 unique, 0 duplicates, 4 errors" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"[1]\n")))
    code, _, err = run(capsys, "stream", db, "--on-error", "fail")
    assert code == 3 and "<stdin>:1" in err


def test_stream_of_records_the_index_holds(tmp_path, capsys, monkeypatch):
    """Records streamed after `index add` put them there (or streamed twice) are duplicates,
    with their own id among the matches, and nothing is added; a held id with another text is
    an error line."""
    db = tmp_path / "s.db"
    assert run(capsys, "index", "create", db, "--threshold", "0.7")[0] == 0
    assert run(capsys, "index", "add", db, NEWS, "--id-field", "id", "--quiet")[0] == 0
    records = [json.loads(line) for line in NEWS.read_text().splitlines()[:3]]
    lines = [json.dumps(r) for r in records]
    lines.append(json.dumps({"id": records[1]["id"], "text": "a text of its own, like none"}))
    for no_add in ([], ["--no-add"]):
        monkeypatch.setattr(
            sys, "stdin", io.TextIOWrapper(io.BytesIO(("\n".join(lines) + "\n").encode()))
        )
        code, out, err = run(capsys, "stream", db, *no_add)
        got = [json.loads(x) for x in out.splitlines()]
        assert code == 0
        for r, g in zip(records, got[:3]):
            assert g["id"] == r["id"] and g["decision"] == "duplicate" and not g["added"]
            assert {"id": r["id"], "similarity": 1.0} in g["matches"]
        if no_add:  # only checked: the other text under a held id is just unique
            assert got[3]["decision"] == "unique" and not got[3]["added"]
            assert "4 lines, 1 unique, 3 duplicates, 0 errors" in err
        else:
            assert got[3]["decision"] == "error" and got[3]["line"] == 4
            assert (
                "already in the index, with a text that this one does not repeat" in got[3]["error"]
            )
            assert "4 lines, 0 unique, 3 duplicates, 1 errors" in err
    with Index(db) as idx:
        assert len(idx) == 330


def test_dedup_save_index_opens_as_index(tmp_path, capsys):
    db = tmp_path / "saved.db"
    out = tmp_path / "out"
    code, _, _ = run(
        capsys,
        "dedup",
        NEWS,
        "--id-field",
        "id",
        "-o",
        out,
        "--save-index",
        db,
        "--threshold",
        "0.7",
        "--quiet",
    )
    assert code == 0 and db.exists()
    assert not list(tmp_path.glob(".saved.db*"))
    pairs = pq.read_table(out / "pairs.parquet").to_pylist()
    summary = json.loads((out / "summary.json").read_text())
    with Index(db) as idx:
        assert len(idx) == 330 and idx.threshold == 0.7
        assert (idx.bands, idx.rows) == (summary["lsh"]["bands"], summary["lsh"]["rows"])
        assert idx.config.to_dict() == Index(config=None, threshold=0.7).config.to_dict()
        for p in pairs:
            found = {m.id: m.similarity for m in idx.query_id(p["id_a"])}
            assert found[p["id_b"]] == pytest.approx(p["similarity"], abs=1e-6)
    assert summary["outputs"]["index"] == str(db)
    # an existing path is refused before anything is read; a failed run leaves no index
    code, _, err = run(capsys, "dedup", NEWS, "--id-field", "id", "-o", out, "--save-index", db)
    assert code == 4 and "exists" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "text": "fine"}\nnot json\n')
    code, _, err = run(
        capsys,
        "dedup",
        bad,
        "--id-field",
        "id",
        "-o",
        tmp_path / "o2",
        "--save-index",
        tmp_path / "new.db",
    )
    assert code == 3 and not (tmp_path / "new.db").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".new.db")]


def test_dedup_save_index_holds_what_index_add_makes(tmp_path, capsys):
    """The index a run saves, from the sketches the run made, answers and holds exactly what
    one built by ``neardup index add`` from the same file does."""
    saved, added = tmp_path / "saved.db", tmp_path / "added.db"
    code, _, _ = run(
        capsys, "dedup", NEWS, "--id-field", "id", "-o", tmp_path / "o", "--save-index", saved,
        "--threshold", "0.6", "--shingle", "word:3", "--quiet",
    )  # fmt: skip
    assert code == 0
    code, _, _ = run(capsys, "index", "create", added, "--threshold", "0.6", "--shingle", "word:3")
    assert code == 0
    code, _, _ = run(capsys, "index", "add", added, NEWS, "--id-field", "id")
    assert code == 0
    with Index(saved) as a, Index(added) as b:
        ids = sorted(b.storage.iter_ids())
        assert sorted(a.storage.iter_ids()) == ids and len(ids) == 330
        found = 0
        for i in ids:
            da, db_ = a.storage.get(i), b.storage.get(i)
            assert np.array_equal(da["shingles"], db_["shingles"]) and da["text"] == db_["text"]
            qa, qb = a.query_id(i), b.query_id(i)
            assert qa == qb
            found += len(qa)
        assert found > 0  # the corpus has near-duplicates: the band keys were compared


WRITER = textwrap.dedent("""
    import itertools, sys
    from neardup import Index
    from neardup.synth import make_corpus
    texts, _ = make_corpus(1000, seed=5, words=(40, 120))
    idx = Index(sys.argv[1], storage_options={"flush_docs": int(sys.argv[3])})
    size = int(sys.argv[2])
    for b in itertools.count():  # until killed
        idx.add_many([(f"d{i}", texts[i % 1000]) for i in range(b * size, (b + 1) * size)],
                     batch_size=size)
        print("ACK", b, flush=True)
""")


@pytest.mark.parametrize(
    "kill_after,flush", [(1, 16384), (4, 16384), (9, 16384), (4, 300), (9, 300), (13, 300)]
)
def test_sigkill_mid_batch_loses_nothing_acknowledged(tmp_path, kill_after, flush):
    """Killed inside a batch (with ``flush=300``: often while key segments are written out
    and merged): nothing acknowledged is lost, nothing half-written is kept."""
    db = tmp_path / "k.db"
    size = 250
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(size), str(flush)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    acked = -1
    while acked < kill_after:
        line = proc.stdout.readline()
        assert line.startswith("ACK"), f"writer stopped early: {line!r}"
        acked = int(line.split()[1])
    time.sleep(0.013 * kill_after)  # somewhere inside a later batch
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    for line in proc.stdout:  # batches acknowledged before the kill landed
        parts = line.split()
        if line.endswith("\n") and len(parts) == 2 and parts[1].isdigit():
            acked = int(parts[1])  # (the kill may cut the last line short: not counted)
    texts, _ = make_corpus(1000, seed=5, words=(40, 120))
    with Index(db) as idx:
        check = idx.storage.check()
        n = len(idx)
        assert check == {
            "integrity": "ok",
            "documents": n,
            "counted": n,
            "orphan_keys": 0,
            "missing_keys": 0,
        }
        assert n % size == 0 and n >= (acked + 1) * size  # whole batches only, none lost
        for i in (0, (acked + 1) * size - 1, n - 1):
            assert f"d{i}" in idx and idx.get(f"d{i}") == texts[i % 1000]
            assert idx.query(texts[i % 1000])[0].similarity == 1.0
        assert f"d{n}" not in idx
        idx.add_many([(f"d{i}", texts[i % 1000]) for i in range(n, n + size)])  # writable
        assert len(idx) == n + size


def test_serve_create_makes_an_index_that_finds_passages(tmp_path):
    """`neardup serve --create` on a new path: the page's index finds copied passages."""
    import json as _json
    import socket
    import subprocess as sp
    import sys as _sys
    import time as _time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = tmp_path / "new.db"
    proc = sp.Popen(
        [
            _sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            "--index",
            str(db),
            "--create",
            "--port",
            str(port),
        ],
        stdout=sp.PIPE,
        stderr=sp.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = _time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/health", timeout=1)
                break
            except OSError:
                if _time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError(proc.stderr.read().decode()[-2000:]) from None
                _time.sleep(0.1)
        req = urllib.request.Request(
            base + "/check",
            data=_json.dumps({"text": "a text to check"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        got = _json.load(urllib.request.urlopen(req, timeout=10))
        assert got["passages_indexed"] is True and got["unique"] is True
    finally:
        proc.terminate()
        proc.wait(20)


def test_index_query_lists_reused_passages(tmp_path, capsys):
    from neardup.cli import main

    src = " ".join(f"s{i}" for i in range(80))
    other = " ".join(f"o{i}" for i in range(80))
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        json.dumps({"id": "src", "text": src})
        + "\n"
        + json.dumps({"id": "other", "text": other})
        + "\n"
    )
    db = str(tmp_path / "p.db")
    assert main(["index", "create", db, "--passages", "--quiet"]) == 0
    assert main(["index", "add", db, str(docs), "--id-field", "id", "--quiet"]) == 0
    capsys.readouterr()
    text = "new words here " + " ".join(f"s{i}" for i in range(10, 40)) + " and the end"
    assert main(["index", "query", db, text, "--passages"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "text1\tsrc\treuses 1 passage, 30 words, 83.3% of the text"
    ]
    assert main(["index", "query", db, "unrelated words only", "--passages"]) == 0
    assert capsys.readouterr().out.strip() == (
        "text1: unique (no text at Jaccard >= 0.8, no shared passage of 16+ words)"
    )
    assert main(["index", "query", db, text, "--passages", "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)
    (m,) = r["reused"]
    (p,) = m["passages"]
    assert (
        m["id"] == "src"
        and text[p["a"][0] : p["a"][1]] == " ".join(f"s{i}" for i in range(10, 40))
        and src[p["b"][0] : p["b"][1]] == text[p["a"][0] : p["a"][1]]
    )
    # a sentence that 16 indexed texts hold: one common passage, not 16 sources
    tmpl = " ".join(f"t{i}" for i in range(20))
    many = tmp_path / "many.jsonl"
    many.write_text(
        "".join(
            json.dumps(
                {"id": f"m{j}", "text": " ".join(f"m{j}w{i}" for i in range(30)) + " " + tmpl}
            )
            + "\n"
            for j in range(16)
        )
    )
    assert main(["index", "add", db, str(many), "--id-field", "id", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["index", "query", db, "a new start " + tmpl, "--passages"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "text1\tcommon passage of 20 words (characters 12-81) in about 16 indexed texts, e.g. m0"
    ]
    plain = str(tmp_path / "plain.db")
    assert main(["index", "create", plain, "--quiet"]) == 0
    assert main(["index", "query", plain, text, "--passages"]) == 2
    assert "index create --passages" in capsys.readouterr().err


def test_index_and_stream_run_without_the_cycle_collector_and_make_no_cycles(
    tmp_path, capsys, monkeypatch, cycle_spy
):
    """``index add``, ``index query`` and ``stream`` run with the cyclic garbage collector off
    (on again after): what a run leaves for the collector must not grow with the records,
    malformed ones included (every other record of the stream)."""
    import gc

    from neardup.synth import make_corpus

    def left_after(*argv, stdin=None):
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        gc.collect()
        assert run(capsys, *argv)[0] == 0
        assert gc.isenabled()
        assert cycle_spy.enabled[-1] is False and cycle_spy.collections[-1] == []
        return cycle_spy.left()

    left = {}
    for n in (100, 1000):
        texts, _ = make_corpus(n, seed=n, words=(20, 60))
        src = tmp_path / f"d{n}.jsonl"
        src.write_text(
            "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
        )
        records = b"".join(
            b"{bad\n" if i % 2 else json.dumps({"id": f"s{i}", "text": t}).encode() + b"\n"
            for i, t in enumerate(texts)
        )
        for rep in range(2):  # the first run of each imports what it needs
            db = tmp_path / f"i{n}-{rep}.db"
            assert run(capsys, "index", "create", db)[0] == 0
            left[n, "add"] = left_after("index", "add", db, src, "--id-field", "id", "--quiet")
            left[n, "query"] = left_after("index", "query", db, texts[0])
            left[n, "stream"] = left_after("stream", db, "--no-add", "--quiet", stdin=records)
    for what in ("add", "query", "stream"):
        assert left[1000, what] <= left[100, what] + 5, left


def test_index_query_takes_its_texts_before_and_after_the_options(tmp_path, capsys):
    """``index query INDEX --top-k 1 TEXT`` as ``index query INDEX TEXT --top-k 1``: the texts
    may come on either side of the options (argparse alone left those after them over); an
    unknown option is still refused."""
    db = str(tmp_path / "q.db")
    docs = tmp_path / "d.jsonl"
    texts = {
        "a": "the quick brown fox jumps over the lazy dog near the river bank today",
        "b": "a slow green turtle walks under the busy bridge beside the old mill",
    }
    docs.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in texts.items()))
    assert main(["index", "create", db, "--quiet"]) == 0
    assert main(["index", "add", db, str(docs), "--id-field", "id", "--quiet"]) == 0
    capsys.readouterr()
    want = run(capsys, "index", "query", db, texts["a"], texts["b"], "--top-k", "1")
    assert want[0] == 0 and "\ta\t1.0000" in want[1] and "\tb\t1.0000" in want[1]
    assert run(capsys, "index", "query", db, "--top-k", "1", texts["a"], texts["b"]) == want
    assert run(capsys, "index", "query", db, texts["a"], "--top-k", "1", texts["b"]) == want
    with pytest.raises(SystemExit) as e:
        main(["index", "query", db, "--top-k", "1", "--bogus", texts["a"]])
    assert e.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
