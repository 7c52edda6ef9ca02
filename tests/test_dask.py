"""The Dask engine against the local one, on a real LocalCluster of two worker processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("distributed")

from neardup.config import DedupConfig  # noqa: E402
from neardup.engines.dask import dedup_dask  # noqa: E402
from neardup.errors import ConfigError, InputError, OutputError  # noqa: E402
from neardup.jobs.dedup import dedup_files  # noqa: E402
from neardup.synth import make_corpus  # noqa: E402

VOLATILE = {
    "timings_s",
    "seconds",
    "outputs",
    "memory",  # the local engine's budget and scratch; the Dask engine's state is on disk
    "documents_per_s",
    "mb_per_s",
    "ingest_seconds",
    "workers",
    "engine",
    "partitions",
}


@pytest.fixture(scope="module")
def scheduler():
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 5}):
        cluster = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            env={"NUMBA_NUM_THREADS": "1"},
        )
    client = Client(cluster)
    yield cluster.scheduler_address, client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """1,200 documents with planted near-duplicates, exact copies (also across files), empty
    texts and blank lines, in three JSONL files."""
    d = tmp_path_factory.mktemp("corpus")
    texts, _ = make_corpus(1200, dup_fraction=0.4, seed=11, max_edit_rate=0.3)
    texts += ["", "  \n ", texts[3], texts[700], texts[701].upper()]
    paths = []
    for k in range(3):
        p = d / f"part-{k}.jsonl"
        with open(p, "wb") as f:
            for i in range(k, len(texts), 3):
                f.write(orjson.dumps({"doc": f"doc-{i}", "text": texts[i]}) + b"\n")
                if i % 97 == 0:
                    f.write(b"\n")
        paths.append(p)
    return paths


def _table(out: Path, stem: str) -> pa.Table:
    """A table of ``out``: one Parquet file, or a folder of parts (partitioned output)."""
    if (out / stem).is_dir():
        return pa.concat_tables([pq.read_table(p) for p in sorted((out / stem).iterdir())])
    return pq.read_table(out / f"{stem}.parquet")


def _tables(out: Path) -> tuple[pa.Table, pa.Table]:
    return _table(out, "clusters"), _table(out, "pairs")


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _check_same_file(local: Path, dask: Path) -> None:
    """A file of the local engine's corpus against the Dask engine's: the same bytes (Parquet:
    the same table, schema included), or a folder of parts that concatenate to it."""
    if dask.is_dir():
        parts = sorted(dask.iterdir())
        assert [p.name for p in parts] == [f"part-{j:05d}{local.suffix}" for j in range(len(parts))]
    else:
        parts = [dask]
    if local.suffix == ".parquet":
        tables = [pq.read_table(p) for p in parts]
        assert all(t.schema.equals(tables[0].schema, check_metadata=True) for t in tables)
        assert pa.concat_tables(tables).equals(pq.read_table(local), check_metadata=True)
    else:
        assert b"".join(p.read_bytes() for p in parts) == local.read_bytes()


def _check_corpus(local_out: Path, dask_out: Path, partitioned: bool = False) -> None:
    """The deduplicated corpus of the Dask engine is the local engine's: the same outputs (the
    same names, formats, columns and kept rows), byte for byte or in parts."""
    local, dask = local_out / "deduplicated", dask_out / "deduplicated"
    names = sorted(p.name for p in local.iterdir())
    assert sorted(p.name for p in dask.iterdir()) == names
    for name in names:
        if (local / name).is_dir():  # text files (copied) or Parquet shards (the same rows)
            assert _files(local / name) == _files(dask / name)
            for f in _files(local / name):
                a, b = local / name / f, dask / name / f
                if a.suffix in (".parquet", ".parq", ".pq"):
                    assert pq.read_table(a).equals(pq.read_table(b), check_metadata=True), f
                else:
                    assert a.read_bytes() == b.read_bytes(), f
            continue
        assert (dask / name).is_dir() == partitioned
        _check_same_file(local / name, dask / name)


def _check_same(
    local_out: Path, dask_out: Path, s_local: dict, s_dask: dict, partitioned: bool = False
) -> None:
    c1, p1 = _tables(local_out)
    c2, p2 = _tables(dask_out)
    assert c1.equals(c2)
    assert p1.equals(p2)
    assert {k: v for k, v in s_local.items() if k not in VOLATILE} == {
        k: v for k, v in s_dask.items() if k not in VOLATILE
    }
    if "deduplicated" in s_local["outputs"]:
        assert [Path(p).name for p in s_dask["outputs"]["deduplicated"]] == [
            Path(p).name for p in s_local["outputs"]["deduplicated"]
        ]
        _check_corpus(local_out, dask_out, partitioned)


@pytest.mark.parametrize(
    "id_field,method,keep,pairs,max_group",
    [
        (None, "components", "first", "all", 1000),
        ("doc", "components", "longest", "all", 1000),
        (None, "strict", "longest", "all", 1000),
        ("doc", "strict", "first", "edges", 1000),
        ("doc", "components", "first", "all", 2),
    ],
)
def test_same_as_local(scheduler, corpus, tmp_path, id_field, method, keep, pairs, max_group):
    cfg = DedupConfig.from_kwargs(
        threshold=0.7, cluster=method, keep=keep, pairs=pairs, pairs_max_group=max_group
    )
    s1 = dedup_files(corpus, tmp_path / "local", config=cfg, id_field=id_field)
    s2 = dedup_dask(
        corpus,
        tmp_path / "dask",
        config=cfg,
        id_field=id_field,
        scheduler=scheduler[0],
        partition_docs=150,
    )
    assert s2["engine"] == "dask" and s2["workers"] == 2
    assert s2["partitions"] > 3  # the files were split into ranges
    assert s2["near_duplicates"] > 50 and s2["exact_duplicates"] > 50
    _check_same(tmp_path / "local", tmp_path / "dask", s1, s2)
    text = orjson.loads((tmp_path / "dask" / "summary.json").read_bytes())
    assert text["documents"] == s1["documents"]


def test_parquet_textdir_and_folder_of_parts(scheduler, tmp_path):
    texts, _ = make_corpus(300, dup_fraction=0.5, seed=5)
    parts = tmp_path / "parts"
    parts.mkdir()
    for k in range(2):
        pq.write_table(
            pa.table({"text": texts[k::2], "id": [f"p{k}-{i}" for i in range(len(texts[k::2]))]}),
            parts / f"part-{k}.parquet",
        )
    (parts / "_SUCCESS").write_text("")
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(0, 40):
        (docs / f"d{i:03d}.txt").write_text(texts[i * 3])
    cfg = DedupConfig.from_kwargs(threshold=0.8)
    files = sorted(parts.glob("*.parquet"))
    s1 = dedup_files([parts], tmp_path / "l1", config=cfg, id_field="id")
    s2 = dedup_dask(
        [parts],
        tmp_path / "d1",
        config=cfg,
        id_field="id",
        input_format="parquet",
        scheduler=scheduler[0],
    )
    assert s2["partitions"] == 2
    _check_same(tmp_path / "l1", tmp_path / "d1", s1, s2)
    s1 = dedup_files([docs, *files], tmp_path / "l2", config=cfg)
    s2 = dedup_dask([docs, *files], tmp_path / "d2", config=cfg, scheduler=scheduler[0])
    _check_same(tmp_path / "l2", tmp_path / "d2", s1, s2)


def test_folder_of_parquet_shards_as_spark_writes_it(scheduler, tmp_path):
    """A nested folder of Parquet shards (Spark's layout, with its marker and checksum files):
    a partition per shard (a large shard cut into runs of row groups), the same tables and
    summary as the local engine's, and the deduplicated corpus as shards of the same layout."""
    texts, _ = make_corpus(600, dup_fraction=0.5, seed=11)
    root = tmp_path / "corpus"
    layout = [("part-00000.parquet", 0, 150), ("year=2024/part-00001.parquet", 150, 600)]
    for rel, a, b in layout:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.table({"id": [f"r{i}" for i in range(a, b)], "text": texts[a:b], "n": range(a, b)}),
            root / rel,
            row_group_size=50,
        )
    (root / "_SUCCESS").write_text("")
    (root / ".part-00000.parquet.crc").write_bytes(b"crc")
    cfg = DedupConfig.from_kwargs(threshold=0.8)
    s1 = dedup_files([root], tmp_path / "l", config=cfg)
    for part_docs, partitions in ((10_000, 2), (100, 1 + 5)):
        out = tmp_path / f"d{part_docs}"
        s2 = dedup_dask([root], out, config=cfg, scheduler=scheduler[0], partition_docs=part_docs)
        assert s2["partitions"] == partitions
        assert s2["inputs"] == [str(root)]
        _check_same(tmp_path / "l", out, s1, s2)
        written = sorted(
            p.relative_to(out / "deduplicated" / "corpus").as_posix()
            for p in (out / "deduplicated" / "corpus").rglob("*")
            if p.is_file()
        )
        assert written == [rel for rel, _, _ in layout]
        kept = {
            r["n"]
            for rel, _, _ in layout
            for r in pq.read_table(out / "deduplicated" / "corpus" / rel).to_pylist()
        }
        assert 0 < len(kept) < 600


