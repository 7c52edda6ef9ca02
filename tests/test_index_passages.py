"""The persistent index finds reused passages too (memory, SQLite and Redis backends): a check
gives the same passages as comparing the text with every indexed one, the whole-text answers
are those of an index without passages, and an index built without them says so."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import neardup
from neardup import ConfigError, Index, PassageConfig, reused_passages
from neardup.reuse import unique_by_text


def _words(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [f"w{rng.randrange(4000)}" for _ in range(n)]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def target(request, tmp_path):
    if request.param == "memory":
        yield neardup.index.MemoryStorage()
    elif request.param == "sqlite":
        yield tmp_path / "ix.db"
    else:
        url = request.getfixturevalue("redis_server")
        yield f"{url}?prefix=p{uuid.uuid4().hex[:12]}"


def _corpus() -> dict[str, str]:
    docs = {f"doc{i}": " ".join(_words(i, 250)) for i in range(30)}
    docs["repost"] = docs["doc3"]  # a whole-text duplicate
    return docs


def test_check_finds_the_passages_of_every_indexed_text(target):
    docs = _corpus()
    ix = Index(target, threshold=0.8, passages=True)
    ix.add_many(docs.items())
    base = _words(100, 120)
    new = (
        base[:40]
        + docs["doc7"].split()[50:110]
        + base[40:80]
        + docs["doc12"].split()[0:30]
        + base[80:]
    )
    text = " ".join(new)
    got = ix.check(text)
    want = {}
    for doc_id, doc in docs.items():
        found = reused_passages(text, doc)
        if found:
            want[doc_id] = [(p.a_words, p.b_words, p.a_chars, p.b_chars) for p in found]
    assert {
        m.id: [(p.a_words, p.b_words, p.a_chars, p.b_chars) for p in m.passages] for m in got.reused
    } == want
    assert [m.id for m in got.reused] == ["doc7", "doc12"]  # most reused first
    assert got.reused[0].share_query == pytest.approx(60 / len(new))
    assert got.matches == [] and not got.unique and not got.capped
    # a whole-text duplicate is both a match and a reuse of the whole text
    dup = ix.check(docs["doc3"])
    assert [m.id for m in dup.matches] == ["doc3", "repost"]
    assert {m.id for m in dup.reused} == {"doc3", "repost"}
    assert dup.reused[0].share_query == 1.0
    assert ix.check(" ".join(_words(999, 200))).unique
    capped = ix.check(text, max_passages=1)
    assert capped.capped and [m.id for m in capped.reused] == ["doc7"]
    ix.close()


def test_whole_text_answers_do_not_change(target, tmp_path):
    docs = _corpus()
    with_p = Index(target, threshold=0.5, passages=True)
    without = Index(threshold=0.5)
    for ix in (with_p, without):
        ix.add_many(docs.items())
    for q in (docs["doc5"], " ".join(docs["doc5"].split()[:200] + _words(7, 50))):
        assert with_p.query(q) == without.query(q)
    assert with_p.query_id("doc3") == without.query_id("doc3")
    assert with_p.remove("doc7") and with_p.check(docs["doc7"]).reused == []
    with_p.close()


def test_an_index_without_passages_says_what_it_lacks(tmp_path):
    path = tmp_path / "old.db"
    ix = Index(path)  # passages are indexed on request only
    ix.add("a", " ".join(_words(1, 100)))
    assert ix.stats()["passages"].startswith("not indexed")
    ix.close()
    ix = Index(path)  # opens, as an index made before passages could be indexed would
    assert ix.query(" ".join(_words(1, 100)))[0].id == "a"
    with pytest.raises(ConfigError, match="built without passage fingerprints"):
        ix.check("anything at all")
    ix.close()
    with pytest.raises(ConfigError, match="built without passage fingerprints"):
        Index(path, passages=True)
    with pytest.raises(ConfigError, match="passages need the texts"):
        Index(passages=True, store_text=False)
    assert Index(store_text=False).passages is None and Index().passages is None


def test_passage_parameters_are_stored_with_the_index(tmp_path):
    path = tmp_path / "p.db"
    cfg = PassageConfig(k=4, window=10, max_gap=2)
    Index(path, passages=cfg).close()
    ix = Index(path)
    assert ix.passages == cfg and ix.stats()["passages"]["window"] == 10
    ix.close()
    with pytest.raises(ConfigError, match="open it without passages="):
        Index(path, passages=PassageConfig())


def test_passages_hashed_by_another_word_hash_are_not_used(tmp_path):
    """An index whose stored passage fingerprints come from another word hash (a development
    version) opens for whole-text answers and says why it finds no passages."""
    import json
    import sqlite3

    path = tmp_path / "dev.db"
    ix = Index(path, passages=True)
    ix.add("a", " ".join(_words(1, 100)))
    assert ix.check(" ".join(_words(1, 100))).matches[0].id == "a"
    ix.close()
    con = sqlite3.connect(path)
    params = json.loads(con.execute("SELECT value FROM meta WHERE key = 'params'").fetchone()[0])
    assert params["passages"].pop("word_hash") == 1
    con.execute("UPDATE meta SET value = ? WHERE key = 'params'", (json.dumps(params),))
    con.commit()
    con.close()
    ix = Index(path)
    assert ix.passages is None and ix.query(" ".join(_words(1, 100)))[0].id == "a"
    with pytest.raises(ConfigError, match="hashed words differently"):
        ix.check("anything at all")
    ix.close()


def test_a_check_compares_at_most_its_candidates_and_says_it_is_incomplete():
    """Bounded work: with fewer candidates allowed than there are texts sharing a
    fingerprint, or a spent time budget, the check says it is incomplete and never unique."""
    source = _words(7, 80)
    ix = Index(passages=True)
    for i in range(6):  # six texts hold the same 40 words of the source
        ix.add(f"t{i}", " ".join(_words(100 + i, 60) + source[20:60] + _words(200 + i, 60)))
    query = " ".join(_words(999, 50) + source[20:60])
    full = ix.check(query)
    assert sorted(m.id for m in full.reused) == [f"t{i}" for i in range(6)]
    assert not full.incomplete and not full.unique
    few = ix.check(query, max_candidates=2)
    assert few.incomplete and len(few.reused) == 2 and not few.unique
    # a new text that shares nothing: unique, unless the search could not finish
    lone = " ".join(_words(5000, 80))
    assert ix.check(lone).unique
    with pytest.raises(ConfigError, match="time_budget"):
        ix.check(lone, time_budget=0)


def test_passages_with_many_texts_equal_one_pair_at_a_time():
    from neardup.reuse import passages_with

    rng = random.Random(3)
    source = _words(1, 300)
    texts = []
    for i in range(150):  # more than one batch of the kernel
        own = _words(50 + i, 120)
        at = rng.randrange(0, 250)
        texts.append(" ".join(own[:60] + source[at : at + rng.randrange(10, 50)] + own[60:]))
    query = " ".join(source)
    found, sizes = passages_with(query, texts, batch=64)
    assert sizes == [len(t.split()) for t in texts]
    want = [reused_passages(query, t) for t in texts]
    assert [
        [(p.a_words, p.b_words, p.a_chars, p.b_chars, p.matched) for p in f] for f in found
    ] == [[(p.a_words, p.b_words, p.a_chars, p.b_chars, p.matched) for p in w] for w in want]
    assert sum(bool(w) for w in want) > 50
    import time

    some, _ = passages_with(query, texts, batch=64, deadline=time.monotonic() - 1)
    assert len(some) == 64  # the first batch is always compared, no other one after it


def test_passages_with_texts_of_any_script_equal_one_pair_at_a_time():
    """Texts with non-ASCII words (accents, ß, CJK, emoji) and HTML tags: the passages and
    their character ranges are those of each pair compared alone."""
    from neardup.reuse import passages_with

    rng = random.Random(11)
    odd = ["café", "Straße", "naïve", "日本語", "🙂x", "ÉCOLE", "ﬁne", "Ωmega"]

    def words(seed: int, n: int) -> list[str]:
        r = random.Random(seed)
        return [r.choice(odd) if r.random() < 0.2 else f"w{r.randrange(4000)}" for _ in range(n)]

    source = words(1, 300)
    for cfg in (PassageConfig(), PassageConfig(strip_html=True)):
        texts = []
        for i in range(80):
            own = words(50 + i, 100)
            at = rng.randrange(0, 250)
            copied = source[at : at + rng.randrange(10, 50)]
            if cfg.strip_html and copied:
                copied[len(copied) // 2] = "<b>" + copied[len(copied) // 2] + "</b>"
            texts.append(" ".join(own[:50] + copied + own[50:]))
        texts.append("ascii only " + " ".join(source[:40]))
        query = " ".join(source)
        found, _ = passages_with(query, texts, cfg, batch=32)
        want = [reused_passages(query, t, cfg) for t in texts]
        assert [
            [(p.a_words, p.b_words, p.a_chars, p.b_chars, p.matched) for p in f] for f in found
        ] == [[(p.a_words, p.b_words, p.a_chars, p.b_chars, p.matched) for p in w] for w in want]
        assert sum(bool(w) for w in want) > 30
        for t, f in zip(texts, found):  # the ranges hold the same words in both texts
            for p in f:
                a = query[p.a_chars[0] : p.a_chars[1]].split()
                assert a[0] == t[p.b_chars[0] : p.b_chars[1]].split()[0] or cfg.strip_html


def test_check_answers_bad_and_extreme_input():
    """Empty and white-space texts, texts shorter than a passage and binary junk get defined
    answers; a 10 MB text that copies many indexed texts is answered with its passages capped
    and within its time budget."""
    import time

    ix = Index(passages=True)
    docs = {f"d{i}": " ".join(_words(300 + i, 200)) for i in range(20)}
    ix.add_many(docs.items())
    for text in [
        "",
        "   \n\t\u3000 ",
        " ".join(_words(300, 10)),
        bytes(range(256)).decode("latin-1") * 40,
    ]:
        got = ix.check(text)
        assert got.matches == [] and got.reused == [] and got.unique, repr(text[:20])
    filler = _words(77, 1000)
    parts = []
    while sum(len(p) + 1 for p in parts) < 10_000_000:
        parts.append(" ".join(filler))
        parts.append(docs[f"d{len(parts) % 20}"])
    big = " ".join(parts)
    assert len(big) >= 10_000_000
    t = time.perf_counter()
    got = ix.check(big, max_passages=30, time_budget=5.0)
    assert time.perf_counter() - t < 60
    assert got.capped and sum(len(m.passages) for m in got.reused) == 30
    assert {m.id for m in got.reused} <= set(docs)


def test_a_long_text_probes_thousands_of_passage_keys_in_sqlite(tmp_path):
    """A text of 8,000 words has more passage fingerprints than SQLite allows terms in one
    compound SELECT (500): the probes are split, and the passages are found."""
    ix = Index(tmp_path / "long.db", passages=True)
    source = _words(5, 200)
    ix.add("src", " ".join(source))
    text = " ".join(_words(6, 4000) + source[50:110] + _words(7, 4000))
    from neardup.reuse import fingerprints, text_words

    tw = text_words(text, keep_keys=False)
    assert len(fingerprints(tw.hashes, 5, 12)) > 1000
    got = ix.check(text)
    assert [m.id for m in got.reused] == ["src"] and got.reused[0].passages[0].words == 60


def _keys_of(ix: Index, text: str):
    """The passage keys of ``text`` as a check looks them up (an oracle's input)."""
    from neardup.reuse import fingerprints, text_words

    return ix._passage_keys(fingerprints(text_words(text, keep_keys=False).hashes, 5, 12))


@pytest.mark.parametrize("cap, common_texts, texts", [(4, 16, 4), (500, 5, 7)])
def test_common_passages_are_reported_once_not_compared_text_by_text(
    target, cap, common_texts, texts
):
    """A fingerprint held by ``common_texts`` indexed texts or more (or bucket_cap, if fewer)
    is common: the texts that share only such fingerprints are not compared one by one; the
    common passage is compared with one representative and reported once, with its number of
    holders (capped at bucket_cap); every other text that shares a passage is compared, with
    the passages a comparison of the two texts finds (brute force)."""
    ix = Index(target, threshold=0.8, passages=True, bucket_cap=cap)
    common, rare = _words(900, 40), _words(901, 40)
    docs = {}
    for i in range(7):  # the common phrase in 7 texts (> the floor), the rare one in 3 (<)
        docs[f"c{i}"] = " ".join(_words(1000 + i, 60) + common + _words(1100 + i, 60))
    for i in range(3):
        docs[f"r{i}"] = " ".join(_words(1200 + i, 60) + rare + _words(1300 + i, 60))
    source = _words(1400, 200)
    docs["src"] = " ".join(source)
    docs.update({f"o{i}": " ".join(_words(1500 + i, 150)) for i in range(10)})
    ix.add_many(docs.items())
    head = _words(2000, 50)
    text = " ".join(
        head
        + common
        + _words(2001, 50)
        + rare
        + _words(2002, 50)
        + source[30:60]
        + _words(2003, 50)
    )
    floor = min(cap, common_texts)
    # the oracle: every indexed text's fingerprints, who holds each of the text's keys
    keys = set(_keys_of(ix, text).tolist())
    held = {d: keys & set(_keys_of(ix, t).tolist()) for d, t in docs.items()}
    holders = {k: sum(k in h for h in held.values()) for k in keys}
    candidates = {d for d, h in held.items() if any(holders[k] < floor for k in h)}
    want = {}
    for d in sorted(candidates):
        found = reused_passages(text, docs[d])
        if found:
            want[d] = [(p.a_words, p.b_words, p.a_chars, p.b_chars) for p in found]
    got = ix.check(text, common_texts=common_texts)
    assert {
        m.id: [(p.a_words, p.b_words, p.a_chars, p.b_chars) for p in m.passages] for m in got.reused
    } == want
    assert {"r0", "r1", "r2", "src"} == set(want) and not got.incomplete
    # the common phrase: once, with its holders, one of them as the example
    assert len(got.common) == 1
    c = got.common[0]
    start = len(" ".join(head)) + 1
    assert (c.a_words, c.words, c.texts) == ((50, 90), 40, texts)
    assert c.a_chars == (start, start + len(" ".join(common)))
    assert c.example in {f"c{i}" for i in range(7)}
    ordered = not isinstance(target, str)  # Redis answers holders in no order
    if ordered:  # the oldest of the holders read
        assert c.example == "c0"
    assert docs[c.example][c.b_chars[0] : c.b_chars[1]] == " ".join(common)
    # the rule bites: the other texts that share the 40-word common phrase are not compared
    reps = set(got.texts) - candidates
    assert c.example in reps and all(d.startswith("c") for d in reps)
    if ordered:  # the same holders read for each key: one representative
        assert reps == {"c0"}
    left_out = {d for d in docs if d.startswith("c")} - reps
    assert left_out and all(reused_passages(text, docs[d]) for d in left_out)
    assert all(got.texts[d] == docs[d] for d in got.texts)
    assert not got.unique
    # with a floor above its holders the phrase is no longer common: each text is compared
    every = ix.check(text, common_texts=8) if cap > 8 else None
    if every is not None:
        assert not every.common
        assert {m.id for m in every.reused} == set(want) | {f"c{i}" for i in range(7)}
    ix.close()


def test_candidates_are_ranked_by_shared_fingerprints_and_cut_from_the_bottom(target):
    """Candidates are ranked by how many of the text's fingerprints they share (most first,
    then the oldest), as counted from every text's own fingerprints; ``max_candidates`` keeps
    the top of that ranking."""
    ix = Index(target, threshold=0.8, passages=True)
    sources = {f"s{i}": _words(3000 + i, 200) for i in range(6)}
    docs = {d: " ".join(w) for d, w in sources.items()}
    docs.update({f"o{i}": " ".join(_words(3100 + i, 150)) for i in range(10)})
    ix.add_many(docs.items())
    parts = _words(3200, 30)
    for i, n in enumerate([20, 120, 45, 17, 80, 30]):  # words copied from each source
        parts += sources[f"s{i}"][10 : 10 + n] + _words(3300 + i, 25)
    text = " ".join(parts)
    keys = set(_keys_of(ix, text).tolist())
    order = list(docs)  # insertion order: the order of the handles
    shared = {d: len(keys & set(_keys_of(ix, t).tolist())) for d, t in docs.items()}
    want = sorted((d for d in docs if shared[d]), key=lambda d: (-shared[d], order.index(d)))
    ranked = ix._candidates(_keys_of(ix, text), 16)[3]
    assert [d for d, _ in ix.storage.texts_of(ranked.tolist())] == want
    assert want[0] == "s1" and len(want) == 6
    full = ix.check(text)
    assert sorted(m.id for m in full.reused) == sorted(want) and not full.incomplete
    for n in (1, 3):
        few = ix.check(text, max_candidates=n)
        assert few.incomplete and not few.unique
        assert sorted(m.id for m in few.reused) == sorted(want[:n])
        assert [m for m in full.reused if m.id in want[:n]] == few.reused
    ix.close()


def test_storages_name_holders_and_read_texts_by_handle(target):
    """``holders`` gives per key what ``candidates`` gives for that key alone; ``texts_of``
    gives ids and stored texts in the order asked, without the removed ones."""
    import numpy as np

    ix = Index(target, threshold=0.8, passages=True, bucket_cap=3)
    shared = _words(4000, 30)
    docs = {f"t{i}": " ".join(_words(4100 + i, 40) + shared) for i in range(5)}
    ix.add_many(docs.items())
    keys = _keys_of(ix, " ".join(shared + _words(4100, 40)))
    pos, handles = ix.storage.holders(keys, 3)
    assert pos.dtype == np.int64 and handles.dtype == np.int64
    for j, k in enumerate(keys.tolist()):
        mine = handles[pos == j].tolist()
        assert len(mine) <= 3 and len(set(mine)) == len(mine)
        alone = ix.storage.candidates(np.array([k], np.uint64), 3)
        if len(alone) < 3:
            assert sorted(mine) == sorted(alone)
        else:
            assert len(mine) == 3
    every = ix.storage.candidates(keys, 100)
    assert set(handles.tolist()) <= set(every)
    # counts up to a cap, on every backend: those of holders with a cap above them all
    pos_all, _ = ix.storage.holders(keys, 100)
    full = np.bincount(pos_all, minlength=len(keys))
    assert full.max() == 5
    for cap in (1, 3, 100):
        assert ix.storage.holder_counts(keys, cap).tolist() == np.minimum(full, cap).tolist()
    by_handle = ix.storage.texts_of(every[::-1])
    assert [d for d, _ in by_handle] == [d for d, _ in ix.storage.shingles(every[::-1])]
    assert all(ix._unpack(t) == docs[d] for d, t in by_handle)
    ix.remove(by_handle[0][0])
    assert [d for d, _ in ix.storage.texts_of(every[::-1])] == [d for d, _ in by_handle[1:]]
    ix.close()


def test_a_backend_without_its_own_holders_and_texts_of_checks_the_same():
    """The default ``Storage.holders`` and ``texts_of`` (for backends made elsewhere) answer
    as the backends' own do."""
    from neardup.index.storage import MemoryStorage, Storage

    class Plain(MemoryStorage):
        holders = Storage.holders
        texts_of = Storage.texts_of

    docs = _corpus()
    own, plain = Index(passages=True, bucket_cap=3), Index(Plain(), passages=True, bucket_cap=3)
    text = " ".join(_words(100, 40) + docs["doc7"].split()[50:110] + docs["doc12"].split()[:30])
    for ix in (own, plain):
        ix.add_many(docs.items())
    a, b = own.check(text), plain.check(text)
    assert a == b and a.texts == b.texts and [m.id for m in a.reused] == ["doc7", "doc12"]
    keys = _keys_of(own, text)
    assert [x.tolist() for x in own.storage.holders(keys, 3)] == [
        x.tolist() for x in plain.storage.holders(keys, 3)
    ]


@given(st.lists(st.lists(st.integers(0, 7), max_size=9), min_size=1, max_size=12))
def test_passage_keys_of_a_batch_are_each_texts_distinct_keys(per_text):
    """The passage keys a batch stores per text: each text's distinct keys, sorted, as
    ``np.unique`` of that text's keys alone gives them (empty texts included)."""
    keys = np.array([k for ks in per_text for k in ks], np.uint64)
    text = np.repeat(np.arange(len(per_text)), [len(ks) for ks in per_text])
    got = unique_by_text(keys, text, len(per_text))
    assert len(got) == len(per_text)
    for ks, g in zip(per_text, got):
        assert g.dtype == np.uint64
        assert g.tolist() == sorted(set(ks))
