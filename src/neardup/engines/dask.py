"""The dedup job on a Dask cluster: the local engine's stages, run per partition on workers.

Results are those of :func:`neardup.job.dedup_files` on the same inputs and parameters: the same
clusters (labels included), representatives, similarities and pairs. Only the orchestration
differs; every stage calls the local engine's pure functions (``normalize``, ``fingerprints``,
``FingerprintTable``, ``shingle_sketch``, ``band_keys``, ``candidates_from_keys``,
``sort_unique_segments``/``overlap_pairs``, ``connected_components``/``strict_clusters``,
``preference_rank``). The stages, with P partitions (and P shuffle buckets):

1. **Read** each partition on a worker with the same reader (an input file; a directory of text
   files; or a byte range of an uncompressed JSONL file, aligned to lines, ~``partition_docs``
   records). Normalise, fingerprint and shingle+sketch the first copy of each text *within the
   partition*; keep the band keys and the 32-bit shingle fingerprints per distinct text, on the
   worker. Row numbers need the records of all earlier partitions: each partition counts its
   valid records while it reads, and the client turns the counts into global row offsets that
   the later stages take as arguments (no second read, no guessing). Errors come back as values,
   so the client raises the one the local engine would raise first (global record order).
2. **Ids**: repeated ids across partitions are found by shuffling ``(id, partition, row)`` by a
   hash of the id.
3. **Exact groups**: ``(fingerprint, first row, copies)`` of each distinct text of each partition
   is shuffled by fingerprint; the bucket finds the global first row of each text (the local
   engine's group) and sends it back. A text is identified by its global first row everywhere
   after this (its order is the local engine's group order).
4. **LSH**: ``(band, key, row)`` of every global-first text is shuffled by a hash of (band, key)
   — the key masked to the bits the local engine compares — so equal keys meet; a bucket sorts
   each band and emits pairs within runs with :func:`~neardup.lsh.candidates_from_keys` (the same
   bucket cap: a run over the cap is a star around its first row). Pairs go to the partition
   that holds their left text.
5. **Verify next to the data**: each partition asks the owners of the right texts for their
   shingle sets (only those), computes exact Jaccard and keeps pairs over the threshold.
6. **Cluster**: the verified pairs (and, per text in them, its length and fingerprint for
   ``keep``) are gathered on the client for union-find or strict clustering — the one step that
   is not distributed; it scales with the verified pairs, not with the corpus. For connected
   components each member's similarity to its representative is computed like step 5. The
   cluster map (texts in verified pairs -> representative) is broadcast to the partitions.
7. **Write**: each partition labels its rows (labels by first appearance need a prefix sum of
   "new" rows per partition and one more small broadcast), returns its rows of ``clusters`` and
   its pairs, which the client streams into one ``clusters.parquet`` / ``pairs.parquet`` in row
   order, one partition at a time; each partition re-reads its input and writes the kept
   documents to ``deduplicated/part-NNNNN.parquet`` (columns ``id``, ``text``).

Growth. With N documents, P partitions and B bands: reading, sketching and verification are
O(N/P) per partition and parallel. The band-key shuffle moves B * U * 16 bytes (U distinct texts)
in P * P pieces, the exact-group shuffle ~40 bytes per distinct text of each partition; the
shingle shuffle moves only the sets of right texts held elsewhere, O(candidates). The client
holds the verified pairs and the per-partition counts, and streams the output tables; tasks per
shuffle are P * P small ``getitem`` tasks plus P reducers, so P in the hundreds is the
practical range for now.

Assumptions: inputs and ``outdir`` are on a file system every worker sees (a shared disk, or a
``LocalCluster``). ``verify="estimate"`` is not supported yet (exact verification only).
A text repeated in two partitions is sketched in both (the second sketch is dropped after the
exact-group stage). Textdir ids and row-number ids of other inputs are not cross-checked for
collisions across partitions (the local engine does; it needs a file named like a row number).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..cluster import connected_components, preference_rank, strict_clusters
from ..config import DedupConfig
from ..errors import ConfigError, InputError
from ..exact import FingerprintTable, fingerprints
from ..io import OUTPUT_FORMATS, SkipReport, read_documents, total_input_bytes, write_json_atomic
from ..io.readers import _SUFFIX_FORMATS, _make_stream, _split_compression, _utf8_len
from ..io.writers import _arrow_table, _Staged, _write_jsonl_table
from ..job import _NoProgress, _prepare_outdir
from ..lsh import CandidateStats, band_keys, candidates_from_keys, lsh_params, s_curve
from ..result import METHOD_NAMES
from ..sketch import shingle_sketch
from ..text.normalize import normalize
from ..verify import overlap_pairs, sort_unique_segments

_CHUNK = 10_000
_FINGERPRINT, _JACCARD = METHOD_NAMES.index("fingerprint"), METHOD_NAMES.index("jaccard")


# ---------------------------------------------------------------------------------------------
# Partitions and what a worker keeps of one


@dataclass(frozen=True)
class _Spec:
    """One partition: a whole input (``start == 0, end is None``) or a byte range of one."""

    path: str
    fmt: str | None
    start: int = 0
    end: int | None = None
    split: bool = False  # a range of a split JSONL file (the file's first range included)


@dataclass
class _PartData:
    """A partition after reading: per row (``n``) and per distinct text of the partition (G)."""

    n: int
    ids: list[str] | None          # None: ids are the global row numbers
    lines: np.ndarray              # int64[n], the record's line (row, file number) in its file
    tbytes: np.ndarray             # int64[n], UTF-8 bytes of each text
    lgroup: np.ndarray             # int64[n], the row's distinct text, -1 for an empty text
    glen: np.ndarray               # int64[G], normalised length
    ghi: np.ndarray                # uint64[G], fingerprint high and low halves
    glo: np.ndarray
    keys: np.ndarray               # uint64[bands, G]
    sh: np.ndarray                 # uint32[total], shingle fingerprints, unsorted
    shoff: np.ndarray              # int64[G+1]
    fmt: str = ""
    name: str = ""
    paths: list[str] | None = None  # textdir: each record's file path
    error: tuple[int, InputError] | None = None
    skips: list[tuple[int, int, str]] = field(default_factory=list)  # (pos, seq, message)
    skip_counts: dict[str, int] = field(default_factory=dict)
    records: int = 0               # records seen, valid or not (for the empty-file check)


class _PosReport(SkipReport):
    """A skip report that remembers where in the partition each skip happened."""

    def __init__(self) -> None:
        super().__init__()
        self.stream: Any = None
        self.pos: list[tuple[int, int, str]] = []

    def add(self, err: InputError) -> None:
        super().add(err)
        if len(self.pos) < 20:
            self.pos.append((self.stream.count, len(self.pos), str(err)))


def _open_stream(spec: _Spec, read_opts: dict, report: SkipReport, first_line: int):
    stream = _make_stream([spec.path], report=report, chunk_size=_CHUNK, **read_opts)
    if spec.split:
        src = stream.sources[0]
        src.start, src.end, src.first_line, src.whole = spec.start, spec.end, first_line, False
    return stream


def _set_threads(threads: int | None) -> None:
    if threads:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))


def _read_partition(spec: _Spec, read_opts: dict, cfg: DedupConfig, bands: int, rows: int,
                    auto_ids: bool, threads: int | None, line_counts: list[int]) -> _PartData:
    """Read one partition and run normalise, fingerprint and shingle+sketch on it."""
    _set_threads(threads)
    report = _PosReport()
    stream = _open_stream(spec, read_opts, report, sum(line_counts))
    report.stream = stream
    fail = read_opts["on_error"] == "fail"
    table = FingerprintTable()
    ids: list[str] = []
    lines: list[int] = []
    tbytes: list[int] = []
    paths: list[str] | None = [] if stream.sources[0].fmt == "textdir" else None
    lgroup, glen, ghi, glo, keys, shs, sizes = [], [], [], [], [], [], []
    texts: list[str] = []
    error = None

    def flush() -> None:
        batch = normalize(texts, cfg.normalize)
        hi, lo = fingerprints(batch.data, batch.offsets)
        empty = batch.offsets[1:] == batch.offsets[:-1]
        group, first = table.add(hi, lo, skip=empty)
        docs = np.flatnonzero(first).astype(np.int64)
        lgroup.append(group)
        glen.append(batch.lengths[docs])
        ghi.append(hi[docs])
        glo.append(lo[docs])
        sigs, h32, off = shingle_sketch(batch, cfg.shingle, cfg.sketch, docs)
        keys.append(band_keys(sigs, bands, rows))
        shs.append(h32)
        sizes.append(np.diff(off))
        texts.clear()

    try:
        for rec in stream:
            ids.append(rec.id)
            lines.append(rec.line)
            tbytes.append(_utf8_len(rec.text))
            if paths is not None:
                paths.append(str(rec.raw))
            texts.append(rec.text)
            if len(texts) >= _CHUNK:
                flush()
    except InputError as e:
        if not fail:
            raise
        error = (stream.count, e)
    if texts or not lgroup:
        flush()
    n = len(ids)
    sizes_all = np.concatenate(sizes)
    shoff = np.zeros(len(sizes_all) + 1, np.int64)
    np.cumsum(sizes_all, out=shoff[1:])
    return _PartData(
        n=n, ids=None if auto_ids else ids, lines=np.asarray(lines, np.int64),
        tbytes=np.asarray(tbytes, np.int64), lgroup=np.concatenate(lgroup).astype(np.int64),
        glen=np.concatenate(glen).astype(np.int64), ghi=np.concatenate(ghi),
        glo=np.concatenate(glo), keys=np.concatenate(keys, axis=1), sh=np.concatenate(shs),
        shoff=shoff, fmt=stream.sources[0].fmt, name=stream.sources[0].name, paths=paths,
        error=error, skips=report.pos, skip_counts=dict(report.counts),
        records=n + report.total + (error is not None))


def _dup_messages(client, data, dups, id_field, sub) -> list[InputError]:
    """The reader's error for each repeated id ``(p, row, first p, first row, id)``."""
    need: dict[int, set[int]] = {}
    for p, i, fp, fi, _x in dups:
        need.setdefault(p, set()).add(i)
        need.setdefault(fp, set()).add(fi)
    locs = {}
    for p, idx in need.items():
        idx_l = sorted(idx)
        res = client.gather(sub(_locate, data[p], idx_l, name="locate", i=p))
        locs.update({(p, i): r for i, r in zip(idx_l, res)})
    out = []
    for p, i, fp, fi, x in dups:
        _, path, line = locs[(p, i)]
        out.append(InputError(f"duplicate id {x!r} (first seen at {locs[(fp, fi)][0]})",
                              path=path, line=line, field=id_field, reason="duplicate_id"))
    return out


