"""Step 4, LSH candidates: band keys moved so that equal keys meet.

The band keys of every globally first text, masked to the bits the local engine compares
(:func:`neardup.lsh.key_mask`), go to reducers by band, each band cut by the top bits of its
keys into as many pieces as it takes for every reducer to have one (none cut when there are as
many bands as reducers): equal keys always fall in the same piece, and a piece needs neither a
hash nor a sort to be made. A reducer joins each of its pieces from every partition in row
order and emits the pairs within runs of equal keys with
:func:`neardup.pipeline.run_candidates` (the same bucket cap: a run over the cap is a star
around its first row). Pairs go to the partition that holds their left text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...lsh import id_bits, key_mask
from ...pipeline import CandidateStats, run_candidates
from .context import RunContext
from .scratch import Part, atomic_save, concat, owner, remove_tree, unique_pairs, write_buckets


def split_bits(bands: int, S: int) -> int:
    """Bits of a band key's top end that cut each band into ``2**bits`` key ranges, so that the
    ``bands << bits`` pieces are at least the ``S`` reducers (none: a reducer takes whole
    bands)."""
    bits = 0
    while (bands << bits) < S:
        bits += 1
    return bits


def band_map(d: Part, bits: int, idbits: int, prefix: str) -> int:
    """The partition's band keys (masked to the bits compared) and rows of its globally first
    texts, as pieces ``(band, top bits of the key)``, each in row order: with no split
    (``bits`` 0) the keys as they are, band after band, and the rows once."""
    f = np.flatnonzero(d.load("is_first"))
    rows = d.load("gfirst")[f]
    keys = d.load("keys", mmap=True)
    mask = key_mask(idbits)
    bands, n = keys.shape[0], len(f)
    out = np.empty((bands, n), np.uint64)
    for b in range(bands):
        np.bitwise_and(np.asarray(keys[b])[f], mask, out=out[b])
    if bits == 0:
        atomic_save(f"{prefix}.key.npy", out)
        atomic_save(f"{prefix}.row.npy", rows)
        return n
    pieces = 1 << bits
    bounds = np.zeros((bands, pieces + 1), np.int64)
    krows = np.empty((bands, n), np.int64)
    for b in range(bands):
        top = (out[b] >> np.uint64(64 - bits)).astype(np.int16 if bits < 15 else np.int64)
        order = np.argsort(top, kind="stable")  # rows stay in order within a piece
        out[b] = out[b][order]
        krows[b] = rows[order]
        bounds[b] = np.searchsorted(top[order], np.arange(pieces + 1))
    atomic_save(f"{prefix}.key.npy", out)
    atomic_save(f"{prefix}.row.npy", krows)
    atomic_save(f"{prefix}.bounds.npy", bounds)
    return n


def _piece(prefix: str, band: int, sub: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Piece ``(band, sub)`` of a map task's output: its keys and rows."""
    keys = np.load(f"{prefix}.key.npy", mmap_mode="r")
    rows = np.load(f"{prefix}.row.npy", mmap_mode="r")
    if bits == 0:
        return np.array(keys[band]), np.asarray(rows)
    a, z = np.load(f"{prefix}.bounds.npy")[band, sub : sub + 2].tolist()
    return np.array(keys[band, a:z]), np.array(rows[band, a:z])


def band_reduce(
    cap: int,
    offsets: np.ndarray,
    prefixes: list[str],
    pieces: list[tuple[int, int]],
    bits: int,
    s: int,
    out: str,
    *_deps,
) -> CandidateStats:
    """Candidate pairs of the pieces ``(band, sub)`` given to reducer ``s``: each piece's keys
    of every partition, in row order (the partitions' rows follow one another), so that a
    capped run is a star around its first row as in the local engine. Pairs are written by
    owner of their left row."""
    P = len(offsets) - 1
    stats = CandidateStats(bucket_cap=cap)
    ls, rs = [], []
    for band, sub in pieces:
        got = [_piece(pre, band, sub, bits) for pre in prefixes]
        key = concat([k for k, _ in got], np.uint64)
        row = concat([r for _, r in got], np.int64)
        del got
        if len(key) < 2:  # a key alone: a run of one
            stats.largest_bucket = max(stats.largest_bucket, len(key))
            continue
        left, right, st = run_candidates(key, cap)
        stats.merge(st)
        ls.append(row[left])
        rs.append(row[right])
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
    bits = split_bits(ctx.bands, P)
    pieces = [(b, k) for b in range(ctx.bands) for k in range(1 << bits)]
    bdir, cdir = ctx.folder("bandmap"), ctx.folder("cands")
    pre = [f"{bdir}/m{p}" for p in range(P)]
    bm = [
        ctx.submit(band_map, d, bits, idbits, pre[p], name="bandmap", i=p)
        for p, d in enumerate(ctx.parts)
    ]
    br = [
        ctx.submit(
            band_reduce,
            ctx.config.lsh.bucket_cap,
            ctx.offsets,
            pre,
            pieces[s::P],
            bits,
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
