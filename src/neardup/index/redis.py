"""The Redis backend: one index shared by several processes or hosts.

Layout under a key prefix (``redis://host:6379/0?prefix=shop``, default prefix ``neardup``):
``{p}:meta`` (hash: format version, parameters), ``{p}:ids`` (hash: id -> handle),
``{p}:next`` (handle counter), ``{p}:order`` (ids, for paging), ``{p}:d:{handle}`` (hash: id, text, shingles, band keys) and
``{p}:b:{key}`` (set of handles per band key). Inserts and removals run as Lua scripts, which
Redis executes atomically: a batch is stored whole or, if an id is already present, not at all
(its band keys are added by scripts of ``BAND_DOCS`` documents before the documents are stored
at once, and taken back after a removal, so that no script holds Redis for long; see
``_RESERVE``).
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
# passages adds ~73,000 set members, 0.36 s of the server):
# 1. _RESERVE: none of the ids is present (else nothing is done), and the batch's handles are
#    taken from the counter (never given again);
# 2. _BANDS, a script per BAND_DOCS documents: the band keys point to the new handles. Readers
#    that meet a handle whose document is not stored yet leave it out;
# 3. _COMMIT: none of the ids is present still (another client may have added one meanwhile:
#    then the band keys are taken back with _UNBANDS and nothing is stored), and the documents
#    are stored and their ids named, at once.
# A client killed between the steps leaves band keys of handles without a document, which no
# reader returns.
_RESERVE = """
local p = ARGV[1]
for i = 2, #ARGV do
  if redis.call('HEXISTS', p .. ':ids', ARGV[i]) == 1 then return {'dup', ARGV[i]} end