def _info(d: _PartData) -> dict:
    return {"n": d.n, "error": d.error, "skips": d.skips, "skip_counts": d.skip_counts,
            "records": d.records}


def _count_lines(path: str, start: int, end: int) -> int:
    """Newlines in bytes [start, end) of a file."""
    count = 0
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            block = f.read(min(left, 1 << 24))
            if not block:
                break
            count += block.count(b"\n")
            left -= len(block)
    return count


def _locate(d: _PartData, idx: list[int]) -> list[tuple[str, str, int | None]]:
    """For rows of a partition (before drops): where the reader says a record is, and the path
    and line an error about it names."""
    out = []
    for i in idx:
        line = int(d.lines[i])
        if d.fmt == "textdir":
            p = d.paths[i]
            out.append((p, p, None))
        elif d.fmt == "parquet":
            out.append((f"{d.name}: row {line}", d.name, line))
        else:
            out.append((f"{d.name}:{line}", d.name, line))
    return out


def _drop(d: _PartData, idx: np.ndarray) -> _PartData:
    """The partition without the rows ``idx`` (ids repeated from earlier partitions)."""
    keep = np.ones(d.n, bool)
    keep[idx] = False
    k = np.flatnonzero(keep)
    return replace(d, n=len(k), ids=None if d.ids is None else [d.ids[i] for i in k],
                   lines=d.lines[k], tbytes=d.tbytes[k], lgroup=d.lgroup[k],
                   paths=None if d.paths is None else [d.paths[i] for i in k])


def _hash_str(s: str) -> int:
    from xxhash import xxh3_64_intdigest

    return xxh3_64_intdigest(s.encode("utf-8", "surrogatepass"))


def _id_map(d: _PartData, S: int) -> tuple:
    ids = d.ids or []
    h = np.fromiter((_hash_str(x) for x in ids), np.uint64, len(ids)) % np.uint64(S)
    out = []
    for s in range(S):
        idx = np.flatnonzero(h == s)
        out.append((idx, [ids[i] for i in idx]))
    return tuple(out)


