"""Every compiled kernel against its plain-Python oracle, on hand-made cases and hypothesis."""

from __future__ import annotations

import numpy as np
import oracles
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from neardup._kernels.shingle import py_fmix64 as fmix64
from neardup._kernels.shingle import py_mulmod61 as mulmod61

from neardup.cluster import (
    connected_components,
    labels_from_reps,
    preference_rank,
    strict_clusters,
)
from neardup.config import NormalizeConfig, ShingleConfig, SketchConfig
from neardup.lsh import band_keys, candidate_pairs, candidates_from_keys
from neardup.sketch import _seed_words, classic_params, shingle_sketch, sketch
from neardup.text import Shingles, normalize, normalize_text, shingle
from neardup.verify import (
    containment_pairs,
    estimate_pairs,
    jaccard_pairs,
    overlap_pairs,
    sort_unique_segments,
    unsorted_overlap_pairs,
)

u64 = st.integers(min_value=0, max_value=2**64 - 1)
words = st.lists(st.text(alphabet="abcxyzé✓ ", min_size=0, max_size=6), max_size=30)


def csr(sets: list[list[int]]) -> Shingles:
    arrays = [np.array(sorted(set(s)), dtype=np.uint64) for s in sets]
    offsets = np.zeros(len(arrays) + 1, np.int64)
    np.cumsum([len(a) for a in arrays], out=offsets[1:])
    hashes = np.concatenate(arrays) if arrays else np.zeros(0, np.uint64)
    return Shingles(hashes.astype(np.uint64), offsets)


@given(u64)
def test_fmix64_matches_oracle(h):
    assert int(fmix64(np.uint64(h))) == oracles.fmix64(h)


@given(st.integers(0, 2**61 - 2), st.integers(0, 2**61 - 2))
def test_mulmod61_is_exact(a, b):
    assert int(mulmod61(np.uint64(a), np.uint64(b))) == (a * b) % oracles.P61


def test_mulmod61_extremes():
    p = oracles.P61
    for a, b in [(p - 1, p - 1), (2**61 - 2, 2**32 + 7), (2**32 - 1, 2**32 - 1), (0, p - 1)]:
        assert int(mulmod61(np.uint64(a), np.uint64(b))) == (a * b) % p


def test_the_known_seed_words_are_the_drawn_ones():
    from neardup.sketch import _KNOWN_SEED_WORDS, _draw_seed_words

    for seed, words in _KNOWN_SEED_WORDS.items():
        assert _draw_seed_words(seed) == words
        assert _seed_words(seed) == words
    assert _seed_words(7) == _draw_seed_words(7)


# ---- normalisation -----------------------------------------------------------------------------


def test_whitespace_table_is_pythons():
    """The compiled pass's whitespace table holds every code point that str.isspace() calls
    whitespace, and no other (all of them are below its end)."""
    import sys

    from neardup.text.normalize import _WS

    assert [c for c in range(len(_WS)) if _WS[c]] == [
        c for c in range(sys.maxunicode + 1) if chr(c).isspace()
    ]


def test_normalize_hand_checked():
    b = normalize(["  Héllo\tWORLD  ", "ﬁ x\x00y", "", "Straße"])
    assert [b.text(i) for i in range(len(b))] == ["héllo world", "fi x y", "", "strasse"]
    cfg = NormalizeConfig(
        strip_html=True, strip_punctuation=True, strip_digits=True, strip_stopwords=True
    )
    assert normalize_text("<p>The 3 cats &amp; the dog, in 2024!</p>", cfg) == "cats dog"


# long runs of printable ASCII (copied eight bytes at a time; capitals and the characters next
# to A-Z among them) broken by single and double spaces, tabs, control characters and
# multi-byte characters at every offset
ascii_runs = st.builds(
    lambda parts: "".join(parts),
    st.lists(
        st.one_of(
            st.text("aAZz@[`{~\x7f", min_size=1, max_size=12),
            st.sampled_from([" ", " ", " ", "  ", "\t", "\x01", "é", " É "]),
        ),
        max_size=24,
    ),
)
# texts of a few hundred bytes: the compiled pass copies up to 64 bytes of plain ASCII at once
# and the tokeniser finds the spaces of 64 bytes at once, so whatever ends a block early
# (whitespace of any kind, a double space, a multi-byte character) lands at every offset of one
long_runs = st.builds(
    lambda lead, parts: "w" * lead + "".join(parts),
    st.integers(0, 70),
    st.lists(
        st.one_of(
            st.text("abcXYZ09.@[", min_size=1, max_size=20),
            st.sampled_from([" "] * 8 + ["  ", "\n", "\t ", "é", "\u3000", " \u00a0", "✓", "\x00"]),
        ),
        min_size=10,
        max_size=90,
    ),
)


@settings(max_examples=300)
@given(st.lists(long_runs, min_size=1, max_size=4), st.booleans(), st.booleans())
def test_long_texts_match_oracle(texts, fold, arrow):
    import pyarrow as pa

    cfg = NormalizeConfig(casefold=fold)
    b = normalize(pa.array(texts) if arrow else texts, cfg)
    want = [oracles.normalize(t, True, fold, False, False, False, False) for t in texts]
    assert [b.text(i) for i in range(len(b))] == want
    assert b.words.tolist() == [len(t.split(" ")) if t else 0 for t in want]


texts_strategy = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.text("aB \t\n\x00.,é", max_size=30),
        ascii_runs,
        st.sampled_from(
            ["The END of it", "ﬁ Ⅻ ｶ", "  ", "<b>a &amp; b</b>", "Straße  AND the 42 ÉTÉ"]
        ),
    ),
    max_size=12,
)


@settings(max_examples=300)
@given(st.lists(ascii_runs, min_size=1, max_size=8), st.booleans(), st.booleans())
def test_ascii_runs_match_oracle(texts, fold, arrow):
    """The compiled pass copies eight bytes of printable ASCII at once: every letter, symbol
    and space pattern at every offset gives the byte-by-byte result."""
    import pyarrow as pa

    cfg = NormalizeConfig(casefold=fold)
    b = normalize(pa.array(texts) if arrow else texts, cfg)
    want = [oracles.normalize(t, True, fold, False, False, False, False) for t in texts]
    assert [b.text(i) for i in range(len(b))] == want
    # the words counted on the way: the tokens single spaces separate
    assert b.words.tolist() == [len(t.split(" ")) if t else 0 for t in want]


