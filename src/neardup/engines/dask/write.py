"""Step 7, write: labels, the ``clusters`` and ``pairs`` tables, and the deduplicated corpus.

Each partition labels its rows (labels by first appearance need a prefix sum of "new" rows per
partition and one more small broadcast) and writes its rows of ``clusters`` and ``pairs`` as
Parquet parts in the scratch folder; the client appends them to one file each (parquet, jsonl
or csv) in row order, one part at a time, or moves them as they are into folders
(``partitioned_tables``). Each partition re-reads its input (its byte range or row groups only)
and writes the kept records to ``deduplicated/part-NNNNN.parquet``.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from typing import Any

import numpy as np

from ...io import ReadOptions, SkipReport, Staged, TableStream, prepare_outdir
from ...result import METHOD_NAMES
from .cluster import ClusterMap
from .context import RunContext
from .plan import Spec
from .read import open_stream
from .scratch import Part, concat, owner, read_bucket, write_buckets, write_parquet

_FINGERPRINT, _JACCARD = METHOD_NAMES.index("fingerprint"), METHOD_NAMES.index("jaccard")


def final_a(d: Part, cm: ClusterMap) -> tuple[int, int]:
    """Each row's representative, cluster's first row and similarity; returns (kept, new)."""
    lgroup = d.load("lgroup")
    gfirst = d.load("gfirst")
    R = d.offset + np.arange(d.n, dtype=np.int64)
    has = lgroup >= 0
    f = R.copy()
    f[has] = gfirst[lgroup[has]]
    rep, cf = f.copy(), f.copy()
    sim = np.ones(d.n, np.float32)
    found, pos = cm.find(f)
    found &= has
    rep[found] = cm.rep[pos[found]]
    cf[found] = cm.cfirst[pos[found]]
    sim[found] = cm.sim[pos[found]]
    new = cf == R
    for name, a in (("rep", rep), ("cf", cf), ("sim", sim), ("new", new), ("found", found),
                    ("pos", pos)):
        d.save(f"fa_{name}", a)
    return int(np.count_nonzero(rep == R)), int(np.count_nonzero(new))


def final_b(d: Part, label0: int, *_deps) -> tuple[np.ndarray, np.ndarray]:
    """Labels of the new rows that other rows may point to (first rows of groups with copies
    and of near-duplicate clusters)."""
    new = d.load("fa_new")
    lgroup = d.load("lgroup")
    R = d.offset + np.arange(d.n, dtype=np.int64)
    has = lgroup >= 0
    shared = np.zeros(d.n, bool)
    shared[has] = d.load("gtotal")[lgroup[has]] > 1
    shared |= d.load("fa_found")
    label = label0 + np.cumsum(new) - 1
    m = new & shared
    return R[m], label[m]


def final_c(d: Part, p: int, label0: int, lut: tuple, cm: ClusterMap, P: int,
             offsets: np.ndarray, fp_prefix: str, table: str, *_deps) -> int:
    """This partition's rows of ``clusters`` (a Parquet part in the scratch folder) and its
    fingerprint pairs by owner of the left row (a shuffle)."""
    n = d.n
    lgroup = d.load("lgroup")
    gfirst = d.load("gfirst")
    gfirst_id = d.strs("gfirst_id")
    R = d.offset + np.arange(n, dtype=np.int64)
    new = d.load("fa_new")
    labels = np.empty(n, np.int64)
    labels[new] = label0 + np.arange(int(np.count_nonzero(new)))
    old = ~new
    lrows, llab = lut
    labels[old] = llab[np.searchsorted(lrows, d.load("fa_cf")[old])]
    ids = d.row_ids(np.arange(n))
    has = lgroup >= 0
    rep_id = list(ids)
    hidx = np.flatnonzero(has)
    for i, g in zip(hidx.tolist(), lgroup[hidx].tolist()):
        rep_id[i] = gfirst_id[g]
    found, pos = d.load("fa_found"), d.load("fa_pos")
    for i, q in zip(np.flatnonzero(found).tolist(), pos[found].tolist()):
        rep_id[i] = cm.rep_id[q]
    write_parquet({"id": ids, "cluster": labels, "representative": rep_id,
                    "similarity": d.load("fa_sim")}, table)
    # fingerprint pairs: (first row of the text, a later copy)
    copy = has.copy()
    copy[hidx] = gfirst[lgroup[hidx]] != R[hidx]
    ci = np.flatnonzero(copy)
    fl = gfirst[lgroup[ci]]
    write_buckets(fp_prefix, owner(offsets, fl), P, {"left": fl, "right": R[ci]},
                   {"ida": [gfirst_id[g] for g in lgroup[ci].tolist()],
                    "idb": [ids[i] for i in ci.tolist()]})
    d.save("keep", d.load("fa_rep") == R)
    return n


def pairs_table(verified: tuple, fp_prefixes: list[str], p: int, table: str, *_deps) -> int:
    """Partition ``p``'s rows of ``pairs`` (verified and fingerprint pairs whose left row it
    holds), sorted, as a Parquet part in the scratch folder."""
    vl, vr, vs, vida, vidb = verified
    fps = [read_bucket(pre, p, ("left", "right"), ("ida", "idb")) for pre in fp_prefixes]
    left = np.concatenate([vl] + [x["left"] for x in fps])
    right = np.concatenate([vr] + [x["right"] for x in fps])
    sim = np.concatenate([vs] + [np.ones(len(x["left"]), np.float32) for x in fps])
    method = np.concatenate([np.full(len(vl), _JACCARD, np.uint8)]
                            + [np.full(len(x["left"]), _FINGERPRINT, np.uint8) for x in fps])
    ida = list(vida) + [i for x in fps for i in x["ida"]]
    idb = list(vidb) + [i for x in fps for i in x["idb"]]
    order = np.lexsort((right, left))
    names = np.asarray(METHOD_NAMES, dtype=object)
    write_parquet({"id_a": [ida[i] for i in order.tolist()],
                    "id_b": [idb[i] for i in order.tolist()],
                    "similarity": sim[order].astype(np.float32),
                    "method": names[method[order]]}, table)
    return len(left)


def write_part(spec: Spec, read_opts: ReadOptions, line_counts: list[int], drops: np.ndarray,
                d: Part, path: str, *_deps) -> int:
    """Re-read the partition and write its kept documents (``id``, ``text``) to ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    opts = replace(read_opts, on_error="skip")  # errors were reported by the first read
    stream = open_stream(spec, opts, SkipReport(), sum(line_counts))
    keep = d.load("keep")
    dropped = set(drops.tolist())
    rows, texts = [], []
    i = j = 0
    for rec in stream:
        if i in dropped:
            i += 1
            continue
        if j < len(keep) and keep[j]:
            rows.append(j)
            texts.append(rec.text)
        i += 1
        j += 1
    if j != len(keep):
        raise RuntimeError(f"{spec.path}: the input changed while it was deduplicated")
    table = pa.table({"id": pa.array(d.row_ids(rows), pa.string()),
                      "text": pa.array(texts, pa.string())})
    pq.write_table(table, path)
    return len(rows)


