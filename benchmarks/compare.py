"""neardup against datasketch and rensa, side by side: same machine, same data, same shingles.

    python benchmarks/compare.py --sizes 10000 30000 100000
    python benchmarks/compare.py --sizes 1000000 --skip datasketch --truth-max 0
    python benchmarks/compare.py --max-size datasketch=100000 --timeout 600

Contenders (each run from the in-memory list of texts to clusters, in a fresh process):

* ``datasketch``: Python shingling, one ``MinHash(num_perm=128)`` per document filled with
  ``update_batch([s.encode("utf8") for s in shingles])``, ``MinHashLSH(threshold=0.8,
  num_perm=128)`` (its own choice of bands: 9 x 13), insert every document, query every document,
  union-find over the (document, result) pairs. No verification: every LSH candidate is a pair.
* ``rensa``: Python shingling, ``RMinHash.from_token_sets(shingle_sets, 128, 42)`` (the same
  digests as one ``RMinHash(128, 42)`` per document with ``update(shingles)``, built in one call),
  ``RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)`` (16 x 8, the banding for 0.8;
  ``RMinHashLSH`` has no default), ``insert`` every document, ``query_all``, union-find. No
  verification either: ``query`` returns the band candidates.
* ``neardup``: ``neardup.dedup(texts, threshold=0.8, shingle="word:5", num_perm=128)``, exact
  Jaccard verification of every candidate (the default).
* ``neardup-estimate``: the same with ``verify="estimate"`` (signature estimate).

All use lowercased word 5-grams (``groundtruth.word_shingles``; neardup computes the same shingles
in compiled code, after NFKC and case folding instead of ``str.lower``: identical on ASCII).
Documents without words are skipped by the peers (counted). Each worker loads the JSONL texts
into a list first (timed apart, ``load s``), warms up neardup's JIT on a few documents, then
times its pipeline; the parent takes the child's peak RSS from ``os.wait4`` and the child reports
its RSS right after loading. Ground truth: every pair with exact Jaccard >= 0.8
(``groundtruth.py``, brute force with sparse products, cached per corpus, up to ``--truth-max``).
Recall: share of the true pairs (J >= 0.85, J >= 0.80) whose documents share a cluster.
Precision: share of the reported pairs whose true J >= 0.8.

A signature microbenchmark follows: 64-bit shingle hashes computed once
(``neardup.shingle``), then the signatures alone, best of 3: ``neardup.sketch`` (OPH and
classic) against rensa's exact batch path on pre-hashed tokens
(``RMinHash.digest_matrix_from_flat_token_hashes``) and, for reference, its sampled Rho sketch.

Writes ``compare.md``, ``compare.json`` and ``compare.png`` into ``--results`` (default
``benchmarks/data/results``, not tracked; the tables in ``benchmarks/results`` are refreshed
with ``--results benchmarks/results/...``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Where the report goes unless --results says otherwise: a folder git ignores.
RESULTS = HERE / "data" / "results"
sys.path.insert(0, str(HERE))

import core  # noqa: E402
import corpus as corpus_mod  # noqa: E402
import groundtruth as gt  # noqa: E402

THRESHOLD = 0.8
NUM_PERM = 128
RENSA_SEED = 42
RENSA_BANDS = 16
CHUNK = 1_000  # peers shingle and sketch 1,000 documents at a time (bounded memory)
CONTENDERS = ("datasketch", "rensa", "neardup", "neardup-estimate")
PEERS = {"datasketch": "datasketch", "rensa": "rensa"}  # contender -> module it needs
BASELINE = "neardup"
WHOLE_PROCESS = ("datasketch", "rensa", "neardup")  # contenders of the whole-process mode
RECALL_LEVELS = (0.85, 0.80)
MICRO_REPEAT = 3

word_shingles = gt.word_shingles


# ---------------------------------------------------------------------------------------------
# metrics (pure functions, tested in tests/test_bench_compare.py)


# Processes are timed as a user runs them: with Python keeping compiled bytecode. With
# PYTHONDONTWRITEBYTECODE set (some shells and CI images set it) every start recompiles every
# module of the package, 2-3x its import time.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def union_find_labels(n: int, left, right) -> np.ndarray:
    """Cluster label (the root's row) of each of ``n`` rows after uniting every pair, as a user
    writes it: a parent list, path halving, union by smaller root."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(left, right):
        ra, rb = find(a), find(b)
        if ra != rb:
            if ra < rb:
                parent[rb] = ra
            else:
                parent[ra] = rb
    return np.array([find(i) for i in range(n)], np.int64)


def normalize_pairs(left, right) -> tuple[np.ndarray, np.ndarray]:
    """Unordered pairs as ``(a, b)`` with ``a < b``, unique, sorted; self pairs dropped."""
    left = np.asarray(left, np.int64).reshape(-1)
    right = np.asarray(right, np.int64).reshape(-1)
    a, b = np.minimum(left, right), np.maximum(left, right)
    keep = a != b
    a, b = a[keep], b[keep]
    if len(a) == 0:
        return a, b
    key = np.unique(a * (int(max(b.max(), 0)) + 1) + b)
    m = int(max(b.max(), 0)) + 1
    return key // m, key % m


def _keys(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    return np.asarray(a, np.int64) * np.int64(n) + np.asarray(b, np.int64)


def recall(
    labels: np.ndarray, truth_a: np.ndarray, truth_b: np.ndarray, truth_j: np.ndarray, level: float
) -> float | None:
    """Share of the true pairs with ``J >= level`` whose two documents have the same label;
    None when there are no such pairs."""
    sel = truth_j >= level
    if not sel.any():
        return None
    labels = np.asarray(labels)
    return float(np.mean(labels[truth_a[sel]] == labels[truth_b[sel]]))


def precision(left, right, truth_a: np.ndarray, truth_b: np.ndarray, n: int) -> float | None:
    """Share of the reported pairs (unordered, unique) that are true pairs (in the ground-truth
    list of all pairs with J >= threshold); None when nothing was reported."""
    a, b = normalize_pairs(left, right)
    if len(a) == 0:
        return None
    return float(np.mean(np.isin(_keys(a, b, n), _keys(truth_a, truth_b, n))))


def false_pairs(left, right, truth_a, truth_b, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Reported pairs absent from the ground truth."""
    a, b = normalize_pairs(left, right)
    bad = ~np.isin(_keys(a, b, n), _keys(truth_a, truth_b, n))
    return a[bad], b[bad]


def missed_pairs(labels, truth_a, truth_b, truth_j, level: float):
    """True pairs with ``J >= level`` split across clusters: ``(a, b, j)``."""
    labels = np.asarray(labels)
    sel = (truth_j >= level) & (labels[truth_a] != labels[truth_b])
    return truth_a[sel], truth_b[sel], truth_j[sel]


# ---------------------------------------------------------------------------------------------
# worker side: one contender, one corpus, in a fresh process


def _rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:  # pragma: no cover - not Linux
        pass
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class _Stages:
    def __init__(self) -> None:
        self.s: dict[str, float] = {}

    def add(self, name: str, t0: float) -> float:
        t1 = time.perf_counter()
        self.s[name] = self.s.get(name, 0.0) + (t1 - t0)
        return t1


def run_datasketch(texts: list[str]) -> dict:
    from datasketch import MinHash, MinHashLSH

    st = _Stages()
    n = len(texts)
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    mhs: list = [None] * n
    for s in range(0, n, CHUNK):
        t = time.perf_counter()
        sh = [word_shingles(x) for x in texts[s : s + CHUNK]]
        t = st.add("shingle", t)
        for i, shingles in enumerate(sh, s):
            if shingles:
                m = MinHash(num_perm=NUM_PERM)
                m.update_batch([x.encode("utf8") for x in shingles])
                mhs[i] = m
        del sh
        t = st.add("minhash", t)
        for i in range(s, min(n, s + CHUNK)):
            if mhs[i] is not None:
                lsh.insert(i, mhs[i])
        st.add("lsh_insert", t)
    t = time.perf_counter()
    left: list[int] = []
    right: list[int] = []
    for i, m in enumerate(mhs):
        if m is not None:
            for j in lsh.query(m):
                if j != i:
                    left.append(i)
                    right.append(j)
    t = st.add("lsh_query", t)
    labels = union_find_labels(n, left, right)
    st.add("union_find", t)
    return {
        "left": left,
        "right": right,
        "labels": labels,
        "stages": st.s,
        "empty": sum(m is None for m in mhs),
        "params": {"bands": lsh.b, "rows": lsh.r, "verify": "none (LSH candidates)"},
    }


def run_rensa(texts: list[str]) -> dict:
    from rensa import RMinHash, RMinHashLSH

    st = _Stages()
    n = len(texts)
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=RENSA_BANDS)
    mhs: list = [None] * n
    for s in range(0, n, CHUNK):
        t = time.perf_counter()
        sh = [word_shingles(x) for x in texts[s : s + CHUNK]]
        t = st.add("shingle", t)
        rows = [i for i, x in enumerate(sh, s) if x]
        built = RMinHash.from_token_sets([x for x in sh if x], NUM_PERM, RENSA_SEED)
        for i, m in zip(rows, built):
            mhs[i] = m
        del sh, built
        t = st.add("minhash", t)
        for i in rows:
            lsh.insert(i, mhs[i])
        st.add("lsh_insert", t)
    t = time.perf_counter()
    keys = [i for i, m in enumerate(mhs) if m is not None]
    found = lsh.query_all([mhs[i] for i in keys])
    left: list[int] = []
    right: list[int] = []
    for i, cands in zip(keys, found):
        for j in cands:
            if j != i:
                left.append(i)
                right.append(j)
    t = st.add("lsh_query", t)
    labels = union_find_labels(n, left, right)
    st.add("union_find", t)
    return {
        "left": left,
        "right": right,
        "labels": labels,
        "stages": st.s,
        "empty": n - len(keys),
        "params": {
            "bands": RENSA_BANDS,
            "rows": NUM_PERM // RENSA_BANDS,
            "seed": RENSA_SEED,
            "verify": "none (LSH candidates)",
        },
    }


def _neardup_params(name: str) -> dict:
    params = {"threshold": THRESHOLD, "shingle": "word:5", "num_perm": NUM_PERM}
    if name == "neardup-estimate":
        params["verify"] = "estimate"
    return params


def warm_up_neardup(texts: list[str], params: dict) -> None:
    """Run every stage once on a sample (first touches of the code and the allocator)."""
    import neardup

    sample = texts[:200] + texts[:20]  # exact copies too: every stage gets work
    neardup.dedup(sample, **params)


def run_neardup(texts: list[str], name: str) -> dict:
    import neardup

    params = _neardup_params(name)
    t = time.perf_counter()
    r = neardup.dedup(texts, **params)
    wall = time.perf_counter() - t
    s = r.summary
    return {
        "left": r.pairs.left,
        "right": r.pairs.right,
        "labels": np.asarray(r.labels),
        "stages": dict(s["timings_s"]),
        "empty": int(s["empty_documents"]),
        "wall_s": wall,
        "params": {
            "bands": s["lsh"]["bands"],
            "rows": s["lsh"]["rows"],
            "verify": s["config"]["verify"]["mode"],
            "candidates": s["lsh"].get("candidates"),
        },
    }


def _load(path: Path) -> tuple[list[str], float]:
    t = time.perf_counter()
    texts = gt.load_texts(path)
    return texts, time.perf_counter() - t


def worker(name: str, corpus: Path, out: Path) -> int:
    texts, load_s = _load(corpus)
    rss_load = _rss_mb()
    info: dict = {
        "contender": name,
        "documents": len(texts),
        "load_s": round(load_s, 3),
        "rss_after_load_mb": rss_load,
    }
    if name.startswith("neardup"):
        t = time.perf_counter()
        warm_up_neardup(texts, _neardup_params(name))
        info["warmup_s"] = round(time.perf_counter() - t, 3)
        res = run_neardup(texts, name)
        wall = res.pop("wall_s")
    else:
        fn = {"datasketch": run_datasketch, "rensa": run_rensa}[name]
        t = time.perf_counter()
        res = fn(texts)
        wall = time.perf_counter() - t
    a, b = normalize_pairs(res["left"], res["right"])
    info.update(
        wall_s=round(wall, 4),
        stages={k: round(v, 4) for k, v in res["stages"].items()},
        pairs=len(a),
        empty_documents=res["empty"],
        params=res["params"],
        text_bytes=sum(len(x.encode("utf-8", "surrogatepass")) for x in texts),
        rss_end_mb=_rss_mb(),
    )
    np.savez(out.with_suffix(".npz"), a=a, b=b, labels=np.asarray(res["labels"], np.int64))
    out.with_suffix(".json").write_text(json.dumps(info, indent=1))
    return 0


def user_pipeline(name: str, corpus: Path, outdir: Path) -> int:
    """The whole job as a user writes it with a peer library, for the whole-process mode: read
    the JSONL corpus, run the library's pipeline (the in-process mode's code), and write what
    ``neardup dedup`` writes: the clusters, the pairs and the deduplicated corpus (the first
    document of each cluster, its line as it was), as JSONL. Ids are row numbers, as in
    ``neardup dedup`` without ``--id-field``."""
    outdir.mkdir(parents=True, exist_ok=True)
    with open(corpus, "rb") as f:
        lines = f.readlines()
    texts = [json.loads(line)["text"] for line in lines]
    res = {"datasketch": run_datasketch, "rensa": run_rensa}[name](texts)
    labels = np.asarray(res["labels"])
    with open(outdir / "clusters.jsonl", "w") as f:
        for i, c in enumerate(labels.tolist()):
            f.write(json.dumps({"id": str(i), "cluster": c}) + "\n")
    a, b = normalize_pairs(res["left"], res["right"])
    with open(outdir / "pairs.jsonl", "w") as f:
        for x, y in zip(a.tolist(), b.tolist()):
            f.write(json.dumps({"id_a": str(x), "id_b": str(y)}) + "\n")
    first = np.zeros(len(labels), bool)
    first[np.unique(labels, return_index=True)[1]] = True
    with open(outdir / "deduplicated.jsonl", "wb") as f:
        f.writelines(line for line, keep in zip(lines, first.tolist()) if keep)
    return 0


def whole_process_cmd(name: str, corpus: Path, outdir: Path) -> list[str]:
    """The command a user runs: ``neardup dedup`` itself, or the peer's pipeline script."""
    if name == "neardup":
        return [
            sys.executable,
            "-m",
            "neardup.cli",
            "dedup",
            str(corpus),
            "-o",
            str(outdir),
            "--quiet",
        ]
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--user-pipeline",
        name,
        "--corpus",
        str(corpus),
        "--out",
        str(outdir),
    ]


def run_whole_process(
    name: str,
    size: int,
    path: Path,
    workdir: Path,
    repeat: int,
    repeat_under: float,
    timeout: float,
) -> dict:
    """Best of up to ``repeat`` whole processes (spawn to exit) of ``name`` on ``path``."""
    entry: dict = {"size": size, "contender": name, "runs_s": []}
    for attempt in range(repeat):
        if attempt and entry["runs_s"][-1] >= repeat_under:
            break
        out = workdir / f"whole-{name}-{size}"
        shutil.rmtree(out, ignore_errors=True)
        print(
            f"{size:,} documents: {name}, whole process (run {attempt + 1}) ...",
            file=sys.stderr,
            flush=True,
        )
        res = run_child(
            whole_process_cmd(name, path, out), timeout, workdir / f"whole-{name}-{size}.stderr"
        )
        if res["timed_out"] or res["rc"] != 0:
            entry["status"] = (
                "not run (timed out)" if res["timed_out"] else f"failed (exit {res['rc']})"
            )
            return entry
        entry["runs_s"].append(res["process_wall_s"])
        if res["process_wall_s"] <= min(entry["runs_s"]):
            entry["peak_rss_mb"] = res["peak_rss_mb"]
        shutil.rmtree(out, ignore_errors=True)
    entry.update(status="ok", wall_s=min(entry["runs_s"]))
    return entry


def _best_of(fn, repeat: int = MICRO_REPEAT) -> tuple[dict, object]:
    """Wall seconds of each of ``repeat`` calls, the best, and the process CPU seconds of the
    best call (CPU / wall ~ threads busy)."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        c, t = time.process_time(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    i = int(np.argmin(walls))
    return {"best": walls[i], "cpu": cpus[i], "all": walls}, out


def micro_worker(corpus: Path, out: Path) -> int:
    """Signature computation alone, on the same pre-hashed shingles."""
    import neardup
    from neardup.config import SketchConfig
    from neardup.text import Shingles

    texts, _ = _load(corpus)
    t = time.perf_counter()
    sh = neardup.shingle(texts, "word:5")
    shingle_s = time.perf_counter() - t
    n, total = len(sh), int(len(sh.hashes))
    del texts
    hashes = np.ascontiguousarray(sh.hashes, np.uint64)
    offsets = np.ascontiguousarray(sh.offsets, np.int64)
    small = Shingles(hashes[: offsets[min(n, 100)]], offsets[: min(n, 100) + 1])
    rows = []

    def row(name: str, what: str, timing: dict) -> None:
        secs = timing["best"]
        rows.append(
            {
                "method": name,
                "what": what,
                "seconds": round(secs, 4),
                "cpu_s": round(timing["cpu"], 4),
                "all_s": [round(x, 4) for x in timing["all"]],
                "docs_per_s": round(n / secs),
                "shingles_per_s": round(total / secs),
            }
        )

    for scheme in ("oph", "classic"):
        cfg = SketchConfig(num_perm=NUM_PERM, scheme=scheme)
        neardup.sketch(small, cfg)  # JIT warm-up
        timing, sig = _best_of(lambda cfg=cfg: neardup.sketch(sh, cfg))
        row(
            f"neardup.sketch scheme={scheme}",
            "one-permutation hashing + optimal densification"
            if scheme == "oph"
            else "128 hashes (a*x+b) mod 2^61-1",
            timing,
        )
        del sig
    if importlib.util.find_spec("rensa") is not None:
        from rensa import RMinHash

        RMinHash.digest_matrix_from_flat_token_hashes(
            small.hashes, small.offsets, NUM_PERM, RENSA_SEED
        )
        timing, _ = _best_of(
            lambda: RMinHash.digest_matrix_from_flat_token_hashes(
                hashes, offsets, NUM_PERM, RENSA_SEED
            )
        )
        row(
            "rensa RMinHash.digest_matrix_from_flat_token_hashes",
            "exact R-MinHash: 128 (a*x+b) permutations of every token hash",
            timing,
        )
        lists = [hashes[offsets[i] : offsets[i + 1]].tolist() for i in range(n)]
        timing, _ = _best_of(
            lambda: RMinHash.digest_matrix_from_token_hash_sets(lists, NUM_PERM, RENSA_SEED)
        )
        row(
            "rensa RMinHash.digest_matrix_from_token_hash_sets",
            "same digests, from Python lists of ints (lists built untimed)",
            timing,
        )
        del lists
        timing, _ = _best_of(
            lambda: RMinHash.digest_matrix_from_flat_token_hashes_rho(
                hashes, offsets, NUM_PERM, RENSA_SEED
            )
        )
        row(
            "rensa ..._flat_token_hashes_rho (not comparable)",
            "Rho sketch: samples a budget of tokens per document, approximate",
            timing,
        )
    from neardup._threads import get_num_threads

    info = {
        "documents": n,
        "shingles": total,
        "shingle_s": round(shingle_s, 3),
        "kernel_threads": get_num_threads(),
        "repeat": MICRO_REPEAT,
        "rows": rows,
        "corpus": corpus.name,
    }
    out.with_suffix(".json").write_text(json.dumps(info, indent=1))
    return 0


# ---------------------------------------------------------------------------------------------
# parent side


def versions() -> dict:
    out = {"python": platform.python_version()}
    for mod in ("neardup", "datasketch", "rensa", "numpy", "scipy"):
        try:
            from importlib.metadata import version

            out[mod] = version(mod)
        except Exception:
            out[mod] = None
    return out


def run_child(cmd: list[str], timeout: float, stderr_path: Path) -> dict:
    """Run ``cmd``; return its exit code, wall seconds, peak RSS (``ru_maxrss`` of the child
    from ``os.wait4``) and whether it was killed at ``timeout``."""
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        proc.kill()

    t = time.perf_counter()
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=err, stderr=err, cwd=ROOT)
        # a blocking wait, timed to the exit (polling every 50 ms added up to 50 ms to each
        # run: a tenth of a short one); a timer kills the child at the timeout
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        timed_out = killed.is_set()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "rc": proc.returncode,
        "process_wall_s": round(time.perf_counter() - t, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "timed_out": timed_out,
    }


def run_contender(name: str, path: Path, out: Path, workdir: Path, timeout: float):
    """One run of ``name`` on ``path`` in a fresh process: ``("ok", run_child result)`` with the
    worker's files at ``out``, or ``(status, None)``."""
    for suffix in (".json", ".npz"):
        out.with_suffix(suffix).unlink(missing_ok=True)
    res = run_child(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            name,
            "--corpus",
            str(path),
            "--out",
            str(out),
        ],
        timeout,
        out.with_suffix(".stderr"),
    )
    if res["timed_out"]:
        return f"not run (timed out after {timeout:.0f} s)", None
    if res["rc"] != 0 or not out.with_suffix(".json").exists():
        tail = out.with_suffix(".stderr").read_text()[-800:]
        print(f"{name} failed on {path.name}: {tail}", file=sys.stderr)
        return f"failed (exit {res['rc']})", None
    return "ok", res


