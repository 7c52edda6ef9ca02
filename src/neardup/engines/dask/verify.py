"""Step 5, verify next to the data: each partition asks the owners of its pairs' right texts
for their shingle sets (only those) and computes exact Jaccard similarities."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..._arrays import read_ranges, sorted_unique
from ...pipeline import ShingleBags, verify_pairs
from .context import RunContext
from .scratch import (
    Part,
    atomic_save,
    concat,
    owner,
    read_bucket,
    remove_tree,
    unique_pairs,
    write_buckets,
)


class _Texts:
    """What the similarity tasks read of a partition, loaded once per task: the shingle
    fingerprints (read from ``sh.u32`` for the rows asked for only) and the length,
    fingerprint, id (only those asked for decoded) and copies of local rows."""

    def __init__(self, d: Part):
        self.d = d
        self.lgroup = d.load("lgroup")
        self.shoff = d.load("shoff")

    def bags(self, local_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The shingle fingerprints of local rows as they were shingled (unsorted, with
        repeats), as a compact CSR ``(hashes, offsets)``: read by the compiled range reader."""
        g = self.lgroup[local_rows]
        return read_ranges(self.d.sh_path, np.dtype(np.uint32), self.shoff[g], self.shoff[g + 1])

    def meta(self, local_rows: np.ndarray) -> tuple:
        g = self.lgroup[local_rows]
        d = self.d
        return (
            d.load("glen")[g],
            d.load("ghi")[g],
            d.row_ids(local_rows),
            d.load("gtotal")[g],
        )


class _RowBags(ShingleBags):
    """The shingle fingerprints a task gathered (``hashes[offsets[i]:offsets[i + 1]]``), asked
    for by the texts' global rows: ``rows[j]`` is the row of the texts ``order[j]``."""

    def __init__(self, h: np.ndarray, off: np.ndarray, rows: np.ndarray, order: np.ndarray):
        super().__init__(h, off)
        self.rows, self.order = rows, order

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        at = self.order
        return super().pairs(at[np.searchsorted(self.rows, a)], at[np.searchsorted(self.rows, b)])


def sim_prepare(
    d: Part,
    offsets: np.ndarray,
    p: int,
    cands: list[str] | None,
    direct: tuple | None,
    out: str,
    *_deps,
) -> int:
    """This partition's pairs (from the candidate shuffle or given), and which right rows it
    needs from each other partition."""
    P = len(offsets) - 1
    ls, rs = [], []
    for pre in cands or []:
        b = read_bucket(pre, p, ("left", "right"))
        ls.append(b["left"])
        rs.append(b["right"])
    if direct is not None:
        ls.append(direct[0])
        rs.append(direct[1])
    left, right = unique_pairs(concat(ls, np.int64), concat(rs, np.int64))
    own = owner(offsets, right)
    here = p if d.n else -1
    req = sorted_unique(right[own != here], overwrite=True)
    write_buckets(f"{out}/req{p}", owner(offsets, req), P, {"row": req})
    atomic_save(f"{out}/left{p}.npy", left)
    atomic_save(f"{out}/right{p}.npy", right)
    return len(left)


def sim_export(d: Part, q: int, out: str, P: int, *_deps) -> int:
    """The shingle sets (and meta) of this partition's texts that other partitions asked for."""
    rows = [read_bucket(f"{out}/req{p}", q, ("row",))["row"] for p in range(P)]
    bucket = np.repeat(np.arange(P), [len(r) for r in rows])
    rows_a = concat(rows, np.int64)
    t = _Texts(d)
    local = rows_a - d.offset
    h, off = t.bags(local)
    glen, ghi, ids, tot = t.meta(local)
    write_buckets(
        f"{out}/exp{q}",
        bucket,
        P,
        {"rows": rows_a, "glen": glen, "ghi": ghi, "tot": tot},
        {"ids": ids},
        {"h": (h, off)},
    )
    return len(rows_a)


def save_pairs(save: tuple, p: int, left: np.ndarray, right: np.ndarray, sim: np.ndarray) -> None:
    """Leave a task's pairs in the scratch folder (``save``: ``(prefix, offsets, both)``) as a
    shuffle by owner of their left text ("src", "dst", "sim"), and with ``both`` also the other
    way round (by owner of their right text): the adjacency of the texts in verified pairs."""
    prefix, offsets, both = save
    src = np.concatenate([left, right]) if both else left
    dst = np.concatenate([right, left]) if both else right
    sims = np.concatenate([sim, sim]) if both else sim
    P = len(offsets) - 1
    write_buckets(f"{prefix}/e{p}", owner(offsets, src), P, {"src": src, "dst": dst, "sim": sims})


