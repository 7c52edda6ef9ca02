"""``neardup products dedup|eval`` end to end on the bundled example catalogue."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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
    rc = main(
        [
            "products",
            "eval",
            *map(str, SHOPS),
            "--truth-field",
            "product",
            "--bootstraps",
            "2",
            "--num-perm",
            "24",
            "--bands",
            "12",
            "--rows",
            "2",
            "-o",
            str(tmp_path / "rep"),
            "--json",
        ]
    )
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    by = {r["method"]: r for r in s["summary"]}
    assert by["neardup"]["f1"] > by["baseline"]["f1"] and by["neardup"]["f1"] >= 0.85
    assert (tmp_path / "rep" / "sweep.png").exists() and (tmp_path / "rep" / "report.md").exists()
    # the report says what its abbreviations mean
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "*PQ* (pair quality)" in report and "*baseline* (the Jaccard similarity" in report
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
    rc = main(
        [
            "products",
            "eval",
            *map(str, SHOPS),
            "--truth",
            str(tmp_path / "pairs.csv"),
            "--bootstraps",
            "2",
            "--num-perm",
            "24",
            "--bands",
            "12",
            "--rows",
            "2",
            "-o",
            str(tmp_path / "rep2"),
            "--json",
            "--model-seed",
            "4",
        ]
    )
    assert rc == 0
    s2 = json.loads(capsys.readouterr().out)
    assert s2["true_pairs"] == s["true_pairs"]
    # the forest's random state is the user's and is written with the rest of the settings
    assert s["config"]["model_seed"] == 0 and s2["config"]["model_seed"] == 4


def test_products_eval_with_one_bootstrap_prints_no_spread(tmp_path, capsys):
    rc = main(
        [
            "products",
            "eval",
            *map(str, SHOPS),
            "--truth-field",
            "product",
            "--bootstraps",
            "1",
            "--num-perm",
            "24",
            "--bands",
            "12",
            "--rows",
            "2",
            "-o",
            str(tmp_path / "rep"),
        ]
    )
    assert rc == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "F1 " in out and "±" not in out
    rc = main(
        [
            "products",
            "eval",
            *map(str, SHOPS),
            "--truth-field",
            "product",
            "--bootstraps",
            "2",
            "--num-perm",
            "24",
            "--bands",
            "12",
            "--rows",
            "2",
            "-o",
            str(tmp_path / "r2"),
        ]
    )
    assert rc == 0 and "±" in capsys.readouterr().out


def test_products_eval_blocking_options(tmp_path, capsys):
    common = ["products", "eval", *map(str, SHOPS), "--truth-field", "product", "--bootstraps", "1"]
    rc = main([*common, "--candidates-per-offer", "3", "-o", str(tmp_path / "t"), "--json"])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["config"]["blocking"] == "tokens" and s["config"]["per_offer"] == 3
    assert [r["per_offer"] for r in s["summary"]] == [3.0] * 3
    assert main([*common, "--candidates-per-offer", "3", "-o", str(tmp_path / "t2")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "token blocking, default 3 candidate pairs per offer" in out
    rc = main(
        [
            *common,
            "--blocking",
            "lsh",
            "--num-perm",
            "24",
            "--bands",
            "12",
            "--rows",
            "2",
            "-o",
            str(tmp_path / "l"),
            "--json",
        ]
    )
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["config"]["blocking"] == "lsh"
    assert {(r["bands"], r["rows"]) for r in s["summary"]} == {(12, 2)}
    assert "per_offer" not in s["summary"][0]
    assert main([*common, "--candidates-per-offer", "0", "-o", str(tmp_path / "z")]) == 2
    assert "per_offer=0.0 is invalid" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # not a choice of the option
        main([*common, "--blocking", "words", "-o", str(tmp_path / "w")])
    assert e.value.code == 2 and "invalid choice: 'words'" in capsys.readouterr().err


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
    rc = main(
        [
            "products",
            "eval",
            str(tmp_path / "alpha.jsonl"),
            "--truth",
            str(pairs),
            "-o",
            str(tmp_path / "r"),
        ]
    )
    assert rc == 3 and "unknown id 'nope'" in capsys.readouterr().err
    # two shops numbering their offers alike: repeated ids, unless qualified
    (tmp_path / "s1.jsonl").write_text('{"id": 1, "title": "Lumo 46 inch LED TV LM46X210"}\n')
    (tmp_path / "s2.jsonl").write_text('{"id": 1, "title": "Lumo LM-46X210 46-Inch TV"}\n')
    args = [
        "products",
        "dedup",
        str(tmp_path / "s1.jsonl"),
        str(tmp_path / "s2.jsonl"),
        "-o",
        str(tmp_path / "q"),
        "--num-perm",
        "24",
        "--bands",
        "12",
        "--rows",
        "2",
    ]
    assert main(args) == 3 and "repeats" in capsys.readouterr().err
    assert main([*args, "--qualify-ids", "--json"]) == 0
    pairs = [json.loads(line) for line in open(tmp_path / "q" / "pairs.jsonl")]
    assert [(p["id_a"], p["id_b"]) for p in pairs] == [("s1/1", "s2/1")]


def _truth_files(tmp_path) -> tuple[Path, Path, dict[str, list[str]]]:
    """An entity-id file labelling two thirds of the products of the example catalogue, and a
    labelled-pairs file over those products' offers; the products' offer ids."""
    ids: dict[str, list[str]] = {}
    for p in SHOPS:
        for line in open(p):
            r = json.loads(line)
            ids.setdefault(r["product"], []).append(r["id"])
    products = sorted(ids)
    kept = [prod for k, prod in enumerate(products) if k % 3]
    ent = tmp_path / "entities.csv"
    with open(ent, "w") as f:
        f.write("entity_id,spec_id\n")
        for prod in kept:
            for i in ids[prod]:
                f.write(f"{prod},{i}\n")
    lab = tmp_path / "labelled.csv"
    members = [(prod, i) for prod in kept[:20] for i in ids[prod]]
    with open(lab, "w") as f:
        f.write("left_spec_id,right_spec_id,label\n")
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                f.write(f"{members[x][1]},{members[y][1]},{int(members[x][0] == members[y][0])}\n")
    return ent, lab, ids


def test_products_dedup_scored_against_a_partial_truth(tmp_path, capsys):
    ent, lab, ids = _truth_files(tmp_path)
    small = ["--num-perm", "24", "--bands", "12", "--rows", "2"]
    rc = main(
        [
            "products",
            "dedup",
            *map(str, SHOPS),
            "-o",
            str(tmp_path / "o"),
            *small,
            "--truth",
            str(ent),
            "--json",
        ]
    )
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    q = s["quality"]
    assert q["truth"]["shape"] == "entities" and q["truth"]["negatives"] == "complete"
    assert 0 < q["truth"]["labelled_offers"] < s["offers"]
    p = q["pairs"]
    assert p["predicted"] == s["duplicate_pairs"] == p["known"] + p["unknown"]
    assert p["unknown"] > 0 and p["precision"] >= 0.9 and p["recall"] >= 0.6
    assert q["blocking"]["pc"] >= p["recall"] and q["blocking"]["candidates"] == s["candidates"]
    # the same numbers by hand from pairs.jsonl
    entity: dict[str, str] = {}
    for line in open(ent).read().splitlines()[1:]:
        e, i = line.split(",")
        entity[i] = e
    pairs = [json.loads(line) for line in open(tmp_path / "o" / "pairs.jsonl")]
    known = [pr for pr in pairs if pr["id_a"] in entity and pr["id_b"] in entity]
    tp = sum(entity[pr["id_a"]] == entity[pr["id_b"]] for pr in known)
    assert (p["tp"], p["fp"], p["unknown"]) == (tp, len(known) - tp, len(pairs) - len(known))
    # printed, with --link: across shops only
    rc = main(
        [
            "products",
            "dedup",
            *map(str, SHOPS),
            "-o",
            str(tmp_path / "l"),
            *small,
            "--link",
            "--truth",
            str(lab),
        ]
    )
    assert rc == 0
    out = " ".join(capsys.readouterr().out.split())  # the table wraps its cells
    assert "labelled pairs:" in out and "known matching pairs across shops" in out
    assert "PC " in out and "per labelled offer" in out
    assert "of the pairs the clusters imply" in out
    s = json.loads((tmp_path / "l" / "summary.json").read_text())
    assert s["quality"]["truth"]["negatives"] == "listed"
    assert s["quality"]["pairs"]["within_one_source_left_out"] == 0


def test_products_eval_with_a_partial_truth(tmp_path, capsys):
    ent, lab, _ = _truth_files(tmp_path)
    small = ["--bootstraps", "2", "--num-perm", "24", "--bands", "12", "--rows", "2"]
    rc = main(
        [
            "products",
            "eval",
            *map(str, SHOPS),
            "--truth",
            str(ent),
            *small,
            "-o",
            str(tmp_path / "rep"),
            "--json",
            "--save-model",
            str(tmp_path / "m.pkl"),
        ]
    )
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    by = {r["method"]: r for r in s["summary"]}
    assert by["neardup"]["f1"] >= 0.85
    assert s["truth"]["shape"] == "entities" and s["true_pairs"] == s["truth"]["positive_pairs"]
    assert "known duplicate pairs" in (tmp_path / "rep" / "report.md").read_text()
    assert (
        main(
            [
                "products",
                "dedup",
                *map(str, SHOPS),
                "-o",
                str(tmp_path / "d"),
                "--model",
                str(tmp_path / "m.pkl"),
                "--truth",
                str(ent),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["quality"]["pairs"]["precision"] >= 0.9
    rc = main(
        [
            "products",
            "eval",
            *map(str, SHOPS),
            "--truth",
            str(lab),
            *small,
            "-o",
            str(tmp_path / "rep2"),
        ]
    )
    assert rc == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "known duplicate pairs" in out and "labelled pairs:" in out
    # --truth-field COLUMN and a truth file are one truth too many
    assert (
        main(
            [
                "products",
                "eval",
                *map(str, SHOPS),
                "--truth-field",
                "product",
                "--truth",
                str(ent),
                "-o",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "not both" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,label\nalpha-1,nope,1\n")
    rc = main(
        ["products", "dedup", *map(str, SHOPS), "-o", str(tmp_path / "y"), "--truth", str(bad)]
    )
    assert rc == 3 and "bad.csv:2: unknown id" in capsys.readouterr().err


def test_field_roles_from_options_and_a_columns_file(tmp_path, capsys):
    """A catalogue with its own column names: --columns names the title, id and shop fields,
    --brand-field and --model-field give the columns whose values the matcher reads as the
    brand and the model number; nothing is left unread."""
    import csv

    rows = [
        ("p1", "north", "Lumo monitor 24 inch", "Lumo", "LM24X100", "199"),
        ("p2", "south", "24in display by Lumo", "LUMO", "LM24X100", "205"),
        ("p3", "south", "Orbis monitor 24 inch", "Orbis", "OR24Z900", "180"),
    ]
    f = tmp_path / "cat.csv"
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="|")
        w.writerow(["sku", "seller", "name", "maker", "mpn", "cost"])
        w.writerows(rows)
    cols = tmp_path / "columns.json"
    cols.write_text(json.dumps({"id": "sku", "shop": "seller", "title": "name", "price": "cost"}))
    rc = main(
        [
            "products",
            "dedup",
            str(f),
            "--columns",
            str(cols),
            "--brand-field",
            "maker",
            "--model-field",
            "mpn",
            "--link",
            "-o",
            str(tmp_path / "out"),
            "--json",
        ]
    )
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["unused_fields"] == {} and s["shops"] == {"north": 1, "south": 2}
    pairs = [json.loads(line) for line in open(tmp_path / "out" / "pairs.jsonl")]
    assert [(p["id_a"], p["id_b"]) for p in pairs] == [("p1", "p2")]
    ev = pairs[0]["evidence"]
    assert ev["brands"] == ["lumo", "lumo"] and ev["shared_model_numbers"] == ["lm24x100"]
    # the library: the roles' values under the attribute names the matcher reads
    from neardup.products.loaders import load_offers

    offers, _ = load_offers(
        f,
        id_field="sku",
        shop_field="seller",
        title_field="name",
        roles={"brand": "maker", "model": "mpn", "price": "cost"},
    )
    assert offers.attributes[0] == {"brand": "Lumo", "model number": "LM24X100", "price": "199"}
    # a role's column that is not there, an unknown role: clear errors
    assert (
        main(
            [
                "products",
                "dedup",
                str(f),
                "--columns",
                str(cols),
                "--brand-field",
                "make",
                "-o",
                str(tmp_path / "o2"),
            ]
        )
        == 3
    )
    assert "no column 'make' (brand)" in capsys.readouterr().err
    cols.write_text(json.dumps({"colour": "c"}))
    assert (
        main(["products", "dedup", str(f), "--columns", str(cols), "-o", str(tmp_path / "o3")]) == 2
    )
    assert "unknown role 'colour'" in capsys.readouterr().err


def test_the_blocking_line_says_which_offers_were_compared_by_their_rarest_word():
    from neardup.cli.products import _blocking_text

    base = {"method": "tokens", "candidates_per_offer": 2.5, "max_block": 40}
    assert _blocking_text(base) == "token blocking, 2.5 per offer, blocks of up to 40 offers"
    text = _blocking_text({**base, "fallback_offers": 1200, "offers_without_candidates": 3})
    assert "1,200 offers whose shared words are all too common compared with" in text
    assert "3 offers in no candidate pair (they share no word" in text


def test_two_catalogues_numbered_alike_with_a_truth_of_bare_ids(tmp_path, capsys):
    # the clean-clean benchmark shape: two '#'-separated files numbering their records from 0,
    # and a truth listing (first file's id, second file's id)
    (tmp_path / "amazon.csv").write_text(
        "id#title#description#manufacturer#price\n"
        "0#clickart 950 000 - premier image pack (dvd-rom)##broderbund#0.0\n"
        "1#adobe premiere pro cs3 upgrade#upgrade version#adobe#299.0\n"
    )
    (tmp_path / "gp.csv").write_text(
        "id#title#description#manufacturer#price\n"
        "0#adobe premiere pro cs3 software upgrade#video editing#adobe#294.99\n"
        "1#broderbund clickart 950000 premier image pack#clip art##22.5\n"
        "2#norton antivirus 2007#antivirus#symantec#39.99\n"
    )
    (tmp_path / "gt.csv").write_text("D1#D2\n0#1\n1#0\n")
    out = tmp_path / "o"
    rc = main(
        [
            "products",
            "dedup",
            str(tmp_path / "amazon.csv"),
            str(tmp_path / "gp.csv"),
            "--sep",
            "#",
            "--link",
            "--qualify-ids",
            "--truth",
            str(tmp_path / "gt.csv"),
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "ids read as amazon/ID in D1, gp/ID in D2" in shown
    s = json.loads((out / "summary.json").read_text())
    assert s["quality"]["truth"]["ids_by_file"] == {"D1": "amazon", "D2": "gp"}
    assert s["quality"]["truth"]["positive_pairs"] == 2
    assert s["quality"]["blocking"]["positives"] == 2
