"""Ground truth from files: the one reader of every truth file, for the product matcher's
evaluations (:func:`load_truth`, :func:`truth_pairs`) and for clusters (:func:`read_reference`).
The files are read through :mod:`neardup.io.files`.

The truth of product offers, read against the loaded offers' ids, comes in the shapes
benchmarks use.

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
:func:`truth_pairs` reads matching id pairs only (CSV or JSONL) into sorted row pairs.
:func:`read_reference` reads the reference duplicates of a clustering: rows naming two
duplicate documents or a cluster label per document (UTF-8 JSONL or CSV with a header).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..cluster import connected_components
from ..errors import InputError, SkipReason
from ..io.files import (
    LineDecoder,
    check_sep,
    csv_records,
    csv_rows,
    decoded_text,
    is_jsonl_name,
    jsonl_objects,
    jsonl_records,
    read_bytes,
    read_text,
    sniff_sep,
)
from ..validate import check_choice
from .known import Truth

ON_ERROR = ("fail", "skip")
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
    are bare ids: how to write them (:func:`qualified_hint`)."""
    bare = {i.rsplit("/", 1)[1] for i in known if "/" in i}
    cell = next((c for r in sample for c in r if c in bare), None)
    if cell is None:
        return ""
    return f": they hold bare ids such as {cell!r}{qualified_hint(cell, known)}"


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
    ids: Sequence[str],
    *,
    id_prefixes: Sequence[str] = (),
    on_error: str = "fail",
    sep: str | None = None,
    format: str = "auto",
) -> Truth:
    """Read a truth file of any shape (module docstring) against the loaded offers' ``ids``
    (``id_prefixes``: the names put before them, one per input file, where they carry their
    file's name).

    ``counts`` of the returned :class:`Truth`: ``rows`` read, ``header`` (0 or 1),
    ``unknown_id`` (rows left out with ``on_error="skip"``), ``bad_rows`` (ditto: a missing
    cell or a label that is not 0/1), ``self_pairs``, ``repeated``, and for pairs
    ``listed_pairs`` and ``closure_pairs`` (matching pairs implied by the listed ones through
    shared offers)."""
    check_choice("on_error", on_error, ON_ERROR)
    check_choice("format", format, TRUTH_FORMATS)
    check_sep(sep)
    name = os.fspath(path)
    rows, is_jsonl, delim = truth_rows(name, sep)
    if not rows:
        raise InputError("empty truth file", path=name, reason="empty", whole_file=True)
    row_of = {rid: i for i, rid in enumerate(ids)}
    known = set(row_of)
    by_file = None
    if format in ("auto", "pairs", "labelled_pairs"):  # CSV rows, or JSONL lists
        rows, by_file = _ids_by_file(rows, id_prefixes, known)
    shape, cols, header = _layout(rows, is_jsonl, known, format, name, delim)
    counts: dict[str, Any] = {
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
                    f"unknown id {str(v)!r} (not among the {len(ids):,} offers loaded)"
                    f"{qualified_hint(str(v), ids)}"
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
        return _entities(items, len(ids), rid, bad, counts, name)
    pairs: dict[tuple[int, int], tuple[bool, int]] = {}
    for line, cells in items:
        lab = True
        if shape == "labelled_pairs":
            given = _label(cells[2])
            if given is None:
                bad(
                    f"the label {cells[2]!r} is not 1 or 0 (true/false, yes/no)",
                    line,
                    "bad_label",
                    "bad_rows",
                )
                continue
            lab = given
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
                    f"the pair {ids[key[0]]!r}, {ids[key[1]]!r} is "
                    f"labelled {int(lab)} here and {int(lab0)} at line {line0}",
                    path=name,
                    line=line,
                    reason="conflicting_truth",
                )
            counts["repeated"] += 1
            continue
        pairs[key] = (lab, line)
    n = len(ids)
    if shape == "pairs":
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


