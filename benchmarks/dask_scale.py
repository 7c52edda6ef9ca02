"""The Dask engine against the local engine: wall time and peak memory per worker.

    python benchmarks/dask_scale.py --sizes 100000 1000000 --workers 2

For each size, takes the first ``size`` documents of the benchmark corpus
(``benchmarks/data/corpus-<N>.jsonl``, built by ``benchmarks/corpus.py`` from 20 Newsgroups
when missing) as one JSONL file, runs ``neardup dedup`` with the local engine in a fresh process
(its peak RSS), then the Dask engine on a ``LocalCluster`` of ``--workers`` processes started
here (not counted in the wall time), and reads each worker's peak RSS. Checks that both engines
wrote the same clusters and pairs. Writes ``dask-scale.json`` and ``.md`` into ``--results``
(default ``benchmarks/data/results``, not tracked; ``--results benchmarks/results`` refreshes
the tracked table).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Where the report goes unless --results says otherwise: a folder git ignores.
RESULTS = HERE / "data" / "results"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from index import find_corpus  # noqa: E402


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def head(corpus: Path, n: int, out: Path) -> Path:
    with open(corpus, "rb") as f, open(out, "wb") as g:
        for i, line in enumerate(f):
            if i >= n:
                break
            g.write(line)
    return out


def run_local(path: Path, outdir: Path) -> dict:
    t = time.perf_counter()
    code = (
        "import resource, sys, json; from neardup.cli import main; "
        f"rc = main(['dedup', {str(path)!r}, '--id-field', 'id', '-o', {str(outdir)!r}, "
        "'--quiet', '--no-corpus']); "
        "print(json.dumps({'rc': rc, 'rss': resource.getrusage(resource.RUSAGE_SELF)"
        ".ru_maxrss / 1024}))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    wall = time.perf_counter() - t
    got = json.loads(r.stdout.strip().splitlines()[-1])
    if got["rc"] != 0:
        raise RuntimeError(r.stderr[-2000:])
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(got["rss"], 1)}


def run_dask(path: Path, outdir: Path, workers: int, partition_docs: int) -> dict:
    from distributed import Client, LocalCluster

    from neardup.engines.dask import dedup_dask

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        t = time.perf_counter()
        s = dedup_dask(
            [path],
            outdir,
            id_field="id",
            scheduler=cluster.scheduler_address,
            partition_docs=partition_docs,
            write_corpus=False,
        )
        wall = time.perf_counter() - t
        rss = client.run(_peak_rss_mb)
    return {
        "wall_s": round(wall, 2),
        "partitions": s.get("partitions"),
        "timings_s": s.get("timings_s"),
        "worker_peak_rss_mb": sorted(round(v, 1) for v in rss.values()),
        "client_peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def same_tables(a: Path, b: Path) -> bool:
    import pyarrow.parquet as pq

    return all(
        pq.read_table(a / f).equals(pq.read_table(b / f))
        for f in ("clusters.parquet", "pairs.parquet")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partition-docs", type=int, default=200_000)
    ap.add_argument(
        "--results",
        default=str(RESULTS),
        help="folder for dask-scale.json and .md (default: benchmarks/data/results, "
        "which git ignores; --results benchmarks/results refreshes the "
        "tracked table)",
    )
    a = ap.parse_args()
    rows = []
    for n in a.sizes:
        corpus = find_corpus(n)
        with tempfile.TemporaryDirectory(dir=HERE / "data") as d:
            d = Path(d)
            path = head(corpus, n, d / f"c{n}.jsonl")
            local = run_local(path, d / "local")
            dask = run_dask(path, d / "dask", a.workers, a.partition_docs)
            row = {
                "documents": n,
                "local": local,
                "dask": dask,
                "identical": same_tables(d / "local", d / "dask"),
            }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    out = Path(a.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / "dask-scale.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "| documents | local wall | local peak | dask wall | dask / local | partitions | "
        "peak per worker | client peak | identical |",
        "|" + "---:|" * 9,
    ]
    for r in rows:
        lines.append(
            f"| {r['documents']:,} | {r['local']['wall_s']} s | "
            f"{r['local']['peak_rss_mb']:,.0f} MB | {r['dask']['wall_s']} s | "
            f"{r['dask']['wall_s'] / r['local']['wall_s']:.2f} | {r['dask']['partitions']} | "
            f"{' / '.join(f'{x:,.0f}' for x in r['dask']['worker_peak_rss_mb'])} MB | "
            f"{r['dask']['client_peak_rss_mb']:,.0f} MB | {r['identical']} |"
        )
    (out / "dask-scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
