"""The local engine under a memory budget: past it, the band keys and shingle fingerprints move
to a scratch folder and are read back in order; every answer is the one of the run in memory,
and the scratch folder is gone at the end, also when the run fails."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.engines.local import Deduplicator
from neardup.engines.stores import Budget, Scratch, SpillingArray, parse_size
from neardup.errors import ConfigError
from neardup.pipeline import (
    ShingleBags,
    ShingleRanges,
    find_candidates,
    find_candidates_by_band,
)
from neardup.synth import make_corpus


def _corpus(n=1500, seed=5):
    texts, _ = make_corpus(n, seed=seed, words=(8, 120))
    # exact copies across chunks, empty texts, a copy differing by case only
    return texts + texts[:40] + ["", "  ", texts[7].upper()]


def _run(texts, chunk, **kw):
    d = Deduplicator(**kw)
    for s in range(0, len(texts), chunk):
        d.add(texts[s : s + chunk])
    return d.finish()


def _same(a, b):
    assert np.array_equal(a.labels, b.labels)
    assert np.array_equal(a.representative, b.representative)
    assert np.array_equal(a.similarity, b.similarity)
    assert np.array_equal(a.keep, b.keep)
    for col in ("left", "right", "similarity", "method", "implied"):
        assert np.array_equal(getattr(a.pairs, col), getattr(b.pairs, col))
    sa, sb = dict(a.summary), dict(b.summary)
    for s in (sa, sb):
        for k in ("timings_s", "seconds", "memory"):
            s.pop(k)
    assert sa == sb


@pytest.mark.parametrize(
    "params",
    [
        {"threshold": 0.7, "shingle": "word:3"},
        {"threshold": 0.6, "shingle": "char:5", "cluster": "strict", "keep": "longest"},
        {"threshold": 0.8, "bucket_cap": 3, "pairs": "edges"},
    ],
)
@pytest.mark.parametrize("budget", [0, 100_000])
def test_a_run_past_its_budget_answers_as_one_in_memory(params, budget, tmp_path):
    texts = _corpus()
    base = _run(texts, 300, **params)
    assert base.summary["memory"]["spilled"] is False
    got = _run(texts, 300, memory_budget=budget, work_dir=tmp_path, **params)
    mem = got.summary["memory"]
    assert mem["spilled"] is True and mem["budget_bytes"] == budget
    assert mem["scratch_bytes"] > 0 and mem["work_dir"] == str(tmp_path)
    assert list(tmp_path.iterdir()) == []  # the scratch folder is gone
    assert base.summary["duplicate_pairs"] > 50  # there was something to find
    _same(base, got)


def test_the_sketches_handed_on_are_the_same_when_spilled(tmp_path):
    texts = _corpus(400)
    got = {}
    for budget in (None, 0):
        out = []
        d = Deduplicator(threshold=0.7, memory_budget=budget, work_dir=tmp_path)
        for s in range(0, len(texts), 100):
            d.add(texts[s : s + 100], on_sketched=out.append)
        d.finish()
        got[budget] = out
    for a, b in zip(got[None], got[0]):
        for f in ("group", "keys", "hashes", "starts", "ends"):
            assert np.array_equal(getattr(a, f), getattr(b, f))


def test_an_abandoned_run_leaves_no_scratch(tmp_path):
    d = Deduplicator(memory_budget=0, work_dir=tmp_path)
    d.add(_corpus(200))
    d.close()  # its worker has spilled; nobody finishes it
    assert list(tmp_path.iterdir()) == []
    with Deduplicator(memory_budget=0, work_dir=tmp_path) as d, pytest.raises(ConfigError):
        d.add(_corpus(200))
        d._wait()
        raise ConfigError("stopped")
    assert list(tmp_path.iterdir()) == []


def test_the_command_writes_the_same_files_under_a_budget(tmp_path, capsys):
    texts = _corpus(600)
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    outs = []
    for extra in ([], ["--memory-budget", "0", "--work-dir", str(tmp_path)]):
        out = tmp_path / f"out{len(outs)}"
        assert (
            main(["dedup", str(src), "-o", str(out), "--quiet", "--chunk-size", "100", *extra]) == 0
        )
        outs.append(out)
    for name in ("clusters.parquet", "pairs.parquet", "deduplicated/in.jsonl"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    summary = json.loads((outs[1] / "summary.json").read_text())
    assert summary["memory"]["spilled"] is True
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".neardup-scratch")]
    capsys.readouterr()


def test_a_failed_command_leaves_no_scratch(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    texts = _corpus(300)
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts) + "not json\n")
    code = main(["dedup", str(src), "-o", str(tmp_path / "o"), "--quiet", "--memory-budget", "0",
                 "--chunk-size", "50"])  # fmt: skip
    assert code != 0
    assert not [p for p in tmp_path.rglob(".neardup-scratch*")]
    assert f"in.jsonl:{len(texts) + 1}: malformed JSON" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text,expected",
    [("4G", 4 << 30), ("512M", 512 << 20), ("1.5g", int(1.5 * (1 << 30))), ("100", 100),
     ("64KB", 64 << 10), ("2GiB", 2 << 30), (0, 0), (12345, 12345)],
)  # fmt: skip
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["abc", "-1G", "G", True, -5, "1X"])
def test_bad_sizes_are_named(bad):
    with pytest.raises(ConfigError, match="memory_budget="):
        parse_size(bad)


def test_a_bad_budget_is_an_error_of_the_command(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "a b c"}\n')
    assert main(["dedup", str(src), "-o", str(tmp_path / "o"), "--memory-budget", "lots"]) != 0
    assert "memory_budget='lots' is invalid" in capsys.readouterr().err


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=2, max_size=60),
    seed=st.integers(0, 2**31),
    batch=st.integers(1, 400),
)
def test_spilled_fingerprints_measure_as_in_memory(sizes, seed, batch, tmp_path_factory):
    """Pairs measured from a scratch file a small batch at a time: the values of the arrays in
    memory (repeats, empty sets, any order of pairs)."""
    rng = np.random.default_rng(seed)
    off = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=off[1:])
    hashes = rng.integers(0, 12, int(off[-1])).astype(np.uint32)
    a = rng.integers(0, len(sizes), 80)
    b = rng.integers(0, len(sizes), 80)
    b = np.where(a == b, (b + 1) % len(sizes), b)
    store = SpillingArray(np.uint32, "h", Budget(0), Scratch(tmp_path_factory.mktemp("s")))
    store.append(hashes)
    store.spill()
    spilled = store.take()
    got = ShingleRanges(spilled.ranges, off, batch_bytes=batch).pairs(a, b)
    assert np.array_equal(got, ShingleBags(hashes, off).pairs(a, b))
    assert np.array_equal(spilled.take(np.arange(len(hashes))[::-1]), hashes[::-1])


def test_a_large_spilled_file_is_read_past_the_cache_with_the_same_values(tmp_path, monkeypatch):
    """A spilled file over half the machine's memory is read by ranges past the page cache,
    a smaller one through it: the same values either way."""
    from neardup.engines import stores

    values = (np.arange(50_000, dtype=np.uint32) * np.uint32(2654435761)).astype(np.uint32)
    starts = np.array([0, 7, 4000, 4001, 30_000, 49_990], np.int64)
    ends = np.array([5, 7, 4100, 9000, 30_001, 50_000], np.int64)
    want = np.concatenate([values[a:e] for a, e in zip(starts, ends)])
    for memory, direct in ((1 << 40, False), (100_000, True)):
        monkeypatch.setattr(stores, "physical_memory", lambda default=0, m=memory: m)
        store = SpillingArray(np.uint32, "v", Budget(0), Scratch(tmp_path / str(memory)))
        (tmp_path / str(memory)).mkdir()
        store.append(values)
        store.spill()
        spilled = store.take()
        assert spilled.direct is direct
        assert np.array_equal(spilled.ranges(starts, ends)[0], want)
        assert np.array_equal(spilled.load(), values)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 300),
    bands=st.integers(1, 6),
    seed=st.integers(0, 2**31),
    cap=st.integers(2, 9),
)
def test_candidates_a_band_at_a_time_are_those_of_all_bands(n, bands, seed, cap):
    rng = np.random.default_rng(seed)
    keys = [rng.integers(0, max(2, n // 3), n).astype(np.uint64) for _ in range(bands)]
    whole = find_candidates(n, bands, 4, cap, keys=[k.copy() for k in keys])
    banded = find_candidates_by_band(n, bands, 4, cap, lambda b: keys[b].copy(), threads=2)
    assert np.array_equal(whole[0], banded[0]) and np.array_equal(whole[1], banded[1])
    assert whole[2].to_dict() == banded[2].to_dict()


@settings(max_examples=40, deadline=None)
@given(
    spans=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 3000)), max_size=30),
    window=st.sampled_from([64, 4096, 1 << 18]),
    direct=st.booleans(),
)
def test_ranges_are_read_whatever_their_order_and_size(spans, window, direct, tmp_path_factory):
    """The compiled range reader against slicing: ranges in any order, overlapping, empty,
    larger than its window, past the page cache (aligned reads) or not."""
    from neardup._arrays import read_ranges

    data = np.arange(9000, dtype=np.uint32) * np.uint32(2654435761)
    path = tmp_path_factory.mktemp("r") / "data"
    data.tofile(path)
    starts = np.array([a for a, _ in spans], np.int64)
    ends = np.array([a + n for a, n in spans], np.int64)
    got, off = read_ranges(path, np.uint32, starts, ends, window=window, direct=direct)
    want = [data[a:e] for a, e in zip(starts, ends)]
    assert (
        np.array_equal(off, np.concatenate(([0], np.cumsum([len(w) for w in want]))))
        if want
        else len(off) == 1
    )
    assert np.array_equal(got, np.concatenate(want) if want else np.zeros(0, np.uint32))


@settings(max_examples=40, deadline=None)
@given(
    spans=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=40),
    window=st.sampled_from([4, 12, 64, 200, 4096]),
    direct=st.booleans(),
)
def test_ranges_in_increasing_order_are_read_as_sliced(spans, window, direct, tmp_path_factory):
    """Ranges in increasing order (as verification asks for them), gaps of any size between
    them, read through windows smaller and larger than them: the values of slicing."""
    from neardup._arrays import read_ranges

    data = np.arange(20000, dtype=np.uint32) * np.uint32(2654435761)
    path = tmp_path_factory.mktemp("r") / "data"
    data.tofile(path)
    starts, ends, at = [], [], 0
    for gap, n in spans:
        starts.append(at + gap)
        ends.append(at + gap + n)
        at += gap + n
    got, _ = read_ranges(
        path,
        np.uint32,
        np.array(starts, np.int64),
        np.array(ends, np.int64),
        window=window,
        direct=direct,
    )
    want = [data[a:e] for a, e in zip(starts, ends)]
    assert np.array_equal(got, np.concatenate(want) if want else np.zeros(0, np.uint32))


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs /proc/self/io (Linux)")
def test_sparse_ranges_read_their_own_bytes_only(tmp_path):
    """Ranges far apart cost a read of their bytes, not of a whole window each (the bytes the
    process read, as the system counts them)."""
    from neardup._arrays import read_ranges

    data = np.arange(1 << 20, dtype=np.uint32)
    path = tmp_path / "data"
    data.tofile(path)
    starts = np.arange(0, len(data) - 100, 100_003 // 4 * 4, dtype=np.int64)
    ends = starts + 37
    ends[::3] = starts[::3]  # some empty ones too
    with open("/proc/self/io") as f:
        before = int(f.read().split("rchar:")[1].split()[0])
    got, _ = read_ranges(path, np.uint32, starts, ends, window=1 << 18)
    with open("/proc/self/io") as f:
        after = int(f.read().split("rchar:")[1].split()[0])
    assert np.array_equal(got, np.concatenate([data[a:e] for a, e in zip(starts, ends)]))
    wanted = int((ends - starts).sum()) * 4
    assert wanted <= after - before < wanted + 4096  # (the reads of /proc/self/io itself)


@settings(max_examples=30, deadline=None)
@given(
    parts=st.lists(st.tuples(st.integers(0, 20000), st.booleans()), max_size=12),
    mode=st.sampled_from(["direct", "plain", "refused", "no pwrite"]),
    pooled=st.booleans(),
)
def test_a_scratch_file_holds_what_was_written(parts, mode, pooled, tmp_path_factory):
    """Scratch files written past the page cache (blocks through an aligned buffer, written on
    a thread of their own or not), plainly (no O_DIRECT) or falling back when the file system
    refuses it: the bytes written, in order, also when read between writes (after flush)."""
    import errno as _errno
    from concurrent.futures import ThreadPoolExecutor

    from neardup.engines import stores

    path = tmp_path_factory.mktemp("w") / "f"
    rng = np.random.default_rng(len(parts))
    real = os.pwrite
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stores.ScratchWriter, "BLOCK", 8192)
        if mode in ("plain", "no pwrite"):
            mp.delattr(os, "O_DIRECT", raising=False)
        if mode == "no pwrite":  # as on Windows
            mp.delattr(os, "pwrite")
        pool = ThreadPoolExecutor(1) if pooled else None
        w = stores.ScratchWriter(path, pool)
        if mode == "refused":

            def pwrite(fd, data, at):
                if fd == w._direct:
                    raise OSError(_errno.EINVAL, "no O_DIRECT here")
                return real(fd, data, at)

            mp.setattr(os, "pwrite", pwrite)
        want = b""
        for n, flush in parts:
            data = rng.integers(0, 256, n).astype(np.uint8)
            w.write(data)
            want += data.tobytes()
            if flush:
                w.flush()
                assert path.read_bytes() == want
        w.close()
        if pool is not None:
            pool.shutdown()
    assert path.read_bytes() == want


def test_a_short_file_is_an_error(tmp_path):
    from neardup._arrays import read_ranges

    path = tmp_path / "data"
    np.arange(10, dtype=np.uint32).tofile(path)
    for direct in (False, True):
        with pytest.raises(OSError, match="ended early"):
            read_ranges(path, np.uint32, np.array([5]), np.array([20]), direct=direct)
        with pytest.raises(OSError, match="ended early"):  # a range wholly past the end
            read_ranges(path, np.uint32, np.array([12]), np.array([20]), direct=direct)
