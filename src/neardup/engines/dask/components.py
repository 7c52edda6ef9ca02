"""Connected components of the verified pairs on the workers (cluster method "components").

Each partition owns the texts whose global first row it holds (the *nodes*: texts in verified
pairs) and their adjacency (the verified pairs both ways round, left in the scratch folder by
the verify step). Every node carries a label: the preference key ``(-length, fingerprint, row)``
(``keep="longest"``) or ``row`` (``keep="first"``) of the best member seen so far, and the
lowest row seen so far (the cluster's first row). Rounds of min-label propagation: a node whose
label changed sends it to its neighbours (a shuffle by owner of the neighbour, through the
scratch folder); a round that changes no label ends it. The labels are then what
:func:`neardup.pipeline.cluster_texts` gives: the lowest-ranked member of each component, as
:func:`neardup.pipeline.preference_rank` orders them. Rounds: one more than the longest
shortest path from a representative to a member of its cluster.

A member's similarity to its representative comes with the first round when they are
verified neighbours (the representative sends its own label, with the pair's similarity);
the others are measured next to the data, as :func:`neardup.pipeline.member_similarities`
does. Every round writes new files (``s{round}-{partition}``, ``m{round}-{partition}``), so
a task that Dask runs again reads what it read the first time.
"""

from __future__ import annotations

import glob
import os

import numpy as np

from ..._arrays import sorted_unique
from .clustermap import ClusterMap
from .context import RunContext
from .scratch import (
    Part,
    atomic_save,
    concat,
    concat_ragged,
    owner,
    read_bucket,
    take_ragged,
    write_buckets,
)
from .verify import similarity

_STATE = ("rows", "k1", "k2", "k3", "mr", "ds")
_MSG = ("v", "k1", "k2", "k3", "mr", "s")


def _pack(cols: dict[str, np.ndarray], names: tuple[str, ...]) -> np.ndarray:
    """Columns as one ``int64[n, 6]`` array (one file to write and read, not six): the
    fingerprint's bits as they are, a similarity as a float64's bits."""
    out = np.empty((len(cols[names[0]]), len(names)), np.int64)
    for i, k in enumerate(names):
        a = cols[k]
        if k in ("ds", "s"):
            a = np.asarray(a, np.float64).view(np.int64)
        elif k == "k2":
            a = np.ascontiguousarray(a, np.uint64).view(np.int64)
        out[:, i] = a
    return out


