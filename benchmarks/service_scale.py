"""``neardup serve`` over a large index: 4 readers and 1 writer against an index of a million
texts (SQLite and Redis).

    python benchmarks/service_scale.py --size 100000 --seconds 60        # quick
    python benchmarks/service_scale.py --size 1000000 --backend both     # the target

Builds (or reuses, when present and made with the same parameters) an index of the first
``--size`` documents of ``benchmarks/data/corpus-<N>.jsonl`` (about 2 KB each; built by
``benchmarks/corpus.py`` when missing) with passage fingerprints, as ``neardup serve --create``
makes it, through the library in-process (``Index.add_many`` in batches of 1,000): an SQLite
file ``benchmarks/data/service-scale-<size>.db``, and for Redis a ``redis-server`` of its own on
a free loopback port with its data under ``benchmarks/data/redis-scale-<size>/`` (saved once
built and loaded again by later runs), or the server of ``--redis-url``. Then it starts
``neardup serve`` on the index with API keys (a read key for the readers, a write key for the
writer, from a key file) and drives it for ``--seconds`` after ``--warmup`` seconds:

* ``--readers`` reader processes (closed loop, one keep-alive ``http.client`` connection each),
  each sending ``POST /query`` and ``POST /check`` (``--check-share`` of the requests; 0.5
  alternates them) with corpus texts of the index with a few words edited (near-duplicates to
  find), and ``--new-share`` of them with 30% of their words edited (new texts);
* ``--writers`` writer process (default 1) posting new documents (indexed texts with 30% of their
  words edited, ids ``zw<run>-<n>``) with ``POST /documents:batch``, ``--writer-batch`` a request.

Every request body is built before the clock starts, so a client spends its time waiting on the
service; the CPU the clients use is measured and reported beside the server's. Reports per
endpoint the count, p50/p95/p99/max latency and errors (any non-2xx, counted by status, first
bodies shown), documents added per second, the CPU seconds of the server, of the clients (and of
redis-server), the server's peak RSS, and the index size. Afterwards the writer's documents are
removed again, so that the index can be reused by the next run. Writes
``service-scale-<backend>-<size>.json`` into ``--results`` (default ``benchmarks/data/results``,
not tracked) and prints a markdown table line per backend.

``--serve-args "..."`` passes more options to ``neardup serve`` (e.g. ``--threads 8``).

``--py-spy FILE`` samples the server with py-spy (``record --format raw``, collapsed stacks; add
``--py-spy-gil`` for samples only of the thread that holds the GIL) during the measured seconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import platform
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
#: Where the report goes unless --results says otherwise: a folder git ignores.
RESULTS = DATA / "results"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from index import find_corpus, read_docs  # noqa: E402

VOCAB = ["lorem", "ipsum", "dolor", "amet", "consectetur", "adipiscing", "elit", "sed"]
#: Documents built into the index per batch (one transaction each).
BUILD_BATCH = 1000
#: Prefix of the writer's ids: after every corpus id ("d0000000"...) in code-point order, so
#: that what a run added is found (and removed) by paging the ids after it.
WRITER_PREFIX = "zw"
#: Request bodies each reader cycles through.
READER_BODIES = 1500


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# Texts


def edit(text: str, rate: float, rng: np.random.Generator) -> str:
    """``text`` with about ``rate`` of its words substituted, doubled with a new word or
    deleted (paragraph breaks kept); vectorised draws, cheaper than ``synth.edit_words``."""
    out = []
    for para in text.split("\n\n"):
        words = para.split(" ")
        n = len(words)
        hit = np.flatnonzero(rng.random(n) < rate).tolist()
        if hit:
            ops = rng.integers(0, 3, len(hit)).tolist()
            new = rng.integers(0, len(VOCAB), len(hit)).tolist()
            for i, op, v in zip(hit, ops, new, strict=True):
                if op == 0:
                    words[i] = VOCAB[v]
                elif op == 1:
                    words[i] = f"{words[i]} {VOCAB[v]}"
                else:
                    words[i] = ""
            words = [w for w in words if w] or [para.split(" ")[0]]
        out.append(" ".join(words))
    return "\n\n".join(out)


def pick_texts(corpus: Path, size: int, n: int, seed: int) -> list[str]:
    """``n`` texts among the first ``size`` documents of ``corpus`` (random, in file order;
    repeated when ``n`` > ``size``)."""
    rng = np.random.default_rng(seed)
    want = np.sort(rng.choice(size, min(n, size), replace=False))
    got = []
    j = 0
    for i, (_, t) in enumerate(read_docs(corpus, size)):
        if j < len(want) and i == want[j]:
            got.append(t)
            j += 1
            if j == len(want):
                break
    while len(got) < n:
        got.extend(got[: n - len(got)])
    return got


def reader_bodies(
    texts: list[str], check_share: float, new_share: float, light: float, seed: int
) -> list[tuple[str, bytes]]:
    """(route, JSON body) pairs: ``/check`` for ``check_share`` of them (evenly spread), the
    others ``/query``; texts edited lightly, ``new_share`` of them heavily (new texts)."""
    rng = np.random.default_rng(seed)
    out = []
    acc = 0.0
    for i, t in enumerate(texts):
        acc += check_share
        route = "/query"
        if acc >= 1.0 - 1e-9:
            acc -= 1.0
            route = "/check"
        rate = 0.3 if rng.random() < new_share else light
        out.append((route, orjson.dumps({"text": edit(t, rate, rng)})))
        del i
    return out


def writer_bodies(texts: list[str], batch: int, run: str, seed: int) -> list[tuple[int, bytes]]:
    """(documents, JSON body) of ``/documents:batch`` requests: new texts (30% of the words
    edited) under ids ``zw<run>-<n>``."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(0, len(texts) - batch + 1, batch):
        docs = [
            {"id": f"{WRITER_PREFIX}{run}-{s + j:07d}", "text": edit(t, 0.3, rng)}
            for j, t in enumerate(texts[s : s + batch])
        ]
        out.append((len(docs), orjson.dumps({"documents": docs})))
    return out


