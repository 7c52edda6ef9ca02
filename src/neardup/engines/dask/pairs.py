"""The ``pairs`` table on the workers: no pair passes through the client.

The local engine's pairs table (:func:`neardup.pipeline.expand_pairs`) holds the pairs inside
exact groups and, for each verified pair of texts, the pairs of their groups' members. Here:

1. :func:`group_pairs`, per partition ``p``: the pairs inside the exact groups whose first row
   ``p`` holds (a shuffle by owner of the left row), and a *record* of each of ``p``'s texts in
   verified pairs (its group's size and the members the pairs table takes of it, with ids).
2. :func:`group_send`, per partition ``q``: for each verified pair ``(u, v)``, ``u < v``, with
   ``v`` in ``q``, ``v``'s record goes to the partition of ``u`` (a shuffle).
3. :func:`cross_edges`, per partition ``p``: the pairs of the groups of its verified pairs
   (:func:`neardup.pipeline.cross_pairs`, as the local engine), shuffled by owner of the left
   row.
4. :func:`pairs_table`, per partition: its rows of the table, sorted, as a Parquet part.

Only counts (:class:`~neardup.pipeline.PairCounts`) come back to the client.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._arrays import sorted_unique
from ...pipeline import PairCounts, cross_pairs, ranges, within_pairs
from ...result import METHOD_NAMES
from .scratch import (
    Part,
    Ragged,
    atomic_save,
    concat,
    concat_ragged,
    encode_strs,
    owner,
    read_bucket,
    take_ragged,
    write_buckets,
    write_parquet,
)

_FINGERPRINT, _JACCARD = METHOD_NAMES.index("fingerprint"), METHOD_NAMES.index("jaccard")


def _edges(edges: str, p: int, P: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The verified pairs whose "src" partition ``p`` holds, both ways round: (src, dst, sim)."""
    got = [read_bucket(f"{edges}/e{q}", p, ("src", "dst", "sim")) for q in range(P)]
    return (
        concat([g["src"] for g in got], np.int64),
        concat([g["dst"] for g in got], np.int64),
        concat([g["sim"] for g in got], np.float32),
    )


def _save_records(path: str, rec: dict[str, np.ndarray], ids: Ragged) -> None:
    for k, a in rec.items():
        atomic_save(f"{path}.{k}.npy", a)
    atomic_save(f"{path}.ids.v.npy", ids[0])
    atomic_save(f"{path}.ids.o.npy", ids[1])


def _load_records(path: str) -> tuple[dict[str, np.ndarray], Ragged]:
    rec = {k: np.load(f"{path}.{k}.npy") for k in ("node", "size", "sent", "members")}
    return rec, (np.load(f"{path}.ids.v.npy"), np.load(f"{path}.ids.o.npy"))


