"""The products jobs: dedup outputs with evidence, the evaluation report, saved matchers."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from neardup import ConfigError, InputError
from neardup.jobs.products import dedup_offers, evaluate_offers, load_model
from neardup.products.candidates import true_pairs
from neardup.products.study import StudyConfig
from neardup.products.synth import make_catalogue


@pytest.fixture(scope="module")
def catalogue():
    return make_catalogue(90, seed=5)


def _found_pairs(outdir):
    rows = [json.loads(line) for line in open(outdir / "pairs.jsonl")]
    return rows, {tuple(sorted((r["id_a"], r["id_b"]))) for r in rows}


def test_dedup_offers_writes_checked_pairs_and_clusters(catalogue, tmp_path):
    offers, labels = catalogue
    s = dedup_offers(offers, tmp_path / "out", num_perm=24, bands=12, rows=2)
    rows, found = _found_pairs(tmp_path / "out")
    tl, tr = true_pairs(labels)
    truth = {tuple(sorted((offers.ids[a], offers.ids[b]))) for a, b in zip(tl, tr)}
    tp = len(found & truth)
    assert s["duplicate_pairs"] == len(rows) == len(found)
    assert tp / len(found) >= 0.9 and tp / len(truth) >= 0.7  # the rule score, untrained
    scores = [r["score"] for r in rows]
    assert scores == sorted(scores, reverse=True)
    ev = rows[0]["evidence"]
    assert set(ev) >= {
        "shared_model_words",
        "shared_model_numbers",
        "brands",
        "shared_attribute_values",
        "attribute_number_match",
    }
    # every pair in clusters.csv shares a cluster; clusters hold exactly the paired offers
    with open(tmp_path / "out" / "clusters.csv") as f:
        clusters = list(csv.DictReader(f))
    cluster_of = {r["id"]: r["cluster"] for r in clusters}
    assert all(cluster_of[a] == cluster_of[b] for a, b in found)
    assert set(cluster_of) == {i for p in found for i in p}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["offers"] == len(offers) and summary["skipped"]["total"] == 0
    assert summary["matcher"] == "unsupervised" and summary["clusters"] == len(
        set(cluster_of.values())
    )


def test_evaluate_offers_report_and_saved_model(catalogue, tmp_path, monkeypatch):
    from neardup.jobs import products as job

    offers, labels = catalogue
    cfg = StudyConfig(bootstraps=2, num_perm=24, bands=8, rows=3)
    blocked = []  # the saved model is fitted on the candidates of the study's token blocking
    real = job.token_blocking
    monkeypatch.setattr(
        job, "token_blocking", lambda o, **kw: blocked.append((len(o), kw)) or real(o, **kw)
    )
    s = evaluate_offers(
        offers, labels, tmp_path / "rep", cfg, save_model_to=str(tmp_path / "m.pkl")
    )
    assert blocked == [(len(offers), {"per_offer": 10.0, "link": False, "units": None})]
    for name in (
        "report.md",
        "summary.csv",
        "summary.md",
        "sweep.csv",
        "sweep.md",
        "runs.csv",
        "sweep.png",
        "similarity.png",
    ):
        assert (tmp_path / "rep" / name).stat().st_size > 0
    assert (tmp_path / "rep" / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| neardup |" in md and " ± " in md
    assert "published" not in md  # the TV data's published results belong to that data only
    assert (
        "token blocking over title words and model words, default budget 10 candidate "
        "pairs per offer" in " ".join(md.split())
    )
    assert "## Test sets at the default budget, 10 candidate pairs per offer (mean ± sd)" in md
    assert (tmp_path / "rep" / "sweep.md").read_text().startswith("| per offer | fraction |")
    assert s["config"]["blocking"] == "tokens" and s["bandings_left_out"] == []
    with open(tmp_path / "rep" / "summary.csv") as f:
        rows = {r["method"]: r for r in csv.DictReader(f)}
    assert float(rows["neardup"]["f1"]) == pytest.approx(
        next(r["f1"] for r in s["summary"] if r["method"] == "neardup")
    )
    model, thr = load_model(tmp_path / "m.pkl")
    assert 0 <= thr.main <= 1 and s["model"]["threshold"] == thr.main
    one = s["model"]["threshold_one_sided"]  # tuned on its own, written in the summary
    if thr.one_sided is None:  # few labelled one-sided pairs: the main threshold holds for them
        assert one == thr.main
    else:
        assert one == (None if np.isinf(thr.one_sided) else thr.one_sided)
    out = dedup_offers(
        offers, tmp_path / "out", model=str(tmp_path / "m.pkl"), num_perm=24, bands=12, rows=2
    )  # looser banding: more of the true pairs are candidates
    _, found = _found_pairs(tmp_path / "out")
    tl, tr = true_pairs(labels)
    truth = {tuple(sorted((offers.ids[a], offers.ids[b]))) for a, b in zip(tl, tr)}
    assert out["matcher"].startswith("model:")
    assert len(found & truth) / len(truth) >= 0.8 and len(found & truth) / len(found) >= 0.9


def test_saved_thresholds_apply_by_kind_of_pair(catalogue, tmp_path):
    """A saved model's two thresholds: the one-sided one decides the pairs where only one
    offer names a model number, the main one the others; ``threshold=`` sets one for all. A
    model file of format 4 (one threshold) is still read."""
    import pickle

    from neardup.jobs.products import MODEL_FORMAT, save_model
    from neardup.products.matcher import FEATURES, PairModel, Thresholds

    offers, labels = catalogue
    rng = np.random.default_rng(0)
    x = rng.random((400, len(FEATURES)))
    col = FEATURES.index
    # duplicates: a shared model number, or one side's only and similar titles
    y = (x[:, col("id_share")] > 0.5) | (
        (x[:, col("id_one")] > 0.5) & (x[:, col("title_jac")] > 0.3)
    )
    model = PairModel(n_estimators=20).fit(x, y)
    runs = {}
    for name, thr in {
        "both": Thresholds(0.3, 0.55),
        "main": Thresholds(0.3),
        "never": Thresholds(0.3, float("inf")),
    }.items():
        save_model(model, thr, tmp_path / f"{name}.pkl")
        assert load_model(tmp_path / f"{name}.pkl")[1] == thr
        runs[name] = dedup_offers(offers, tmp_path / name, model=str(tmp_path / f"{name}.pkl"))
        runs[name]["pairs"] = [json.loads(line) for line in open(tmp_path / name / "pairs.jsonl")]
    assert "threshold_one_sided" not in runs["main"]
    assert runs["both"]["threshold_one_sided"] == 0.55
    assert runs["never"]["threshold_one_sided"] is None

    def one_sided(r):
        a, b = r["evidence"]["model_numbers"]
        return bool(a) != bool(b)

    main = runs["main"]["pairs"]
    assert any(one_sided(r) for r in main) and any(not one_sided(r) for r in main)
    expect = [r for r in main if not one_sided(r) or r["score"] >= 0.55]
    assert 0 < len(expect) < len(main) and any(one_sided(r) for r in expect)
    assert [(r["id_a"], r["id_b"]) for r in runs["both"]["pairs"]] == [
        (r["id_a"], r["id_b"]) for r in expect
    ]
    assert [r for r in runs["never"]["pairs"] if one_sided(r)] == []
    # one threshold given: it holds for every pair
    over = dedup_offers(offers, tmp_path / "over", model=str(tmp_path / "both.pkl"), threshold=0.3)
    assert over["duplicate_pairs"] == runs["main"]["duplicate_pairs"]
    assert "threshold_one_sided" not in over
    # format 4: one threshold, for every pair
    with open(tmp_path / "v4.pkl", "wb") as f:
        pickle.dump(
            {
                "format": MODEL_FORMAT,
                "version": 4,
                "features": list(FEATURES),
                "threshold": 0.3,
                "model": model,
            },
            f,
        )
    assert load_model(tmp_path / "v4.pkl")[1] == Thresholds(0.3)


def test_load_model_rejects_other_files(tmp_path):
    (tmp_path / "x.pkl").write_bytes(b"not a pickle")
    with pytest.raises(InputError, match="not a neardup offer model"):
        load_model(tmp_path / "x.pkl")
    with pytest.raises(InputError, match="cannot read"):
        load_model(tmp_path / "missing.pkl")


def test_dedup_offers_bad_parameters(catalogue, tmp_path):
    from neardup import ConfigError

    offers, _ = catalogue
    with pytest.raises(ConfigError, match="exceeds num_perm"):
        dedup_offers(offers, tmp_path, num_perm=10, bands=5, rows=3)
    with pytest.raises(ConfigError, match="threshold"):
        dedup_offers(offers, tmp_path, threshold=1.5)
    assert np.isfinite(dedup_offers(offers, tmp_path, threshold=0.9)["threshold"])


def test_the_tv_data_report_shows_its_published_results_and_one_bootstrap_no_spread(tmp_path):
    from neardup.products.loaders import load_offers
    from neardup.products.synth import make_catalogue as mk

    offers, labels = mk(40, seed=2)
    tv: dict[str, list] = {}
    for i, lab in enumerate(labels):  # the same offers in the TV data's shape
        tv.setdefault(lab, []).append(
            {
                "shop": offers.shops[i],
                "title": offers.titles[i],
                "featuresMap": offers.attributes[i],
            }
        )
    (tmp_path / "tv.json").write_text(json.dumps(tv))
    tv_offers, tv_labels = load_offers(tmp_path / "tv.json")
    assert tv_offers.formats == {"tv"}
    cfg = StudyConfig(bootstraps=1, num_perm=24, bands=8, rows=3, blocking="lsh")
    evaluate_offers(tv_offers, tv_labels, tmp_path / "rep", cfg)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "MSM (published)" in md and "(one bootstrap: no spread)" in md and " ± " not in md
    # the LSH study's report: its banding, and a sweep over the bandings
    assert (
        "MinHash LSH over title model words and the learned brand, 24 permutations, "
        "default banding 8x3" in " ".join(md.split())
    )
    assert "## Sweep over the bandings" in md
    sweep = (tmp_path / "rep" / "sweep.md").read_text()
    assert sweep.startswith("| bands | rows | fraction |") and "| 8 | 3 |" in sweep


def test_linkage_keeps_pairs_across_shops_and_one_to_one_matches_once(catalogue, tmp_path):
    """--link: no pair within one shop is compared or output, and the candidates are the
    dedup run's cross-shop ones; --one-to-one: each offer matches at most one offer of each
    other shop, and every pair left out loses to a kept pair of at least its score."""
    offers, labels = catalogue
    both = dedup_offers(offers, tmp_path / "d", num_perm=24, bands=12, rows=2, blocking="lsh")
    s = dedup_offers(
        offers, tmp_path / "l", num_perm=24, bands=12, rows=2, link=True, blocking="lsh"
    )
    assert s["mode"] == "link" and both["mode"] == "dedup"
    assert s["candidates"] + s["candidates_within_one_source_left_out"] == both["candidates"]
    rows, _ = _found_pairs(tmp_path / "l")
    assert rows and all(r["shop_a"] != r["shop_b"] for r in rows)
    dedup_offers(
        offers,
        tmp_path / "o",
        num_perm=24,
        bands=12,
        rows=2,
        link=True,
        one_to_one=True,
        threshold=0.2,
    )
    dedup_offers(offers, tmp_path / "m", num_perm=24, bands=12, rows=2, link=True, threshold=0.2)
    one, _ = _found_pairs(tmp_path / "o")
    many, _ = _found_pairs(tmp_path / "m")
    seen = set()
    for r in one:
        for me, other in (("a", "b"), ("b", "a")):
            key = (r[f"id_{me}"], r[f"shop_{other}"])
            assert key not in seen
            seen.add(key)
    kept = {(r["id_a"], r["id_b"]) for r in one}
    for r in many:
        if (r["id_a"], r["id_b"]) in kept:
            continue
        assert any(
            k["score"] >= r["score"]
            and (
                {(k["id_a"], k["shop_b"]), (k["id_b"], k["shop_a"])}
                & {(r["id_a"], r["shop_b"]), (r["id_b"], r["shop_a"])}
            )
            for k in one
        )
    assert len(one) < len(many)


def _listed_twice(catalogue, k: int):
    """The catalogue with offers 0..k-1 listed again by their shops (duplicates within one
    shop), and the labels."""
    from neardup.products.offers import Offers

    base, base_labels = catalogue
    offers = Offers(
        ids=base.ids + [f"again-{i}" for i in range(k)],
        shops=base.shops + base.shops[:k],
        titles=base.titles + [t + " (new)" for t in base.titles[:k]],
        attributes=base.attributes + [dict(a) for a in base.attributes[:k]],
        sources=base.sources + [f"again:{i}" for i in range(k)],
        descriptions=[""] * (len(base) + k),
    )
    return offers, list(base_labels) + list(base_labels[:k])


def test_the_study_of_a_linkage_counts_pairs_across_shops_only(catalogue):
    from neardup.products.study import run_study

    offers, labels = _listed_twice(catalogue, 3)
    tl, tr = true_pairs(labels)
    cross = sum(offers.shops[a] != offers.shops[b] for a, b in zip(tl.tolist(), tr.tolist()))
    assert 0 < cross < len(tl)  # the catalogue has duplicates within shops too
    res = run_study(
        offers, labels, StudyConfig(bootstraps=1, num_perm=24, bands=8, rows=3, link=True)
    )
    assert res.n_true_pairs == cross
    assert all(0 <= r["pc"] <= 1 for r in res.runs)


def test_the_pair_completeness_of_a_linkage_study_counts_pairs_across_shops(catalogue):
    from neardup.evaluate.bootstrap import bootstrap_split
    from neardup.products.blocking import token_blocking
    from neardup.products.study import run_study, subset

    offers, labels = _listed_twice(catalogue, 40)
    cfg = StudyConfig(bootstraps=1, link=True, per_offer=5)
    res = run_study(offers, labels, cfg)
    _, test_rows = bootstrap_split(len(offers), np.random.default_rng(cfg.seed))
    part = subset(offers, test_rows)
    true = [
        (i, j)
        for i in range(len(part))
        for j in range(i + 1, len(part))
        if labels[test_rows[i]] == labels[test_rows[j]]
    ]
    cross = [(i, j) for i, j in true if part.shops[i] != part.shops[j]]
    assert 0 < len(cross) < len(true)  # the test part has duplicates within shops too
    left, right, _, _ = token_blocking(part, per_offer=5, link=True)
    cands = set(zip(left.tolist(), right.tolist()))
    row = next(r for r in res.runs if r["per_offer"] == 5 and r["method"] == "neardup")
    assert row["pc"] == pytest.approx(sum(p in cands for p in cross) / len(cross))


def test_token_blocking_is_the_default_and_keeps_its_budget(catalogue, tmp_path):
    offers, _ = catalogue
    s = dedup_offers(offers, tmp_path / "t", link=True, per_offer=3)
    b = s["blocking"]
    assert b["method"] == "tokens" and s["candidates"] == b["candidates"]
    assert s["candidates"] <= 3 * len(offers)
    assert "candidates_within_one_source_left_out" not in s
    rows, _ = _found_pairs(tmp_path / "t")
    assert rows and all(r["shop_a"] != r["shop_b"] for r in rows)
    lsh = dedup_offers(offers, tmp_path / "l", blocking="lsh", num_perm=24, bands=12, rows=2)
    assert lsh["blocking"] == {
        "method": "lsh",
        "num_perm": 24,
        "bands": 12,
        "rows": 2,
        "max_df": 0.2,
    }
    with pytest.raises(ConfigError, match="blocking"):
        dedup_offers(offers, tmp_path / "x", blocking="words")


def test_dedup_scores_the_pairs_its_clusters_imply(catalogue, tmp_path):
    """The quality block's ``clusters``: every two offers of one cluster in clusters.csv,
    scored against the truth by brute force here."""
    import csv
    from itertools import combinations

    from neardup.products.truth import Truth

    offers, labels = catalogue
    s = dedup_offers(offers, tmp_path, link=True, truth=Truth.from_labels(labels))
    row = {x: i for i, x in enumerate(offers.ids)}
    groups: dict[str, list[int]] = {}
    with open(tmp_path / "clusters.csv", newline="") as f:
        for r in csv.DictReader(f):
            groups.setdefault(r["cluster"], []).append(row[r["id"]])
    tp = fp = 0
    for members in groups.values():
        for a, b in combinations(members, 2):
            if offers.shops[a] != offers.shops[b]:
                tp += labels[a] == labels[b]
                fp += labels[a] != labels[b]
    positives = sum(
        labels[a] == labels[b] and offers.shops[a] != offers.shops[b]
        for a, b in combinations(range(len(offers)), 2)
    )
    c = s["quality"]["clusters"]
    assert (c["tp"], c["fp"], c["positives"]) == (tp, fp, positives)
    assert c["precision"] == pytest.approx(tp / (tp + fp))


def test_the_summary_counts_the_pairs_each_threshold_would_report(catalogue, tmp_path):
    """``pairs_by_threshold`` tells a user without labels what other thresholds would give:
    each count is what a run at that threshold reports (no one-to-one matching here)."""
    offers, _ = catalogue
    s = dedup_offers(offers, tmp_path / "base")
    counts = s["pairs_by_threshold"]
    values = list(counts.values())
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    assert counts[f"{s['threshold']:.2f}"] == s["duplicate_pairs"]
    for t in ("0.25", "0.60"):
        other = dedup_offers(offers, tmp_path / t, threshold=float(t))
        assert other["duplicate_pairs"] == counts[t]


def test_saved_linked_model_counts_only_pairs_across_sources(catalogue, tmp_path, monkeypatch):
    """With link, no candidate pairs two offers of one source: the saved model's thresholds are
    tuned against the matching pairs across sources (brute force here), not all of them."""
    from neardup.jobs import products as job

    offers, labels = catalogue
    labels = list(labels)
    alpha = [i for i, s in enumerate(offers.shops) if s == "alpha"]
    for a, b in zip(alpha[0:10:2], alpha[1:10:2]):  # five pairs within one shop match too
        labels[b] = labels[a]
    across = sum(
        labels[i] == labels[j] and offers.shops[i] != offers.shops[j]
        for i in range(len(labels))
        for j in range(i + 1, len(labels))
    )
    within = sum(
        labels[i] == labels[j] and offers.shops[i] == offers.shops[j]
        for i in range(len(labels))
        for j in range(i + 1, len(labels))
    )
    assert within >= 5
    totals = []
    real = job.tune_thresholds
    monkeypatch.setattr(
        job, "tune_thresholds", lambda s, y, total, x: totals.append(total) or real(s, y, total, x)
    )
    evaluate_offers(
        offers,
        labels,
        tmp_path / "rep",
        StudyConfig(bootstraps=1, link=True),
        save_model_to=str(tmp_path / "m.pkl"),
    )
    assert totals == [across]
