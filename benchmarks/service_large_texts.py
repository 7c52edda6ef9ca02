"""``/check`` and the side-by-side view on texts of about a megabyte: the time of an answer and
its size.

    python benchmarks/service_large_texts.py            # ~10 s

A ``/check`` of a text of ~0.9 MB (140,000 words) against an index holding 10 near-copies of it
(50 words changed in each), and the side-by-side view (``GET /collections/{cid}/pair``) of two
uploaded texts of ~0.97 MB that differ in a few words, each answered twice through the
application in-process (no network). A check must answer within its 2 s budget (saying
``passages_incomplete`` where it stopped finding passages) and carry at most 4 MB of matched
texts (``texts_capped``); the view must stay within its 0.8 s (``incomplete``).
"""

from __future__ import annotations

import argparse
import json
import random
import time
import warnings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--words", type=int, default=140_000, help="words of the checked text")
    ap.add_argument("--copies", type=int, default=10, help="near-copies in the index")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    from fastapi.testclient import TestClient

    from neardup import Index
    from neardup.server import create_app

    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(20000)]
    base = " ".join(rng.choice(vocab) for _ in range(a.words))
    index = Index(passages=True)
    for i in range(a.copies):
        w = base.split()
        for _ in range(50):
            w[rng.randrange(len(w))] = "zzz"
        index.add(f"copy-{i}", " ".join(w))
    c = TestClient(create_app(index), base_url="http://localhost")
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        r = c.post("/check", json={"text": base})
        dt = time.perf_counter() - t0
        g = r.json()
        print(
            f"/check of {len(base):,} characters against {a.copies} near-copies: {dt:.2f} s, "
            f"answer {len(r.content):,} bytes, {sum(m['text'] is not None for m in g['matches'])}"
            f" texts carried, {sum(bool(m['passages']) for m in g['matches'])} with passages, "
            f"passages_incomplete={g['passages_incomplete']}, "
            f"texts_capped={g['texts_capped']}"
        )
    x = " ".join(rng.choice(vocab) for _ in range(int(a.words * 1.07)))
    y = x.replace(" w1 ", " zzz ")
    body = (
        json.dumps({"id": "a", "text": x}) + "\n" + json.dumps({"id": "b", "text": y}) + "\n"
    ).encode()
    cid = c.post("/collections", files={"file": ("x.jsonl", body)}, data={"id_field": "id"}).json()[
        "collection_id"
    ]
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        p = c.get(f"/collections/{cid}/pair", params={"a": "a", "b": "b"}).json()
        dt = time.perf_counter() - t0
        print(
            f"side by side, two texts of {len(x):,} characters: {dt:.2f} s, "
            f"incomplete={p['incomplete']}, {len(p['passages'])} passages"
        )


if __name__ == "__main__":
    main()