def parse_caps(items: list[str]) -> dict[str, int]:
    caps = {}
    for item in items:
        name, _, size = item.partition("=")
        if name not in CONTENDERS or not size.isdigit():
            raise SystemExit(
                f"--max-size {item!r}: use CONTENDER=SIZE, CONTENDER one of {', '.join(CONTENDERS)}"
            )
        caps[name] = int(size)
    return caps


def corpus_path(size: int, data_dir: Path, doc_chars: tuple[int, int] | None = None) -> Path:
    """``corpus-<size>.jsonl``, or with originals of another length ``corpus-<size>-chars<min>-
    <max>.jsonl``, in ``data_dir``."""
    if doc_chars is None or tuple(doc_chars) == corpus_mod.TARGET_CHARS:
        return data_dir / f"corpus-{size}.jsonl"
    return data_dir / f"corpus-{size}-chars{doc_chars[0]}-{doc_chars[1]}.jsonl"


def ensure_corpus(
    size: int, archive: Path, data_dir: Path, doc_chars: tuple[int, int] | None = None
) -> Path:
    """``core.ensure_corpus`` (``benchmarks/data/corpus-<size>.jsonl``), or the same file name
    under another ``data_dir``, or a corpus of originals of ``doc_chars`` characters."""
    path = corpus_path(size, data_dir, doc_chars)
    if path.name == f"corpus-{size}.jsonl" and data_dir.resolve() == (HERE / "data").resolve():
        return core.ensure_corpus(size, archive)
    if not path.exists() or not corpus_mod.truth_path(path).exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        corpus_mod.write_corpus(
            size, path, archive=archive, doc_chars=tuple(doc_chars or corpus_mod.TARGET_CHARS)
        )
    return path