@given(
    texts_strategy,
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_batch_normalisation_matches_oracle(texts, nfkc, fold, html_, punct, digits, stop):
    cfg = NormalizeConfig(
        nfkc=nfkc,
        casefold=fold,
        strip_html=html_,
        strip_punctuation=punct,
        strip_digits=digits,
        strip_stopwords=stop,
    )
    b = normalize(texts, cfg)
    assert len(b) == len(texts)
    expected = [oracles.normalize(t, nfkc, fold, html_, punct, digits, stop) for t in texts]
    assert [b.text(i) for i in range(len(b))] == expected
    assert b.words.tolist() == [len(t.split(" ")) if t else 0 for t in expected]
    assert [normalize_text(t, cfg) for t in texts] == expected


# letters of many scripts, their compatibility and composed forms, combining marks, Hangul
# syllables and jamo, kana with voicing marks, spaces of several kinds, characters beyond the BMP
TRICKY = (
    "aZé\u0301ÅÄßẞİıŉǄǅǆΣσςΐΰΆ\u0345ЁёЯ\u0958क\u093cḱ\u212b\u2126ﬁﬃＡｶﾀ\u3099\u309b"
    "가각\u1100\u1161\u11a8Ⅻ①\u00a0\u2003\u3000\u200b\u00ad\U0001d400\U0001f600"
    "日本カ\u0f73\u1e9b\u0130 \t"
)


@settings(max_examples=300)
@given(
    st.lists(st.text(TRICKY + "\ud800\udc00", max_size=16), min_size=1, max_size=10), st.booleans()
)
def test_compiled_folding_of_texts_that_are_not_ascii_matches_the_oracle(texts, arrow):
    """Texts that are not ASCII are folded by the compiled pass when every character is one
    that NFKC leaves alone in any neighbourhood, by Python otherwise: NFKC and case folding as
    the standard library does them, whatever the mix, from an Arrow array or Python strings
    (which may hold a lone surrogate)."""
    import pyarrow as pa

    from neardup.text.normalize import fast_folding

    assert fast_folding()  # the table matches this Python's Unicode version
    if arrow:  # Arrow holds valid UTF-8 only
        texts = [t.replace("\ud800", "").replace("\udc00", "") for t in texts]
    b = normalize(pa.array(texts) if arrow else texts)
    want = [oracles.normalize(t) for t in texts]
    assert [b.text(i) for i in range(len(b))] == want
    assert b.words.tolist() == [len(t.split(" ")) if t else 0 for t in want]


def test_compiled_folding_of_every_bmp_character_matches_the_oracle():
    """Each character of the Basic Multilingual Plane, between letters, doubled and next to a
    composed letter: the compiled folding (where it takes the text) equals NFKC + casefold."""
    import pyarrow as pa

    from neardup._kernels import text as ktext

    chars = [chr(c) for c in range(0x80, 0x10000) if not 0xD800 <= c < 0xE000]
    texts = [f"A{c}b {c}{c}É ᄀ{c}" for c in chars]
    b = normalize(pa.array(texts))
    got = [b.text(i) for i in range(len(b))]
    bad = [(hex(ord(c)), g) for c, t, g in zip(chars, texts, got) if g != oracles.normalize(t)]
    assert bad == []
    # and the compiled pass did take most of them
    data = np.frombuffer("".join(texts).encode(), np.uint8)
    lens = np.array([len(t.encode()) for t in texts], np.int64)
    ends = np.cumsum(lens)
    n = len(texts)
    done = np.zeros(n, np.uint8)
    ktext.fold_simple(
        data,
        ends - lens,
        ends,
        np.arange(n, dtype=np.int64),
        np.empty(4 * len(data), np.uint8),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        done,
    )
    assert done.sum() > 0.8 * n


def test_python_folds_everything_when_the_unicode_versions_differ(monkeypatch):
    import importlib

    import pyarrow as pa

    nmod = importlib.import_module("neardup.text.normalize")  # the module, not the function
    texts = ["Straße ÉTÉ", "ﬁ Σίσυφος", "plain"]
    fast = nmod.normalize(pa.array(texts))
    monkeypatch.setattr(nmod._text, "unifold_version", "0.0.0")
    monkeypatch.setattr(nmod, "_FAST_FOLDING", None)
    assert not nmod.fast_folding()
    slow = nmod.normalize(pa.array(texts))
    assert [slow.text(i) for i in range(3)] == [fast.text(i) for i in range(3)]
    assert [fast.text(i) for i in range(3)] == ["strasse été", "fi σίσυφοσ", "plain"]


# ---- shingles ----------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["word:1", "word:3", "word:2:2", "char:1", "char:4", "char:3:2"])
def test_shingles_hand_checked(spec):
    cfg = ShingleConfig.parse(spec)
    texts = ["a b c d e", "a", "", "abcdefg", "x y"]
    sh = shingle(texts, cfg)
    for i, t in enumerate(texts):
        assert sh[i].tolist() == oracles.shingle_hashes(t, cfg.kind, cfg.k, cfg.offset)


def test_short_and_empty_documents_have_defined_shingle_sets():
    sh = shingle(["one", "", "two words"], "word:5")
    assert sh.sizes.tolist() == [1, 0, 1]
    assert sh[0][0] != sh[2][0]
    sh = shingle(["ab"], "char:5")
    assert sh.sizes.tolist() == [1]


@given(words, st.sampled_from(["word", "char"]), st.integers(1, 6), st.integers(1, 3))
def test_shingles_match_oracle(ws, kind, k, offset):
    texts = [" ".join(ws), " ".join(reversed(ws)), " ".join(ws[:3])]
    cfg = ShingleConfig(kind, k, offset)
    sh = shingle(texts, cfg)
    for i, t in enumerate(texts):
        nt = normalize_text(t)
        assert sh[i].tolist() == oracles.shingle_hashes(nt, kind, k, offset)


# tokens read eight bytes at a time: lengths around multiples of 8, multi-byte characters across
# a word boundary, and texts that end a few bytes after a word (the byte-by-byte tail)
long_tokens = st.lists(st.text(alphabet="ab✓é", min_size=1, max_size=20), min_size=1, max_size=12)


@given(long_tokens, st.integers(1, 4))
def test_word_shingles_of_long_tokens_match_oracle(tokens, k):
    texts = [" ".join(tokens), "x " + " ".join(tokens), " ".join(tokens[::-1]) + " yz"]
    texts += ["a" * n for n in (1, 7, 8, 9, 15, 16, 17, 24)]
    texts += [" ".join("b" * n for n in (8, 16, 3, 8, 1)), "é" * 4 + " " + "c" * 8]
    sh = shingle(texts, ShingleConfig("word", k))
    for i, t in enumerate(texts):
        assert sh[i].tolist() == oracles.shingle_hashes(normalize_text(t), "word", k, 1)


@settings(max_examples=200)
@given(st.lists(long_runs, min_size=1, max_size=4), st.integers(1, 4))
def test_word_shingles_of_long_texts_match_oracle(texts, k):
    sh = shingle(texts, ShingleConfig("word", k))
    for i, t in enumerate(texts):
        assert sh[i].tolist() == oracles.shingle_hashes(normalize_text(t), "word", k, 1)


def test_shingles_independent_of_batch():
    texts = [f"doc {i} " + "w " * i + "end" for i in range(50)]
    whole = shingle(texts, "word:3")
    for i in (0, 7, 49):
        part = shingle([texts[i]], "word:3")
        assert part[0].tolist() == whole[i].tolist()


# ---- sketches ----------------------------------------------------------------------------------

sets_strategy = st.lists(st.lists(u64, max_size=40), min_size=1, max_size=6)


@given(sets_strategy, st.integers(2, 40), st.integers(0, 2**32))
def test_oph_matches_oracle(sets, k, seed):
    sig = sketch(csr(sets), SketchConfig(num_perm=k, seed=seed, scheme="oph"))
    s_bin, s_probe = _seed_words(seed)
    for i, s in enumerate(sets):
        assert sig[i].tolist() == oracles.oph_signature(sorted(set(s)), k, s_bin, s_probe)


@settings(max_examples=20)
@given(
    st.lists(st.sampled_from([1, 255, 256, 257, 513, 700]), min_size=1, max_size=3),
    st.integers(2, 200),
    st.integers(0, 2**32),
    st.integers(0, 2**32),
)
def test_oph_of_long_sets_matches_oracle(sizes, k, seed, data_seed):
    """Sets longer than the block the kernel hashes at once (256), ending on either side of
    it."""
    rng = np.random.default_rng(data_seed)
    sets = [rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False).tolist() for n in sizes]
    sig = sketch(csr(sets), SketchConfig(num_perm=k, seed=seed, scheme="oph"))
    s_bin, s_probe = _seed_words(seed)
    for i, s in enumerate(sets):
        assert sig[i].tolist() == oracles.oph_signature(sorted(set(s)), k, s_bin, s_probe)