def test_worker_killed_during_a_run(scheduler, corpus, tmp_path):
    """A worker dies (SIGKILL) while it computes a shingle export of the verification
    shuffle; Dask recomputes what it held from the lineage and the result is the same."""
    from distributed.diagnostics.plugin import WorkerPlugin

    marker = tmp_path / "killed"

    class KillOnce(WorkerPlugin):
        name = "neardup-kill-once"

        def transition(self, key, start, finish, **kwargs):
            name = key if isinstance(key, str) else str(key)
            if finish == "executing" and "verifyexport" in name:
                try:
                    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    return
                os.close(fd)
                import signal

                os.kill(os.getpid(), signal.SIGKILL)

    client = scheduler[1]
    client.register_plugin(KillOnce())
    try:
        cfg = DedupConfig.from_kwargs(threshold=0.7)
        s2 = dedup_dask(
            corpus, tmp_path / "dask", config=cfg, scheduler=scheduler[0], partition_docs=150
        )
    finally:
        client.unregister_worker_plugin("neardup-kill-once")
    assert marker.exists()
    s1 = dedup_files(corpus, tmp_path / "local", config=cfg)
    _check_same(tmp_path / "local", tmp_path / "dask", s1, s2)
    client.wait_for_workers(2, timeout=60)


def _write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    return path


def test_detected_ids_same_as_local(scheduler, tmp_path):
    """The field ``id`` is used when every record of every partition has one, else row
    numbers; a repeated detected id is the same error (within a partition and across)."""
    texts, _ = make_corpus(400, dup_fraction=0.4, seed=5, max_edit_rate=0.2)
    recs = [{"id": f"n{i}", "text": t} for i, t in enumerate(texts)]

    def both(name, records, *more, **kw):
        paths = [
            _write_lines(tmp_path / f"{name}.jsonl", [orjson.dumps(r) for r in records]),
            *more,
        ]
        out = []
        for engine in ("local", "dask"):
            try:
                if engine == "local":
                    s = dedup_files(paths, tmp_path / f"{name}-l", **kw)
                else:
                    s = dedup_dask(
                        paths,
                        tmp_path / f"{name}-d",
                        scheduler=scheduler[0],
                        partition_docs=60,
                        **kw,
                    )
                out.append(s["ids"])
            except InputError as e:
                out.append(str(e))
        assert out[0] == out[1], name
        if isinstance(out[0], dict):
            _check_same(
                tmp_path / f"{name}-l",
                tmp_path / f"{name}-d",
                *(
                    orjson.loads((tmp_path / f"{name}-{x}" / "summary.json").read_bytes())
                    for x in "ld"
                ),
            )
        return out[0]

    assert both("all", recs)["from"] == "field"
    late = [dict(r) for r in recs]
    del late[350]["id"]
    assert both("late", late)["missing"].endswith("late.jsonl:351")
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "x.txt").write_text(texts[0])
    assert both("mixed", recs, folder)["from"] == "field and file names"
    near = [dict(r) for r in recs]
    near[30]["id"] = "n29"  # in the same partition
    assert "repeats" in both("near", near)
    far = [dict(r) for r in recs]
    far[390]["id"] = "n3"  # across partitions, after the one above would be
    far[200]["id"] = "n150"
    assert "'n150' repeats" in both("far", far)
    assert both("rows", near, id_field="")["from"] == "row numbers"