def _unpack(arr: np.ndarray, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    out = {}
    for i, k in enumerate(names):
        c = np.ascontiguousarray(arr[:, i])
        if k in ("ds", "s"):
            c = c.view(np.float64).astype(np.float32)
        elif k == "k2":
            c = c.view(np.uint64)
        out[k] = c
    return out


def _save_state(cc: str, t: int, q: int, st: dict[str, np.ndarray]) -> None:
    atomic_save(f"{cc}/s{t}-{q}.npy", _pack(st, _STATE))


def _load_state(cc: str, t: int, q: int) -> dict[str, np.ndarray]:
    return _unpack(np.load(f"{cc}/s{t}-{q}.npy"), _STATE)


def _send(
    cc: str, t: int, q: int, offsets: np.ndarray, st: dict, adj: dict, changed: np.ndarray
) -> None:
    """Messages of round ``t`` from the nodes ``changed`` (a mask over ``st["rows"]``) to
    their neighbours, by owner of the neighbour: the label, and the pair's similarity when the
    label is the sender's own (else NaN)."""
    src, dst, sim = adj["src"], adj["dst"], adj["sim"]
    rows = st["rows"]
    pos = np.searchsorted(rows, src)
    go = changed[pos] if len(src) else np.zeros(0, bool)
    pos, v = pos[go], dst[go]
    own = st["k3"][pos] == src[go]
    s = np.where(own, sim[go], np.float32(np.nan)).astype(np.float32)
    msg = {"v": v, "s": s} | {k: st[k][pos] for k in ("k1", "k2", "k3", "mr")}
    write_buckets(f"{cc}/m{t}-{q}", owner(offsets, v), len(offsets) - 1, {"m": _pack(msg, _MSG)})


def cc_init(d: Part, q: int, offsets: np.ndarray, edges: str, keep: str, cc: str, *_deps) -> int:
    """Partition ``q``'s nodes and adjacency, their own labels, and the first messages (every
    node sends its own label along every pair)."""
    P = len(offsets) - 1
    b = [read_bucket(f"{edges}/e{p}", q, ("src", "dst", "sim")) for p in range(P)]
    src = concat([x["src"] for x in b], np.int64)
    dst = concat([x["dst"] for x in b], np.int64)
    sim = concat([x["sim"] for x in b], np.float32)
    order = np.lexsort((dst, src))
    adj = {"src": src[order], "dst": dst[order], "sim": sim[order].astype(np.float32)}
    for k, a in adj.items():
        atomic_save(f"{cc}/a{q}.{k}.npy", a)
    rows = sorted_unique(src)
    m = len(rows)
    if keep == "longest" and m:
        g = d.load("lgroup")[rows - d.offset]
        k1 = -d.load("glen")[g].astype(np.int64)
        k2 = np.asarray(d.load("ghi")[g], np.uint64)
    else:
        k1, k2 = np.zeros(m, np.int64), np.zeros(m, np.uint64)
    st = {
        "rows": rows,
        "k1": k1,
        "k2": k2,
        "k3": rows.copy(),
        "mr": rows.copy(),
        "ds": np.full(m, np.nan, np.float32),
    }
    _save_state(cc, 0, q, st)
    _send(cc, 0, q, offsets, st, adj, np.ones(m, bool))
    return m


def cc_round(q: int, t: int, offsets: np.ndarray, cc: str, *_deps) -> int:
    """Round ``t`` for partition ``q``: take the best label among the messages of round
    ``t - 1`` (a direct one first among equals, for its similarity), send the changed ones on.
    Returns how many nodes changed."""
    P = len(offsets) - 1
    st = _load_state(cc, t - 1, q)
    ms = [read_bucket(f"{cc}/m{t - 1}-{p}", q, ("m",))["m"] for p in range(P)]
    msg = _unpack(np.concatenate(ms), _MSG)
    rows = st["rows"]
    changed = np.zeros(len(rows), bool)
    if len(msg["v"]):
        v = msg["v"]
        order = np.lexsort((np.isnan(msg["s"]), msg["k3"], msg["k2"], msg["k1"], v))
        v = v[order]
        start = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))
        best = order[start]
        mr = np.minimum.reduceat(msg["mr"][order], start)
        pos = np.searchsorted(rows, v[start])
        a1, a2, a3 = st["k1"][pos], st["k2"][pos], st["k3"][pos]
        b1, b2, b3 = msg["k1"][best], msg["k2"][best], msg["k3"][best]
        lt = (b1 < a1) | ((b1 == a1) & ((b2 < a2) | ((b2 == a2) & (b3 < a3))))
        eq = (b1 == a1) & (b2 == a2) & (b3 == a3)
        bs = msg["s"][best]
        ds = st["ds"][pos]
        ds = np.where(lt, bs, np.where(eq & np.isnan(ds), bs, ds))
        for k, val in (("k1", b1), ("k2", b2), ("k3", b3)):
            st[k][pos[lt]] = val[lt]
        st["ds"][pos] = ds
        low = mr < st["mr"][pos]
        st["mr"][pos[low]] = mr[low]
        changed[pos[lt | low]] = True
    _save_state(cc, t, q, st)
    adj = {k: np.load(f"{cc}/a{q}.{k}.npy") for k in ("src", "dst", "sim")}
    _send(cc, t, q, offsets, st, adj, changed)
    return int(np.count_nonzero(changed))