def ensure_truth(path: Path, size: int, workdir: Path, timeout: float):
    cache = path.parent / ("truth-" + path.stem.removeprefix("corpus-") + ".npz")
    st = path.stat()
    key = np.array([st.st_size, st.st_mtime_ns], np.int64)
    if cache.exists():
        with np.load(cache) as z:
            if np.array_equal(z["key"], key) and float(z["threshold"]) == THRESHOLD:
                return z["a"], z["b"], z["jaccard"], None
    # in a child process: its few GB at 100k documents are given back before the contenders run
    res = run_child(
        [
            sys.executable,
            str(HERE / "groundtruth.py"),
            str(path),
            "--threshold",
            str(THRESHOLD),
            "--cache",
            str(cache),
        ],
        timeout,
        workdir / f"truth-{size}.stderr",
    )
    if res["rc"] != 0:
        msg = (workdir / f"truth-{size}.stderr").read_text()[-1500:]
        print(f"ground truth failed for {size}: {msg}", file=sys.stderr)
        return None
    with np.load(cache) as z:
        return z["a"], z["b"], z["jaccard"], res


def evaluate(entry: dict, npz: Path, truth) -> None:
    with np.load(npz) as z:
        a, b, labels = z["a"], z["b"], z["labels"]
    n = entry["documents"]
    if truth is None:
        entry.update({"recall_085": None, "recall_080": None, "precision": None})
        return
    ta, tb, tj = truth
    entry["recall_085"] = recall(labels, ta, tb, tj, 0.85)
    entry["recall_080"] = recall(labels, ta, tb, tj, 0.80)
    entry["precision"] = precision(a, b, ta, tb, n)
    fa, fb = false_pairs(a, b, ta, tb, n)
    entry["false_pairs"] = len(fa)
    entry["false_pair_examples"] = [[int(x), int(y)] for x, y in zip(fa[:10], fb[:10])]
    ma, mb, mj = missed_pairs(labels, ta, tb, tj, 0.80)
    entry["missed_pairs_080"] = len(ma)
    entry["missed_pair_examples"] = [
        [int(x), int(y), round(float(j), 4)] for x, y, j in zip(ma[:10], mb[:10], mj[:10])
    ]
    high = mj >= 0.85
    entry["missed_pairs_085"] = int(np.count_nonzero(high))
    entry["missed_pair_examples_085"] = [
        [int(x), int(y), round(float(j), 4)]
        for x, y, j in zip(ma[high][:10], mb[high][:10], mj[high][:10])
    ]
    entry["missed_by_jaccard"] = {
        label: int(np.count_nonzero((mj >= lo) & (mj < hi)))
        for label, lo, hi in (
            ("0.80-0.85", 0.8, 0.85),
            ("0.85-0.90", 0.85, 0.9),
            ("0.90-0.95", 0.9, 0.95),
            ("0.95-1", 0.95, 1.0),
            ("1", 1.0, 2.0),
        )
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10_000, 30_000, 100_000],
        metavar="SIZE",
        help="corpus sizes in documents, at least 1,000",
    )
    ap.add_argument("--archive", type=Path, default=corpus_mod.DEFAULT_ARCHIVE)
    ap.add_argument(
        "--doc-chars",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        default=None,
        help="build the corpora with originals of MIN-MAX characters (default 1700 2300, "
        "about 2 KB a document; e.g. 600 1100 for shorter news items)",
    )
    ap.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=CONTENDERS)
    ap.add_argument(
        "--skip",
        nargs="+",
        default=[],
        choices=CONTENDERS,
        help="contenders not to run (reported as not run)",
    )
    ap.add_argument(
        "--max-size",
        action="append",
        default=[],
        metavar="CONTENDER=SIZE",
        help="run CONTENDER only up to SIZE documents (repeatable)",
    )
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per contender and size, each in a fresh process; the fastest is reported "
        "(default 3)",
    )
    ap.add_argument(
        "--repeat-under",
        type=float,
        default=30.0,
        help="repeat only runs shorter than this many seconds (default 30): longer ones vary "
        "little and would take long",
    )
    ap.add_argument(
        "--truth-max",
        type=int,
        default=100_000,
        help="largest size for which the exact ground truth is computed",
    )
    ap.add_argument(
        "--micro-size",
        type=int,
        default=None,
        help="corpus of the signature microbenchmark (default: 100000 if run, "
        "else the largest size run; 0 to skip it)",
    )
    ap.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="folder for compare.md, compare.json and compare.png (default: "
        "benchmarks/data/results, which git ignores; --results benchmarks/results refreshes the "
        "tracked tables)",
    )
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=HERE / "data",
        help="corpora, ground-truth caches and worker outputs (default benchmarks/data)",
    )
    ap.add_argument(
        "--whole-process",
        action="store_true",
        help="also time each contender as a user runs it, from the shell prompt back to the "
        "prompt: neardup dedup itself, and for each peer a script reading the JSONL file, "
        "running its pipeline and writing clusters, pairs and the deduplicated corpus",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--user-pipeline", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.user_pipeline:
        return user_pipeline(a.user_pipeline, a.corpus, a.out)
    if a.worker == "micro":
        return micro_worker(a.corpus, a.out)
    if a.worker:
        return worker(a.worker, a.corpus, a.out)

    sizes = sorted(set(a.sizes))
    if sizes[0] < 1_000:
        ap.error(f"--sizes {sizes[0]}: at least 1,000 documents")
    paths = {s: corpus_path(s, a.data_dir, a.doc_chars) for s in sizes}
    need_build = [
        s for s in sizes if not (paths[s].exists() and corpus_mod.truth_path(paths[s]).exists())
    ]
    if need_build and not Path(a.archive).exists():
        print(
            f"error: {a.archive} is missing: the 20 Newsgroups archive (20news-bydate.tar.gz) "
            f"is needed to build the benchmark corpus of {need_build[0]:,} documents; see "
            "../shared/data/README.md",
            file=sys.stderr,
        )
        return 2
    caps = parse_caps(a.max_size)
    vers = versions()
    workdir = a.data_dir / "compare"
    workdir.mkdir(parents=True, exist_ok=True)
    contenders = [c for c in CONTENDERS if c in a.contenders]
    missing = {
        c: PEERS[c] for c in contenders if c in PEERS and importlib.util.find_spec(PEERS[c]) is None
    }
    for c, mod in missing.items():
        print(
            f"note: {mod} is not installed: {c} is skipped (pip install -e '.[bench]')",
            file=sys.stderr,
        )

    results: list[dict] = []
    whole: list[dict] = []
    truth_info: dict[int, dict] = {}
    for size in sizes:
        path = ensure_corpus(size, a.archive, a.data_dir, a.doc_chars)
        truth = None
        if size <= a.truth_max:
            t = time.perf_counter()
            got = ensure_truth(path, size, workdir, a.timeout)
            if got is not None:
                truth = got[:3]
                truth_info[size] = {
                    "pairs_080": int(len(truth[0])),
                    "pairs_085": int(np.count_nonzero(truth[2] >= 0.85)),
                    "seconds": round(time.perf_counter() - t, 1),
                    "cached": got[3] is None,
                    "peak_rss_mb": got[3]["peak_rss_mb"] if got[3] else None,
                }
        for name in contenders:
            entry = {"size": size, "contender": name}
            if name in missing:
                entry["status"] = f"not installed ({missing[name]})"
            elif name in a.skip:
                entry["status"] = "not run (--skip)"
            elif name in caps and size > caps[name]:
                entry["status"] = f"not run (--max-size {name}={caps[name]})"
            else:
                out = workdir / f"{name}-{size}"
                walls: list[float] = []
                best = None
                for attempt in range(a.repeat):
                    if attempt and walls[-1] >= a.repeat_under:
                        break  # long runs vary little: one is enough
                    print(
                        f"{size:,} documents: {name} (run {attempt + 1}) ...",
                        file=sys.stderr,
                        flush=True,
                    )
                    got = run_contender(name, path, out, workdir, a.timeout)
                    if got[0] != "ok":
                        best = got
                        break
                    wall = json.loads(out.with_suffix(".json").read_text())["wall_s"]
                    walls.append(wall)
                    if best is None or wall <= min(walls):
                        best = got
                        for suffix in (".json", ".npz"):
                            keep = workdir / f"best-{name}-{size}{suffix}"
                            out.with_suffix(suffix).replace(keep)
                status, res = best
                if status != "ok":
                    entry["status"] = status
                else:
                    for suffix in (".json", ".npz"):
                        (workdir / f"best-{name}-{size}{suffix}").replace(out.with_suffix(suffix))
                    entry.update(json.loads(out.with_suffix(".json").read_text()))
                    entry.update(
                        status="ok",
                        peak_rss_mb=res["peak_rss_mb"],
                        process_wall_s=res["process_wall_s"],
                        runs_wall_s=walls,
                    )
                    entry["docs_per_s"] = entry["documents"] / entry["wall_s"]
                    entry["mb_per_s"] = entry["text_bytes"] / 1e6 / entry["wall_s"]
                    evaluate(entry, out.with_suffix(".npz"), truth)
                    print(
                        json.dumps(
                            {
                                k: entry.get(k)
                                for k in (
                                    "size",
                                    "contender",
                                    "wall_s",
                                    "peak_rss_mb",
                                    "pairs",
                                    "recall_085",
                                    "recall_080",
                                    "precision",
                                )
                            }
                        ),
                        file=sys.stderr,
                        flush=True,
                    )
            results.append(entry)
        base = next(
            (
                e
                for e in results
                if e["size"] == size and e["contender"] == BASELINE and e["status"] == "ok"
            ),
            None,
        )
        for e in results:
            if e["size"] == size and e["status"] == "ok" and base is not None:
                e["neardup_speedup"] = e["wall_s"] / base["wall_s"]
        if a.whole_process:
            mine = []
            for name in [c for c in contenders if c in WHOLE_PROCESS]:
                if name in missing or name in a.skip or (name in caps and size > caps[name]):
                    continue
                mine.append(
                    run_whole_process(
                        name, size, path, workdir, a.repeat, a.repeat_under, a.timeout
                    )
                )
            base_w = next(
                (e for e in mine if e["contender"] == BASELINE and e["status"] == "ok"), None
            )
            for e in mine:
                if e["status"] == "ok" and base_w is not None:
                    e["neardup_speedup"] = e["wall_s"] / base_w["wall_s"]
            whole.extend(mine)

    micro = None
    ran = [s for s in sizes if any(e["size"] == s and e["status"] == "ok" for e in results)]
    micro_size = (
        a.micro_size
        if a.micro_size is not None
        else (100_000 if 100_000 in ran else (max(ran) if ran else 0))
    )
    if micro_size:
        path = ensure_corpus(micro_size, a.archive, a.data_dir)
        out = workdir / f"micro-{micro_size}"
        out.with_suffix(".json").unlink(missing_ok=True)
        print(f"signature microbenchmark on {micro_size:,} documents ...", file=sys.stderr)
        res = run_child(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                "micro",
                "--corpus",
                str(path),
                "--out",
                str(out),
            ],
            a.timeout,
            out.with_suffix(".stderr"),
        )
        if res["rc"] == 0 and out.with_suffix(".json").exists():
            micro = json.loads(out.with_suffix(".json").read_text())
        else:
            print(
                f"microbenchmark failed: {out.with_suffix('.stderr').read_text()[-800:]}",
                file=sys.stderr,
            )

    report = {
        "machine": machine_line(vers),
        "versions": vers,
        "threshold": THRESHOLD,
        "num_perm": NUM_PERM,
        "doc_chars": list(a.doc_chars or corpus_mod.TARGET_CHARS),
        "truth": truth_info,
        "repeat": a.repeat,
        "repeat_under": a.repeat_under,
        "results": results,
        "whole_process": whole,
        "micro": micro,
    }
    write_report(report, a.results)
    return 0