# ---------------------------------------------------------------------------------------------
# Clients: one process each, http.client keep-alive, bodies built before the clock starts


def _client(
    kind: str,
    port: int,
    key: str,
    bodies: list,
    barrier,
    t_start,
    t_warm,
    t_end,
    queue,
    rate: float = 0.0,
) -> None:
    """Send ``bodies`` in a closed loop (cycling) from ``t_start`` to ``t_end``
    (``time.monotonic``, shared by the processes); put the records of the requests that ended
    after ``t_warm`` on ``queue``: (end, seconds, route, status, documents), with the client's
    CPU seconds and the first error bodies. A writer with a ``rate`` (documents a second)
    sends a batch no earlier than that rate allows (and at once when it is behind)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {key}",
        "Host": f"127.0.0.1:{port}",
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    records: list[tuple[float, float, str, int, int]] = []
    errors: list[str] = []
    reconnects = 0
    barrier.wait()
    while time.monotonic() < t_start.value:
        time.sleep(0.001)
    cpu0 = None
    i = 0
    now = time.monotonic()
    while now < t_end.value:
        if cpu0 is None and now >= t_warm.value:
            t = os.times()
            cpu0 = t.user + t.system
        item = bodies[i % len(bodies)]
        i += 1
        if kind == "writer":
            route, docs, body = "/documents:batch", item[0], item[1]
            if i > len(bodies):  # ran out of new documents: stop rather than repeat ids
                break
            if rate:
                due = t_start.value + (i - 1) * docs / rate
                if due > now:
                    time.sleep(due - now)
        else:
            route, body = item
            docs = 0
        t0 = time.monotonic()
        try:
            conn.request("POST", route, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            status = r.status
        except (http.client.HTTPException, OSError) as e:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            reconnects += 1
            status, data = 0, repr(e).encode()
        now = time.monotonic()
        if now >= t_warm.value:
            records.append((now, now - t0, route, status, docs))
        if not 200 <= status < 300 and len(errors) < 5:
            errors.append(f"{route} {status}: {data[:300].decode('utf-8', 'replace')}")
    t = os.times()
    conn.close()
    queue.put(
        {
            "kind": kind,
            "records": records,
            "errors": errors,
            "reconnects": reconnects,
            "cpu_s": (t.user + t.system) - (cpu0 if cpu0 is not None else t.user + t.system),
            "ran_out": kind == "writer" and i > len(bodies),
        }
    )


# ---------------------------------------------------------------------------------------------
# Processes: CPU and memory from /proc


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick


def family(pid: int) -> list[int]:
    """``pid`` and its child processes (the workers of ``neardup serve --workers``)."""
    out = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        with open(task / "children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def proc_mem(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmHWM", "VmRSS", "RssAnon"):
            out[k] = round(int(v.split()[0]) / 1024, 1)
    return out


def sleep_sampling(until: float, pids: list[int], peak: list[float]) -> None:
    """Sleep until ``until`` (monotonic), reading the servers' anonymous resident memory (their
    heaps, not the index file the system maps into them, which VmHWM counts) every 0.2 s into
    ``peak[0]`` (MB, the largest sum seen)."""
    while (left := until - time.monotonic()) > 0:
        try:
            peak[0] = max(peak[0], sum(proc_mem(p).get("RssAnon", 0) for p in pids))
        except OSError:
            pass
        time.sleep(min(left, 0.2))


# ---------------------------------------------------------------------------------------------
# Index: build or reuse


def _stamp(size: int, corpus: Path) -> dict:
    from neardup import __version__

    return {
        "size": size,
        "corpus": corpus.name,
        "passages": True,
        "batch": BUILD_BATCH,
        "neardup": __version__.split("+")[0],
    }


def remove_writer_docs(target: str) -> int:
    """Remove the documents a run's writer added (ids after ``zw``); their number."""
    from neardup import Index

    n = 0
    with Index(target) as idx:
        while True:
            ids = [i for i in idx.list_ids(WRITER_PREFIX, 5000) if i.startswith(WRITER_PREFIX)]
            if not ids:
                return n
            n += idx.remove_many(ids)


