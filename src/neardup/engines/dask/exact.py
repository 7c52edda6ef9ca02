"""Step 3, exact groups across partitions.

``(fingerprint, first row, copies)`` of each distinct text of each partition is shuffled by
fingerprint; each bucket finds the global first row of each text (the local engine's group)
and sends it back. After this step a text is named by its global first row everywhere, and its
order is the local engine's group order.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from .context import RunContext
from .scratch import (
    Part,
    atomic_save,
    concat,
    concat_ragged,
    read_bucket,
    remove_tree,
    take_ragged,
    write_buckets,
)


def _fp_entries(lgroup: np.ndarray, G: int):
    valid = lgroup >= 0
    rows = np.flatnonzero(valid)
    g = lgroup[valid]
    used, at = np.unique(g, return_index=True)
    cnt = np.bincount(g, minlength=G)[used]
    first = rows[at]
    return used, first, cnt


def fp_map(d: Part, S: int, prefix: str) -> int:
    used, first, cnt = _fp_entries(d.load("lgroup"), d.G)
    ghi, glo = d.load("ghi"), d.load("glo")
    write_buckets(
        prefix,
        (glo[used] % np.uint64(S)).astype(np.int64),
        S,
        {"hi": ghi[used], "lo": glo[used], "row": d.offset + first, "cnt": cnt},
        ragged={"ids": d.id_bytes(first)},
    )
    return len(used)


def fp_reduce(prefixes: list[str], s: int, out: str, *_deps) -> int:
    """Global first row, copies and first id of each text in bucket ``s``, written for the
    partitions its entries came from (in their order), and the bucket's groups (first row,
    copies) for the cluster counts."""
    P = len(prefixes)
    parts = [read_bucket(pre, s, ("hi", "lo", "row", "cnt"), (), ("ids",)) for pre in prefixes]
    hi = concat([p["hi"] for p in parts], np.uint64)
    lo = concat([p["lo"] for p in parts], np.uint64)
    row = concat([p["row"] for p in parts], np.int64)
    cnt = concat([p["cnt"] for p in parts], np.int64)
    ids = concat_ragged([p["ids"] for p in parts])
    src_len = [len(p["hi"]) for p in parts]
    m = len(hi)
    first_row = np.empty(m, np.int64)
    total = np.empty(m, np.int64)
    first_at = np.empty(m, np.int64)  # the entry whose id is the text's first id
    order = np.lexsort((row, lo, hi))
    if m:
        h, l_ = hi[order], lo[order]
        start = np.flatnonzero(np.concatenate(([True], (h[1:] != h[:-1]) | (l_[1:] != l_[:-1]))))
        run = np.repeat(np.arange(len(start)), np.diff(np.append(start, m)))
        head = order[start]
        tot = np.add.reduceat(cnt[order], start)
        first_row[order] = row[head][run]
        total[order] = tot[run]
        first_at[order] = head[run]
        grows, gtot = row[head], tot
    else:
        grows, gtot = np.zeros(0, np.int64), np.zeros(0, np.int64)
    write_buckets(
        f"{out}/r{s}",
        np.repeat(np.arange(P), src_len),
        P,
        {"first": first_row, "total": total},
        ragged={"id": take_ragged(*ids, first_at)},
    )
    atomic_save(f"{out}/g{s}.rows.npy", grows.astype(np.int64))
    atomic_save(f"{out}/g{s}.tot.npy", gtot.astype(np.int64))
    return m


def fp_apply(d: Part, S: int, red: str, p: int, *_deps) -> Part:
    """Tie the partition's distinct texts to the global ones (the local engine's groups, named
    by their first global row)."""
    lgroup = d.load("lgroup")
    used, first, cnt = _fp_entries(lgroup, d.G)
    bucket = d.load("glo")[used] % np.uint64(S)
    G = d.G
    gfirst = np.full(G, -1, np.int64)
    gtotal = np.zeros(G, np.int64)
    got, ms = [], []
    for s in range(S):
        m = used[bucket == s]
        b = read_bucket(f"{red}/r{s}", p, ("first", "total"), (), ("id",))
        gfirst[m] = b["first"]
        gtotal[m] = b["total"]
        got.append(b["id"])
        ms.append(m)
    # each text's first id (an empty string for a text no row uses)
    v, off = concat_ragged([*got, (np.zeros(0, np.uint8), np.zeros(2, np.int64))])
    at = np.full(G, len(off) - 2, np.int64)
    at[concat(ms, np.int64)] = np.arange(len(off) - 2)
    d.save_ragged("gfirst_id", take_ragged(v, off, at))
    is_first = np.zeros(G, bool)
    is_first[used] = gfirst[used] == d.offset + first
    d.save("gfirst", gfirst)
    d.save("gtotal", gtotal)
    d.save("is_first", is_first)
    f = np.flatnonzero(is_first)
    shoff = d.load("shoff")
    ginfo = {
        "distinct": len(f),
        "empty": int(np.count_nonzero(lgroup < 0)),
        "text_bytes": int(d.load("tbytes").sum()),
        "shingles": int((shoff[f + 1] - shoff[f]).sum()),
    }
    return replace(d, ginfo=ginfo)


def exact_step(ctx: RunContext) -> None:
    """Tie every partition's distinct texts to the global ones."""
    P = ctx.P
    fdir, rdir = ctx.folder("fpmap"), ctx.folder("fpred")
    pre = [f"{fdir}/m{p}" for p in range(P)]
    fpm = [ctx.submit(fp_map, d, P, pre[p], name="fpmap", i=p) for p, d in enumerate(ctx.parts)]
    fpr = [ctx.submit(fp_reduce, pre, s, rdir, *fpm, name="fpred", i=s) for s in range(P)]
    ctx.parts = ctx.client.gather(
        [
            ctx.submit(fp_apply, d, P, rdir, p, *fpr, name="grouped", i=p)
            for p, d in enumerate(ctx.parts)
        ]
    )
    del fpm, fpr
    ctx.done()
    remove_tree(Path(fdir))
    ctx.exact_dir = rdir
    ctx.distinct = sum(d.ginfo["distinct"] for d in ctx.parts)
    ctx.empty = sum(d.ginfo["empty"] for d in ctx.parts)
