"""Peak memory and time of ``neardup serve`` through large uploads to ``POST /collections``.

    python benchmarks/service_memory.py --records 300000 --uploads 10

Starts ``neardup serve`` in a subprocess on a free loopback port (as ``load.py`` does), then
uploads JSON Lines files one after the other, alternating two shapes of about the same size:

- ``copies``: ``--records`` short records of ``--distinct`` distinct texts (exact-duplicate
  groups of ``records / distinct`` documents each);
- ``distinct``: records of distinct texts (``--words`` words each) up to the same file size.

After each upload it reads the server's peak resident memory (``VmHWM`` of
``/proc/PID/status``) and its current one (``VmRSS``), and times the upload and one side-by-side
view of two documents of it. Prints a JSON report and writes ``service_memory.json`` into
``--results`` (default ``benchmarks/data/results``, not tracked). Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from load import RESULTS, free_port, start_server  # noqa: E402

VOCAB = (
    "red blue green large small cotton wool shirt dress jacket with without pocket zip "
    "button collar sleeve long short summer winter soft warm light dark slim fit classic "
    "modern washable organic"
).split()


def memory_mb(pid: int) -> dict[str, float]:
    """``VmHWM`` (peak) and ``VmRSS`` (now) of process ``pid``, in MB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            out[name] = round(int(value.split()[0]) / 1024, 1)  # kB
    return out


def copies_file(records: int, distinct: int, rng: random.Random) -> bytes:
    """``records`` JSONL records of ``distinct`` short texts, in random order."""
    texts = [f"shop item {i} {rng.choice(VOCAB)}" for i in range(distinct)]
    return b"".join(
        json.dumps({"text": texts[rng.randrange(distinct)]}).encode() + b"\n"
        for _ in range(records)
    )


def distinct_file(size: int, words: int, rng: random.Random) -> bytes:
    """JSONL records of distinct texts of ``words`` words, up to ``size`` bytes."""
    lines, total, i = [], 0, 0
    while True:
        line = (
            json.dumps(
                {"text": f"doc {i} " + " ".join(rng.choice(VOCAB) for _ in range(words))}
            ).encode()
            + b"\n"
        )
        if total + len(line) > size:
            return b"".join(lines)
        lines.append(line)
        total += len(line)
        i += 1


def run(url: str, pid: int, files: list[tuple[str, bytes]]) -> list[dict]:
    """Upload ``files`` one after the other; per upload its size, time, answer and memory."""
    out = []
    with httpx.Client(base_url=url, timeout=600) as c:
        for name, data in files:
            t0 = time.perf_counter()
            r = c.post("/collections", files={"file": (f"{name}.jsonl", data)})
            seconds = time.perf_counter() - t0
            row = {
                "shape": name,
                "bytes": len(data),
                "status": r.status_code,
                "seconds": round(seconds, 3),
                "answer_bytes": len(r.content),
            }
            if r.status_code == 201:
                got = r.json()
                row.update(
                    documents=got["documents"],
                    clusters=len(got["clusters"]),
                    pairs=got["pairs"],
                    duplicates=got["duplicates"],
                )
                t0 = time.perf_counter()
                p = c.get(f"/collections/{got['collection_id']}/pair", params={"a": "1", "b": "2"})
                row["pair_seconds"] = round(time.perf_counter() - t0, 3)
                row["pair_status"] = p.status_code
            else:
                row["detail"] = r.text[:300]
            row.update(memory_mb(pid))
            out.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
        row = c.get("/stats").json()
        out.append(
            {"collections_kept": row.get("collections_kept"), "collections": row.get("collections")}
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--records",
        type=int,
        default=300_000,
        help="records of a 'copies' upload (default 300000: about 9 MB)",
    )
    ap.add_argument("--distinct", type=int, default=100, help="distinct texts of a 'copies' upload")
    ap.add_argument("--words", type=int, default=20, help="words of a 'distinct' text")
    ap.add_argument("--uploads", type=int, default=10, help="uploads in a row")
    ap.add_argument(
        "--results",
        default=str(RESULTS),
        help="folder for service_memory.json (default: benchmarks/data/results)",
    )
    ap.add_argument(
        "--serve-option",
        action="append",
        default=[],
        metavar="OPTION",
        help="an option for neardup serve (repeatable), e.g. "
        "--serve-option=--collection-memory-mb=64",
    )
    a = ap.parse_args(argv)
    rng = random.Random(1)
    copies = copies_file(a.records, a.distinct, rng)
    shapes = [("copies", copies), ("distinct", distinct_file(len(copies), a.words, rng))]
    files = [shapes[i % 2] for i in range(a.uploads)]
    limit = max(10_000_000, len(copies) + 1_000_000)
    with tempfile.TemporaryDirectory() as d:
        proc = start_server(
            Path(d) / "memory.db", free_port(), "--max-upload-bytes", str(limit), *a.serve_option
        )
        try:
            port = proc.args[proc.args.index("--port") + 1]
            uploads = run(f"http://127.0.0.1:{port}", proc.pid, files)
            before_exit = memory_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    done = [u for u in uploads if "status" in u]
    report = {
        "records": a.records,
        "distinct": a.distinct,
        "uploads": done,
        "store": uploads[-1],
        "peak_rss_mb": before_exit["VmHWM"],
        "rss_after_mb": before_exit["VmRSS"],
        "max_upload_seconds": max(u["seconds"] for u in done),
        "failed": sum(u["status"] != 201 for u in done),
    }
    out = Path(a.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / "service_memory.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0 if report["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