def _entities(items, n: int, rid, bad, counts: dict, name: str) -> Truth:
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
    ent = np.full(n, -1, np.int64)
    for r, c in ent_of.items():
        ent[r] = find(c)
    counts["ids_in_several_entities"] = len(several)
    counts["entities_merged"] = len(codes) - len({find(c) for c in range(len(codes))})
    return Truth(n, "entities", ent >= 0, entity=ent, counts=counts, path=name)


def truth_rows(name: str, sep: str | None) -> tuple[list[tuple[int, list]], bool, str]:
    """Rows ``(line, cells)`` of a truth file, whether it is JSONL (cells of a JSON object:
    ``[dict]``), and the separator used."""
    raw = read_bytes(name)
    dec = LineDecoder("auto", name)
    rows: list[tuple[int, list]] = []
    if is_jsonl_name(name):
        for i, rec in jsonl_records(raw, dec, name):
            if isinstance(rec, InputError):
                raise rec from rec.__context__
            if isinstance(rec, dict):
                rows.append((i, [rec]))
            elif isinstance(rec, list):
                rows.append((i, rec))
            else:
                raise InputError(
                    f"expected an object or a list, got {type(rec).__name__}",
                    path=name,
                    line=i,
                    reason="bad_pair",
                )
        return rows, True, ""
    text = decoded_text(raw, dec)
    delim = sep or sniff_sep(text, name)
    for line, row in csv_rows(text, delim, name):
        if isinstance(row, InputError):
            raise row from row.__context__
        if row and row != [""]:
            rows.append((line, row))
    return rows, False, delim


def qualified_hint(v: str, ids: Iterable[str]) -> str:
    """Where offers' ids (``ids``) carry their file's name (``--qualify-ids``) and the truth
    names a bare id: how to write it."""
    if "/" in v:
        return ""
    like = sorted(i for i in ids if i.endswith("/" + v))[:3]
    if not like:
        return ""
    return (
        f"; the offers' ids carry their file's name (--qualify-ids): write it as FILE/ID, "
        f"such as {' or '.join(map(repr, like))}"
    )


