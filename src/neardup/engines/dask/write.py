"""Step 7, write: labels, the ``clusters`` and ``pairs`` tables, and the deduplicated corpus.

Each partition labels its rows (labels by first appearance need a prefix sum of "new" rows per
partition and one more small broadcast) and writes its rows of ``clusters`` and ``pairs`` as
Parquet parts in the scratch folder; the client appends them to one file each (parquet, jsonl
or csv) in row order, one part at a time, or moves them as they are into folders
(``partitioned_tables``). Meanwhile each partition writes its kept records as the local engine
writes them (:func:`neardup.io.write_deduplicated_part`: the input's format and columns, JSONL
lines copied as they are from the partition's byte range, Parquet rows re-read from its row
groups) into ``deduplicated/``: one output per input, named as the local engine names it (the
parts of an input of several partitions joined on a worker), or with ``partitioned_tables`` a
folder of that name per input file holding one part per partition (see :class:`Corpus`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError, InputError, SkipReason
from ...io import ReadOptions, Staged, TableStream, prepare_outdir
from ...pipeline import PairCounts
from .clustermap import ClusterMap
from .context import RunContext
from .pairs import cross_edges, group_pairs, group_send, pairs_table
from .plan import Spec
from .scratch import (
    Part,
    arrow_strs,
    concat,
    concat_ragged,
    owner,
    take_ragged,
    write_buckets,
    write_parquet,
)


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
    for name, a in (
        ("rep", rep),
        ("cf", cf),
        ("sim", sim),
        ("new", new),
        ("found", found),
        ("pos", pos),
    ):
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


def final_c(
    d: Part,
    p: int,
    label0: int,
    lut: tuple,
    cm: ClusterMap,
    P: int,
    offsets: np.ndarray,
    fp_prefix: str,
    table: str,
    *_deps,
) -> int:
    """This partition's rows of ``clusters`` (a Parquet part in the scratch folder) and its
    fingerprint pairs by owner of the left row (a shuffle)."""
    n = d.n
    lgroup = d.load("lgroup")
    gfirst = d.load("gfirst")
    gid = d.ragged("gfirst_id")
    R = d.offset + np.arange(n, dtype=np.int64)
    new = d.load("fa_new")
    labels = np.empty(n, np.int64)
    labels[new] = label0 + np.arange(int(np.count_nonzero(new)))
    old = ~new
    lrows, llab = lut
    labels[old] = llab[np.searchsorted(lrows, d.load("fa_cf")[old])]
    ids = d.id_bytes()
    has = lgroup >= 0
    hidx = np.flatnonzero(has)
    # each row's representative id: its own, its text's first row's, or its cluster's; taken
    # from the three lists one after another
    G = len(gid[1]) - 1
    at = np.arange(n, dtype=np.int64)
    at[hidx] = n + lgroup[hidx]
    found, pos = d.load("fa_found"), d.load("fa_pos")
    at[found] = n + G + pos[found]
    rep_id = take_ragged(*concat_ragged([ids, gid, cm.rep_id_bytes()]), at)
    write_parquet(
        {
            "id": arrow_strs(*ids),
            "cluster": labels,
            "representative": arrow_strs(*rep_id),
            "similarity": d.load("fa_sim"),
        },
        table,
    )
    # fingerprint pairs: (first row of the text, a later copy)
    copy = has.copy()
    copy[hidx] = gfirst[lgroup[hidx]] != R[hidx]
    ci = np.flatnonzero(copy)
    fl = gfirst[lgroup[ci]]
    write_buckets(
        fp_prefix,
        owner(offsets, fl),
        P,
        {"left": fl, "right": R[ci]},
        ragged={"ida": take_ragged(*gid, lgroup[ci]), "idb": take_ragged(*ids, ci)},
    )
    d.save("keep", d.load("fa_rep") == R)
    return n


def write_part(
    spec: Spec,
    read_opts: ReadOptions,
    line_counts: list[int],
    drops: np.ndarray,
    d: Part,
    dest: str,
    *_deps,
) -> str | None:
    """Write the partition's kept records to ``dest`` as the local engine writes them (its
    input's format and columns; JSONL lines copied as they are, read from the partition's
    first byte); ``None`` when it holds nothing readable (nothing written)."""
    from ...io import FilePart, write_deduplicated_part

    # one flag per record the reader yields: the rows dropped after the read (ids repeated
    # from earlier partitions) are records too
    n = d.n + len(drops)
    alive = np.ones(n, bool)
    alive[drops] = False
    keep = np.zeros(n, bool)
    keep[alive] = d.load("keep")
    part = (
        FilePart(spec.start, spec.end, sum(line_counts), row_groups=spec.row_groups)
        if spec.split or spec.row_groups
        else None
    )
    lines = replace(d, rowv="").load("lines") if d.fmt == "jsonl" else None
    opts = replace(read_opts, on_error="skip")  # errors were reported by the first read
    try:
        # parents=False: the client made the folder; if it removed it (a failed run), the
        # write fails rather than bringing it back
        out = write_deduplicated_part(
            spec.path, keep, dest, options=opts, part=part, lines=lines, parents=False
        )
    except ConfigError as e:  # a count that differs from the first read's
        raise InputError(
            f"changed while it was deduplicated ({e})",
            path=spec.path,
            reason=SkipReason.UNREADABLE,
            whole_file=True,
        ) from e
    return None if out is None else str(out)


def join_parts(parts: list[str | None], dest: str, fmt: str, *_deps) -> str | None:
    """The parts of one input (those written) concatenated into ``dest``, then removed."""
    from ...io import concat_files

    done = [p for p in parts if p is not None]
    if not done:
        return None
    if len(done) == 1:
        os.replace(done[0], dest)
        return dest
    concat_files(done, dest, fmt, parents=False)
    for p in done:
        os.unlink(p)
    return dest


def fp_cluster_stats(red: str, s: int, cm: ClusterMap) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Clusters of the exact groups of bucket ``s`` that are not in the cluster map, their
    largest size, and the copies of the mapped ones by representative."""
    rows, tot = np.load(f"{red}/g{s}.rows.npy"), np.load(f"{red}/g{s}.tot.npy")
    found, pos = cm.find(rows)
    free = tot[~found]
    return (
        int(np.count_nonzero(free >= 2)),
        int(free.max(initial=0)),
        cm.rep[pos[found]],
        tot[found],
    )