@given(sets_strategy, st.integers(2, 24), st.integers(0, 2**32))
def test_classic_matches_oracle(sets, k, seed):
    sig = sketch(csr(sets), SketchConfig(num_perm=k, seed=seed, scheme="classic"))
    a, b = classic_params(k, seed)
    for i, s in enumerate(sets):
        assert sig[i].tolist() == oracles.classic_signature(sorted(set(s)), a.tolist(), b.tolist())


@pytest.mark.parametrize("scheme", ["oph", "classic"])
def test_signatures_deterministic_and_chunk_independent(scheme):
    rng = np.random.default_rng(3)
    sets = [rng.integers(0, 2**63, size=int(rng.integers(0, 300))).tolist() for _ in range(40)]
    cfg = SketchConfig(scheme=scheme, seed=11)
    whole = sketch(csr(sets), cfg)
    again = sketch(csr(sets), cfg)
    parts = np.vstack([sketch(csr(sets[i : i + 7]), cfg) for i in range(0, 40, 7)])
    assert np.array_equal(whole, again) and np.array_equal(whole, parts)
    other = sketch(csr(sets), SketchConfig(scheme=scheme, seed=12))
    assert not np.array_equal(whole, other)


@pytest.mark.parametrize("scheme", ["oph", "classic"])
@pytest.mark.parametrize(
    "common,only_a,only_b", [(150, 75, 75), (40, 5, 5), (6, 30, 12), (90, 3, 4), (3, 1, 0)]
)
def test_minhash_estimate_is_unbiased(scheme, common, only_a, only_b):
    """Mean estimate error over many independent pairs (each with its own seed) lies within
    4.5 standard errors of 0, and the spread is no worse than k-permutation MinHash's."""
    rng = np.random.default_rng(common * 1000 + only_a)
    k, trials = 64, 600
    errors = []
    J = common / (common + only_a + only_b)
    for t in range(trials // 100):
        sets = []
        for _ in range(100):
            u = rng.choice(2**62, size=common + only_a + only_b, replace=False).astype(np.uint64)
            sets.append(u[: common + only_a].tolist())
            sets.append(np.concatenate([u[:common], u[common + only_a :]]).tolist())
        sig = sketch(csr(sets), SketchConfig(num_perm=k, seed=1000 + t, scheme=scheme))
        errors.append(estimate_pairs(sig, np.arange(0, 200, 2), np.arange(1, 200, 2)) - J)
    e = np.concatenate(errors)
    se = max(e.std(ddof=1), 1e-9) / np.sqrt(len(e))
    assert abs(e.mean()) <= 4.5 * se + 1e-3
    assert e.std() <= 1.25 * np.sqrt(J * (1 - J) / k) + 1e-3


# ---- LSH ---------------------------------------------------------------------------------------


@given(
    st.lists(st.lists(st.integers(0, 3), min_size=12, max_size=12), min_size=1, max_size=30),
    st.sampled_from([(3, 4), (4, 3), (6, 2), (12, 1), (2, 5)]),
)
def test_band_keys_and_candidates_match_oracle(rows_, br):
    bands, rows = br
    sig = np.array(rows_, dtype=np.uint32)
    keys = band_keys(sig, bands, rows)
    for i, r in enumerate(rows_):
        for b in range(bands):
            assert int(keys[b, i]) == oracles.band_key(r, b, rows)
    left, right, stats = candidate_pairs(sig, bands, rows, bucket_cap=10**6)
    expected = set()
    for b in range(bands):
        buckets: dict[tuple, list[int]] = {}
        for i, r in enumerate(rows_):
            buckets.setdefault(tuple(r[b * rows : (b + 1) * rows]), []).append(i)
        for members in buckets.values():
            expected |= {(x, y) for x in members for y in members if x < y}
    assert set(zip(left.tolist(), right.tolist())) == expected
    assert stats.candidates == len(expected) and stats.capped_buckets == 0
    assert np.all(left < right)


@given(
    st.lists(
        st.lists(st.integers(0, 2**32 - 1), min_size=12, max_size=12), min_size=1, max_size=30
    ),
    st.sampled_from([(3, 4), (4, 3), (6, 2), (12, 1), (2, 5)]),
    st.data(),
)
def test_band_keys_written_through_addresses_equal_the_oracle(rows_, br, data):
    """The pipeline's kernel writes each band's keys into an array of its own (a store's free
    end) for a range of signatures: the same keys as the oracle, nothing outside the range."""
    from neardup._kernels.lsh import band_keys_into

    bands, rows = br
    sig = np.array(rows_, dtype=np.uint32)
    n = len(sig)
    lo = data.draw(st.integers(0, n))
    hi = data.draw(st.integers(lo, n))
    outs = [np.full(n, 7, np.uint64) for _ in range(bands)]
    band_keys_into(sig, bands, rows, np.array([o.ctypes.data for o in outs], np.uint64), lo, hi)
    for b in range(bands):
        for i in range(n):
            want = oracles.band_key(rows_[i], b, rows) if lo <= i < hi else 7
            assert int(outs[b][i]) == want
    with pytest.raises(ValueError, match="one address per band"):
        band_keys_into(sig, bands, rows, np.zeros(bands - 1, np.uint64), 0, n)


@pytest.mark.parametrize("scheme", ["oph", "classic"])
def test_sketch_chunk_keys_into_stores_equal_band_keys_of_signatures(scheme):
    """Band keys computed by the sketching threads as they write each part's signatures, into
    the caller's arrays or its own: those of the whole signature matrix."""
    from neardup.exact import FingerprintTable
    from neardup.pipeline import fingerprint_chunk, sketch_chunk

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(60)]
    texts = [" ".join(rng.choice(words, int(rng.integers(0, 400)))) for _ in range(700)]
    texts += texts[:50]  # exact repeats: only the first copy is sketched
    fp = fingerprint_chunk(normalize(texts), FingerprintTable())
    shingle_cfg, cfg = ShingleConfig(), SketchConfig(scheme=scheme)
    sigs, _, _ = shingle_sketch(fp.batch, shingle_cfg, cfg, fp.docs)
    expected = band_keys(sigs, 16, 8)
    own = sketch_chunk(fp, shingle_cfg, cfg, (16, 8))
    assert isinstance(own.keys, np.ndarray) and np.array_equal(own.keys, expected)
    outs = [np.empty(len(fp.docs), np.uint64) for _ in range(16)]
    into = sketch_chunk(fp, shingle_cfg, cfg, (16, 8), keys_out=outs)
    assert all(a is b for a, b in zip(into.keys, outs))
    assert np.array_equal(np.stack(outs), expected)
    assert np.array_equal(into.shingles, own.shingles)
    with pytest.raises(ValueError, match="16 writable uint64"):
        sketch_chunk(fp, shingle_cfg, cfg, (16, 8), keys_out=outs[:15])