def _id_reduce(*parts) -> list[tuple[int, int, int, int, str]]:
    """Ids seen in an earlier partition: ``(p, row, first p, first row, id)``."""
    first: dict[str, tuple[int, int]] = {}
    dups = []
    for p, (idx, ids) in enumerate(parts):
        for i, x in zip(idx.tolist(), ids):
            prev = first.setdefault(x, (p, i))
            if prev[0] != p:
                dups.append((p, i, prev[0], prev[1], x))
    return dups


# ---------------------------------------------------------------------------------------------
# Exact groups


@dataclass
class _Grouped:
    """A partition with its distinct texts tied to the global ones (the local engine's groups,
    named by their first global row)."""

    d: _PartData
    offset: int
    gfirst: np.ndarray    # int64[G], global first row of the text, -1 if no row uses it
    gtotal: np.ndarray    # int64[G], copies in the whole corpus
    gfirst_id: list[str | None]
    is_first: np.ndarray  # bool[G], this partition holds the global first row

    def row_ids(self, rows: np.ndarray) -> list[str]:
        """Ids of local rows."""
        if self.d.ids is None:
            return [str(self.offset + int(r)) for r in rows]
        return [self.d.ids[int(r)] for r in rows]


def _fp_entries(d: _PartData, offset: int):
    valid = d.lgroup >= 0
    rows = np.flatnonzero(valid)
    g = d.lgroup[valid]
    used, at = np.unique(g, return_index=True)
    cnt = np.bincount(g, minlength=len(d.ghi))[used]
    first = rows[at]
    return used, first, cnt


def _fp_map(d: _PartData, offset: int, S: int) -> tuple:
    used, first, cnt = _fp_entries(d, offset)
    bucket = d.glo[used] % np.uint64(S)
    ids = (None if d.ids is None else d.ids)
    out = []
    for s in range(S):
        m = np.flatnonzero(bucket == s)
        rows = first[m]
        out.append((d.ghi[used[m]], d.glo[used[m]], offset + rows, cnt[m],
                    [str(offset + int(r)) for r in rows] if ids is None
                    else [ids[int(r)] for r in rows]))
    return tuple(out)


def _fp_reduce(*parts) -> dict:
    """Global first row, copies and first id of each text in the bucket, sent back to the
    partitions its entries came from (in their order)."""
    P = len(parts)
    hi = np.concatenate([p[0] for p in parts])
    lo = np.concatenate([p[1] for p in parts])
    row = np.concatenate([p[2] for p in parts])
    cnt = np.concatenate([p[3] for p in parts])
    ids = [x for p in parts for x in p[4]]
    src_len = [len(p[0]) for p in parts]
    m = len(hi)
    first_row = np.empty(m, np.int64)
    total = np.empty(m, np.int64)
    first_id: list[str] = [""] * m
    order = np.lexsort((row, lo, hi))
    if m:
        h, l_ = hi[order], lo[order]
        start = np.flatnonzero(np.concatenate(([True], (h[1:] != h[:-1]) | (l_[1:] != l_[:-1]))))
        run = np.cumsum(np.isin(np.arange(m), start)) - 1
        head = order[start]
        tot = np.add.reduceat(cnt[order], start)
        first_row[order] = row[head][run]
        total[order] = tot[run]
        for j, i in enumerate(order.tolist()):
            first_id[i] = ids[head[run[j]]]
        groups = (row[head], tot)
    else:
        groups = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    back, a = [], 0
    for p in range(P):
        b = a + src_len[p]
        back.append((first_row[a:b], total[a:b], first_id[a:b]))
        a = b
    return {"back": tuple(back), "groups": groups}


def _fp_apply(d: _PartData, offset: int, S: int, *backs) -> _Grouped:
    used, first, cnt = _fp_entries(d, offset)
    bucket = d.glo[used] % np.uint64(S)
    G = len(d.ghi)
    gfirst = np.full(G, -1, np.int64)
    gtotal = np.zeros(G, np.int64)
    gid: list[str | None] = [None] * G
    for s in range(S):
        m = used[bucket == s]
        fr, tot, fid = backs[s]
        gfirst[m] = fr
        gtotal[m] = tot
        for g, x in zip(m.tolist(), fid):
            gid[g] = x
    is_first = np.zeros(G, bool)
    is_first[used] = gfirst[used] == offset + first
    return _Grouped(d, offset, gfirst, gtotal, gid, is_first)


def _grouped_info(gd: _Grouped) -> dict:
    d = gd.d
    f = np.flatnonzero(gd.is_first)
    return {"distinct": len(f), "empty": int(np.count_nonzero(d.lgroup < 0)),
            "text_bytes": int(d.tbytes.sum()), "shingles": int((d.shoff[f + 1] - d.shoff[f]).sum())}


# ---------------------------------------------------------------------------------------------
# LSH: band keys shuffled by key


def _get(x: Any, *keys: Any) -> Any:
    for k in keys:
        x = x[k]
    return x