def test_bad_input_same_errors(scheduler, tmp_path):
    good = [orjson.dumps({"id": f"a{i}", "text": f"text number {i} " * 20}) for i in range(400)]
    a = _write_lines(tmp_path / "a.jsonl", good)
    b_lines = [orjson.dumps({"id": f"b{i}", "text": f"other text {i} " * 20}) for i in range(400)]
    b_lines[250] = b'{"id": "b250", "text": '  # malformed JSON
    b_lines[300] = orjson.dumps({"id": "a7", "text": "repeats an id of a.jsonl"})
    b_lines[320] = orjson.dumps({"id": "b320", "text": 5})
    b = _write_lines(tmp_path / "b.jsonl", b_lines)
    c = _write_lines(tmp_path / "c.jsonl", [orjson.dumps({"id": "a3", "text": "again"})])
    empty = _write_lines(tmp_path / "empty.jsonl", [b"", b"  "])
    addr = scheduler[0]
    cases = [
        ([a, b], {"id_field": "id"}),
        ([a, c], {"id_field": "id"}),
        ([a, empty], {}),
        ([a, tmp_path / "missing.jsonl"], {}),
        ([a], {"text_fields": ("body",)}),
        ([a], {"on_error": "sometimes"}),
    ]
    for paths, kw in cases:
        with pytest.raises(Exception) as e1:
            dedup_files(paths, tmp_path / "l", **kw)
        with pytest.raises(Exception) as e2:
            dedup_dask(paths, tmp_path / "d", scheduler=addr, partition_docs=60, **kw)
        assert type(e1.value) is type(e2.value)
        assert str(e1.value) == str(e2.value)
        if isinstance(e1.value, InputError):
            assert e1.value.reason == e2.value.reason
        assert not (tmp_path / "d").exists()  # nothing written

    # skipping bad records: the same counts, examples, clusters and pairs
    s1 = dedup_files([a, b, c, empty], tmp_path / "l", id_field="id", on_error="skip")
    s2 = dedup_dask(
        [a, b, c, empty],
        tmp_path / "d",
        id_field="id",
        on_error="skip",
        scheduler=addr,
        partition_docs=60,
    )
    assert s1["skipped"]["total"] == 5
    _check_same(tmp_path / "l", tmp_path / "d", s1, s2)


def test_own_local_cluster(tmp_path):
    """Without a scheduler address the engine starts a LocalCluster and closes it."""
    texts, _ = make_corpus(200, dup_fraction=0.5, seed=2)
    p = _write_lines(tmp_path / "c.jsonl", [orjson.dumps({"text": t}) for t in texts])
    dedup_files([p], tmp_path / "l")
    s2 = dedup_dask([p], tmp_path / "d", n_workers=1, write_corpus=False)
    assert s2["workers"] == 1 and "deduplicated" not in s2["outputs"]
    c1, p1 = _tables(tmp_path / "l")
    c2, p2 = _tables(tmp_path / "d")
    assert c1.equals(c2) and p1.equals(p2)


def test_scratch_folder_removed(scheduler, corpus, tmp_path):
    """Each partition's arrays and the shuffles' pieces live in a scratch folder, removed after
    a run that succeeds, one that fails on the client and one whose task fails on a worker."""
    from distributed.diagnostics.plugin import WorkerPlugin

    addr = scheduler[0]
    cfg = DedupConfig.from_kwargs(threshold=0.7)
    out = tmp_path / "out"
    s = dedup_dask(corpus, out, config=cfg, scheduler=addr, partition_docs=150)
    assert s["partitions"] > 3
    assert sorted(x.name for x in out.iterdir()) == [
        "clusters.parquet",
        "deduplicated",
        "pairs.parquet",
        "summary.json",
    ]
    work = tmp_path / "work"
    work.mkdir()
    s2 = dedup_dask(
        corpus, tmp_path / "out2", config=cfg, scheduler=addr, partition_docs=150, work_dir=work
    )
    assert list(work.iterdir()) == []
    _check_same(out, tmp_path / "out2", s, s2)

    # an id repeated across partitions, found on the client after the read
    lines = [orjson.dumps({"id": f"x{i % 300}", "text": f"text {i} " * 9}) for i in range(400)]
    bad = _write_lines(tmp_path / "bad.jsonl", lines)
    for kw in ({}, {"work_dir": work}):
        with pytest.raises(InputError, match="duplicate id"):
            dedup_dask([bad], out, id_field="id", scheduler=addr, partition_docs=60, **kw)
        assert list(work.iterdir()) == []
        assert not list(out.glob(".neardup-work-*"))
        assert (out / "clusters.parquet").exists()  # what was there before stays

    # a task on a worker fails: its shuffle's map outputs are gone when it starts
    class BreakShuffle(WorkerPlugin):
        name = "neardup-break-shuffle"

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and "bandred" in (key if isinstance(key, str) else str(key)):
                import shutil

                for d in work.glob(".neardup-work-*/bandmap"):
                    shutil.rmtree(d, ignore_errors=True)

    client = scheduler[1]
    client.register_plugin(BreakShuffle())
    try:
        with pytest.raises(OutputError, match="bandmap.*No such file.*must stay in place"):
            dedup_dask(
                corpus,
                tmp_path / "out3",
                config=cfg,
                scheduler=addr,
                partition_docs=150,
                work_dir=work,
            )
    finally:
        client.unregister_worker_plugin("neardup-break-shuffle")
    assert list(work.iterdir()) == []
    assert not (tmp_path / "out3").exists()


