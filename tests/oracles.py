"""Plain-Python oracles of neardup's compiled kernels: slow, obvious, independent code."""

from __future__ import annotations

M64 = (1 << 64) - 1
P61 = (1 << 61) - 1
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
GOLDEN = 0x9E3779B97F4A7C15


def fmix64(h: int) -> int:
    h &= M64
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    h ^= h >> 33
    return h


def hash_run(cps: list[int]) -> int:
    """FNV-1a over a run of units (a word's UTF-8 bytes, or code points), length mixed in."""
    h = FNV_OFFSET
    for c in cps:
        h = ((h ^ c) * FNV_PRIME) & M64
    return fmix64(h ^ len(cps))


def token_hash(token: bytes) -> int:
    """A word's hash: its bytes packed big-endian into 64-bit words, folded FNV-style."""
    h = FNV_OFFSET
    words = [token[i : i + 8] for i in range(0, len(token), 8)] or [b""]
    if len(token) % 8 == 0 and token:
        words.append(b"")  # a full last word is folded, then an empty partial one
    for w in words:
        h = ((h ^ int.from_bytes(w, "big")) * FNV_PRIME) & M64
    return fmix64(h ^ len(token))


def shingle_hashes(text: str, kind: str, k: int, offset: int = 1) -> list[int]:
    """Sorted unique shingle hashes of an already normalised text."""
    if kind == "char":
        units = [[ord(c)] for c in text]
    else:
        units = [w.encode("utf-8", "surrogatepass") for w in text.split(" ") if w]
    if not units:
        return []
    if len(units) < k:
        groups = [units]
    else:
        groups = [units[s : s + k] for s in range(0, len(units) - k + 1, offset)]
    out = set()
    for g in groups:
        if kind == "char":
            out.add(hash_run([u[0] for u in g]))
        else:
            h = GOLDEN
            for u in g:
                h = ((h ^ token_hash(u)) * FNV_PRIME) & M64
            out.add(fmix64(h ^ len(g)))
    return sorted(out)


def reduce_range(h: int, n: int) -> int:
    return ((h >> 32) * n) >> 32


def oph_signature(hashes: list[int], k: int, s_bin: int, s_probe: int) -> list[int]:
    empty = 0xFFFFFFFF
    bins: list[int | None] = [None] * k
    for x in hashes:
        h = fmix64(x ^ s_bin)
        j = reduce_range(h, k)
        v = h & 0xFFFFFFFF
        if bins[j] is None or v < bins[j]:
            bins[j] = v
    if all(b is None for b in bins):
        return [empty] * k
    out = []
    for j in range(k):
        if bins[j] is not None:
            out.append(bins[j])
            continue
        t = 1
        while True:
            src = reduce_range(fmix64(s_probe ^ ((j << 32) & M64) ^ t), k)
            if bins[src] is not None:
                out.append(bins[src])
                break
            t += 1
    return out


def classic_signature(hashes: list[int], a: list[int], b: list[int]) -> list[int]:
    if not hashes:
        return [0xFFFFFFFF] * len(a)
    return [min(((aj * (x % P61) + bj) % P61) for x in hashes) & 0xFFFFFFFF for aj, bj in zip(a, b)]


def band_key(row: list[int], band: int, rows: int) -> int:
    h = GOLDEN ^ band
    for v in row[band * rows : (band + 1) * rows]:
        h = ((h ^ v) * FNV_PRIME) & M64
    return fmix64(h)


def jaccard(a, b) -> float:
    a, b = set(a), set(b)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def components(n: int, pairs: list[tuple[int, int]]) -> list[frozenset[int]]:
    adj: dict[int, set[int]] = {i: set() for i in range(n)}
    for a, b in pairs:
        adj[a].add(b)
        adj[b].add(a)
    seen, out = set(), []
    for s in range(n):
        if s in seen:
            continue
        stack, comp = [s], set()
        while stack:
            x = stack.pop()
            if x in comp:
                continue
            comp.add(x)
            stack.extend(adj[x] - comp)
        seen |= comp
        out.append(frozenset(comp))
    return out


