"""Ground truth of product offers (pairs, entity ids, labelled pairs) and scoring against it,
checked against brute-force double loops over all pairs."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import InputError
from neardup.products.offers import Offers
from neardup.products.truth import (
    Truth,
    candidate_quality_known,
    load_truth,
    score_pairs,
)


def _offers(n: int, shops=None) -> Offers:
    ids = [f"s{i % 3}//{i}" for i in range(n)]
    shops = shops or [f"s{i % 3}" for i in range(n)]
    return Offers(
        ids=ids,
        shops=list(shops),
        titles=[f"t{i}" for i in range(n)],
        attributes=[{} for _ in range(n)],
        sources=[f"x:{i}" for i in range(n)],
        descriptions=[""] * n,
    )


def _write(path, text: str):
    path.write_text(text)
    return path


# ------------------------------------------------------------------------- brute-force oracle


def _oracle_known_match(truth_spec, n):
    """``known(i, j)`` and ``match(i, j)`` from the plain description of a truth."""
    kind, data = truth_spec
    if kind == "entities":  # data: {row: entity}

        def known(i, j):
            return i != j and i in data and j in data

        def match(i, j):
            return known(i, j) and data[i] == data[j]
    else:  # labelled pairs, data: {(i, j) with i < j: bool}

        def known(i, j):
            return (min(i, j), max(i, j)) in data and i != j

        def match(i, j):
            return known(i, j) and data[(min(i, j), max(i, j))]

    return known, match


def _truth_of(truth_spec, n) -> Truth:
    kind, data = truth_spec
    if kind == "entities":
        return Truth.from_labels([data.get(i) for i in range(n)])
    keys = np.array([a * n + b for a, b in data], np.int64)
    m = np.array(list(data.values()), bool)
    o = np.argsort(keys)
    lab = np.zeros(n, bool)
    for a, b in data:
        lab[a] = lab[b] = True
    return Truth(n, "labelled_pairs", lab, keys=keys[o].reshape(-1), match=m[o].reshape(-1))


def _oracle_scores(pred, truth_spec, n, shops, cross):
    known, match = _oracle_known_match(truth_spec, n)
    pred = {(min(a, b), max(a, b)) for a, b in pred if a != b}
    if cross:
        pred = {(a, b) for a, b in pred if shops[a] != shops[b]}
    tp = sum(match(a, b) for a, b in pred)
    fp = sum(known(a, b) and not match(a, b) for a, b in pred)
    unknown = sum(not known(a, b) for a, b in pred)
    pos = [
        (i, j)
        for i, j in itertools.combinations(range(n), 2)
        if match(i, j) and (not cross or shops[i] != shops[j])
    ]
    return {
        "tp": tp,
        "fp": fp,
        "unknown": unknown,
        "positives": len(pos),
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / len(pos) if pos else None,
        "pos": pos,
    }


@st.composite
def _cases(draw):
    n = draw(st.integers(2, 12))
    if draw(st.booleans()):
        data = draw(st.dictionaries(st.integers(0, n - 1), st.integers(0, 3), max_size=n))
        spec = ("entities", data)
    else:
        all_pairs = list(itertools.combinations(range(n), 2))
        chosen = draw(st.lists(st.sampled_from(all_pairs), unique=True, max_size=20))
        spec = ("labelled_pairs", {p: draw(st.booleans()) for p in chosen})
    rows = st.integers(0, n - 1)
    pred = draw(st.lists(st.tuples(rows, rows), max_size=30))
    shops = draw(st.lists(st.sampled_from("xyz"), min_size=n, max_size=n))
    return n, spec, pred, shops, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_scores_equal_a_double_loop_over_all_pairs(case):
    n, spec, pred, shops, cross = case
    truth = _truth_of(spec, n)
    want = _oracle_scores(pred, spec, n, shops, cross)
    left = np.array([p[0] for p in pred], np.int64)
    right = np.array([p[1] for p in pred], np.int64)
    got = score_pairs(left, right, truth, sources=shops, cross_source=cross)
    for k in ("tp", "fp", "unknown", "positives", "precision", "recall"):
        assert got[k] == want[k], k
    assert got["fn"] == want["positives"] - want["tp"]
    # elementwise, either order
    known, match = _oracle_known_match(spec, n)
    assert truth.is_known(right, left).tolist() == [known(a, b) for a, b in pred]
    assert truth.is_match(left, right).tolist() == [match(a, b) for a, b in pred]
    pl, pr = truth.positives()
    assert list(zip(pl.tolist(), pr.tolist())) == [
        (i, j) for i, j in itertools.combinations(range(n), 2) if match(i, j)
    ]
    # blocking quality: the predicted pairs as candidates
    q = candidate_quality_known(left, right, truth, n, sources=shops, cross_source=cross)
    assert q["positives_found"] == want["tp"] and q["known_candidates"] == want["tp"] + want["fp"]
    assert q["pc"] == want["recall"]
    # a subset of the offers: the truth of the pairs among them, renumbered
    rows = np.array(sorted({0, n - 1} | {a for a, _ in pred}), np.int64)
    sub = truth.subset(rows)
    i, j = np.triu_indices(len(rows), 1)
    assert sub.is_match(i, j).tolist() == [match(int(rows[a]), int(rows[b])) for a, b in zip(i, j)]
    assert sub.is_known(i, j).tolist() == [known(int(rows[a]), int(rows[b])) for a, b in zip(i, j)]


def test_hand_made_scores():
    # entities: 0,1,2 one product, 3,4 another, 5 alone, 6 and 7 unlabelled
    t = Truth.from_labels(["a", "a", "a", "b", "b", "c", None, None])
    left = np.array([0, 1, 0, 3, 5, 6, 1, 0], np.int64)
    right = np.array([1, 0, 3, 4, 2, 7, 1, 2], np.int64)
    s = score_pairs(left, right, t)
    # distinct pairs: (0,1) tp, (0,3) fp, (3,4) tp, (2,5) fp, (6,7) unknown, (0,2) tp
    assert (s["predicted"], s["tp"], s["fp"], s["unknown"]) == (6, 3, 2, 1)
    assert s["positives"] == 4 and s["fn"] == 1
    assert s["precision"] == pytest.approx(3 / 5) and s["recall"] == pytest.approx(3 / 4)
    assert s["f1"] == pytest.approx(2 * 0.6 * 0.75 / 1.35)
    assert t.summary()["negative_pairs"] == 15 - 4
    q = candidate_quality_known(left, right, t, 8)
    assert q["pc"] == pytest.approx(0.75) and q["pq"] == pytest.approx(3 / 5)
    assert q["per_offer"] == pytest.approx(6 / 8)
    assert q["per_labelled_offer"] == pytest.approx(10 / 2 / 6)  # (6,7) touches no labelled offer
    # nothing predicted, nothing known
    e = score_pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), t)
    assert e["precision"] is None and e["recall"] == 0.0 and e["f1"] is None
    with pytest.raises(ValueError, match="rows"):
        t.is_known(np.array([0]), np.array([8]))


# ------------------------------------------------------------------------------------- loading


def test_entity_ids_with_a_header_repeats_and_unlabelled_offers(tmp_path):
    offers = _offers(6)
    f = _write(
        tmp_path / "gt.csv",
        "entity_id,spec_id\nE1,s0//0\nE1,s1//1\nE1,s0//0\nE2,s2//2\nE2,s0//3\nE3,s1//4\n",
    )
    t = load_truth(f, offers)
    assert t.shape == "entities" and t.negatives == "complete"
    assert t.labelled.tolist() == [True] * 5 + [False]
    assert list(zip(*map(np.ndarray.tolist, t.positives()))) == [(0, 1), (2, 3)]
    s = t.summary()
    assert (s["positive_pairs"], s["negative_pairs"], s["entities"]) == (2, 8, 3)
    assert (s["rows"], s["header"], s["repeated"]) == (6, 1, 1)
    assert t.is_known(np.array([0, 0]), np.array([4, 5])).tolist() == [True, False]
    # no header, the columns the other way round: the id column is the one of known ids
    g = _write(tmp_path / "gt2.tsv", "s0//0\tE1\ns1//1\tE1\n")
    t2 = load_truth(g, offers)
    assert t2.shape == "entities" and t2.positives()[0].tolist() == [0]
    # JSONL
    j = _write(
        tmp_path / "gt.jsonl",
        "\n".join(json.dumps({"entity": e, "id": i}) for e, i in [("x", "s0//0"), ("x", "s2//5")])
        + "\n",
    )
    t3 = load_truth(j, offers)
    assert t3.shape == "entities" and t3.positives()[1].tolist() == [5]


def test_an_id_in_two_entities_joins_them(tmp_path):
    offers = _offers(5)
    f = _write(tmp_path / "gt.csv", "cluster,id\nA,s0//0\nA,s1//1\nB,s2//2\nB,s1//1\nC,s0//3\n")
    t = load_truth(f, offers)
    assert t.counts["ids_in_several_entities"] == 1 and t.counts["entities_merged"] == 1
    assert len(t.positives()[0]) == 3  # 0, 1, 2 one product


def test_labelled_pairs_only_listed_pairs_are_known(tmp_path):
    offers = _offers(5)
    f = _write(
        tmp_path / "lab.csv",
        "left_spec_id,right_spec_id,label\ns0//0,s1//1,1\n"
        "s1//1,s2//2,1\ns0//0,s2//2,0\ns2//2,s1//1,1\ns0//3,s0//3,1\n",
    )
    t = load_truth(f, offers)
    assert t.shape == "labelled_pairs" and t.negatives == "listed"
    assert t.labelled.tolist() == [True, True, True, False, False]
    assert t.positives()[0].tolist() == [0, 1] and t.positives()[1].tolist() == [1, 2]
    left, right = np.array([0, 0, 3]), np.array([2, 1, 4])
    assert t.is_known(left, right).tolist() == [True, True, False]
    assert t.is_match(left, right).tolist() == [False, True, False]  # as listed: no closure
    assert (t.counts["repeated"], t.counts["self_pairs"]) == (1, 1)
    # headerless, label first, true/false: the label column is the one holding labels
    g = _write(tmp_path / "lab2.csv", "true;s0//0;s1//1\nno;s1//1;s2//2\n")
    t2 = load_truth(g, offers)
    assert t2.is_match(np.array([0, 1]), np.array([1, 2])).tolist() == [True, False]
    j = _write(
        tmp_path / "lab.jsonl", '{"a": "s0//0", "b": "s1//1", "label": 0}\n["s0//3", "s2//2", 1]\n'
    )
    t3 = load_truth(j, offers)
    assert t3.positives()[0].tolist() == [2] and t3.is_known(np.array([0]), np.array([1]))[0]


def test_plain_pairs_are_complete_and_closed(tmp_path):
    offers = _offers(5)
    f = _write(tmp_path / "p.csv", "a,b\ns0//0,s1//1\ns1//1,s2//2\n")
    t = load_truth(f, offers)
    assert t.shape == "pairs" and t.labelled.all() and t.negatives == "complete"
    assert len(t.positives()[0]) == 3
    assert (t.counts["listed_pairs"], t.counts["closure_pairs"]) == (2, 1)
    assert t.summary()["negative_pairs"] == 10 - 3
    j = _write(tmp_path / "p.jsonl", '{"a": "s0//3", "b": "s1//4"}\n')
    assert load_truth(j, offers).positives()[0].tolist() == [3]


def test_errors_name_the_file_and_line(tmp_path):
    offers = _offers(4)
    f = _write(tmp_path / "lab.csv", "a,b,label\ns0//0,s1//1,1\ns0//0,nope,0\ns1//1,s2//2,x\n")
    with pytest.raises(InputError, match=r"lab.csv:3: unknown id 'nope'"):
        load_truth(f, offers)
    t = load_truth(f, offers, on_error="skip")
    assert (t.counts["unknown_id"], t.counts["bad_rows"]) == (1, 1)
    assert len(t.keys) == 1
    c = _write(tmp_path / "c.csv", "a,b,label\ns0//0,s1//1,1\ns2//2,s3//3,0\ns1//1,s0//0,0\n")
    with pytest.raises(InputError, match=r"c.csv:4: .*labelled 0 here and 1 at line 2"):
        load_truth(c, offers, on_error="skip")
    w = _write(tmp_path / "w.csv", "a;b;c;d\n1;2;3;4\n")
    with pytest.raises(InputError, match="got 4"):
        load_truth(w, offers)
    u = _write(tmp_path / "u.csv", "x,y\nfoo,bar\n")
    with pytest.raises(InputError, match="cannot tell the shape"):
        load_truth(u, offers)
    # the shape named outright; a wrong column count for it
    e = _write(tmp_path / "e.csv", "s0//0,s1//1\n")
    assert load_truth(e, offers, format="entities").shape == "entities"
    with pytest.raises(InputError, match="labelled_pairs has 3 columns"):
        load_truth(e, offers, format="labelled_pairs")
    # a separator given
    s = _write(tmp_path / "s.csv", "s0//0|s1//1\n")
    assert load_truth(s, offers, sep="|").positives()[0].tolist() == [0]
    j = _write(tmp_path / "bad.jsonl", '{"entity": "x", "id": "s0//0"}\n{"id": "s1//1"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: expected the keys entity and id"):
        load_truth(j, offers)


def test_bare_ids_against_ids_qualified_with_their_file_say_how_to_write_them(tmp_path):
    ids = ["abt/0", "abt/1", "abt/2", "buy/0", "buy/2", "buy/5"]
    offers = Offers(
        ids=ids,
        shops=[i.split("/")[0] for i in ids],
        titles=ids,
        attributes=[{} for _ in ids],
        sources=ids,
        descriptions=[""] * len(ids),
    )
    f = _write(tmp_path / "gt.csv", "D1|D2\n0|2\n1|5\n")
    with pytest.raises(
        InputError,
        match=r"gt.csv: .*bare ids such as '0'.*--qualify-ids.*"
        r"FILE/ID, such as 'abt/0' or 'buy/0'",
    ):
        load_truth(f, offers)
    ok = _write(tmp_path / "ok.csv", "D1|D2\nabt/0|buy/2\nabt/1|buy/5\n")
    assert len(load_truth(ok, offers).positives()[0]) == 2
    # ids that are neither: the general message, which names the separator and the format
    other = _write(tmp_path / "other.csv", "D1|D2\n7|8\n9|10\n")
    with pytest.raises(InputError, match=r"--truth-format"):
        load_truth(other, offers)


def test_skipped_unknown_ids_do_not_search_the_offers_for_a_hint(tmp_path, monkeypatch):
    # the hint reads every offer id; with on_error=skip nothing shows it, and a truth file of
    # many unknown ids against a large catalogue took a search per row
    import neardup.evaluate.truth as reader

    calls = []
    real = reader.qualified_hint
    monkeypatch.setattr(reader, "qualified_hint", lambda v, ids: calls.append(v) or real(v, ids))
    offers = _offers(4)
    rows = "".join(f"s0//0,gone{i},0\n" for i in range(50))
    f = _write(tmp_path / "lab.csv", "a,b,label\ns0//0,s1//1,1\n" + rows)
    t = load_truth(f, offers, on_error="skip")
    assert t.counts["unknown_id"] == 50 and calls == []
    with pytest.raises(InputError, match=r"lab.csv:3: unknown id 'gone0'"):
        load_truth(f, offers)
    assert calls == ["gone0"]


def _two_files(left: list[str], right: list[str]) -> Offers:
    ids = [f"abt/{i}" for i in left] + [f"buy/{i}" for i in right]
    return Offers(
        ids=ids,
        shops=[i.split("/")[0] for i in ids],
        titles=ids,
        attributes=[{} for _ in ids],
        sources=ids,
        descriptions=[""] * len(ids),
        id_prefixes=["abt", "buy"],
    )


def _listed(t: Truth, offers: Offers) -> set:
    """The truth's known pairs as (id, id, match), checked one pair at a time."""
    out = set()
    for a, b in itertools.combinations(range(len(offers.ids)), 2):
        if t.is_known([a], [b])[0]:
            out.add((offers.ids[a], offers.ids[b], bool(t.is_match([a], [b])[0])))
    return out