def write_step(ctx: RunContext) -> None:
    """Label every row, write the tables and the corpus; count kept rows and clusters."""
    client, parts, P, offsets = ctx.client, ctx.parts, ctx.P, ctx.offsets
    cm_f = ctx.cluster_map
    fa = [ctx.submit(final_a, d, cm_f, name="finala", i=p) for p, d in enumerate(parts)]
    counts = client.gather(fa)
    ctx.kept = sum(c[0] for c in counts)
    label0 = np.zeros(P + 1, np.int64)
    np.cumsum([c[1] for c in counts], out=label0[1:])
    fb = client.gather(
        [
            ctx.submit(final_b, d, int(label0[p]), fa[p], name="finalb", i=p)
            for p, d in enumerate(parts)
        ]
    )
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
    fc = [
        ctx.submit(
            final_c,
            d,
            p,
            int(label0[p]),
            lut_f,
            cm_f,
            P,
            offsets,
            fpre[p],
            ctab[p],
            fa[p],
            name="finalc",
            i=p,
        )
        for p, d in enumerate(parts)
    ]
    # the pairs table on the workers (:mod:`neardup.engines.dask.pairs`): only counts come back
    cfg = ctx.config
    mode, max_group = cfg.pairs.mode, cfg.pairs.max_group
    exd, rdir, sdir, xdir = (
        ctx.folder(n) for n in ("grouppairs", "records", "sentrecords", "crosspairs")
    )
    expre = [f"{exd}/x{p}" for p in range(P)]
    gp = [
        ctx.submit(
            group_pairs,
            d,
            fpre,
            ctx.edges,
            p,
            P,
            offsets,
            mode,
            max_group,
            expre[p],
            rdir,
            *fc,
            name="gpairs",
            i=p,
        )
        for p, d in enumerate(parts)
    ]
    gs = [
        ctx.submit(group_send, q, ctx.edges, P, offsets, rdir, sdir, *gp, name="gsend", i=q)
        for q in range(P)
    ]
    cx = [
        ctx.submit(
            cross_edges,
            p,
            ctx.edges,
            P,
            offsets,
            rdir,
            sdir,
            mode,
            max_group,
            xdir,
            *gs,
            name="cross",
            i=p,
        )
        for p in range(P)
    ]
    xpre = [f"{xdir}/x{p}" for p in range(P)]
    pt_f = [
        ctx.submit(pairs_table, xpre, expre, p, ptab[p], *cx, name="ptable", i=p) for p in range(P)
    ]
    cs_f = [
        ctx.submit(fp_cluster_stats, ctx.exact_dir, s, cm_f, name="cstats", i=s) for s in range(P)
    ]

    outdir = ctx.outdir
    prepare_outdir(outdir)
    streams: list[Any] = []  # TableStream or Staged folders, discarded on failure
    outputs = ctx.outputs
    corpus = None
    try:
        if ctx.output.write_corpus:  # written by the workers while the client writes the tables
            corpus = Corpus(ctx, fc)
        staged: dict[str, Any] = {}
        made = {"clusters": fc, "pairs": pt_f}
        for stem, tabs in (("clusters", ctab), ("pairs", ptab)):
            if ctx.partitioned_tables:
                # the workers' parts become the output as they are: moved, not read
                folder = Staged(outdir / stem, directory=True)
                sd: Staged | TableStream = folder
                streams.append(folder)
                for i, path in enumerate(tabs):
                    made[stem][i].result()
                    shutil.move(path, folder.tmp / f"part-{i:05d}.parquet")
            else:
                ts = TableStream(outdir / stem, ctx.output.format)
                sd = ts
                streams.append(ts)
                for i, path in enumerate(tabs):
                    # each part as soon as it is made: the clusters while the pairs are made
                    made[stem][i].result()
                    ts.write_parquet_part(path)
            staged[stem] = sd
        _counts(ctx, gp + cx, cs_f)
        if corpus is not None:
            corpus.finish()
        # all written: only now does any output take its place (none if anything failed)
        for stem, sd in staged.items():
            outputs[stem] = str(sd.commit())
            streams.remove(sd)
        if corpus is not None:
            outputs["deduplicated"] = corpus.commit()
            corpus = None
    except BaseException:
        for s in streams:
            s.discard()
        if corpus is not None:
            corpus.discard()
        raise


