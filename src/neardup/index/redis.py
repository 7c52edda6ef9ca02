"""The Redis backend: one index shared by several processes or hosts.

Layout under a key prefix (``redis://host:6379/0?prefix=shop``, default prefix ``neardup``):
``{p}:meta`` (hash: format version, parameters), ``{p}:ids`` (hash: id -> handle),
``{p}:next`` (handle counter), ``{p}:order`` (ids, for paging), ``{p}:d:{handle}`` (hash: id, text, shingles, band keys) and
``{p}:b:{key}`` (set of handles per band key). Inserts and removals run as Lua scripts, which
Redis executes atomically: a batch is stored whole or, if an id is already present, not at all
(its documents and band keys are staged by scripts of ``BAND_DOCS`` documents, and the
whole batch is made visible at once by naming its ids; band keys are taken back after a
removal, so that no script holds Redis for long; see ``_RESERVE``).
``check_and_add`` holds a Redis lock (``{p}:lock``) so that it is atomic across clients.
A single Redis server (or a primary with replicas) is supported, not Redis Cluster: the scripts
touch keys they compute.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from ..errors import ConfigError, OutputError
from .redact import redact_location
from .storage import DuplicateIdError, Storage, StoredDoc, check_batch_ids

# A batch is stored in three steps, so that no script holds Redis for long (Redis runs one
# script at a time, and every other client waits for it: a batch of 1,000 documents with
# passages adds ~73,000 set members and 3 MB of documents; stored by one script, every reader
# waited up to 50 ms):
# 1. _RESERVE: none of the ids is present (else nothing is done), and the batch's handles are
#    taken from the counter (never given again);
# 2. _STAGE, a script per BAND_DOCS documents: the documents are stored under their handles
#    (``{p}:d:{handle}``) and their band keys point to them. A document is visible only once
#    its id names its handle (``{p}:ids``): readers leave out a handle whose document is not
#    stored or not named yet (``_FIELDS``);
# 3. _COMMIT: none of the ids is present still (another client may have added one meanwhile:
#    then the staged documents and their band keys are taken back with _UNSTAGE and nothing
#    is stored), and the ids are named, at once: the whole batch becomes visible together.
# A client killed between the steps leaves staged documents that no reader returns.
_RESERVE = """
local p = ARGV[1]
for i = 2, #ARGV do
  if redis.call('HEXISTS', p .. ':ids', ARGV[i]) == 1 then return {'dup', ARGV[i]} end