def test_bare_id_pairs_of_two_qualified_files_are_read_column_by_file(tmp_path):
    # clean-clean benchmarks number both files' records alike and write the truth as bare ids,
    # the first column the first file's; both files have offers numbered 0, 1 and 2
    offers = _two_files(["0", "1", "2"], ["0", "1", "2", "5"])
    positional = load_truth(_write(tmp_path / "gt.csv", "D1#D2\n0#2\n1#5\n2#0\n"), offers)
    qualified = load_truth(
        _write(tmp_path / "q.csv", "abt/0,buy/2\nabt/1,buy/5\nabt/2,buy/0\n"), offers
    )
    assert _listed(positional, offers) == _listed(qualified, offers)
    assert ("abt/0", "buy/2", True) in _listed(positional, offers)
    assert ("abt/0", "buy/0", False) in _listed(positional, offers)  # complete negatives
    assert positional.counts["ids_by_file"] == {"D1": "abt", "D2": "buy"}
    assert positional.counts["header"] == 1 and positional.counts["rows"] == 3
    # no header: by position, named by column number
    t = load_truth(_write(tmp_path / "nh.csv", "0,2\n1,5\n"), offers)
    assert t.counts["ids_by_file"] == {"column 1": "abt", "column 2": "buy"}
    assert t.counts["header"] == 0 and len(t.positives()[0]) == 2
    # JSONL lists likewise
    t = load_truth(_write(tmp_path / "gt.jsonl", "[0, 2]\n[1, 5]\n[2, 0]\n"), offers)
    assert _listed(t, offers) == _listed(qualified, offers)
    # a header that names the files goes by the names, whatever their order
    t = load_truth(_write(tmp_path / "named.csv", "buy_id,abt_id\n2,0\n5,1\n"), offers)
    assert t.counts["ids_by_file"] == {"buy_id": "buy", "abt_id": "abt"}
    assert _listed(t, offers) == _listed(
        load_truth(_write(tmp_path / "n2.csv", "abt/0,buy/2\nabt/1,buy/5\n"), offers), offers
    )


