"""Reused passages on real posts: passages of 20 Newsgroups posts planted into other posts.

For each trial a *source* post and a *host* post are drawn; a passage of L words of the source
(L in --lengths) is inserted at the start, the middle or the end of the host, verbatim or with
a share of its words replaced (--edit-rates). A planted passage counts as found when the
reported passages cover at least 90% of its words in both texts (a passage with two edits
closer than --max-gap allows is reported as two passages). Separately, pairs of posts
whose longest shared run of words is at most 8 words (checked by brute force) must give no
passage at all (false positives). Times are those of ``neardup.reused_passages`` per pair.

With ``--index-size N`` it also times :class:`neardup.reuse.PassageIndex`: the first N documents
of ``benchmarks/data/corpus-N.jsonl`` (``benchmarks/corpus.py`` builds it) indexed, then 300
checks of texts that copy 60 words of an indexed document into another one (p50, p99, peak
memory of the process).

Writes ``reuse.md`` and ``reuse.json`` into --results (default ``benchmarks/data/results``,
which git ignores; ``--results benchmarks/results`` refreshes the tracked table).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHIVE = HERE.parent.parent / "shared" / "data" / "20news-bydate.tar.gz"
RESULTS = HERE / "data" / "results"
_QUOTE = re.compile(r"^[ \t]*[>|:].*$", re.MULTILINE)


def load_posts(archive: Path, min_words: int = 120) -> list[list[str]]:
    """The bodies of the archive's posts (headers and quoted lines left out), as words."""
    if not archive.is_file():
        sys.exit(
            f"reuse.py: the 20 Newsgroups archive is missing: {archive} (see "
            "../shared/data/README.md, or pass --archive)"
        )
    posts = []
    with tarfile.open(archive, "r:*") as tf:
        for m in tf:
            if not m.isfile():
                continue
            raw = tf.extractfile(m).read().decode("latin-1").replace("\r\n", "\n")
            body = _QUOTE.sub("", raw.partition("\n\n")[2])
            words = body.split()
            if len(words) >= min_words:
                posts.append(words)
    return posts


