"""Text normalisation of a whole batch at once.

The texts of a batch are joined with NUL separators and each normalisation step runs once over
the joined string (one C-level call per step, not one Python call per document), then the result
is encoded as UTF-32 code points: the form the shingling kernels read.

Order of steps: HTML tags and entities, NFKC, case folding, punctuation, digits, stop words,
whitespace collapsing (runs of whitespace become one space; leading/trailing spaces go). A NUL
character inside a text is treated as whitespace.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
from numba import njit

from ..config import NormalizeConfig

SEP = "\x00"
_TAG = re.compile(r"<[^>\x00]*>")
_PUNCT = re.compile(r"[^\w\s\x00]|_")
_DIGITS = re.compile(r"\d+")

# Code points for which Python's str.isspace() is true.
_WS = np.zeros(12289, np.bool_)
for _c in (*range(9, 14), *range(28, 33), 133, 160, 5760, *range(8192, 8203), 8232, 8233, 8239,
           8287, 12288):
    _WS[_c] = True
assert all(chr(c).isspace() == bool(_WS[c]) for c in range(len(_WS)))


@njit(cache=True, nogil=True)
def _collapse_whitespace(cps, ws, starts, ends, lower_ascii):
    """Per document ``cps[starts[d]:ends[d]]``: collapse each run of whitespace to one space,
    drop leading and trailing whitespace, and map A-Z to a-z if ``lower_ascii``.
    Returns (code points, offsets[n+1]) with the documents packed one after another.
    Serial on purpose: it runs on the calling thread while the parallel kernels of the previous
    chunk run on the pipeline's worker thread."""
    n = len(starts)
    buf = np.empty(len(cps), np.uint32)
    lengths = np.zeros(n, np.int64)
    nws = len(ws)
    for d in range(n):
        o = starts[d]
        first = o
        pending = False
        for i in range(starts[d], ends[d]):
            c = cps[i]
            if c < nws and ws[c]:
                pending = o > first
                continue
            if pending:
                buf[o] = 32
                o += 1
                pending = False
            if lower_ascii and 65 <= c <= 90:
                c += 32
            buf[o] = c
            o += 1
        lengths[d] = o - first
    offsets = np.zeros(n + 1, np.int64)
    offsets[1:] = np.cumsum(lengths)
    out = np.empty(offsets[n], np.uint32)
    for d in range(n):
        out[offsets[d]:offsets[d + 1]] = buf[starts[d]:starts[d] + lengths[d]]
    return out, offsets


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """The English stop-word list used by ``strip_stopwords`` (case-folded)."""
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
    return SEP.join(p if p.isascii() or unicodedata.is_normalized("NFKC", p)
                    else unicodedata.normalize("NFKC", p) for p in s.split(SEP))


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
        s = html.unescape(_TAG.sub(" ", s))
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


@dataclass(frozen=True)
class NormalizedBatch:
    """Normalised texts as code points: document ``i`` is ``codepoints[offsets[i]:offsets[i+1]]``.

    ``codepoints``: ``uint32[total]``; ``offsets``: ``int64[n+1]``. Separators are not included.
    """

    codepoints: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Normalised length of each document in code points, ``int64[n]``."""
        return np.diff(self.offsets)

    def text(self, i: int) -> str:
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.codepoints[a:b].tobytes().decode("utf-32-le")


def normalize(texts: Sequence[str], cfg: NormalizeConfig | None = None) -> NormalizedBatch:
    """Normalise a batch of texts; see the module docstring for the steps."""
    cfg = cfg or NormalizeConfig()
    n = len(texts)
    if n == 0:
        return NormalizedBatch(np.zeros(0, np.uint32), np.zeros(1, np.int64))
    joined = SEP.join(texts)
    if joined.count(SEP) != n - 1:  # a text holds a NUL of its own: treat it as whitespace
        texts = [t.replace(SEP, " ") for t in texts]
        joined = SEP.join(texts)
    regex_steps = cfg.strip_html or cfg.strip_punctuation or cfg.strip_digits or \
        cfg.strip_stopwords
    lower_ascii = False
    if regex_steps:
        joined = _normalize_joined(joined, cfg)
    elif not joined.isascii():
        # The default path: only non-ASCII documents need Python's NFKC and casefold; ASCII
        # letters are lowered in the compiled pass below (casefold equals lower on ASCII).
        joined = SEP.join(t if t.isascii() else _fold_one(t, cfg) for t in texts)
        lower_ascii = cfg.casefold
    else:
        lower_ascii = cfg.casefold
    cps = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    del joined
    seps = np.flatnonzero(cps == 0)
    starts = np.empty(n, np.int64)
    starts[0] = 0
    starts[1:] = seps + 1
    ends = np.empty(n, np.int64)
    ends[:-1] = seps
    ends[-1] = len(cps)
    out, offsets = _collapse_whitespace(cps, _WS, starts, ends, lower_ascii)
    return NormalizedBatch(out, offsets)