def fp_cluster_stats(red: str, s: int, cm: ClusterMap
                      ) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Clusters of the exact groups of bucket ``s`` that are not in the cluster map, their
    largest size, and the copies of the mapped ones by representative."""
    rows, tot = np.load(f"{red}/g{s}.rows.npy"), np.load(f"{red}/g{s}.tot.npy")
    found, pos = cm.find(rows)
    free = tot[~found]
    return (int(np.count_nonzero(free >= 2)), int(free.max(initial=0)), cm.rep[pos[found]],
            tot[found])


def write_step(ctx: RunContext) -> None:
    """Label every row, write the tables and the corpus; count kept rows and clusters."""
    client, parts, P, offsets = ctx.client, ctx.parts, ctx.P, ctx.offsets
    cm_f, nodes, nid = ctx.cluster_map, ctx.nodes, ctx.node_ids
    vl, vr, vs = ctx.vl, ctx.vr, ctx.vs
    fa = [ctx.submit(final_a, d, cm_f, name="finala", i=p) for p, d in enumerate(parts)]
    counts = client.gather(fa)
    ctx.kept = sum(c[0] for c in counts)
    label0 = np.zeros(P + 1, np.int64)
    np.cumsum([c[1] for c in counts], out=label0[1:])
    fb = client.gather([ctx.submit(final_b, d, int(label0[p]), fa[p], name="finalb", i=p)
                        for p, d in enumerate(parts)])
    lrows = concat([x[0] for x in fb], np.int64)
    llab = concat([x[1] for x in fb], np.int64)
    del fb
    order = np.argsort(lrows)
    [lut_f] = client.scatter([(lrows[order], llab[order])], broadcast=True)
    ctx.futures.append(lut_f)
    fpd, tdir = ctx.folder("fppairs"), ctx.folder("tables")
    fpre = [f"{fpd}/m{p}" for p in range(P)]
    ctab = [f"{tdir}/clusters-{p:05d}.parquet" for p in range(P)]
    ptab = [f"{tdir}/pairs-{p:05d}.parquet" for p in range(P)]
    fc = [ctx.submit(final_c, d, p, int(label0[p]), lut_f, cm_f, P, offsets, fpre[p], ctab[p],
                     fa[p], name="finalc", i=p) for p, d in enumerate(parts)]
    # verified pairs with their ids, by owner of the left row
    idx_l, idx_r = np.searchsorted(nodes, vl), np.searchsorted(nodes, vr)
    own = owner(offsets, vl)
    pt_f = []
    for p in range(P):
        mk = np.flatnonzero(own == p)
        ver = (vl[mk], vr[mk], vs[mk], [nid[i] for i in idx_l[mk].tolist()],
               [nid[i] for i in idx_r[mk].tolist()])
        pt_f.append(ctx.submit(pairs_table, ver, fpre, p, ptab[p], *fc, name="ptable", i=p))
    csize = client.gather([ctx.submit(fp_cluster_stats, ctx.exact_dir, s, cm_f, name="cstats",
                                      i=s) for s in range(P)])
    n_clusters = sum(c[0] for c in csize)
    largest = max([c[1] for c in csize] + [1 if ctx.n else 0])
    creps = concat([c[2] for c in csize], np.int64)
    ctot = concat([c[3] for c in csize], np.int64)
    if len(creps):
        _, inv = np.unique(creps, return_inverse=True)
        sizes = np.bincount(inv, weights=ctot).astype(np.int64)
        n_clusters += int(np.count_nonzero(sizes >= 2))
        largest = max(largest, int(sizes.max()))
    ctx.clusters, ctx.largest = n_clusters, largest
    client.gather(pt_f)

    outdir = ctx.outdir
    prepare_outdir(outdir)
    staged_dir = None
    streams: list[Any] = []  # TableStream or Staged folders, discarded on failure
    outputs = ctx.outputs
    try:
        for stem, tabs in (("clusters", ctab), ("pairs", ptab)):
            if ctx.partitioned_tables:
                # the workers' parts become the output as they are: moved, not read
                sd = Staged(outdir / stem, directory=True)
                streams.append(sd)
                for i, path in enumerate(tabs):
                    shutil.move(path, sd.tmp / f"part-{i:05d}.parquet")
                outputs[stem] = str(sd.commit())
                continue
            ts = TableStream(outdir / stem, ctx.output.format)
            streams.append(ts)
            for path in tabs:
                ts.write_parquet_part(path)
            outputs[stem] = ts.commit()
        streams.clear()
        if ctx.output.write_corpus:
            staged_dir = Staged(outdir / "deduplicated", directory=True)
            writes = [ctx.submit(write_part, sp, ctx.read, ctx.line_prior[p], ctx.drops[p],
                                 parts[p], str(staged_dir.tmp / f"part-{p:05d}.parquet"), fc[p],
                                 name="part", i=p)
                      for p, sp in enumerate(ctx.specs)]
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
