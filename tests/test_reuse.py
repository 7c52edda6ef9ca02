"""Reused passages against a brute-force oracle: every shared run of at least window + k - 1
words is found (the winnowing guarantee), nothing is reported that is not shared, passages are
merged across small edits, and character ranges cut from the original texts show the words."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import ConfigError
from neardup.reuse import (
    PassageConfig,
    fingerprints,
    reuse_share,
    reused_passages,
    text_words,
)


def reference_fingerprints(keys: list[str], k: int, window: int) -> list[tuple[int, int]]:
    """Winnowing one window at a time, in plain Python: the smallest k-gram hash of every
    window (the rightmost of equal ones), each kept position once."""
    from neardup.reuse import combine_kgrams, word_hashes

    return reference_winnowing(combine_kgrams(word_hashes(keys), k).tolist(), window)


def reference_winnowing(hs: list[int], window: int) -> list[tuple[int, int]]:
    """:func:`reference_fingerprints` of the k-gram hashes ``hs``."""
    n = len(hs)
    if n == 0:
        return []
    w = min(window, n)
    out: list[tuple[int, int]] = []
    last = -1
    for s in range(n - w + 1):
        best = s
        for i in range(s + 1, s + w):
            if hs[i] <= hs[best]:
                best = i
        if best != last:
            out.append((hs[best], best))
            last = best
    return out


def maximal_runs(a: list[str], b: list[str], min_len: int) -> set[tuple[int, int, int]]:
    """Brute force: every maximal diagonal run of equal words, ``(i0, j0, length)``."""
    out = set()
    for i in range(len(a)):
        for j in range(len(b)):
            if a[i] != b[j] or (i and j and a[i - 1] == b[j - 1]):
                continue
            n = 0
            while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
                n += 1
            if n >= min_len:
                out.add((i, j, n))
    return out


texts = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h"]), max_size=60)


def _join(ws: list[str]) -> str:
    return " ".join(ws)


@settings(max_examples=300, deadline=None)
@given(
    texts,
    texts,
    st.lists(st.sampled_from(list("abcdefgh")), min_size=0, max_size=30),
    st.integers(1, 4),
    st.integers(1, 6),
    st.integers(0, 60),
    st.integers(0, 60),
)
def test_every_shared_run_of_the_guaranteed_length_is_found_and_nothing_else(
    a, b, common, k, window, at_a, at_b
):
    """With no gap bridging, the passages are exactly the maximal shared runs of at least
    window + k - 1 words (a common run is planted so that there often is one)."""
    a = a[:at_a] + common + a[at_a:]
    b = b[:at_b] + common + b[at_b:]
    cfg = PassageConfig(k=k, window=window, max_gap=0, max_occurrences=10**6)
    got = reused_passages(_join(a), _join(b), cfg)
    want = maximal_runs(a, b, cfg.guaranteed_words)
    assert {(p.a_words[0], p.b_words[0], p.words) for p in got} == want
    assert all(p.matched == p.words for p in got)


@settings(max_examples=200, deadline=None)
@given(texts, texts, st.integers(1, 4), st.integers(1, 6), st.integers(1, 3))
def test_bridged_passages_cover_every_run_and_hold_only_shared_words(a, b, k, window, gap):
    cfg = PassageConfig(k=k, window=window, max_gap=gap, min_match=1, max_occurrences=10**6)
    got = reused_passages(_join(a), _join(b), cfg)
    for i0, j0, n in maximal_runs(a, b, cfg.guaranteed_words):
        assert any(
            p.a_words[0] <= i0
            and i0 + n <= p.a_words[1]
            and p.b_words[0] <= j0
            and j0 + n <= p.b_words[1]
            for p in got
        ), (i0, j0, n)
    for p in got:
        assert p.words == p.a_words[1] - p.a_words[0] >= cfg.shortest
        prev = None
        for i, j, n in p.runs:
            assert n > 0 and a[i : i + n] == b[j : j + n]  # every run is shared word for word
            if prev is not None:
                assert 0 <= i - prev[0] <= gap and 0 <= j - prev[1] <= gap
            prev = (i + n, j + n)
        assert p.runs[0][:2] == (p.a_words[0], p.b_words[0])
        assert prev == (p.a_words[1], p.b_words[1])
        assert p.matched == sum(n for _, _, n in p.runs) <= p.words


def test_winnowing_keeps_the_minimum_of_every_window():
    keys = [f"w{i % 7}" for i in range(40)]
    kept = fingerprints(keys, 3, 5)
    from neardup.reuse import combine_kgrams, word_hashes

    hs = combine_kgrams(word_hashes(keys), 3).tolist()
    positions = {p for _, p in kept}
    for s in range(len(hs) - 5 + 1):
        window = hs[s : s + 5]
        m = min(window)
        rightmost = s + max(i for i, h in enumerate(window) if h == m)
        assert rightmost in positions
    assert [p for _, p in kept] == sorted(positions)
    assert kept == reference_fingerprints(keys, 3, 5)
    assert fingerprints(["x"], 3, 5) == []
    assert len(fingerprints(["x", "y", "z"], 3, 5)) == 1


def _corpus(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"t{i}" for i in range(5000)]
    return [rng.choice(vocab) for _ in range(n)]


@pytest.mark.parametrize("length", [20, 50, 120, 400])
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_planted_verbatim_passage_is_found_with_its_character_ranges(length, where):
    source = _corpus(1, 600)
    passage = source[100 : 100 + length]
    other = _corpus(2, 300)
    at = {"start": 0, "middle": 150, "end": 300}[where]
    new = other[:at] + passage + other[at:]
    a, b = " ".join(new), "  ".join(source)  # other spacing in the source
    (p,) = reused_passages(a, b)
    assert p.a_words == (at, at + length) and p.b_words == (100, 100 + length)
    assert a[p.a_chars[0] : p.a_chars[1]].split() == passage
    assert b[p.b_chars[0] : p.b_chars[1]].split() == passage
    assert reuse_share([p], len(new)) == pytest.approx(length / len(new))
    assert reuse_share([p], len(source), "b") == pytest.approx(length / len(source))


@pytest.mark.parametrize("rate", [0.01, 0.03, 0.05])
def test_a_planted_passage_with_changed_words_is_found_whole(rate):
    rng = random.Random(int(rate * 100))
    source = _corpus(3, 500)
    passage = source[200:300]
    edited = list(passage)
    for i in rng.sample(range(1, 99), max(1, int(rate * 100))):
        edited[i] = "changed"
    new = _corpus(4, 80) + edited + _corpus(5, 80)
    got = reused_passages(" ".join(new), " ".join(source))
    assert len(got) == 1
    p = got[0]
    assert p.a_words == (80, 180) and p.b_words == (200, 300)
    assert p.matched == 100 - sum(1 for x, y in zip(edited, passage) if x != y)


def test_texts_sharing_only_short_phrases_report_nothing():
    source = _corpus(6, 400)
    new = _corpus(7, 400)
    for at in (20, 100, 200, 300):  # common phrases of 8 words, far apart
        new[at : at + 8] = source[at : at + 8]
    assert reused_passages(" ".join(new), " ".join(source)) == []


def test_offsets_are_into_the_original_texts():
    """NFKC and case folding, CRLF, emoji and right-to-left words: the ranges cut from each
    original text hold the same words."""
    words_a = "ﬁnance ＡＢＣ שלום 😀 caf\u00e9 Straße one two three four five six seven eight nine ten".split()
    words_b = "finance abc שלום 😀 cafe\u0301 STRASSE one two three four five six seven eight nine ten".split()
    a = "intro text here\r\n" + "\r\n".join(words_a) + "\r\noutro"
    b = "other start " + " ".join(words_b) + " end"
    (p,) = reused_passages(a, b, PassageConfig(k=3, window=4, max_gap=0))
    cut_a = text_words(a[p.a_chars[0] : p.a_chars[1]]).keys
    cut_b = text_words(b[p.b_chars[0] : p.b_chars[1]]).keys
    assert cut_a == cut_b and len(cut_a) == p.words
    assert "😀" in cut_a and "שלום" in cut_a


def test_html_markup_neither_joins_nor_splits_a_passage():
    """With strip_html, tags separate words like spaces: a passage marked up in one text and
    plain in the other is found whole, at offsets of the original texts; in the batch search,
    the passage index and the persistent index too."""
    from neardup import Index
    from neardup.reuse import PassageIndex, blank_tags, find_reuse

    plain = (
        "the harbour authority said the ferry timetable would change in spring with an "
        "extra morning crossing on weekdays and fewer late boats at weekends"
    )
    words = plain.split()
    marked = (
        "<div class='news'><p>Intro.</p><p>"
        + " ".join(words[:5])
        + " <b>"
        + words[5]
        + "</b><br/>"
        + " ".join(words[6:])
        + "</p></div>"
    )
    other = "Some other opening words here. " + plain + " And a different ending."
    cfg = PassageConfig(strip_html=True)
    (p,) = reused_passages(marked, other, cfg)
    assert p.words == p.matched == len(words)
    cut = marked[p.a_chars[0] : p.a_chars[1]]
    assert text_words(blank_tags(cut)).keys == words
    assert other[p.b_chars[0] : p.b_chars[1]] == plain
    assert reused_passages(marked, other) == [] or reused_passages(marked, other)[0].words < len(
        words
    )  # without: markup in the words
    res = find_reuse([marked, "unrelated text " * 5, other], cfg)
    assert [(x["a"], x["b"], x["a_chars"], x["words"]) for x in res.passages] == [
        (0, 2, p.a_chars, len(words))
    ]
    ix = PassageIndex(cfg)
    ix.add("m", marked)
    assert [(q.a_chars, q.b_chars) for m in ix.check(other) for q in m.passages] == [
        (p.b_chars, p.a_chars)
    ]
    idx = Index(strip_html=True, passages=True)
    assert idx.passages.strip_html
    idx.add("m", marked)
    got = idx.check(other).reused
    assert [(q.a_chars, q.b_chars) for q in got[0].passages] == [(p.b_chars, p.a_chars)]
    with pytest.raises(ConfigError, match="strip_html"):
        PassageConfig(strip_html="yes")


def test_config_is_checked():
    with pytest.raises(ConfigError, match="at least window \\+ k - 1 = 16"):
        PassageConfig(min_words=10)
    assert PassageConfig().shortest == 16 and PassageConfig(min_words=30).shortest == 30
    for bad in ({"k": 0}, {"window": 0}, {"max_gap": -1}, {"min_match": 0}):
        with pytest.raises(ConfigError):
            PassageConfig(**bad)
    assert reused_passages("", "") == []
    assert reused_passages("   ", "a b c") == []
    with pytest.raises(ConfigError):
        reused_passages(None, "a")


def test_punctuation_at_word_ends_does_not_split_a_passage():
    a = "Alpha beta, gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi."
    b = "alpha beta gamma; delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi"
    (p,) = reused_passages(a, b, PassageConfig(k=3, window=4, max_gap=0))
    assert p.words == p.matched == 16
    assert text_words("—").keys == ["—"]  # punctuation alone stays a word


@settings(max_examples=150, deadline=None)
@given(st.lists(texts, max_size=8), st.integers(1, 4), st.integers(1, 6), st.integers(1, 50))
def test_winnowing_many_texts_at_once_equals_one_by_one(docs, k, window, block):
    import numpy as np

    from neardup.reuse import combine_kgrams, winnow_many, word_hashes

    parts = [combine_kgrams(word_hashes(d), k) for d in docs]
    off = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(p) for p in parts], out=off[1:])
    kh = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    h, doc, pos = winnow_many(kh, off, window, block=block)
    want = [
        (hh, d, p)
        for d, words in enumerate(docs)
        for hh, p in reference_fingerprints(words, k, window)
    ]
    assert list(zip(h.tolist(), doc.tolist(), pos.tolist())) == want


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(list("abcdefghij")), max_size=40), max_size=7),
    st.integers(1, 3),
    st.integers(1, 4),
)
def test_the_corpus_search_finds_what_every_pair_compared_finds(docs, k, window):
    """find_reuse against reused_passages on every pair (no fingerprint too common here)."""
    from neardup.reuse import find_reuse

    cfg = PassageConfig(k=k, window=window, max_occurrences=10**6)
    texts = [" ".join(d) for d in docs]
    res = find_reuse(texts, cfg, max_doc_freq=10**6)
    got = {(p["a"], p["b"], p["a_words"], p["b_words"]) for p in res.passages}
    want = {
        (a, b, p.a_words, p.b_words)
        for a in range(len(texts))
        for b in range(a + 1, len(texts))
        for p in reused_passages(texts[a], texts[b], cfg)
    }
    assert got == want
    assert res.stats["passages"] == len(want)
    assert {(p["a"], p["b"]) for p in res.pairs} == {(a, b) for a, b, _, _ in want}


def test_the_corpus_search_on_planted_passages():
    from neardup.reuse import find_reuse

    rng = random.Random(9)
    docs = [_corpus(100 + i, 300) for i in range(40)]
    planted = {}
    for target in range(0, 40, 4):  # ten texts copy 60 words of another text
        source = (target + 17) % 40
        at = rng.randrange(0, 200)
        docs[target][at:at] = docs[source][50:110]
        planted[(min(source, target), max(source, target))] = 60
    boiler = _corpus(999, 20)  # the same 20-word footer in every text: too common
    texts = [" ".join(d + boiler) for d in docs]
    res = find_reuse(texts, max_doc_freq=10)
    found = {(p["a"], p["b"]): p for p in res.pairs}
    assert set(found) == set(planted)
    for a, b in found:
        lengths = sorted(p["words"] for p in res.passages if (p["a"], p["b"]) == (a, b))
        assert lengths == [20, 60]  # the copied words, and the footer both texts end with
    assert res.stats["common_fingerprints"] > 0  # the footer proposed no pair of its own


def test_neardup_reuse_writes_passages_and_pairs(tmp_path, capsys):
    import json

    import pyarrow.parquet as pq

    from neardup.cli import main

    source = _corpus(50, 300)
    other = _corpus(51, 300)
    copied = other[:100] + source[40:90] + other[100:]
    lines = [
        {"id": "src", "text": " ".join(source)},
        {"id": "new", "text": " ".join(copied)},
        {"id": "unrelated", "text": " ".join(_corpus(52, 300))},
    ]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    rc = main(["reuse", str(path), "--id-field", "id", "-o", str(tmp_path / "out"), "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["pairs"] == summary["passages"] == 1 and summary["documents"] == 3
    (p,) = pq.read_table(tmp_path / "out" / "passages.parquet").to_pylist()
    texts = {r["id"]: r["text"] for r in lines}
    assert {p["id_a"], p["id_b"]} == {"src", "new"} and p["words"] == p["matched_words"] == 50
    assert texts[p["id_a"]][p["a_start"] : p["a_end"]].split() == source[40:90]
    assert texts[p["id_b"]][p["b_start"] : p["b_end"]].split() == source[40:90]
    (pair,) = pq.read_table(tmp_path / "out" / "pairs.parquet").to_pylist()
    assert pair["reused_words_a"] == pair["reused_words_b"] == 50
    share_new = pair["share_a"] if pair["id_a"] == "new" else pair["share_b"]
    assert share_new == pytest.approx(50 / 350)
    rc = main(
        ["reuse", str(path), "--id-field", "id", "-o", str(tmp_path / "bad"), "--min-words", "10"]
    )
    assert rc == 2 and "at least window + k - 1" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.lists(st.integers(0, 299), max_size=6), st.integers(0, 40))
def test_long_runs_are_extended_exactly(length, changes, shift):
    """Runs longer than the block the extension compares at once (32 words), with changes
    anywhere: the runs found are the brute-force maximal runs."""
    base = _corpus(60, length)
    a = list(base)
    for c in changes:
        if c < len(a):
            a[c] = "changed"
    b = _corpus(61, shift) + base
    cfg = PassageConfig(k=2, window=3, max_gap=0)
    got = reused_passages(" ".join(a), " ".join(b), cfg)
    assert {(p.a_words[0], p.b_words[0], p.words) for p in got} == maximal_runs(
        a, b, cfg.guaranteed_words
    )


def test_a_seed_whose_words_differ_is_dropped():
    """A seed from a collision of k-gram hashes (its words differ) gives no run."""
    import numpy as np
    from neardup._kernels.passages import pair_passages_many

    words = np.array([1, 2, 3, 4, 5, 6] + [9, 2, 3, 7, 5, 6], np.uint64)

    def runs(i: int, j: int) -> list[list[int]]:
        """The runs found from one seed at (i, j) (both texts keep hash 42 there)."""
        _, got = pair_passages_many(
            words,
            np.array([0, 6, 12], np.int64),
            np.array([42, 42], np.uint64),
            np.array([i, j], np.int64),
            np.array([0, 1, 2], np.int64),
            np.array([0], np.int64),
            np.array([1], np.int64),
            0,
            1,
            2,
            0,
            1,
            16,
            1,
        )
        return got.tolist()

    assert runs(3, 3) == []  # words 4 vs 7: not a shared 2-gram
    assert runs(1, 1) == [[1, 1, 2]]
    assert runs(4, 4) == [[4, 4, 2]]


def test_a_run_joins_its_passage_across_a_repeated_phrase_elsewhere():
    """A phrase that both texts also hold elsewhere (another diagonal) sorts between two runs
    of one passage: the passage is still one."""
    src = _corpus(70, 120)
    filler = _corpus(71, 40)
    phrase = src[10:28]  # 18 words of the passage, repeated in the new text's intro
    edited = list(src[:100])
    edited[60] = "changed"
    new = filler[:5] + phrase + filler[5:] + edited
    got = reused_passages(" ".join(new), " ".join(src))
    start = 5 + len(phrase) + 35
    main = [p for p in got if p.a_words[0] >= start]
    assert [(p.a_words, p.b_words, p.matched) for p in main] == [
        ((start, start + 100), (0, 100), 99)
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(list("abcdefghij")), max_size=40), max_size=6),
    st.lists(st.sampled_from(list("abcdefghij")), max_size=50),
    st.integers(1, 3),
    st.integers(1, 4),
)
def test_the_passage_index_finds_what_comparing_with_every_text_finds(docs, query, k, window):
    from neardup.reuse import PassageIndex

    cfg = PassageConfig(k=k, window=window, max_occurrences=10**6)
    ix = PassageIndex(cfg)
    for i, d in enumerate(docs):
        ix.add(f"d{i}", " ".join(d))
    q = " ".join(query)
    got = {m.id: [(p.a_words, p.b_words) for p in m.passages] for m in ix.check(q)}
    want = {}
    for i, d in enumerate(docs):
        found = reused_passages(q, " ".join(d), cfg)
        if found:
            want[f"d{i}"] = [(p.a_words, p.b_words) for p in found]
    assert got == want


def test_the_passage_index_check_add_remove_and_common_phrases():
    from neardup.reuse import PassageIndex

    source = _corpus(80, 300)
    footer = _corpus(81, 30)
    ix = PassageIndex(max_doc_freq=3)
    ix.add("source", " ".join(source + footer))
    for i in range(5):
        ix.add(f"other{i}", " ".join(_corpus(82 + i, 200) + footer))
    new = _corpus(90, 100) + source[100:160] + _corpus(91, 40)
    (m,) = ix.check(" ".join(new))  # the shared footer is too common to propose the others
    assert m.id == "source" and [p.words for p in m.passages] == [60]
    assert m.share_query == pytest.approx(60 / 200)
    assert m.share_source == pytest.approx(60 / 330)
    assert ix.check(" ".join(new), min_share=0.5) == []
    with pytest.raises(ConfigError, match="already in the index"):
        ix.add("source", "x")
    assert ix.remove("source") and not ix.remove("source") and "source" not in ix
    assert ix.check(" ".join(new)) == [] and len(ix) == 5
    ix2 = PassageIndex()  # no limit: the footer links every text
    for i in range(3):
        ix2.add(f"o{i}", " ".join(_corpus(95 + i, 100) + footer))
    assert [m.id for m in ix2.check(" ".join(_corpus(99, 50) + footer))] == ["o0", "o1", "o2"]


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(
            st.sampled_from(
                list(
                    " \t\r\n\x1c\x1f\x85\xa0\u2028\u3000"
                    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
                    "aZ09ßﬁ\u0301"
                )
            ),
            st.characters(),
        ),
        max_size=80,
    )
)
def test_word_keys_fast_path_equals_the_word_by_word_keys(text):
    """The keys of ``word_keys`` (an ASCII fast path) are those of ``word_key`` on each word
    the regular expression finds, and the word offsets line up with them."""
    from neardup.text.words import word_key, word_keys, words

    assert word_keys(text) == [k for _, _, k in words(text)]
    tw = text_words(text)
    assert tw.keys == [word_key(text[a:b]) for a, b in tw.spans]


@settings(max_examples=100, deadline=None)
@given(st.lists(texts, max_size=8), st.integers(1, 4), st.integers(1, 6))
def test_fingerprints_of_many_texts_equal_one_by_one(docs, k, window):
    from unittest import mock

    from neardup.reuse import fingerprints_many, winnowing, word_hashes

    want = [
        (hh, d, p)
        for d, words in enumerate(docs)
        for hh, p in reference_fingerprints(words, k, window)
    ]
    for one_pass in (winnowing._ONE_PASS, 0):  # few k-grams: one pass; many: counted first
        with mock.patch.object(winnowing, "_ONE_PASS", one_pass):
            h, doc, pos = fingerprints_many([word_hashes(d) for d in docs], k, window)
        assert list(zip(h.tolist(), doc.tolist(), pos.tolist())) == want


@settings(max_examples=500, deadline=None)
@given(
    texts,
    texts,
    st.lists(st.sampled_from(list("abcdefgh")), min_size=0, max_size=40),
    st.integers(1, 4),
    st.integers(1, 6),
    st.integers(0, 3),
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(0, 6),
    st.integers(0, 60),
    st.integers(0, 60),
    st.lists(st.integers(0, 39), max_size=4),
    st.booleans(),
)
def test_the_passage_kernel_equals_the_plain_python_search(
    a, b, common, k, window, gap, min_match, max_occ, extra, at_a, at_b, edits, twice
):
    """The compiled comparison of two texts finds exactly the passages, matched words and
    runs of the plain-Python search, step for step (seeds, runs, merging, gap extension)."""
    import oracles

    changed = list(common)
    for e in edits:  # the copy in b has a few words changed
        if e < len(changed):
            changed[e] = "z"
    a = a[:at_a] + common + a[at_a:]
    b = b[:at_b] + changed + b[at_b:] + (common if twice else [])  # twice: runs overlap in a
    cfg = PassageConfig(
        k=k,
        window=window,
        max_gap=gap,
        min_match=min_match,
        max_occurrences=max_occ,
        min_words=window + k - 1 + extra,
    )
    got = reused_passages(_join(a), _join(b), cfg)
    want = oracles.passages(
        a,
        b,
        reference_fingerprints(a, k, window),
        reference_fingerprints(b, k, window),
        k=k,
        max_gap=gap,
        min_match=min_match,
        max_occ=max_occ,
        shortest=cfg.shortest,
    )
    assert [(p.a_words, p.b_words, p.matched, p.runs) for p in got] == [
        (wa, wb, m, runs) for wa, wb, m, runs in want
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=20), max_size=20))
def test_word_hashes_equal_the_plain_python_hash(keys):
    import oracles

    from neardup.reuse import word_hashes

    assert word_hashes(keys).tolist() == [
        oracles.word_hash(k.encode("utf-8", "surrogatepass")) for k in keys
    ]


_SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.text(
            alphabet=st.one_of(
                st.sampled_from(_SPACES + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~aZq09\x00\x7f")),
                st.sampled_from(list("ÄäßﬁÉ¨\u0301\u200b\u2027\u202a\ufeff\U0001f600\ud800«»—")),
                st.characters(),
            ),
            max_size=60,
        ),
        max_size=6,
    )
)
def test_words_in_the_kernel_equal_the_python_keys(docs):
    """Splitting (on every white-space character ``str.split`` knows), keying and hashing in
    the kernel, with Python keying the words that hold non-ASCII characters, give the hashes
    of the Python keys (``word_keys``) and the character offsets the regular expression
    finds, one text or many."""
    from neardup.reuse import text_words, word_hashes, words_many
    from neardup.text.words import word_keys, words

    for d in docs:
        tw = text_words(d)
        assert tw.hashes.tolist() == word_hashes(word_keys(d)).tolist()
        assert tw.spans == [(s, e) for s, e, _ in words(d)]
    h, off = words_many(docs)
    assert off.tolist()[1:] == list(itertools.accumulate(len(word_keys(d)) for d in docs))
    assert h.tolist() == [x for d in docs for x in word_hashes(word_keys(d)).tolist()]


#: every character ``str.split()`` splits on: ASCII 9-13 and 28-32, U+0085, U+00A0, U+1680,
#: U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000
_ALL_SPACES = [chr(c) for c in range(0x110000) if chr(c).isspace()]
#: word characters, among them the non-space ones whose UTF-8 starts like a multi-byte space
#: (0xC2, 0xE1, 0xE2, 0xE3), a continuation byte like a space's (U+2080: E2 82 80) and
#: zero-width or format characters that are not white space
_WORD_CHARS = (
    list("aZq09xYAMzé")
    + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\x00\x7f")
    + list(
        "\xa9\xc2\xe1\xe2\xe3\u1681\u169a\u200b\u2030\u205e\u2060\u2080\u2122\u3001\u30a2"
        "\ufeff\U0001f600\ud800«»—ﬁß\u0301中文字ひらカナ\u0e17\u0e35\u0e48\U00020001，。"
    )
)
_space_runs = st.text(alphabet=st.sampled_from(_ALL_SPACES), min_size=1, max_size=4)
_words = st.one_of(
    st.text(alphabet=st.sampled_from(list("abcXYZ019")), min_size=1, max_size=12),
    st.text(
        alphabet=st.sampled_from(list("!\"'(),-.:;?[]{}$+<=>^`|~")), min_size=1, max_size=4
    ),  # punctuation (and symbols) only
    st.text(alphabet=st.sampled_from(_WORD_CHARS), min_size=1, max_size=12),
    st.text(alphabet=st.sampled_from(list("ab.,")), min_size=20, max_size=90),
)  # long words
_split_texts = st.builds(
    lambda lead, parts, spaced: (lead + "".join(parts)) if spaced else "".join(parts),
    st.text(alphabet=st.sampled_from(list("ab ")), max_size=70),  # every offset mod 64
    st.lists(st.one_of(_words, _space_runs), max_size=40),
    st.booleans(),
)


def _expected_split(text: str) -> tuple[list[int], list[int], list[bool], list[int | None]]:
    """What ``str.split()`` and :func:`word_key` make of ``text``: each word's byte offsets,
    whether it holds non-ASCII characters, and the hash of the key of an ASCII one."""
    from neardup.reuse import word_hashes
    from neardup.text.scripts import UNSPACED
    from neardup.text.words import word_key

    def pieces(word: str) -> list[str]:  # each unspaced character apart, runs between
        out, run = [], ""
        for c in word:
            if UNSPACED.fullmatch(c):
                out += [run, c] if run else [c]
                run = ""
            else:
                run += c
        return out + [run] if run else out

    starts, ends, foreign, hashes = [], [], [], []
    at = 0
    for whole in text.split():
        for w in pieces(whole):
            at = text.index(w, at)
            starts.append(len(text[:at].encode("utf-8", "surrogatepass")))
            at += len(w)
            ends.append(len(text[:at].encode("utf-8", "surrogatepass")))
            foreign.append(not w.isascii())
            hashes.append(None if not w.isascii() else int(word_hashes([word_key(w)])[0]))
    return starts, ends, foreign, hashes


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(_split_texts, st.sampled_from(["", " ", "\u3000 \x85\t", "a"])), max_size=8)
)
def test_the_split_kernel_equals_str_split(docs):
    """The compiled split of many texts at once (64 bytes at a time, multi-byte white space
    across those blocks, texts ending anywhere in one) finds the words of ``str.split()``, each
    character of a script written without spaces apart (Japanese, Thai, ...):
    their byte offsets, the non-ASCII ones marked, the ASCII ones hashed from their keys."""
    import numpy as np

    from neardup.reuse.words import _encode, _split

    data, off = _encode(docs)
    hashes, woff, starts, ends, foreign = _split(data, off, True)
    h2, woff2, s2, e2, f2 = _split(data, off, False)
    assert woff.tolist() == woff2.tolist() and len(s2) == len(e2) == 0
    assert np.array_equal(foreign, f2) and np.array_equal(hashes[foreign == 0], h2[f2 == 0])
    for t, d in enumerate(docs):
        w = slice(woff[t], woff[t + 1])
        want_s, want_e, want_f, want_h = _expected_split(d)
        assert starts[w].tolist() == want_s and ends[w].tolist() == want_e
        assert foreign[w].astype(bool).tolist() == want_f
        assert [h if not f else None for h, f in zip(hashes[w].tolist(), want_f)] == want_h
        one = data[off[t] : off[t + 1]]
        alone = _split(one, np.array([0, len(one)], np.int64), True)
        assert alone[0][alone[4] == 0].tolist() == [h for h in want_h if h is not None]


def _unmix(x: int) -> int:
    """The inverse of splitmix64's finaliser (the k-gram hash of one word is that of the word
    hash, its coefficient being 1): the word hash whose 1-gram hash is ``x``."""
    m = (1 << 64) - 1
    x ^= (x >> 31) ^ (x >> 62)
    x = (x * pow(0x94D049BB133111EB, -1, 1 << 64)) & m
    x ^= (x >> 27) ^ (x >> 54)
    x = (x * pow(0xBF58476D1CE4E5B9, -1, 1 << 64)) & m
    x ^= (x >> 30) ^ (x >> 60)
    return x


_kgram_runs = st.one_of(
    st.lists(st.integers(0, 3), max_size=60),  # many equal hashes: ties
    st.lists(st.integers(0, 2**64 - 1), max_size=60),
    st.builds(sorted, st.lists(st.integers(0, 50), max_size=60)),  # rising: rescans
    st.builds(lambda v: sorted(v, reverse=True), st.lists(st.integers(0, 50), max_size=60)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_kgram_runs, max_size=6), st.integers(1, 16))
def test_the_winnowing_kernel_keeps_the_rightmost_smallest_of_every_window(runs, window):
    """Chosen k-gram hashes (word hashes whose 1-gram hashes they are): equal ones, rising and
    falling runs (the smallest leaves the window at every step), texts shorter than the
    window and window 1, in both of the kernel's passes."""
    from unittest import mock

    import numpy as np

    from neardup.reuse import combine_kgrams, fingerprints_many, winnowing

    words = [np.array([_unmix(x) for x in r], np.uint64) for r in runs]
    assert [combine_kgrams(w, 1).tolist() for w in words] == runs
    want = [(h, d, p) for d, r in enumerate(runs) for h, p in reference_winnowing(r, window)]
    for one_pass in (winnowing._ONE_PASS, 0):
        with mock.patch.object(winnowing, "_ONE_PASS", one_pass):
            h, doc, pos = fingerprints_many(words, 1, window)
        assert list(zip(h.tolist(), doc.tolist(), pos.tolist())) == want


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 2), max_size=50), max_size=6),
    st.integers(1, 8),
    st.integers(1, 16),
)
def test_winnowing_word_hashes_with_ties_equals_scanning_every_window(docs, k, window):
    """Words from three hashes (repeated k-grams, equal k-gram hashes), k up to 8 (more than
    some texts' words: no k-gram), windows from 1 to more than the k-grams."""
    from unittest import mock

    import numpy as np

    from neardup.reuse import combine_kgrams, fingerprints_many, winnowing

    words = [np.array(d, np.uint64) for d in docs]
    want = [
        (h, t, p)
        for t, w in enumerate(words)
        for h, p in reference_winnowing(combine_kgrams(w, k).tolist(), window)
    ]
    for one_pass in (winnowing._ONE_PASS, 0):
        with mock.patch.object(winnowing, "_ONE_PASS", one_pass):
            h, doc, pos = fingerprints_many(words, k, window)
        assert list(zip(h.tolist(), doc.tolist(), pos.tolist())) == want