def longest_shared_run(a: list[str], b: list[str]) -> int:
    """Brute force (dynamic programming over the word keys)."""
    from neardup.text.words import word_key

    ka, kb = [word_key(w) for w in a], [word_key(w) for w in b]
    best = 0
    prev = [0] * (len(kb) + 1)
    for x in ka:
        cur = [0] * (len(kb) + 1)
        for j, y in enumerate(kb, 1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def index_latency(n: int, rng: random.Random) -> dict:
    import resource

    from neardup.reuse import PassageIndex

    path = HERE / "data" / f"corpus-{n}.jsonl"
    if not path.is_file():
        sys.exit(
            f"reuse.py: {path} is missing; build it with benchmarks/corpus.py --size {n} "
            f"--out {path}"
        )
    texts = []
    with open(path) as f:
        for line, _ in zip(f, range(n)):
            texts.append(json.loads(line)["text"])
    ix = PassageIndex(max_doc_freq=100)
    t0 = time.perf_counter()
    for i, text in enumerate(texts):
        ix.add(str(i), text)
    build = time.perf_counter() - t0
    lat = []
    for _ in range(300):
        src, host = texts[rng.randrange(n)].split(), texts[rng.randrange(n)].split()
        s0 = rng.randrange(0, max(1, len(src) - 60))
        query = " ".join(host[:100] + src[s0 : s0 + 60] + host[100:])
        t0 = time.perf_counter()
        ix.check(query)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    return {
        "documents": n,
        "build_s": round(build, 1),
        "check_ms_p50": round(1000 * lat[len(lat) // 2], 2),
        "check_ms_p99": round(1000 * lat[int(len(lat) * 0.99)], 2),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--archive",
        type=Path,
        default=ARCHIVE,
        help="20news-bydate.tar.gz (default: ../shared/data/)",
    )
    ap.add_argument(
        "--trials",
        type=int,
        default=200,
        help="planted passages per length and edit rate (default: 200)",
    )
    ap.add_argument(
        "--lengths",
        type=int,
        nargs="+",
        default=[20, 50, 100, 200, 400],
        help="passage lengths in words (default: 20 50 100 200 400)",
    )
    ap.add_argument(
        "--edit-rates",
        type=float,
        nargs="+",
        default=[0.0, 0.01, 0.03, 0.05],
        help="share of the passage's words replaced (default: 0 0.01 0.03 0.05)",
    )
    ap.add_argument(
        "--negatives",
        type=int,
        default=300,
        help="pairs of posts sharing no run over 8 words (default: 300)",
    )
    ap.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    ap.add_argument(
        "--index-size",
        type=int,
        default=None,
        metavar="N",
        help="also time PassageIndex.check against N indexed documents of "
        "benchmarks/data/corpus-N.jsonl (default: no)",
    )
    ap.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="folder for reuse.md and reuse.json (default: benchmarks/data/results, "
        "which git ignores)",
    )
    a = ap.parse_args(argv)
    from neardup.reuse import reused_passages

    posts = load_posts(a.archive)
    rng = random.Random(a.seed)
    rows = []
    seconds = []
    for length in a.lengths:
        pool = [p for p in posts if len(p) >= length + 20]
        for rate in a.edit_rates:
            found = 0
            for t in range(a.trials):
                src, host = rng.sample(pool, 2)
                s0 = rng.randrange(0, len(src) - length + 1)
                passage = list(src[s0 : s0 + length])
                for i in rng.sample(range(length), round(rate * length)):
                    passage[i] = rng.choice(host)
                at = (0, len(host) // 2, len(host))[t % 3]
                new = host[:at] + passage + host[at:]
                t0 = time.perf_counter()
                got = reused_passages(" ".join(new), " ".join(src))
                seconds.append(time.perf_counter() - t0)
                in_a = set().union(
                    *(range(max(p.a_words[0], at), min(p.a_words[1], at + length)) for p in got)
                )
                in_b = set().union(
                    *(range(max(p.b_words[0], s0), min(p.b_words[1], s0 + length)) for p in got)
                )
                found += len(in_a) >= 0.9 * length and len(in_b) >= 0.9 * length
            rows.append(
                {
                    "words": length,
                    "edit_rate": rate,
                    "trials": a.trials,
                    "found": found,
                    "recall": found / a.trials,
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
    negatives = reported = 0
    while negatives < a.negatives:
        x, y = rng.sample(posts, 2)
        x, y = x[:400], y[:400]
        if longest_shared_run(x, y) > 8:
            continue
        negatives += 1
        reported += bool(reused_passages(" ".join(x), " ".join(y)))
    seconds.sort()
    out = {
        "rows": rows,
        "negatives": negatives,
        "negatives_with_a_passage": reported,
        "pair_ms_p50": round(1000 * seconds[len(seconds) // 2], 3),
        "pair_ms_p99": round(1000 * seconds[int(len(seconds) * 0.99)], 3),
        "posts": len(posts),
        "trials": a.trials,
        "seed": a.seed,
    }
    a.results.mkdir(parents=True, exist_ok=True)
    (a.results / "reuse.json").write_text(json.dumps(out, indent=2) + "\n")
    rates = a.edit_rates
    md = [
        "# Reused passages planted into 20 Newsgroups posts",
        "",
        f"{a.trials} planted passages per cell (source and host posts drawn from "
        f"{len(posts):,} posts of 120+ words; start, middle or end of the host); found: the "
        "reported passages cover 90% of the planted words in both texts.",
        "",
        "| words | " + " | ".join(f"{r:.0%} changed" for r in rates) + " |",
        "|---:|" + "---:|" * len(rates),
    ]
    for length in a.lengths:
        cells = [
            next(r for r in rows if r["words"] == length and r["edit_rate"] == rate)
            for rate in rates
        ]
        md.append(f"| {length} | " + " | ".join(f"{c['recall']:.3f}" for c in cells) + " |")
    md += [
        "",
        f"Pairs of posts whose longest shared run is 8 words or less: {negatives}; with a "
        f"reported passage: {reported}.",
        "",
        f"Time per pair (`reused_passages`, texts of 120-2,000+ words): p50 "
        f"{out['pair_ms_p50']} ms, p99 {out['pair_ms_p99']} ms.",
        "",
    ]
    if a.index_size:
        out["index"] = index_latency(a.index_size, rng)
        ix = out["index"]
        md += [
            f"PassageIndex of {ix['documents']:,} documents of the benchmark corpus: built in "
            f"{ix['build_s']} s; a check of a text that copies 60 words of one of them: "
            f"p50 {ix['check_ms_p50']} ms, p99 {ix['check_ms_p99']} ms; peak memory of the "
            f"process {ix['peak_rss_gb']} GB.",
            "",
        ]
        (a.results / "reuse.json").write_text(json.dumps(out, indent=2) + "\n")
    (a.results / "reuse.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
