"""Text in scripts written without spaces (Chinese, Japanese, Thai) and in mixed texts: each
such character is a word, so word shingles and passages work on them by default."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup.reuse import reused_passages, text_words
from neardup.text.scripts import words_apart
from neardup.text.words import word_keys, words

# Pools of characters to write random texts with (seeded: the same texts every run).
HAN = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 600))
KANA_KANJI = (
    "".join(chr(c) for c in range(0x3041, 0x3097))
    + "".join(chr(c) for c in range(0x30A1, 0x30FB))
    + HAN[:200]
)
THAI = "".join(chr(c) for c in range(0x0E01, 0x0E2F)) + "\u0e30\u0e32\u0e34\u0e35\u0e38\u0e40"
HANGUL = [chr(c) for c in range(0xAC00, 0xAC00 + 400)]


def _unspaced(pool: str, n: int, seed: int, punct: str = "，。") -> str:
    r = random.Random(seed)
    return "".join(r.choice(pool) if r.random() > 0.06 else r.choice(punct) for _ in range(n))


def _korean(n: int, seed: int) -> str:  # Korean is written with spaces between words
    r = random.Random(seed)
    return " ".join("".join(r.choice(HANGUL) for _ in range(r.randint(1, 4))) for _ in range(n))


def _edit(text: str, seed: int, changes: int = 3) -> str:
    r = random.Random(seed)
    chars = list(text)
    for _ in range(changes):
        i = r.randrange(len(chars))
        if not chars[i].isspace():
            chars[i] = text[r.randrange(len(text))] if not text[i].isspace() else chars[i]
    return "".join(chars)


SCRIPTS = {
    "chinese": lambda seed: _unspaced(HAN, 160, seed),
    "japanese": lambda seed: _unspaced(KANA_KANJI, 160, seed, "、。「」"),
    "thai": lambda seed: _unspaced(THAI, 200, seed, " "),
    "korean": lambda seed: _korean(60, seed),
}


def test_words_of_a_mixed_text_by_hand():
    text = "iPhone 15 专业版，256GB 全新 ราคา OK 한국어 단어"
    # the comma joins the run of other characters after it, and is left out of its key
    assert word_keys(text) == [
        "iphone",
        "15",
        "专",
        "业",
        "版",
        "256gb",
        "全",
        "新",
        "ร",
        "า",
        "ค",
        "า",
        "ok",
        "한국어",
        "단어",
    ]
    got = words(text)
    assert [text[s:e] for s, e, _ in got][:7] == ["iPhone", "15", "专", "业", "版", "，256GB", "全"]
    tw = text_words(text)
    assert tw.spans == [(s, e) for s, e, _ in got]
    assert words_apart("东京 tower 2020年") == "东 京 tower 2020 年"
    assert words_apart("plain words") == "plain words"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_dedup_finds_near_copies_in_every_script_by_default(script):
    """Three planted near-copies among ten texts of one script (a few characters changed, a
    line added in front) are found with the defaults, and nothing else is paired."""
    make = SCRIPTS[script]
    originals = [make(100 + i) for i in range(10)]
    prefix = make(999)[:12]
    changes = 1 if script == "korean" else 3  # a Korean change is a whole (short) word
    copies = [
        _edit(originals[0], 1, changes),
        prefix + " " + originals[3],
        _edit(originals[7], 2, changes),
    ]
    texts = originals + copies
    result = neardup.dedup(texts)
    pairs = {(int(a), int(b)) for a, b in zip(result.pairs.left, result.pairs.right)}
    assert pairs == {(0, 10), (3, 11), (7, 12)}


def test_dedup_of_a_mixed_corpus():
    """Chinese, Thai, English and mixed offers in one corpus: each near-copy with its source."""
    en = (
        "Stainless steel electric kettle with a capacity of 1.7 litres, rapid boil and a "
        "removable washable limescale filter, cordless on a 360 degree base."
    )
    zh = SCRIPTS["chinese"](5)
    th = SCRIPTS["thai"](6)
    mixed = "Apple iPhone 15 Pro Max 256GB " + SCRIPTS["chinese"](7)[:80] + " 全新未拆封"
    texts = [
        en,
        zh,
        th,
        mixed,
        en + " Free delivery.",
        _edit(zh, 3),
        _edit(th, 4),
        mixed.replace("256GB", "512GB"),
    ]
    result = neardup.dedup(texts)
    pairs = {(int(a), int(b)) for a, b in zip(result.pairs.left, result.pairs.right)}
    assert pairs == {(0, 4), (1, 5), (2, 6), (3, 7)}


@pytest.mark.parametrize("script", ["chinese", "japanese", "thai"])
def test_a_copied_passage_is_found_with_its_offsets(script):
    make = SCRIPTS[script]
    source = make(21)
    copied = source[40:100]
    new = make(22)[:50] + copied + make(23)[:50]
    (p,) = reused_passages(new, source)
    assert new[p.a_chars[0] : p.a_chars[1]] == copied
    assert source[p.b_chars[0] : p.b_chars[1]] == copied


@pytest.mark.parametrize("script", ["chinese", "japanese", "thai"])
def test_the_index_finds_a_prefixed_copy_and_a_copied_passage(script):
    make = SCRIPTS[script]
    ix = neardup.Index(passages=True)
    ix.add_many([(f"{script}-{i}", make(300 + i)) for i in range(8)])
    copy = make(999)[:10] + make(302)
    assert [m.id for m in ix.query(copy)] == [f"{script}-2"]
    check = ix.check(make(998)[:60] + make(305)[30:90] + make(997)[:60])
    assert [m.id for m in check.reused] == [f"{script}-5"] and not check.unique
    assert ix.check(make(996)).unique


_pieces = st.sampled_from(
    [
        "plain",
        "café",
        "Straße",
        "中文",
        "字",
        "ひらがな",
        "カタカナ",
        "ภาษาไทย",
        "한국어",
        "😀",
        "，",
        "。",
        "2020年",
        "GB",
        "  ",
        "\u3000",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_pieces, max_size=30).map(" ".join), max_size=40))
def test_the_batch_that_word_shingles_read_cuts_every_text_as_words_apart(texts):
    """``word_batch`` (a pass over the bytes, or a look at each text, by how many texts need
    it) gives each normalised text with its unspaced characters apart, its length and words
    counted again; texts without such characters are left as they are."""
    import numpy as np

    from neardup.config import ShingleConfig
    from neardup.text.normalize import normalize
    from neardup.text.shingle import word_batch

    batch = normalize(texts)
    got = word_batch(batch, ShingleConfig())
    for i in range(len(texts)):
        want = words_apart(batch.text(i))
        assert got.text(i) == want
        assert got.lengths[i] == len(want)
        assert got.words[i] == (want.count(" ") + 1 if want else 0)
    assert word_batch(batch, ShingleConfig.parse("char:5")) is batch
    # a text at a time gives the same shingles as the batch
    one = [neardup.shingle([t])[0] for t in texts]
    many = neardup.shingle(texts)
    assert all(np.array_equal(a, many[i]) for i, a in enumerate(one))


def test_a_few_texts_in_unspaced_scripts_among_many_others():
    """Both ways of finding the texts to cut (a look at each of a few, one pass over all the
    bytes for many) cut the same texts."""
    from neardup.config import ShingleConfig
    from neardup.text.normalize import normalize
    from neardup.text.shingle import word_batch

    for n_other in (3, 200):  # many texts to cut among few; few among many
        texts = (
            ["plain words"] * n_other + ["café"] * n_other + ["中文字 ok", "😀 x", "crème brûlée"]
        )
        batch = normalize(texts)
        got = word_batch(batch, ShingleConfig())
        assert [got.text(i) for i in range(len(texts))] == [
            words_apart(batch.text(i)) for i in range(len(texts))
        ]
        assert got.text(2 * n_other) == "中 文 字 ok"


def test_find_reuse_over_a_mixed_corpus():
    """Discovery of every pair that shares a passage, in a corpus of several scripts: the
    planted passages, with their offsets, and nothing else."""
    from neardup.reuse import find_reuse

    zh, ja, th = SCRIPTS["chinese"](41), SCRIPTS["japanese"](42), SCRIPTS["thai"](43)
    texts = [
        zh,
        ja,
        th,
        SCRIPTS["chinese"](44)[:40] + zh[20:80],  # 3: copies 60 characters of 0
        "Intro in English. " + ja[10:70] + " the end",  # 4: copies 60 of 1
        SCRIPTS["thai"](45),
    ]
    got = find_reuse(texts)
    found = {(p["a"], p["b"]) for p in got.passages}
    assert found == {(0, 3), (1, 4)}
    for p in got.passages:
        a, b = texts[p["a"]], texts[p["b"]]
        assert a[p["a_chars"][0] : p["a_chars"][1]] == b[p["b_chars"][0] : p["b_chars"][1]]
        assert p["words"] == 60