def test_partitioned_tables_concatenate_to_the_local_tables(scheduler, corpus, tmp_path):
    cfg = DedupConfig.from_kwargs(threshold=0.7)
    dedup_files(corpus, tmp_path / "local", config=cfg, id_field="doc", write_corpus=False)
    s = dedup_dask(
        corpus,
        tmp_path / "dask",
        config=cfg,
        id_field="doc",
        write_corpus=False,
        scheduler=scheduler[0],
        partition_docs=150,
        partitioned_tables=True,
    )
    c1, p1 = _tables(tmp_path / "local")
    for stem, local in (("clusters", c1), ("pairs", p1)):
        parts = sorted((tmp_path / "dask" / stem).glob("part-*.parquet"))
        assert len(parts) == s["partitions"]
        assert pa.concat_tables([pq.read_table(p) for p in parts]).equals(local)
    assert not list((tmp_path / "dask").glob(".neardup-work-*"))
    with pytest.raises(ConfigError, match="Parquet parts"):
        dedup_dask(
            corpus,
            tmp_path / "x",
            output_format="csv",
            partitioned_tables=True,
            scheduler=scheduler[0],
        )


def _parquet_corpus(path: Path, n: int, row_group_size: int, seed: int, prefix: str) -> None:
    """``n`` documents (near-duplicates, exact copies across row groups, an empty text) with
    ids and an extra column, written in row groups of ``row_group_size`` rows."""
    texts, _ = make_corpus(n - 4, dup_fraction=0.4, seed=seed, max_edit_rate=0.3)
    texts += [texts[5], "", texts[n // 2], texts[7].upper()]
    pq.write_table(
        pa.table({"id": [f"{prefix}{i}" for i in range(n)], "text": texts, "n": list(range(n))}),
        path,
        row_group_size=row_group_size,
    )


@pytest.mark.parametrize("id_field", [None, "id"])
def test_parquet_split_by_row_groups(scheduler, tmp_path, id_field):
    """A Parquet file of small row groups is cut into runs of row groups (~partition_docs rows
    each); a file of one large row group stays one partition; same tables as the local
    engine."""
    big, one = tmp_path / "big.parquet", tmp_path / "one.parquet"
    _parquet_corpus(big, 1000, row_group_size=100, seed=3, prefix="r")
    _parquet_corpus(one, 400, row_group_size=1000, seed=4, prefix="o")
    assert pq.ParquetFile(big).num_row_groups == 10 and pq.ParquetFile(one).num_row_groups == 1
    cfg = DedupConfig.from_kwargs(threshold=0.7)
    s1 = dedup_files([big, one], tmp_path / "l", config=cfg, id_field=id_field)
    s2 = dedup_dask(
        [big, one],
        tmp_path / "d",
        config=cfg,
        id_field=id_field,
        scheduler=scheduler[0],
        partition_docs=150,
    )
    assert s2["partitions"] == 5 + 1  # 5 runs of 2 row groups (200 rows), and the other file
    assert s2["near_duplicates"] > 50 and s2["exact_duplicates"] >= 3
    _check_same(tmp_path / "l", tmp_path / "d", s1, s2)
    # at most ~1.5 x partition_docs rows: one partition
    s3 = dedup_dask(
        [big],
        tmp_path / "d3",
        config=cfg,
        id_field=id_field,
        scheduler=scheduler[0],
        partition_docs=700,
        write_corpus=False,
    )
    assert s3["partitions"] == 1


def test_row_group_runs(tmp_path):
    from neardup.engines.dask.plan import plan as _plan
    from neardup.engines.dask.plan import row_group_runs as _row_group_runs

    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"text": ["x"] * 1050}), p, row_group_size=100)
    assert _row_group_runs(p, 150) == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 11)]  # 50-row tail
    assert _row_group_runs(p, 300) == [(0, 3), (3, 6), (6, 9), (9, 11)]
    assert _row_group_runs(p, 700) == [(0, 11)]
    assert _row_group_runs(p, 1) == [(k, k + 1) for k in range(11)]
    specs = _plan([p], None, 300)
    assert [(s.start, s.end, s.row_groups) for s in specs] == [
        (0, 3, True),
        (3, 6, True),
        (6, 9, True),
        (9, 11, True),
    ]
    q = tmp_path / "b.parquet"
    pq.write_table(pa.table({"text": ["x"] * 1050}), q)  # one row group
    assert _row_group_runs(q, 150) == [(0, 1)]
    assert [(s.start, s.end, s.row_groups) for s in _plan([q], None, 150)] == [(0, None, False)]


