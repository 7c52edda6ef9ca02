"""``neardup.Index``: an online, persistent near-duplicate index.

Documents are shingled and sketched exactly as in the batch engine (same
:class:`~neardup.DedupConfig`), their LSH band keys and shingle fingerprints go to a backend,
and a query looks up the band keys of the new text, then verifies every candidate with the
exact Jaccard similarity of the shingle sets. Results are therefore the same pairs the batch
engine verifies: an index built from a corpus finds, for each document, the near-duplicates that
``neardup dedup`` pairs it with.

>>> idx = Index("shop.db", threshold=0.8)     # SQLite; Index() is in memory
>>> idx.add("a", "the first text ...")
>>> idx.query("the first text, lightly edited ...")
[('a', 0.85)]
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any, Literal

import numpy as np

from .._columns import table_columns, table_kind
from .._version import __version__
from ..config import DedupConfig, ShingleConfig, check_threshold
from ..errors import ConfigError, InputError, SkipReason
from ..lsh import lsh_params, s_curve
from ..pipeline import ShingleSets, TextSketches, sketch_texts, verify_pairs
from ..reuse import PassageConfig, passage_keys, passage_keys_many
from ..validate import check_int, check_str
from .checking import COMMON_TEXTS as COMMON_TEXTS
from .checking import CheckResult as CheckResult
from .checking import CommonPassage as CommonPassage
from .checking import Match, PassageCheck
from .storage import (
    FORMAT_VERSION,
    DuplicateIdError,
    IndexChangedError,
    IndexNotFoundError,
    MemoryStorage,
    Storage,
    StoredDoc,
)

# Parameters that change what is stored; the rest (threshold of a query, bucket cap) may vary.
_STORED_SECTIONS = ("normalize", "shingle", "sketch")


def _open_storage(
    target: str | os.PathLike | Storage | None, create: bool = True, **options: Any
) -> Storage:
    if target is None or target == ":memory:":
        return MemoryStorage()
    if isinstance(target, Storage):
        return target
    s = str(target)
    if s.startswith(("redis://", "rediss://", "unix://")):
        from .redis import RedisStorage

        return RedisStorage(s, **options)
    from .sqlite import SQLiteStorage

    return SQLiteStorage(s, create=create, **options)


class Index(PassageCheck):
    """An online near-duplicate index over a backend (in memory, SQLite file, or Redis URL).

    ``Index()`` keeps everything in memory; ``Index("x.db")`` opens or creates an SQLite
    index; ``Index("redis://localhost:6379/0?prefix=shop")`` a Redis one. Parameters are those
    of :class:`~neardup.DedupConfig` (``threshold``, ``shingle``, ``num_perm``, ``bands``, ...)
    or ``config=``. A new index stores them; an existing one is opened with its stored
    parameters, and passing different ones is a :class:`~neardup.ConfigError`.
    ``store_text``: keep each text (needed to show passages side by side; default ``True``).
    ``create=False`` opens an existing index only: a target that holds none (no such SQLite
    file; a Redis prefix without an index, as after a Redis server that lost its data) is an
    :class:`IndexNotFoundError` instead of a new, empty index. ``storage_options``: keywords
    of the backend (SQLite: ``timeout``, ``synchronous``, ``max_bytes``; Redis: ``password``,
    ``lock_timeout``).
    """

    def __init__(
        self,
        target: str | os.PathLike | Storage | None = None,
        *,
        threshold: float | None = None,
        shingle: str | ShingleConfig | None = None,
        num_perm: int | None = None,
        scheme: Literal["oph", "classic"] | None = None,
        seed: int | None = None,
        bands: int | None = None,
        rows: int | None = None,
        min_recall: float | None = None,
        bucket_cap: int | None = None,
        verify: Literal["exact", "estimate"] | None = None,
        cluster: Literal["components", "strict"] | None = None,
        keep: Literal["first", "longest"] | None = None,
        nfkc: bool | None = None,
        casefold: bool | None = None,
        strip_html: bool | None = None,
        strip_punctuation: bool | None = None,
        strip_digits: bool | None = None,
        strip_stopwords: bool | None = None,
        config: DedupConfig | None = None,
        store_text: bool = True,
        storage_options: dict[str, Any] | None = None,
        passages: PassageConfig | bool | None = None,
        create: bool = True,
    ):
        # None: not given (a new index takes DedupConfig's default, an existing one its own)
        given_params = dict(
            threshold=threshold,
            shingle=shingle,
            num_perm=num_perm,
            scheme=scheme,
            seed=seed,
            bands=bands,
            rows=rows,
            min_recall=min_recall,
            bucket_cap=bucket_cap,
            verify=verify,
            cluster=cluster,
            keep=keep,
            nfkc=nfkc,
            casefold=casefold,
            strip_html=strip_html,
            strip_punctuation=strip_punctuation,
            strip_digits=strip_digits,
            strip_stopwords=strip_stopwords,
        )
        params = {k: v for k, v in given_params.items() if v is not None}
        if not isinstance(create, bool):
            raise ConfigError(f"create={create!r} is invalid: True or False")
        if config is not None and params:
            raise ConfigError(
                "pass either config= or the keyword parameters, not both "
                f"(given: config and {', '.join(sorted(params))})"
            )
        self.storage = _open_storage(target, create, **(storage_options or {}))
        self._no_passages = _NO_PASSAGES
        self._local = threading.local()  # per thread: whether the last verification was whole
        given = config or (DedupConfig.from_kwargs(**params) if params else None)
        meta = self.storage.read_meta()
        if passages is not None and not isinstance(passages, (bool, PassageConfig)):
            raise ConfigError(
                f"passages={passages!r} is invalid: True, False or a neardup.PassageConfig"
            )
        if meta is None and not create:
            self.storage.close()
            if self.storage.kind == "redis":  # its server may have come back without its data
                from .redact import redact_location

                url, prefix = getattr(self.storage, "url", ""), getattr(self.storage, "prefix", "")
                raise IndexNotFoundError(
                    f"{redact_location(url)} (prefix {prefix!r}): "
                    "holds no neardup index. If "
                    "one was kept there, the Redis server has lost its data (a server "
                    "restarted without persistence comes back empty: run it with "
                    "`appendonly yes`); create a new index with `neardup index create` or "
                    "Index(..., create=True)"
                )
            raise IndexNotFoundError(
                f"{target}: holds no neardup index; create one with "
                "`neardup index create` or Index(..., create=True)"
            )
        if meta is None:
            # a random identity stored with the data: a backend that comes back empty or
            # holding another index is told apart (verify_identity)
            self.identity: str | None = os.urandom(16).hex()
            self.config = given or DedupConfig()
            self.store_text = store_text
            self.text_codec = _CODEC
            self._bands_rows = self._choose(self.config)
            if passages not in (None, False) and not store_text:
                raise ConfigError(
                    "passages need the texts: store_text=False cannot find reused passages"
                )
            # texts whose markup the index strips: their passages skip it too
            self.passages = (
                passages
                if isinstance(passages, PassageConfig)
                else PassageConfig(strip_html=self.config.normalize.strip_html)
                if passages is True
                else None
            )
            self.storage.write_meta({"format_version": FORMAT_VERSION, "params": self._params()})
        else:
            if meta.get("format_version") != FORMAT_VERSION:
                raise ConfigError(
                    f"{target}: index format version {meta.get('format_version')}"
                    f" is not supported (this neardup reads {FORMAT_VERSION})"
                )
            stored = meta["params"]
            self.identity = stored.get("identity")  # None: made before indexes had one
            self.config = _config_from_params(stored)
            self.store_text = bool(stored.get("store_text", True))
            self.text_codec = stored.get("text_codec")  # None: texts stored as they are
            self._bands_rows = (int(stored["bands"]), int(stored["rows"]))
            if given is not None:
                self._check_same(given, stored, target)
            got = dict(stored.get("passages") or {})
            hashed_by = got.pop("word_hash", None)
            self.passages = PassageConfig(**got) if got else None
            if self.passages is not None and hashed_by != WORD_HASH:
                # fingerprints of another word hash would never match this one's
                self.passages = None
                self._no_passages = _OLD_PASSAGES
            if passages not in (None, False) and self.passages is None:
                raise ConfigError(f"{target}: {self._no_passages}")
            if isinstance(passages, PassageConfig) and passages != self.passages:
                raise ConfigError(
                    f"{target}: the index finds passages with {self.passages}, "
                    f"asked for {passages}; open it without passages= to use "
                    "its own"
                )
        self.bucket_cap = self.config.lsh.bucket_cap

    # -- parameters -------------------------------------------------------------------------
    @staticmethod
    def _choose(cfg: DedupConfig) -> tuple[int, int]:
        return lsh_params(cfg.lsh, cfg.sketch.num_perm)

    def _params(self) -> dict[str, Any]:
        d = self.config.to_dict()
        b, r = self._bands_rows
        return {
            **d,
            "bands": b,
            "rows": r,
            "store_text": self.store_text,
            "text_codec": self.text_codec,
            "identity": self.identity,
            "passages": (
                {**dataclasses.asdict(self.passages), "word_hash": WORD_HASH}
                if self.passages
                else None
            ),
            "created_by": f"neardup {__version__}",
        }

    def _check_same(self, given: DedupConfig, stored: dict[str, Any], target: Any) -> None:
        want = given.to_dict()
        diffs = []
        for sec in (*_STORED_SECTIONS, "lsh"):
            have, asked = stored.get(sec), want[sec]
            if isinstance(asked, dict) and isinstance(have, dict):
                diffs += [
                    f"{sec}.{k}: index has {have.get(k)!r}, asked for {v!r}"
                    for k, v in asked.items()
                    if have.get(k) != v
                ]
            elif have != asked:
                diffs.append(f"{sec}: index has {have!r}, asked for {asked!r}")
        b, r = self._choose(given)
        if (b, r) != self._bands_rows:
            diffs.append(
                f"bands x rows: index has {self._bands_rows[0]}x{self._bands_rows[1]}"
                f", asked for {b}x{r}"
            )
        if diffs:
            raise ConfigError(
                f"{target}: the index was created with other parameters ("
                + "; ".join(diffs)
                + "); open it without parameters to use its own"
            )

    @property
    def bands(self) -> int:
        return self._bands_rows[0]

    @property
    def rows(self) -> int:
        return self._bands_rows[1]

    @property
    def threshold(self) -> float:
        return self.config.lsh.threshold

    # -- encoding ---------------------------------------------------------------------------
    def encode(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        *,
        passages: bool = True,
        keep_text: bool = True,
        sketches: TextSketches | None = None,
    ) -> list[StoredDoc]:
        """Shingle and sketch ``texts`` once, as the batch engine does: one
        :class:`StoredDoc` each (ids default to ``""``; texts kept, compressed, if
        ``store_text`` and ``keep_text``: a query stores nothing). Its ``keys`` are the LSH
        band keys, then (with ``passages``, where the index finds passages) the keys of its
        passage fingerprints. ``sketches``: the texts' band keys and shingle sets already made
        with this index's parameters (the batch engine's, :meth:`add_sketched`)."""
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InputError(
                    f"text at position {i} is {type(t).__name__}, not str",
                    field="text",
                    reason=SkipReason.NON_STRING_FIELD,
                )
            try:
                t.encode("utf-8")
            except UnicodeEncodeError as e:  # lone surrogates: not storable as UTF-8
                raise InputError(
                    f"text at position {i} is not valid Unicode at character "
                    f"{e.start} ({e.reason})",
                    field="text",
                    reason=SkipReason.UNDECODABLE,
                ) from e
        n = len(texts)
        if n == 0:
            return []
        # every text its own set (no exact groups): each one is stored
        sk = sketch_texts(texts, self.config, self._bands_rows) if sketches is None else sketches
        if len(sk.group) != n:
            raise ValueError(f"sketches of {len(sk.group)} texts given for {n} texts")
        h32, starts, ends, keys = sk.hashes, sk.starts, sk.ends, sk.keys  # keys: [bands, sets]
        none32, none64 = np.zeros(0, np.uint32), np.zeros(0, np.uint64)
        out = []
        extra: list[np.ndarray] | None = None
        if passages and self.passages is not None:
            extra = passage_keys_many(texts, self.passages)
        for i, g in enumerate(sk.group.tolist()):
            k = keys[:, g].copy() if g >= 0 else none64
            if extra is not None and g >= 0:
                k = np.concatenate([k, extra[i]])
            out.append(
                StoredDoc(
                    id="" if ids is None else ids[i],
                    text=(self._pack(texts[i]) if self.store_text and keep_text else None),
                    shingles=h32[starts[g] : ends[g]].copy() if g >= 0 else none32,
                    keys=k,
                )
            )
        return out

    @staticmethod
    def _passage_keys(fps: Sequence[tuple[int, int]]) -> np.ndarray:
        """The keys under which a text's passage fingerprints (:func:`fingerprints`) are stored
        beside its LSH band keys, unique."""
        return passage_keys(fps)

    # -- writing ----------------------------------------------------------------------------
    def add(self, id: str | int, text: str) -> None:  # noqa: A002 - the natural name
        """Add one document; :class:`DuplicateIdError` if ``id`` is present."""
        self.add_many([(id, text)])

    def add_many(
        self,
        docs: Iterable[tuple[str, str]] | Any,
        batch_size: int = 1000,
        *,
        text_field: str | None = None,
        id_field: str | None = None,
        progress: Callable[[str, int, int | None], Any] | None = None,
    ) -> int:
        """Add ``(id, text)`` pairs (or a mapping id -> text) in transactional batches of
        ``batch_size``; each batch is stored completely or not at all. Returns the number added.

        ``docs`` may also be a whole table (a pandas or polars DataFrame, a pyarrow Table, a
        Hugging Face Dataset): ``text_field`` names its column of texts (default "text") and
        ``id_field`` its ids (default "id"). ``progress``: called as ``progress("add", done,
        total)`` after each batch (``total``: None where ``docs`` does not say its length)."""
        check_int("batch_size", batch_size, 1)
        if progress is not None and not callable(progress):
            raise ConfigError(
                f"progress={progress!r} is invalid: a function of (stage, done, total)"
            )
        kind = table_kind(docs)
        if kind is not None:
            docs = _table_docs(docs, kind, text_field, id_field)
        elif text_field is not None or id_field is not None:
            table_columns(docs, None, text_field, id_field)  # says what they are for
        elif hasattr(docs, "items"):
            docs = docs.items()
        total = len(docs) if isinstance(docs, Sized) else None
        added = 0
        part: list[tuple[str, str]] = []
        for item in docs:
            part.append(item)
            if len(part) >= batch_size:
                added += self._add_batch(part)
                part = []
                if progress is not None:
                    progress("add", added, total)
        if part:
            added += self._add_batch(part)
            if progress is not None:
                progress("add", added, total)
        return added

    def add_sketched(
        self, ids: Sequence[str | int], texts: Sequence[str], sketches: TextSketches
    ) -> int:
        """Add documents whose band keys and shingle sets were made already, with this index's
        parameters (the batch engine's: ``neardup dedup --save-index``), in one transactional
        batch; returns the number added."""
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids given for {len(texts)} texts")
        checked = [_check_id(x) for x in ids]
        encoded = self.encode(texts, checked, sketches=sketches)
        self.storage.insert(encoded)
        return len(encoded)

    def _add_batch(self, part: list[tuple[str, str]]) -> int:
        ids = [_check_id(x[0]) for x in part]
        encoded = self.encode([x[1] for x in part], ids)
        self.storage.insert(encoded)
        return len(encoded)

    def remove(self, id: str | int) -> bool:  # noqa: A002
        """Remove a document; whether it was present."""
        return self.storage.delete([_check_id(id)])[0]

    def remove_many(self, ids: Sequence[str]) -> int:
        return sum(self.storage.delete([_check_id(i) for i in ids]))

    # -- reading ----------------------------------------------------------------------------
    def _verify(
        self,
        doc: StoredDoc,
        threshold: float,
        exclude: str | None = None,
        deadline: float | None = None,
    ) -> list[Match]:
        """The verified matches of ``doc``; with a ``deadline`` (:func:`time.monotonic`), the
        candidates' shingles are read a part at a time and no new part is read after it (the
        matches among those read; ``self._local.complete`` says whether all were)."""
        self._local.complete = True
        if len(doc.keys) == 0:
            return []
        handles = self.storage.candidates(doc.keys[: self.bands], self.bucket_cap)
        if not handles:
            return []
        if deadline is None:
            got = self.storage.shingles(handles)
        else:
            import time

            got = []
            for s0 in range(0, len(handles), _VERIFY_PART):
                if s0 and time.monotonic() > deadline:
                    self._local.complete = False
                    break
                got.extend(self.storage.shingles(handles[s0 : s0 + _VERIFY_PART]))
        found = [(i, s) for i, s in got if i != exclude]
        if not found:
            return []
        arrays = [doc.shingles, *(s for _, s in found)]
        sizes = np.fromiter((len(a) for a in arrays), np.int64, len(arrays))
        starts = np.zeros(len(arrays), np.int64)
        np.cumsum(sizes[:-1], out=starts[1:])
        hashes = np.concatenate(arrays).astype(np.uint32, copy=False)
        m = len(found)
        _, right, sim = verify_pairs(
            ShingleSets(hashes, starts, starts + sizes),
            np.zeros(m, np.int64),
            np.arange(1, m + 1, dtype=np.int64),
            threshold,
        )
        matches = [
            Match(found[j - 1][0], round(float(s), 6)) for j, s in zip(right.tolist(), sim.tolist())
        ]
        matches.sort(key=lambda x: (-x.similarity, x.id))
        return matches

    def query_within(
        self, text: str, seconds: float, threshold: float | None = None, top_k: int | None = None
    ) -> tuple[list[Match], bool]:
        """:meth:`query` with a time budget: the candidates whose shingles were read within
        ``seconds`` are verified (at least a first part of them); returns the matches and
        whether every candidate was verified."""
        import time

        threshold = self._check_threshold(threshold)
        check_int("top_k", top_k, 1, none=True)
        if not (isinstance(seconds, (int, float)) and seconds > 0):
            raise ConfigError(f"seconds={seconds!r} is invalid: above 0")
        deadline = time.monotonic() + float(seconds)
        doc = self.encode([text], passages=False, keep_text=False)[0]
        matches = self._verify(doc, threshold, deadline=deadline)
        complete = self._local.complete
        return (matches[:top_k] if top_k is not None else matches), complete

    def query(
        self, text: str, threshold: float | None = None, top_k: int | None = None
    ) -> list[Match]:
        """Near-duplicates of ``text`` already in the index: :class:`Match` ``(id, similarity)``
        sorted by verified Jaccard similarity, highest first. ``threshold`` defaults to the
        index's; below it, LSH finds pairs with the probability of its S-curve."""
        threshold = self._check_threshold(threshold)
        check_int("top_k", top_k, 1, none=True)
        doc = self.encode([text], passages=False, keep_text=False)[0]
        matches = self._verify(doc, threshold)
        return matches[:top_k] if top_k is not None else matches

    def query_id(
        self,
        id: str | int,
        threshold: float | None = None,  # noqa: A002
        top_k: int | None = None,
    ) -> list[Match]:
        """Near-duplicates of a document already in the index (itself left out)."""
        id = _check_id(id)  # noqa: A001
        got = self.storage.get(id)
        if got is None:
            raise KeyError(id)
        text = self._unpack(got["text"])
        if text is not None:
            doc = self.encode([text], passages=False, keep_text=False)[0]
        else:
            raise ConfigError(
                "query_id needs the texts: this index was built with store_text=False"
            )
        matches = self._verify(doc, self._check_threshold(threshold), exclude=id)
        return matches[:top_k] if top_k is not None else matches

    def check_and_add(
        self,
        id: str | int,
        text: str,
        threshold: float | None = None,  # noqa: A002
    ) -> list[Match]:
        """For streams: the near-duplicates of ``text``; if there are none, ``text`` is added
        under ``id``. Atomic across every client of the index (no two near-duplicates arriving
        at once can both be added). An ``id`` already present is a :class:`DuplicateIdError`
        whatever the text."""
        threshold = self._check_threshold(threshold)
        doc = self.encode([text], [_check_id(id)])[0]
        with self.storage.exclusive():
            if self.storage.contains(doc.id):
                raise DuplicateIdError(doc.id)
            matches = self._verify(doc, threshold)
            if not matches:
                self.storage.insert([doc])
        return matches

    def _check_threshold(self, threshold: float | None) -> float:
        if threshold is None:
            return self.threshold
        return check_threshold(threshold)

    def get(self, id: str | int) -> str | None:  # noqa: A002
        """The stored text of ``id`` (``KeyError`` if absent; ``None`` if texts are not kept)."""
        got = self.storage.get(_check_id(id))
        if got is None:
            raise KeyError(id)
        return self._unpack(got["text"])

    def get_texts(self, ids: Sequence[str]) -> dict[str, str | None]:
        return {k: self._unpack(v) for k, v in self.storage.get_texts(list(ids)).items()}

    # Texts are stored zstd-compressed (about 2.5x smaller for prose); indexes made before
    # that was the default store them as they are and say so by having no "text_codec".
    def _pack(self, text: str) -> str | bytes:
        if self.text_codec is None:
            return text
        return _compressor().compress(text.encode("utf-8"))

    def _unpack(self, value: str | bytes | None) -> str | None:
        if value is None or isinstance(value, str):
            return value
        raw: bytes = value
        if self.text_codec == _CODEC:
            raw = _decompressor().decompress(raw)
        return raw.decode("utf-8")

    def ids(self) -> Iterator[str]:
        return self.storage.iter_ids()

    def list_ids(self, after: str | None = None, limit: int = 100) -> list[str]:
        """A page of ids in code-point order: up to ``limit`` ids greater than ``after``."""
        check_int("limit", limit, 1, 100_000)
        check_str("after", after, none=True, empty=True, allowed="an id (a string) or None")
        return self.storage.list_ids(after, limit)

    def __contains__(self, id: object) -> bool:  # noqa: A002
        if isinstance(id, (int, np.integer)) and not isinstance(id, (bool, np.bool_)):
            id = str(int(id))  # noqa: A001
        return isinstance(id, str) and bool(id) and self.storage.contains(id)

    def __len__(self) -> int:
        return self.storage.count()

    def stats(self) -> dict[str, Any]:
        b, r = self._bands_rows
        t = self.threshold
        return {
            **self.storage.stats(),
            "threshold": t,
            "bands": b,
            "rows": r,
            "num_perm": self.config.sketch.num_perm,
            "shingle": str(self.config.shingle),
            "expected_recall_at_threshold": round(float(s_curve(t, b, r)), 6),
            "store_text": self.store_text,
            "identity": self.identity,
            "passages": (
                dataclasses.asdict(self.passages)
                if self.passages
                else "not indexed: this index finds whole-text near-duplicates only"
            ),
        }

    def verify_identity(self) -> None:
        """Check that the backend still holds the index that was opened (one read of its
        stored parameters); :class:`IndexChangedError` if its data is gone (a Redis server
        restarted without persistence comes back empty) or it now holds another index. An
        index made before indexes had an identity is only checked for being there."""
        meta = self.storage.stored_meta()
        if meta is None:
            raise IndexChangedError(
                "the index is gone: its backend holds no neardup index any more (a Redis "
                "server restarted without persistence comes back empty; see the README on "
                "running Redis with append-only persistence)"
            )
        got = meta["params"].get("identity")
        if got != self.identity:
            raise IndexChangedError(
                f"the backend now holds another index (identity {got}, opened as {self.identity})"
            )

    def close(self) -> None:
        self.storage.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_CODEC = "zstd"