def sim_run(
    d: Part,
    thr: float | None,
    p: int,
    out: str,
    P: int,
    save: tuple | None,
    results: bool,
    *_deps,
) -> dict:
    """Exact Jaccard of this partition's pairs (over ``thr`` if given); with ``results``, the
    pairs and the length, fingerprint, id and copies of every text in a kept pair come back
    (else only their counts); with ``save``, the pairs are left in the scratch folder
    (:func:`save_pairs`)."""
    left = np.load(f"{out}/left{p}.npy")
    right = np.load(f"{out}/right{p}.npy")
    lo, hi = d.offset, d.offset + d.n
    need = sorted_unique(np.concatenate([left, right]), overwrite=True)
    mine = need[(need >= lo) & (need < hi)]
    t = _Texts(d)
    h0, off0 = t.bags(mine - lo)
    rows, hs, offs, metas = [mine], [h0], [off0], [t.meta(mine - lo)]
    del t
    for q in range(P):
        if q == p:
            continue
        b = read_bucket(
            f"{out}/exp{q}", p, ("rows", "glen", "ghi", "tot"), ("ids",), ("h",), mapped=True
        )
        rows.append(b["rows"])
        hs.append(b["h"][0])
        offs.append(b["h"][1])
        metas.append((b["glen"], b["ghi"], b["ids"], b["tot"]))
    allrows = np.concatenate(rows)
    sizes = np.concatenate([np.diff(o) for o in offs])
    off = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=off[1:])
    h = concat(hs, np.uint32)
    order = np.argsort(allrows)
    srows = allrows[order]
    candidates = len(left)
    left, right, sim = verify_pairs(_RowBags(h, off, srows, order), left, right, thr)
    if save is not None:
        save_pairs(save, p, left, right, np.asarray(sim, np.float32))
    if not results:
        return {"candidates": candidates, "verified": len(left)}
    used = sorted_unique(np.concatenate([left, right]), overwrite=True)
    pos = order[np.searchsorted(srows, used)]
    glen = np.concatenate([m[0] for m in metas])[pos]
    ghi = np.concatenate([m[1] for m in metas])[pos]
    ids_all = [x for m in metas for x in m[2]]
    tot = np.concatenate([m[3] for m in metas])[pos]
    return {
        "pairs": (left, right, sim),
        "candidates": candidates,
        "verified": len(left),
        "nodes": (used, glen, ghi, [ids_all[i] for i in pos.tolist()], tot),
    }


def similarity(
    ctx: RunContext,
    cands: list[str] | None,
    direct: list[tuple] | None,
    threshold: float | None,
    name: str,
    save: tuple | None = None,
    gather: bool = True,
    results: bool = True,
) -> list[dict]:
    """Exact similarities of pairs, per partition of their left text: the candidates of a
    shuffle (``cands``) or pairs given per partition (``direct``); over ``threshold`` only, if
    given. Returns each partition's :func:`sim_run` result (only the counts without
    ``results``; none with ``gather`` False: then ``save`` keeps the pairs in the scratch
    folder, :func:`save_pairs`)."""
    P, parts = ctx.P, ctx.parts
    out = ctx.folder(name)
    prep = [
        ctx.submit(
            sim_prepare,
            d,
            ctx.offsets,
            p,
            cands,
            None if direct is None else direct[p],
            out,
            name=f"{name}prep",
            i=p,
        )
        for p, d in enumerate(parts)
    ]
    exp = [
        ctx.submit(sim_export, d, q, out, P, *prep, name=f"{name}export", i=q)
        for q, d in enumerate(parts)
    ]
    run = [
        ctx.submit(
            sim_run, d, threshold, p, out, P, save, results, prep[p], *exp, name=f"{name}run", i=p
        )
        for p, d in enumerate(parts)
    ]
    if gather:
        res = ctx.client.gather(run)
    else:
        ctx.client.gather([ctx.submit(_nothing, *run, name=f"{name}done")])
        res = []
    del prep, exp, run
    ctx.done()
    remove_tree(Path(out))
    return res


def _nothing(*_deps) -> None:
    """A task that waits for others (whose results stay on the workers)."""


def verify_step(ctx: RunContext) -> None:
    """Verified pairs (over the threshold) of the candidates, left in the scratch folder both
    ways round (``edges/``, by owner of "src") for the clustering and the pairs table on the
    workers: only their counts come to the client, and with ``cluster`` "strict" (clustered on
    the client) the pairs themselves."""
    ctx.edges = ctx.folder("edges")
    strict = ctx.config.cluster.method != "components"
    ctx.verified = similarity(
        ctx,
        ctx.candidate_prefixes,
        None,
        float(ctx.config.lsh.threshold),
        "verify",
        (ctx.edges, ctx.offsets, True),
        results=strict,
    )
    ctx.verified_count = sum(v["verified"] for v in ctx.verified)
    ctx.cstats.candidates = sum(v["candidates"] for v in ctx.verified)
    if strict:
        ctx.vl = concat([v["pairs"][0] for v in ctx.verified], np.int64)
        ctx.vr = concat([v["pairs"][1] for v in ctx.verified], np.int64)
        ctx.vs = concat([v["pairs"][2] for v in ctx.verified], np.float32).astype(np.float32)
