"""Text normalisation of a whole batch at once.

Optional regular-expression steps run once over the texts of a batch joined with NUL separators
(one C-level call per step, not one Python call per document); NFKC and case folding touch only
the documents that are not pure ASCII. The texts are then encoded as UTF-8 and one compiled pass
lowers ASCII letters and collapses whitespace: the bytes the shingling kernels read.

Order of steps: HTML tags and entities, NFKC, case folding, punctuation, digits, stop words,
whitespace collapsing (runs of whitespace become one space; leading/trailing spaces go). A NUL
character inside a text is treated as whitespace. Whitespace is what Python's ``str.isspace``
calls whitespace, Unicode spaces included.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, cast

import numpy as np

from .._kernels import text as _text  # type: ignore[attr-defined]  # compiled: no stubs
from .._records import record
from ..config import NormalizeConfig
from ..errors import InputError, SkipReason

SEP = "\x00"
#: an HTML tag (``<...>``, not across the NUL that separates the texts of a batch): what
#: ``strip_html`` removes here, and what reuse detection blanks (:func:`neardup.reuse.blank_tags`)
HTML_TAG = re.compile(r"<[^>\x00]*>")
_PUNCT = re.compile(r"[^\w\s\x00]|_")
_DIGITS = re.compile(r"\d+")

# Code points for which Python's str.isspace() is true (the tests check it for every code point).
_WS = np.zeros(12289, np.bool_)
for _c in (
    *range(9, 14),
    *range(28, 33),
    133,
    160,
    5760,
    *range(8192, 8203),
    8232,
    8233,
    8239,
    8287,
    12288,
):
    _WS[_c] = True


# Byte classes for the compiled pass: 0 an ASCII character, 1 ASCII whitespace, 2 the first byte
# of a multi-byte character. Byte maps: whitespace to a space, and (for _LOWER) A-Z to a-z.
# NUL counts as whitespace.
_CLS = np.zeros(256, np.uint8)
_CLS[_WS[:128].nonzero()[0]] = 1
_CLS[0] = 1
_CLS[0x80:] = 2
_KEEP = np.arange(256, dtype=np.uint8)
_KEEP[_WS[:128].nonzero()[0]] = 32
_KEEP[0] = 32
_LOWER = _KEEP.copy()
_LOWER[65:91] += 32


_WS8 = _WS.view(np.uint8)


_NONE = np.zeros(0, np.uint8)


def _collapse_whitespace(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, lower: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per document ``buf[starts[d]:ends[d]]`` (UTF-8): collapse each run of whitespace to one
    space, drop leading and trailing whitespace, and lower A-Z if ``lower``.
    Returns (bytes, offsets[n+1], code points per document, words per document) with the
    documents packed one after another. Serial on purpose: it runs on the calling thread while
    the kernels of the previous chunk run on the pipeline's worker thread."""
    n = len(starts)
    out = np.empty(int((ends - starts).sum()) if n else 0, np.uint8)
    offsets = np.empty(n + 1, np.int64)
    chars = np.empty(n, np.int64)
    words = np.empty(n, np.int64)
    o = _text.collapse_whitespace(
        buf,
        _NONE,
        _NONE,
        _WS8,
        _CLS,
        _LOWER if lower else _KEEP,
        lower,
        starts,
        ends,
        out,
        offsets,
        chars,
        words,
    )
    return out[:o], offsets, chars, words