def group_pairs(
    d: Part,
    fp_prefixes: list[str],
    edges: str,
    p: int,
    P: int,
    offsets: np.ndarray,
    mode: str,
    max_group: int,
    prefix: str,
    records: str,
    *_deps,
) -> PairCounts:
    """The pairs inside the exact groups whose first row partition ``p`` holds (each copy with
    the first row, and with ``mode`` "all" every two copies: :func:`neardup.pipeline.within_pairs`),
    shuffled by owner of the left row; and the records of ``p``'s texts in verified pairs
    (``records``): the group's size, and its first ``sent`` members with their ids (the whole
    group with ``mode`` "all" if it has at most ``max_group`` members, else the first row)."""
    fps = [read_bucket(pre, p, ("left", "right"), ("ida", "idb")) for pre in fp_prefixes]
    L = concat([x["left"] for x in fps], np.int64)
    R = concat([x["right"] for x in fps], np.int64)
    ida = [i for x in fps for i in x["ida"]]
    idb = [i for x in fps for i in x["idb"]]
    firsts, at, gi = np.unique(L, return_index=True, return_inverse=True)
    G = len(firsts)
    rows = np.concatenate([firsts, R])
    ids = np.asarray([ida[i] for i in at.tolist()] + idb, dtype=object)
    grp = np.concatenate([np.arange(G, dtype=np.int64), gi.astype(np.int64)])
    order = np.lexsort((rows, grp))  # each group's rows ascending: its first row first
    rows, ids = rows[order], ids[order]
    sizes = np.bincount(grp, minlength=G).astype(np.int64)
    starts = np.zeros(G, np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    wl, wr, wimp, counts = within_pairs(np.arange(len(rows)), starts, sizes, mode, max_group)
    left, right = rows[wl], rows[wr]
    write_buckets(
        prefix,
        owner(offsets, left),
        P,
        {"left": left, "right": right, "implied": wimp},
        {"ida": ids[wl].tolist(), "idb": ids[wr].tolist()},
    )
    # the records of this partition's texts in verified pairs
    node = sorted_unique(_edges(edges, p, P)[0], overwrite=True)
    k = np.minimum(np.searchsorted(firsts, node), max(G - 1, 0))
    grouped = (firsts[k] == node) if G else np.zeros(len(node), bool)
    gk = k[grouped]
    size = np.ones(len(node), np.int64)
    size[grouped] = sizes[gk]
    sent = np.ones(len(node), np.int64)
    if mode == "all":
        sent[grouped] = np.where(sizes[gk] <= max_group, sizes[gk], 1)
    off = np.zeros(len(node) + 1, np.int64)
    np.cumsum(sent, out=off[1:])
    members = np.empty(int(off[-1]), np.int64)
    mids = np.empty(int(off[-1]), object)
    gpos, gsrc = ranges(off[:-1][grouped], sent[grouped]), ranges(starts[gk], sent[grouped])
    members[gpos], mids[gpos] = rows[gsrc], ids[gsrc]
    alone = np.flatnonzero(~grouped)
    members[off[alone]] = node[alone]
    mids[off[alone]] = np.asarray(d.row_ids(node[alone] - d.offset), dtype=object)
    _save_records(
        f"{records}/n{p}",
        {"node": node, "size": size, "sent": sent, "members": members},
        encode_strs(mids.tolist()),
    )
    return counts


def group_send(q: int, edges: str, P: int, offsets: np.ndarray, records: str, out: str, *_deps):
    """For each verified pair ``(u, v)``, ``u < v``, whose ``v`` partition ``q`` holds: ``v``'s
    record to the partition of ``u`` (once per partition), as two shuffles that list the records
    in the same order: ``gn`` (node, size, sent) and ``gm`` (members and their ids)."""
    src, dst, _ = _edges(edges, q, P)
    later = src > dst
    dest = owner(offsets, dst[later])
    node = src[later]
    order = np.lexsort((node, dest))  # (partition, node), sorted, each once
    dest, node = dest[order], node[order]
    once = np.concatenate(([True], (dest[1:] != dest[:-1]) | (node[1:] != node[:-1])))[: len(node)]
    dest, node = dest[once], node[once]
    rec, ids = _load_records(f"{records}/n{q}")
    k = np.searchsorted(rec["node"], node)
    off = np.zeros(len(rec["node"]) + 1, np.int64)
    np.cumsum(rec["sent"], out=off[1:])
    sent = rec["sent"][k]
    take = ranges(off[:-1][k], sent)
    write_buckets(f"{out}/gn{q}", dest, P, {"node": node, "size": rec["size"][k], "sent": sent})
    write_buckets(
        f"{out}/gm{q}",
        np.repeat(dest, sent),
        P,
        {"members": rec["members"][take]},
        ragged={"ids": take_ragged(*ids, take)},
    )


def cross_edges(
    p: int,
    edges: str,
    P: int,
    offsets: np.ndarray,
    records: str,
    sent_dir: str,
    mode: str,
    max_group: int,
    out: str,
    *_deps,
) -> PairCounts:
    """The pairs of partition ``p``'s verified pairs ``(u, v)``, ``u < v``, ``u`` in ``p``:
    the groups' first rows, and with ``mode`` "all" every member of one group with every member
    of the other (:func:`neardup.pipeline.cross_pairs`); shuffled by owner of the left row."""
    src, dst, sim = _edges(edges, p, P)
    first = src < dst
    u, v, sim = src[first], dst[first], sim[first]
    own, own_ids = _load_records(f"{records}/n{p}")
    nodes, sizes, sents, members, ids = [own["node"]], [own["size"]], [own["sent"]], [], []
    members.append(own["members"])
    ids.append(own_ids)
    for q in range(P):
        gn = read_bucket(f"{sent_dir}/gn{q}", p, ("node", "size", "sent"))
        gm = read_bucket(f"{sent_dir}/gm{q}", p, ("members",), (), ("ids",))
        nodes.append(gn["node"])
        sizes.append(gn["size"])
        sents.append(gn["sent"])
        members.append(gm["members"])
        ids.append(gm["ids"])
    node_all = concat(nodes, np.int64)
    sent_all = concat(sents, np.int64)
    off = np.zeros(len(node_all) + 1, np.int64)
    np.cumsum(sent_all, out=off[1:])
    node, sel = np.unique(node_all, return_index=True)  # each record once, by node
    sent = sent_all[sel]
    take = ranges(off[:-1][sel], sent)
    mem = concat(members, np.int64)[take]
    mid = take_ragged(*concat_ragged(ids), take)
    starts = np.zeros(len(node), np.int64)
    np.cumsum(sent[:-1], out=starts[1:])
    eu, ev = np.searchsorted(node, u), np.searchsorted(node, v)
    a, b, edge, implied, counts = cross_pairs(
        np.arange(len(mem)), starts, concat(sizes, np.int64)[sel], eu, ev, mode, max_group
    )
    swap = mem[a] > mem[b]
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    left = mem[a]
    write_buckets(
        f"{out}/x{p}",
        owner(offsets, left),
        P,
        {"left": left, "right": mem[b], "sim": sim[edge], "implied": implied},
        ragged={"ida": take_ragged(*mid, a), "idb": take_ragged(*mid, b)},
    )
    return counts


def pairs_table(
    cross_prefixes: list[str], ex_prefixes: list[str], p: int, table: str, *_deps
) -> int:
    """Partition ``p``'s rows of ``pairs`` (verified pairs, those implied by them, and the
    pairs inside exact groups whose left row it holds), sorted, as a Parquet part in the
    scratch folder."""
    vs = [
        read_bucket(pre, p, ("left", "right", "sim", "implied"), ("ida", "idb"))
        for pre in cross_prefixes
    ]
    ws = [read_bucket(pre, p, ("left", "right", "implied"), ("ida", "idb")) for pre in ex_prefixes]
    left = concat([x["left"] for x in vs + ws], np.int64)
    right = concat([x["right"] for x in vs + ws], np.int64)
    sim = concat(
        [x["sim"] for x in vs] + [np.ones(len(x["left"]), np.float32) for x in ws], np.float32
    )
    method = concat(
        [np.full(len(x["left"]), _JACCARD, np.uint8) for x in vs]
        + [np.full(len(x["left"]), _FINGERPRINT, np.uint8) for x in ws],
        np.uint8,
    )
    implied = concat([x["implied"] for x in vs + ws], bool).astype(bool)
    ida = [i for x in vs + ws for i in x["ida"]]
    idb = [i for x in vs + ws for i in x["idb"]]
    order = np.lexsort((right, left))
    names = np.asarray(METHOD_NAMES, dtype=object)
    cols: dict[str, Any] = {
        "id_a": [ida[i] for i in order.tolist()],
        "id_b": [idb[i] for i in order.tolist()],
        "similarity": sim[order].astype(np.float32),
        "method": names[method[order]],
        "implied": implied[order],
    }
    write_parquet(cols, table)
    return len(left)