def partition(reps) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for i, r in enumerate(reps):
        groups.setdefault(int(r), set()).add(i)
    return {frozenset(g) for g in groups.values()}


def normalize(
    text: str,
    nfkc=True,
    casefold=True,
    strip_html=False,
    strip_punctuation=False,
    strip_digits=False,
    strip_stopwords=False,
) -> str:
    """Reference normalisation of one text, step by step with the standard library."""
    import html
    import re
    import unicodedata

    from neardup.text.normalize import stopwords

    t = text.replace("\x00", " ")
    if strip_html:
        t = html.unescape(re.sub(r"<[^>]*>", " ", t))
    if nfkc:
        t = unicodedata.normalize("NFKC", t)
    if casefold:
        t = t.casefold()
    if strip_punctuation:
        t = re.sub(r"[^\w\s]|_", " ", t)
    if strip_digits:
        t = re.sub(r"\d+", "", t)
    if strip_stopwords:
        words = stopwords()
        t = re.sub(
            r"\b\w+\b",
            lambda m: (
                "" if (m.group(0) if casefold else m.group(0).casefold()) in words else m.group(0)
            ),
            t,
        )
    return " ".join(t.split())


# ---------------------------------------------------------------------------------------------
# Reused passages (neardup._kernels.passages)

PASSAGE_SEED = 0x243F6A8885A308D3


def word_hash(key: bytes) -> int:
    """A word key's hash: its bytes 8 at a time as little-endian words (the last padded with
    zero bytes), each folded with fmix64 and the golden ratio, the length mixed in."""
    n = len(key)
    h = PASSAGE_SEED ^ ((n * GOLDEN) & M64)
    for s in range(0, n, 8):
        w = int.from_bytes(key[s : s + 8], "little")
        h = (fmix64(h ^ w) + GOLDEN) & M64
    return fmix64(h ^ n)


def passage_seeds(
    fa: list[tuple[int, int]], fb: list[tuple[int, int]], max_occ: int
) -> list[tuple[int, int]]:
    """Pairs of positions whose fingerprints (``(hash, position)``, in position order) have
    equal hashes: the first ``max_occ`` occurrences of a hash in each text."""
    where_b: dict[int, list[int]] = {}
    for h, j in fb:
        pos = where_b.setdefault(h, [])
        if len(pos) < max_occ:
            pos.append(j)
    seen: dict[int, int] = {}
    out = []
    for h, i in fa:
        js = where_b.get(h)
        if js is None or seen.get(h, 0) >= max_occ:
            continue
        seen[h] = seen.get(h, 0) + 1
        out.extend((i, j) for j in js)
    return out


def _run(a: list, b: list, i: int, j: int) -> tuple[int, int, int]:
    """The maximal run of equal words through (i, j)."""
    while i and j and a[i - 1] == b[j - 1]:
        i, j = i - 1, j - 1
    n = 0
    while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
        n += 1
    return i, j, n


def _gap_step(a: list, b: list, i: int, j: int, g: int, m: int, forwards: bool):
    """The smallest (da, db) by da + db (the first in da, then db order), not both 0, each at
    most g, where m words agree again after (i, j) or before it; None if none."""
    if forwards:
        xa, xb = a[i : i + g + m], b[j : j + g + m]
    else:
        xa, xb = a[max(0, i - g - m) : i][::-1], b[max(0, j - g - m) : j][::-1]
    best = None
    for da in range(min(g, len(xa) - m) + 1):
        for db in range(min(g, len(xb) - m) + 1):
            if (
                (da or db)
                and (best is None or da + db < sum(best))
                and xa[da : da + m] == xb[db : db + m]
            ):
                best = (da, db)
    return best


def _merge(runs, gap: int) -> list[list[tuple[int, int, int]]]:
    """Runs grouped into passages: a run joins the passage whose last run ends at most ``gap``
    words before it in both texts (nearest end in the first text first, then the passage
    listed there first)."""
    groups: list[list[tuple[int, int, int]]] = []
    ends: dict[int, list[int]] = {}
    for r in sorted(runs):
        i0, j0, n = r
        target = None
        for ie in range(i0, i0 - gap - 1, -1):
            for gi in ends.get(ie, ()):
                last = groups[gi][-1]
                if 0 <= j0 - (last[1] + last[2]) <= gap:
                    target = gi
                    break
            if target is not None:
                ends[ie].remove(target)
                break
        if target is None:
            groups.append([r])
            target = len(groups) - 1
        else:
            groups[target].append(r)
        ends.setdefault(i0 + n, []).append(target)
    return groups