#: candidates whose shingles are read at a time by a query with a time budget
_VERIFY_PART = 512
#: what an index built without passage fingerprints says when asked for passages
_NO_PASSAGES = (
    "this index was built without passage fingerprints (the default): it finds "
    "whole-text near-duplicates only; an index created with `neardup index create "
    "--passages` or Index(..., passages=True) also finds reused passages"
)

#: what an index whose passage fingerprints were made with another word hash says
_OLD_PASSAGES = (
    "this index's passage fingerprints were made by a development version of "
    "neardup that hashed words differently: it finds whole-text near-duplicates "
    "only; build it again (`neardup index create --passages`, then add the texts) "
    "to find reused passages"
)
#: the word hash that passage fingerprints are made with (stored with an index's passages)
WORD_HASH = 1


def _table_docs(
    table: Any, kind: str, text_field: str | None, id_field: str | None
) -> list[tuple[str, str]]:
    """The ``(id, text)`` pairs of a whole table (see :meth:`Index.add_many`)."""
    from .._columns import id_column, table_names, text_column

    texts, ids = table_columns(table, None, text_field, id_field)
    if ids is None:
        raise ConfigError(
            f"the {kind} has no column 'id' (its columns: "
            f"{', '.join(table_names(table))}): name the column of the ids with "
            "id_field=..."
        )
    texts, _, n = text_column(texts)
    if not isinstance(texts, list):
        texts = texts.to_pylist()
    return list(zip(id_column(ids, n), texts))