def machine_line(vers: dict) -> str:
    lib = ", ".join(
        f"{m} {vers.get(m) or 'not installed'}" for m in ("neardup", "datasketch", "rensa")
    )
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {vers['python']}; {lib}; "
        f"numpy {vers.get('numpy')}"
    )


def _f(v, fmt: str = ".3f", na: str = "n/a") -> str:
    return na if v is None else format(v, fmt)


def scaling_rows(results: list[dict], small: int = 100_000, large: int = 1_000_000) -> list:
    """Per contender run at both sizes: wall times, their ratio and the memory at ``large``."""
    ok = {(e["contender"], e["size"]): e for e in results if e["status"] == "ok"}
    rows = []
    for name in dict.fromkeys(e["contender"] for e in results):
        a, b = ok.get((name, small)), ok.get((name, large))
        if a and b:
            rows.append(
                {
                    "contender": name,
                    "wall_100k": a["wall_s"],
                    "wall_1m": b["wall_s"],
                    "ratio": b["wall_s"] / a["wall_s"],
                    "peak_rss_mb_1m": b["peak_rss_mb"],
                    "added_mb_1m": b["peak_rss_mb"] - b["rss_after_load_mb"],
                }
            )
    return rows


def _chars(report: dict) -> str:
    lo, hi = report.get("doc_chars", corpus_mod.TARGET_CHARS)
    return f"{lo:,}-{hi:,}"