@given(
    st.lists(st.lists(st.integers(0, 3), min_size=8, max_size=8), min_size=1, max_size=40),
    st.integers(1, 7),
    st.booleans(),
)
def test_candidates_from_chunked_keys_equal_candidates_of_signatures(rows_, chunk, overwrite):
    # The pipeline keeps band keys chunk by chunk instead of signatures: same candidates.
    sig = np.array(rows_, dtype=np.uint32)
    expected = candidate_pairs(sig, 4, 2, bucket_cap=3)
    parts = [band_keys(sig[s : s + chunk], 4, 2) for s in range(0, len(sig), chunk)]
    keys = [np.concatenate([p[b] for p in parts]) for b in range(4)]
    before = [k.copy() for k in keys]
    left, right, stats = candidates_from_keys(keys, bucket_cap=3, overwrite=overwrite)
    assert np.array_equal(left, expected[0]) and np.array_equal(right, expected[1])
    assert stats.candidates == expected[2].candidates
    assert stats.capped_buckets == expected[2].capped_buckets
    if not overwrite:
        assert all(np.array_equal(a, b) for a, b in zip(keys, before))
    ids = np.arange(len(sig), dtype=np.int64) * 3 + 5  # renumbered documents
    l2, r2, _ = candidates_from_keys(before, bucket_cap=3, ids=ids)
    assert np.array_equal(l2, ids[expected[0]]) and np.array_equal(r2, ids[expected[1]])


@settings(max_examples=40)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=300), st.integers(1, 12), st.data())
def test_keep_repeats_keeps_exactly_the_keys_whose_top_bits_repeat(values, table_bits, data):
    from neardup._kernels import lsh as klsh

    keys = np.array(
        values + data.draw(st.lists(st.sampled_from(values), max_size=20)) if values else [],
        np.uint64,
    )
    top = (keys >> np.uint64(64 - table_bits)).tolist()
    want = [int(x) for x, t in zip(keys.tolist(), top) if top.count(t) >= 2]
    m = klsh.keep_repeats(keys, table_bits)
    assert keys[:m].tolist() == want  # in their order


