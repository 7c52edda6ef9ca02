"""Tests of the benchmark corpus builder (benchmarks/corpus.py) on a small fake archive.

The real 20 Newsgroups archive is never needed: each test builds a tar.gz with the same layout
(20news-bydate-{train,test}/<group>/<id>, header block, blank line, body) in tmp_path.
"""

from __future__ import annotations

import importlib.util
import io
import random
import re
import subprocess
import sys
import tarfile
from itertools import combinations
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "corpus.py"


def _load_module():
    spec = importlib.util.spec_from_file_location("neardup_bench_corpus", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


corpus = _load_module()

GROUPS = ("sci.space", "rec.autos", "comp.graphics")
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "da", "fu", "gi", "hy")


def _word(r: random.Random) -> str:
    return "".join(r.choice(SYLLABLES) for _ in range(r.randint(1, 4)))


def _sentence(r: random.Random) -> str:
    words = [_word(r) for _ in range(r.randint(6, 14))]
    for i in range(len(words) - 1):
        if r.random() < 0.08:
            words[i] += ","
    if r.random() < 0.1:
        words[r.randrange(len(words))] = "don't"
    if r.random() < 0.1:
        words.insert(r.randrange(len(words)), '"' + _word(r) + '"')
    words[0] = words[0].capitalize()
    return " ".join(words) + r.choice(".....?!")


def _post(r: random.Random, i: int, short: bool = False) -> str:
    header = (
        f"From: user{i}@host{i % 7}.example.edu (User Number{i})\n"
        f"Subject: topic {i}\nOrganization: Example University {i % 5}\nLines: 20\n"
    )
    if short:
        return header + "\nToo short.\n"
    paragraphs = []
    for _ in range(r.randint(2, 5)):
        text = " ".join(_sentence(r) for _ in range(r.randint(2, 6)))
        # wrap at ~70 columns like a Usenet post
        lines, cur = [], ""
        for w in text.split():
            if cur and len(cur) + len(w) > 70:
                lines.append(cur)
                cur = w
            else:
                cur = f"{cur} {w}" if cur else w
        lines.append(cur)
        paragraphs.append("\n".join(lines))
    if r.random() < 0.3:  # a quoted paragraph, as replies carry
        paragraphs.insert(0, "> " + paragraphs[-1].replace("\n", "\n> "))
    return header + "\n" + "\n\n".join(paragraphs) + "\n"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = random.Random(1234)
    path = tmp_path_factory.mktemp("archive") / "20news-bydate.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for i in range(48):
            split = "train" if i % 3 else "test"
            name = f"20news-bydate-{split}/{GROUPS[i % 3]}/{50000 + i}"
            data = _post(r, i, short=(i % 16 == 5)).encode("latin-1")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _read_jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def built(archive: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("out") / "corpus.jsonl"
    summary = corpus.write_corpus(300, out, archive=archive, seed=7, dup_fraction=0.3)
    docs = _read_jsonl(out)
    truth = _read_jsonl(corpus.truth_path(out))
    return out, summary, docs, truth


def _shingles(text: str, k: int = 5) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + k]) for i in range(max(len(words) - k + 1, 1))}


def _jaccard(a: str, b: str) -> float:
    sa, sb = _shingles(a), _shingles(b)
    return len(sa & sb) / len(sa | sb)


def test_size_ids_and_summary(built) -> None:
    out, summary, docs, truth = built
    assert len(docs) == 300
    ids = [d["id"] for d in docs]
    assert len(set(ids)) == 300
    assert all(re.fullmatch(r"d\d{7}", i) for i in ids)
    assert all(set(d) == {"id", "text"} and d["text"].strip() for d in docs)
    assert summary["documents"] == 300
    assert summary["variants"] == len(truth) == 90
    assert summary["originals"] == 210
    assert summary["bytes"] == out.stat().st_size
    assert sum(summary["kinds"].values()) == 90