def render(report: dict) -> str:
    res = report["results"]
    lines = [
        f"# neardup vs datasketch vs rensa ({report['machine']})",
        "",
        f"Threshold {report['threshold']}, {report['num_perm']} permutations, lowercased "
        "word 5-grams for every contender. Corpus: real news text with planted near-duplicates "
        f"(`benchmarks/corpus.py`), originals of {_chars(report)} characters. Wall = the "
        "pipeline from the in-memory list of "
        "texts to clusters (loading the JSONL is timed apart). Recall: true pairs (exact "
        "Jaccard) whose documents end up in one cluster; precision: reported pairs with "
        "true J >= 0.8. `x neardup` = contender wall / neardup wall, same run. Each "
        "contender runs in a fresh process; runs shorter than "
        f"{report.get('repeat_under', 30):.0f} s are repeated (up to {report.get('repeat', 1)} "
        "runs) and the fastest is reported, all runs listed. Peak RSS includes the loaded "
        "texts; `added MB` = peak RSS - RSS after loading, the memory of the pipeline itself.",
        "",
        "| documents | contender | wall s | runs s | x neardup | docs/s | MB/s | peak RSS MB | "
        "RSS after load MB | added MB | pairs | recall J>=0.85 | recall J>=0.80 | precision |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in res:
        if e["status"] != "ok":
            lines.append(f"| {e['size']:,} | {e['contender']} | {e['status']} |" + " |" * 11)
            continue
        runs = ", ".join(f"{w:.2f}" for w in e.get("runs_wall_s", [e["wall_s"]]))
        lines.append(
            f"| {e['documents']:,} | {e['contender']} | {e['wall_s']:.2f} | {runs} | "
            f"{_f(e.get('neardup_speedup'), '.1f')} | {e['docs_per_s']:,.0f} | "
            f"{e['mb_per_s']:.1f} | {e['peak_rss_mb']:,.0f} | {e['rss_after_load_mb']:,.0f} | "
            f"{e['peak_rss_mb'] - e['rss_after_load_mb']:,.0f} | "
            f"{e['pairs']:,} | {_f(e.get('recall_085'))} | {_f(e.get('recall_080'))} | "
            f"{_f(e.get('precision'))} |"
        )
    scaling = scaling_rows(res)
    if scaling:
        lines += [
            "",
            "Scaling from 100,000 to 1,000,000 documents (same run):",
            "",
            "| contender | wall s at 100k | wall s at 1M | 1M / 100k | peak RSS MB at 1M | "
            "added MB at 1M |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in scaling:
            lines.append(
                f"| {r['contender']} | {r['wall_100k']:.2f} | {r['wall_1m']:.2f} | "
                f"{r['ratio']:.1f} | {r['peak_rss_mb_1m']:,.0f} | {r['added_mb_1m']:,.0f} |"
            )
    lines += [
        "",
        "Time per stage (seconds; neardup's stages overlap: compiled shingling and "
        "sketching run on a worker thread while the next chunk is normalised):",
        "",
        "| documents | contender | load s | stages |",
        "|---:|---|---:|---|",
    ]
    for e in res:
        if e["status"] == "ok":
            stages = ", ".join(f"{k} {v:.2f}" for k, v in e["stages"].items())
            lines.append(
                f"| {e['documents']:,} | {e['contender']} | {e['load_s']:.2f} | {stages} |"
            )
    if report["truth"]:
        lines += [
            "",
            "Ground truth (exact Jaccard of every pair, sparse products):",
            "",
            "| documents | pairs J>=0.80 | pairs J>=0.85 | seconds |",
            "|---:|---:|---:|---:|",
        ]
        for size, t in report["truth"].items():
            secs = "cached" if t["cached"] else f"{t['seconds']:.0f}"
            lines.append(f"| {int(size):,} | {t['pairs_080']:,} | {t['pairs_085']:,} | {secs} |")
    judged = [e for e in res if e["status"] == "ok" and e.get("precision") is not None]
    if judged:
        buckets = list(judged[0]["missed_by_jaccard"])
        lines += [
            "",
            "True pairs split across clusters, by exact Jaccard, and reported pairs "
            "below 0.8 (first ids: rows of the corpus, 0-based):",
            "",
            "| documents | contender | "
            + " | ".join(f"missed J in {b}" for b in buckets)
            + " | false pairs | first misses with J >= 0.85 (a, b, J) |",
            "|---:|---|" + "---:|" * (len(buckets) + 1) + "---|",
        ]
        for e in judged:
            ex = "; ".join(f"{x} {y} {j:.3f}" for x, y, j in e["missed_pair_examples_085"][:5])
            lines.append(
                f"| {e['documents']:,} | {e['contender']} | "
                + " | ".join(f"{e['missed_by_jaccard'][b]:,}" for b in buckets)
                + f" | {e['false_pairs']:,} | {ex or '-'} |"
            )
    params = {}
    for e in res:
        if e["status"] == "ok":
            params.setdefault(e["contender"], e["params"])
    if params:
        lines += [
            "",
            "LSH and verification per contender: "
            + "; ".join(
                f"{c}: {p['bands']} bands x {p['rows']} rows, verify {p['verify']}"
                for c, p in params.items()
            )
            + ".",
        ]
    whole = report.get("whole_process") or []
    if whole:
        lines += [
            "",
            "Whole process, as a user measures it: from the shell prompt back to the prompt "
            "(interpreter start, imports, reading the JSONL file, the pipeline, writing the "
            "clusters, the pairs and the deduplicated corpus, exit). neardup: `neardup dedup "
            "CORPUS -o OUT --quiet`; each peer: a script that does the same with the peer's "
            "pipeline above (`compare.py --user-pipeline NAME`). Fastest of the runs listed.",
            "",
            "| documents | contender | whole process s | runs s | x neardup | peak RSS MB |",
            "|---:|---|---:|---|---:|---:|",
        ]
        for e in whole:
            if e["status"] != "ok":
                lines.append(f"| {e['size']:,} | {e['contender']} | {e['status']} | | | |")
                continue
            runs = ", ".join(f"{w:.2f}" for w in e["runs_s"])
            lines.append(
                f"| {e['size']:,} | {e['contender']} | {e['wall_s']:.2f} | {runs} | "
                f"{_f(e.get('neardup_speedup'), '.1f')} | {e['peak_rss_mb']:,.0f} |"
            )
    m = report.get("micro")
    if m:
        lines += [
            "",
            f"Signature computation alone, on the same pre-hashed shingles "
            f"({m['documents']:,} documents, {m['shingles']:,} 64-bit shingle hashes from "
            f"`neardup.shingle`; best of {m['repeat']}; neardup with "
            f"{m.get('kernel_threads', m.get('numba_threads'))} threads; CPU s of the best run "
            "shows the "
            "threads each kept busy):",
            "",
            "| method | what | seconds | CPU s | docs/s | shingles/s | all runs s |",
            "|---|---|---:|---:|---:|---:|---|",
        ]
        for r in m["rows"]:
            runs = ", ".join(f"{x:.3f}" for x in r["all_s"])
            lines.append(
                f"| {r['method']} | {r['what']} | {r['seconds']:.3f} | "
                f"{r['cpu_s']:.2f} | {r['docs_per_s']:,} | {r['shingles_per_s']:,} | "
                f"{runs} |"
            )
    return "\n".join(lines) + "\n"


def plot(report: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib is not installed: no plot", file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in CONTENDERS:
        pts = [
            (e["documents"], e["wall_s"])
            for e in report["results"]
            if e["contender"] == name and e["status"] == "ok"
        ]
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("documents")
    ax.set_ylabel("wall seconds (texts in memory -> clusters)")
    ax.set_title("Near-duplicate detection, threshold 0.8, 128 permutations", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.text(0.01, 0.01, report["machine"], fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_report(report: dict, outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    text = render(report)
    (outdir / "compare.md").write_text(text)
    (outdir / "compare.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    plot(report, outdir / "compare.png")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