def build_index(target: str, corpus: Path, size: int, sidecar: Path, fresh: bool) -> dict:
    """Build the index of the first ``size`` documents with passages, unless ``sidecar`` says
    that ``target`` holds it already (writer documents of an earlier run removed)."""
    from neardup import Index

    want = _stamp(size, corpus)
    if not fresh and sidecar.exists():
        have = json.loads(sidecar.read_text())
        if {k: have.get(k) for k in want} == want:
            left = remove_writer_docs(target)
            with Index(target) as idx:
                n = len(idx)
            if n == size:
                print(
                    f"reusing {target} ({size:,} documents; {left:,} left by an earlier "
                    "run removed)",
                    file=sys.stderr,
                )
                return {**have, "reused": True}
            print(f"{target} holds {n:,} documents, not {size:,}: building again", file=sys.stderr)
    if target.startswith("redis"):
        with Index(target) as idx:
            idx.storage.drop()
    else:
        from neardup.index.sqlite import remove_index_files

        remove_index_files(target)
    sidecar.unlink(missing_ok=True)
    print(f"building {target}: {size:,} documents of {corpus.name}, passages", file=sys.stderr)
    t0 = time.perf_counter()
    with Index(target, passages=True) as idx:
        batch: list[tuple[str, str]] = []
        done = 0
        for doc_id, text in read_docs(corpus, size):
            batch.append((doc_id, text))
            if len(batch) == BUILD_BATCH:
                idx.add_many(batch, batch_size=BUILD_BATCH)
                done += len(batch)
                batch = []
                if done % (size // 10 or 1) < BUILD_BATCH:
                    rate = done / (time.perf_counter() - t0)
                    print(f"  {done:>9,}  {rate:>8,.0f} docs/s", file=sys.stderr)
        if batch:
            idx.add_many(batch, batch_size=BUILD_BATCH)
        assert len(idx) == size, (len(idx), size)
    build_s = time.perf_counter() - t0
    stamp = {
        **want,
        "build_s": round(build_s, 1),
        "build_docs_per_s": round(size / build_s, 1),
        "built": time.strftime("%Y-%m-%d"),
    }
    sidecar.write_text(json.dumps(stamp, indent=2) + "\n")
    return {**stamp, "reused": False}


class RedisServer:
    """A ``redis-server`` of this benchmark on a free loopback port, its data (one RDB file,
    saved on request only) in ``folder``."""

    def __init__(self, folder: Path):
        exe = shutil.which("redis-server")
        if exe is None:
            sys.exit("service_scale.py: redis-server is not installed (or pass --redis-url)")
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                exe,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(folder),
                "--dbfilename",
                "dump.rdb",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        self.client = redis.Redis(port=self.port)
        t0 = time.monotonic()
        while True:  # loading a saved index takes a while
            try:
                self.client.ping()
                break
            except (redis.ConnectionError, redis.BusyLoadingError):
                if self.proc.poll() is not None or time.monotonic() - t0 > 600:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.2)
        self.load_s = round(time.monotonic() - t0, 1)

    def url(self, prefix: str) -> str:
        return f"redis://127.0.0.1:{self.port}/0?prefix={prefix}"

    def save(self) -> None:
        """Write the RDB file (in the background, polled: a blocking SAVE of a large index
        outlasts the client's socket timeout)."""
        self.client.bgsave()
        time.sleep(0.5)
        while self.client.info("persistence")["rdb_bgsave_in_progress"]:
            time.sleep(0.5)

    def memory(self) -> dict:
        info = self.client.info("memory")
        return {
            "used_memory_mb": round(info["used_memory"] / 2**20, 1),
            "used_memory_peak_mb": round(info["used_memory_peak"] / 2**20, 1),
            "rss_mb": round(info["used_memory_rss"] / 2**20, 1),
        }

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()  # --save "": nothing written on the way out
        self.proc.wait(60)


