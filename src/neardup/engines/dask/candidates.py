"""Step 4, LSH candidates: band keys shuffled by key so that equal keys meet.

``(band, key, row)`` of every globally first text is shuffled by a hash of (band, key), the key
masked to the bits the local engine compares (:func:`neardup.lsh.key_mask`); a bucket sorts each
band and emits pairs within runs with :func:`neardup.pipeline.run_candidates` (the same bucket
cap: a run over the cap is a star around its first row). Pairs go to the partition that holds
their left text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...lsh import id_bits, key_mask
from ...pipeline import CandidateStats, run_candidates
from .context import RunContext
from .scratch import Part, concat, owner, read_bucket, remove_tree, unique_pairs, write_buckets


def band_map(d: Part, S: int, idbits: int, prefix: str) -> int:
    f = np.flatnonzero(d.load("is_first"))
    rows = d.load("gfirst")[f]
    keys = d.load("keys", mmap=True)
    mask = key_mask(idbits)
    band, key, row, bucket = [], [], [], []
    for b in range(keys.shape[0]):
        k = np.asarray(keys[b])[f] & mask
        bucket.append(((k >> np.uint64(33)) + np.uint64(b) * np.uint64(2654435761)) % np.uint64(S))
        band.append(np.full(len(f), b, np.int32))
        key.append(k)
        row.append(rows)
    write_buckets(
        prefix,
        concat(bucket, np.uint64).astype(np.int64),
        S,
        {
            "band": concat(band, np.int32),
            "key": concat(key, np.uint64),
            "row": concat(row, np.int64),
        },
    )
    return len(f)


def band_reduce(
    cap: int, offsets: np.ndarray, prefixes: list[str], s: int, out: str, *_deps
) -> CandidateStats:
    """Candidate pairs of the band keys of bucket ``s``, written by owner of their left row."""
    P = len(offsets) - 1
    stats = CandidateStats(bucket_cap=cap)
    parts = [read_bucket(pre, s, ("band", "key", "row")) for pre in prefixes]
    band = concat([x["band"] for x in parts], np.int32)
    key = concat([x["key"] for x in parts], np.uint64)
    row = concat([x["row"] for x in parts], np.int64)
    del parts
    # by band, then row (the star centre of a capped run: its first row): each map task's
    # piece is in that order already (bands in turn, rows ascending) and the pieces' rows
    # follow the partitions, so a stable sort by band is enough
    order = np.argsort(band, kind="stable")
    band, key, row = band[order], key[order], row[order]
    if np.any((band[1:] == band[:-1]) & (row[1:] < row[:-1])):  # not so: sort by both
        order = np.lexsort((row, band))
        band, key, row = band[order], key[order], row[order]
    bounds = np.flatnonzero(np.concatenate(([True], band[1:] != band[:-1], [True])))
    ls, rs = [], []
    for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if z - a < 2:
            continue
        r = row[a:z]
        left, right, st = run_candidates(key[a:z].copy(), cap)
        stats.merge(st)
        ls.append(r[left])
        rs.append(r[right])
    left, right = unique_pairs(concat(ls, np.int64), concat(rs, np.int64))
    write_buckets(f"{out}/r{s}", owner(offsets, left), P, {"left": left, "right": right})
    return stats


def candidates_step(ctx: RunContext) -> None:
    """Candidate pairs of the whole corpus, left in a shuffle read by the verify step."""
    ctx.cstats = CandidateStats(
        bands=ctx.bands, rows=ctx.rows, bucket_cap=ctx.config.lsh.bucket_cap
    )
    ctx.candidate_prefixes = None
    if ctx.distinct < 2:
        return
    P = ctx.P
    idbits = id_bits(ctx.distinct)
    bdir, cdir = ctx.folder("bandmap"), ctx.folder("cands")
    pre = [f"{bdir}/m{p}" for p in range(P)]
    bm = [
        ctx.submit(band_map, d, P, idbits, pre[p], name="bandmap", i=p)
        for p, d in enumerate(ctx.parts)
    ]
    br = [
        ctx.submit(
            band_reduce,
            ctx.config.lsh.bucket_cap,
            ctx.offsets,
            pre,
            s,
            cdir,
            *bm,
            name="bandred",
            i=s,
        )
        for s in range(P)
    ]
    for st in ctx.client.gather(br):
        ctx.cstats.merge(st)
    del bm, br
    ctx.done()
    remove_tree(Path(bdir))
    ctx.candidate_prefixes = [f"{cdir}/r{s}" for s in range(P)]