def _owner(offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.searchsorted(offsets, rows, side="right") - 1


def _band_map(gd: _Grouped, S: int, idbits: int) -> tuple:
    f = np.flatnonzero(gd.is_first)
    rows = gd.gfirst[f]
    mask = ~np.uint64((1 << idbits) - 1)
    parts: list[list[tuple]] = [[] for _ in range(S)]
    for b in range(gd.d.keys.shape[0]):
        k = gd.d.keys[b, f] & mask
        bucket = ((k >> np.uint64(33)) + np.uint64(b) * np.uint64(2654435761)) % np.uint64(S)
        for s in range(S):
            m = bucket == s
            parts[s].append((b, k[m], rows[m]))
    return tuple(parts)


def _band_reduce(cap: int, offsets: np.ndarray, *parts) -> dict:
    """Candidate pairs of the band keys of one bucket, routed to the owner of their left row."""
    P = len(offsets) - 1
    stats = CandidateStats(bucket_cap=cap)
    by_band: dict[int, list[tuple]] = {}
    for part in parts:
        for b, k, r in part:
            by_band.setdefault(b, []).append((k, r))
    ls, rs = [], []
    for b in sorted(by_band):
        k = np.concatenate([x[0] for x in by_band[b]])
        r = np.concatenate([x[1] for x in by_band[b]])
        if len(k) < 2:
            continue
        order = np.argsort(r, kind="stable")  # the star centre of a capped run: its first row
        k, r = k[order], r[order]
        left, right, st = candidates_from_keys([k], cap, overwrite=True)
        stats.raw_pairs += st.raw_pairs
        stats.capped_buckets += st.capped_buckets
        stats.capped_bucket_docs += st.capped_bucket_docs
        stats.largest_bucket = max(stats.largest_bucket, st.largest_bucket)
        ls.append(r[left])
        rs.append(r[right])
    left = np.concatenate(ls) if ls else np.zeros(0, np.int64)
    right = np.concatenate(rs) if rs else np.zeros(0, np.int64)
    left, right = _unique_pairs(left, right)
    own = _owner(offsets, left)
    pairs = tuple((left[own == p], right[own == p]) for p in range(P))
    return {"stats": stats, "pairs": pairs}


def _unique_pairs(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(left) == 0:
        return left.astype(np.int64), right.astype(np.int64)
    order = np.lexsort((right, left))
    left, right = left[order], right[order]
    keep = np.concatenate(([True], (left[1:] != left[:-1]) | (right[1:] != right[:-1])))
    return left[keep], right[keep]


# ---------------------------------------------------------------------------------------------
# Similarity of pairs, next to the data


def _sets(gd: _Grouped, local_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted shingle sets of local rows as a compact CSR ``(hashes, offsets)``."""
    d = gd.d
    g = d.lgroup[local_rows]
    starts, ends = d.shoff[g], d.shoff[g + 1]
    sizes = ends - starts
    off = np.zeros(len(g) + 1, np.int64)
    np.cumsum(sizes, out=off[1:])
    h = d.sh[np.repeat(starts - off[:-1], sizes) + np.arange(off[-1])]  # a copy: sorted below
    end = sort_unique_segments(h, off, np.arange(len(g), dtype=np.int64))
    usz = end - off[:-1]
    uoff = np.zeros(len(g) + 1, np.int64)
    np.cumsum(usz, out=uoff[1:])
    return h[np.repeat(off[:-1] - uoff[:-1], usz) + np.arange(uoff[-1])], uoff


def _meta(gd: _Grouped, local_rows: np.ndarray) -> tuple:
    g = gd.d.lgroup[local_rows]
    return (gd.d.glen[g], gd.d.ghi[g], gd.row_ids(local_rows), gd.gtotal[g])


def _sim_prepare(gd: _Grouped, offsets: np.ndarray, *parts) -> dict:
    P = len(offsets) - 1
    left = np.concatenate([p[0] for p in parts] or [np.zeros(0, np.int64)])
    right = np.concatenate([p[1] for p in parts] or [np.zeros(0, np.int64)])
    left, right = _unique_pairs(left, right)
    own = _owner(offsets, right)
    here = _owner(offsets, np.asarray([gd.offset]))[0] if gd.d.n else -1
    req = tuple(np.unique(right[own == q]) if q != here else np.zeros(0, np.int64)
                for q in range(P))
    return {"pairs": (left, right), "req": req}


def _sim_export(gd: _Grouped, *reqs) -> tuple:
    out = []
    for rows in reqs:
        local = rows - gd.offset
        h, off = _sets(gd, local)
        out.append((rows, h, off, _meta(gd, local)))
    return tuple(out)


def _sim_run(gd: _Grouped, thr: float | None, prep: dict, *imports) -> dict:
    """Exact Jaccard of this partition's pairs (over ``thr`` if given), with the length,
    fingerprint, id and copies of every text in a kept pair."""
    left, right = prep["pairs"]
    lo, hi = gd.offset, gd.offset + gd.d.n
    need = np.unique(np.concatenate([left, right]))
    mine = need[(need >= lo) & (need < hi)]
    h0, off0 = _sets(gd, mine - lo)
    meta0 = _meta(gd, mine - lo)
    rows = [mine] + [x[0] for x in imports]
    hs = [h0] + [x[1] for x in imports]
    offs = [off0] + [x[2] for x in imports]
    metas = [meta0] + [x[3] for x in imports]
    allrows = np.concatenate(rows)
    sizes = np.concatenate([np.diff(o) for o in offs])
    off = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=off[1:])
    h = np.concatenate(hs) if hs else np.zeros(0, np.uint32)
    order = np.argsort(allrows)
    srows = allrows[order]
    li = order[np.searchsorted(srows, left)]
    ri = order[np.searchsorted(srows, right)]
    sim = overlap_pairs(h, off[:-1], off[1:], li, ri)
    candidates = len(left)
    if thr is not None:
        ok = sim >= np.float32(thr)
        left, right, sim = left[ok], right[ok], sim[ok]
    used = np.unique(np.concatenate([left, right]))
    pos = order[np.searchsorted(srows, used)]
    glen = np.concatenate([m[0] for m in metas])[pos]
    ghi = np.concatenate([m[1] for m in metas])[pos]
    ids_all = [x for m in metas for x in m[2]]
    tot = np.concatenate([m[3] for m in metas])[pos]
    return {"pairs": (left, right, sim), "candidates": candidates,
            "nodes": (used, glen, ghi, [ids_all[i] for i in pos.tolist()], tot)}


# ---------------------------------------------------------------------------------------------
# Labels, tables and the deduplicated corpus


@dataclass
class _ClusterMap:
    """Texts in verified pairs (by global first row, sorted): representative row and id,
    similarity to it, and the first row of their cluster."""

    rows: np.ndarray
    rep: np.ndarray
    rep_id: list[str]
    sim: np.ndarray
    cfirst: np.ndarray

    def find(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.searchsorted(self.rows, rows)
        pos = np.minimum(pos, max(len(self.rows) - 1, 0))
        found = (self.rows[pos] == rows) if len(self.rows) else np.zeros(len(rows), bool)
        return found, pos


def _final_a(gd: _Grouped, cm: _ClusterMap) -> dict:
    d = gd.d
    R = gd.offset + np.arange(d.n, dtype=np.int64)
    has = d.lgroup >= 0
    f = R.copy()
    f[has] = gd.gfirst[d.lgroup[has]]
    rep, cf = f.copy(), f.copy()
    sim = np.ones(d.n, np.float32)
    found, pos = cm.find(f)
    found &= has
    rep[found] = cm.rep[pos[found]]
    cf[found] = cm.cfirst[pos[found]]
    sim[found] = cm.sim[pos[found]]
    new = cf == R
    return {"rep": rep, "cf": cf, "sim": sim, "new": new, "found": found, "pos": pos,
            "kept": int(np.count_nonzero(rep == R)), "n_new": int(np.count_nonzero(new))}


def _counts(fa: dict) -> tuple[int, int]:
    return fa["kept"], fa["n_new"]


def _final_b(gd: _Grouped, fa: dict, label0: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels of the new rows that other rows may point to (first rows of groups with copies
    and of near-duplicate clusters)."""
    d = gd.d
    new = fa["new"]
    R = gd.offset + np.arange(d.n, dtype=np.int64)
    has = d.lgroup >= 0
    shared = np.zeros(d.n, bool)
    shared[has] = gd.gtotal[d.lgroup[has]] > 1
    shared |= fa["found"]
    label = label0 + np.cumsum(new) - 1
    m = new & shared
    return R[m], label[m]


def _final_c(gd: _Grouped, fa: dict, label0: int, lut: tuple, cm: _ClusterMap,
             P: int, offsets: np.ndarray) -> dict:
    """This partition's rows of ``clusters`` and its fingerprint pairs by owner of the left row."""
    d = gd.d
    n = d.n
    R = gd.offset + np.arange(n, dtype=np.int64)
    new = fa["new"]
    labels = np.empty(n, np.int64)
    labels[new] = label0 + np.arange(int(np.count_nonzero(new)))
    old = ~new
    lrows, llab = lut
    labels[old] = llab[np.searchsorted(lrows, fa["cf"][old])]
    ids = gd.row_ids(np.arange(n))
    has = d.lgroup >= 0
    rep_id = list(ids)
    hidx = np.flatnonzero(has)
    for i, g in zip(hidx.tolist(), d.lgroup[hidx].tolist()):
        rep_id[i] = gd.gfirst_id[g]
    found, pos = fa["found"], fa["pos"]
    for i, q in zip(np.flatnonzero(found).tolist(), pos[found].tolist()):
        rep_id[i] = cm.rep_id[q]
    clusters = {"id": ids, "cluster": labels, "representative": rep_id, "similarity": fa["sim"]}
    # fingerprint pairs: (first row of the text, a later copy)
    copy = has.copy()
    copy[hidx] = gd.gfirst[d.lgroup[hidx]] != R[hidx]
    ci = np.flatnonzero(copy)
    fl = gd.gfirst[d.lgroup[ci]]
    fid = [gd.gfirst_id[g] for g in d.lgroup[ci].tolist()]
    own = _owner(offsets, fl)
    fp_pairs = []
    for p in range(P):
        m = np.flatnonzero(own == p)
        fp_pairs.append((fl[m], R[ci[m]], [fid[i] for i in m.tolist()],
                         [ids[i] for i in ci[m].tolist()]))
    return {"clusters": clusters, "fp_pairs": tuple(fp_pairs),
            "keep": fa["rep"] == R}


def _pairs_table(verified: tuple, *fp_parts) -> dict:
    vl, vr, vs, vida, vidb = verified
    left = np.concatenate([vl] + [p[0] for p in fp_parts])
    right = np.concatenate([vr] + [p[1] for p in fp_parts])
    sim = np.concatenate([vs] + [np.ones(len(p[0]), np.float32) for p in fp_parts])
    method = np.concatenate([np.full(len(vl), _JACCARD, np.uint8)]
                            + [np.full(len(p[0]), _FINGERPRINT, np.uint8) for p in fp_parts])
    ida = list(vida) + [x for p in fp_parts for x in p[2]]
    idb = list(vidb) + [x for p in fp_parts for x in p[3]]
    order = np.lexsort((right, left))
    names = np.asarray(METHOD_NAMES, dtype=object)
    return {"id_a": [ida[i] for i in order.tolist()], "id_b": [idb[i] for i in order.tolist()],
            "similarity": sim[order].astype(np.float32), "method": names[method[order]]}


def _clusters_part(fc: dict) -> dict:
    return fc["clusters"]


def _write_part(spec: _Spec, read_opts: dict, line_counts: list[int], drops: np.ndarray,
                fc: dict, path: str) -> int:
    """Re-read the partition and write its kept documents (``id``, ``text``) to ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    opts = dict(read_opts, on_error="skip")  # errors were reported by the first read
    stream = _open_stream(spec, opts, SkipReport(), sum(line_counts))
    keep = fc["keep"]
    dropped = set(drops.tolist())
    ids, texts = [], []
    i = j = 0
    for rec in stream:
        if i in dropped:
            i += 1
            continue
        if keep[j]:
            ids.append(fc["clusters"]["id"][j])
            texts.append(rec.text)
        i += 1
        j += 1
    if j != len(keep):
        raise RuntimeError(f"{spec.path}: the input changed while it was deduplicated")
    table = pa.table({"id": pa.array(ids, pa.string()), "text": pa.array(texts, pa.string())})
    pq.write_table(table, path)
    return len(ids)


def _fp_cluster_stats(red: dict, cm: _ClusterMap) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Clusters of the exact groups of one bucket that are not in the cluster map, their
    largest size, and the copies of the mapped ones by representative."""
    rows, tot = red["groups"]
    found, pos = cm.find(rows)
    free = tot[~found]
    return (int(np.count_nonzero(free >= 2)), int(free.max(initial=0)), cm.rep[pos[found]],
            tot[found])


# ---------------------------------------------------------------------------------------------
# Planning


def _expand(paths: Sequence[Path], input_format: str | None) -> list[Path]:
    """A directory given with a data format (not "textdir") stands for its files of that
    format (sorted by name, hidden ones and others left out): a folder of Parquet/JSONL parts."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir() and input_format not in (None, "textdir"):
            files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".")
                           and _SUFFIX_FORMATS.get(
                               Path(_split_compression(f.name)[0]).suffix.lower())
                           == input_format)
            out.extend(files)
        else:
            out.append(p)
    return out


def _plan(paths: list[Path], input_format: str | None, partition_docs: int) -> list[_Spec]:
    """One partition per input; uncompressed JSONL files of more than ~``partition_docs``
    records (estimated from their first 1 MB) are cut into line-aligned byte ranges."""
    from ..io.readers import detect_format

    specs: list[_Spec] = []
    for p in paths:
        fmt = "textdir" if p.is_dir() else (input_format or detect_format(p))
        _, comp = _split_compression(p.name)
        if fmt != "jsonl" or comp is not None:
            specs.append(_Spec(str(p), input_format))
            continue
        size = p.stat().st_size
        with open(p, "rb") as f:
            head = f.read(1 << 20)
            per_line = len(head) / max(head.count(b"\n"), 1)
            step = max(int(per_line * partition_docs), 1 << 16)
            if size <= step * 1.5:
                specs.append(_Spec(str(p), input_format))
                continue
            bounds = [0]
            while bounds[-1] + step < size:
                f.seek(bounds[-1] + step)
                f.readline()
                b = f.tell()
                if b >= size:
                    break
                bounds.append(b)
            bounds.append(size)
        for a, b in zip(bounds, bounds[1:]):
            specs.append(_Spec(str(p), input_format, a, b, split=True))
    return specs


# ---------------------------------------------------------------------------------------------
# The job


class _TableStream:
    """One output table written part by part (parquet, jsonl or csv), atomically."""

    def __init__(self, stem: Path, fmt: str):
        self.final = Path(f"{stem}.{fmt}")
        self.fmt = fmt
        self.staged = _Staged(self.final)
        self.writer: Any = None

    def write(self, columns: dict) -> None:
        f = self.staged.file
        if self.fmt == "jsonl":
            _write_jsonl_table(f, columns, len(next(iter(columns.values()))))
            return
        table = _arrow_table(columns)
        if self.writer is None:
            if self.fmt == "parquet":
                import pyarrow.parquet as pq

                self.writer = pq.ParquetWriter(f, table.schema)
            else:
                import pyarrow.csv as pcsv

                self.writer = pcsv.CSVWriter(f, table.schema)
        self.writer.write_table(table.cast(self.writer.schema))

    def commit(self) -> str:
        if self.writer is not None:
            self.writer.close()
        return str(self.staged.commit())

    def discard(self) -> None:
        self.staged.discard()


def dedup_dask(paths: Sequence[str | os.PathLike], outdir: str | os.PathLike, *,
               config: DedupConfig | None = None, text_fields: Sequence[str] = ("text",),
               id_field: str | None = None, input_format: str | None = None,
               encoding: str = "utf-8", on_error: str = "fail", output_format: str = "parquet",
               write_corpus: bool = True, scheduler: str | None = None, n_workers: int = 2,
               partition_docs: int = 50_000, progress: Any = None) -> dict[str, Any]:
    """:func:`neardup.job.dedup_files` on a Dask cluster; returns the summary (with ``engine``,
    ``workers`` and ``partitions``) and writes ``clusters``, ``pairs``, ``summary.json`` and,
    with ``write_corpus``, ``deduplicated/part-NNNNN.parquet`` (``id``, ``text``) in ``outdir``.

    ``scheduler``: the address of a running scheduler (``tcp://host:port``); without it a
    ``LocalCluster`` of ``n_workers`` single-threaded processes is started and closed. Inputs and
    ``outdir`` must be visible to every worker. ``partition_docs``: about how many records of a
    large uncompressed JSONL file go into one partition (other inputs are one partition each; a
    directory given with ``input_format`` "jsonl" or "parquet" stands for its files of that
    format). Gathering the verified pairs on the client for union-find is the one central step.
    """
    if output_format not in OUTPUT_FORMATS:
        raise ConfigError(f"output_format={output_format!r} is invalid: one of "
                          f"{', '.join(OUTPUT_FORMATS)}")
    if on_error not in ("fail", "skip"):
        raise ConfigError(f"on_error={on_error!r} is invalid: use 'fail' or 'skip'")
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ConfigError(f"n_workers={n_workers!r} is invalid: a positive integer")
    if isinstance(partition_docs, bool) or not isinstance(partition_docs, int) \
            or partition_docs < 1:
        raise ConfigError(f"partition_docs={partition_docs!r} is invalid: a positive integer")
    config = config or DedupConfig()
    if config.verify.mode != "exact":
        raise ConfigError("verify='estimate' is not supported by the dask engine yet: use "
                          "verify='exact' or the local engine")
    read_opts = dict(text_fields=tuple(text_fields), id_field=id_field, on_error=on_error,
                     encoding=encoding, fmt=input_format)
    plist = _expand([Path(p) for p in paths], input_format)
    # the same checks of the options and paths as the local engine, raised here at once
    read_documents(plist, **read_opts)

    from distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        import dask

        threads = max(1, (os.cpu_count() or 1) // n_workers)
        with dask.config.set({"distributed.scheduler.allowed-failures": 5}):
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0",
                                   env={"NUMBA_NUM_THREADS": str(threads)})
        client = Client(cluster)
    else:
        threads = None
        client = Client(scheduler)
    try:
        return _run(client, plist, Path(outdir), config, read_opts, output_format, write_corpus,
                    partition_docs, progress or _NoProgress(), threads)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _run(client, paths, outdir, config, read_opts, output_format, write_corpus,
         partition_docs, progress, threads) -> dict[str, Any]:
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    tok = uuid.uuid4().hex[:8]
    def sub(fn, *args, name: str, i: int | str = 0):
        return client.submit(fn, *args, key=f"neardup-{name}-{tok}-{i}", pure=False)

    def pick(fut, *keys, name: str, i: str):
        return client.submit(_get, fut, *keys, key=f"neardup-{name}-{tok}-{i}", pure=False)

    def tick(stage: str, t0: float) -> float:  # ends a stage started with progress.start
        t1 = time.perf_counter()
        timings[stage] = round(timings.get(stage, 0.0) + t1 - t0, 4)
        progress.finish(stage)
        return t1

    cfg = config
    bands, rows = lsh_params(cfg.lsh, cfg.sketch.num_perm)
    auto_ids = read_opts["id_field"] is None
    specs = _plan(paths, read_opts["fmt"], partition_docs)
    P = len(specs)
    S = P
    workers = len(client.scheduler_info()["workers"])
    total_bytes = total_input_bytes(paths)

    # 1. read, normalise, fingerprint, sketch
    t0 = time.perf_counter()
    progress.start("read", P)
    # a range of a split JSONL file needs the lines before it (counted in parallel) for the
    # line numbers of its errors
    line_prior: list[list] = []
    file_counts: dict[str, list] = {}
    data = []
    for p, sp in enumerate(specs):
        prior: list = []
        if sp.split:
            done = file_counts.setdefault(sp.path, [])
            prior = list(done)
            done.append(sub(_count_lines, sp.path, sp.start, sp.end, name="lines", i=p))
        line_prior.append(prior)
        auto = auto_ids and not Path(sp.path).is_dir()
        data.append(sub(_read_partition, sp, read_opts, cfg, bands, rows, auto, threads,
                        prior, name="read", i=p))
    infos = client.gather([sub(_info, d, name="info", i=p) for p, d in enumerate(data)])
    t0 = tick("read", t0)

    # 2. errors and repeated ids, in the local engine's order
    progress.start("ids", None)
    dups: list[tuple] = []
    if P > 1 and any(d_["n"] for d_ in infos) and (not auto_ids or any(
            Path(s.path).is_dir() for s in specs)):
        idm = [sub(_id_map, d, S, name="idmap", i=p) for p, d in enumerate(data)]
        red = [sub(_id_reduce, *[pick(m, s, name="idpick", i=f"{p}-{s}")
                                 for p, m in enumerate(idm)], name="idred", i=s)
               for s in range(S)]
        dups = sorted(x for r in client.gather(red) for x in r)
        del idm, red
    dup_msgs = _dup_messages(client, data, dups, read_opts["id_field"], sub)
    events: list[tuple] = []  # (p, position, kind, seq, message or error)
    for p, inf in enumerate(infos):
        if inf["error"] is not None:
            events.append((p, inf["error"][0], 0, 0, inf["error"][1]))
        for pos, seq, msg in inf["skips"]:
            events.append((p, pos, 0, seq, msg))
    for (p, i, _fp, _fi, _x), err in zip(dups, dup_msgs):
        events.append((p, i, 1, 0, err))
    # a split JSONL file whose ranges all hold no record is an empty file
    by_file: dict[str, list[int]] = {}
    for p, sp in enumerate(specs):
        if sp.split:
            by_file.setdefault(sp.path, []).append(p)
    for path, ps in by_file.items():
        if sum(infos[p]["records"] for p in ps) == 0:
            events.append((ps[0], 0, 0, -1, InputError("the file is empty (no JSON lines)",
                                                       path=path, reason="empty_file")))
    events.sort(key=lambda e: e[:4])
    report = SkipReport()
    if read_opts["on_error"] == "fail":
        first = next((e[4] for e in events if isinstance(e[4], InputError)), None)
        if first is not None:
            raise first
    else:
        for inf in infos:
            for k, v in inf["skip_counts"].items():
                report.counts[k] = report.counts.get(k, 0) + v
        for e in events:
            if isinstance(e[4], InputError):
                report.counts[e[4].reason] = report.counts.get(e[4].reason, 0) + 1
        report.examples = [str(e[4]) for e in events][:20]
    drops = [np.asarray([i for (q, i, *_r) in dups if q == p], np.int64) for p in range(P)]
    data = [sub(_drop, d, drops[p], name="drop", i=p) if len(drops[p]) else d
            for p, d in enumerate(data)]
    ns = [inf["n"] - len(drops[p]) for p, inf in enumerate(infos)]
    offsets = np.zeros(P + 1, np.int64)
    np.cumsum(ns, out=offsets[1:])
    n = int(offsets[-1])
    t0 = tick("ids", t0)

    # 3. exact groups across partitions
    progress.start("exact", P)
    fpm = [sub(_fp_map, d, int(offsets[p]), S, name="fpmap", i=p) for p, d in enumerate(data)]
    fpr = [sub(_fp_reduce, *[pick(m, s, name="fppick", i=f"{p}-{s}")
                             for p, m in enumerate(fpm)], name="fpred", i=s) for s in range(S)]
    grouped = [sub(_fp_apply, d, int(offsets[p]), S,
                   *[pick(r, "back", p, name="fpback", i=f"{s}-{p}") for s, r in enumerate(fpr)],
                   name="grouped", i=p) for p, d in enumerate(data)]
    del fpm
    ginfo = client.gather([sub(_grouped_info, g, name="ginfo", i=p)
                           for p, g in enumerate(grouped)])
    U = sum(g["distinct"] for g in ginfo)
    n_empty = sum(g["empty"] for g in ginfo)
    t0 = tick("exact", t0)

    # 4. LSH: band keys shuffled by key
    progress.start("candidates", P)
    cstats = CandidateStats(bands=bands, rows=rows, bucket_cap=cfg.lsh.bucket_cap)
    cand_parts: list[list] = [[] for _ in range(P)]
    if U >= 2:
        idbits = max(1, (U - 1).bit_length())
        bm = [sub(_band_map, g, S, idbits, name="bandmap", i=p) for p, g in enumerate(grouped)]
        br = [sub(_band_reduce, cfg.lsh.bucket_cap, offsets,
                  *[pick(m, s, name="bandpick", i=f"{p}-{s}") for p, m in enumerate(bm)],
                  name="bandred", i=s) for s in range(S)]
        del bm
        for st in client.gather([pick(r, "stats", name="bandstats", i=s)
                                 for s, r in enumerate(br)]):
            cstats.raw_pairs += st.raw_pairs
            cstats.capped_buckets += st.capped_buckets
            cstats.capped_bucket_docs += st.capped_bucket_docs
            cstats.largest_bucket = max(cstats.largest_bucket, st.largest_bucket)
        cand_parts = [[pick(r, "pairs", p, name="candpick", i=f"{s}-{p}")
                       for s, r in enumerate(br)] for p in range(P)]
    t0 = tick("candidates", t0)

    # 5. verify next to the data
    progress.start("verify", P)
    thr = float(cfg.lsh.threshold)

    def similarity(parts_by_owner, threshold, name):
        prep = [sub(_sim_prepare, g, offsets, *parts_by_owner[p], name=f"{name}prep", i=p)
                for p, g in enumerate(grouped)]
        exp = [sub(_sim_export, g, *[pick(prep[p], "req", q, name=f"{name}req", i=f"{p}-{q}")
                                     for p in range(P)], name=f"{name}export", i=q)
               for q, g in enumerate(grouped)]
        run = [sub(_sim_run, g, threshold, prep[p],
                   *[pick(exp[q], p, name=f"{name}imp", i=f"{q}-{p}") for q in range(P)
                     if q != p], name=f"{name}run", i=p)
               for p, g in enumerate(grouped)]
        return client.gather(run)

    verified = similarity(cand_parts, thr, "verify")
    vl = np.concatenate([v["pairs"][0] for v in verified])
    vr = np.concatenate([v["pairs"][1] for v in verified])
    vs = np.concatenate([v["pairs"][2] for v in verified]).astype(np.float32)
    t0 = tick("verify", t0)
    del cand_parts

    # 6. cluster the verified pairs on the client
    progress.start("cluster", 1)
    nodes = np.concatenate([v["nodes"][0] for v in verified])
    nlen = np.concatenate([v["nodes"][1] for v in verified])
    nfp = np.concatenate([v["nodes"][2] for v in verified])
    nid = [x for v in verified for x in v["nodes"][3]]
    nodes, at = np.unique(nodes, return_index=True)
    nlen, nfp = nlen[at], nfp[at]
    nid = [nid[i] for i in at.tolist()]
    m = len(nodes)
    rank = preference_rank(m, cfg.cluster.keep, nlen, nfp)
    li = np.searchsorted(nodes, vl)
    ri = np.searchsorted(nodes, vr)
    if cfg.cluster.method == "strict":
        rep_c = strict_clusters(m, li, ri, rank)
    else:
        rep_c = connected_components(m, li, ri, rank)
    members = np.flatnonzero(rep_c != np.arange(m))
    msim = np.ones(m, np.float32)
    if len(members):
        ml, mr = nodes[members], nodes[rep_c[members]]
        own = _owner(offsets, ml)
        parts = [[(ml[own == p], mr[own == p])] for p in range(P)]
        res = similarity(parts, None, "member")
        rl = np.concatenate([r["pairs"][0] for r in res])
        rs = np.concatenate([r["pairs"][2] for r in res])
        order = np.argsort(rl)
        msim[members] = rs[order[np.searchsorted(rl[order], ml)]]
    cfirst_c = np.full(m, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(cfirst_c, rep_c, nodes)
    cm = _ClusterMap(nodes, nodes[rep_c], [nid[i] for i in rep_c.tolist()], msim,
                     cfirst_c[rep_c])
    [cm_f] = client.scatter([cm], broadcast=True)
    t0 = tick("cluster", t0)

    # 7. labels, tables, corpus
    progress.start("write", P)
    fa = [sub(_final_a, g, cm_f, name="finala", i=p) for p, g in enumerate(grouped)]
    counts = client.gather([sub(_counts, f, name="counts", i=p) for p, f in enumerate(fa)])
    kept = sum(c[0] for c in counts)
    label0 = np.zeros(P + 1, np.int64)
    np.cumsum([c[1] for c in counts], out=label0[1:])
    fb = client.gather([sub(_final_b, g, fa[p], int(label0[p]), name="finalb", i=p)
                        for p, g in enumerate(grouped)])
    lrows = np.concatenate([x[0] for x in fb])
    llab = np.concatenate([x[1] for x in fb])
    order = np.argsort(lrows)
    [lut_f] = client.scatter([(lrows[order], llab[order])], broadcast=True)
    fc = [sub(_final_c, g, fa[p], int(label0[p]), lut_f, cm_f, P, offsets, name="finalc", i=p)
          for p, g in enumerate(grouped)]
    csize = client.gather([sub(_fp_cluster_stats, r, cm_f, name="cstats", i=s)
                           for s, r in enumerate(fpr)])
    n_clusters = sum(c[0] for c in csize)
    largest = max([c[1] for c in csize] + [1 if n else 0])
    creps = np.concatenate([c[2] for c in csize] + [np.zeros(0, np.int64)])
    ctot = np.concatenate([c[3] for c in csize] + [np.zeros(0, np.int64)])
    if len(creps):
        _, inv = np.unique(creps, return_inverse=True)
        sizes = np.bincount(inv, weights=ctot).astype(np.int64)
        n_clusters += int(np.count_nonzero(sizes >= 2))
        largest = max(largest, int(sizes.max()))

    _prepare_outdir(outdir)
    staged_dir = None
    streams: list[_TableStream] = []
    try:
        ct = _TableStream(outdir / "clusters", output_format)
        streams.append(ct)
        for p in range(P):
            ct.write(client.gather(sub(_clusters_part, fc[p], name="ctable", i=p)))
        # verified pairs with their ids, by owner of the left row
        idx_l, idx_r = np.searchsorted(nodes, vl), np.searchsorted(nodes, vr)
        own = _owner(offsets, vl)
        pt = _TableStream(outdir / "pairs", output_format)
        streams.append(pt)
        for p in range(P):
            mk = np.flatnonzero(own == p)
            ver = (vl[mk], vr[mk], vs[mk], [nid[i] for i in idx_l[mk].tolist()],
                   [nid[i] for i in idx_r[mk].tolist()])
            tab = sub(_pairs_table, ver, *[pick(fc[q], "fp_pairs", p, name="fppairs",
                                                i=f"{q}-{p}") for q in range(P)],
                      name="ptable", i=p)
            pt.write(client.gather(tab))
        outputs = {"clusters": ct.commit(), "pairs": pt.commit()}
        streams.clear()
        if write_corpus:
            staged_dir = _Staged(outdir / "deduplicated", directory=True)
            writes = [sub(_write_part, sp, read_opts, line_prior[p], drops[p], fc[p],
                          str(staged_dir.tmp / f"part-{p:05d}.parquet"), name="part", i=p)
                      for p, sp in enumerate(specs)]
            client.gather(writes)
            final = staged_dir.commit()
            staged_dir = None
            outputs["deduplicated"] = [str(final / f"part-{p:05d}.parquet") for p in range(P)]
    except BaseException:
        for s in streams:
            s.discard()
        if staged_dir is not None:
            staged_dir.discard()
        raise
    t0 = tick("write", t0)

    shingles = sum(g["shingles"] for g in ginfo)
    text_bytes = sum(g["text_bytes"] for g in ginfo)
    cstats.candidates = sum(v["candidates"] for v in verified)
    exact_removed = n - n_empty - U
    wall = time.perf_counter() - t_start
    t = cfg.lsh.threshold
    summary = {
        "neardup_version": __version__,
        "engine": "dask",
        "documents": n,
        "text_bytes": text_bytes,
        "empty_documents": n_empty,
        "distinct_texts": U,
        "exact_duplicates": exact_removed,
        "near_duplicates": n - kept - exact_removed,
        "kept": kept,
        "removed": n - kept,
        "clusters": n_clusters,
        "largest_cluster": largest if n else 0,
        "duplicate_pairs": len(vl) + exact_removed,
        "shingles": shingles,
        "lsh": {
            "bands": bands, "rows": rows, "threshold": t,
            "expected_recall_at_threshold": round(s_curve(t, bands, rows), 6),
            "expected_recall_at_threshold_plus_0.1": round(s_curve(min(t + 0.1, 1.0), bands,
                                                                  rows), 6),
            **{k: v for k, v in cstats.to_dict().items() if k not in ("bands", "rows")},
        },
        "verified_pairs": len(vl),
        "config": cfg.to_dict(),
        "timings_s": timings,
        "workers": workers,
        "partitions": P,
        "seconds": 0.0,
        "inputs": [str(p) for p in paths],
        "input_bytes": total_bytes,
        "skipped": report.to_dict(),
        "outputs": outputs,
    }
    summary["seconds"] = round(wall, 4)
    summary["documents_per_s"] = round(n / wall, 1) if wall > 0 else None
    summary["mb_per_s"] = round(text_bytes / 1e6 / wall, 2) if wall > 0 else None
    summary["ingest_seconds"] = timings.get("read", 0.0)
    outputs["summary"] = str(outdir / "summary.json")
    write_json_atomic(outdir / "summary.json", summary)
    return summary