end
return {'ok', tostring(redis.call('INCRBY', p .. ':next', #ARGV - 1))}
"""

# ARGV: prefix, then handle and its band keys (separated by spaces) for each document; the
# handle is added to (SADD) or taken from (SREM) the set of each of its keys
_BAND_KEYS = """
local p = ARGV[1]
for i = 2, #ARGV, 2 do
  for k in string.gmatch(ARGV[i + 1], '%S+') do
    redis.call('COMMAND', p .. ':b:' .. k, ARGV[i])
  end
end
return 1
"""
_BANDS = _BAND_KEYS.replace("COMMAND", "SADD")
_UNBANDS = _BAND_KEYS.replace("COMMAND", "SREM")

_COMMIT = """
local p = ARGV[1]
local n = tonumber(ARGV[2])
local h0 = tonumber(ARGV[3])
for i = 0, n - 1 do
  local id = ARGV[4 + i * 5]
  if redis.call('HEXISTS', p .. ':ids', id) == 1 then return {'dup', id} end
end
for i = 0, n - 1 do
  local o = 4 + i * 5
  local id = ARGV[o]
  local h = h0 + i
  redis.call('HSET', p .. ':ids', id, h)
  redis.call('ZADD', p .. ':order', 0, id)
  local dk = p .. ':d:' .. h
  redis.call('HSET', dk, 'id', id, 'sh', ARGV[o + 3], 'keys', ARGV[o + 4])
  if ARGV[o + 2] == '1' then redis.call('HSET', dk, 'text', ARGV[o + 1]) end
end
return {'ok', tostring(n)}
"""

#: documents whose band keys one script adds (~10 ms of the server with passages)
BAND_DOCS = 32

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

    def __init__(self, url: str, *, prefix: str | None = None, lock_timeout: float = 5.0,
                 password: str | None = None):
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
                raise ConfigError(f"{redact_location(plain)}: the Redis password is given "
                                  "twice, in the URL and apart from it; give it once")
            if not isinstance(password, str) or not password:
                raise ConfigError("password: a non-empty string")
        try:
            self.r = redis.Redis.from_url(plain, **({} if password is None
                                                    else {"password": password}))
            self.r.ping()
        except (redis.RedisError, ValueError) as e:
            # the message names the server, never its password
            raise OutputError(f"{redact_location(plain)}: cannot reach Redis ({e})") from e
        # The batch scripts run on a client of their own that waits for their answer: a script
        # runs to its end once started, so a client that gave up after the driver's default
        # socket timeout (5 s) would report as failed a batch that is in the index.
        self.w = redis.Redis.from_url(plain, **({} if password is None
                                                else {"password": password}),
                                      socket_timeout=SCRIPT_SECONDS)
        self._reserve = self.w.register_script(_RESERVE)
        self._bands = self.w.register_script(_BANDS)
        self._unbands = self.w.register_script(_UNBANDS)
        self._commit = self.w.register_script(_COMMIT)
        self._delete = self.w.register_script(_DELETE)
        self._lock_timeout = lock_timeout

    def _k(self, *parts: Any) -> str:
        return ":".join([self.prefix, *map(str, parts)])

    def read_meta(self):
        meta = self.r.hgetall(self._k("meta"))
        if b"params" not in meta:
            return None
        return {"format_version": int(meta.get(b"format_version", b"0")),
                "params": json.loads(meta[b"params"])}

    def write_meta(self, meta):
        self.r.hset(self._k("meta"), mapping={
            "format_version": str(meta["format_version"]),
            "params": json.dumps(meta["params"], sort_keys=True)})

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
        bands = [[self.prefix, *(x for i in range(lo, min(lo + BAND_DOCS, len(docs)))
                                 for x in (first + i, keys[i]))]
                 for lo in range(0, len(docs), BAND_DOCS)]
        for args in bands:
            self._bands(args=args)
        commit: list[Any] = [self.prefix, len(docs), first]
        for d, k in zip(docs, keys):
            commit += [d.id, d.text or "", "0" if d.text is None else "1",
                       d.shingles.astype("<u4", copy=False).tobytes(), k]
        status, detail = self._commit(args=commit)
        if status == b"dup":  # added by another client since the reservation
            for args in bands:
                self._unbands(args=args)
            raise DuplicateIdError(detail.decode())

    def delete(self, ids):
        if not ids:
            return []
        got = self._delete(args=[self.prefix, *ids])
        gone = [x for x in got if x != 0]
        for lo in range(0, len(gone), BAND_DOCS):
            self._unbands(args=[self.prefix, *(v for h, keys in gone[lo:lo + BAND_DOCS]
                                               for v in (h, keys))])
        return [x != 0 for x in got]

    def candidates(self, keys, cap):
        pipe = self.r.pipeline(transaction=False)
        for k in np.asarray(keys, np.uint64).tolist():
            pipe.srandmember(self._k("b", k), cap)
        out: dict[int, None] = {}
        for members in pipe.execute():
            for h in members:
                out[int(h)] = None
        return list(out)

    def holders(self, keys, cap):
        pipe = self.r.pipeline(transaction=False)
        for k in np.asarray(keys, np.uint64).tolist():
            pipe.srandmember(self._k("b", k), cap)
        pos: list[int] = []
        got: list[int] = []
        for j, members in enumerate(pipe.execute()):
            pos += [j] * len(members)
            got += [int(h) for h in members]
        return np.asarray(pos, np.int64), np.asarray(got, np.int64)

    def holder_counts(self, keys, cap):
        pipe = self.r.pipeline(transaction=False)
        for k in np.asarray(keys, np.uint64).tolist():
            pipe.scard(self._k("b", k))
        return np.minimum(np.asarray(pipe.execute(), np.int64).reshape(-1), cap)

    def texts_of(self, handles):
        pipe = self.r.pipeline(transaction=False)
        for h in handles:
            pipe.hmget(self._k("d", h), "id", "text")
        return [(doc_id.decode(), text) for doc_id, text in pipe.execute()
                if doc_id is not None]  # text: bytes as stored (None if not kept)

    def shingles(self, handles):
        pipe = self.r.pipeline(transaction=False)
        for h in handles:
            pipe.hmget(self._k("d", h), "id", "sh")
        out = []
        for doc_id, sh in pipe.execute():
            if doc_id is not None:
                out.append((doc_id.decode(), np.frombuffer(sh, "<u4")))
        return out

    def get(self, doc_id):
        h = self.r.hget(self._k("ids"), doc_id)
        if h is None:
            return None
        doc_id_b, text, sh = self.r.hmget(self._k("d", int(h)), "id", "text", "sh")
        if doc_id_b is None:
            return None
        return {"id": doc_id, "text": text,  # bytes as stored; Index decodes them
                "shingles": np.frombuffer(sh, "<u4")}

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
        lock = self.r.lock(self._k("lock"), timeout=self._lock_timeout,
                           blocking_timeout=2 * self._lock_timeout)
        if not lock.acquire():
            from .storage import IndexBusyError

            raise IndexBusyError(f"{redact_location(self.url)}: the index lock "
                                 f"{self._k('lock')} was held by another client for "
                                 f"{2 * self._lock_timeout:g} s; try again")
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