def passages(
    a: list,
    b: list,
    fa: list[tuple[int, int]],
    fb: list[tuple[int, int]],
    *,
    k: int,
    max_gap: int,
    min_match: int,
    max_occ: int,
    shortest: int,
) -> list[tuple[tuple[int, int], tuple[int, int], int, list[tuple[int, int, int]]]]:
    """The passages of words ``a`` and ``b`` (any comparable values) from their fingerprints:
    ``((a_start, a_end), (b_start, b_end), matched, runs)``, sorted by word ranges."""
    runs: set[tuple[int, int, int]] = set()
    covered: dict[int, tuple[int, int]] = {}
    for i, j in sorted(passage_seeds(fa, fb, max_occ), key=lambda s: (s[0] - s[1], s[0])):
        last = covered.get(i - j)
        if last is not None and last[0] <= i < last[1]:
            continue
        r = _run(a, b, i, j)
        covered[i - j] = (r[0], r[0] + r[2])
        if r[0] + r[2] >= i + k:  # the seed's k words agree
            runs.add(r)
    if max_gap:
        for grp in _merge(runs, max_gap):
            while True:
                i0, j0, n = grp[-1]
                step = _gap_step(a, b, i0 + n, j0 + n, max_gap, min_match, True)
                if step is None:
                    break
                grp.append(_run(a, b, i0 + n + step[0], j0 + n + step[1]))
            while True:
                i, j, _ = grp[0]
                step = _gap_step(a, b, i, j, max_gap, min_match, False)
                if step is None:
                    break
                grp.insert(0, _run(a, b, i - step[0] - min_match, j - step[1] - min_match))
            runs.update(grp)
    out = []
    for grp in _merge(runs, max_gap):
        i0, j0 = grp[0][:2]
        i1, j1 = grp[-1][0] + grp[-1][2], grp[-1][1] + grp[-1][2]
        if i1 - i0 >= shortest:
            out.append(((i0, i1), (j0, j1), sum(r[2] for r in grp), grp))
    out.sort(key=lambda p: (p[0], p[1]))
    return out


# ---------------------------------------------------------------------------------------------
# Product matching: the pair features (``neardup._kernels.offers`` with the overlap kernel)