def test_parquet_split_bad_rows_same_errors(scheduler, tmp_path):
    """Null texts and ids and repeated ids (within a run of row groups and across runs) in a
    split Parquet file: the local engine's first error (on_error="fail") and its skip counts,
    examples and tables (on_error="skip"); errors about the whole file are reported once."""
    n = 900
    texts, _ = make_corpus(n, dup_fraction=0.4, seed=8, max_edit_rate=0.3)
    ids: list = [f"b{i}" for i in range(n)]
    tx: list = list(texts)
    tx[130] = None  # null text, in the first run
    ids[250] = None  # null id
    ids[260] = "b255"  # repeats an id of the same run
    ids[610] = "b20"  # repeats an id of the first run
    tx[777] = None
    ids[880] = "b700"
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ids, "text": tx}), bad, row_group_size=100)
    # a file whose first rows are fine, its first bad one (an id) in a later run
    late = tmp_path / "late.parquet"
    ids2 = [f"r{i}" for i in range(n)]
    ids2[500] = "r499"
    pq.write_table(pa.table({"id": ids2, "text": texts}), late, row_group_size=100)
    addr = scheduler[0]
    for paths, kw in [
        ([bad], {"id_field": "id"}),
        ([bad], {}),
        ([bad], {"id_field": "nope"}),
        ([bad], {"text_fields": ("text", "nope")}),
        ([late], {"id_field": "id"}),
        ([late, bad], {"id_field": "id"}),
    ]:
        with pytest.raises(InputError) as e1:
            dedup_files(paths, tmp_path / "l", **kw)
        with pytest.raises(InputError) as e2:
            dedup_dask(paths, tmp_path / "d", scheduler=addr, partition_docs=150, **kw)
        assert str(e1.value) == str(e2.value)
        assert e1.value.reason == e2.value.reason
        assert not (tmp_path / "d").exists()

    for k, kw in enumerate([{"id_field": "id"}, {}, {"id_field": "nope"}]):
        s1 = dedup_files([late, bad], tmp_path / f"ls{k}", on_error="skip", **kw)
        s2 = dedup_dask(
            [late, bad],
            tmp_path / f"ds{k}",
            on_error="skip",
            scheduler=addr,
            partition_docs=150,
            **kw,
        )
        assert s2["partitions"] == 10
        assert s1["skipped"]["total"] == [7, 2, 2][k]
        _check_same(tmp_path / f"ls{k}", tmp_path / f"ds{k}", s1, s2)


# -- a scheduler and workers of their own, in other folders than the client's -----------------


