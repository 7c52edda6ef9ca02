"""Ground truth of product offers in the shapes benchmarks use, and scoring against it.

Three shapes of truth file (CSV or TSV with any separator, or JSONL; optionally ``.gz``):

- ``pairs``: matching id pairs, ``a,b`` (JSONL ``{"a": id, "b": id}`` or ``[id, id]``). The
  truth is complete: every offer is labelled, offers joined by listed pairs (directly or
  through others) are one product, and every other pair is a non-match.
- ``entities``: ``entity,id`` rows (JSONL ``{"entity": e, "id": id}``), such as the Alaska
  benchmark's ``entity_id,spec_id``. Only the offers listed are labelled: two labelled offers
  match iff they have the same entity; a pair with an unlabelled offer is unknown.
- ``labelled_pairs``: ``a,b,label`` rows with label 1 or 0 (also true/false, yes/no; JSONL
  ``{"a": id, "b": id, "label": 1}``), such as the SIGMOD 2020 contest's
  ``left_spec_id,right_spec_id,label``. Only the listed pairs are known, as listed (no
  transitive closure).

The shape is found from a header row where there is one (a column named like ``entity``,
``cluster`` or ``group`` beside the ids: entities; a ``label`` or ``match`` column: labelled
pairs), else from the column count and which columns hold known offer ids (two id columns:
pairs; one, beside a column whose values repeat: entities; three columns: the one holding 0/1
is the label). A first row in which
no cell is a known id or a label value is a header. ``format=`` names the shape outright.

Where the offers come from two files with ids qualified by their file's name
(``--qualify-ids``: ``abt/0``) and a pair list names bare ids (``0,2``, JSONL ``[0, 2]``), the
first id column is read as the first file's ids and the second as the second's (by the files'
names where the header names them, such as ``abt_id,buy_id``), as clean-clean benchmarks write
their truth; the summary says which column was read as which file's (``ids_by_file``).

An unknown id is an :class:`.InputError` naming the file and line (``on_error="fail"``) or is
counted (``"skip"``); a pair labelled both 1 and 0 is always an error naming both lines. An
id given two entities joins them into one (their pairs' union; counted). Self pairs and
repeated rows are counted and left out.

Scoring (:func:`score_pairs`, :func:`candidate_quality_known`) looks only at pairs whose truth
is known: predicted pairs of unknown status are counted apart, never as errors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import field

import numpy as np

from .._records import record
from ..errors import ConfigError, InputError
from ..validate import check_choice
from .offers import ON_ERROR, Offers

TRUTH_FORMATS = ("auto", "pairs", "entities", "labelled_pairs")

#: Header names of an entity column (compared lower-cased, with ``_id``/``id`` dropped).
ENTITY_NAMES = ("entity", "cluster", "group", "class", "product", "model", "label", "gold")
#: Header names of a label column of labelled pairs.
LABEL_NAMES = (
    "label",
    "match",
    "is_match",
    "ismatch",
    "is_duplicate",
    "duplicate",
    "gold",
    "y",
    "target",
)
_TRUE = frozenset(("1", "true", "yes", "1.0", "t", "y"))
_FALSE = frozenset(("0", "false", "no", "0.0", "f", "n"))
_SAMPLE = 200


@record
class Truth:
    """What is known about the pairs of ``n`` offers (rows of the loaded :class:`.Offers`).

    ``shape``: ``"pairs"``, ``"entities"`` or ``"labelled_pairs"`` (module docstring).
    ``labelled``: ``bool[n]``, offers the truth speaks of. With ``entity`` (``int64[n]``,
    ``-1`` where unlabelled; shapes ``pairs`` and ``entities``) two labelled offers match iff
    their entities are equal, and every pair of labelled offers is known (negatives complete
    over the labelled offers). With ``keys`` (sorted ``int64`` keys ``left * n + right`` of the
    listed pairs, ``left < right``) and ``match`` (``bool`` per key; shape
    ``labelled_pairs``) only the listed pairs are known. ``counts``: what loading saw."""

    n: int
    shape: str
    labelled: np.ndarray
    entity: np.ndarray | None = None
    keys: np.ndarray | None = None
    match: np.ndarray | None = None
    counts: dict = field(default_factory=dict)
    path: str | None = None

    @classmethod
    def from_labels(cls, labels: Sequence[object], shape: str = "entities") -> Truth:
        """A complete truth from one label per offer (equal labels: the same product);
        ``None`` labels are unlabelled offers."""
        codes: dict[object, int] = {}
        ent = np.fromiter(
            (-1 if lab is None else codes.setdefault(lab, len(codes)) for lab in labels),
            np.int64,
            len(labels),
        )
        return cls(len(ent), shape, ent >= 0, entity=ent)

    @property
    def negatives(self) -> str:
        """``"complete"`` (every pair of labelled offers is known) or ``"listed"``."""
        return "listed" if self.entity is None else "complete"

    def _norm(self, left, right) -> tuple[np.ndarray, np.ndarray]:
        left = np.asarray(left, np.int64)
        right = np.asarray(right, np.int64)
        if left.shape != right.shape:
            raise ValueError(f"{len(left)} left rows and {len(right)} right rows")
        if len(left) and (
            min(left.min(), right.min()) < 0 or max(left.max(), right.max()) >= self.n
        ):
            raise ValueError(f"pair rows must lie in [0, {self.n})")
        return np.minimum(left, right), np.maximum(left, right)

    def _find(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Listed pairs: ``(found, position in keys)`` of each pair."""
        k = a * self.n + b
        pos = np.searchsorted(self.keys, k)
        posc = np.minimum(pos, max(len(self.keys) - 1, 0))
        found = (
            (pos < len(self.keys)) & (self.keys[posc] == k)
            if len(self.keys)
            else np.zeros(len(k), bool)
        )
        return found & (a != b), posc

    def is_known(self, left, right) -> np.ndarray:
        """``bool`` per pair: its truth is known (either order; a self pair is never known)."""
        a, b = self._norm(left, right)
        if self.entity is not None:
            return self.labelled[a] & self.labelled[b] & (a != b)
        return self._find(a, b)[0]

    def is_match(self, left, right) -> np.ndarray:
        """``bool`` per pair: known to be the same product."""
        a, b = self._norm(left, right)
        if self.entity is not None:
            return (
                self.labelled[a] & self.labelled[b] & (a != b) & (self.entity[a] == self.entity[b])
            )
        found, pos = self._find(a, b)
        return found & self.match[pos] if len(self.keys) else found

    def positives(self) -> tuple[np.ndarray, np.ndarray]:
        """All known matching pairs ``(left, right)``, ``left < right``, sorted."""
        if self.entity is None:
            k = self.keys[self.match]
            return k // self.n, k % self.n
        rows = np.flatnonzero(self.labelled)
        order = rows[np.argsort(self.entity[rows], kind="stable")]
        ent = self.entity[order]
        starts = (
            np.flatnonzero(np.r_[True, ent[1:] != ent[:-1]]) if len(ent) else np.zeros(0, np.int64)
        )
        ends = np.r_[starts[1:], len(ent)]
        lefts, rights = [], []
        for s, e in zip(starts.tolist(), ends.tolist()):
            if e - s < 2:
                continue
            members = order[s:e]
            i, j = np.triu_indices(e - s, 1)
            lefts.append(members[i])
            rights.append(members[j])
        if not lefts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        left = np.concatenate(lefts)
        right = np.concatenate(rights)
        a, b = np.minimum(left, right), np.maximum(left, right)
        o = np.lexsort((b, a))
        return a[o].astype(np.int64), b[o].astype(np.int64)

    def subset(self, rows) -> Truth:
        """The truth of the offers at ``rows`` (distinct), renumbered to their positions."""
        rows = np.asarray(rows, np.int64)
        if self.entity is not None:
            return Truth(len(rows), self.shape, self.labelled[rows], entity=self.entity[rows])
        pos = np.full(self.n, -1, np.int64)
        pos[rows] = np.arange(len(rows))
        a, b = pos[self.keys // self.n], pos[self.keys % self.n]
        keep = (a >= 0) & (b >= 0)
        a, b, m = a[keep], b[keep], self.match[keep]
        a, b = np.minimum(a, b), np.maximum(a, b)
        k = a * len(rows) + b
        o = np.argsort(k, kind="stable")
        lab = np.zeros(len(rows), bool)
        lab[a] = True
        lab[b] = True
        return Truth(len(rows), self.shape, lab, keys=k[o], match=m[o])

    def summary(self) -> dict:
        """Counts for a report: labelled offers, known matching and non-matching pairs, how
        the negatives are known, and what loading counted."""
        npos = len(self.positives()[0])
        lab = int(self.labelled.sum())
        if self.entity is not None:
            neg = lab * (lab - 1) // 2 - npos
            ents = len(np.unique(self.entity[self.labelled]))
        else:
            neg = int(len(self.keys) - self.match.sum())
            ents = None
        out = {
            "shape": self.shape,
            "offers": self.n,
            "labelled_offers": lab,
            "positive_pairs": npos,
            "negative_pairs": neg,
            "negatives": self.negatives,
        }
        if ents is not None:
            out["entities"] = ents
        if self.path is not None:
            out["path"] = self.path
        return {**out, **self.counts}


def _positives(
    truth: Truth, sources: Sequence[str] | None, cross_source: bool
) -> tuple[np.ndarray, np.ndarray]:
    pl, pr = truth.positives()
    if cross_source:
        m = _across(pl, pr, sources)
        pl, pr = pl[m], pr[m]
    return pl, pr


def _across(a: np.ndarray, b: np.ndarray, sources: Sequence[str]) -> np.ndarray:
    """``bool`` per pair: its offers come from different sources (compared as codes)."""
    _, codes = np.unique(np.asarray(sources, dtype=object), return_inverse=True)
    return codes[a] != codes[b]


def _distinct(
    left, right, truth: Truth, sources, cross_source: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    """Distinct non-self pairs ``left < right`` (across sources with ``cross_source``), and
    how many within one source were left out."""
    a, b = truth._norm(left, right)
    differ = a != b
    k = a[differ] * truth.n + b[differ] if not differ.all() else a * truth.n + b
    if len(k) > 1 and not (k[1:] > k[:-1]).all():  # candidates often come sorted already
        k = np.sort(k)
        k = k[np.r_[True, k[1:] != k[:-1]]]  # (np.unique: several times slower here)
    a, b = k // truth.n, k % truth.n
    within = 0
    if cross_source:
        if sources is None:
            raise ValueError("cross_source needs the offers' sources")
        m = _across(a, b, sources)
        within = int(len(a) - m.sum())
        a, b = a[m], b[m]
    return a, b, within


def _ratio(x: int, y: int) -> float | None:
    return x / y if y else None


def score_pairs(
    left, right, truth: Truth, *, sources: Sequence[str] | None = None, cross_source: bool = False
) -> dict:
    """Precision, recall and F1 of predicted matching pairs, on known pairs only.

    Precision is over the predicted pairs whose truth is known (``tp + fp``); the predicted
    pairs of unknown status are counted as ``unknown``. Recall is over all known matching
    pairs (with ``cross_source``: those across ``sources``; predicted pairs within one source
    are then left out, counted as ``within_one_source_left_out``). Repeats and either order of
    a pair count once; self pairs are dropped. Undefined ratios are ``None``."""
    a, b, within = _distinct(left, right, truth, sources, cross_source)
    known = truth.is_known(a, b)
    match = truth.is_match(a, b)
    tp = int(match.sum())
    fp = int(known.sum()) - tp
    npos = len(_positives(truth, sources, cross_source)[0])
    p, r = _ratio(tp, tp + fp), _ratio(tp, npos)
    f1 = None if p is None or r is None else (2 * p * r / (p + r) if p + r > 0 else 0.0)
    out = {
        "predicted": len(a),
        "known": tp + fp,
        "unknown": int(len(a) - known.sum()),
        "tp": tp,
        "fp": fp,
        "fn": npos - tp,
        "positives": npos,
        "precision": p,
        "recall": r,
        "f1": f1,
    }
    if cross_source:
        out["within_one_source_left_out"] = within
    return out


def candidate_quality_known(
    left,
    right,
    truth: Truth,
    n_offers: int | None = None,
    *,
    sources: Sequence[str] | None = None,
    cross_source: bool = False,
) -> dict:
    """Blocking quality of candidate pairs on the known truth: pair completeness ``pc``
    (known matching pairs among the candidates / all known matching pairs, across sources
    with ``cross_source``), pair quality ``pq`` (matching / known candidates), ``f1_star``,
    the fraction of all pairs, and the candidate pairs per offer: candidates / offers
    (``per_offer``), and over the labelled offers (``per_labelled_offer``: each labelled offer
    counts half of each of its pairs, so that both measure on one scale): far more per
    labelled offer than per offer means the labelled offers are not typical of the catalogue.
    Undefined ratios are ``None``."""
    n = truth.n if n_offers is None else n_offers
    if n != truth.n:
        raise ValueError(f"the truth is over {truth.n} offers, not {n}")
    a, b, within = _distinct(left, right, truth, sources, cross_source)
    known = int(truth.is_known(a, b).sum())
    found = int(truth.is_match(a, b).sum())
    npos = len(_positives(truth, sources, cross_source)[0])
    pc, pq = _ratio(found, npos), _ratio(found, known)
    f1s = None if pc is None or pq is None else (2 * pc * pq / (pc + pq) if pc + pq > 0 else 0.0)
    nlab = int(truth.labelled.sum())
    ends = int(truth.labelled[a].sum() + truth.labelled[b].sum())
    out = {
        "candidates": len(a),
        "known_candidates": known,
        "positives_found": found,
        "positives": npos,
        "pc": pc,
        "pq": pq,
        "f1_star": f1s,
        "fraction": len(a) / (n * (n - 1) / 2) if n > 1 else 0.0,
        "per_offer": len(a) / n if n else 0.0,
        "per_labelled_offer": _ratio(ends / 2, nlab),
    }
    if cross_source:
        out["within_one_source_left_out"] = within
    return out


# ---------------------------------------------------------------------------------- loading


def _label(v: object) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    s = str(v).strip().lower()
    return True if s in _TRUE else False if s in _FALSE else None


def _name(h: str) -> str:
    h = h.strip().lower().replace("-", "_").replace(" ", "_")
    for suffix in ("_id", "id"):
        if h.endswith(suffix) and len(h) > len(suffix):
            return h[: -len(suffix)].rstrip("_")
    return h


_JSON_KEYS = {
    "entities": (("entity", "cluster", "group"), ("id",)),
    "labelled_pairs": (("a",), ("b",), ("label", "match")),
    "pairs": (("a",), ("b",)),
}


def _json_shape(rec: dict) -> str | None:
    if any(k in rec for k in _JSON_KEYS["entities"][0]) and "id" in rec:
        return "entities"
    if "a" in rec and "b" in rec:
        return "labelled_pairs" if ("label" in rec or "match" in rec) else "pairs"
    return None


def _json_cells(rec: dict, shape: str) -> list | None:
    out = []
    for names in _JSON_KEYS[shape]:
        k = next((k for k in names if k in rec), None)
        if k is None:
            return None
        out.append(rec[k])
    return out


def _bare_hint(sample: list[list[str]], known: set) -> str:
    """Where the offers' ids carry their file's name (``--qualify-ids``) and the truth's cells
    are bare ids: how to write them (:func:`.loaders._qualified_hint`)."""
    from .loaders import _qualified_hint

    bare = {i.rsplit("/", 1)[1] for i in known if "/" in i}
    cell = next((c for r in sample for c in r if c in bare), None)
    if cell is None:
        return ""
    return f": they hold bare ids such as {cell!r}{_qualified_hint(cell, known)}"


def _ids_by_file(
    rows: list[tuple[int, list]], prefixes: Sequence[str], known: set
) -> tuple[list[tuple[int, list]], dict[str, str] | None]:
    """A pair list of bare ids against the offers of two files whose ids carry their file's
    name (``--qualify-ids``), as clean-clean benchmarks write it (``D1,D2`` or
    ``ltable_id,rtable_id,label``: the first id column names offers of the first file, the
    second of the second): the rows with those ids written ``FILE/ID``, and which column was
    read as which file's; the columns go by the files' names where the header names them
    (``abt_id,buy_id``), else by position. Unchanged (and ``None``) where any id is known as
    written, where the columns are not two ids (and a label), or where fewer than half of the
    first rows' ids are then known."""
    width = len(rows[0][1])
    if len(prefixes) != 2 or width not in (2, 3):
        return rows, None
    sample = [[str(c) for c in r] for _, r in rows[: _SAMPLE + 1] if len(r) == width]
    if not sample or any(c in known for r in sample for c in r):
        return rows, None
    data = sample[1:] or sample
    cols = [0, 1]
    if width == 3:
        labels = [j for j in range(3) if all(_label(r[j]) is not None for r in data)]
        lab = 2 if 2 in labels or not labels else labels[0]
        cols = [j for j in range(3) if j != lab]
    first = sample[0]
    names = [_name(first[j]).removeprefix("id").strip("_") for j in cols]
    files = [p.lower() for p in prefixes]
    order = list(prefixes)
    if sorted(names) == sorted(files) and names[0] != names[1]:
        order = [prefixes[files.index(n)] for n in names]
    fix = dict(zip(cols, order))

    def qualified(r: list) -> list:
        return [f"{fix[j]}/{c}" if j in fix else c for j, c in enumerate(r)]

    hits = sum(all(qualified(r)[j] in known for j in cols) for r in data)
    if hits * 2 < len(data):
        return rows, None
    header = not all(qualified(first)[j] in known for j in cols)
    label = [first[j] if header else f"column {j + 1}" for j in cols]
    # a row of another width is left as it is, for the error that names its line
    return (
        [(line, qualified([str(c) for c in r]) if len(r) == width else r) for line, r in rows],
        dict(zip(label, order)),
    )


def _layout(
    rows: list[tuple[int, list]], is_jsonl: bool, known: set, fmt: str, name: str, delim: str
) -> tuple[str, tuple[int, ...], bool]:
    """``(shape, columns, header)``: the shape, the cell positions of (entity, id) or (a, b)
    or (a, b, label), and whether the first row is a header."""
    if is_jsonl and rows and len(rows[0][1]) == 1 and isinstance(rows[0][1][0], dict):
        shape = _json_shape(rows[0][1][0]) if fmt == "auto" else fmt
        if shape is None:
            raise InputError(
                'expected {"a": id, "b": id}, {"a", "b", "label"} or {"entity", "id"}',
                path=name,
                line=rows[0][0],
                reason="bad_pair",
            )
        return shape, (), False
    width = len(rows[0][1]) if rows else 2
    how = (
        f" (read with the separator {delim!r}: give another with sep= / --truth-sep)"
        if delim
        else ""
    )
    if width not in (2, 3):
        raise InputError(
            f"expected 2 columns (a pair of ids, or an entity and an id) or 3 "
            f"(a pair and its label), got {width}{how}",
            path=name,
            line=rows[0][0] if rows else None,
            reason="bad_pair",
        )
    first = [str(c) for c in rows[0][1]] if rows else []
    header = (
        bool(first)
        and not any(c in known for c in first)
        and not any(_label(c) is not None for c in first)
    )
    names = [_name(c) for c in first] if header else []
    data = rows[1:] if header else rows
    sample = [[str(c) for c in r] for _, r in data[:_SAMPLE] if len(r) == width]
    holds_ids = [
        bool(sample) and sum(r[j] in known for r in sample) * 2 >= len(sample) for j in range(width)
    ]
    is_label = [
        bool(sample) and all(_label(r[j]) is not None for r in sample) for j in range(width)
    ]
    shape = fmt
    if shape == "auto":
        shape = "labelled_pairs" if width == 3 else None
        if shape is None and names:
            if any(n in ENTITY_NAMES for n in names) and not all(n in ENTITY_NAMES for n in names):
                shape = "entities"
        if shape is None:
            other = holds_ids.index(False) if holds_ids.count(True) == 1 else None
            if other is not None and len({r[other] for r in sample}) < len(sample):
                shape = "entities"  # one id column, and the other one's values repeat
            elif any(holds_ids):
                shape = "pairs"  # the unknown ids are then reported as such
            else:
                fix = _bare_hint(sample, known) or f"{how}; give format= / --truth-format"
                raise InputError(
                    f"cannot tell the shape of the truth: no column holds known "
                    f"offer ids in its first {len(sample)} rows{fix}",
                    path=name,
                    reason="unknown_shape",
                    whole_file=True,
                )
    need = {"pairs": 2, "entities": 2, "labelled_pairs": 3}[shape]
    if width != need:
        raise InputError(
            f"a truth of {shape} has {need} columns, got {width}{how}",
            path=name,
            line=rows[0][0],
            reason="bad_pair",
        )
    if shape == "pairs":
        return shape, (0, 1), header
    if shape == "entities":
        by_name = [j for j, n in enumerate(names) if n in ENTITY_NAMES]
        if len(by_name) == 1:
            e = by_name[0]
        elif holds_ids[0] != holds_ids[1]:
            e = 0 if holds_ids[1] else 1
        else:
            e = 0  # entity_id,spec_id: the benchmark's order
        return shape, (e, 1 - e), header
    by_name = [j for j, n in enumerate(names) if n in LABEL_NAMES]
    if len(by_name) == 1:
        lab = by_name[0]
    elif is_label[2] or not any(is_label):
        lab = 2
    else:
        lab = is_label.index(True)
    ids = [j for j in range(3) if j != lab]
    return shape, (ids[0], ids[1], lab), header


def load_truth(
    path: str | os.PathLike,
    offers: Offers,
    *,
    on_error: str = "fail",
    sep: str | None = None,
    format: str = "auto",
) -> Truth:
    """Read a truth file of any shape (module docstring) against the loaded ``offers``.

    ``counts`` of the returned :class:`Truth`: ``rows`` read, ``header`` (0 or 1),
    ``unknown_id`` (rows left out with ``on_error="skip"``), ``bad_rows`` (ditto: a missing
    cell or a label that is not 0/1), ``self_pairs``, ``repeated``, and for pairs
    ``listed_pairs`` and ``closure_pairs`` (matching pairs implied by the listed ones through
    shared offers)."""
    from .files import _check_sep
    from .loaders import _qualified_hint

    check_choice("on_error", on_error, ON_ERROR)
    check_choice("format", format, TRUTH_FORMATS)
    _check_sep(sep)
    name = os.fspath(path)
    from .files import _read_rows  # the reading every truth file shares

    rows, is_jsonl, delim = _read_rows(name, sep)
    if not rows:
        raise InputError("empty truth file", path=name, reason="empty", whole_file=True)
    row_of = {rid: i for i, rid in enumerate(offers.ids)}
    known = set(row_of)
    by_file = None
    if format in ("auto", "pairs", "labelled_pairs"):  # CSV rows, or JSONL lists
        rows, by_file = _ids_by_file(rows, offers.id_prefixes, known)
    shape, cols, header = _layout(rows, is_jsonl, known, format, name, delim)
    counts = {
        "rows": len(rows) - header,
        "header": int(header),
        "unknown_id": 0,
        "bad_rows": 0,
        "self_pairs": 0,
        "repeated": 0,
    }
    if by_file is not None:
        counts["ids_by_file"] = by_file
    width = {"pairs": 2, "entities": 2, "labelled_pairs": 3}[shape]

    def bad(msg: str | Callable[[], str], line: int, reason: str, key: str) -> None:
        if on_error == "fail":
            raise InputError(msg() if callable(msg) else msg, path=name, line=line, reason=reason)
        counts[key] += 1

    def rid(v: object, line: int) -> int | None:
        r = row_of.get(str(v)) if not isinstance(v, (dict, list, type(None))) else None
        if r is None:  # the hint reads every offer id: only for the error that stops the run
            bad(
                lambda: (
                    f"unknown id {str(v)!r} (not among the {len(offers):,} offers loaded)"
                    f"{_qualified_hint(str(v), offers.ids)}"
                ),
                line,
                "unknown_id",
                "unknown_id",
            )
        return r

    items: list[tuple[int, list]] = []
    for line, cells in rows[header:]:
        if is_jsonl and len(cells) == 1 and isinstance(cells[0], dict):
            got = _json_cells(cells[0], shape)
            if got is None:
                keys = " and ".join(n[0] for n in _JSON_KEYS[shape])
                bad(f"expected the keys {keys} (a truth of {shape})", line, "bad_pair", "bad_rows")
                continue
        elif len(cells) != width:
            bad(
                f"expected {width} fields (a truth of {shape}), got {len(cells)}",
                line,
                "bad_pair",
                "bad_rows",
            )
            continue
        else:
            got = [cells[j] for j in (cols or range(width))]  # lists in an object file
        items.append((line, got))

    if shape == "entities":
        return _entities(items, offers, rid, bad, counts, name)
    pairs: dict[tuple[int, int], tuple[bool, int]] = {}
    for line, cells in items:
        lab = True
        if shape == "labelled_pairs":
            lab = _label(cells[2])
            if lab is None:
                bad(
                    f"the label {cells[2]!r} is not 1 or 0 (true/false, yes/no)",
                    line,
                    "bad_label",
                    "bad_rows",
                )
                continue
        a = rid(cells[0], line)
        if a is None:
            continue
        b = rid(cells[1], line)
        if b is None:
            continue
        if a == b:
            counts["self_pairs"] += 1
            continue
        key = (min(a, b), max(a, b))
        if key in pairs:
            lab0, line0 = pairs[key]
            if lab0 != lab:
                raise InputError(
                    f"the pair {offers.ids[key[0]]!r}, {offers.ids[key[1]]!r} is "
                    f"labelled {int(lab)} here and {int(lab0)} at line {line0}",
                    path=name,
                    line=line,
                    reason="conflicting_truth",
                )
            counts["repeated"] += 1
            continue
        pairs[key] = (lab, line)
    n = len(offers)
    if shape == "pairs":
        from ..cluster import connected_components

        pl = np.array([k[0] for k in pairs], np.int64)
        pr = np.array([k[1] for k in pairs], np.int64)
        reps = connected_components(n, pl, pr)
        t = Truth(n, shape, np.ones(n, bool), entity=reps, counts=counts, path=name)
        counts["listed_pairs"] = len(pairs)
        counts["closure_pairs"] = len(t.positives()[0]) - len(pairs)
        return t
    k = np.array([a * n + b for a, b in pairs], np.int64)
    m = np.array([lab for lab, _ in pairs.values()], bool)
    o = np.argsort(k, kind="stable")
    lab_rows = np.zeros(n, bool)
    lab_rows[k // n] = True
    lab_rows[k % n] = True
    return Truth(n, shape, lab_rows, keys=k[o], match=m[o], counts=counts, path=name)


def _entities(items, offers: Offers, rid, bad, counts: dict, name: str) -> Truth:
    """The truth of ``(line, [entity, id])`` rows. An id given several entities joins them
    into one (the union of their pairs), counted in ``ids_in_several_entities`` and
    ``entities_merged``."""
    codes: dict[str, int] = {}
    ent_of: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    parent: list[int] = []

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    several: set[int] = set()
    for line, (e, v) in items:
        if e is None or str(e).strip() == "":
            bad("the entity is missing", line, "bad_pair", "bad_rows")
            continue
        r = rid(v, line)
        if r is None:
            continue
        c = codes.setdefault(str(e), len(codes))
        if c == len(parent):
            parent.append(c)
        if (r, c) in seen:
            counts["repeated"] += 1
            continue
        seen.add((r, c))
        if r in ent_of:
            several.add(r)
            x, y = find(ent_of[r]), find(c)
            if x != y:
                parent[max(x, y)] = min(x, y)
        else:
            ent_of[r] = c
    ent = np.full(len(offers), -1, np.int64)
    for r, c in ent_of.items():
        ent[r] = find(c)
    counts["ids_in_several_entities"] = len(several)
    counts["entities_merged"] = len(codes) - len({find(c) for c in range(len(codes))})
    return Truth(len(offers), "entities", ent >= 0, entity=ent, counts=counts, path=name)


def check_truth(truth: Truth, offers: Offers) -> None:
    """A :class:`ConfigError` where ``truth`` was read against other offers."""
    if truth.n != len(offers):
        raise ConfigError(f"the truth is over {truth.n:,} offers, the data has {len(offers):,}")