def test_candidates_of_large_bands_equal_the_bucket_oracle():
    """From 4,096 documents a band drops the keys that meet no other before sorting: the
    pairs, the capped buckets and the largest bucket are what grouping equal keys gives."""
    rng = np.random.default_rng(7)
    n, bands = 6000, 3
    keys = [rng.integers(0, 2**64 - 1, n, dtype=np.uint64) for _ in range(bands)]
    for k in keys:  # planted buckets of 2 to 30 members, one over the cap
        for size in (2, 2, 3, 5, 30):
            k[rng.choice(n, size, replace=False)] = k[rng.integers(n)]
    expected, largest = set(), 1
    for k in keys:
        buckets: dict[int, list[int]] = {}
        for i, x in enumerate((k >> np.uint64(13)).tolist()):  # 13 id bits for 6,000 rows
            buckets.setdefault(x, []).append(i)
        for m in buckets.values():
            largest = max(largest, len(m))
            expected |= (
                {(m[0], y) for y in m[1:]}
                if len(m) > 20
                else {(x, y) for x in m for y in m if x < y}
            )
    left, right, stats = candidates_from_keys(keys, bucket_cap=20)
    assert set(zip(left.tolist(), right.tolist())) == expected
    assert stats.largest_bucket == largest and stats.capped_buckets >= 1


def test_oversized_bucket_is_capped_and_reported():
    sig = np.zeros((50, 4), np.uint32)  # 50 identical signatures: one bucket per band
    sig[40:] = 7  # a second bucket of 10
    left, right, stats = candidate_pairs(sig, 2, 2, bucket_cap=20)
    got = set(zip(left.tolist(), right.tolist()))
    star = {(0, j) for j in range(1, 40)}
    clique = {(a, b) for a in range(40, 50) for b in range(a + 1, 50)}
    assert got == star | clique
    assert stats.capped_buckets == 2 and stats.capped_bucket_docs == 80
    assert stats.largest_bucket == 40


# ---- verification ------------------------------------------------------------------------------


@given(st.lists(st.lists(st.integers(0, 50), max_size=30), min_size=2, max_size=8), st.data())
def test_pair_similarities_match_oracle(sets, data):
    sh = csr(sets)
    n = len(sets)
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=20)
    )
    left = np.array([p[0] for p in pairs])
    right = np.array([p[1] for p in pairs])
    jac = jaccard_pairs(sh, left, right)
    con = containment_pairs(sh, left, right)
    for i, (a, b) in enumerate(pairs):
        assert jac[i] == pytest.approx(oracles.jaccard(sets[a], sets[b]), abs=1e-6)
        sa, sb = set(sets[a]), set(sets[b])
        assert con[i] == pytest.approx(len(sa & sb) / len(sa) if sa else 1.0, abs=1e-6)


@given(st.lists(st.lists(st.integers(0, 5), min_size=8, max_size=8), min_size=2, max_size=10))
def test_estimate_pairs_matches_oracle(rows_):
    sig = np.array(rows_, dtype=np.uint32)
    n = len(rows_)
    left, right = np.triu_indices(n, 1)
    est = estimate_pairs(sig, left, right)
    for i, (a, b) in enumerate(zip(left, right)):
        assert est[i] == pytest.approx(np.mean(sig[a] == sig[b]))


def assert_segments_become_sorted_sets(sets: list[list[int]]) -> None:
    """:func:`sort_unique_segments` of the 32-bit ``sets`` laid out one after another gives each
    one's distinct values in order."""
    hashes = np.array([x for s in sets for x in s], dtype=np.uint32)
    offsets = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    ends = sort_unique_segments(hashes, offsets, np.arange(len(sets)))
    for d, s in enumerate(sets):
        assert hashes[offsets[d] : ends[d]].tolist() == sorted(set(s))


@settings(max_examples=60)
@given(
    st.lists(
        st.lists(
            st.one_of(
                st.integers(0, 2**32 - 1), st.integers(0, 300), st.integers(2**24, 2**24 + 300)
            ),
            max_size=400,
        ),
        min_size=1,
        max_size=4,
    )
)
# one value alone in a high byte among many: that byte's pass must not be skipped
@example([[2**24 + i for i in range(60)] + [3]])
@example([[7] * 30 + list(range(100, 130)) + [2**31]])
def test_long_segments_become_sorted_sets(sets):
    """Segments long enough for the radix sort (short ones are insertion-sorted), with values
    that share their high bytes (passes skipped) or not."""
    assert_segments_become_sorted_sets(sets)