def test_shorter_originals(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "short.jsonl"
    summary = corpus.write_corpus(200, out, archive=archive, seed=3, doc_chars=(400, 700))
    assert summary["doc_chars"] == [400, 700]
    variant_ids = {t["id"] for t in _read_jsonl(corpus.truth_path(out))}
    lengths = [len(d["text"]) for d in _read_jsonl(out) if d["id"] not in variant_ids]
    cap = corpus.Generator(corpus.load_source(archive), 0, (400, 700)).max_chars
    assert 700 < cap < 800
    assert all(n <= cap for n in lengths)
    assert 400 <= sum(lengths) / len(lengths) <= 700
    with pytest.raises(ValueError, match="doc_chars"):
        corpus.Generator(corpus.load_source(archive), 0, (100, 50))


def test_originals_are_about_2kb(built) -> None:
    _, _, docs, truth = built
    variant_ids = {t["id"] for t in truth}
    lengths = [len(d["text"]) for d in docs if d["id"] not in variant_ids]
    assert all(1000 <= n <= corpus.MAX_DOC_CHARS for n in lengths)
    assert 1700 <= sum(lengths) / len(lengths) <= 2300


def test_truth_references_and_order(built) -> None:
    _, _, docs, truth = built
    pos = {d["id"]: i for i, d in enumerate(docs)}
    variant_ids = {t["id"] for t in truth}
    assert len(variant_ids) == len(truth)
    for t in truth:
        assert set(t) == {"id", "source", "kind", "edit_rate"}
        assert t["id"] in pos and t["source"] in pos
        assert t["source"] not in variant_ids  # sources are originals
        assert pos[t["source"]] < pos[t["id"]]  # variants come after their source
        assert t["kind"] in corpus.KINDS
        assert 0.0 <= t["edit_rate"] <= 1.0


def test_variant_kinds(built) -> None:
    _, _, docs, truth = built
    text = {d["id"]: d["text"] for d in docs}
    assert {t["kind"] for t in truth} == set(corpus.KINDS)

    def norm(s: str) -> list[str]:
        return [w for w in re.sub(r"[^\w\s]", "", s.casefold()).split() if w]

    for t in truth:
        v, s = text[t["id"]], text[t["source"]]
        kind = t["kind"]
        if kind == "exact":
            assert v == s and t["edit_rate"] == 0.0
        elif kind == "format":
            assert norm(v) == norm(s)
        elif kind == "words":
            assert v.split() != s.split() or t["edit_rate"] == 0.0
            assert t["edit_rate"] <= 0.4
        elif kind == "paragraph":
            vp, sp = v.split("\n\n"), s.split("\n\n")
            if len(vp) < len(sp):  # one paragraph dropped
                assert len(vp) == len(sp) - 1 and all(p in sp for p in vp)
            else:  # one paragraph inserted
                assert len(vp) == len(sp) + 1 and all(p in vp for p in sp)
        elif kind == "header_footer":
            assert s in v and len(v) > len(s)


def test_similarity_of_planted_and_unplanted(built) -> None:
    _, _, docs, truth = built
    text = {d["id"]: d["text"] for d in docs}
    for t in truth:
        j = _jaccard(text[t["id"]], text[t["source"]])
        if t["kind"] == "exact":
            assert j == 1.0
        elif t["kind"] == "header_footer":
            assert j >= 0.6
        elif t["kind"] == "paragraph":  # dropping the largest of 3 paragraphs can reach ~0.33
            assert j >= 0.25
    # Distinct originals are not near-duplicates, even from a 48-post archive.
    variant_ids = {t["id"] for t in truth}
    originals = [text[d["id"]] for d in docs if d["id"] not in variant_ids][:80]
    shingles = [_shingles(t) for t in originals]
    worst = max(len(a & b) / len(a | b) for a, b in combinations(shingles, 2))
    assert worst < 0.5


def test_deterministic(archive: Path, built, tmp_path: Path) -> None:
    out, _, _, _ = built
    again = tmp_path / "again.jsonl"
    corpus.write_corpus(300, again, archive=archive, seed=7, dup_fraction=0.3)
    assert again.read_bytes() == out.read_bytes()
    assert corpus.truth_path(again).read_bytes() == corpus.truth_path(out).read_bytes()
    streamed = list(corpus.build_corpus(300, archive=archive, seed=7, dup_fraction=0.3))
    assert streamed == [(d["id"], d["text"]) for d in _read_jsonl(out)]
    other = list(corpus.build_corpus(300, archive=archive, seed=8, dup_fraction=0.3))
    assert other != streamed


def test_plan_invariants_at_scale() -> None:
    plan = corpus.make_plan(20_000, seed=3, dup_fraction=0.25)
    n_orig = plan.n_originals
    assert n_orig == 15_000
    assert sorted(plan.order.tolist()) == list(range(20_000))
    assert (plan.position[plan.order] == range(20_000)).all()
    var_pos = plan.position[n_orig:]
    assert (var_pos > plan.position[plan.source]).all()
    assert set(plan.kind.tolist()) == set(range(len(corpus.KINDS)))


def test_edge_sizes(archive: Path) -> None:
    assert len(list(corpus.build_corpus(1, archive=archive))) == 1
    assert len(list(corpus.build_corpus(7, archive=archive, dup_fraction=0.0))) == 7
    with pytest.raises(ValueError):
        corpus.make_plan(10, dup_fraction=1.0)


def test_missing_archive_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere" / "20news-bydate.tar.gz"
    out = tmp_path / "c.jsonl"
    rc = corpus.main(["--size", "10", "--out", str(out), "--archive", str(missing)])
    assert rc == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "20 Newsgroups" in err
    assert not out.exists()

    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--size", "10", "--out", str(out), "--archive", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert str(missing) in proc.stderr and "20news-bydate" in proc.stderr
    with pytest.raises(FileNotFoundError):
        next(corpus.build_corpus(10, archive=missing))


def test_variants_spread_along_the_file() -> None:
    size = 50_000
    plan = corpus.make_plan(size, seed=0, dup_fraction=0.3)
    is_variant = plan.order >= plan.n_originals
    share = is_variant.reshape(10, -1).mean(axis=1)
    assert abs(is_variant.mean() - 0.3) < 1e-9
    assert all(0.25 <= s <= 0.36 for s in share[1:]), share