def cc_final(d: Part, q: int, t: int, offsets: np.ndarray, cc: str, todo: str, *_deps) -> int:
    """The ids of partition ``q``'s nodes, and its members whose similarity to their
    representative is not known (``todo``: a shuffle of pairs (member, representative))."""
    st = _load_state(cc, t, q)
    rows = st["rows"]
    buf, off = d.id_bytes(rows - d.offset)
    atomic_save(f"{cc}/ids{q}.v.npy", buf)
    atomic_save(f"{cc}/ids{q}.o.npy", off)
    rep = st["k3"]
    need = (rep != rows) & np.isnan(st["ds"])
    left = rows[need]
    write_buckets(todo, owner(offsets, left), len(offsets) - 1, {"left": left, "right": rep[need]})
    return int(np.count_nonzero(need))


def cc_map(P: int, t: int, cc: str, measured: str, *_deps) -> ClusterMap:
    """The cluster map of all nodes (built on a worker): representative row and id,
    similarity to it (known, measured (``measured``: none if "") or 1 for a representative)
    and cluster's first row."""
    rows, rep, sim, cfirst = [], [], [], []
    ids: list[tuple[np.ndarray, np.ndarray]] = []
    for q in range(P):
        st = _load_state(cc, t, q)
        r, k3, ds = st["rows"], st["k3"], st["ds"]
        if measured:
            m = read_bucket(f"{measured}/e{q}", q, ("src", "dst", "sim"))
            ds[np.searchsorted(r, m["src"])] = m["sim"]
        ds[k3 == r] = 1.0
        rows.append(r)
        rep.append(k3)
        sim.append(ds)
        cfirst.append(st["mr"])
        ids.append((np.load(f"{cc}/ids{q}.v.npy"), np.load(f"{cc}/ids{q}.o.npy")))
    rows_a = concat(rows, np.int64)
    rep_a = concat(rep, np.int64)
    at = np.searchsorted(rows_a, rep_a)
    return ClusterMap(
        rows_a,
        rep_a,
        *take_ragged(*concat_ragged(ids), at),
        concat(sim, np.float32).astype(np.float32),
        concat(cfirst, np.int64),
    )


def components_step(ctx: RunContext) -> None:
    """Components, representatives and similarities on the workers; ``ctx.cluster_map`` is a
    future of the :class:`ClusterMap`, on a worker (not on the client)."""
    P, offsets = ctx.P, ctx.offsets
    cc = ctx.folder("components")
    keep = ctx.config.cluster.keep
    prev = [
        ctx.submit(cc_init, d, q, offsets, ctx.edges, keep, cc, name="ccinit", i=q)
        for q, d in enumerate(ctx.parts)
    ]
    ctx.client.gather(prev)
    t = 0
    while True:
        t += 1
        cur = [ctx.submit(cc_round, q, t, offsets, cc, *prev, name=f"cc{t}", i=q) for q in range(P)]
        changed = sum(ctx.client.gather(cur))
        prev = cur
        ctx.done()
        for f in glob.glob(f"{cc}/[sm]{t - 2}-*"):  # no task reads these any more
            os.unlink(f)
        if not changed:
            break
    ctx.rounds = t
    todo = ctx.folder("todo")
    fin = [
        ctx.submit(cc_final, d, q, t, offsets, cc, f"{todo}/t{q}", *prev, name="ccfinal", i=q)
        for q, d in enumerate(ctx.parts)
    ]
    measured = ctx.folder("measured")
    if sum(ctx.client.gather(fin)):
        similarity(
            ctx,
            [f"{todo}/t{q}" for q in range(P)],
            None,
            None,
            "member",
            (measured, offsets, False),
            gather=False,
        )
    else:  # every member is a verified neighbour of its representative: nothing to measure
        measured = ""
    ctx.cluster_map = ctx.submit(cc_map, P, t, cc, measured, name="ccmap")
    ctx.client.gather([ctx.submit(_size, ctx.cluster_map, name="ccsize")])


def _size(cm: ClusterMap) -> int:
    return len(cm.rows)
