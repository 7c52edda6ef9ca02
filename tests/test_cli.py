"""``neardup dedup`` end to end: real files in, outputs and exit codes checked."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from neardup.cli import main
from neardup.synth import make_corpus

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus():
    texts, planted = make_corpus(400, dup_fraction=0.35, seed=3, max_edit_rate=0.1)
    return texts, planted


def write_jsonl(path: Path, texts, ids=None, opener=open):
    with opener(path, "wt", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            rec = {"text": t} if ids is None else {"id": ids[i], "text": t}
            f.write(json.dumps(rec) + "\n")


def test_dedup_jsonl_writes_all_outputs(tmp_path, corpus, capsys):
    texts, _ = corpus
    src = tmp_path / "docs.jsonl"
    write_jsonl(src, texts, [f"doc{i}" for i in range(len(texts))])
    out = tmp_path / "out"
    rc = main(["dedup", str(src), "--id-field", "id", "-o", str(out), "--json", "--quiet"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == len(texts)
    assert json.loads((out / "summary.json").read_text()) == summary
    clusters = pq.read_table(out / "clusters.parquet").to_pydict()
    assert clusters["id"] == [f"doc{i}" for i in range(len(texts))]
    pairs = pq.read_table(out / "pairs.parquet").to_pydict()
    assert len(pairs["id_a"]) == summary["duplicate_pairs"] > 0
    assert set(pairs["method"]) <= {"fingerprint", "jaccard"}
    kept = (out / "deduplicated" / "docs.jsonl").read_text().splitlines()
    assert len(kept) == summary["kept"] == len(texts) - summary["removed"]
    reps = {r for i, r in zip(clusters["id"], clusters["representative"])}
    assert {json.loads(line)["id"] for line in kept} == reps
    original = src.read_text().splitlines()
    assert set(kept) <= set(original)  # lines copied byte for byte
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_same_clusters_as_library(tmp_path, corpus):
    import neardup

    texts, _ = corpus
    src = tmp_path / "docs.jsonl.gz"
    write_jsonl(src, texts, opener=gzip.open)
    out = tmp_path / "out"
    assert (
        main(
            [
                "dedup",
                str(src),
                "-o",
                str(out),
                "--quiet",
                "--cluster",
                "strict",
                "--output-format",
                "csv",
                "--chunk-size",
                "37",
            ]
        )
        == 0
    )
    lib = neardup.dedup(texts, cluster="strict")
    import csv

    with open(out / "clusters.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["representative"] for r in rows] == [str(x) for x in lib.representative]


def test_csv_two_fields_and_text_folder(tmp_path):
    import csv

    rows = [
        ("a1", "Red shoes size 42", "comfortable leather running shoes with laces"),
        ("a2", "RED shoes  size 42", "Comfortable leather running shoes with laces"),
        ("a3", "Blue hat", "a warm woollen winter hat"),
    ]
    src = tmp_path / "offers.csv"
    with open(src, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sku", "title", "description"])
        w.writerows(rows)
    out = tmp_path / "out"
    assert (
        main(
            [
                "dedup",
                str(src),
                "--text-field",
                "title",
                "description",
                "--id-field",
                "sku",
                "--shingle",
                "word:2",
                "-o",
                str(out),
                "--quiet",
                "--output-format",
                "jsonl",
            ]
        )
        == 0
    )
    pairs = [json.loads(x) for x in (out / "pairs.jsonl").read_text().splitlines()]
    assert [(p["id_a"], p["id_b"], p["method"]) for p in pairs] == [("a1", "a2", "fingerprint")]
    with open(out / "deduplicated" / "offers.csv", newline="") as f:
        assert [r["sku"] for r in csv.DictReader(f)] == ["a1", "a3"]

    folder = tmp_path / "pages"
    (folder / "sub").mkdir(parents=True)
    (folder / "one.txt").write_text("the same page text about gardens and flowers in spring")
    (folder / "sub" / "two.txt").write_text(
        "The same page text about gardens and flowers in spring"
    )
    (folder / "three.txt").write_text("another page entirely")
    out2 = tmp_path / "out2"
    assert main(["dedup", str(folder), "-o", str(out2), "--quiet"]) == 0
    kept = sorted(
        p.relative_to(out2 / "deduplicated").as_posix()
        for p in (out2 / "deduplicated").rglob("*")
        if p.is_file()
    )
    assert kept == ["pages/one.txt", "pages/three.txt"]


def test_bad_input_fails_before_writing(tmp_path, capsys):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"text": "fine"}\n{"text": "also fine"}\n{"text": oops}\n')
    out = tmp_path / "out"
    assert main(["dedup", str(src), "-o", str(out), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "bad.jsonl:3" in err
    assert "(--on-error skip leaves out the records that are bad and counts them)" in err
    assert not out.exists()

    assert main(["dedup", str(src), "-o", str(out), "--quiet", "--on-error", "skip", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == 2 and summary["skipped"]["total"] == 1
    assert summary["skipped"]["by_reason"] == {"malformed_json": 1}


def test_a_missing_column_names_the_option_that_chooses_another(tmp_path, capsys):
    """A text column of another name: the error lists the columns, suggests the nearest and
    names the option that chooses it; a record without the field adds --on-error skip."""
    csv = tmp_path / "shop.csv"
    csv.write_text("sku,description\na,a kettle of steel\nb,a lamp of brass\n")
    out = str(tmp_path / "out")
    assert main(["dedup", str(csv), "-o", out, "--quiet"]) == 3
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "'text' is not a column of the CSV header (columns: sku, description) "
            "(name another with --text-field)"
        )
    )
    assert main(["dedup", str(csv), "-o", out, "--quiet", "--text-field", "descripton"]) == 3
    assert "did you mean 'description'? (name another with --text-field)" in capsys.readouterr().err
    assert (
        main(
            [
                "dedup",
                str(csv),
                "-o",
                out,
                "--quiet",
                "--id-field",
                "id",
                "--text-field",
                "description",
            ]
        )
        == 3
    )
    assert "(name another with --id-field)" in capsys.readouterr().err
    assert main(["dedup", str(csv), "-o", out, "--quiet", "--text-field", "description"]) == 0
    jsonl = tmp_path / "shop.jsonl"
    jsonl.write_text('{"text": "a kettle"}\n{"body": "a lamp"}\n')
    assert main(["dedup", str(jsonl), "-o", str(tmp_path / "o2"), "--quiet"]) == 3
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "shop.jsonl:2: no field 'text' (name another with --text-field; "
            "--on-error skip leaves out the records that are bad and counts them)"
        )
    )


def test_missing_path_and_bad_parameters(tmp_path, capsys):
    assert main(["dedup", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o"), "-q"]) == 3
    assert "nope.jsonl" in capsys.readouterr().err
    src = tmp_path / "a.jsonl"
    src.write_text('{"text": "x"}\n')
    assert main(["dedup", str(src), "-o", str(tmp_path / "o"), "-q", "--threshold", "2"]) == 2
    assert "threshold=2.0 is invalid" in capsys.readouterr().err
    assert main(["dedup", str(src), "-o", str(tmp_path / "o"), "-q", "--shingle", "word"]) == 2
    with pytest.raises(SystemExit) as e:
        main(["dedup", str(src)])  # -o missing: argparse usage error
    assert e.value.code == 2


def test_empty_file_is_reported(tmp_path, capsys):
    src = tmp_path / "empty.jsonl"
    src.write_text("")
    assert main(["dedup", str(src), "-o", str(tmp_path / "o"), "-q"]) == 3
    assert "empty.jsonl" in capsys.readouterr().err


def test_console_script_runs(tmp_path):
    src = tmp_path / "a.jsonl"
    write_jsonl(src, ["one text here", "one text here", "two"])
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "dedup",
            str(src),
            "-o",
            str(tmp_path / "o"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["exact_duplicates"] == 1


def test_dedup_runs_without_the_cycle_collector_and_makes_no_cycles(tmp_path, cycle_spy):
    """``dedup`` runs with the cyclic garbage collector off (it makes no reference cycles as it
    runs, so the collector would only walk the objects of its imports) and turns it on again
    after. The claim it rests on is checked here: what a run leaves for the collector does not
    grow with the corpus (chunks of 64 documents: 4 and 32 chunks)."""
    import gc

    left = {}
    for n in (200, 2000):
        texts, _ = make_corpus(n, dup_fraction=0.3, seed=n, words=(20, 60))
        src = tmp_path / f"docs{n}.jsonl"
        write_jsonl(src, texts)
        for run in range(2):  # the first run of a size imports what it needs
            gc.collect()
            rc = main(
                [
                    "dedup",
                    str(src),
                    "-o",
                    str(tmp_path / f"out{n}-{run}"),
                    "--quiet",
                    "--chunk-size",
                    "64",
                ]
            )
            assert rc == 0 and gc.isenabled()
            assert cycle_spy.enabled[-1] is False
            assert cycle_spy.collections[-1] == []  # no collection during the run
            left[n] = cycle_spy.left()
    assert left[2000] <= left[200] + 5, left


def test_inputs_may_come_after_the_options(tmp_path, capsys):
    """A command's list of inputs (or ids) may go on after its options: the words argparse
    leaves over are taken as more of them, as a user who adds a file at the end expects."""
    lines = (
        (Path(__file__).resolve().parents[1] / "examples" / "news.jsonl").read_text().splitlines()
    )
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join(lines[:20]) + "\n")
    b.write_text("\n".join(lines[20:40]) + "\n")
    assert main(["dedup", str(a), "-o", str(tmp_path / "o1"), "--quiet", str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 40
    assert main(["reuse", str(a), "--quiet", str(b), "-o", str(tmp_path / "o2"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 40
    db = str(tmp_path / "i.db")
    assert main(["index", "create", db, "--quiet"]) == 0
    assert main(["index", "add", db, str(a), "--id-field", "id", "--quiet", str(b)]) == 0
    ids = [json.loads(x)["id"] for x in lines[:2]]
    assert main(["index", "remove", db, ids[0], "--quiet", ids[1]]) == 0
    capsys.readouterr()
    assert main(["index", "stats", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 38
    # an unknown option is still refused
    assert_exit = pytest.raises(SystemExit)
    with assert_exit:
        main(["dedup", str(a), "-o", str(tmp_path / "o3"), "--no-such-option", str(b)])