end
return {'ok', tostring(redis.call('INCRBY', p .. ':next', #ARGV - 1))}
"""

# ARGV: prefix, then for each document its handle, id, text, whether the text is kept,
# shingles and band keys (separated by spaces)
_STAGE = """
local p = ARGV[1]
for i = 2, #ARGV, 6 do
  local h = ARGV[i]
  local dk = p .. ':d:' .. h
  redis.call('HSET', dk, 'id', ARGV[i + 1], 'sh', ARGV[i + 4], 'keys', ARGV[i + 5])
  if ARGV[i + 3] == '1' then redis.call('HSET', dk, 'text', ARGV[i + 2]) end
  for k in string.gmatch(ARGV[i + 5], '%S+') do
    redis.call('SADD', p .. ':b:' .. k, h)
  end
end
return 1
"""

# ARGV: prefix, then handle and its band keys (separated by spaces) for each document: the
# handle is taken from the set of each of its keys, and its staged document deleted when
# ``UNSTAGE`` (a batch taken back; a removal has deleted its documents already)
_UNBANDS = """
local p = ARGV[1]
for i = 2, #ARGV, 2 do
  if UNSTAGE then redis.call('DEL', p .. ':d:' .. ARGV[i]) end
  for k in string.gmatch(ARGV[i + 1], '%S+') do
    redis.call('SREM', p .. ':b:' .. k, ARGV[i])
  end
end
return 1
"""
_UNSTAGE = _UNBANDS.replace("UNSTAGE", "true")
_UNBANDS = _UNBANDS.replace("UNSTAGE", "false")

# ARGV: prefix, then each document's id and handle
_COMMIT = """
local p = ARGV[1]
for i = 2, #ARGV, 2 do
  if redis.call('HEXISTS', p .. ':ids', ARGV[i]) == 1 then return {'dup', ARGV[i]} end
end
for lo = 2, #ARGV, 1000 do
  local hi = math.min(lo + 999, #ARGV)
  redis.call('HSET', p .. ':ids', unpack(ARGV, lo, hi))
  local order = {}
  for i = lo, hi, 2 do
    order[#order + 1] = 0
    order[#order + 1] = ARGV[i]
  end
  redis.call('ZADD', p .. ':order', unpack(order))
end
return {'ok', tostring((#ARGV - 1) / 2)}
"""

#: documents one script stages (~1.5 ms of the server with passages)
BAND_DOCS = 8

# A removal takes the documents away at once (one short script: they are gone for every
# reader), then takes their band keys back BAND_DOCS documents a script, as a batch adds them.
_DELETE = """
local p = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local h = redis.call('HGET', p .. ':ids', id)
  if h then
    local dk = p .. ':d:' .. h
    out[#out + 1] = {h, redis.call('HGET', dk, 'keys') or ''}
    redis.call('DEL', dk)
    redis.call('HDEL', p .. ':ids', id)
    redis.call('ZREM', p .. ':order', id)
  else
    out[#out + 1] = 0
  end
end
return out
"""


# Lookups are single scripts, not pipelines of one command per key: a check probes hundreds of
# keys, and a pipeline costs the client a packed command and a parsed reply for each (most of
# a check's time over Redis). A script answers in one reply of two strings: the number of
# members read for each key, and the members, separated by spaces.
_PROBE = """
local p = ARGV[1] .. ':b:'
local cap = tonumber(ARGV[2])
local counts, all = {}, {}
for i = 3, #ARGV do
  local got = redis.call('SRANDMEMBER', p .. ARGV[i], cap)
  counts[#counts + 1] = #got
  for j = 1, #got do all[#all + 1] = got[j] end
end
return {table.concat(counts, ' '), table.concat(all, ' ')}
"""

_COUNTS = """
local p = ARGV[1] .. ':b:'
local out = {}
for i = 2, #ARGV do out[#out + 1] = redis.call('SCARD', p .. ARGV[i]) end
return out
"""

# ARGV: prefix, a field name, then handles; for each handle its id and that field (false when
# the document is gone, or staged by a batch not committed yet)
_FIELDS = """
local p = ARGV[1] .. ':d:'
local f = ARGV[2]
local ids = ARGV[1] .. ':ids'
local out = {}
for i = 3, #ARGV do
  local got = redis.call('HMGET', p .. ARGV[i], 'id', f)
  if got[1] and redis.call('HGET', ids, got[1]) == ARGV[i] then
    out[#out + 1] = got[1]
    out[#out + 1] = got[2]
  else
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
return out
"""


def _split_url(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    prefix = next((v for k, v in query if k == "prefix"), "neardup")
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    return urlunsplit(parts._replace(query=rest)), prefix


#: Seconds a batch script's answer is waited for (a batch of 1,000 documents with passages
#: takes 0.4 s of the server at 100,000 documents, more on a loaded server).
SCRIPT_SECONDS = 300.0


class RedisStorage(Storage):
    kind = "redis"

    def __init__(
        self,
        url: str,
        *,
        prefix: str | None = None,
        lock_timeout: float = 5.0,
        password: str | None = None,
    ):
        """``password``: the Redis password, when it is not in ``url`` (where the command
        lines of other users' processes would show it)."""
        from .._extras import require

        redis = require("redis", "redis", "an index in Redis")
        self._redis_mod = redis
        plain, url_prefix = _split_url(url)
        self.prefix = prefix or url_prefix
        if not self.prefix or any(c.isspace() for c in self.prefix):
            raise ConfigError(f"prefix={self.prefix!r} is invalid: a non-empty word")
        self.url = plain
        if password is not None:
            parts = urlsplit(plain)
            if parts.password or any(k == "password" for k, _ in parse_qsl(parts.query)):
                raise ConfigError(
                    f"{redact_location(plain)}: the Redis password is given "
                    "twice, in the URL and apart from it; give it once"
                )
            if not isinstance(password, str) or not password:
                raise ConfigError("password: a non-empty string")
        try:
            self.r = redis.Redis.from_url(
                plain, **({} if password is None else {"password": password})
            )
            self.r.ping()
        except (redis.RedisError, ValueError) as e:
            # the message names the server, never its password
            raise OutputError(f"{redact_location(plain)}: cannot reach Redis ({e})") from e
        # The batch scripts run on a client of their own that waits for their answer: a script
        # runs to its end once started, so a client that gave up after the driver's default
        # socket timeout (5 s) would report as failed a batch that is in the index.
        self.w = redis.Redis.from_url(
            plain,
            **({} if password is None else {"password": password}),
            socket_timeout=SCRIPT_SECONDS,
        )
        self._reserve = self.w.register_script(_RESERVE)
        self._stage = self.w.register_script(_STAGE)
        self._unstage = self.w.register_script(_UNSTAGE)
        self._unbands = self.w.register_script(_UNBANDS)
        self._commit = self.w.register_script(_COMMIT)
        self._delete = self.w.register_script(_DELETE)
        self._probe = self.r.register_script(_PROBE)
        self._counts = self.r.register_script(_COUNTS)
        self._fields = self.r.register_script(_FIELDS)
        self._lock_timeout = lock_timeout

    def _k(self, *parts: Any) -> str:
        return ":".join([self.prefix, *map(str, parts)])

    def read_meta(self):
        meta = self.r.hgetall(self._k("meta"))
        if b"params" not in meta:
            return None
        return {
            "format_version": int(meta.get(b"format_version", b"0")),
            "params": json.loads(meta[b"params"]),
        }

    def write_meta(self, meta):
        self.r.hset(
            self._k("meta"),
            mapping={
                "format_version": str(meta["format_version"]),
                "params": json.dumps(meta["params"], sort_keys=True),
            },
        )

    def insert(self, docs: Sequence[StoredDoc]) -> None:
        if not docs:
            return
        ids = [d.id for d in docs]
        check_batch_ids(ids)
        status, detail = self._reserve(args=[self.prefix, *ids])
        if status == b"dup":
            raise DuplicateIdError(detail.decode())
        first = int(detail) - len(docs) + 1
        keys = [" ".join(map(str, d.keys.tolist())) for d in docs]
        # the staging scripts go in one pipeline: the writer does not wait for each answer
        # (on a busy machine, a round trip a script made a batch wait for its own process to be
        # scheduled again 125 times), and Redis still serves other clients between them
        pipe = self.w.pipeline(transaction=False)
        for lo in range(0, len(docs), BAND_DOCS):
            args: list[Any] = [self.prefix]
            for i in range(lo, min(lo + BAND_DOCS, len(docs))):
                d = docs[i]
                args += [
                    first + i,
                    d.id,
                    d.text or "",
                    "0" if d.text is None else "1",
                    d.shingles.astype("<u4", copy=False).tobytes(),
                    keys[i],
                ]
            self._stage(args=args, client=pipe)
        try:
            pipe.execute()
        except BaseException:
            self._take_back(first, keys)
            raise
        commit: list[Any] = [self.prefix]
        for i, d in enumerate(docs):
            commit += [d.id, first + i]
        # not taken back when the commit's answer is lost: it may have been carried out
        status, detail = self._commit(args=commit)
        if status == b"dup":  # added by another client since the reservation
            self._take_back(first, keys)
            raise DuplicateIdError(detail.decode())

    def _take_back(self, first: int, keys: list[str]) -> None:
        """Delete the staged documents of a batch that was not committed, and their band
        keys (best effort: a Redis out of reach leaves them, and no reader returns them)."""
        try:
            pipe = self.w.pipeline(transaction=False)
            for lo in range(0, len(keys), BAND_DOCS):
                hi = min(lo + BAND_DOCS, len(keys))
                self._unstage(
                    args=[self.prefix, *(v for i in range(lo, hi) for v in (first + i, keys[i]))],
                    client=pipe,
                )
            pipe.execute()
        except self._redis_mod.RedisError:
            pass

    def delete(self, ids):
        if not ids:
            return []
        got = self._delete(args=[self.prefix, *ids])
        gone = [x for x in got if x != 0]
        pipe = self.w.pipeline(transaction=False)
        for lo in range(0, len(gone), BAND_DOCS):
            self._unbands(
                args=[
                    self.prefix,
                    *(v for h, keys in gone[lo : lo + BAND_DOCS] for v in (h, keys)),
                ],
                client=pipe,
            )
        pipe.execute()
        return [x != 0 for x in got]

    def _holdings(self, keys, cap) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``cap`` holders of each key: how many were read of each key, and the handles
        (those of the first key first)."""
        keys = np.asarray(keys, np.uint64)
        if not len(keys):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        counts, members = self._probe(args=[self.prefix, int(cap), *keys.tolist()])
        return (np.fromstring(counts, np.int64, sep=" "), np.fromstring(members, np.int64, sep=" "))

    def candidates(self, keys, cap):
        return list(dict.fromkeys(self._holdings(keys, cap)[1].tolist()))

    def holders(self, keys, cap):
        counts, handles = self._holdings(keys, cap)
        return np.repeat(np.arange(len(counts), dtype=np.int64), counts), handles

    def holder_counts(self, keys, cap):
        keys = np.asarray(keys, np.uint64)
        if not len(keys):
            return np.zeros(0, np.int64)
        got = self._counts(args=[self.prefix, *keys.tolist()])
        return np.minimum(np.asarray(got, np.int64), cap)

    def _documents(self, handles, field: str) -> list[tuple[bytes, Any]]:
        """``(id, field)`` of each handle whose document is stored."""
        if not len(handles):
            return []
        got = self._fields(args=[self.prefix, field, *map(int, handles)])
        return [(got[i], got[i + 1]) for i in range(0, len(got), 2) if got[i] is not None]

    def texts_of(self, handles):
        # text: bytes as stored (None if not kept)
        return [(doc_id.decode(), text) for doc_id, text in self._documents(handles, "text")]

    def shingles(self, handles):
        return [
            (doc_id.decode(), np.frombuffer(sh, "<u4"))
            for doc_id, sh in self._documents(handles, "sh")
        ]

    def get(self, doc_id):
        h = self.r.hget(self._k("ids"), doc_id)
        if h is None:
            return None
        doc_id_b, text, sh = self.r.hmget(self._k("d", int(h)), "id", "text", "sh")
        if doc_id_b is None:
            return None
        return {
            "id": doc_id,
            "text": text,  # bytes as stored; Index decodes them
            "shingles": np.frombuffer(sh, "<u4"),
        }

    def get_texts(self, ids):
        ids = list(ids)
        if not ids:
            return {}
        handles = self.r.hmget(self._k("ids"), ids)
        pipe = self.r.pipeline(transaction=False)
        present = [(i, h) for i, h in zip(ids, handles) if h is not None]
        for _, h in present:
            pipe.hget(self._k("d", int(h)), "text")
        return {i: t for (i, _), t in zip(present, pipe.execute())}  # bytes as stored

    def contains(self, doc_id):
        return bool(self.r.hexists(self._k("ids"), doc_id))

    def count(self):
        return int(self.r.hlen(self._k("ids")))

    def iter_ids(self):
        for doc_id, _ in self.r.hscan_iter(self._k("ids")):
            yield doc_id.decode()

    def list_ids(self, after, limit):
        # ids are members of a sorted set with equal scores: ordered by their UTF-8 bytes,
        # which is code-point order
        lo = "-" if after is None else b"(" + after.encode()
        got = self.r.zrangebylex(self._k("order"), lo, "+", start=0, num=limit)
        return [x.decode() for x in got]

    @contextmanager
    def exclusive(self):
        # the lock holds a random owner token (only its owner releases it) and expires after
        # lock_timeout seconds, so that a client killed while holding it blocks the others for
        # that long at most; what it guards (a check and an insert) takes milliseconds
        lock = self.r.lock(
            self._k("lock"), timeout=self._lock_timeout, blocking_timeout=2 * self._lock_timeout
        )
        if not lock.acquire():
            from .storage import IndexBusyError

            raise IndexBusyError(
                f"{redact_location(self.url)}: the index lock "
                f"{self._k('lock')} was held by another client for "
                f"{2 * self._lock_timeout:g} s; try again"
            )
        try:
            yield
        finally:
            try:
                lock.release()
            except self._redis_mod.exceptions.LockError:
                pass

    def stats(self):
        return {**super().stats(), "url": redact_location(self.url), "prefix": self.prefix}

    def drop(self) -> int:
        """Delete every key of this index (for tests and for starting over)."""
        n = 0
        for key in self.r.scan_iter(match=f"{self.prefix}:*", count=1000):
            n += self.r.delete(key)
        return n

    def close(self):
        self.r.close()
        self.w.close()
