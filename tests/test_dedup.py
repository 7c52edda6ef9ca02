"""End-to-end correctness of ``neardup.dedup`` against a brute-force oracle."""

from __future__ import annotations

import numpy as np
import oracles
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup._arrays import Growable
from neardup.synth import make_corpus
from neardup.text import normalize_text


def brute_force_jaccard(texts: list[str], k: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs with Jaccard > 0 of word k-shingle sets, as (left, right, jaccard).

    Independent of neardup's hashing: shingles are tuples of words, counted by a sparse product.
    """
    vocab: dict[tuple[str, ...], int] = {}
    rows, cols = [], []
    for i, t in enumerate(texts):
        w = normalize_text(t).split()
        grams = (
            {tuple(w)} if 0 < len(w) < k else {tuple(w[s : s + k]) for s in range(len(w) - k + 1)}
        )
        for g in grams:
            rows.append(i)
            cols.append(vocab.setdefault(g, len(vocab)))
    m = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (rows, cols)), shape=(len(texts), len(vocab))
    )
    inter = sp.triu(m @ m.T, k=1).tocoo()
    sizes = np.asarray(m.sum(axis=1)).ravel()
    jac = inter.data / (sizes[inter.row] + sizes[inter.col] - inter.data)
    return inter.row.astype(np.int64), inter.col.astype(np.int64), jac


@pytest.fixture(scope="module")
def corpus():
    texts, planted = make_corpus(2400, dup_fraction=0.4, seed=7, max_edit_rate=0.3)
    return texts, planted


@pytest.fixture(scope="module")
def truth(corpus):
    return brute_force_jaccard(corpus[0])


@pytest.mark.parametrize("scheme", ["oph", "classic"])
def test_recall_and_precision_against_brute_force(corpus, truth, scheme):
    texts, _ = corpus
    left, right, jac = truth
    r = neardup.dedup(texts, scheme=scheme)
    p = r.pairs
    found = {(int(a), int(b)) for a, b in zip(p.left, p.right)}
    # the oracle's pair set: every pair at or above the threshold + 0.05, identical texts too
    strong = [(int(a), int(b)) for a, b, j in zip(left, right, jac) if j >= 0.85]
    assert len(strong) > 300, "the corpus must plant enough near-duplicates to test recall"
    same_cluster = (
        r.labels[np.array([a for a, _ in strong])] == r.labels[np.array([b for _, b in strong])]
    )
    assert same_cluster.mean() >= 0.99
    # every reported pair is verified: its true Jaccard is at least the threshold
    truth_map = {(int(a), int(b)): float(j) for a, b, j in zip(left, right, jac)}
    for a, b, s, m in zip(p.left, p.right, p.similarity, p.method):
        true_j = truth_map.get((int(a), int(b)), 0.0)
        if m == 0:  # fingerprint: identical normalised texts
            assert normalize_text(texts[a]) == normalize_text(texts[b])
        else:
            assert true_j >= 0.8 - 1e-6
            assert s == pytest.approx(true_j, abs=2e-3)
    # near pairs link the first occurrences of distinct texts; LSH must have found them directly
    first: dict[str, int] = {}
    head = [first.setdefault(normalize_text(t), i) for i, t in enumerate(texts)]
    direct = [
        (min(head[a], head[b]), max(head[a], head[b])) in found
        for a, b in strong
        if head[a] != head[b]
    ]
    assert len(direct) > 200 and np.mean(direct) >= 0.99
    assert r.summary["lsh"]["expected_recall_at_threshold"] >= 0.9


def test_estimate_mode_reports_signature_estimates(corpus, truth):
    texts, _ = corpus
    r = neardup.dedup(texts, verify="estimate")
    near = r.pairs.method == 2
    assert near.sum() > 100
    assert np.all(r.pairs.similarity[near] >= 0.8)
    truth_map = {(int(a), int(b)): float(j) for a, b, j in zip(*truth)}
    err = [
        s - truth_map.get((int(a), int(b)), 0.0)
        for a, b, s in zip(r.pairs.left[near], r.pairs.right[near], r.pairs.similarity[near])
    ]
    assert abs(np.mean(err)) < 0.05 and np.max(np.abs(err)) < 0.25


def test_results_do_not_depend_on_chunking_or_order(corpus):
    texts, _ = corpus
    texts = texts[:1200]
    base = neardup.dedup(texts, chunk_size=10_000)
    for cs in (1, 97, 500):
        r = neardup.dedup(texts, chunk_size=cs)
        assert np.array_equal(r.representative, base.representative)
        assert np.array_equal(r.pairs.left, base.pairs.left)
        assert np.array_equal(r.pairs.similarity, base.pairs.similarity)
    one = neardup.dedup(texts, workers=1)
    assert one.summary["workers"] == 1
    assert np.array_equal(one.representative, base.representative)
    assert np.array_equal(one.pairs.similarity, base.pairs.similarity)
    with pytest.raises(neardup.ConfigError, match="workers"):
        neardup.dedup(texts, workers=0)
    perm = np.random.default_rng(0).permutation(len(texts))
    for cluster, keep in (("components", "first"), ("strict", "longest")):
        a = neardup.dedup(texts, cluster=cluster, keep=keep)
        b = neardup.dedup([texts[i] for i in perm], cluster=cluster, keep=keep)
        groups_a = {frozenset(g) for g in oracles.partition(a.representative)}
        groups_b = {frozenset(int(perm[i]) for i in g) for g in oracles.partition(b.representative)}
        if cluster == "components":
            assert groups_a == groups_b
        else:  # strict clusters depend only on the representatives' order: longest, then content
            assert groups_a == groups_b


def test_strict_clusters_never_chain(corpus):
    texts, _ = corpus
    r = neardup.dedup(texts, cluster="strict")
    members = ~r.keep
    assert np.all(r.similarity[members] >= 0.8)
    c = neardup.dedup(texts, cluster="components")
    assert c.summary["largest_cluster"] >= r.summary["largest_cluster"]


def test_chain_of_edits_is_split_by_strict_mode():
    words = [f"w{i}" for i in range(60)]
    chain = []
    cur = list(words)
    for step in range(8):  # each step rewrites 4 more words: neighbours stay similar
        chain.append(" ".join(cur))
        for j in range(4):
            cur[(step * 7 + j * 13) % 60] = f"x{step}_{j}"
    comp = neardup.dedup(chain, threshold=0.6, shingle="word:2")
    strict = neardup.dedup(chain, threshold=0.6, shingle="word:2", cluster="strict")
    assert len(set(comp.labels.tolist())) == 1
    assert len(set(strict.labels.tolist())) > 1
    assert np.all(strict.similarity >= 0.6)
    assert np.any(comp.similarity < 0.6)  # the chain's far end is far from the representative
    # each document's similarity to its representative: a verified pair's (looked up) or, for
    # the chain's far members, computed; both the Jaccard of the shingle sets
    sets = [set(oracles.shingle_hashes(normalize_text(t), "word", 2)) for t in chain]
    for r in (comp, strict):
        for i, rep in enumerate(r.representative):
            assert r.similarity[i] == pytest.approx(oracles.jaccard(sets[i], sets[rep]), abs=1e-6)


def test_exact_duplicates_first_and_empty_documents():
    texts = [
        "Alpha beta gamma delta epsilon zeta",
        "alpha  BETA gamma delta epsilon zeta",
        "",
        "   ",
        "one",
        "one",
        "something else entirely different here now",
    ]
    r = neardup.dedup(texts, ids=[f"d{i}" for i in range(len(texts))])
    s = r.summary
    assert s["documents"] == 7 and s["empty_documents"] == 2
    assert s["exact_duplicates"] == 2 and s["kept"] == 5
    assert r.representative.tolist() == [0, 0, 2, 3, 4, 4, 6]
    recs = r.pair_records()
    assert {(x["id_a"], x["id_b"], x["method"]) for x in recs} == {
        ("d0", "d1", "fingerprint"),
        ("d4", "d5", "fingerprint"),
    }
    assert r.clusters()[0]["members"][0] == {"id": "d0", "similarity": 1.0}


def test_keep_longest_picks_the_longest_text():
    base = "the cat sat on the mat and looked at the birds in the garden all day long"
    texts = [base, base + " today", base + " today again and", "unrelated words only here"]
    r = neardup.dedup(texts, threshold=0.6, keep="longest")
    assert r.representative.tolist()[:3] == [2, 2, 2]


def test_row_number_ids_mixed_with_given_ids_are_checked():
    # Chunks without ids get row numbers unchecked; a later chunk's own ids still may not
    # repeat them, and row numbers after given ids are checked against those.
    d = neardup.Deduplicator()
    d.add(["one text", "two text"])
    with pytest.raises(neardup.InputError, match="duplicate id '1' at positions 1 and 2"):
        d.add(["three text"], ["1"])
    d = neardup.Deduplicator()
    d.add(["one text"], ["2"])
    d.add(["two text"])
    with pytest.raises(neardup.InputError, match="duplicate id '2' at positions 0 and 2"):
        d.add(["three text"])
    d = neardup.Deduplicator()
    d.add(["a b c"])
    d.add(["d e f"], ["x"])
    d.add(["g h i"])
    assert d.finish().ids == ["0", "x", "2"]


def test_bad_library_input():
    with pytest.raises(neardup.InputError, match="position 1"):
        neardup.dedup(["ok", 3])
    with pytest.raises(neardup.InputError, match="duplicate id 'a'"):
        neardup.dedup(["x", "y"], ids=["a", "a"])
    with pytest.raises(neardup.ConfigError, match="threshold"):
        neardup.dedup(["x"], threshold=1.5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'treshold'"):
        neardup.dedup(["x"], treshold=0.5)
    with pytest.raises(neardup.ConfigError, match="bands\\*rows"):
        neardup.dedup(["x"], bands=20, rows=10)
    r = neardup.dedup([])
    assert len(r) == 0 and r.summary["documents"] == 0


def test_a_50mb_document_and_one_word_documents():
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(20000)])
    big = " ".join(vocab[rng.integers(0, len(vocab), 8_000_000)].tolist())
    assert len(big) > 50_000_000
    texts = [big, big[:-10] + " tail", "word", "word", "other"]
    r = neardup.dedup(texts)
    assert r.representative.tolist() == [0, 0, 2, 2, 4]
    assert r.similarity[1] > 0.99
    assert r.summary["shingles"] > 7_000_000


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=300), max_size=12), st.integers(1, 64))
def test_growable_equals_concatenation(parts, capacity):
    g = Growable(np.uint32, capacity=capacity)
    for p in parts:
        g.append(np.asarray(p, np.uint32))
    expected = np.asarray([x for p in parts for x in p], np.uint32)
    assert len(g) == len(expected)
    got = g.take()
    assert got.dtype == np.uint32 and np.array_equal(got, expected)
    got[:] = 0  # the result is an ordinary writable array


def test_malloc_tuning_applies_on_glibc_and_can_be_turned_off():
    import subprocess
    import sys

    # and numpy's request for huge pages: the setter returns the setting it replaces
    code = (
        "from neardup._malloc import tune_malloc; print(tune_malloc(), tune_malloc()); "
        "import numpy as np; m = getattr(np, '_core', None) or np.core; "
        "print(m.multiarray._set_madvise_hugepage(True))"
    )
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    off = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "NEARDUP_MALLOC_TUNING": "0"},
    )
    assert off.stdout.split()[:2] == ["False", "False"]
    if sys.platform.startswith("linux"):
        assert on.stdout.split() == ["True", "True", "False"]
        assert off.stdout.split()[2] == "True"


def test_prefetch_keeps_order_raises_in_place_and_stops_on_close():
    import threading

    from neardup.jobs.dedup import _Prefetch

    def items(n, fail_at=None):
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"bad item {i}")
            yield i

    assert list(_Prefetch(items(50), depth=2)) == list(range(50))
    got = []
    with pytest.raises(ValueError, match="bad item 7"):
        for x in _Prefetch(items(50, fail_at=7)):
            got.append(x)
    assert got == list(range(7))  # every item before the error, in order
    closed = threading.Event()

    def endless():
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.set()

    with _Prefetch(endless()) as p:
        assert next(iter(p)) == 0
    assert closed.wait(5)  # leaving the block stopped the reader thread and closed its source


class _Recording:
    """A KeepStream that records the pieces it is told."""

    def __init__(self, n):
        from neardup.io.writers import KeepStream

        self.inner = KeepStream(n)
        self.pieces = []

    @property
    def decided(self):
        return self.inner.decided

    def decide(self, flags):
        self.pieces.append(len(flags))
        self.inner.decide(flags)

    def fail(self, error):
        self.inner.fail(error)


@pytest.mark.parametrize(
    "cluster,keep,verify",
    [
        ("components", "first", "exact"),
        ("strict", "longest", "exact"),
        ("components", "longest", "estimate"),
        ("strict", "first", "estimate"),
    ],
)
def test_keep_flags_told_in_order_match_the_result(cluster, keep, verify):
    """Verification and clustering cut into groups of candidates, deciding the documents in
    order (for the corpus to be written meanwhile): the flags told are the result's, told in
    several pieces, and the result is the one of deciding all at once."""
    from neardup.engines.local import Deduplicator

    texts, _ = make_corpus(1500, dup_fraction=0.4, seed=3, words=(20, 60))
    texts = texts + texts[:50] + [""] * 3  # exact duplicates and empty documents too
    runs = []
    for told in (False, True):
        d = Deduplicator(threshold=0.7, shingle="word:3", cluster=cluster, keep=keep, verify=verify)
        for s in range(0, len(texts), 400):
            d.add(texts[s : s + 400])
        rec = _Recording(len(texts)) if told else None
        runs.append((d.finish(rec), rec))
    (base, _), (result, rec) = runs
    assert rec.decided == len(texts) and len(rec.pieces) >= 4
    assert np.array_equal(rec.inner.array, result.keep)
    assert np.array_equal(result.keep, base.keep)
    assert np.array_equal(result.representative, base.representative)
    assert np.array_equal(result.labels, base.labels)
    assert np.array_equal(result.similarity, base.similarity)
    for col in ("left", "right", "similarity"):
        assert np.array_equal(getattr(result.pairs, col), getattr(base.pairs, col))
    assert (~result.keep).sum() > 100


def test_a_failed_finish_tells_the_keep_stream(monkeypatch):
    """An error in verification (here: LSH out of memory) reaches whoever waits for flags."""
    import neardup.engines.local as local
    from neardup.errors import ConfigError
    from neardup.io.writers import KeepStream

    def no_room(*a, **k):
        raise MemoryError("no room")

    monkeypatch.setattr(local, "find_candidates", no_room)
    d = local.Deduplicator()
    d.add(["a b c d e f g", "a b c d e f g h"])
    stream = KeepStream(2)
    with pytest.raises(MemoryError):
        d.finish(stream)
    with pytest.raises(ConfigError, match="stopped before it decided"):
        stream.wait(2)


def test_a_run_that_fails_while_deciding_leaves_no_output(tmp_path, monkeypatch):
    """The corpus copy starts before verification: when verification fails, the copy stops,
    and the run leaves no file of its own (the output folder it made stays empty)."""
    import json

    import neardup.engines.local as local
    from neardup.jobs.dedup import dedup_files

    src = tmp_path / "in.jsonl"
    texts, _ = make_corpus(300, seed=4, words=(20, 40))
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))

    def no_room(*a, **k):
        raise MemoryError("no room")

    monkeypatch.setattr(local, "find_candidates", no_room)
    with pytest.raises(MemoryError):
        dedup_files([src], tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
    monkeypatch.undo()
    summary = dedup_files([src], tmp_path / "out")
    assert summary["kept"] == len(
        (tmp_path / "out" / "deduplicated" / "in.jsonl").read_text().splitlines()
    )


def test_a_second_run_replaces_the_corpus_and_a_failed_one_leaves_it_out(tmp_path, monkeypatch):
    """Running again into the same folder replaces the earlier corpus (removed before the new
    one is written); a run that fails after reading leaves neither corpus nor summary."""
    import json

    import neardup.engines.local as local
    from neardup.jobs.dedup import dedup_files

    src = tmp_path / "in.jsonl"
    texts, _ = make_corpus(200, seed=5, words=(20, 40))
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    out = tmp_path / "out"
    first = dedup_files([src], out)
    corpus = out / "deduplicated" / "in.jsonl"
    corpus.write_text("an earlier run's corpus\n")
    again = dedup_files([src], out, config=local.DedupConfig())
    assert again["kept"] == first["kept"] == len(corpus.read_text().splitlines())

    def no_room(*a, **k):
        raise MemoryError("no room")

    monkeypatch.setattr(local, "find_candidates", no_room)
    with pytest.raises(MemoryError):
        dedup_files([src], out)
    assert not corpus.exists() and not (out / "summary.json").exists()
    # the earlier run's tables stay until replaced, and its folder, emptied
    assert sorted(p.name for p in out.iterdir()) == [
        "clusters.parquet",
        "deduplicated",
        "pairs.parquet",
    ]
    assert list((out / "deduplicated").iterdir()) == []


@pytest.mark.parametrize("chunk", [1, 7, 50])
def test_on_sketched_gives_what_the_index_makes_of_each_text(chunk):
    """The sketches a run hands on (``--save-index`` stores them) are those the online index
    makes of each text by itself: the same band keys and sorted shingle sets, whichever chunk
    an exact duplicate's first copy was in; an empty text has none."""
    from neardup import Index
    from neardup.engines.local import Deduplicator

    texts, _ = make_corpus(120, seed=11, words=(5, 60))
    texts = texts + texts[:9] + ["", "   ", texts[3].upper()]
    got = []
    d = Deduplicator(threshold=0.7, shingle="word:3")
    for s in range(0, len(texts), chunk):
        part = texts[s : s + chunk]
        d.add(part, on_sketched=lambda sk, part=part: got.append((part, sk)))
    d.finish()
    assert sum(len(p) for p, _ in got) == len(texts)
    idx = Index(threshold=0.7, shingle="word:3")
    for part, sk in got:
        mine = idx.encode(part, sketches=sk)
        theirs = idx.encode(part)
        assert len(mine) == len(theirs) == len(part)
        for a, b in zip(mine, theirs):
            assert np.array_equal(a.keys, b.keys) and a.keys.dtype == b.keys.dtype
            assert np.array_equal(a.shingles, b.shingles) and a.shingles.dtype == np.uint32
            assert a.text == b.text


def test_on_sketched_is_refused_for_estimates():
    from neardup.engines.local import Deduplicator
    from neardup.errors import ConfigError

    d = Deduplicator(verify="estimate")
    with pytest.raises(ConfigError, match="on_sketched needs verify='exact'"):
        d.add(["a b c"], on_sketched=print)