def product_pair_features(d, left, right):
    """``float64[m, len(FEATURES)]``: the features of the pairs ``(left[k], right[k])`` of the
    offers described by ``d`` (``neardup.products.matcher.OfferDescriptions``), a pair at a
    time with Python sets, as the module docstring of ``neardup.products.features`` defines
    them. The plain Jaccards are rounded to ``float32``, as the overlap kernel returns them."""
    import numpy as np

    from neardup.products.matcher import FEATURES, NUMBER_TOLERANCE

    def jac32(a, b):
        inter = len(a & b)
        u = len(a) + len(b) - inter
        return float(np.float32(inter / u)) if u else 0.0

    def jac(a, b):
        inter = len(a & b)
        u = len(a) + len(b) - inter
        return inter / u if u else 0.0

    def wjac(common, w, total):
        inter = sum(w[t] for t in sorted(common))
        return inter / (total - inter) if total - inter > 0 else 0.0

    def agree(a, b):
        return 0 if not a or not b else (1 if a & b else -1)

    def relation(a, b):
        if a and b:
            if a & b:
                return "share"
            if any(
                min(len(x), len(y)) >= 6 and (x.startswith(y) or y.startswith(x))
                for x in a
                for y in b
            ):
                return "prefix"
            return "conflict"
        return "one" if a or b else "none"

    def numbers(a, b):
        if not d.number_lists[a] or not d.number_lists[b]:
            return -1.0, 0.0, -1.0, 0.0, -1.0, 0.0, 0.0
        # the offer with fewer numbers (the first on a tie) against the other's numbers
        s, o = sorted((a, b), key=lambda i: len(d.number_lists[i]))
        xs, ys = d.number_lists[s], d.number_lists[o]
        tol = NUMBER_TOLERANCE + 1e-9
        # a number matches when the first of the other side's at or above x - tol is within
        # tol of it
        hit = [
            k
            for k, x in enumerate(xs)
            if any(y >= x - tol for y in ys) and min(y for y in ys if y >= x - tol) - x <= tol
        ]
        if not hit:
            return 0.0, 0.0, 0.0, 0.0, 0.0, float(len(xs)), 0.0
        idf = near = 0.0
        for k in hit:
            idf += d.number_idf[s][k]
            near += d.number_near_idf[s][k]
        total = d.number_idf_total[s]
        return (
            len(hit) / len(xs),
            float(sum(d.number_rare[s][k] for k in hit)),
            idf / total if total > 0 else 0.0,
            float(len(hit)),
            len(hit) / len(ys),
            float(len(xs) - len(hit)),
            near,
        )

    units = list(d.units) + [""] * (3 - len(d.units))
    rows = []
    for a, b in zip(np.asarray(left).tolist(), np.asarray(right).tolist()):
        rel = relation(d.ids[a], d.ids[b])
        ma, mb = d.measures[a], d.measures[b]
        shared_units = [u for u in ma.keys() & mb.keys() if u != d.main_unit]
        ba, bb = d.brands[a], d.brands[b]
        pa, pb = d.prices[a], d.prices[b]
        ka, kb = d.block_tokens[a], d.block_tokens[b]
        if d.block_norm[a] > 0 and d.block_norm[b] > 0:
            cos = min(
                sum(d.block_weight[t] for t in sorted(ka & kb))
                / (d.block_norm[a] * d.block_norm[b]),
                1.0,
            )
        else:
            cos = 0.0
        nm, nr, ni, n_shared, n_long, n_unmatched, n_near = numbers(a, b)
        row = {
            "id_share": rel == "share",
            "id_prefix": rel == "prefix",
            "id_conflict": rel == "conflict",
            "id_one": rel == "one",
            "id_written": rel == "share" and bool(d.written[a] & d.written[b]),
            "brand": 0 if not ba or not bb else (1 if ba == bb else -1),
            "size": agree(ma.get(d.main_unit), mb.get(d.main_unit)),
            "unit1": agree(ma.get(units[0]), mb.get(units[0])),
            "unit2": agree(ma.get(units[1]), mb.get(units[1])),
            "unit3": agree(ma.get(units[2]), mb.get(units[2])),
            "units_agree": sum(1 for u in shared_units if ma[u] & mb[u]),
            "units_conflict": sum(1 for u in shared_units if not ma[u] & mb[u]),
            "same_shop": d.shops[a] == d.shops[b] and d.shops[a] != "",
            "title_jac": jac(d.tokens[a], d.tokens[b]),
            "mw_jac": jac32(d.words[a], d.words[b]),
            "num_match": nm,
            "num_rare": nr,
            "num_idf": ni,
            "num_shared": n_shared,
            "num_long": n_long,
            "num_unmatched": n_unmatched,
            "num_idf_sum": n_near,
            "value_jac": jac(d.values[a], d.values[b]),
            "seed_jac": jac32(d.seed_sets[a], d.seed_sets[b]),
            "title_idf": wjac(
                d.tokens[a] & d.tokens[b], d.token_idf, d.token_weight[a] + d.token_weight[b]
            ),
            "value_idf": wjac(
                d.values[a] & d.values[b], d.value_idf, d.value_weight[a] + d.value_weight[b]
            ),
            "desc_jac": jac32(d.desc_tokens[a], d.desc_tokens[b]),
            "title_cos": cos,
            "char_jac": jac32(d.grams[a], d.grams[b]),
            "price_ratio": min(pa, pb) / max(pa, pb) if pa > 0 and pb > 0 else -1.0,
        }
        assert set(row) == set(FEATURES)
        rows.append([float(row[f]) for f in FEATURES])
    return np.array(rows, np.float64).reshape(-1, len(FEATURES))
