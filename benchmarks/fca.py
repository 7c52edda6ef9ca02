"""FCA clusters (seed 001) at scale: 100k documents with images of 256 hashes.

    python benchmarks/fca.py --size 100000 --min-common 200 150 100 50 25

Takes the first ``size`` documents of the benchmark corpus (20 Newsgroups text with planted
near-duplicates, ``benchmarks/data/corpus-<N>.jsonl``, built by ``benchmarks/corpus.py`` when
missing) and its planted variants as the reference (all pairs of one source's copies). Reports
the time to build the images and the inverted table, FPmax's time per threshold, precision,
recall and F1 of the cluster pairs, and the peak memory. Writes
``benchmarks/results/fca-<size>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from index import find_corpus  # noqa: E402

from neardup.evaluate.clusters import pair_scores, read_reference  # noqa: E402
from neardup.fca import document_images, fca_clusters, inverted_table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--min-common", type=int, nargs="+", default=[200, 150, 100, 50])
    ap.add_argument("--image-size", type=int, default=256)
    ap.add_argument("--shingle-length", type=int, default=5)
    ap.add_argument("--offset", type=int, default=1)
    ap.add_argument("--results", default=str(HERE / "results"))
    a = ap.parse_args()

    corpus = find_corpus(a.size)
    ids, texts = [], []
    with open(corpus, "rb") as f:
        for line in f:
            if len(ids) >= a.size:
                break
            rec = orjson.loads(line)
            ids.append(rec["id"])
            texts.append(rec["text"])
    reference, counts = read_reference(Path(f"{corpus}.truth.jsonl"), ids)
    t0 = time.perf_counter()
    images = document_images(texts, a.shingle_length, a.offset, a.image_size)
    t_images = time.perf_counter() - t0
    tracts, stats = inverted_table(images)
    t_table = time.perf_counter() - t0 - t_images
    print(f"{len(texts):,} documents: images {t_images:.1f} s, inverted table {t_table:.1f} s "
          f"({stats['transactions']:,} transactions)", file=sys.stderr)
    rows = []
    for k in a.min_common:
        r = fca_clusters(images, k, tracts=tracts)
        row = {"threshold": k, "clusters": len(r.clusters), "fpmax_seconds": round(r.seconds, 2),
               **pair_scores(r.pairs(), reference)}
        rows.append(row)
        print(f"  K={k}: {row}", file=sys.stderr)
    res = {"documents": len(texts), "image_size": a.image_size,
           "shingle": f"word:{a.shingle_length}:{a.offset}",
           "images_seconds": round(t_images, 2), "table_seconds": round(t_table, 2),
           "inverted_table": stats, "reference_pairs": len(reference),
           "reference_unknown_ids": counts["unknown_id"], "results": rows,
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    out = Path(a.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"fca-{a.size}.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