@settings(max_examples=80)
@given(
    st.lists(st.integers(48, 3000), min_size=1, max_size=4),
    st.integers(0, 2**32 - 1),
    st.integers(0, 40),
)
def test_spread_segments_become_sorted_sets(sizes, seed, crowd):
    """Values spread like hashes are put into buckets by their top bits, then insertion-sorted;
    a bucket of more than 32 values (here: ``crowd`` values that share their top 16 bits)
    sends the segment to the radix sort instead. Repeats in both."""
    rng = np.random.default_rng(seed)
    sets = []
    for n in sizes:
        v = rng.integers(0, 2**32, n, dtype=np.uint64)
        v[: n // 10] = v[n // 10 : 2 * (n // 10)]
        c = min(crowd, n)
        v[n - c :] = (v[n - c :] & 0xFFFF) | 0xABCD0000
        sets.append(rng.permutation(v).tolist())
    assert_segments_become_sorted_sets(sets)


@settings(max_examples=40)
@given(
    st.lists(st.sampled_from(["a", "b", "cc", "dé", "e✓", "ffffffffff"]), min_size=0, max_size=300),
    st.integers(1, 3),
)
def test_long_documents_have_sorted_unique_shingles(ws, k):
    """Documents with hundreds of shingles, many repeated: the radix-sorted unique sets."""
    text = " ".join(ws)
    sh = shingle([text, text[::-1]], ShingleConfig("word", k))
    for i, t in enumerate([text, text[::-1]]):
        assert sh[i].tolist() == oracles.shingle_hashes(normalize_text(t), "word", k, 1)


@given(st.lists(st.lists(st.integers(0, 50), max_size=30), min_size=1, max_size=8), st.data())
def test_sort_unique_segments_and_overlap_match_oracle(sets, data):
    """Unsorted 32-bit segments with repeats: the listed ones become sorted sets in place, and
    the Jaccard/containment of pairs among them matches Python sets."""
    n = len(sets)
    hashes = np.array([x for s in sets for x in s], dtype=np.uint32)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    listed = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
    before = hashes.copy()
    ends = sort_unique_segments(hashes, offsets, np.array(listed + listed[:1]))
    for d in range(n):
        seg = hashes[offsets[d] : ends[d]].tolist()
        if d in listed:
            assert seg == sorted(set(sets[d]))
        else:
            assert ends[d] == offsets[d + 1] and seg == before[offsets[d] : offsets[d + 1]].tolist()
    pairs = data.draw(
        st.lists(st.tuples(st.sampled_from(listed), st.sampled_from(listed)), max_size=10)
    )
    left = np.array([p[0] for p in pairs], np.int64)
    right = np.array([p[1] for p in pairs], np.int64)
    jac = overlap_pairs(hashes, offsets[:-1], ends, left, right)
    con = overlap_pairs(hashes, offsets[:-1], ends, left, right, containment=True)
    for i, (a, b) in enumerate(pairs):
        sa, sb = set(sets[a]), set(sets[b])
        assert jac[i] == pytest.approx(oracles.jaccard(sa, sb), abs=1e-6)
        assert con[i] == pytest.approx(len(sa & sb) / len(sa) if sa else 1.0, abs=1e-6)


@given(
    st.lists(st.text(alphabet="ab cdé✓\u3000\t", max_size=60), min_size=1, max_size=8),
    st.sampled_from(["word:1", "word:3", "word:2:2", "char:1", "char:4", "char:3:2"]),
    st.sampled_from(["oph", "classic"]),
    st.integers(2, 40),
    st.integers(0, 2**32),
)
def test_fused_shingle_sketch_equals_separate_stages(texts, spec, scheme, k, seed):
    cfg = ShingleConfig.parse(spec)
    scfg = SketchConfig(num_perm=k, seed=seed, scheme=scheme)
    batch = normalize(texts)
    sig, h32, off = shingle_sketch(batch, cfg, scfg)
    sh = shingle(texts, cfg)
    assert np.array_equal(sig, sketch(sh, scfg))
    for i in range(len(texts)):
        assert sorted(set(h32[off[i] : off[i + 1]].tolist())) == sorted(
            {int(x) >> 32 for x in sh[i]}
        )


# ---- clustering --------------------------------------------------------------------------------

edges = st.lists(
    st.tuples(st.integers(0, 19), st.integers(0, 19))
    .filter(lambda e: e[0] != e[1])
    .map(lambda e: (min(e), max(e))),
    max_size=40,
)


@given(edges)
def test_connected_components_match_oracle(es):
    left = np.array([e[0] for e in es], np.int64)
    right = np.array([e[1] for e in es], np.int64)
    rep = connected_components(20, left, right)
    comps = oracles.components(20, es)
    assert oracles.partition(rep) == set(comps)
    for c in comps:  # keep="first": the representative is the lowest row
        assert all(rep[i] == min(c) for i in c)


@given(edges, st.permutations(list(range(20))))
def test_strict_clusters_match_greedy_oracle(es, order):
    left = np.array([e[0] for e in es], np.int64)
    right = np.array([e[1] for e in es], np.int64)
    rank = np.empty(20, np.int64)
    rank[np.array(order)] = np.arange(20)
    rep = strict_clusters(20, left, right, rank)
    adj = {i: set() for i in range(20)}
    for a, b in es:
        adj[a].add(b)
        adj[b].add(a)
    expected = [-1] * 20
    for i in order:
        if expected[i] < 0:
            expected[i] = i
            for j in sorted(adj[i]):
                if expected[j] < 0:
                    expected[j] = i
    assert rep.tolist() == expected
    for i in range(20):  # every member is linked to its representative directly
        assert rep[i] == i or rep[i] in adj[i]


@given(st.lists(st.integers(-5, 40), max_size=40))
def test_labels_from_reps_number_clusters_by_first_appearance(rep):
    # oracle: a dictionary filled in input order
    seen: dict[int, int] = {}
    expected = [seen.setdefault(r, len(seen)) for r in rep]
    assert labels_from_reps(np.array(rep, np.int64)).tolist() == expected
    rows = [abs(r) % max(len(rep), 1) for r in rep]  # representatives that are rows: fast path
    seen.clear()
    assert labels_from_reps(np.array(rows, np.int64)).tolist() == [
        seen.setdefault(r, len(seen)) for r in rows
    ]


def test_strict_does_not_chain_but_components_do():
    chain = [(0, 1), (1, 2), (2, 3), (3, 4)]
    left = np.array([a for a, _ in chain])
    right = np.array([b for _, b in chain])
    assert len(set(connected_components(5, left, right).tolist())) == 1
    assert oracles.partition(strict_clusters(5, left, right)) == {
        frozenset({0, 1}),
        frozenset({2, 3}),
        frozenset({4}),
    }


def test_preference_rank_longest():
    rank = preference_rank(4, "longest", np.array([5, 9, 9, 1]), np.array([3, 2, 1, 0], np.uint64))
    assert rank.tolist() == [2, 1, 0, 3]


@given(
    texts_strategy,
    st.sampled_from(["word:5", "word:1:2", "word:3:3", "char:4", "char:2:3"]),
    st.booleans(),
)
def test_shingle_counts_from_the_normalised_words_equal_counting_again(texts, spec, arrow):
    """Units and shingles per document from the counts the normalising pass made equal those
    counted again from the bytes (a batch made without them)."""
    import dataclasses

    import pyarrow as pa

    from neardup.text.shingle import shingle_counts

    cfg = ShingleConfig.parse(spec)
    b = normalize(pa.array(texts) if arrow else texts)
    docs = np.arange(len(b), dtype=np.int64)[::-1].copy()
    fresh = dataclasses.replace(b, words=None, lengths=b.lengths.copy())
    units, counts = shingle_counts(b, docs, cfg)
    if cfg.kind == "char":  # code points come from the lengths: count them again, from bytes
        fresh = dataclasses.replace(fresh, lengths=None)
    u2, c2 = shingle_counts(fresh, docs, cfg)
    assert units.tolist() == u2.tolist() and counts.tolist() == c2.tolist()


# ---- exact duplicates ----------------------------------------------------------------------


@given(st.lists(st.lists(st.binary(max_size=6), max_size=30), max_size=6), st.integers(1, 64))
def test_fingerprint_table_matches_dict_oracle(batches, capacity):
    from xxhash import xxh3_128_intdigest

    from neardup.exact import FingerprintTable, fingerprints

    table = FingerprintTable(capacity)  # tiny capacities force rehashing
    oracle: dict[int, int] = {}
    for texts in batches:
        data = np.frombuffer(b"".join(texts), np.uint8)
        offsets = np.concatenate(([0], np.cumsum([len(t) for t in texts]))).astype(np.int64)
        hi, lo = fingerprints(data, offsets)
        full = [xxh3_128_intdigest(t) for t in texts]
        assert [(int(h) << 64) | int(x) for h, x in zip(hi, lo)] == full
        skip = np.array([len(t) == 0 for t in texts], np.bool_)
        groups, first = table.add(hi, lo, skip)
        want_g, want_first = [], []
        for t, fp in zip(texts, full):
            if not t:
                want_g.append(-1)
                want_first.append(False)
                continue
            want_first.append(fp not in oracle)
            want_g.append(oracle.setdefault(fp, len(oracle)))
        assert groups.tolist() == want_g and first.tolist() == want_first
        assert len(table) == len(oracle)


@settings(max_examples=60)
@given(st.lists(st.integers(0, 3000), max_size=12), st.integers(0, 2**32 - 1))
def test_compiled_fingerprints_are_xxh3_128_at_every_length(lengths, seed):
    """The compiled fingerprint is the xxhash package's xxh3-128 on each of XXH3's code paths
    (0, 1-3, 4-8, 9-16, 17-128, 129-240 and longer inputs), wherever the text sits in the
    buffer."""
    from xxhash import xxh3_128_intdigest

    from neardup.exact import fingerprints

    rng = np.random.default_rng(seed)
    texts = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]
    data = np.frombuffer(b"x" + b"".join(texts), np.uint8)[1:]  # not at the buffer's start
    offsets = np.concatenate(([0], np.cumsum([len(t) for t in texts]))).astype(np.int64)
    hi, lo = fingerprints(data, offsets)
    assert [(int(h) << 64) | int(x) for h, x in zip(hi, lo)] == [
        xxh3_128_intdigest(t) for t in texts
    ]
    if len(data):
        with pytest.raises(ValueError, match="within"):  # a text past the buffer's end
            fingerprints(data[:-1], offsets)


