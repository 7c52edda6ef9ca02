# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Product-matching kernel: the rows of pair features that do not come from plain Jaccard
(see :func:`neardup.products.matcher.pair_features`; ``product_pair_features`` in
``tests/oracles.py`` computes them with Python sets, and the tests compare the two value for
value).

Every set arrives as sorted distinct codes per offer (``flat[off[i]:off[i + 1]]``); word
weights are whole multiples of ``2 ** -32``, so their sums here are exact in any order. The
numbers' matching follows ``matcher._number_evidence`` step by step (the same binary search,
the same sums in the same order)."""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp

# the columns of FEATURES this kernel fills (matcher.FEATURES; a test checks the two agree)
cdef enum:
    C_ID_SHARE = 0
    C_ID_PREFIX = 1
    C_ID_CONFLICT = 2
    C_ID_ONE = 3
    C_BRAND = 4
    C_SIZE = 5
    C_UNIT1 = 6
    C_UNITS_AGREE = 9
    C_UNITS_CONFLICT = 10
    C_SAME_SHOP = 11
    C_TITLE_JAC = 12
    C_NUM_MATCH = 14
    C_NUM_RARE = 15
    C_NUM_IDF = 16
    C_VALUE_JAC = 17
    C_TITLE_IDF = 19
    C_VALUE_IDF = 20
    C_TITLE_COS = 22
    C_PRICE_RATIO = 24
    C_NUM_SHARED = 25
    C_NUM_LONG = 26
    C_NUM_UNMATCHED = 27
    C_ID_WRITTEN = 28
    C_NUM_IDF_SUM = 29
    N_COLUMNS = 30

COLUMNS = {"id_share": C_ID_SHARE, "id_prefix": C_ID_PREFIX, "id_conflict": C_ID_CONFLICT,
           "id_one": C_ID_ONE, "brand": C_BRAND, "size": C_SIZE, "unit1": C_UNIT1,
           "units_agree": C_UNITS_AGREE, "units_conflict": C_UNITS_CONFLICT,
           "same_shop": C_SAME_SHOP, "title_jac": C_TITLE_JAC, "num_match": C_NUM_MATCH,
           "num_rare": C_NUM_RARE, "num_idf": C_NUM_IDF, "value_jac": C_VALUE_JAC,
           "title_idf": C_TITLE_IDF, "value_idf": C_VALUE_IDF, "title_cos": C_TITLE_COS,
           "price_ratio": C_PRICE_RATIO, "num_shared": C_NUM_SHARED, "num_long": C_NUM_LONG,
           "num_unmatched": C_NUM_UNMATCHED, "id_written": C_ID_WRITTEN,
           "num_idf_sum": C_NUM_IDF_SUM, "width": N_COLUMNS}


ctypedef fused code_t:
    uint32_t
    uint64_t


cdef inline int64_t shared(const code_t* h, int64_t a0, int64_t a1, int64_t b0,
                           int64_t b1, const double* w, double* wsum) noexcept nogil:
    """How many codes the sorted runs h[a0:a1] and h[b0:b1] share; with ``w`` (``uint32``
    codes only), their summed weights added to ``wsum``."""
    cdef int64_t n = 0
    cdef code_t x, y
    while a0 < a1 and b0 < b1:
        x = h[a0]
        y = h[b0]
        if x < y:
            a0 += 1
        elif y < x:
            b0 += 1
        else:
            n += 1
            if w != NULL:
                wsum[0] += w[x]
            a0 += 1
            b0 += 1
    return n


cdef inline double jac(int64_t inter, int64_t na, int64_t nb) noexcept nogil:
    cdef int64_t u = na + nb - inter
    return (<double>inter / u) if u else 0.0


cdef inline double wjac(double inter, double total) noexcept nogil:
    cdef double union = total - inter
    return inter / union if union > 0 else 0.0


cdef inline int prefix_related(const uint32_t* ids, int64_t a0, int64_t a1, int64_t b0,
                               int64_t b1, const uint8_t* text, const int64_t* start,
                               const int64_t* chars) noexcept nogil:
    """Whether a model number of one side begins another of the other side, both of 6+
    characters (``id_relation``'s ``"prefix"``; UTF-8 keeps prefixes of text prefixes)."""
    cdef int64_t i, j, la, lb
    cdef uint32_t x, y
    for i in range(a0, a1):
        x = ids[i]
        for j in range(b0, b1):
            y = ids[j]
            if chars[x] < 6 or chars[y] < 6:
                continue
            la = start[x + 1] - start[x]
            lb = start[y + 1] - start[y]
            if memcmp(text + start[x], text + start[y], la if la < lb else lb) == 0:
                return 1
    return 0


cdef inline int64_t bisect_left(const double* v, int64_t lo, int64_t hi,
                                double x) noexcept nogil:
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) // 2
        if v[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def pair_rows(const int64_t[::1] left, const int64_t[::1] right,
              const uint32_t[::1] t_flat, const int64_t[::1] t_off, const double[::1] t_w,
              const double[::1] t_total,
              const uint32_t[::1] v_flat, const int64_t[::1] v_off, const double[::1] v_w,
              const double[::1] v_total,
              const uint32_t[::1] b_flat, const int64_t[::1] b_off, const double[::1] b_w,
              const double[::1] b_norm,
              const uint32_t[::1] i_flat, const int64_t[::1] i_off,
              const uint8_t[::1] i_text, const int64_t[::1] i_start, const int64_t[::1] i_chars,
              const uint32_t[::1] w_flat, const int64_t[::1] w_off,
              const uint64_t[::1] m_flat, const int64_t[::1] m_off, int64_t main_unit,
              const int64_t[::1] special,
              const int64_t[::1] brand, const int64_t[::1] shop, const double[::1] price,
              const double[::1] n_val, const int64_t[::1] n_off, const double[::1] n_idf,
              const uint8_t[::1] n_rare, const double[::1] n_near, const double[::1] n_total,
              double tol, double[:, ::1] out, Py_ssize_t lo, Py_ssize_t hi):
    """The kernel's columns (:data:`COLUMNS`) of ``out[p]`` for the pairs ``(left[p],
    right[p])``, ``p`` in [lo, hi); the other columns are left as they are.

    Sets (``*_flat``/``*_off``): title words ``t`` (weights ``t_w`` per code, ``t_total`` per
    offer), attribute values ``v``, blocking tokens ``b`` (squared weights, ``b_norm`` per
    offer), model numbers ``i`` (their UTF-8 text ``i_text[i_start[c]:i_start[c + 1]]``, of
    ``i_chars[c]`` characters), model numbers as written ``w``, title measures ``m``
    (``unit << 32 | value``, sorted). ``main_unit`` and the three ``special`` units: codes, -1
    for none. ``brand``/``shop``: codes, -1 for none; ``price``: 0 for none. Numbers ``n``:
    sorted values per offer, each with its IDF, rarity and near-IDF, ``n_total`` the IDF sum
    per offer; ``tol`` the matching tolerance."""
    cdef Py_ssize_t p
    cdef int64_t a, b, c, na, nb, i, j, ie, je, k, m, h, rare, ua, ub
    cdef int r, main_r, sp0, sp1, sp2, agree, conflict
    cdef double ws, x, pa, pb, idfsum, nearsum, total
    cdef double* row
    cdef const uint32_t* tf = &t_flat[0] if t_flat.shape[0] else NULL
    cdef const uint32_t* vf = &v_flat[0] if v_flat.shape[0] else NULL
    cdef const uint32_t* bf = &b_flat[0] if b_flat.shape[0] else NULL
    cdef const uint32_t* idf_ = &i_flat[0] if i_flat.shape[0] else NULL
    cdef const uint32_t* wf = &w_flat[0] if w_flat.shape[0] else NULL
    cdef const double* tw = &t_w[0] if t_w.shape[0] else NULL
    cdef const double* vw = &v_w[0] if v_w.shape[0] else NULL
    cdef const double* bw = &b_w[0] if b_w.shape[0] else NULL
    cdef const uint8_t* text = &i_text[0] if i_text.shape[0] else NULL
    cdef const int64_t* istart = &i_start[0]
    cdef const int64_t* ichars = &i_chars[0] if i_chars.shape[0] else NULL
    cdef const double* nv = &n_val[0] if n_val.shape[0] else NULL
    cdef const uint64_t* mf = &m_flat[0] if m_flat.shape[0] else NULL
    with nogil:
        for p in range(lo, hi):
            a = left[p]
            b = right[p]
            row = &out[p, 0]
            # model numbers: share, prefix, conflict, one
            na = i_off[a + 1] - i_off[a]
            nb = i_off[b + 1] - i_off[b]
            row[C_ID_SHARE] = row[C_ID_PREFIX] = row[C_ID_CONFLICT] = row[C_ID_ONE] = 0.0
            row[C_ID_WRITTEN] = 0.0
            if na and nb:
                if shared(idf_, i_off[a], i_off[a + 1], i_off[b], i_off[b + 1], NULL, NULL):
                    row[C_ID_SHARE] = 1.0
                    if shared(wf, w_off[a], w_off[a + 1], w_off[b], w_off[b + 1], NULL, NULL):
                        row[C_ID_WRITTEN] = 1.0
                elif prefix_related(idf_, i_off[a], i_off[a + 1], i_off[b], i_off[b + 1],
                                    text, istart, ichars):
                    row[C_ID_PREFIX] = 1.0
                else:
                    row[C_ID_CONFLICT] = 1.0
            elif na or nb:
                row[C_ID_ONE] = 1.0
            row[C_BRAND] = 0.0 if brand[a] < 0 or brand[b] < 0 else (
                1.0 if brand[a] == brand[b] else -1.0)
            # title measures by unit
            main_r = sp0 = sp1 = sp2 = agree = conflict = 0
            i = m_off[a]
            j = m_off[b]
            while i < m_off[a + 1] and j < m_off[b + 1]:
                ua = <int64_t>(m_flat[i] >> 32)
                ub = <int64_t>(m_flat[j] >> 32)
                if ua < ub:
                    i += 1
                    continue
                if ub < ua:
                    j += 1
                    continue
                ie = i
                while ie < m_off[a + 1] and <int64_t>(m_flat[ie] >> 32) == ua:
                    ie += 1
                je = j
                while je < m_off[b + 1] and <int64_t>(m_flat[je] >> 32) == ua:
                    je += 1
                r = 1 if shared(mf, i, ie, j, je, NULL, NULL) else -1
                if ua == main_unit:
                    main_r = r
                else:
                    if r == 1:
                        agree += 1
                    else:
                        conflict += 1
                if ua == special[0]:
                    sp0 = r
                elif ua == special[1]:
                    sp1 = r
                elif ua == special[2]:
                    sp2 = r
                i = ie
                j = je
            row[C_SIZE] = main_r
            row[C_UNIT1] = sp0
            row[C_UNIT1 + 1] = sp1
            row[C_UNIT1 + 2] = sp2
            row[C_UNITS_AGREE] = agree
            row[C_UNITS_CONFLICT] = conflict
            row[C_SAME_SHOP] = 1.0 if shop[a] == shop[b] and shop[a] >= 0 else 0.0
            # title words, attribute values, blocking tokens
            ws = 0.0
            c = shared(tf, t_off[a], t_off[a + 1], t_off[b], t_off[b + 1], tw, &ws)
            row[C_TITLE_JAC] = jac(c, t_off[a + 1] - t_off[a], t_off[b + 1] - t_off[b])
            row[C_TITLE_IDF] = wjac(ws, t_total[a] + t_total[b])
            ws = 0.0
            c = shared(vf, v_off[a], v_off[a + 1], v_off[b], v_off[b + 1], vw, &ws)
            row[C_VALUE_JAC] = jac(c, v_off[a + 1] - v_off[a], v_off[b + 1] - v_off[b])
            row[C_VALUE_IDF] = wjac(ws, v_total[a] + v_total[b])
            if b_norm[a] > 0 and b_norm[b] > 0:
                ws = 0.0
                shared(bf, b_off[a], b_off[a + 1], b_off[b], b_off[b + 1], bw, &ws)
                x = ws / (b_norm[a] * b_norm[b])
                row[C_TITLE_COS] = 1.0 if 1.0 < x else x
            else:
                row[C_TITLE_COS] = 0.0
            pa = price[a]
            pb = price[b]
            row[C_PRICE_RATIO] = ((pa if pa < pb else pb) / (pb if pa < pb else pa)
                                  if pa > 0 and pb > 0 else -1.0)
            # attribute numbers (_number_evidence)
            na = n_off[a + 1] - n_off[a]
            nb = n_off[b + 1] - n_off[b]
            if na == 0 or nb == 0:
                row[C_NUM_MATCH] = -1.0
                row[C_NUM_RARE] = 0.0
                row[C_NUM_IDF] = -1.0
                row[C_NUM_SHARED] = 0.0
                row[C_NUM_LONG] = -1.0
                row[C_NUM_UNMATCHED] = 0.0
                row[C_NUM_IDF_SUM] = 0.0
                continue
            if na > nb:
                a, b = b, a
                na, nb = nb, na
            h = rare = 0
            idfsum = nearsum = 0.0
            m = nb
            for k in range(na):
                x = nv[n_off[a] + k]
                i = bisect_left(nv, n_off[b], n_off[b + 1], x - tol) - n_off[b]
                if i < m and nv[n_off[b] + i] - x <= tol:
                    h += 1
                    rare += n_rare[n_off[a] + k]
                    idfsum += n_idf[n_off[a] + k]
                    nearsum += n_near[n_off[a] + k]
            if h == 0:
                row[C_NUM_MATCH] = row[C_NUM_RARE] = row[C_NUM_IDF] = 0.0
                row[C_NUM_SHARED] = row[C_NUM_LONG] = row[C_NUM_IDF_SUM] = 0.0
                row[C_NUM_UNMATCHED] = <double>na
                continue
            total = n_total[a]
            row[C_NUM_MATCH] = <double>h / na
            row[C_NUM_RARE] = <double>rare
            row[C_NUM_IDF] = idfsum / total if total > 0 else 0.0
            row[C_NUM_SHARED] = <double>h
            row[C_NUM_LONG] = <double>h / m
            row[C_NUM_UNMATCHED] = <double>(na - h)
            row[C_NUM_IDF_SUM] = nearsum
