"""``Index.check`` in-process over a large SQLite index opened read-only: latency per kind of
text, what is compared, and whether planted passages are found.

    PYTHONPATH=src python benchmarks/check_scale.py \\
        --index benchmarks/data/service-scale-1000000.db --size 1000000 --checks 100
    # the same checks with another checkout's code (old and new alternately, same minute):
    PYTHONPATH=../other/src python benchmarks/check_scale.py --index ... --size 1000000

The index (as ``benchmarks/service_scale.py`` builds it, of the first ``--size`` documents of
``--corpus``) is opened with SQLite's ``mode=ro``: nothing is written to it, so a file another
run benchmarks can be used. Three kinds of text, ``--checks`` of each, drawn with ``--seed``
(the same texts for any code): ``light`` (an indexed text with 3% of its words edited),
``new`` (30% edited) and ``planted`` (an indexed text with 30% of its words edited and 60 words
of another indexed text copied into it). Reports per kind the latency (p50, p90, p99), the
share of checks that found the text's source among the reused texts (for ``planted``: the text
the passage was copied from), and of those that found it or (``planted``) reported the copied
words as a common passage (one that many indexed texts hold, as the corpus reuses paragraphs),
the share ``incomplete``, and the texts reused and compared and the common passages (p50).
With ``--max-candidates``, each check is also run with the default and the answers compared:
the share of the default answer's 10 most reused texts that the cut answer holds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import orjson

from neardup import Index
from neardup.index.sqlite import SQLiteStorage
from neardup.synth import edit_words

HERE = Path(__file__).resolve().parent
VOCAB = ["lorem", "ipsum", "dolor", "amet", "consectetur", "adipiscing", "elit", "sed"]


def make_texts(corpus: Path, size: int, n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    picks = rng.choice(size, 4 * n, replace=False).tolist()
    want, texts = set(picks), {}
    with open(corpus, "rb") as f:
        for i, line in enumerate(f):
            if i >= size:
                break
            if i in want:
                rec = orjson.loads(line)
                texts[i] = (rec["id"], rec["text"])
    out = []
    for j in range(n):
        a, b, host, src = picks[4 * j : 4 * j + 4]
        out.append(
            {"kind": "light", "src": texts[a][0], "text": edit_words(texts[a][1], 0.03, rng, VOCAB)}
        )
        out.append(
            {"kind": "new", "src": texts[b][0], "text": edit_words(texts[b][1], 0.3, rng, VOCAB)}
        )
        words = texts[src][1].split()
        at = int(rng.integers(0, max(1, len(words) - 60)))
        body = edit_words(texts[host][1], 0.3, rng, VOCAB).split()
        cut = int(rng.integers(0, len(body) + 1))
        start = len(" ".join(body[:cut])) + (1 if cut else 0)
        planted = " ".join(words[at : at + 60])
        out.append(
            {
                "kind": "planted",
                "src": texts[src][0],
                "text": " ".join(body[:cut] + words[at : at + 60] + body[cut:]),
                "span": (start, start + len(planted)),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True, help="SQLite index with passages (read only)")
    ap.add_argument("--size", type=int, required=True, help="documents it was built from")
    ap.add_argument("--corpus", default=str(HERE / "data" / "corpus-1000000.jsonl"))
    ap.add_argument("--checks", type=int, default=100, help="checks of each kind")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-candidates", type=int, default=None)
    a = ap.parse_args()
    texts = make_texts(Path(a.corpus), a.size, a.checks, a.seed)
    ix = Index(SQLiteStorage(a.index, create=False))
    kw = {} if a.max_candidates is None else {"max_candidates": a.max_candidates}
    ix.check(texts[0]["text"], **kw)
    res: dict[str, dict[str, list]] = {}
    for q in texts:
        t = time.perf_counter()
        got = ix.check(q["text"], **kw)
        dt = time.perf_counter() - t
        r = res.setdefault(
            q["kind"],
            {k: [] for k in ("ms", "found", "inc", "reused", "cmp", "top10", "common", "told")},
        )
        r["ms"].append(dt * 1e3)
        r["found"].append(q["src"] in {m.id for m in got.reused})
        r["common"].append(len(got.common))
        # the source, or (planted) the copied words as a passage many indexed texts hold
        span = q.get("span")
        r["told"].append(
            r["found"][-1]
            or span is not None
            and any(c.a_chars[0] < span[1] and span[0] < c.a_chars[1] for c in got.common)
        )
        r["inc"].append(got.incomplete)
        r["reused"].append(len(got.reused))
        r["cmp"].append(len(getattr(got, "texts", None) or {}))
        if kw:
            best = [m.id for m in ix.check(q["text"]).reused[:10]]
            mine = {m.id for m in got.reused}
            r["top10"].append(sum(b in mine for b in best) / max(1, len(best)))
    every = np.concatenate([r["ms"] for r in res.values()])
    report = {
        "index": str(a.index),
        "documents": len(ix),
        **kw,
        "all": {
            "checks": len(every),
            "p50_ms": round(float(np.median(every)), 1),
            "p99_ms": round(float(np.percentile(every, 99)), 1),
        },
    }
    for kind, r in res.items():
        ms = np.array(r["ms"])
        report[kind] = {
            "p50_ms": round(float(np.median(ms)), 1),
            "p90_ms": round(float(np.percentile(ms, 90)), 1),
            "p99_ms": round(float(np.percentile(ms, 99)), 1),
            "source_found": round(float(np.mean(r["found"])), 3),
            "source_or_common": round(float(np.mean(r["told"])), 3),
            "common_p50": float(np.median(r["common"])),
            "incomplete": round(float(np.mean(r["inc"])), 3),
            "reused_p50": float(np.median(r["reused"])),
            "compared_p50": float(np.median(r["cmp"])),
            **({"top10_kept": round(float(np.mean(r["top10"])), 3)} if kw else {}),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
