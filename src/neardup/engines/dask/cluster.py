"""Step 6, cluster the verified pairs on the client: the one step that is not distributed (it
grows with the verified pairs, not with the corpus). The cluster map (texts in verified pairs ->
representative) is broadcast to the partitions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...pipeline import cluster_texts, preference_rank
from .context import RunContext
from .scratch import concat, owner
from .verify import similarity


@dataclass
class ClusterMap:
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


def cluster_step(ctx: RunContext) -> None:
    """Union-find or strict clusters of the texts in verified pairs; a member's similarity to
    its representative that no verified pair gives is computed next to the data."""
    cfg, verified, P = ctx.config, ctx.verified, ctx.P
    nodes = concat([v["nodes"][0] for v in verified], np.int64)
    nlen = concat([v["nodes"][1] for v in verified], np.int64)
    nfp = concat([v["nodes"][2] for v in verified], np.uint64)
    nid = [x for v in verified for x in v["nodes"][3]]
    nodes, at = np.unique(nodes, return_index=True)
    nlen, nfp = nlen[at], nfp[at]
    nid = [nid[i] for i in at.tolist()]
    m = len(nodes)
    rank = preference_rank(m, cfg.cluster.keep, nlen, nfp)
    li = np.searchsorted(nodes, ctx.vl)
    ri = np.searchsorted(nodes, ctx.vr)

    def measure(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Similarities of texts (by their number among ``nodes``), next to the data."""
        ml, mr = nodes[a], nodes[b]
        own = owner(ctx.offsets, ml)
        res = similarity(
            ctx, None, [(ml[own == p], mr[own == p]) for p in range(P)], None, "member"
        )
        rl = np.concatenate([r["pairs"][0] for r in res])
        rs = np.concatenate([r["pairs"][2] for r in res])
        order = np.argsort(rl)
        return rs[order[np.searchsorted(rl[order], ml)]]

    rep_c, msim = cluster_texts(m, li, ri, ctx.vs, cfg.cluster.method, rank, measure)
    cfirst_c = np.full(m, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(cfirst_c, rep_c, nodes)
    cm = ClusterMap(nodes, nodes[rep_c], [nid[i] for i in rep_c.tolist()], msim, cfirst_c[rep_c])
    [ctx.cluster_map] = ctx.client.scatter([cm], broadcast=True)
    ctx.futures.append(ctx.cluster_map)
    ctx.nodes, ctx.node_ids = nodes, nid
