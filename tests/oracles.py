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
    words = [token[i:i + 8] for i in range(0, len(token), 8)] or [b""]
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
        groups = [units[s:s + k] for s in range(0, len(units) - k + 1, offset)]
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
    return [min(((aj * (x % P61) + bj) % P61) for x in hashes) & 0xFFFFFFFF
            for aj, bj in zip(a, b)]


def band_key(row: list[int], band: int, rows: int) -> int:
    h = GOLDEN ^ band
    for v in row[band * rows:(band + 1) * rows]:
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


def normalize(text: str, nfkc=True, casefold=True, strip_html=False, strip_punctuation=False,
              strip_digits=False, strip_stopwords=False) -> str:
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
        t = re.sub(r"\b\w+\b", lambda m: "" if (m.group(0) if casefold else m.group(0).casefold())
                   in words else m.group(0), t)
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
        w = int.from_bytes(key[s:s + 8], "little")
        h = (fmix64(h ^ w) + GOLDEN) & M64
    return fmix64(h ^ n)


def passage_seeds(fa: list[tuple[int, int]], fb: list[tuple[int, int]], max_occ: int
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
        xa, xb = a[i:i + g + m], b[j:j + g + m]
    else:
        xa, xb = a[max(0, i - g - m):i][::-1], b[max(0, j - g - m):j][::-1]
    best = None
    for da in range(min(g, len(xa) - m) + 1):
        for db in range(min(g, len(xb) - m) + 1):
            if (da or db) and (best is None or da + db < sum(best)) \
                    and xa[da:da + m] == xb[db:db + m]:
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


def passages(a: list, b: list, fa: list[tuple[int, int]], fb: list[tuple[int, int]], *,
             k: int, max_gap: int, min_match: int, max_occ: int, shortest: int
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
