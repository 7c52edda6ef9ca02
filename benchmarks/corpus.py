"""Benchmark corpus builder: real text with planted near-duplicates of known similarity.

Builds a reproducible corpus of ``size`` documents (10k to 1M) from the 20 Newsgroups "bydate"
archive and writes it as JSONL (``{"id": ..., "text": ...}`` per line) plus a ground-truth file
``<out>.truth.jsonl`` with one line per planted variant::

    {"id": "d0000123", "source": "d0000042", "kind": "words", "edit_rate": 0.0731}

How 1M documents come out of 18,846 posts without being near-duplicates of each other:

* The archive is cut into paragraphs (bodies split on blank lines, header block dropped, quote
  markers stripped, exact repeats and non-prose paragraphs removed): about 76k paragraphs.
* Each *original* is synthesized from fragments of randomly chosen paragraphs of different posts
  (a sentence-aligned window of each, with sentence order shuffled half of the time), grouped into
  3-5 paragraphs, about 2 KB long (target drawn from 1,700-2,300 characters, cut at a word
  boundary before 2,500). Then ~15% of its words are replaced by words drawn from the archive's
  vocabulary (by frequency), so even two originals that happen to share a source paragraph share
  few word 5-grams.
* About ``dup_fraction`` of the documents are *variants* of an original, of five kinds:

  - ``exact``: identical copy (edit_rate 0).
  - ``format``: whitespace, case and punctuation changes only (lines rewrapped, indentation,
    double spaces, CRLF, lower/upper case, curly quotes, dropped commas...). edit_rate is the
    fraction of lowercased whitespace tokens that differ from the source.
  - ``words``: word substitutions, insertions and deletions, each word edited with probability
    drawn uniformly from 0-20%. edit_rate = edits / source words.
  - ``paragraph``: one paragraph dropped or a new one inserted. edit_rate = words dropped or
    inserted / source words.
  - ``header_footer``: "Posted by ... / Reply to ..." header lines and/or a signature or footer
    block added. edit_rate = words added / source words.

Sources are drawn uniformly from the originals (so an original can have several variants; all
variants of one source are near-duplicates of each other too). Documents are written in a
shuffled order, deterministic for a seed; ids ``d0000000``... follow the output order. Every
variant comes after its source, within 10% of the rest of the file, so the share of variants
is about ``dup_fraction`` all along the file (lower in the first few percent). Nothing holds
the corpus in memory: an original is a pure function of (seed, its index), so the source of a
variant is regenerated when the variant is written (~200 MB RSS at any size).

Measured on the real archive (seed 0; word 5-gram Jaccard, lowercased, whitespace-split, 300
variants per kind of the 100k corpus): exact 1.0; format median 0.85 (0.48-1.0; 1.0 once
punctuation is stripped); words median 0.41 (0.18-1.0, tracking edit_rate); paragraph median
0.77 (0.41-0.88); header_footer median 0.96 (0.90-0.99). Unplanted pairs: none reach 0.2 in the
100k corpus (max 0.10). Build time: 10k ~8 s, 100k ~25 s, 1M ~200 s (incl. ~6 s reading the
archive), on one core.

Usage::

    python benchmarks/corpus.py --size 100000 --out benchmarks/data/corpus-100k.jsonl \
        [--archive PATH] [--seed 0] [--dup-fraction 0.3]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:
    import orjson

    def _dumps(obj: object) -> bytes:
        return orjson.dumps(obj)

except ImportError:  # pragma: no cover - orjson is a dependency of neardup
    import json

    def _dumps(obj: object) -> bytes:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARCHIVE = REPO_ROOT.parent / "shared" / "data" / "20news-bydate.tar.gz"
ARCHIVE_DESCRIPTION = (
    "the 20 Newsgroups 'bydate' collection (20news-bydate.tar.gz, 18,846 Usenet posts "
    "under 20news-bydate-train/<group>/<id> and 20news-bydate-test/<group>/<id>)"
)

KINDS: tuple[str, ...] = ("exact", "format", "words", "paragraph", "header_footer")
MIN_BODY_CHARS = 200
MAX_DOC_CHARS = 2500
TARGET_CHARS = (1700, 2300)
PARAGRAPHS_PER_DOC = (3, 5)
PERTURB_RATE = 0.15
MAX_WORD_EDIT_RATE = 0.20
VARIANT_DELAY = 0.1
_ID_DIGITS = 7

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_QUOTE_PREFIX = re.compile(r"^[ \t]*(?:[>|:][ \t]?)+", re.MULTILINE)
_VOCAB_WORD = re.compile(r"[a-z][a-z'-]{0,13}[a-z]")
_NON_LETTER = re.compile(r"[\W\d_]+")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_SENT_END = (".", "!", "?")
_SENT_SPLIT = re.compile(r"(?<=[.!?]) ")
_TRAIL_PUNCT = ".,;:!?)\"'"


class ArchiveMissingError(FileNotFoundError):
    """The 20 Newsgroups archive is not where it was expected."""


def truth_path(out: str | os.PathLike[str]) -> Path:
    """Ground-truth file written next to ``out``: ``<out>.truth.jsonl``."""
    return Path(f"{os.fspath(out)}.truth.jsonl")


def doc_id(position: int) -> str:
    return f"d{position:0{_ID_DIGITS}d}"


# --------------------------------------------------------------------------- archive


@dataclass
class Source:
    """Paragraph pool, vocabulary and header material extracted from the archive."""

    paragraphs: list[tuple[str, ...]]  # sentences of each whitespace-normalized paragraph
    paragraph_post: list[int]  # post index of each paragraph
    vocab_pool: list[str]  # vocabulary words, repeated by frequency (sampled uniformly)
    senders: list[str]  # "From:" header values
    organizations: list[str]
    groups: list[str]


def _keep_paragraph(text: str, words: list[str]) -> bool:
    if len(words) < 10 or len(text) < 60:
        return False
    if max(map(len, words)) > 40:  # uuencoded data, long URLs, ASCII art
        return False
    letters = len(_NON_LETTER.sub("", text))
    return letters >= 0.6 * (len(text) - len(words) + 1)


def load_source(archive: str | os.PathLike[str] = DEFAULT_ARCHIVE) -> Source:
    """Read the archive once and return its usable paragraphs, vocabulary and header values."""
    path = Path(archive)
    if not path.is_file():
        raise ArchiveMissingError(
            f"20 Newsgroups archive not found at {path}: expected {ARCHIVE_DESCRIPTION}. "
            "Pass --archive PATH (archive=...) to point at it."
        )
    posts: list[tuple[str, str]] = []
    with tarfile.open(path, "r:*") as tf:
        for member in tf:
            if not member.isfile():
                continue
            handle = tf.extractfile(member)
            if handle is None:
                continue
            posts.append((member.name, handle.read().decode("latin-1")))
    posts.sort()

    paragraphs: list[tuple[str, ...]] = []
    paragraph_post: list[int] = []
    seen: set[str] = set()
    counts: Counter[str] = Counter()
    senders: set[str] = set()
    orgs: set[str] = set()
    groups: set[str] = set()
    for post_index, (name, raw) in enumerate(posts):
        raw = raw.replace("\r\n", "\n")
        header, _, body = raw.partition("\n\n")
        parts = name.split("/")
        if len(parts) >= 3:
            groups.add(parts[-2])
        for line in header.split("\n"):
            key, _, value = line.partition(":")
            value = value.strip()
            if not value or len(value) > 80:
                continue
            if key.lower() == "from":
                senders.add(value)
            elif key.lower() == "organization":
                orgs.add(value)
        if len(body.strip()) < MIN_BODY_CHARS:
            continue
        body = _QUOTE_PREFIX.sub("", body)
        for chunk in _BLANK_LINE.split(body):
            words = chunk.split()
            if not words:
                continue
            text = " ".join(words)
            if not _keep_paragraph(text, words):
                continue
            lowered = text.lower()
            if lowered in seen:  # quoted copies, cross-posts, repeated signatures
                continue
            seen.add(lowered)
            paragraphs.append(tuple(_SENT_SPLIT.split(text)))
            paragraph_post.append(post_index)
            counts.update(lowered.split())
    if not paragraphs:
        raise ValueError(f"no usable paragraphs in {path}: is it {ARCHIVE_DESCRIPTION}?")
    words = [w for w in counts if _VOCAB_WORD.fullmatch(w)]
    vocab = sorted(w for w in words if counts[w] >= 2) or sorted(words) or ["lorem"]
    pool: list[str] = []  # ~3M references to the vocabulary strings
    for w in vocab:
        pool.extend([w] * counts.get(w, 1))
    return Source(
        paragraphs=paragraphs,
        paragraph_post=paragraph_post,
        vocab_pool=pool,
        senders=sorted(senders) or ["anonymous <anon@example.com>"],
        organizations=sorted(orgs) or ["Usenet"],
        groups=sorted(groups) or ["misc.misc"],
    )


# --------------------------------------------------------------------------- generation

_STREAM_ORIGINAL = 0
_STREAM_VARIANT = 1


def _rng(seed: int, stream: int, index: int) -> random.Random:
    return random.Random((((seed & 0xFFFFFFFFFFFF) << 2 | stream) << 32) | index)


def _positions(r: random.Random, n: int, p: float) -> list[int]:
    """Indices in [0, n) each selected independently with probability p (geometric skips)."""
    if p <= 0.0 or n <= 0:
        return []
    if p >= 1.0:
        return list(range(n))
    log_q = math.log1p(-p)
    out: list[int] = []
    i = -1
    rand = r.random
    while True:
        i += 1 + int(math.log(1.0 - rand()) / log_q)
        if i >= n:
            return out
        out.append(i)


def _vocab_word(r: random.Random, pool: list[str]) -> str:
    return pool[int(r.random() * len(pool))]


def _shuffle(r: random.Random, items: list) -> None:
    for i in range(len(items) - 1, 0, -1):
        j = int(r.random() * (i + 1))
        items[i], items[j] = items[j], items[i]


class Generator:
    """Deterministic document synthesis from a :class:`Source` and a seed."""

    def __init__(
        self, source: Source, seed: int = 0, doc_chars: tuple[int, int] = TARGET_CHARS
    ) -> None:
        if seed < 0:
            raise ValueError("seed must be >= 0")
        if not 200 <= doc_chars[0] <= doc_chars[1]:
            raise ValueError("doc_chars must be (min, max) with 200 <= min <= max")
        self.src = source
        self.seed = seed
        self.target = doc_chars
        # originals are cut at a word boundary before this many characters
        self.max_chars = (
            doc_chars[1] + (MAX_DOC_CHARS - TARGET_CHARS[1]) * doc_chars[1] // (TARGET_CHARS[1])
        )

    # -- originals ---------------------------------------------------------

    def _fragment(self, r: random.Random, used_posts: set[int], max_chars: int) -> str:
        """A lightly re-mixed window of a random paragraph from a post not used yet."""
        paragraphs, posts = self.src.paragraphs, self.src.paragraph_post
        n = len(paragraphs)
        pid = int(r.random() * n)
        for _ in range(8):
            if posts[pid] not in used_posts:
                break
            pid = int(r.random() * n)
        used_posts.add(posts[pid])
        sents = paragraphs[pid]
        if len(sents) > 1:
            sents = list(sents)
            if r.random() < 0.5:
                _shuffle(r, sents)
            start = int(r.random() * len(sents))  # start at a random sentence, wrapping around
            sents = sents[start:] + sents[:start]
        out: list[str] = []
        size = 0
        for sent in sents:
            if size + len(sent) > max_chars:
                if size == 0 or max_chars - size > 40:  # take part of it, cut at a word
                    cut = sent.rfind(" ", 0, max(max_chars - size, 1) + 1)
                    out.append(sent[:cut] if cut > 0 else sent.split(" ", 1)[0])
                break
            out.append(sent)
            size += len(sent) + 1
        return " ".join(out)

    def _perturb(self, r: random.Random, words: list[str], rate: float) -> None:
        pool = self.src.vocab_pool
        n = len(pool)
        rand = r.random
        for i in _positions(r, len(words), rate):
            w = words[i]
            new = pool[int(rand() * n)]
            words[i] = new + w[-1] if w[-1] in _TRAIL_PUNCT else new

    def _paragraph(self, r: random.Random, used_posts: set[int], target: int) -> str:
        frags: list[str] = []
        size = -1
        while size < target:
            frag = self._fragment(r, used_posts, target - size - 1)
            frags.append(frag)
            size += len(frag) + 1
        return " ".join(frags)

    def original(self, index: int) -> str:
        """Text of original number ``index``: a pure function of (source, seed, index)."""
        r = _rng(self.seed, _STREAM_ORIGINAL, index)
        lo_c, hi_c = self.target
        target = lo_c + int(r.random() * (hi_c - lo_c + 1))
        lo, hi = PARAGRAPHS_PER_DOC
        k = lo + int(r.random() * (hi - lo + 1))
        # Uneven paragraph lengths: split the target at random cut points.
        cuts = sorted(r.random() for _ in range(k - 1))
        shares = [b - a for a, b in zip([0.0, *cuts], [*cuts, 1.0], strict=True)]
        shares = [0.5 / k + 0.5 * s for s in shares]
        used_posts: set[int] = set()
        out: list[str] = []
        for share in shares:
            words = self._paragraph(r, used_posts, max(60, int(target * share))).split()
            self._perturb(r, words, PERTURB_RATE)
            out.append(" ".join(words))
        text = "\n\n".join(out)
        cap = self.max_chars
        if len(text) > cap:
            cut = max(text.rfind(" ", 0, cap + 1), text.rfind("\n", 0, cap + 1))
            text = text[:cut].rstrip()
        return text

    # -- variants ----------------------------------------------------------

    def variant(self, text: str, kind: str, key: int) -> tuple[str, float]:
        """Variant of ``text`` of the given kind and its edit rate; ``key`` seeds it."""
        r = _rng(self.seed, _STREAM_VARIANT, key)
        if kind == "exact":
            return text, 0.0
        if kind == "format":
            return self._format(r, text)
        if kind == "words":
            return self._words(r, text)
        if kind == "paragraph":
            return self._paragraph_edit(r, text)
        if kind == "header_footer":
            return self._header_footer(r, text)
        raise ValueError(f"unknown variant kind {kind!r}; expected one of {KINDS}")

    def _words(self, r: random.Random, text: str) -> tuple[str, float]:
        rate = r.random() * MAX_WORD_EDIT_RATE
        paras = [p.split() for p in text.split("\n\n")]
        total = sum(len(p) for p in paras)
        pool = self.src.vocab_pool
        edits = 0
        out: list[str] = []
        for words in paras:
            new: list[str] = []
            last = 0
            for i in _positions(r, len(words), rate):
                new.extend(words[last:i])
                last = i + 1
                op = r.random()
                if op < 1 / 3:  # substitute
                    new.append(_vocab_word(r, pool))
                elif op < 2 / 3:  # insert before
                    new.append(_vocab_word(r, pool))
                    new.append(words[i])
                # else: delete
                edits += 1
            new.extend(words[last:])
            if not new:
                new = [_vocab_word(r, pool)]
            out.append(" ".join(new))
        return "\n\n".join(out), edits / max(total, 1)

    def _paragraph_edit(self, r: random.Random, text: str) -> tuple[str, float]:
        paras = text.split("\n\n")
        total = len(text.split())
        if len(paras) >= 2 and r.random() < 0.5:
            i = int(r.random() * len(paras))
            changed = len(paras.pop(i).split())
        else:
            target = max(200, len(text) // max(len(paras), 1))
            words = self._paragraph(r, set(), target).split()
            self._perturb(r, words, PERTURB_RATE)
            paras.insert(int(r.random() * (len(paras) + 1)), " ".join(words))
            changed = len(words)
        return "\n\n".join(paras), changed / max(total, 1)

    def _header_footer(self, r: random.Random, text: str) -> tuple[str, float]:
        src = self.src
        sender = src.senders[int(r.random() * len(src.senders))]
        org = src.organizations[int(r.random() * len(src.organizations))]
        group = src.groups[int(r.random() * len(src.groups))]
        m = _EMAIL.search(sender)
        email = m.group(0) if m else "anonymous@example.com"
        name = re.sub(r"<[^>]*>|\S+@\S+|[()\"]", "", sender).strip() or email.split("@")[0]
        day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[int(r.random() * 7)]
        month = ("Mar", "Apr", "May")[int(r.random() * 3)]
        date = (
            f"{day}, {1 + int(r.random() * 28)} {month} 1993 "
            f"{int(r.random() * 24):02d}:{int(r.random() * 60):02d}:{int(r.random() * 60):02d} GMT"
        )
        headers = [
            f"Posted by {sender} on {date}",
            f"Reply to: {email}",
            f"Originally posted to {group}",
            f"Organization: {org}",
            f"Forwarded from {group} by {name}",
        ]
        footers = [
            f"-- \n{name}\n{org}\n{email}",
            f"Reply to this post | Forward | Report abuse\nPosted to {group}",
            f"Copyright 1993 {org}. Redistributed with permission.",
            f"-- \n{name} <{email}>",
        ]
        mode = int(r.random() * 3)  # 0 header, 1 footer, 2 both
        parts = [text]
        added = 0
        if mode in (0, 2):
            _shuffle(r, headers)
            block = "\n".join(headers[: 1 + int(r.random() * 3)])
            parts.insert(0, block)
            added += len(block.split())
        if mode in (1, 2):
            block = footers[int(r.random() * len(footers))]
            parts.append(block)
            added += len(block.split())
        return "\n\n".join(parts), added / max(len(text.split()), 1)

    def _format(self, r: random.Random, text: str) -> tuple[str, float]:
        paras = [p.split() for p in text.split("\n\n")]
        # Punctuation: per-token edits that never create or remove a token.
        q = 0.005 + r.random() * 0.015
        for words in paras:
            for i in _positions(r, len(words), q):
                w = words[i]
                if len(w) > 1 and w[-1] in ",;:":
                    words[i] = w[:-1]
                elif w[-1].isalnum():
                    words[i] = w + ","
        curly = r.random() < 0.3
        # Case.
        case_op = int(r.random() * 4)
        if case_op == 0:
            paras = [[w.lower() for w in p] for p in paras]
        elif case_op == 1 and paras and paras[0]:
            n = min(len(paras[0]), 4 + int(r.random() * 8))
            paras[0][:n] = [w.upper() for w in paras[0][:n]]
        elif case_op == 2:
            for words in paras:
                for i in _positions(r, len(words), 0.05):
                    words[i] = words[i].capitalize()
        # Whitespace: rewrap, double spaces, indentation, blank lines, CRLF.
        width = 0 if r.random() < 0.3 else 50 + int(r.random() * 30)
        double_space = r.random() < 0.4
        indent = ("", "  ", "    ", "\t")[int(r.random() * 4)]
        para_sep = ("\n\n", "\n\n\n", "\n \n")[int(r.random() * 3)]
        trailing = " " if r.random() < 0.2 else ""
        out: list[str] = []
        for words in paras:
            if not words:
                continue
            lines: list[str] = []
            cur = [indent, words[0]]
            size = len(indent) + len(words[0])
            for prev, w in zip(words, words[1:]):  # noqa: B905
                sep = "  " if double_space and prev.endswith(_SENT_END) else " "
                if width and size + len(sep) + len(w) > width:
                    lines.append("".join(cur) + trailing)
                    cur = [w]
                    size = len(w)
                else:
                    cur.append(sep)
                    cur.append(w)
                    size += len(sep) + len(w)
            lines.append("".join(cur))
            out.append("\n".join(lines))
        result = para_sep.join(out)
        if curly:
            result = re.sub(r'"(\w)', "\u201c\\1", result)
            result = result.replace('"', "\u201d").replace("'", "\u2019")
            result = result.replace("--", "\u2014")
        if r.random() < 0.15:
            result = result.replace("\n", "\r\n")
        a, b = text.lower().split(), result.lower().split()
        changed = sum(x != y for x, y in zip(a, b, strict=False)) + abs(len(a) - len(b))
        return result, changed / max(len(a), 1)


# --------------------------------------------------------------------------- plan


@dataclass
class Plan:
    """Layout of a corpus: which output position holds which original or variant."""

    n_originals: int
    order: np.ndarray  # position -> slot (slot < n_originals: original, else variant)
    position: np.ndarray  # slot -> position
    source: np.ndarray  # variant -> original slot
    kind: np.ndarray  # variant -> index into KINDS


def make_plan(size: int, seed: int = 0, dup_fraction: float = 0.3) -> Plan:
    if size < 1:
        raise ValueError("size must be >= 1")
    if not 0.0 <= dup_fraction < 1.0:
        raise ValueError("dup_fraction must be in [0, 1)")
    if size >= 10**_ID_DIGITS:
        raise ValueError(f"size must be < {10**_ID_DIGITS}")
    rng = np.random.default_rng([seed, 0x6E656172])
    n_var = min(int(round(size * dup_fraction)), size - 1)
    n_orig = size - n_var
    source = rng.integers(0, n_orig, n_var, dtype=np.int64)
    # Every kind appears once there are at least len(KINDS) variants.
    kind = rng.permutation(np.arange(n_var, dtype=np.int64) % len(KINDS))
    # Originals at random times in [0, 1); a variant follows its source after a random delay
    # of up to VARIANT_DELAY of the remaining time (syndicated copies follow the story). Unlike
    # "shuffle, then put each original first in its cluster", this keeps the share of variants
    # flat along the file (lower only in the first few percent).
    t_orig = rng.random(n_orig)
    t_src = t_orig[source]
    t_var = t_src + rng.random(n_var) * VARIANT_DELAY * (1.0 - t_src)
    # Stable sort: a variant with a delay of exactly 0 still comes after its source.
    order = np.argsort(np.concatenate([t_orig, t_var]), kind="stable").astype(np.int64)
    position = np.empty(size, dtype=np.int64)
    position[order] = np.arange(size, dtype=np.int64)
    return Plan(n_orig, order, position, source, kind)


# --------------------------------------------------------------------------- build


def iter_records(
    size: int,
    archive: str | os.PathLike[str] = DEFAULT_ARCHIVE,
    seed: int = 0,
    dup_fraction: float = 0.3,
    source: Source | None = None,
    doc_chars: tuple[int, int] = TARGET_CHARS,
) -> Iterator[tuple[str, str, dict | None]]:
    """Yield (id, text, truth) in output order; truth is None for originals."""
    plan = make_plan(size, seed, dup_fraction)
    gen = Generator(source if source is not None else load_source(archive), seed, doc_chars)
    n_orig = plan.n_originals
    for pos in range(size):
        slot = int(plan.order[pos])
        if slot < n_orig:
            yield doc_id(pos), gen.original(slot), None
            continue
        v = slot - n_orig
        src_slot = int(plan.source[v])
        kind = KINDS[int(plan.kind[v])]
        text, rate = gen.variant(gen.original(src_slot), kind, v)
        truth = {
            "id": doc_id(pos),
            "source": doc_id(int(plan.position[src_slot])),
            "kind": kind,
            "edit_rate": round(rate, 4),
        }
        yield truth["id"], text, truth


def build_corpus(
    size: int,
    archive: str | os.PathLike[str] = DEFAULT_ARCHIVE,
    seed: int = 0,
    dup_fraction: float = 0.3,
) -> Iterator[tuple[str, str]]:
    """Yield (id, text) for the ``size`` documents of the corpus, in output order."""
    for did, text, _ in iter_records(size, archive, seed, dup_fraction):
        yield did, text


def write_corpus(
    size: int,
    out: str | os.PathLike[str],
    archive: str | os.PathLike[str] = DEFAULT_ARCHIVE,
    seed: int = 0,
    dup_fraction: float = 0.3,
    doc_chars: tuple[int, int] = TARGET_CHARS,
) -> dict:
    """Write ``out`` (JSONL) and ``<out>.truth.jsonl``; return a summary. ``doc_chars``: the
    range the length of each original is drawn from (default 1,700-2,300 characters)."""
    t0 = time.perf_counter()
    source = load_source(archive)
    t_load = time.perf_counter() - t0
    out_path = Path(out)
    truth_file = truth_path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out_path.with_name(out_path.name + ".tmp")
    tmp_truth = truth_file.with_name(truth_file.name + ".tmp")
    kinds: Counter[str] = Counter()
    n_docs = 0
    with open(tmp_out, "wb", buffering=1 << 20) as f, open(tmp_truth, "wb") as g:
        for did, text, truth in iter_records(size, archive, seed, dup_fraction, source, doc_chars):
            f.write(_dumps({"id": did, "text": text}) + b"\n")
            n_docs += 1
            if truth is not None:
                g.write(_dumps(truth) + b"\n")
                kinds[truth["kind"]] += 1
    os.replace(tmp_out, out_path)
    os.replace(tmp_truth, truth_file)
    n_var = sum(kinds.values())
    return {
        "out": str(out_path),
        "truth": str(truth_file),
        "archive": str(archive),
        "seed": seed,
        "dup_fraction": dup_fraction,
        "doc_chars": list(doc_chars),
        "documents": n_docs,
        "originals": n_docs - n_var,
        "variants": n_var,
        "kinds": {k: kinds[k] for k in KINDS},
        "source_paragraphs": len(source.paragraphs),
        "bytes": out_path.stat().st_size,
        "truth_bytes": truth_file.stat().st_size,
        "load_seconds": round(t_load, 3),
        "seconds": round(time.perf_counter() - t0, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build a near-duplicate benchmark corpus from the 20 Newsgroups archive."
    )
    parser.add_argument("--size", type=int, required=True, help="number of documents")
    parser.add_argument("--out", required=True, help="output JSONL (truth: <out>.truth.jsonl)")
    parser.add_argument(
        "--archive", default=str(DEFAULT_ARCHIVE), help="path to 20news-bydate.tar.gz"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dup-fraction", type=float, default=0.3)
    parser.add_argument(
        "--doc-chars",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        default=list(TARGET_CHARS),
        help="length of the originals in characters, drawn from [MIN, MAX] "
        "(default 1700 2300; at least 200)",
    )
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error("--size must be >= 1")
    if args.seed < 0:
        parser.error("--seed must be >= 0")
    if not 0.0 <= args.dup_fraction < 1.0:
        parser.error("--dup-fraction must be in [0, 1)")
    if not 200 <= args.doc_chars[0] <= args.doc_chars[1]:
        parser.error("--doc-chars MIN MAX: 200 <= MIN <= MAX")
    try:
        summary = write_corpus(
            args.size, args.out, args.archive, args.seed, args.dup_fraction, tuple(args.doc_chars)
        )
    except ArchiveMissingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.buffer.write(_dumps(summary) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
