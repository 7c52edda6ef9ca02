"""The Dask engine's band pieces: map and reduce tasks run here, without a cluster, against
the local engine's candidate search over all keys at once (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("distributed")

from neardup.engines.dask.candidates import band_map, band_reduce, split_bits  # noqa: E402
from neardup.engines.dask.scratch import Part, read_bucket  # noqa: E402
from neardup.lsh import id_bits, key_mask  # noqa: E402
from neardup.pipeline import CandidateStats, find_candidates  # noqa: E402


def test_split_bits_give_every_reducer_a_piece():
    assert split_bits(21, 1) == 0
    assert split_bits(21, 21) == 0
    assert split_bits(21, 22) == 1
    assert split_bits(4, 100) == 5  # 4 << 5 = 128 >= 100 > 64
    for bands in (1, 3, 21):
        for S in (1, 2, 7, 50, 300):
            b = split_bits(bands, S)
            assert bands << b >= S and (b == 0 or bands << (b - 1) < S)


def _parts(tmp_path, keys: np.ndarray, sizes: list[int]) -> tuple[list[Part], np.ndarray]:
    """Partitions of ``sizes`` texts each (every text its own row, globally first)."""
    parts, at = [], 0
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    for p, n in enumerate(sizes):
        d = tmp_path / f"p{p}"
        d.mkdir()
        part = Part(str(d), n, n, False, False, "jsonl", "x", {}, offset=at)
        part.save("is_first", np.ones(n, bool))
        part.save("gfirst", np.arange(at, at + n, dtype=np.int64))
        part.save("keys", np.ascontiguousarray(keys[:, at : at + n]))
        parts.append(part)
        at += n
    return parts, offsets


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    bands=st.integers(1, 5),
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=6),
    reducers=st.integers(1, 40),
    cap=st.sampled_from([2, 3, 500]),
)
def test_band_pieces_give_the_pairs_of_all_keys_at_once(
    tmp_path_factory, seed, bands, sizes, reducers, cap
):
    tmp = tmp_path_factory.mktemp("bands")
    n = sum(sizes)
    rng = np.random.default_rng(seed)
    # few distinct keys (many runs, some over the cap), top bits varied so that pieces differ
    keys = rng.integers(0, 6, (bands, n)).astype(np.uint64) * np.uint64(0x2F00_0000_0000_0001)
    keys ^= rng.integers(0, 2, (bands, n)).astype(np.uint64) << np.uint64(63)
    parts, offsets = _parts(tmp, keys, sizes)
    idbits = id_bits(n)
    bits = split_bits(bands, reducers)
    pre = [str(tmp / f"m{p}") for p in range(len(parts))]
    for p, d in enumerate(parts):
        assert band_map(d, bits, idbits, pre[p]) == d.n
    pieces = [(b, k) for b in range(bands) for k in range(1 << bits)]
    stats = CandidateStats(bucket_cap=cap)
    out = tmp / "c"
    out.mkdir()
    for s in range(reducers):
        stats.merge(band_reduce(cap, offsets, pre, pieces[s::reducers], bits, s, str(out)))
    got = set()
    for s in range(reducers):
        for p in range(len(parts)):
            b = read_bucket(f"{out}/r{s}", p, ("left", "right"))
            assert np.all(np.searchsorted(offsets, b["left"], side="right") - 1 == p)
            got |= set(zip(b["left"].tolist(), b["right"].tolist()))
    mask = key_mask(idbits)
    left, right, want_stats = find_candidates(
        n, bands, 1, cap, keys=[np.ascontiguousarray(keys[b] & mask) for b in range(bands)]
    )
    assert got == set(zip(left.tolist(), right.tolist()))
    for k in ("capped_buckets", "capped_bucket_docs", "largest_bucket"):
        assert stats.to_dict()[k] == want_stats.to_dict()[k], k