def _non_ascii(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each document ``buf[starts[d]:ends[d]]`` holds a byte above 127."""
    out = np.empty(len(starts), np.uint8)
    _text.non_ascii(buf, starts, ends, out)
    return out.view(np.bool_)


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """The English stop-word list used by ``strip_stopwords`` (case-folded)."""
    from importlib import resources  # imported when needed: it costs start-up time

    raw = resources.files(__package__).joinpath("stopwords_en.txt").read_text("utf-8")
    return frozenset(w for w in raw.split() if not w.startswith("#") and w)


@lru_cache(maxsize=2)
def _stopword_re(casefolded: bool) -> re.Pattern[str]:
    alt = "|".join(sorted(map(re.escape, stopwords()), key=len, reverse=True))
    return re.compile(rf"\b(?:{alt})\b", 0 if casefolded else re.IGNORECASE)


def _nfkc(s: str) -> str:
    # Only documents that need it go through the (slow) full normalisation; one non-ASCII
    # document must not cost the whole chunk its fast path.
    if unicodedata.is_normalized("NFKC", s):
        return s
    return SEP.join(
        p
        if p.isascii() or unicodedata.is_normalized("NFKC", p)
        else unicodedata.normalize("NFKC", p)
        for p in s.split(SEP)
    )


def _casefold(s: str) -> str:
    if s.isascii():
        return s.lower()  # identical to casefold() on ASCII, and much faster
    return SEP.join(p.lower() if p.isascii() else p.casefold() for p in s.split(SEP))


def _fold_one(t: str, cfg: NormalizeConfig) -> str:
    if cfg.nfkc and not unicodedata.is_normalized("NFKC", t):
        t = unicodedata.normalize("NFKC", t)
    return t.casefold() if cfg.casefold else t


def _normalize_joined(s: str, cfg: NormalizeConfig) -> str:
    if cfg.strip_html:
        import html

        s = html.unescape(HTML_TAG.sub(" ", s))
    if cfg.nfkc:
        s = _nfkc(s)
    if cfg.casefold:
        s = _casefold(s)
    if cfg.strip_punctuation:
        s = _PUNCT.sub(" ", s)
    if cfg.strip_digits:
        s = _DIGITS.sub("", s)
    if cfg.strip_stopwords:
        s = _stopword_re(cfg.casefold).sub("", s)
    return s


def normalize_text(text: str, cfg: NormalizeConfig | None = None) -> str:
    """Normalise one text (the same result as one document of :func:`normalize`)."""
    return normalize([text], cfg).text(0)


@record(frozen=True)
class NormalizedBatch:
    """Normalised texts as UTF-8: document ``i`` is ``data[offsets[i]:offsets[i+1]]``.

    ``data``: ``uint8[total]``; ``offsets``: ``int64[n+1]``; ``lengths``: ``int64[n]``, the
    length of each normalised text in code points; ``words`` (``int64[n]``, or ``None`` where
    not counted): its words, the tokens that single spaces separate, counted by the compiled
    pass as it writes them (shingling then need not count them again). Separators are not
    included.
    """

    data: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    words: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def text(self, i: int) -> str:
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.data[a:b].tobytes().decode("utf-8", "surrogatepass")


def is_arrow_strings(texts: object) -> bool:
    """Whether ``texts`` is a pyarrow string array (``string`` or ``large_string``, chunked or
    not), without importing pyarrow."""
    mod = type(texts).__module__
    if not mod.startswith("pyarrow"):
        return False
    import pyarrow as pa

    return isinstance(texts, (pa.Array, pa.ChunkedArray)) and (
        pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)
    )


def utf8_buffers(arr) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes and the ``int64[n+1]`` offsets of a pyarrow string array without
    copying the bytes: document ``i`` is ``data[offsets[i]:offsets[i+1]]`` (read-only)."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n = len(arr)
    _, off_buf, data_buf = arr.buffers()
    odt = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    if n == 0 or off_buf is None:
        return np.zeros(0, np.uint8), np.zeros(n + 1, np.int64)
    offsets = np.frombuffer(off_buf, odt)[arr.offset : arr.offset + n + 1].astype(np.int64)
    a, b = int(offsets[0]), int(offsets[-1])
    if data_buf is None or a == b:
        return np.zeros(0, np.uint8), np.zeros(n + 1, np.int64)
    if a:
        offsets -= a
    return np.frombuffer(data_buf, np.uint8, b - a, a), offsets


def _chunk_sources(arr, cfg: NormalizeConfig):
    """What the compiled pass reads for one Arrow string array (not chunked): see
    :func:`_sources`."""
    return _sources(*utf8_buffers(arr), cfg)


def _sources(data: np.ndarray, offsets: np.ndarray, cfg: NormalizeConfig):
    """What the compiled pass reads for the UTF-8 documents ``data[offsets[i]:offsets[i+1]]``:
    ``(buf, alt, in_alt, starts, ends)``. Documents that are not pure ASCII (found by a
    compiled pass) are case-folded and NFKC-normalised into ``alt``, by the compiled folding
    where it can and by Python otherwise; the others are read in place."""
    starts = offsets[:-1]
    ends = offsets[1:]
    if cfg.nfkc or cfg.casefold:
        odd = np.flatnonzero(_non_ascii(data, starts, ends))
        if len(odd):
            in_alt = np.zeros(len(starts), np.uint8)
            in_alt[odd] = 1
            new_starts = starts.copy()
            new_ends = ends.copy()
            folded = _NONE
            rest = odd
            if cfg.nfkc and cfg.casefold and fast_folding():
                # the texts made only of characters that NFKC leaves alone: folded by the
                # compiled pass, character by character (see build_tools/unifold.py)
                folded = np.empty(3 * int((ends[odd] - starts[odd]).sum()) + 64, np.uint8)
                f_starts = np.empty(len(odd), np.int64)
                f_ends = np.empty(len(odd), np.int64)
                done = np.empty(len(odd), np.uint8)
                w = _text.fold_simple(data, starts, ends, odd, folded, f_starts, f_ends, done)
                ok = done.view(np.bool_)
                new_starts[odd[ok]] = f_starts[ok]
                new_ends[odd[ok]] = f_ends[ok]
                folded = folded[:w]
                rest = odd[~ok]
            raw = data.data  # a memoryview of the bytes
            parts = [
                _fold_one(str(raw[a:b], "utf-8", "surrogatepass"), cfg).encode(
                    "utf-8", "surrogatepass"
                )
                for a, b in zip(starts[rest].tolist(), ends[rest].tolist())
            ]
            lens = np.fromiter(map(len, parts), np.int64, len(parts))
            new_ends[rest] = len(folded) + np.cumsum(lens)
            new_starts[rest] = new_ends[rest] - lens
            alt = (
                np.concatenate([folded, np.frombuffer(b"".join(parts), np.uint8)])
                if parts
                else folded
            )
            return data, alt, in_alt, new_starts, new_ends
    return data, _NONE, _NONE, np.ascontiguousarray(starts), np.ascontiguousarray(ends)


_FAST_FOLDING: bool | None = None


def fast_folding() -> bool:
    """Whether texts that are not ASCII are folded by the compiled pass where they can be: its
    table was made from the same Unicode version as this Python's ``unicodedata`` (otherwise
    Python folds them all, as the reference)."""
    global _FAST_FOLDING
    if _FAST_FOLDING is None:
        _FAST_FOLDING = _text.unifold_version == unicodedata.unidata_version
    return _FAST_FOLDING


def _normalize_arrow(arr, cfg: NormalizeConfig) -> NormalizedBatch:
    """The default steps (NFKC, case folding, whitespace) straight from the UTF-8 buffers of an
    Arrow string array, chunk by chunk (a chunked array is not combined first): only documents
    that are not pure ASCII become Python strings, for NFKC and case folding. The same bytes
    as :func:`normalize` of the same texts as Python strings."""
    import pyarrow as pa

    if arr.null_count:
        first = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(
            f"text at position {first} is null, not a string",
            field="texts",
            reason=SkipReason.NON_STRING_FIELD,
        )
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return _normalize_sources([_chunk_sources(c, cfg) for c in chunks if len(c)], len(arr), cfg)


def _normalize_sources(sources: list, n: int, cfg: NormalizeConfig) -> NormalizedBatch:
    """The compiled pass over each of ``sources`` (see :func:`_sources`), ``n`` documents in
    all, into one batch."""
    out = np.empty(sum(int((e - s).sum()) for *_, s, e in sources), np.uint8)
    offsets = np.zeros(n + 1, np.int64)
    chars = np.empty(n, np.int64)
    words = np.empty(n, np.int64)
    byte_map = _LOWER if cfg.casefold else _KEEP
    o = d = 0
    for buf, alt, in_alt, starts, ends in sources:
        m = len(starts)
        w = _text.collapse_whitespace(
            buf,
            alt,
            in_alt,
            _WS8,
            _CLS,
            byte_map,
            cfg.casefold,
            starts,
            ends,
            out[o:],
            offsets[d : d + m + 1],
            chars[d : d + m],
            words[d : d + m],
        )
        offsets[d : d + m + 1] += o
        o += w
        d += m
    return NormalizedBatch(out[:o], offsets, chars, words)


def normalize(texts: Sequence[str], cfg: NormalizeConfig | None = None) -> NormalizedBatch:
    """Normalise a batch of texts; see the module docstring for the steps.

    ``texts``: Python strings, or a pyarrow ``string``/``large_string`` array, whose UTF-8
    buffer is read in place (no Python string per document on the default steps)."""
    cfg = cfg or NormalizeConfig()
    n = len(texts)
    if n and is_arrow_strings(texts):
        if not (cfg.strip_html or cfg.strip_punctuation or cfg.strip_digits or cfg.strip_stopwords):
            return _normalize_arrow(texts, cfg)
        texts = cast(Any, texts).to_pylist()
    if n == 0:
        return NormalizedBatch(
            np.zeros(0, np.uint8),
            np.zeros(1, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
        )
    if cfg.strip_html or cfg.strip_punctuation or cfg.strip_digits or cfg.strip_stopwords:
        # The regular expressions run once over the whole batch, joined with NULs.
        texts = [t.replace(SEP, " ") if SEP in t else t for t in texts]
        parts = _normalize_joined(SEP.join(texts), cfg).split(SEP)
        lower_ascii = False
    else:
        # The default path: the texts as one UTF-8 buffer, folded as an Arrow array's are
        # (only texts that are not ASCII need folding, by the compiled pass where it can)
        encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(np.fromiter(map(len, encoded), np.int64, n), out=offsets[1:])
        data = np.frombuffer(b"".join(encoded), np.uint8)
        del encoded
        return _normalize_sources([_sources(data, offsets, cfg)], n, cfg)
    # surrogatepass: a lone surrogate (possible in a Python str) must not stop the run
    encoded = [p.encode("utf-8", "surrogatepass") for p in parts]
    del parts
    lens = np.fromiter(map(len, encoded), np.int64, n)
    buf = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    del encoded
    ends = np.cumsum(lens)
    starts = ends - lens
    out, offsets, chars, words = _collapse_whitespace(buf, starts, ends, lower_ascii)
    return NormalizedBatch(out, offsets, chars, words)
