"""Step 2, ids and errors: repeated ids across partitions, and the reading's errors in the
local engine's order.

Repeated ids are found by shuffling ``(id, partition, row)`` by a hash of the id. The errors
and skips of every partition and the repeated ids are sorted into global record order, so that
``on_error="fail"`` raises the error the local engine would raise first and ``"skip"`` counts
the same records. Rows whose id repeats an earlier partition's are dropped, and the partitions'
counts become global row offsets.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ...errors import InputError, SkipReason
from .context import RunContext
from .read import drop_rows, locate
from .scratch import (
    Part,
    arrow_strs,
    concat,
    concat_ragged,
    decode_strs,
    ragged_hash,
    read_bucket,
    take_ragged,
    write_buckets,
)


def id_map(d: Part, S: int, prefix: str) -> int:
    """The partition's ids by a hash of their UTF-8 bytes (as stored: never decoded here)."""
    if d.has_ids:
        v, off = d.ragged("ids")
    else:
        v, off = np.zeros(0, np.uint8), np.zeros(1, np.int64)
    n = len(off) - 1
    h = ragged_hash(v, off) % np.uint64(S)
    write_buckets(
        prefix,
        h.astype(np.int64),
        S,
        {"idx": np.arange(n, dtype=np.int64)},
        ragged={"ids": (v, off)},
    )
    return n


def id_reduce(prefixes: list[str], s: int, *_deps) -> list[tuple[int, int, int, int, str]]:
    """Ids seen in an earlier partition: ``(p, row, first p, first row, id)``."""
    got = [read_bucket(pre, s, ("idx",), (), ("ids",)) for pre in prefixes]
    part = np.repeat(np.arange(len(got)), [len(b["idx"]) for b in got])
    idx = concat([b["idx"] for b in got], np.int64)
    if len(idx) == 0:
        return []
    v, off = concat_ragged([b["ids"] for b in got])
    codes = np.asarray(arrow_strs(v, off).dictionary_encode().indices, np.int64)
    uniq, first = np.unique(codes, return_index=True)  # each id's first entry (in order)
    f = first[np.searchsorted(uniq, codes)]
    dup = np.flatnonzero(part[f] != part)
    ids = decode_strs(*take_ragged(v, off, dup))
    return [
        (int(part[j]), int(idx[j]), int(part[f[j]]), int(idx[f[j]]), x)
        for j, x in zip(dup.tolist(), ids, strict=True)
    ]


def dup_messages(ctx: RunContext, dups: list[tuple]) -> list[InputError]:
    """The reader's error for each repeated id ``(p, row, first p, first row, id)``."""
    need: dict[int, set[int]] = {}
    for p, i, fp, fi, _x in dups:
        need.setdefault(p, set()).add(i)
        need.setdefault(fp, set()).add(fi)
    locs = {}
    for p, idx in need.items():
        idx_l = sorted(idx)
        res = ctx.client.gather(ctx.submit(locate, ctx.parts[p], idx_l, name="locate", i=p))
        locs.update({(p, i): r for i, r in zip(idx_l, res)})
    out = []
    for p, i, fp, fi, x in dups:
        _, path, line = locs[(p, i)]
        out.append(
            InputError(
                f"duplicate id {x!r} (first seen at {locs[(fp, fi)][0]})",
                path=path,
                line=line,
                field=ctx.read.id_field,
                reason=SkipReason.DUPLICATE_ID,
            )
        )
    return out


def _raise_repeat(ctx: RunContext, repeats: list[tuple], infos: list[dict], field: str) -> None:
    """The first repeated id of a detected id field, in global record order, as the local
    reader raises it at the end of the read: within a partition (found by its reader) or
    across partitions (``(p, row, first p, first row, id)``)."""
    from ...io.readers import repeat_error

    first: tuple | None = None  # (p, row, error maker)
    for p, inf in enumerate(infos):
        r = inf.get("id_repeat")
        if r is not None and (first is None or (p, r[4]) < first[:2]):
            first = (p, r[4], lambda r=r: repeat_error(field, r[0], r[1], r[2], r[3]))
    for p, i, fp, fi, x in repeats:
        if first is None or (p, i) < first[:2]:
            first = (
                p,
                i,
                lambda p=p, i=i, fp=fp, fi=fi, x=x: _cross_repeat(ctx, field, p, i, fp, fi, x),
            )
    if first is not None:
        raise first[2]()


def _cross_repeat(
    ctx: RunContext, field: str, p: int, i: int, fp: int, fi: int, x: str
) -> InputError:
    from ...io.readers import repeat_error

    ((_, path, line),) = ctx.client.gather(
        ctx.submit(locate, ctx.parts[p], [i], name="locate", i=f"r{p}")
    )
    ((where, _, _),) = ctx.client.gather(
        ctx.submit(locate, ctx.parts[fp], [fi], name="locate", i=f"f{fp}")
    )
    return repeat_error(field, x, where, path, line)


