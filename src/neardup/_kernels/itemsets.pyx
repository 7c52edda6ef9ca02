# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Maximal frequent itemsets (see :mod:`neardup.fca.itemsets`).

A depth-first miner over a vertical layout in the manner of GenMax and MAFIA, with LCM's
occurrence delivery to count and split the transactions:

* Items whose support, counted over the transactions that hold two such items or more, is below
  the minimum are dropped, again until none is (no pair holds them); the remaining items are
  ranked by support, most frequent first, and every transaction is kept as its items' ranks,
  sorted, identical ones merged with the sum of their weights.
* A node of the search is an itemset ``P`` whose last added item is ``j`` and the list of the
  transactions holding ``P``. One pass over those transactions counts, for every item ranked
  before ``j``, the weight of the transactions holding it too (occurrence delivery): an item
  in all of them joins ``P`` at once (parent equivalence pruning), the other frequent ones are
  the candidate extensions ``C``; a second pass hands each candidate the transactions holding it.
  The children are taken from the least frequent candidate to the most frequent, which finds
  every maximal set before any of its subsets reaches a leaf.
* Maximality: each node keeps the maximal sets found so far that contain ``P`` (progressive
  focusing; the root's children take them from an index by item, and a node appends to its list
  the sets its children found). ``P`` with no candidate is maximal if that list is empty. With
  candidates, the subtree is skipped when one set of the list holds all of ``C`` (it covers
  every set below), and ``P`` plus ``C`` is reported at once when it is frequent itself
  (MAFIA's HUT check).

Only positive weights count, and a transaction's repeated items count once. Everything runs
without the GIL; memory is linear in the input and the output.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc

import numpy as np

from ._common cimport fmix64, fnv_step, radix_sort


cdef struct Vec32:
    int32_t* data
    int64_t n
    int64_t cap


cdef struct Vec64:
    int64_t* data
    int64_t n
    int64_t cap


cdef inline int push32(Vec32* v, int32_t x) noexcept nogil:
    cdef int64_t cap
    cdef int32_t* d
    if v.n == v.cap:
        cap = 2 * v.cap if v.cap else 64
        d = <int32_t*>realloc(v.data, cap * sizeof(int32_t))
        if d == NULL:
            return -1
        v.data = d
        v.cap = cap
    v.data[v.n] = x
    v.n += 1
    return 0


cdef inline int push64(Vec64* v, int64_t x) noexcept nogil:
    cdef int64_t cap
    cdef int64_t* d
    if v.n == v.cap:
        cap = 2 * v.cap if v.cap else 64
        d = <int64_t*>realloc(v.data, cap * sizeof(int64_t))
        if d == NULL:
            return -1
        v.data = d
        v.cap = cap
    v.data[v.n] = x
    v.n += 1
    return 0


cdef struct Miner:
    # the reduced database: each transaction's items as ranks (0 = most frequent), ascending
    const int64_t* t_off
    const int32_t* t_items
    const int64_t* t_w
    int64_t minsup
    # scratch by rank: counts of the node being expanded, marks, the current itemset
    int64_t* cnt_n
    int64_t* cnt_w
    int64_t* stamp
    int64_t cur_stamp
    int32_t* slot
    char* in_p
    int32_t* touched
    int32_t* scratch
    int32_t* path
    int64_t path_len
    # the maximal sets found (ranks, offsets, supports) and, by rank, the sets holding it
    # (linked lists through link_next, newest first)
    Vec32 mfi_items
    Vec64 mfi_off
    Vec64 mfi_supp
    Vec64 link_set
    Vec64 link_next
    int64_t* link_head


cdef int add_mfi(Miner* s, const int32_t* extra, int64_t n_extra, int64_t supp) noexcept nogil:
    """Record the current itemset plus ``extra`` as a maximal set of support ``supp``."""
    cdef int64_t i, sid = s.mfi_supp.n
    cdef int32_t r
    for i in range(s.path_len + n_extra):
        r = s.path[i] if i < s.path_len else extra[i - s.path_len]
        if push32(&s.mfi_items, r) or push64(&s.link_set, sid) \
                or push64(&s.link_next, s.link_head[r]):
            return -1
        s.link_head[r] = s.link_set.n - 1
    if push64(&s.mfi_off, s.mfi_items.n) or push64(&s.mfi_supp, supp):
        return -1
    return 0


cdef inline bint holds_path(Miner* s, int64_t sid) noexcept nogil:
    """Whether maximal set ``sid`` contains every item of the current itemset."""
    cdef int64_t p, have = 0
    for p in range(s.mfi_off.data[sid], s.mfi_off.data[sid + 1]):
        have += s.in_p[s.mfi_items.data[p]]
    return have == s.path_len


cdef void sort_ranks(int32_t* a, int64_t n, int32_t* tmp) noexcept nogil:
    radix_sort(<uint32_t*>a, n, <uint32_t*>tmp)


cdef int expand(Miner* s, int32_t j, const int32_t* occ, int64_t n_occ, int64_t supp,
                const int64_t* plm, int64_t n_plm) noexcept nogil:
    """The subtree of the current itemset plus ``j``: ``occ`` are the transactions holding it,
    of total weight ``supp``; ``plm`` the maximal sets found so far that hold the parent
    itemset. Returns -1 when out of memory."""
    cdef int64_t base = s.path_len, i, p, q, w, n_touch = 0, nc = 0, total, have, before
    cdef int64_t mark, size
    cdef int32_t r, t
    cdef int32_t* cand = NULL
    cdef int32_t* cand_tmp = NULL
    cdef int64_t* cand_n = NULL
    cdef int64_t* cand_w = NULL
    cdef int64_t* start = NULL
    cdef int64_t* fill = NULL
    cdef int32_t* bucket = NULL
    cdef Vec64 lm
    cdef int rc = 0
    lm.data = NULL
    lm.n = 0
    lm.cap = 0
    s.path[s.path_len] = j
    s.path_len += 1
    s.in_p[j] = 1
    # occurrence delivery, counting: the items ranked before j in these transactions
    for i in range(n_occ):
        t = occ[i]
        w = s.t_w[t]
        for p in range(s.t_off[t], s.t_off[t + 1]):
            r = s.t_items[p]
            if r >= j:
                break
            if s.in_p[r]:
                continue  # joined the itemset higher up
            if s.cnt_n[r] == 0:
                s.touched[n_touch] = r
                n_touch += 1
            s.cnt_n[r] += 1
            s.cnt_w[r] += w
    # parent equivalence: an item of every transaction joins the itemset; the other frequent
    # items are the candidates
    for i in range(n_touch):
        r = s.touched[i]
        if s.cnt_w[r] == supp:
            s.path[s.path_len] = r
            s.path_len += 1
            s.in_p[r] = 1
        elif s.cnt_w[r] >= s.minsup:
            s.scratch[nc] = r
            nc += 1
    if nc:
        cand = <int32_t*>malloc(nc * sizeof(int32_t))
        cand_tmp = <int32_t*>malloc(nc * sizeof(int32_t))
        cand_n = <int64_t*>malloc(nc * sizeof(int64_t))
        cand_w = <int64_t*>malloc(nc * sizeof(int64_t))
        if cand == NULL or cand_tmp == NULL or cand_n == NULL or cand_w == NULL:
            rc = -1
        else:
            for q in range(nc):
                cand[q] = s.scratch[q]
            sort_ranks(cand, nc, cand_tmp)
            for q in range(nc):
                cand_n[q] = s.cnt_n[cand[q]]
                cand_w[q] = s.cnt_w[cand[q]]
    for i in range(n_touch):
        r = s.touched[i]
        s.cnt_n[r] = 0
        s.cnt_w[r] = 0
    # the maximal sets found so far that hold the whole itemset
    if rc == 0:
        for i in range(n_plm):
            if holds_path(s, plm[i]) and push64(&lm, plm[i]):
                rc = -1
                break
    if rc == 0:
        if nc == 0:
            if s.path_len >= 2 and lm.n == 0:
                rc = add_mfi(s, NULL, 0, supp)
        else:
            s.cur_stamp += 1
            mark = s.cur_stamp
            for q in range(nc):
                s.stamp[cand[q]] = mark
                s.slot[cand[q]] = <int32_t>q
            # a maximal set found already holds every set of this subtree
            for i in range(lm.n):
                have = 0
                for p in range(s.mfi_off.data[lm.data[i]], s.mfi_off.data[lm.data[i] + 1]):
                    have += s.stamp[s.mfi_items.data[p]] == mark
                if have == nc:
                    nc = -1  # pruned
                    break
            if nc > 0:
                # the itemset with all its candidates, if frequent, is the subtree's only maximal set
                if nc == 1:
                    total = cand_w[0]
                else:
                    total = 0
                    for i in range(n_occ):
                        t = occ[i]
                        have = 0
                        for p in range(s.t_off[t], s.t_off[t + 1]):
                            r = s.t_items[p]
                            if r >= j:
                                break
                            have += s.stamp[r] == mark
                        if have == nc:
                            total += s.t_w[t]
                if total >= s.minsup:
                    rc = add_mfi(s, cand, nc, total)
                    nc = -1
            if nc > 0:
                # occurrence delivery: each candidate's transactions
                start = <int64_t*>malloc((nc + 1) * sizeof(int64_t))
                fill = <int64_t*>malloc(nc * sizeof(int64_t))
                size = 0
                for q in range(nc):
                    size += cand_n[q]
                bucket = <int32_t*>malloc((size if size else 1) * sizeof(int32_t))
                if start == NULL or fill == NULL or bucket == NULL:
                    rc = -1
                else:
                    start[0] = 0
                    for q in range(nc):
                        start[q + 1] = start[q] + cand_n[q]
                        fill[q] = start[q]
                    for i in range(n_occ):
                        t = occ[i]
                        for p in range(s.t_off[t], s.t_off[t + 1]):
                            r = s.t_items[p]
                            if r >= j:
                                break
                            if s.stamp[r] == mark:
                                q = s.slot[r]
                                bucket[fill[q]] = t
                                fill[q] += 1
                    # least frequent candidate first
                    q = nc - 1
                    while q >= 0:
                        before = s.mfi_supp.n
                        rc = expand(s, cand[q], bucket + start[q], cand_n[q], cand_w[q],
                                    lm.data, lm.n)
                        if rc:
                            break
                        for i in range(before, s.mfi_supp.n):
                            if push64(&lm, i):
                                rc = -1
                                break
                        if rc:
                            break
                        q -= 1
    for i in range(base, s.path_len):
        s.in_p[s.path[i]] = 0
    s.path_len = base
    free(cand)
    free(cand_tmp)
    free(cand_n)
    free(cand_w)
    free(start)
    free(fill)
    free(bucket)
    free(lm.data)
    return rc


cdef int mine(Miner* s, const int64_t* v_off, const int32_t* v_tids, const int64_t* v_w,
              int32_t m) noexcept nogil:
    """Every item's subtree, least frequent first."""
    cdef int32_t j
    cdef int64_t e
    cdef Vec64 lm
    cdef int rc = 0
    lm.data = NULL
    lm.n = 0
    lm.cap = 0
    j = m - 1
    while j >= 0 and rc == 0:
        if v_w[j] >= s.minsup:
            lm.n = 0
            e = s.link_head[j]
            while e >= 0 and rc == 0:
                rc = push64(&lm, s.link_set.data[e])
                e = s.link_next.data[e]
            if rc == 0:
                rc = expand(s, j, v_tids + v_off[j], v_off[j + 1] - v_off[j], v_w[j],
                            lm.data, lm.n)
        j -= 1
    free(lm.data)
    return rc


cdef void copy_out(Miner* s, int32_t[::1] ranks, int64_t[::1] bounds,
                   int64_t[::1] supports) noexcept:
    cdef Py_ssize_t i
    for i in range(ranks.shape[0]):
        ranks[i] = s.mfi_items.data[i]
    for i in range(bounds.shape[0]):
        bounds[i] = s.mfi_off.data[i]
    for i in range(supports.shape[0]):
        supports[i] = s.mfi_supp.data[i]


def maximal_itemsets(const int64_t[::1] items, const int64_t[::1] offsets,
                     const int64_t[::1] weights, int64_t n_items, int64_t min_support):
    """The maximal itemsets of two items or more whose support (the weight of the transactions
    holding them) is at least ``min_support`` (>= 1), with those supports. Transaction ``t`` is
    ``items[offsets[t]:offsets[t + 1]]`` (item numbers ``0 <= x < n_items < 2**31``, checked by
    the caller) of weight ``weights[t]``. Returns ``(members, bounds, supports)``: set ``i`` is
    ``members[bounds[i]:bounds[i + 1]]``, ascending."""
    cdef Py_ssize_t n_t = weights.shape[0]
    cdef int64_t t, p, q, e, w, kept, n_alive, rounds, changed, m, size, mask, slot, u
    cdef int64_t best_len = 0
    cdef int32_t x, r
    cdef uint64_t h
    cdef int rc = 0
    cdef Miner s
    if n_t == 0 or min_support < 1:
        return (np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64))
    # 1. distinct items of each transaction of positive weight, holding two items or more
    c_items_a = np.empty(max(offsets[n_t], 1), np.int32)
    c_off_a = np.zeros(n_t + 1, np.int64)
    c_w_a = np.empty(n_t, np.int64)
    seen_a = np.full(n_items, -1, np.int64)
    supp_a = np.zeros(n_items, np.int64)
    alive_a = np.zeros(n_items, np.uint8)
    cdef int32_t[::1] c_items = c_items_a
    cdef int64_t[::1] c_off = c_off_a, c_w = c_w_a, seen = seen_a, supp = supp_a
    cdef unsigned char[::1] alive = alive_a
    with nogil:
        kept = 0
        for t in range(n_t):
            w = weights[t]
            if w <= 0:
                continue
            e = c_off[kept]
            for p in range(offsets[t], offsets[t + 1]):
                x = <int32_t>items[p]
                if seen[x] != t:
                    seen[x] = t
                    c_items[e] = x
                    e += 1
            if e - c_off[kept] >= 2:
                c_w[kept] = w
                kept += 1
                c_off[kept] = e
        for t in range(kept):
            for p in range(c_off[t], c_off[t + 1]):
                supp[c_items[p]] += c_w[t]
        for x in range(n_items):
            alive[x] = supp[x] >= min_support
        # 2. an item counts only in transactions that hold another live item: drop the items
        # below the minimum that way, until none is (or 16 rounds: the search drops the rest)
        for rounds in range(16):
            for x in range(n_items):
                supp[x] = 0
            for t in range(kept):
                q = 0
                for p in range(c_off[t], c_off[t + 1]):
                    q += alive[c_items[p]]
                if q >= 2:
                    for p in range(c_off[t], c_off[t + 1]):
                        supp[c_items[p]] += c_w[t]
            changed = 0
            for x in range(n_items):
                if alive[x] and supp[x] < min_support:
                    alive[x] = 0
                    changed = 1
            if not changed:
                break
    # 3. ranks: most frequent first, then by item number
    live = np.flatnonzero(alive_a)
    order = live[np.lexsort((live, -supp_a[live]))]
    m = len(order)
    if m < 2:
        return (np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64))
    rank_a = np.full(n_items, -1, np.int32)
    rank_a[order] = np.arange(m, dtype=np.int32)
    cdef int32_t[::1] rank = rank_a
    # 4. transactions as sorted ranks, identical ones merged; then each rank's transactions
    r_items_a = np.empty(max(c_off[kept], 1), np.int32)
    r_off_a = np.zeros(kept + 1, np.int64)
    r_w_a = np.empty(max(kept, 1), np.int64)
    r_hash_a = np.empty(max(kept, 1), np.uint64)
    size = 1
    while size < 2 * kept:
        size *= 2
    table_a = np.full(size, -1, np.int64)
    v_off_a = np.zeros(m + 1, np.int64)
    v_w_a = np.zeros(m, np.int64)
    cdef int32_t[::1] r_items = r_items_a
    cdef int64_t[::1] r_off = r_off_a, r_w = r_w_a, table = table_a
    cdef int64_t[::1] v_off = v_off_a, v_w = v_w_a
    cdef uint64_t[::1] r_hash = r_hash_a
    cdef int32_t* tmp = NULL
    for t in range(kept):
        best_len = max(best_len, c_off[t + 1] - c_off[t])
    tmp = <int32_t*>malloc((best_len + 1) * sizeof(int32_t))
    if tmp == NULL:
        raise MemoryError()
    mask = size - 1
    u = 0
    with nogil:
        for t in range(kept):
            e = r_off[u]
            for p in range(c_off[t], c_off[t + 1]):
                r = rank[c_items[p]]
                if r >= 0:
                    r_items[e] = r
                    e += 1
            if e - r_off[u] < 2:
                continue
            sort_ranks(&r_items[r_off[u]], e - r_off[u], tmp)
            h = 0xCBF29CE484222325ULL
            for p in range(r_off[u], e):
                h = fnv_step(h, <uint64_t>r_items[p])
            h = fmix64(h ^ <uint64_t>(e - r_off[u]))
            slot = <int64_t>(h & <uint64_t>mask)
            while True:
                q = table[slot]
                if q == -1:
                    table[slot] = u
                    r_hash[u] = h
                    r_w[u] = c_w[t]
                    u += 1
                    r_off[u] = e
                    break
                if r_hash[q] == h and r_off[q + 1] - r_off[q] == e - r_off[u]:
                    p = 0
                    while p < e - r_off[u] and r_items[r_off[q] + p] == r_items[r_off[u] + p]:
                        p += 1
                    if p == e - r_off[u]:
                        r_w[q] += c_w[t]  # the same transaction again
                        break
                slot = (slot + 1) & mask
        for t in range(u):
            for p in range(r_off[t], r_off[t + 1]):
                v_off[r_items[p] + 1] += 1
                v_w[r_items[p]] += r_w[t]
        for r in range(m):
            v_off[r + 1] += v_off[r]
    free(tmp)
    v_tids_a = np.empty(max(v_off[m], 1), np.int32)
    v_fill_a = v_off_a[:m].copy()
    cdef int32_t[::1] v_tids = v_tids_a
    cdef int64_t[::1] v_fill = v_fill_a
    with nogil:
        for t in range(u):
            for p in range(r_off[t], r_off[t + 1]):
                r = r_items[p]
                v_tids[v_fill[r]] = <int32_t>t
                v_fill[r] += 1
    # 5. the search
    cnt_n_a = np.zeros(m, np.int64)
    cnt_w_a = np.zeros(m, np.int64)
    stamp_a = np.zeros(m, np.int64)
    slot_a = np.zeros(m, np.int32)
    in_p_a = np.zeros(m, np.int8)
    touched_a = np.empty(m, np.int32)
    scratch_a = np.empty(m, np.int32)
    path_a = np.empty(m, np.int32)
    head_a = np.full(m, -1, np.int64)
    cdef int64_t[::1] cnt_n = cnt_n_a, cnt_w = cnt_w_a, stamp = stamp_a, head = head_a
    cdef int32_t[::1] slot_v = slot_a, touched = touched_a, scratch = scratch_a, path = path_a
    cdef signed char[::1] in_p = in_p_a
    s.t_off = &r_off[0]
    s.t_items = &r_items[0]
    s.t_w = &r_w[0]
    s.minsup = min_support
    s.cnt_n = &cnt_n[0]
    s.cnt_w = &cnt_w[0]
    s.stamp = &stamp[0]
    s.cur_stamp = 0
    s.slot = &slot_v[0]
    s.in_p = <char*>&in_p[0]
    s.touched = &touched[0]
    s.scratch = &scratch[0]
    s.path = &path[0]
    s.path_len = 0
    s.link_head = &head[0]
    s.mfi_items.data = NULL
    s.mfi_items.n = s.mfi_items.cap = 0
    s.mfi_off.data = NULL
    s.mfi_off.n = s.mfi_off.cap = 0
    s.mfi_supp.data = NULL
    s.mfi_supp.n = s.mfi_supp.cap = 0
    s.link_set.data = NULL
    s.link_set.n = s.link_set.cap = 0
    s.link_next.data = NULL
    s.link_next.n = s.link_next.cap = 0
    try:
        with nogil:
            rc = push64(&s.mfi_off, 0)
            if rc == 0:
                rc = mine(&s, &v_off[0], &v_tids[0], &v_w[0], <int32_t>m)
        if rc:
            raise MemoryError()
        n_sets = s.mfi_supp.n
        n_members = s.mfi_items.n
        ranks_a = np.empty(n_members, np.int32)
        bounds_a = np.empty(n_sets + 1, np.int64)
        supports_a = np.empty(n_sets, np.int64)
        copy_out(&s, ranks_a, bounds_a, supports_a)
    finally:
        free(s.mfi_items.data)
        free(s.mfi_off.data)
        free(s.mfi_supp.data)
        free(s.link_set.data)
        free(s.link_next.data)
    members_a = order[ranks_a]
    _sort_segments(members_a, bounds_a)
    return members_a, bounds_a, supports_a


def _sort_segments(int64_t[::1] a, const int64_t[::1] bounds):
    """Sort each ``a[bounds[i]:bounds[i + 1]]`` in place (non-negative values)."""
    cdef Py_ssize_t n = bounds.shape[0] - 1, i
    cdef int64_t longest = 1
    cdef uint64_t* tmp
    for i in range(n):
        longest = max(longest, bounds[i + 1] - bounds[i])
    tmp = <uint64_t*>malloc(longest * sizeof(uint64_t))
    if tmp == NULL:
        raise MemoryError()
    with nogil:
        for i in range(n):
            if bounds[i + 1] - bounds[i] > 1:
                radix_sort(<uint64_t*>&a[bounds[i]], bounds[i + 1] - bounds[i], tmp)
    free(tmp)