def test_bare_id_labelled_pairs_of_two_qualified_files(tmp_path):
    offers = _two_files(["0", "1", "2"], ["0", "1", "2"])
    f = _write(tmp_path / "test.csv", "ltable_id,rtable_id,label\n0,1,1\n0,0,0\n2,2,0\n1,2,1\n")
    t = load_truth(f, offers)
    assert t.shape == "labelled_pairs"
    assert t.counts["ids_by_file"] == {"ltable_id": "abt", "rtable_id": "buy"}
    assert _listed(t, offers) == {
        ("abt/0", "buy/1", True),
        ("abt/0", "buy/0", False),
        ("abt/2", "buy/2", False),
        ("abt/1", "buy/2", True),
    }
    # the label column first
    g = _write(tmp_path / "lab_first.csv", "label,a,b\n1,0,1\n0,0,0\n0,2,2\n1,1,2\n")
    assert _listed(load_truth(g, offers), offers) == _listed(t, offers)


def test_bare_ids_by_file_keep_errors_and_leave_other_truths_alone(tmp_path):
    offers = _two_files(["0", "1", "2"], ["0", "1", "2"])
    # an id the file does not hold: named as read, with its line
    bad = _write(tmp_path / "bad.csv", "D1,D2\n0,1\n1,2\n2,7\n")
    with pytest.raises(InputError, match=r"bad.csv:4: unknown id 'buy/7'"):
        load_truth(bad, offers)
    assert load_truth(bad, offers, on_error="skip").counts["unknown_id"] == 1
    short = _write(tmp_path / "short.csv", "D1,D2\n0,1\n1\n2,2\n")
    with pytest.raises(InputError, match=r"short.csv:3: expected 2 fields"):
        load_truth(short, offers)
    t = load_truth(short, offers, on_error="skip")
    assert t.counts["bad_rows"] == 1 and len(t.positives()[0]) == 2
    # ids written with their file's name are read as written
    t = load_truth(_write(tmp_path / "q.csv", "abt/0,buy/1\n"), offers)
    assert "ids_by_file" not in t.counts
    # entity ids (one id column) are not pairs: the hint to qualify them stays
    with pytest.raises(InputError, match=r"e.csv:2: unknown id '0'.*write it as FILE/ID"):
        load_truth(_write(tmp_path / "e.csv", "entity,id\nx,0\nx,1\n"), offers)
    # three files: which file a column means is not known
    three = Offers(
        ids=["a/0", "b/0", "c/0"],
        shops=["a", "b", "c"],
        titles=["t"] * 3,
        attributes=[{}, {}, {}],
        sources=["s"] * 3,
        descriptions=[""] * 3,
        id_prefixes=["a", "b", "c"],
    )
    with pytest.raises(InputError, match=r"bare ids such as '0'"):
        load_truth(_write(tmp_path / "t3.csv", "x,y\n0,0\n"), three)


def test_loaded_offers_name_their_files_in_the_order_given(tmp_path):
    from neardup.products.loaders import load_offers

    a = _write(tmp_path / "zeta.csv", "id,title\n0,Lumo LM46X210 TV\n1,Other 55 inch\n")
    b = _write(tmp_path / "alpha.csv", "id,title\n0,Lumo LM-46X210 46 inch\n")
    offers, _ = load_offers([a, b], qualify_ids=True)
    assert offers.id_prefixes == ["zeta", "alpha"]
    assert load_offers([a, b][:1])[0].id_prefixes == []
    t = load_truth(_write(tmp_path / "gt.csv", "zeta,alpha\n0,0\n"), offers)
    assert t.counts["ids_by_file"] == {"zeta": "zeta", "alpha": "alpha"}
    assert _listed(t, offers) >= {("zeta/0", "alpha/0", True), ("zeta/1", "alpha/0", False)}
