"""Step 6, cluster the verified pairs. Method "components" runs on the workers
(:mod:`neardup.engines.dask.components`: the cluster map stays on a worker and goes from there to
the partitions); method "strict" (greedy, in rank order: sequential) gathers the verified pairs
on the client and broadcasts the cluster map (texts in verified pairs -> representative)."""

from __future__ import annotations

import numpy as np

from ...pipeline import cluster_texts, preference_rank
from .clustermap import ClusterMap
from .components import components_step
from .context import RunContext
from .scratch import concat, encode_strs, owner
from .verify import similarity


def cluster_step(ctx: RunContext) -> None:
    """Components (on the workers) or strict clusters (on the client) of the texts in verified
    pairs; a member's similarity to its representative that no verified pair gives is computed
    next to the data."""
    cfg, verified, P = ctx.config, ctx.verified, ctx.P
    if cfg.cluster.method == "components":
        components_step(ctx)
        return
    nodes = concat([v["nodes"][0] for v in verified], np.int64)
    nid = [x for v in verified for x in v["nodes"][3]]
    nodes, at = np.unique(nodes, return_index=True)
    nid = [nid[i] for i in at.tolist()]
    nlen = concat([v["nodes"][1] for v in verified], np.int64)[at]
    nfp = concat([v["nodes"][2] for v in verified], np.uint64)[at]
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
    cm = ClusterMap(
        nodes, nodes[rep_c], *encode_strs([nid[i] for i in rep_c.tolist()]), msim, cfirst_c[rep_c]
    )
    [ctx.cluster_map] = ctx.client.scatter([cm], broadcast=True)
    ctx.futures.append(ctx.cluster_map)