def _counts(ctx: RunContext, pair_counts: list, cluster_stats: list) -> None:
    """The pairs table's counts and the clusters' number and largest size, for the summary."""
    cfg = ctx.config
    counts = PairCounts(mode=cfg.pairs.mode, max_group=cfg.pairs.max_group)
    for c in ctx.client.gather(pair_counts):
        counts = counts.merge(c)
    if ctx.distinct:  # a text without copies is a group of one (the buckets hold copies only)
        counts.largest_group = max(counts.largest_group, 1)
    ctx.pair_counts = counts
    csize = ctx.client.gather(cluster_stats)
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


_EXT = {"jsonl": ".jsonl", "json": ".json", "csv": ".csv", "tsv": ".tsv", "parquet": ".parquet"}


class Corpus:
    """The deduplicated corpus being written by the workers: ``deduplicated/`` with one output
    per input named and written as the local engine's (a file in the input's format; a folder
    for a folder of text files), or, with ``partitioned``, a folder of that name per input file
    holding its partitions' parts (``part-NNNNN.EXT``, in order; concatenated, the local
    engine's file). The outputs of inputs of several partitions are written as parts and joined
    on a worker. Everything goes into a temporary folder renamed at the end."""

    def __init__(self, ctx: RunContext, deps: list):
        from ...io import deduplicated_names

        self.ctx = ctx
        self.staged = Staged(ctx.outdir / "deduplicated", directory=True)
        self.names = deduplicated_names(ctx.paths, ctx.read)
        tmp = self.staged.tmp
        by_input: dict[int, list[int]] = {}
        for p, sp in enumerate(ctx.specs):
            by_input.setdefault(sp.source, []).append(p)
        self.futures: list = []
        self.finals: list[tuple[Path, Any]] = []  # per input: its output and its future
        for k, (name, fmt) in enumerate(self.names):
            ps = by_input.get(k, [])
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)  # a shard's folders
            if fmt == "textdir" or (len(ps) == 1 and not ctx.partitioned_tables):
                dests = [tmp / name]
            elif ctx.partitioned_tables:
                (tmp / name).mkdir()
                dests = [tmp / name / f"part-{j:05d}{_EXT[fmt]}" for j in range(len(ps))]
            else:
                (tmp / ".parts").mkdir(exist_ok=True)
                dests = [tmp / ".parts" / f"{k}-{j:05d}{_EXT[fmt]}" for j in range(len(ps))]
            futs = [
                ctx.submit(
                    write_part,
                    ctx.specs[p],
                    ctx.read,
                    ctx.line_prior[p],
                    ctx.drops[p],
                    ctx.parts[p],
                    str(dest),
                    deps[p],
                    name="part",
                    i=p,
                )
                for p, dest in zip(ps, dests, strict=True)
            ]
            self.futures += futs
            last = futs[0] if len(futs) == 1 else None
            if len(futs) > 1 and not ctx.partitioned_tables:
                last = ctx.submit(join_parts, futs, str(tmp / name), fmt, name="join", i=k)
                self.futures.append(last)
            self.finals.append((tmp / name, last if last is not None else futs))

    def finish(self) -> None:
        """Wait for the workers to write everything."""
        ctx = self.ctx
        ctx.client.gather(self.futures)
        shutil.rmtree(self.staged.tmp / ".parts", ignore_errors=True)
        self.written = []
        for path, fut in self.finals:
            if isinstance(fut, list):  # a folder of parts
                if any(f.result() is not None for f in fut):
                    self.written.append(path.name)
                else:  # nothing readable in any part: no output, as the local engine
                    shutil.rmtree(path, ignore_errors=True)
            elif fut.result() is not None:
                self.written.append(path.name)

    def commit(self) -> list[str]:
        """Rename the folder into place; the outputs, in input order."""
        final = self.staged.commit()
        return [str(final / name) for name in self.written]

    def discard(self) -> None:
        """Stop the writes (waiting for those under way to end on the workers) and remove the
        folder."""
        self.ctx.stop()
        self.staged.discard()
