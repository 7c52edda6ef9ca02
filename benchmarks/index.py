"""Online index benchmark: batched inserts into an SQLite index, then query latency.

    python benchmarks/index.py --size 1000000          # the issue's figure (about 10 minutes)
    python benchmarks/index.py --size 100000 --backend redis

Reads the first ``size`` documents of ``benchmarks/data/corpus-<N>.jsonl`` (20 Newsgroups text
with planted near-duplicates, about 2 KB each; built by ``benchmarks/corpus.py`` from
``../shared/data/20news-bydate.tar.gz`` when missing) and adds them in batches of ``--batch``
(one transaction each) to a new index with default parameters (word 5-shingles, 128
permutations, threshold 0.8, texts stored). Reports documents/s overall and per tenth of the
run (to show whether inserts slow down as the index grows), the file size, then the latency of
``--queries`` queries in a freshly opened index: half are indexed documents with 30% of their
words edited (new texts, mostly without a near-duplicate), half with 1% edited (found as
near-duplicates). Writes ``index-<backend>-<size>.json`` into ``--results`` (default
``benchmarks/data/results``, not tracked; ``--results benchmarks/results`` refreshes the tracked
figures) and prints a markdown line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Where the report goes unless --results says otherwise: a folder git ignores.
RESULTS = HERE / "data" / "results"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from neardup import Index  # noqa: E402
from neardup.synth import edit_words  # noqa: E402

ARCHIVE = ROOT.parent / "shared" / "data" / "20news-bydate.tar.gz"


def find_corpus(size: int) -> Path:
    """The smallest corpus file with at least ``size`` documents (built if there is none)."""
    have = []
    for p in (HERE / "data").glob("corpus-*.jsonl"):
        try:
            have.append((int(p.stem.split("-")[1]), p))
        except ValueError:
            continue
    fit = sorted(x for x in have if x[0] >= size)
    if fit:
        return fit[0][1]
    if not ARCHIVE.exists():
        sys.exit(
            f"benchmarks/index.py: {ARCHIVE} is missing: the corpus is built from the 20 "
            "Newsgroups archive (see ../shared/data/README.md)"
        )
    import corpus as corpus_mod

    path = HERE / "data" / f"corpus-{size}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    corpus_mod.write_corpus(size, path, archive=ARCHIVE)
    return path


def read_docs(path: Path, n: int):
    with open(path, "rb") as f:
        for i, line in enumerate(f):
            if i >= n:
                return
            rec = orjson.loads(line)
            yield rec["id"], rec["text"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--backend", choices=["sqlite", "redis", "memory"], default="sqlite")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0?prefix=bench")
    ap.add_argument("--index", default=None, help="index path (default benchmarks/data/...)")
    ap.add_argument(
        "--results",
        default=str(RESULTS),
        help="folder for index-<backend>-<size>.json (default: "
        "benchmarks/data/results, which git ignores; --results "
        "benchmarks/results refreshes the tracked figures)",
    )
    ap.add_argument(
        "--passages",
        action="store_true",
        help="also index passage fingerprints (Index(passages=True))",
    )
    ap.add_argument(
        "--query-only",
        action="store_true",
        help="reuse the index of an earlier run (SQLite) and only time queries",
    )
    a = ap.parse_args()

    corpus = find_corpus(a.size)
    if a.backend == "sqlite":
        target = Path(a.index or HERE / "data" / f"index-{a.size}.db")
        if a.query_only:
            return query_phase(a, corpus, target, None)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
    elif a.backend == "redis":
        target = a.redis_url
    else:
        target = None
    passages = True if a.passages else None
    idx = Index(target, passages=passages)
    if a.backend == "redis":
        idx.storage.drop()
        idx = Index(target, passages=passages)

    print(
        f"inserting {a.size:,} documents from {corpus.name} into {a.backend} "
        f"({idx.bands}x{idx.rows} bands), batches of {a.batch}",
        file=sys.stderr,
    )
    tenths = []
    t0 = time.perf_counter()
    t_tenth = t0
    batch: list[tuple[str, str]] = []
    done = 0
    text_bytes = 0
    step = max(a.size // 10, 1)
    for doc_id, text in read_docs(corpus, a.size):
        batch.append((doc_id, text))
        text_bytes += len(text)
        if len(batch) == a.batch:
            idx.add_many(batch, batch_size=a.batch)
            done += len(batch)
            batch = []
            if done % step < a.batch and done >= step * (len(tenths) + 1):
                now = time.perf_counter()
                tenths.append(round(step / (now - t_tenth), 1))
                t_tenth = now
                print(f"  {done:>9,}  {tenths[-1]:>8,.0f} docs/s", file=sys.stderr)
    if batch:
        idx.add_many(batch, batch_size=a.batch)
        done += len(batch)
    insert_s = time.perf_counter() - t0
    n = len(idx)
    assert n == a.size, (n, a.size)
    idx.close()
    t_sync = time.perf_counter()
    os.sync()  # let the kernel write the new index back before timing queries on it
    sync_s = time.perf_counter() - t_sync
    query_phase(
        a,
        corpus,
        target,
        {
            "sync_s": round(sync_s, 2),
            "insert_s": round(insert_s, 2),
            "insert_docs_per_s": round(n / insert_s, 1),
            "insert_docs_per_s_by_tenth": tenths,
            "text_mb": round(text_bytes / 1e6, 1),
        },
    )


def query_phase(a, corpus, target, inserted) -> None:

    # queries: heavily edited copies of indexed documents (new texts: most have no
    # near-duplicate, but share some shingles, so LSH and verification do real work) and lightly
    # edited ones (near-duplicates to find), on a freshly opened index
    rng = np.random.default_rng(0)
    picks = rng.choice(a.size, a.queries, replace=False)
    rate = {int(i): (0.3 if j % 2 == 0 else 0.01) for j, i in enumerate(picks.tolist())}
    vocab = ["lorem", "ipsum", "dolor", "amet", "consectetur", "adipiscing", "elit", "sed"]
    queries, light = [], []
    for i, (_, t) in enumerate(read_docs(corpus, a.size)):
        if i in rate:
            queries.append(edit_words(t, rate[i], rng, vocab))
            light.append(rate[i] < 0.1)
    order = rng.permutation(len(queries))
    t_open = time.perf_counter()
    idx = Index(target)
    open_s = time.perf_counter() - t_open
    n = len(idx)
    idx.query(queries[0])  # compile and warm the kernels once
    lat = np.empty(len(queries))
    found = np.zeros(len(queries), bool)
    for j, q in enumerate(order.tolist()):
        t = time.perf_counter()
        got = idx.query(queries[q])
        lat[j] = time.perf_counter() - t
        found[j] = bool(got)
    is_edit = np.asarray(light)[order]
    check = None
    if idx.passages is not None:
        check = _time_checks(idx, corpus, a, queries, rng)
    size_bytes = None
    if a.backend == "sqlite":
        size_bytes = sum(
            Path(f"{target}{s}").stat().st_size
            for s in ("", "-wal")
            if Path(f"{target}{s}").exists()
        )
    idx.close()

    n = a.size
    res = {
        "backend": a.backend,
        "documents": n,
        "batch": a.batch,
        **(inserted or {"insert_s": None, "insert_docs_per_s": None}),
        "index_bytes": size_bytes,
        "open_s": round(open_s, 4),
        "queries": len(queries),
        "query_ms": {
            "p50": round(float(np.percentile(lat, 50)) * 1e3, 3),
            "p90": round(float(np.percentile(lat, 90)) * 1e3, 3),
            "p99": round(float(np.percentile(lat, 99)) * 1e3, 3),
            "max": round(float(lat.max()) * 1e3, 3),
            "mean": round(float(lat.mean()) * 1e3, 3),
        },
        "light_edits_found": round(float(found[is_edit].mean()), 4),
        **({"check": check} if check is not None else {}),
        "heavy_edits_with_a_match": round(float(found[~is_edit].mean()), 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
    }
    out = Path(a.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"index-{a.backend}-{a.size}.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    q = res["query_ms"]
    print(
        f"| {a.backend} | {n:,} | {res['insert_docs_per_s'] or 0:,.0f} | {q['p50']:.2f} | "
        f"{q['p99']:.2f} | {size_bytes / 1e9 if size_bytes else float('nan'):.2f} GB |"
    )
    if check is not None:
        c = check["ms"]
        print(
            f"check: p50 {c['p50']:.2f} ms, p99 {c['p99']:.2f} ms, planted passages found "
            f"{check['planted_passages_found']:.1%}"
        )


def _time_checks(idx, corpus: Path, a, queries: list[str], rng) -> dict:
    """Latency of ``Index.check`` (whole-text matches and reused passages): the query texts
    above, and as many texts that copy a passage of 60 words from an indexed document into
    another indexed document's text with 30% of its words edited (found as reuse)."""
    picks = rng.choice(a.size, 2 * len(queries), replace=False).tolist()
    want = set(picks)
    texts = {}
    for i, (_, t) in enumerate(read_docs(corpus, a.size)):
        if i in want:
            texts[i] = t
    vocab = ["lorem", "ipsum", "dolor", "amet", "consectetur", "adipiscing", "elit", "sed"]
    planted = []
    for host, src in zip(picks[0::2], picks[1::2]):
        words = texts[src].split()
        at = int(rng.integers(0, max(1, len(words) - 60)))
        body = edit_words(texts[host], 0.3, rng, vocab).split()
        cut = int(rng.integers(0, len(body) + 1))
        planted.append(" ".join(body[:cut] + words[at : at + 60] + body[cut:]))
    all_q = queries + planted
    lat = np.empty(len(all_q))
    reused = np.zeros(len(all_q), bool)
    idx.check(all_q[0])
    for j, q in enumerate(all_q):
        t = time.perf_counter()
        got = idx.check(q)
        lat[j] = time.perf_counter() - t
        reused[j] = bool(got.reused)
    return {
        "checks": len(all_q),
        "ms": {
            "p50": round(float(np.percentile(lat, 50)) * 1e3, 3),
            "p90": round(float(np.percentile(lat, 90)) * 1e3, 3),
            "p99": round(float(np.percentile(lat, 99)) * 1e3, 3),
            "max": round(float(lat.max()) * 1e3, 3),
        },
        "planted_passages_found": round(float(reused[len(queries) :].mean()), 4),
    }


if __name__ == "__main__":
    main()
