"""``neardup products dedup|eval`` end to end on the bundled example catalogue."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from neardup.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHOPS = sorted((ROOT / "examples" / "offers").glob("*.jsonl"))


def test_products_dedup_on_the_example_catalogue(tmp_path, capsys):
    assert [p.stem for p in SHOPS] == ["alpha", "beta", "gamma"]
    rc = main(["products", "dedup", *map(str, SHOPS), "-o", str(tmp_path / "out"), "--json"])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["shops"] == {"alpha": 94, "beta": 100, "gamma": 96}
    assert s["offers"] == 290 and s["skipped"]["total"] == 0
    pairs = [json.loads(line) for line in open(tmp_path / "out" / "pairs.jsonl")]
    assert len(pairs) == s["duplicate_pairs"] > 0
    # the truth field of the example ("product") is not an attribute unless asked for; here it
    # is one (no --truth), but it is a string column of model numbers, so check the pairs
    truth = {}
    for p in SHOPS:
        for line in open(p):
            r = json.loads(line)
            truth[r["id"]] = r["product"]
    right = sum(truth[p["id_a"]] == truth[p["id_b"]] for p in pairs)
    assert right / len(pairs) >= 0.9


def test_products_eval_with_truth_column_and_pairs(tmp_path, capsys):
    rc = main(["products", "eval", *map(str, SHOPS), "--truth", "product", "--bootstraps", "2",
               "--num-perm", "24", "--bands", "12", "--rows", "2", "-o", str(tmp_path / "rep"),
               "--json"])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    by = {r["method"]: r for r in s["summary"]}
    assert by["neardup"]["f1"] > by["seed000"]["f1"] and by["neardup"]["f1"] >= 0.85
    assert (tmp_path / "rep" / "sweep.png").exists() and (tmp_path / "rep" / "report.md").exists()
    # the same truth as a file of id pairs
    ids: dict[str, list[str]] = {}
    for p in SHOPS:
        for line in open(p):
            r = json.loads(line)
            ids.setdefault(r["product"], []).append(r["id"])
    with open(tmp_path / "pairs.csv", "w") as f:
        f.write("a,b\n")
        for members in ids.values():
            for k in range(1, len(members)):
                f.write(f"{members[0]},{members[k]}\n")
    rc = main(["products", "eval", *map(str, SHOPS), "--truth-pairs", str(tmp_path / "pairs.csv"),
               "--bootstraps", "2", "--num-perm", "24", "--bands", "12", "--rows", "2",
               "-o", str(tmp_path / "rep2"), "--json"])
    assert rc == 0
    s2 = json.loads(capsys.readouterr().out)
    assert s2["true_pairs"] == s["true_pairs"]


def test_products_errors_are_clear(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "title": "ok"}\n{"id": 2}\n')
    assert main(["products", "dedup", str(bad), "-o", str(tmp_path / "o")]) == 3
    assert "bad.jsonl:2: field 'title'" in capsys.readouterr().err
    assert main(["products", "eval", str(SHOPS[0]), "-o", str(tmp_path / "r")]) == 2
    assert "no ground truth" in capsys.readouterr().err
    first = json.loads(SHOPS[0].read_text().splitlines()[0])["id"]
    pairs = tmp_path / "p.csv"
    pairs.write_text(f"{first},nope\n")  # a known id: data, not a header
    shutil.copy(SHOPS[0], tmp_path / "alpha.jsonl")
    rc = main(["products", "eval", str(tmp_path / "alpha.jsonl"), "--truth-pairs", str(pairs),
               "-o", str(tmp_path / "r")])
    assert rc == 3 and "unknown id 'nope'" in capsys.readouterr().err
    # two shops numbering their offers alike: repeated ids, unless qualified
    (tmp_path / "s1.jsonl").write_text('{"id": 1, "title": "Lumo 46 inch LED TV LM46X210"}\n')
    (tmp_path / "s2.jsonl").write_text('{"id": 1, "title": "Lumo LM-46X210 46-Inch TV"}\n')
    args = ["products", "dedup", str(tmp_path / "s1.jsonl"), str(tmp_path / "s2.jsonl"),
            "-o", str(tmp_path / "q"), "--num-perm", "24", "--bands", "12", "--rows", "2"]
    assert main(args) == 3 and "repeats" in capsys.readouterr().err
    assert main([*args, "--qualify-ids", "--json"]) == 0
    pairs = [json.loads(line) for line in open(tmp_path / "q" / "pairs.jsonl")]
    assert [(p["id_a"], p["id_b"]) for p in pairs] == [("s1/1", "s2/1")]