_ID = st.text(st.characters(blacklist_categories=()), max_size=4)  # lone surrogates too


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("claim"), st.lists(_ID, max_size=6)), st.tuples(st.just("one"), _ID)
        ),
        max_size=40,
    ),
    st.integers(1, 64),
)
def test_id_table_matches_a_dictionary(ops, capacity):
    """The reader's table of ids answers as a dictionary of the strings would: a batch is
    taken whole if its ids are all new and distinct, else not at all; one id gets the code
    it was first seen with."""
    from neardup.exact import IdTable

    table = IdTable(capacity)  # tiny capacities force growing
    oracle: dict[str, int] = {}
    code = 0
    for op, arg in ops:
        if op == "claim":
            codes = np.arange(code, code + len(arg), dtype=np.int64)
            code += len(arg)
            ok = len(set(arg)) == len(arg) and oracle.keys().isdisjoint(arg)
            assert table.claim(list(arg), codes) == ok
            if ok:
                oracle.update(zip(arg, codes.tolist()))
        else:
            assert table.setdefault(arg, code) == oracle.setdefault(arg, code)
            code += 1
        assert len(table) == len(oracle)


_UTF8_ID = st.text(st.characters(blacklist_categories=("Cs",)), max_size=4)  # valid UTF-8


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("bytes"), st.lists(_UTF8_ID, max_size=6)),
            st.tuples(st.just("strings"), st.lists(_UTF8_ID, max_size=6)),
            st.tuples(st.just("one"), _UTF8_ID),
        ),
        max_size=40,
    ),
    st.integers(1, 64),
    st.integers(0, 5),
)
def test_id_table_claims_ids_from_their_bytes_as_from_their_strings(ops, capacity, pad):
    """The reader claims the ids of a block from the scanner's bytes: the same answers and the
    same table as claiming their strings (a batch whole or not at all, codes kept)."""
    from neardup.exact import IdTable

    table = IdTable(capacity)
    oracle: dict[str, int] = {}
    code = 0
    for op, arg in ops:
        if op == "one":
            assert table.setdefault(arg, code) == oracle.setdefault(arg, code)
            code += 1
            continue
        codes = np.arange(code, code + len(arg), dtype=np.int64)
        code += len(arg)
        ok = len(set(arg)) == len(arg) and oracle.keys().isdisjoint(arg)
        if op == "strings":
            assert table.claim(list(arg), codes) == ok
        else:  # the ids' UTF-8 one after another, after some other bytes
            raw = [x.encode("utf-8") for x in arg]
            buf = np.frombuffer(b"#" * pad + b"".join(raw) + b"#", np.uint8)
            offsets = pad + np.concatenate(([0], np.cumsum([len(r) for r in raw]))).astype(np.int64)
            assert table.claim_utf8(buf, offsets, codes) == ok
        if ok:
            oracle.update(zip(arg, codes.tolist()))
        assert len(table) == len(oracle)
    for x, c in oracle.items():  # every id answers with its first code, from its string
        assert table.setdefault(x, 10**9) == c