def _start(args: list[str], cwd: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    with open(log, "ab") as f:
        return subprocess.Popen(
            args, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _worker_args(scheduler_file: Path, name: str, local_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "distributed.cli.dask_worker",
        "--scheduler-file",
        str(scheduler_file),
        "--nthreads",
        "1",
        "--no-nanny",
        "--no-dashboard",
        "--name",
        name,
        "--local-directory",
        str(local_dir),
        "--death-timeout",
        "60",
    ]


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """A scheduler and two workers started as processes of their own (``dask scheduler``,
    ``dask worker``), each in a folder of its own: the client's working folder is none of
    theirs. The scheduler takes a free port (port 0) and says its address in a file."""
    from distributed import Client

    base = tmp_path_factory.mktemp("remote")
    sdir, wdir = base / "scheduler", base / "workers"
    sdir.mkdir()
    wdir.mkdir()
    sfile = base / "scheduler.json"
    procs: list[subprocess.Popen] = []
    client = None
    try:
        procs.append(
            _start(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(sfile),
                ],
                sdir,
                base / "scheduler.log",
            )
        )
        deadline = time.monotonic() + 60
        address = None
        while address is None:
            assert procs[0].poll() is None, (base / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            try:
                address = orjson.loads(sfile.read_bytes())["address"]
            except (OSError, orjson.JSONDecodeError, KeyError):
                time.sleep(0.1)
        for i in range(2):
            procs.append(_start(_worker_args(sfile, f"w{i}", wdir), wdir, base / f"worker-{i}.log"))
        client = Client(address)
        client.wait_for_workers(2, timeout=60)
        yield address, client, sfile, wdir
    finally:
        if client is not None:
            client.close()
        _stop(procs[1:])
        _stop(procs[:1])


def _mixed_inputs(d: Path, n: int = 300, seed: int = 21) -> list[Path]:
    """A JSONL file and a Parquet file with more columns than the id and text, near-duplicates
    within and across them."""
    d.mkdir(parents=True, exist_ok=True)
    texts, _ = make_corpus(n, dup_fraction=0.4, seed=seed, max_edit_rate=0.3)
    a = _write_lines(
        d / "a.jsonl",
        [
            orjson.dumps({"id": f"a{i}", "text": t, "lang": "en", "n": i})
            for i, t in enumerate(texts[: n // 2])
        ],
    )
    b = d / "b.parquet"
    half = texts[n // 2 :]
    pq.write_table(
        pa.table(
            {
                "id": [f"b{i}" for i in range(len(half))],
                "text": half,
                "score": [i / 7 for i in range(len(half))],
            }
        ),
        b,
        row_group_size=40,
    )
    return [a, b]


def test_relative_paths_on_workers_in_other_folders(remote, tmp_path, monkeypatch, capsys):
    """Relative inputs, -o and --work-dir from the client's folder, on workers whose working
    folder is another: the run succeeds and writes what the local engine writes."""
    from neardup.cli import main

    address, client, _, wdir = remote
    home = tmp_path / "client"
    _mixed_inputs(home / "data")
    monkeypatch.chdir(home)
    assert set(client.run(os.getcwd).values()) == {str(wdir)}
    args = ["data/a.jsonl", "data/b.parquet", "--id-field", "id", "--threshold", "0.7", "-q"]
    assert main(["dedup", *args, "-o", "local"]) == 0
    assert (
        main(
            [
                "dedup",
                *args,
                "-o",
                "out",
                "--work-dir",
                "scratch",
                "--engine",
                "dask",
                "--scheduler",
                address,
                "--json",
            ]
        )
        == 0
    )
    summary = orjson.loads(capsys.readouterr().out)
    assert summary["inputs"] == [str(home / "data" / "a.jsonl"), str(home / "data" / "b.parquet")]
    s1 = orjson.loads((home / "local" / "summary.json").read_bytes())
    s2 = orjson.loads((home / "out" / "summary.json").read_bytes())
    assert s2 == summary
    s1["inputs"] = [str(home / p) for p in s1["inputs"]]  # the Dask engine's are absolute
    assert s2["near_duplicates"] > 20
    _check_same(home / "local", home / "out", s1, s2)
    assert list((home / "scratch").iterdir()) == []
    assert [p.name for p in wdir.iterdir() if not p.name.startswith("dask-")] == []
    # an input that is nowhere: one clear message naming the absolute path
    assert (
        main(
            [
                "dedup",
                "data/nope.jsonl",
                "-o",
                "out2",
                "--engine",
                "dask",
                "--scheduler",
                address,
                "-q",
            ]
        )
        == 3
    )
    err = capsys.readouterr().err
    assert err.startswith(f"neardup: error: {home / 'data' / 'nope.jsonl'}: no such file")
    assert "Traceback" not in err and not (home / "out2").exists()


def test_check_workers_names_the_path_and_the_worker(remote, tmp_path):
    """What a worker does not see as the client does: a missing input, another file of the
    same name, a folder it does not see; each named with the workers that miss it."""
    from neardup.engines.dask.paths import check_workers, probe

    address, client, _, _ = remote
    workers = sorted(client.scheduler_info()["workers"])
    a = _write_lines(tmp_path / "a.jsonl", [b'{"text": "x"}'])
    out = tmp_path / "out"
    out.mkdir()
    assert check_workers(client, [a, tmp_path], [(out, "the output folder")]) == 2
    assert list(out.iterdir()) == []  # the marker file is removed
    with pytest.raises(InputError) as e:
        check_workers(client, [a, tmp_path / "gone.jsonl"], [(out, "the output folder")])
    msg = str(e.value)
    assert msg.startswith(
        f"{tmp_path / 'gone.jsonl'}: not seen by the Dask workers "
        f"{', '.join(workers)} as on this client (no such file or folder "
        "there): every Dask worker must see the inputs"
    )
    assert e.value.reason == "missing_path"

    # the worker's side, on its own
    assert probe([(str(a), a.stat().st_size), (str(tmp_path), None)], [(str(out), "m", "t")]) == [
        (
            "folder",
            str(out),
            "another folder of the same name: a file the client has just "
            "written in it is missing there",
        )
    ]
    (out / "m").write_text("other")
    assert probe(
        [(str(a), 99), (str(a), None), (str(tmp_path / "x"), 1)],
        [(str(out), "m", "t"), (str(tmp_path / "y"), "m", "t")],
    ) == [
        (
            "input",
            str(a),
            f"another file: {a.stat().st_size:,} bytes there, 99 bytes on the client",
        ),
        ("input", str(a), "it is not a folder there"),
        ("input", str(tmp_path / "x"), "no such file or folder there"),
        (
            "folder",
            str(out),
            "another folder of the same name: a file the client has just "
            "written in it has other contents there",
        ),
        ("folder", str(tmp_path / "y"), "no such folder there"),
    ]
    (out / "m").write_text("t")
    assert probe([], [(str(out), "m", "t")]) == []


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        r = subprocess.run(
            ["unshare", "-Urm", "sh", "-c", "mount -t tmpfs none /mnt"],
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def test_a_worker_that_sees_other_files(remote, tmp_path):
    """A worker with other mounts than the client (a mount namespace of its own, where an
    empty file system hides a folder of the client's and holds other files of the same
    names): the run stops before any work with an error that names the path and that
    worker."""
    if not _unshare_works():
        pytest.skip("needs user and mount namespaces (unshare -Urm)")
    _, client, sfile, wdir = remote
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    inp = _write_lines(
        hidden / "in.jsonl", [orjson.dumps({"text": f"a text {i} " * 5}) for i in range(50)]
    )
    seen = _write_lines(tmp_path / "seen.jsonl", inp.read_bytes().splitlines())
    (hidden / "out").mkdir()
    script = (
        f"mount -t tmpfs none {hidden} && mkdir {hidden}/out && "
        f"echo '{{}}' > {hidden}/in.jsonl && exec \"$@\""
    )
    blind = _start(
        ["unshare", "-Urm", "sh", "-c", script, "sh", *_worker_args(sfile, "blind", wdir)],
        wdir,
        tmp_path / "blind.log",
    )
    try:
        client.wait_for_workers(3, timeout=60)
        addr = next(
            a for a, w in client.scheduler_info()["workers"].items() if w["name"] == "blind"
        )
        with pytest.raises(InputError) as e:
            dedup_dask([inp], tmp_path / "o1", scheduler=client.scheduler.address)
        assert str(e.value).startswith(
            f"{inp}: not seen by the Dask worker {addr} as on this client (another file: 3 "
            f"bytes there, {inp.stat().st_size:,} bytes on the client): every Dask worker"
        )
        assert not (tmp_path / "o1").exists()
        for out, why in (
            (hidden / "out", "another folder of the same name"),
            (hidden / "new", "no such folder there"),
        ):
            with pytest.raises(OutputError) as e:
                dedup_dask([seen], out, scheduler=client.scheduler.address)
            assert str(e.value).startswith(
                f"{out}: the output folder is not seen by the Dask "
                f"worker {addr} as on this client ({why}"
            )
            assert list((hidden / "out").iterdir()) == []
            assert not (hidden / "new").exists()
        with pytest.raises(OutputError) as e:
            dedup_dask(
                [seen],
                tmp_path / "o2",
                scheduler=client.scheduler.address,
                work_dir=hidden / "work",
            )
        assert str(e.value).startswith(
            f"{hidden / 'work'}: the work folder is not seen by the Dask worker {addr}"
        )
        assert not (tmp_path / "o2").exists() and not (hidden / "work").exists()
    finally:
        _stop([blind])
        deadline = time.monotonic() + 30
        while len(client.scheduler_info()["workers"]) > 2 and time.monotonic() < deadline:
            time.sleep(0.1)


def _corpus_of_every_kind(d: Path) -> list[Path]:
    """Inputs of every kind with more columns than the id and the text, near-duplicates within
    and across them: a JSONL file (a byte order mark, CRLF and blank lines, no newline at the
    end) large enough to be split, a gzipped one, CSV and TSV files (quoted fields), a Parquet
    file of several row groups, a folder of text files, and two JSONL files of the same name
    in other folders."""
    import csv
    import gzip

    texts, _ = make_corpus(700, dup_fraction=0.4, seed=17, max_edit_rate=0.3)
    texts[50] = texts[10]
    chunks = [texts[i : i + 100] for i in range(0, 700, 100)]
    d.mkdir()
    big = d / "big.jsonl"
    lines = [
        orjson.dumps({"id": f"j{i}", "text": t, "tags": ["x", i], "n": i})
        for i, t in enumerate(chunks[0] + chunks[1])
    ]
    body = b"\r\n".join(x + (b"\n" if i % 37 == 0 else b"") for i, x in enumerate(lines))
    big.write_bytes(b"\xef\xbb\xbf" + body)
    gz = d / "small.jsonl.gz"
    gz.write_bytes(
        gzip.compress(
            b"".join(
                orjson.dumps({"text": t, "id": f"g{i}", "src": "gz"}) + b"\n"
                for i, t in enumerate(chunks[2])
            )
        )
    )
    for name, delim, chunk in (("c.csv", ",", chunks[3]), ("t.tsv", "\t", chunks[4])):
        with open(d / name, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter=delim, lineterminator="\r\n" if delim == "," else "\n")
            w.writerow(["id", "title", "text", "year"])
            for i, t in enumerate(chunk):
                w.writerow([f"{name[0]}{i}", f'a "title", {i}', t.replace("\t", " "), 1990 + i])
    pq.write_table(
        pa.table(
            {
                "year": list(range(100)),
                "id": [f"p{i}" for i in range(100)],
                "text": chunks[5],
                "score": [i / 3 for i in range(100)],
            }
        ),
        d / "p.parquet",
        row_group_size=20,
    )
    docs = d / "docs"
    (docs / "sub").mkdir(parents=True)
    for i, t in enumerate(chunks[6][:30]):
        (docs / ("sub" if i % 2 else "") / f"d{i:02d}.txt").write_text(t + chunks[0][i])
    same = []
    for k in range(2):
        (d / f"f{k}").mkdir()
        same.append(
            _write_lines(
                d / f"f{k}" / "same.jsonl",
                [
                    orjson.dumps({"id": f"s{k}-{i}", "text": t})
                    for i, t in enumerate(chunks[6][30 + 35 * k : 65 + 35 * k])
                ],
            )
        )
    return [big, gz, d / "c.csv", d / "t.tsv", d / "p.parquet", docs, *same]


@pytest.mark.parametrize("partitioned", [False, True])
def test_corpus_as_the_local_engine_writes_it(scheduler, tmp_path, partitioned):
    """The deduplicated corpus is the local engine's: per input, its format, its columns and
    its lines as they were (JSONL and CSV byte for byte, Parquet the same table); with the
    partitioned output a folder per input file of parts that concatenate to it."""
    inputs = _corpus_of_every_kind(tmp_path / "in")
    kw = {"config": DedupConfig.from_kwargs(threshold=0.7), "id_field": "id"}
    s1 = dedup_files(inputs, tmp_path / "local", **kw)
    s2 = dedup_dask(
        inputs,
        tmp_path / "dask",
        scheduler=scheduler[0],
        partition_docs=60,
        partitioned_tables=partitioned,
        **kw,
    )
    assert s2["partitions"] == 4 + 2 + 6  # ranges of big.jsonl, runs of row groups, others
    assert s1["near_duplicates"] > 20 and s1["exact_duplicates"] >= 1
    assert sorted(p.name for p in (tmp_path / "local" / "deduplicated").iterdir()) == [
        "7-same.jsonl",
        "8-same.jsonl",
        "big.jsonl",
        "c.csv",
        "docs",
        "p.parquet",
        "small.jsonl",
        "t.tsv",
    ]
    _check_same(tmp_path / "local", tmp_path / "dask", s1, s2, partitioned)
    dd = tmp_path / "dask" / "deduplicated"
    if partitioned:
        assert len(list((dd / "big.jsonl").iterdir())) == 4
        assert len(list((dd / "p.parquet").iterdir())) == 2
    assert not list(dd.glob(".*"))  # no parts or temporary files left
    kept = pq.read_table(tmp_path / "local" / "clusters.parquet").to_pylist()
    kept_ids = {r["id"] for r in kept if r["id"] == r["representative"]}
    assert {r["id"] for r in pq.read_table(dd / "p.parquet").to_pylist()} == {
        i for i in kept_ids if i.startswith("p")
    }


def test_stopping_a_run_waits_for_its_tasks_still_running(scheduler, tmp_path):
    """A cancelled task that has started runs on to its end on its worker (a worker cannot
    stop a thread), and may write into the run's folders meanwhile: stopping a run waits until
    none of its tasks runs anywhere, so that removing its folders afterwards leaves nothing.
    (Without the wait, a part still being written left an empty temporary folder behind.)"""
    import uuid

    from neardup.engines.dask.context import _running, wait_stopped

    client = scheduler[1]
    tok = uuid.uuid4().hex[:8]
    started, ended = tmp_path / "started", tmp_path / "ended"

    def slow(a: str, b: str) -> None:
        import time as _time

        open(a, "w").close()
        _time.sleep(1.5)
        open(b, "w").close()

    fut = client.submit(slow, str(started), str(ended), key=f"neardup-part-{tok}-0", pure=False)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started.exists()
    assert sum(client.run(_running, tok).values()) == 1
    assert sum(client.run(_running, "other-run").values()) == 0
    client.cancel([fut])
    assert not ended.exists()  # cancelled, still running
    assert wait_stopped(client, tok, timeout=60)
    assert ended.exists()
    assert sum(client.run(_running, tok).values()) == 0


def test_corpus_write_fails_nothing_left(scheduler, tmp_path):
    """An input vanishes while the workers write the corpus: the error names it, the pending
    writes are stopped and nothing of the run is left (its output folder is removed)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    a, b = _mixed_inputs(tmp_path / "in")
    marker = tmp_path / "removed"

    class RemoveInput(WorkerPlugin):
        name = "neardup-remove-input"

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and "neardup-part-" in (
                key if isinstance(key, str) else str(key)
            ):
                try:
                    os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    return
                b.unlink()

    client = scheduler[1]
    client.register_plugin(RemoveInput())
    try:
        with pytest.raises(InputError, match=f"^{b}: no such file"):
            dedup_dask(
                [a, b],
                tmp_path / "out" / "d",
                id_field="id",
                scheduler=scheduler[0],
                partition_docs=60,
            )
    finally:
        client.unregister_worker_plugin("neardup-remove-input")
    assert marker.exists()
    assert not (tmp_path / "out").exists(), [str(p) for p in (tmp_path / "out").rglob("*")]


@pytest.mark.parametrize("keep", ["first", "longest"])
def test_chains_of_near_duplicates(scheduler, tmp_path, keep, monkeypatch):
    """Clusters that are long chains of verified pairs, spread over many partitions: the
    components found by rounds of label propagation on the workers, their representatives
    and the members' similarities (most not verified with their representative) are the local
    engine's. The client clusters nothing itself, and no verified pair reaches it (the pairs
    table is made on the workers)."""
    import random

    from neardup.engines.dask import cluster as cluster_mod
    from neardup.engines.dask import verify as verify_mod

    def not_here(*_a, **_k):
        raise AssertionError("components clustered on the client")

    monkeypatch.setattr(cluster_mod, "cluster_texts", not_here)
    similarity, gathered = verify_mod.similarity, []

    def counted(*a, **k):
        res = similarity(*a, **k)
        gathered.extend(res)
        return res

    monkeypatch.setattr(verify_mod, "similarity", counted)

    rng = random.Random(5)
    vocab = [f"w{i}x{rng.randrange(10**6)}" for i in range(4000)]
    texts = []
    for _ in range(3):  # three chains, each text a small edit of the one before
        words = rng.sample(vocab, 80)
        for _ in range(25):
            texts.append(" ".join(words))
            for _ in range(2):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            if rng.random() < 0.3:
                words.append(rng.choice(vocab))
    texts += [" ".join(rng.sample(vocab, 60)) for _ in range(150)]
    order = list(range(len(texts)))
    rng.shuffle(order)
    paths = []
    for k in range(8):  # a partition per file
        paths.append(tmp_path / f"chains-{k}.jsonl")
        lines = [orjson.dumps({"text": texts[i]}) + b"\n" for i in order[k::8]]
        paths[-1].write_bytes(b"".join(lines))
    cfg = DedupConfig.from_kwargs(threshold=0.6, keep=keep)
    s1 = dedup_files(paths, tmp_path / "local", config=cfg)
    s2 = dedup_dask(paths, tmp_path / "dask", config=cfg, scheduler=scheduler[0])
    assert s2["partitions"] > 5
    _check_same(tmp_path / "local", tmp_path / "dask", s1, s2)
    assert s2["verified_pairs"] > 50
    assert gathered and all(set(r) == {"candidates", "verified"} for r in gathered)
    clusters = pq.read_table(tmp_path / "local" / "clusters.parquet").to_pydict()
    assert s1["largest_cluster"] > 10
    assert min(clusters["similarity"]) < 0.6  # members reached through others


@pytest.mark.parametrize("id_field", [None, "doc", ""])
def test_fast_read_same_as_record_reader(corpus, tmp_path, monkeypatch, id_field):
    """A JSONL partition read by blocks with the compiled scanner gives the arrays that the
    record-by-record reader gives (byte ranges of a file, and whole files)."""
    import dataclasses

    import numpy as np

    from neardup.engines.dask import read as read_mod
    from neardup.engines.dask.plan import count_lines, plan
    from neardup.io import ReadOptions, id_options
    from neardup.lsh import lsh_params

    cfg = DedupConfig.from_kwargs(threshold=0.7)
    bands, rows = lsh_params(cfg.lsh, cfg.sketch.num_perm)
    opts = ReadOptions(text_fields=("text",), **id_options(id_field))
    auto = opts.id_field is None and opts.default_id is None
    specs = plan([Path(p) for p in corpus], None, 150) + plan([Path(corpus[0])], None, 10**6)
    assert any(s.split for s in specs) and not specs[-1].split
    prior: dict[str, int] = {}
    fast = read_mod.read_fast
    for k, sp in enumerate(specs):
        first = prior.get(sp.path, 0) if sp.split else 0
        if sp.split:
            prior[sp.path] = first + count_lines(sp.path, sp.start, sp.end)
        got = []
        for name, use_fast in (("fast", True), ("slow", False)):
            d = tmp_path / f"{name}{k}"
            d.mkdir()
            monkeypatch.setattr(read_mod, "read_fast", fast if use_fast else lambda *a: None)
            if use_fast and sp.split:  # lines numbered from 0, then shifted
                rel = fast(sp, opts, cfg, bands, rows, auto, None, str(d))
                assert rel is not None
                shifted = read_mod.shift_lines(rel, first)
                at = rel.info.pop("id_missing_at")
                assert rel.info.pop("range_lines") == count_lines(sp.path, sp.start, sp.end)
                (tmp_path / f"s{k}").mkdir()
                slow = read_mod.read_partition(
                    sp, opts, cfg, bands, rows, auto, None, [first], str(tmp_path / f"s{k}")
                )
                assert (at is None) == (slow.info["id_missing"] is None)
                if at is not None:
                    assert slow.info["id_missing"] == f"{sp.path}:{at + first}"
                    rel.info["id_missing"] = slow.info["id_missing"]
                assert np.array_equal(shifted.load("lines"), slow.load("lines"))
                for f in d.iterdir():
                    f.unlink()
            got.append(
                read_mod.read_partition(sp, opts, cfg, bands, rows, auto, None, [first], str(d))
            )
        a, b = got
        assert dataclasses.replace(a, dir="") == dataclasses.replace(b, dir="")
        names = sorted(f.name for f in Path(a.dir).iterdir())
        assert names == sorted(f.name for f in Path(b.dir).iterdir())
        for f in names:
            x, y = Path(a.dir, f), Path(b.dir, f)
            if f.endswith(".npy"):
                assert np.array_equal(np.load(x), np.load(y)), f
            else:
                assert x.read_bytes() == y.read_bytes(), f