# ---------------------------------------------------------------------------------------------
# Server


def start_server(
    target: str, port: int, keys_file: Path, log: Path, workers: int = 1, more: Sequence[str] = ()
) -> subprocess.Popen:
    """``neardup serve --index TARGET --api-keys-file KEYS --workers N [MORE]`` once it
    answers ``/health``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_API_KEY")}
    # the caller's PYTHONPATH after src/: a sitecustomize.py there can patch the server for
    # an experiment
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    err = open(log, "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            "--index",
            target,
            "--port",
            str(port),
            "--api-keys-file",
            str(keys_file),
            "--workers",
            str(workers),
            *more,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    for _ in range(1200):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                c.close()
                return proc
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start in 120 s")


def _pct(x: np.ndarray) -> dict:
    if not len(x):
        return {"p50": None, "p95": None, "p99": None, "max": None}
    ms = x * 1e3
    return {
        "p50": round(float(np.percentile(ms, 50)), 2),
        "p95": round(float(np.percentile(ms, 95)), 2),
        "p99": round(float(np.percentile(ms, 99)), 2),
        "max": round(float(ms.max()), 2),
    }


def drive(target: str, a, corpus: Path, run: str) -> dict:
    """Start the service on ``target``, run the clients, return the measurements."""
    n_read = max(a.readers, 0) * READER_BODIES
    n_write = a.writers * a.writer_docs
    t0 = time.perf_counter()
    texts = pick_texts(corpus, a.size, n_read + n_write, seed=1)
    readers = [
        reader_bodies(
            texts[k * READER_BODIES : (k + 1) * READER_BODIES],
            a.check_share,
            a.new_share,
            a.light_edit,
            seed=100 + k,
        )
        for k in range(a.readers)
    ]
    writers = [
        writer_bodies(
            texts[n_read + w * a.writer_docs : n_read + (w + 1) * a.writer_docs],
            a.writer_batch,
            f"{run}{w}",
            seed=200 + w,
        )
        for w in range(a.writers)
    ]
    del texts
    print(f"request bodies built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    keys = {"read": secrets.token_urlsafe(24), "write": secrets.token_urlsafe(24)}
    tmp = Path(tempfile.mkdtemp(prefix="service-scale-"))
    keys_file = tmp / "keys.txt"
    keys_file.write_text(f"read:{keys['read']}\nwrite:{keys['write']}\n")
    keys_file.chmod(0o600)
    ports = [free_port() for _ in range(a.servers)]
    servers: list[subprocess.Popen] = []
    spy = None
    anon = [0.0]  # the servers' peak anonymous memory, MB
    try:
        for k, port in enumerate(ports):
            servers.append(
                start_server(
                    target,
                    port,
                    keys_file,
                    Path(a.results) / f"service-scale-server-{k}.log",
                    a.workers,
                    shlex.split(a.serve_args),
                )
            )
        proc = servers[0]
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(a.readers + a.writers + 1)
        t_start, t_warm, t_end = (ctx.Value("d", 0.0) for _ in range(3))
        queue = ctx.Queue()
        # with --servers N, client k talks to server k mod N (the writer to the last one)
        procs = [
            ctx.Process(
                target=_client,
                args=(
                    "reader",
                    ports[k % len(ports)],
                    keys["read"],
                    b,
                    barrier,
                    t_start,
                    t_warm,
                    t_end,
                    queue,
                ),
            )
            for k, b in enumerate(readers)
        ]
        procs += [
            ctx.Process(
                target=_client,
                args=(
                    "writer",
                    ports[-1 - w % len(ports)],
                    keys["write"],
                    b,
                    barrier,
                    t_start,
                    t_warm,
                    t_end,
                    queue,
                    a.writer_rate,
                ),
            )
            for w, b in enumerate(writers)
        ]
        for p in procs:
            p.start()
        now = time.monotonic()
        t_start.value = now + 0.5
        t_warm.value = now + 0.5 + a.warmup
        t_end.value = now + 0.5 + a.warmup + a.seconds
        barrier.wait()
        time.sleep(max(t_warm.value - time.monotonic(), 0))
        pids = [q for p in servers for q in family(p.pid)]  # the workers too
        cpu0 = sum(proc_cpu(q) for q in pids)
        if a.py_spy:
            spy = subprocess.Popen(
                [
                    a.py_spy_exe,
                    "record",
                    "--pid",
                    str(proc.pid),
                    "--duration",
                    str(int(a.seconds)),
                    "--format",
                    "raw",
                    "--rate",
                    "100",
                    "--threads",
                    "--output",
                    str(a.py_spy),
                    "--nonblocking",
                    *(["--gil"] if a.py_spy_gil else []),
                    *(["--subprocesses"] if a.workers > 1 else []),
                    *(["--idle"] if a.py_spy_idle else []),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        sleep_sampling(t_end.value, pids, anon)
        server_cpu = sum(proc_cpu(q) for q in pids) - cpu0
        got = [queue.get(timeout=a.seconds + 600) for _ in procs]
        for p in procs:
            p.join(60)
        mems = [proc_mem(q) for q in pids]
        mem = {k: round(sum(m.get(k, 0) for m in mems), 1) for k in ("VmHWM", "VmRSS")}
        if spy is not None:
            spy.wait(120)
    finally:
        for p in servers:
            p.terminate()
        for p in servers:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    records = [r for g in got for r in g["records"]]
    if a.records:  # every request: end (monotonic s), seconds, route, status, documents
        with open(a.records, "wb") as f:
            f.write(orjson.dumps(records))
    out: dict = {"endpoints": {}}
    for route in ("/query", "/check", "/documents:batch"):
        mine = [r for r in records if r[2] == route]
        lat = np.array([r[1] for r in mine])
        ok = [r for r in mine if 200 <= r[3] < 300]
        statuses: dict[str, int] = {}
        for r in mine:
            if not 200 <= r[3] < 300:
                statuses[str(r[3])] = statuses.get(str(r[3]), 0) + 1
        out["endpoints"][route] = {
            "requests": len(mine),
            "per_s": round(len(mine) / a.seconds, 1),
            **{f"{k}_ms": v for k, v in _pct(lat).items()},
            "errors": sum(statuses.values()),
            "error_statuses": statuses,
        }
        if route == "/documents:batch":
            out["adds_per_s"] = round(sum(r[4] for r in ok) / a.seconds, 1)
            out["documents_added"] = sum(r[4] for r in ok)
    batches = np.array([(r[0] - r[1], r[0]) for r in records if r[2] == "/documents:batch"])
    if len(batches):
        # the readers' latencies apart, by whether a batch was being added meanwhile: what
        # the writer costs them
        out["during_batches"] = {}
        order = np.argsort(batches[:, 0])
        starts, ends = batches[order, 0], np.maximum.accumulate(batches[order, 1])
        for route in ("/query", "/check"):
            mine = np.array([(r[0] - r[1], r[0]) for r in records if r[2] == route])
            if not len(mine):
                continue
            # a request overlaps a batch if the last batch that started before it ended
            # ended after it started
            j = np.searchsorted(starts, mine[:, 1], "right") - 1
            hit = (j >= 0) & (ends[np.maximum(j, 0)] > mine[:, 0])
            lat = mine[:, 1] - mine[:, 0]
            out["during_batches"][route] = {
                "share": round(float(hit.mean()), 3),
                "during": _pct(lat[hit]),
                "outside": _pct(lat[~hit]),
            }
    out["errors"] = sum(e["errors"] for e in out["endpoints"].values())
    out["error_examples"] = [e for g in got for e in g["errors"]][:10]
    out["reconnects"] = sum(g["reconnects"] for g in got)
    out["writer_ran_out"] = any(g["ran_out"] for g in got)
    out["cpu_s"] = {
        "server": round(server_cpu, 1),
        "readers": round(sum(g["cpu_s"] for g in got if g["kind"] == "reader"), 1),
        "writers": round(sum(g["cpu_s"] for g in got if g["kind"] == "writer"), 1),
    }
    out["server_peak_rss_mb"] = mem.get("VmHWM")
    out["server_rss_mb"] = mem.get("VmRSS")
    out["server_peak_anon_mb"] = round(anon[0], 1)
    if spy is not None:
        out["py_spy"] = {
            "output": str(a.py_spy),
            "gil": a.py_spy_gil,
            "stderr": spy.stderr.read().decode()[-500:],
        }
    return out


def index_bytes(path: Path) -> dict:
    out = {
        s or "db": Path(f"{path}{s}").stat().st_size
        for s in ("", "-wal")
        if Path(f"{path}{s}").exists()
    }
    keys = Path(f"{path}-keys")
    if keys.is_dir():  # the key segments beside the file
        out["-keys"] = sum(p.stat().st_size for p in keys.iterdir())
    return out


def run_backend(backend: str, a, corpus: Path) -> dict:
    run = time.strftime("%H%M%S")
    redis_server = None
    res: dict = {"backend": backend, "documents": a.size}
    try:
        if backend == "sqlite":
            path = Path(a.index or DATA / f"service-scale-{a.size}.db")
            target = str(path)
            sidecar = path.with_name(path.name + ".json")
        elif a.redis_url:
            target = a.redis_url
            sidecar = DATA / f"service-scale-redis-{a.size}.json"
        else:
            folder = DATA / f"redis-scale-{a.size}"
            redis_server = RedisServer(folder)
            res["redis_load_s"] = redis_server.load_s
            target = redis_server.url(f"scale{a.size}")
            sidecar = folder / "index.json"
        built = build_index(target, corpus, a.size, sidecar, a.rebuild)
        if redis_server is not None and not built["reused"]:
            t = time.perf_counter()
            redis_server.save()
            print(f"redis: saved in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        res["build"] = built
        os.sync()
        if backend == "sqlite":
            res["index_bytes_before"] = index_bytes(path)
        if redis_server is not None:
            res["redis_memory_before"] = redis_server.memory()
            cpu_r = proc_cpu(redis_server.proc.pid)
        res.update(drive(target, a, corpus, run))
        if redis_server is not None:
            res["cpu_s"]["redis_server"] = round(proc_cpu(redis_server.proc.pid) - cpu_r, 1)
            res["redis_memory_after"] = redis_server.memory()
        if backend == "sqlite":
            res["index_bytes_after"] = index_bytes(path)
        t = time.perf_counter()
        res["writer_documents_removed"] = remove_writer_docs(target)
        res["cleanup_s"] = round(time.perf_counter() - t, 1)
    finally:
        if redis_server is not None:
            redis_server.stop()
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="documents in the index")
    ap.add_argument("--backend", choices=["sqlite", "redis", "both"], default="sqlite")
    ap.add_argument("--seconds", type=float, default=60.0, help="measured seconds")
    ap.add_argument(
        "--warmup",
        type=float,
        default=5.0,
        help="seconds of load before the measured ones (not counted)",
    )
    ap.add_argument("--readers", type=int, default=4, help="reader processes")
    ap.add_argument(
        "--writers",
        type=int,
        default=1,
        choices=[0, 1, 2],
        help="writer processes (0: readers alone)",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="neardup serve --workers: processes of the service (CPU and memory "
        "are summed over them)",
    )
    ap.add_argument(
        "--serve-args",
        default="",
        metavar="OPTIONS",
        help="more options of neardup serve, in one string (e.g. '--threads 4')",
    )
    ap.add_argument(
        "--servers",
        type=int,
        default=1,
        help="service processes on the same index (an experiment: client k talks "
        "to server k mod N; CPU and RSS are summed; py-spy samples the "
        "first)",
    )
    ap.add_argument("--writer-batch", type=int, default=1000, help="documents per batch request")
    ap.add_argument(
        "--records",
        default=None,
        metavar="FILE",
        help="write every request's (end, seconds, route, status, documents) to FILE as JSON",
    )
    ap.add_argument(
        "--writer-rate",
        type=float,
        default=0.0,
        metavar="DOCS_PER_S",
        help="documents a second the writer adds at most (default 0: as many as the service takes)",
    )
    ap.add_argument(
        "--writer-docs",
        type=int,
        default=None,
        help="new documents built for each writer (default: 3,000 per measured "
        "and warm-up second; the writer stops when they run out)",
    )
    ap.add_argument(
        "--check-share",
        type=float,
        default=0.5,
        help="share of reader requests that are /check (the rest /query)",
    )
    ap.add_argument(
        "--new-share",
        type=float,
        default=0.25,
        help="share of reader texts edited by 30%% (new texts); the others are "
        "edited by --light-edit",
    )
    ap.add_argument("--light-edit", type=float, default=0.03)
    ap.add_argument(
        "--corpus",
        default=None,
        help="JSONL of {id, text} to index (default: "
        "benchmarks/data/corpus-<N>.jsonl, built when missing)",
    )
    ap.add_argument(
        "--index",
        default=None,
        help="SQLite index path (default: benchmarks/data/service-scale-<size>.db)",
    )
    ap.add_argument(
        "--redis-url",
        default=None,
        help="use this Redis server instead of one of "
        "the script's own (the index goes under its prefix)",
    )
    ap.add_argument("--rebuild", action="store_true", help="build the index even if it exists")
    ap.add_argument(
        "--py-spy",
        default=None,
        metavar="FILE",
        help="record the server with py-spy during the measured seconds (collapsed stacks)",
    )
    ap.add_argument("--py-spy-gil", action="store_true", help="py-spy --gil")
    ap.add_argument("--py-spy-idle", action="store_true", help="py-spy --idle")
    ap.add_argument(
        "--py-spy-exe",
        default=shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy")),
    )
    ap.add_argument(
        "--results",
        default=str(RESULTS),
        help="folder for service-scale-<backend>-<size>.json (default: "
        "benchmarks/data/results, which git ignores)",
    )
    a = ap.parse_args(argv)
    if a.size < 1 or a.seconds <= 0 or a.readers < 0 or a.writer_batch < 1:
        ap.error("--size, --seconds, --writer-batch must be positive, --readers >= 0")
    if a.writer_docs is None:
        a.writer_docs = int(6000 * (a.seconds + a.warmup))
    a.writer_docs = max(a.writer_docs // a.writer_batch, 1) * a.writer_batch
    DATA.mkdir(parents=True, exist_ok=True)
    corpus = Path(a.corpus) if a.corpus else find_corpus(a.size)
    out = Path(a.results)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    failed = False
    for backend in ["sqlite", "redis"] if a.backend == "both" else [a.backend]:
        res = run_backend(backend, a, corpus)
        res.update(
            {
                "seconds": a.seconds,
                "servers": a.servers,
                "warmup": a.warmup,
                "serve_args": a.serve_args,
                "workers": a.workers,
                "readers": a.readers,
                "writers": a.writers,
                "writer_batch": a.writer_batch,
                "writer_rate": a.writer_rate,
                "check_share": a.check_share,
                "new_share": a.new_share,
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                f"{platform.python_version()}",
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
                "date": time.strftime("%Y-%m-%d %H:%M"),
            }
        )
        (out / f"service-scale-{backend}-{a.size}.json").write_text(
            json.dumps(res, indent=2) + "\n"
        )
        print(json.dumps(res, indent=2))
        e = res["endpoints"]
        failed = failed or bool(res["errors"])
        size = (
            sum(res["index_bytes_before"].values()) / 1e9
            if backend == "sqlite"
            else res["redis_memory_before"]["used_memory_mb"] / 1e3
        )
        rows.append(
            f"| {backend} | {a.size:,} | {e['/query']['p50_ms']} / {e['/query']['p99_ms']} | "
            f"{e['/check']['p50_ms']} / {e['/check']['p99_ms']} | "
            f"{e['/documents:batch']['p50_ms']} / {e['/documents:batch']['p99_ms']} | "
            f"{res['adds_per_s']:,.0f} | {res['errors']} | {res['server_peak_rss_mb']:,.0f} MB | "
            f"{res['server_peak_anon_mb']:,.0f} MB | {size:.2f} GB |"
        )
    print(
        "| backend | documents | /query p50 / p99 ms | /check p50 / p99 ms | "
        "batch p50 / p99 ms | adds/s | errors | server peak RSS | peak heap (RssAnon) | "
        "index |"
    )
    print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