def ids_step(ctx: RunContext) -> None:
    """Raise the first error (``on_error="fail"``) or count the skips; drop rows with repeated
    ids; set the global row offsets of the partitions."""
    parts, specs, P = ctx.parts, ctx.specs, ctx.P
    infos = [d.info for d in parts]
    dups: list[tuple] = []
    auto_ids = ctx.read.id_field is None and ctx.read.default_id is None
    # a detected id field: its ids where every record of every partition has it (as the local
    # reader decides), else row numbers for all
    is_dir = [Path(s.path).is_dir() for s in specs]
    detect = ctx.read.detect_id
    missing = next((inf["id_missing"] for inf in infos if inf.get("id_missing")), None)
    from_field = detect is not None and missing is None
    if detect is not None and not from_field:
        parts = [d if is_dir[p] else replace(d, has_ids=False) for p, d in enumerate(parts)]
    from ...io import IdInfo

    ctx.ids = IdInfo(
        field=ctx.read.id_field or detect,
        detected=detect is not None,
        missing=missing,
        file_names=any(is_dir),
        field_inputs=not all(is_dir),
    ).to_dict()
    if (
        P > 1
        and ctx.read.unique_ids
        and any(d_["n"] for d_ in infos)
        and (not auto_ids or any(is_dir) or from_field)
    ):
        sdir = ctx.folder("ids")
        pre = [f"{sdir}/m{p}" for p in range(P)]
        idm = [ctx.submit(id_map, d, P, pre[p], name="idmap", i=p) for p, d in enumerate(parts)]
        red = [ctx.submit(id_reduce, pre, s, *idm, name="idred", i=s) for s in range(P)]
        dups = sorted(x for r in ctx.client.gather(red) for x in r)
        del idm, red
    repeats: list[tuple] = []
    if from_field:  # not bad records: an error after the reading's own (below)
        repeats = [x for x in dups if not is_dir[x[0]]]
        dups = [x for x in dups if is_dir[x[0]]]
    dup_msgs = dup_messages(ctx, dups)
    events: list[tuple] = []  # (p, position, kind, seq, message or error)
    for p, inf in enumerate(infos):
        if inf["error"] is not None:
            events.append((p, inf["error"][0], 0, 0, inf["error"][1]))
        for pos, seq, msg in inf["skips"]:
            events.append((p, pos, 0, seq, msg))
    for (p, i, _fp, _fi, _x), err in zip(dups, dup_msgs):
        events.append((p, i, 1, 0, err))
    # a split JSONL file whose ranges all hold no record is an empty file
    by_file: dict[str, list[int]] = {}
    for p, sp in enumerate(specs):
        if sp.split:
            by_file.setdefault(sp.path, []).append(p)
    for path, ps in by_file.items():
        if sum(infos[p]["records"] for p in ps) == 0:
            events.append(
                (
                    ps[0],
                    0,
                    0,
                    -1,
                    InputError(
                        "the file is empty (no JSON lines)",
                        path=path,
                        reason=SkipReason.EMPTY_FILE,
                        whole_file=True,
                    ),
                )
            )
    events.sort(key=lambda e: e[:4])
    report = ctx.report
    if ctx.read.fail:
        first = next((e[4] for e in events if isinstance(e[4], InputError)), None)
        if first is not None:
            raise first
    if from_field:
        assert detect is not None  # from_field says so
        _raise_repeat(ctx, repeats, infos, detect)
    if not ctx.read.fail:
        for inf in infos:
            for k, v in inf["skip_counts"].items():
                report.counts[k] = report.counts.get(k, 0) + v
        for e in events:
            if isinstance(e[4], InputError):
                reason = str(e[4].reason)
                report.counts[reason] = report.counts.get(reason, 0) + 1
        report.examples = [str(e[4]) for e in events][:20]
    ctx.drops = [np.asarray([i for (q, i, *_r) in dups if q == p], np.int64) for p in range(P)]
    dropped = {
        p: ctx.submit(drop_rows, d, ctx.drops[p], name="drop", i=p)
        for p, d in enumerate(parts)
        if len(ctx.drops[p])
    }
    got = dict(zip(dropped, ctx.client.gather(list(dropped.values()))))
    parts = [got.get(p, d) for p, d in enumerate(parts)]
    ctx.done()
    offsets = np.zeros(P + 1, np.int64)
    np.cumsum([d.n for d in parts], out=offsets[1:])
    ctx.offsets = offsets
    ctx.parts = [replace(d, offset=int(offsets[p])) for p, d in enumerate(parts)]
