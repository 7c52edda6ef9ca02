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