def truth_pairs(
    path: str | os.PathLike, ids: Sequence[str], *, on_error: str = "fail", sep: str | None = None
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Matching id pairs from a CSV file (two columns; a first row in which neither value is a
    known id is a header) or JSONL (``{"a": id, "b": id}`` objects or two-element lists),
    against the loaded offers' ``ids``.

    Returns ``left, right`` (``int64`` rows of the offers, ``left < right``, sorted, distinct)
    and counts of what was left out: ``self_pairs`` (an id paired with itself), ``repeated``
    and, with ``on_error="skip"``, ``unknown_id``. An unknown id is otherwise an
    :class:`InputError` naming the file, line and id."""
    check_choice("on_error", on_error, ON_ERROR)
    check_sep(sep)

    name = os.fspath(path)
    row_of = {rid: i for i, rid in enumerate(ids)}
    rows, is_jsonl, delim = truth_rows(name, sep)
    pairs: list[tuple[int, object, object]] = []
    for k, (line, cells) in enumerate(rows):
        if is_jsonl:
            rec = cells[0] if len(cells) == 1 and isinstance(cells[0], Mapping) else cells
            if isinstance(rec, Mapping) and "a" in rec and "b" in rec:
                pairs.append((line, rec["a"], rec["b"]))
            elif isinstance(rec, list) and len(rec) == 2:
                pairs.append((line, rec[0], rec[1]))
            else:
                raise InputError(
                    'expected {"a": id, "b": id} or [id, id]',
                    path=name,
                    line=line,
                    reason="bad_pair",
                )
            continue
        if len(cells) != 2:
            raise InputError(
                f"expected two ids, got {len(cells)} fields (read with the "
                f"separator {delim!r}: give another with sep= / --sep)",
                path=name,
                line=line,
                reason="bad_pair",
            )
        if k == 0 and cells[0] not in row_of and cells[1] not in row_of:
            continue  # a header row: neither value is a known id
        pairs.append((line, cells[0], cells[1]))
    counts = {"self_pairs": 0, "repeated": 0, "unknown_id": 0}
    seen: set[tuple[int, int]] = set()
    for line, x, y in pairs:
        got = []
        for v in (x, y):
            r = row_of.get(str(v))
            if r is None:
                if on_error == "fail":
                    raise InputError(
                        f"unknown id {str(v)!r} (not among the {len(ids):,} "
                        f"offers loaded){qualified_hint(str(v), ids)}",
                        path=name,
                        line=line,
                        reason="unknown_id",
                    )
                break
            got.append(r)
        if len(got) < 2:
            counts["unknown_id"] += 1
            continue
        a, b = min(got), max(got)
        if a == b:
            counts["self_pairs"] += 1
        elif (a, b) in seen:
            counts["repeated"] += 1
        else:
            seen.add((a, b))
    ordered = sorted(seen)
    left = np.array([p[0] for p in ordered], np.int64)
    right = np.array([p[1] for p in ordered], np.int64)
    return left, right, counts


# column pairs that name two duplicate documents, in the order they are looked for
_PAIR_FIELDS = (
    ("id_a", "id_b"),
    ("a", "b"),
    ("left", "right"),
    ("id", "source_id"),
    ("id", "source"),
    ("id", "duplicate_of"),
)


def pairs_of_groups(labels: Sequence[Any]) -> set[tuple[int, int]]:
    """Every pair of rows with the same label (``None`` labels pair with nothing)."""
    groups: dict[Any, list[int]] = {}
    for i, g in enumerate(labels):
        if g is not None:
            groups.setdefault(g, []).append(i)
    return {(a, b) for rows in groups.values() for a, b in itertools.combinations(rows, 2)}


def read_reference(
    path: str | Path, ids: Sequence[str], closure: bool = True
) -> tuple[set[tuple[int, int]], dict[str, int]]:
    """Reference duplicates from a JSONL or CSV file: rows naming two duplicate documents
    (``id_a,id_b``, ``a,b``, ``left,right`` or ``id,source_id``) or a cluster label per document
    (``id,cluster``). Returns row pairs ``(a, b)``, ``a < b``, and counts of rows naming unknown
    ids (skipped and counted). With ``closure`` (default) documents linked through others are
    duplicates too (all pairs within each connected group), as copies of one source are."""
    path = Path(path)
    text = read_text(path)
    rows: list[tuple[int, dict]]
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        rows = jsonl_objects(text, str(path))
    else:
        rows = csv_records(text)
    if not rows:
        raise InputError("no reference rows", path=str(path), reason=SkipReason.EMPTY_FILE)
    keys = set(rows[0][1])
    row_of = {x: i for i, x in enumerate(ids)}
    counts = {"rows": len(rows), "unknown_id": 0}
    if "cluster" in keys and "id" in keys:
        labels: list[Any] = [None] * len(ids)
        for _, r in rows:
            doc = row_of.get(str(r.get("id")))
            if doc is None:
                counts["unknown_id"] += 1
                continue
            labels[doc] = str(r.get("cluster"))
        return pairs_of_groups(labels), counts
    fields = next((f for f in _PAIR_FIELDS if f[0] in keys and f[1] in keys), None)
    if fields is None:
        raise InputError(
            f"columns {sorted(keys)} name no pair of documents: use id_a,id_b "
            "(or a,b / left,right / id,source_id) or id,cluster",
            path=str(path),
            line=rows[0][0],
            reason=SkipReason.MISSING_FIELD,
        )
    links = []
    for _, r in rows:
        a, b = row_of.get(str(r.get(fields[0]))), row_of.get(str(r.get(fields[1])))
        if a is None or b is None:
            counts["unknown_id"] += 1
            continue
        if a != b:
            links.append((min(a, b), max(a, b)))
    if not closure:
        return set(links), counts
    left = np.fromiter((a for a, _ in links), np.int64, len(links))
    right = np.fromiter((b for _, b in links), np.int64, len(links))
    return pairs_of_groups(connected_components(len(ids), left, right).tolist()), counts