def test_id_table_from_bytes_checks_its_offsets():
    from neardup.exact import IdTable

    table = IdTable()
    buf = np.frombuffer(b"abc", np.uint8)
    with pytest.raises(ValueError, match="outside its buffer"):
        table.claim_utf8(buf, np.array([0, 4], np.int64), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="one offset more"):
        table.claim_utf8(buf, np.array([0], np.int64), np.zeros(1, np.int64))
    assert len(table) == 0
    assert table.claim_utf8(buf, np.array([0, 1, 3], np.int64), np.array([4, 5], np.int64))
    assert table.setdefault("a", 9) == 4 and table.setdefault("bc", 9) == 5


def test_id_table_rejects_what_is_not_a_string_and_leaves_the_batch_out():
    from neardup.exact import IdTable

    table = IdTable()
    with pytest.raises(TypeError, match="not a int"):
        table.claim(["a", 5], np.array([0, 1], np.int64))
    assert len(table) == 0 and table.setdefault("a", 7) == 7
    with pytest.raises(ValueError, match="one code per id"):
        table.claim(["b"], np.zeros(2, np.int64))


def segments(sets: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``sets`` laid out one after another: 32-bit values and offsets."""
    hashes = np.array([x for s in sets for x in s], dtype=np.uint32)
    offsets = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    return hashes, offsets


# values that crowd one slot of the table: equal low bits, and equal after the multiplication's
# top bits for small tables (multiples of a large power of two)
_slot_crowd = st.one_of(
    st.integers(0, 40),
    st.integers(0, 2**32 - 1),
    st.integers(0, 15).map(lambda i: i << 28),
    st.integers(0, 255).map(lambda i: (i << 24) | 7),
)


@given(st.lists(st.lists(_slot_crowd, max_size=60), min_size=1, max_size=8), st.data())
def test_unsorted_overlap_matches_python_sets(sets, data):
    """Jaccard and containment of unsorted segments with repeats, by a hash table per pair:
    the values of Python sets, and exactly those of sorting and merging; the segments are left
    as they were."""
    hashes, offsets = segments(sets)
    n = len(sets)
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=12)
    )
    left = np.array([p[0] for p in pairs], np.int64)
    right = np.array([p[1] for p in pairs], np.int64)
    before = hashes.copy()
    jac = unsorted_overlap_pairs(hashes, offsets, left, right)
    con = unsorted_overlap_pairs(hashes, offsets, left, right, containment=True)
    assert np.array_equal(hashes, before)
    for i, (a, b) in enumerate(pairs):
        sa, sb = set(sets[a]), set(sets[b])
        assert jac[i] == pytest.approx(oracles.jaccard(sa, sb), abs=1e-6)
        assert con[i] == pytest.approx(len(sa & sb) / len(sa) if sa else 1.0, abs=1e-6)
    ends = sort_unique_segments(hashes, offsets, np.arange(n))
    assert np.array_equal(jac, overlap_pairs(hashes, offsets[:-1], ends, left, right))
    assert np.array_equal(
        con, overlap_pairs(hashes, offsets[:-1], ends, left, right, containment=True)
    )


def test_unsorted_overlap_of_large_sets_and_many_pairs():
    """Sets of thousands of values after small ones (the table grows), and more pairs in one
    call than the table's stamps count before they are cleared (16,383)."""
    from neardup._kernels import verify as kernels

    rng = np.random.default_rng(5)
    big = rng.integers(0, 2**32, 6000, dtype=np.uint64)
    sets = [[1, 2, 3], [3, 4], big[:5000].tolist(), big[1000:].tolist() + [7] * 50, [5, 5, 5], []]
    hashes, offsets = segments(sets)
    left = rng.integers(0, len(sets), 40_000)
    right = rng.integers(0, len(sets), 40_000)
    out = np.empty(len(left), np.float32)
    kernels.pair_overlap_unsorted(hashes, offsets, left, right, 0, out, 0, len(left))
    expect = {
        (a, b): oracles.jaccard(set(sets[a]), set(sets[b]))
        for a in range(len(sets))
        for b in range(len(sets))
    }
    assert expect[2, 3] == pytest.approx(4000 / 6001)
    for i in range(len(left)):
        assert out[i] == pytest.approx(expect[left[i], right[i]], abs=1e-6)


def test_out_of_range_inputs_are_errors_not_memory_reads():
    """The compiled kernels index without checking: what they index by is checked first."""
    sh = csr([[1, 2, 3], [2, 3]])
    with pytest.raises(ValueError, match="rows 0..1"):
        jaccard_pairs(sh, np.array([0]), np.array([2]))
    with pytest.raises(ValueError, match="differ in length"):
        jaccard_pairs(sh, np.array([0, 1]), np.array([1]))
    with pytest.raises(ValueError, match="rows 0..1"):
        estimate_pairs(np.zeros((2, 4), np.uint32), np.array([-1]), np.array([1]))
    with pytest.raises(ValueError, match="within the 5 values"):
        overlap_pairs(sh.hashes, np.array([0, 3]), np.array([3, 9]), np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="within the 5 values"):
        sketch(Shingles(sh.hashes, np.array([0, 3, 7])))
    h32 = np.array([3, 1, 2], np.uint32)
    with pytest.raises(ValueError, match="segment numbers"):
        sort_unique_segments(h32, np.array([0, 2, 3]), np.array([2]))
    with pytest.raises(ValueError, match="rows 0..1"):
        unsorted_overlap_pairs(h32, np.array([0, 2, 3]), np.array([0]), np.array([2]))
    with pytest.raises(ValueError, match="within the 3 values"):
        unsorted_overlap_pairs(h32, np.array([0, 2, 4]), np.array([0]), np.array([1]))
    with pytest.raises(TypeError, match="uint32"):
        unsorted_overlap_pairs(
            h32.astype(np.uint64), np.array([0, 2, 3]), np.array([0]), np.array([1])
        )
    with pytest.raises(ValueError, match="rows 0..2"):
        connected_components(3, np.array([0]), np.array([3]))
    with pytest.raises(ValueError, match="rank has 2 values"):
        strict_clusters(3, np.array([0]), np.array([1]), rank=np.array([0, 1]))