_zstd_local = threading.local()


def _compressor():
    """A zstd compressor for this thread (instances must not be shared between threads)."""
    c = getattr(_zstd_local, "c", None)
    if c is None:
        import zstandard

        c = _zstd_local.c = zstandard.ZstdCompressor(level=3)
    return c


def _decompressor():
    d = getattr(_zstd_local, "d", None)
    if d is None:
        import zstandard

        d = _zstd_local.d = zstandard.ZstdDecompressor()
    return d


def _check_id(x: object) -> str:
    """An id: a non-empty string, or an integer (stored as its decimal string, as the file
    readers and the batch engine make it)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return str(int(x))
    if not isinstance(x, str) or not x:
        raise InputError(
            f"id {x!r} is invalid: a non-empty string or an integer",
            field="id",
            reason=SkipReason.BAD_ID,
        )
    return x


def _config_from_params(p: dict[str, Any]) -> DedupConfig:
    from ..config import (
        ClusterConfig,
        LSHConfig,
        NormalizeConfig,
        ShingleConfig,
        SketchConfig,
        VerifyConfig,
    )

    try:
        return DedupConfig(
            normalize=NormalizeConfig(**p["normalize"]),
            shingle=ShingleConfig.parse(p["shingle"]),
            sketch=SketchConfig(**p["sketch"]),
            lsh=LSHConfig(**p["lsh"]),
            verify=VerifyConfig(**p["verify"]),
            cluster=ClusterConfig(**p["cluster"]),
        )
    except (KeyError, TypeError) as e:
        raise ConfigError(f"the index's stored parameters are unreadable: {e}") from e
