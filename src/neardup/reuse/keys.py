"""Passage fingerprints as an index stores them (:class:`neardup.Index` with ``passages``): the
fingerprints of many texts at once, salted into keys that meet no LSH band key
(:func:`salt_fingerprints`), each text's distinct keys (:func:`passage_keys_many`,
:func:`passage_keys`), and the words and fingerprints of a checked text
(:func:`checked_fingerprints`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .passages import PassageConfig
from .winnowing import fingerprints_many_flat, order_by_text_then_hash
from .words import TextWords, blank_tags, text_words, words_many

#: mixed into passage fingerprints before they are stored beside the band keys
_PASSAGE_SALT = np.uint64(0x5A17C0DE5A17C0DE)


def salt_fingerprints(fingerprints: np.ndarray) -> np.ndarray:
    """Passage fingerprints as the keys stored beside the band keys (mixed with a constant of
    their own, so that they meet no band key)."""
    with np.errstate(over="ignore"):
        return (fingerprints.astype(np.uint64) ^ _PASSAGE_SALT) * np.uint64(0x9E3779B97F4A7C15)


def unique_by_text(keys: np.ndarray, text: np.ndarray, n: int) -> list[np.ndarray]:
    """The distinct ``keys`` of each of ``n`` texts, sorted (``text``: the text of each key,
    non-decreasing), by one sort of them all rather than a ``np.unique`` per text."""
    order = order_by_text_then_hash(text, keys, n)
    k, t = keys[order], text[order]
    keep = np.ones(len(k), bool)
    keep[1:] = (k[1:] != k[:-1]) | (t[1:] != t[:-1])
    k, t = k[keep], t[keep]
    return np.split(k, np.searchsorted(t, np.arange(1, n)))


def passage_keys_many(texts: Sequence[str], config: PassageConfig) -> list[np.ndarray]:
    """The keys under which each of ``texts`` stores its passage fingerprints (HTML tags
    blanked where ``config`` says so), distinct and sorted, text by text; all texts are split
    and fingerprinted together."""
    ptexts = [blank_tags(t) for t in texts] if config.strip_html else texts
    fh, fdoc, _ = fingerprints_many_flat(*words_many(ptexts), config.k, config.window)
    return unique_by_text(salt_fingerprints(fh), fdoc, len(texts))


def passage_keys(fps: Sequence[tuple[int, int]]) -> np.ndarray:
    """The keys under which a text's passage fingerprints (``(hash, position)``, as
    :func:`~neardup.reuse.fingerprints` gives them) are stored beside its LSH band keys,
    unique."""
    return np.unique(salt_fingerprints(np.fromiter((f for f, _ in fps), np.uint64, len(fps))))


def checked_fingerprints(
    text: str, config: PassageConfig
) -> tuple[TextWords, np.ndarray, np.ndarray]:
    """What a check of ``text`` against an index's passages starts from: its words (HTML tags
    blanked where ``config`` says so; ``text`` kept as it is), and the hashes and word
    positions of its fingerprints, in position order."""
    q = text_words(blank_tags(text) if config.strip_html else text, keep_keys=False)
    q.text = text
    fh, _, fpos = fingerprints_many_flat(
        q.hashes, np.array([0, len(q)], np.int64), config.k, config.window
    )
    return q, fh, fpos
