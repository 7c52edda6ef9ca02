"""Synthetic corpora with planted near-duplicates of controlled similarity.

Used by the tests (with a brute-force oracle), the bundled example data and the benchmarks.
Originals are random texts over a Zipf-distributed vocabulary, so two originals share almost no
word 5-grams; variants copy an original and apply word-level edits (substitute, insert, delete)
at a chosen rate, case or whitespace changes, a dropped or repeated paragraph, or an added header
and footer, as syndicated copies carry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("exact", "format", "edit", "paragraph", "header_footer")

_SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "ti",
    "vo",
    "ze",
    "ba",
    "do",
    "fe",
    "gu",
    "ha",
    "ji",
    "ko",
    "la",
    "mu",
    "no",
    "pe",
    "qui",
    "ro",
    "su",
    "ta",
    "un",
    "ve",
    "wa",
    "xo",
)


def vocabulary(size: int, seed: int = 0) -> list[str]:
    """``size`` distinct pronounceable pseudo-words."""
    rng = np.random.default_rng(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        n = int(rng.integers(1, 5))
        words["".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), n))] = None
    return list(words)


def _zipf(size: int) -> np.ndarray:
    """Word probabilities falling as rank^-0.9, as in natural text."""
    probs = 1.0 / np.arange(1, size + 1) ** 0.9
    return probs / probs.sum()


@dataclass
class Planted:
    """A planted variant: document ``variant`` was made from document ``source``."""

    variant: int
    source: int
    kind: str
    edit_rate: float


def _paragraphs(
    rng: np.random.Generator, vocab: list[str], probs: np.ndarray, words: int
) -> list[str]:
    toks = [vocab[i] for i in rng.choice(len(vocab), size=words, p=probs)]
    cuts = sorted(set(rng.integers(1, max(2, words), size=max(1, words // 60)).tolist()))
    paras, start = [], 0
    for c in [*cuts, words]:
        if c > start:
            paras.append(" ".join(toks[start:c]))
            start = c
    return paras


def edit_words(text: str, rate: float, rng: np.random.Generator, vocab: list[str]) -> str:
    """Substitute, insert or delete about ``rate`` of the words of ``text`` (paragraph breaks
    are kept)."""
    out_paras = []
    for para in text.split("\n\n"):
        toks = para.split(" ")
        res: list[str] = []
        for t in toks:
            if rng.random() < rate:
                op = rng.integers(0, 3)
                if op == 0:
                    res.append(vocab[int(rng.integers(0, len(vocab)))])
                elif op == 1:
                    res.extend([t, vocab[int(rng.integers(0, len(vocab)))]])
                # op == 2: delete
            else:
                res.append(t)
        out_paras.append(" ".join(res) if res else toks[0])
    return "\n\n".join(out_paras)


def make_variant(
    text: str, kind: str, rng: np.random.Generator, vocab: list[str], edit_rate: float = 0.05
) -> str:
    """One variant of ``text`` of the given kind (see :data:`KINDS`)."""
    if kind == "exact":
        return text
    if kind == "format":
        return "  ".join(w.upper() if rng.random() < 0.1 else w for w in text.split(" ")) + " \n"
    if kind == "edit":
        return edit_words(text, edit_rate, rng, vocab)
    if kind == "paragraph":
        paras = text.split("\n\n")
        if len(paras) > 2:
            del paras[int(rng.integers(0, len(paras)))]
        else:
            paras.append(paras[-1])
        return "\n\n".join(paras)
    if kind == "header_footer":
        head = "Posted by " + " ".join(vocab[int(i)] for i in rng.integers(0, len(vocab), 3))
        foot = "Reply to " + " ".join(vocab[int(i)] for i in rng.integers(0, len(vocab), 4))
        return f"{head}\n\n{text}\n\n{foot}"
    raise ValueError(f"kind={kind!r} is invalid: one of {', '.join(KINDS)}")


def make_corpus(
    n: int,
    dup_fraction: float = 0.3,
    seed: int = 0,
    vocab_size: int = 5000,
    words: tuple[int, int] = (60, 250),
    max_edit_rate: float = 0.25,
    kinds: tuple[str, ...] = KINDS,
) -> tuple[list[str], list[Planted]]:
    """``n`` documents, about ``dup_fraction`` of them planted variants of earlier documents.

    Edit rates of "edit" variants are uniform in ``[0, max_edit_rate]``, which spreads their
    Jaccard similarity to the source from 1 down to well below 0.5. A variant's source may itself
    be a variant, so chains occur. Returns the texts and the planted variants.
    """
    rng = np.random.default_rng(seed)
    vocab = vocabulary(vocab_size, seed)
    probs = _zipf(vocab_size)
    texts: list[str] = []
    planted: list[Planted] = []
    for i in range(n):
        if i > 0 and rng.random() < dup_fraction:
            src = int(rng.integers(0, i))
            kind = kinds[int(rng.integers(0, len(kinds)))]
            rate = float(rng.uniform(0, max_edit_rate)) if kind == "edit" else 0.0
            texts.append(make_variant(texts[src], kind, rng, vocab, rate))
            planted.append(Planted(i, src, kind, rate))
        else:
            m = int(rng.integers(words[0], words[1] + 1))
            texts.append("\n\n".join(_paragraphs(rng, vocab, probs, m)))
    return texts, planted


def near_duplicate_collection(
    originals: int,
    variants: int,
    edit_rates: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2),
    seed: int = 0,
    words: tuple[int, int] = (150, 400),
    vocab_size: int = 5000,
) -> tuple[list[str], list[int]]:
    """A test collection like the RUS collection of the FCA study (a few original texts and
    near-duplicates generated from them): ``originals`` texts, each followed by ``variants``
    word-edited copies (edit rates taken in turn from ``edit_rates``). Returns the texts and,
    for each, the number of its original (documents with the same number are near-duplicates
    by construction; with small edit rates their word-shingle Jaccard stays high)."""
    if originals < 1 or variants < 0:
        raise ValueError("originals must be >= 1 and variants >= 0")
    rng = np.random.default_rng(seed)
    vocab = vocabulary(vocab_size, seed)
    probs = _zipf(vocab_size)
    texts: list[str] = []
    groups: list[int] = []
    for g in range(originals):
        m = int(rng.integers(words[0], words[1] + 1))
        original = "\n\n".join(_paragraphs(rng, vocab, probs, m))
        texts.append(original)
        groups.append(g)
        for v in range(variants):
            texts.append(edit_words(original, edit_rates[v % len(edit_rates)], rng, vocab))
            groups.append(g)
    return texts, groups