# ---------------------------------------------------------------------------------------------
# What an index stores of passages (neardup.reuse.keys) and the side-by-side passages


def test_passage_keys_of_a_batch_are_those_of_each_text():
    import numpy as np

    from neardup.reuse import (
        PassageConfig,
        blank_tags,
        checked_fingerprints,
        passage_keys,
        passage_keys_many,
        salt_fingerprints,
        text_words,
    )

    texts = [
        "<p>one two three four five six seven</p> eight nine ten eleven twelve thirteen",
        "",
        "Résumé ÉTÉ déjà vu " * 10,
        "one two three four five six seven eight nine ten eleven twelve thirteen",
    ]
    for cfg in (PassageConfig(k=3, window=4), PassageConfig(k=3, window=4, strip_html=True)):
        got = passage_keys_many(texts, cfg)
        assert len(got) == len(texts)
        for text, keys in zip(texts, got):
            q, fh, fpos = checked_fingerprints(text, cfg)
            assert q.text == text
            want = passage_keys(fingerprints(q.hashes, cfg.k, cfg.window))
            assert keys.tolist() == want.tolist() == np.unique(salt_fingerprints(fh)).tolist()
            read = blank_tags(text) if cfg.strip_html else text
            assert q.hashes.tolist() == text_words(read, keep_keys=False).hashes.tolist()
            assert fpos.tolist() == sorted(fpos.tolist())
    # the salt keeps fingerprints apart from band keys, one to one
    h = np.arange(1000, dtype=np.uint64)
    assert len(np.unique(salt_fingerprints(h))) == 1000
    assert not np.isin(salt_fingerprints(h), h).any()


def test_shared_passages_of_words_are_those_of_the_texts():
    from neardup.reuse import shared_passages, text_words

    a = "the cat sat on the mat; THE CAT sat on the mat and then the cat sat down"
    b = "a dog: the cat sat on the mat, the cat sat"
    for k in (1, 2, 3, 5):
        for occ in (None, 1, 2):
            want = shared_passages(a, b, k, max_occurrences=occ)
            assert shared_passages(text_words(a), text_words(b), k, max_occurrences=occ) == want
    assert shared_passages(a, b, 3) == [
        {"a": [0, 35], "b": [7, 42], "words": 9},  # "the cat ... the cat sat": 9 words
        {"a": [0, 11], "b": [31, 42], "words": 3},
        {"a": [24, 46], "b": [7, 30], "words": 6},
        {"a": [56, 67], "b": [7, 18], "words": 3},
        {"a": [56, 67], "b": [31, 42], "words": 3},
    ]
    with pytest.raises(ConfigError, match="k=0"):
        shared_passages(a, b, 0)
