"""Loading offers from JSON, JSONL or CSV files (one per shop or all in one), and ground truth.

:func:`load_offers` reads every file into one :class:`.offers.Offers`:

- JSON: a list of offer objects, or the TV data's format (an object ``modelID -> [offers]``,
  detected from its shape; its modelIDs are returned as the truth);
- JSONL: one offer object per line;
- CSV/TSV: a header row; the separator is ``sep``, else found from the header line (one of
  ``, ; TAB | #``; ``.tsv``: TAB); the attribute columns are ``attribute_columns`` or every
  column that is not the id, title, description, shop or truth column; empty cells are left
  out.

- pages: a folder, or a ``.tar``/``.tar.gz``/``.tgz`` archive, of one JSON object per page,
  ``<source>/<n>.json`` (the Alaska benchmark's shape): the shop is the page's folder and the
  id ``<source>//<n>`` (what truth files of such data name); a page's own key named like the id
  or shop field is one of its attributes (as ``"page <key>"``); the title is the
  ``title_field`` (``"<page title>"`` where the object has no ``"title"``), and every other key
  an attribute (a page's keys are its shop's own).

The attributes of a JSON record are its nested ``attributes_field`` map (``"attributes"``, or
the TV data's ``"featuresMap"``) where it has one; a flat record's attributes are its other
top-level fields (every field that is not the id, title, description, shop or truth), strings
and numbers as they are and lists of them joined with ``", "``; nulls and empty values are left
out.

Each offer needs a non-empty string title. The id is the ``id_field`` (default ``"id"``), else
``"<file stem>:<line>"``; the shop is the ``shop_field``, else the file's stem (one file per
shop needs no shop column). Attribute values must be strings or numbers. The truth column, if
named, is returned apart and never kept among the attributes.

Encodings: ``"auto"`` decodes each line as UTF-8 and, where that fails, as latin-1 (catalogues
mix them), counting such lines in ``Offers.decoded_latin1``; any other codec name is used
strictly. Errors name the file, the line (or record) and the field; with ``on_error="skip"``
bad records are counted by reason in ``Offers.skipped`` instead.

:func:`load_truth_pairs` reads matching id pairs (CSV or JSONL); :func:`labels_from_pairs` turns
them into one label per offer (connected components), so both kinds of truth evaluate alike.
:func:`.truth.load_truth` reads every shape of truth file (matching pairs, entity ids, labelled
pairs) into a :class:`.truth.Truth` that may be partial.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import orjson

from ..errors import ConfigError, InputError
from ..evaluate.truth import truth_pairs
from ..io.files import (
    LineDecoder,
    check_sep,
    csv_rows,
    decoded_text,
    jsonl_records,
    parse_json,
    read_bytes,
    sniff_sep,
)
from ..io.pages import is_pages, pages
from ..validate import check_choice
from .offers import ON_ERROR, Offers, load_tv_json

FORMATS = ("auto", "json", "jsonl", "csv", "tv", "pages")

#: field roles beyond id, title, description and shop -> the attribute name an offer's value
#: is read as (names the matcher recognises: a ``brand`` attribute is the offer's brand, an
#: attribute whose name holds ``model`` states its model number)
ROLE_ATTRIBUTES = {
    "brand": "brand",
    "model": "model number",
    "price": "price",
    "category": "category",
}


def _check_roles(roles: Mapping[str, str] | None) -> dict[str, str]:
    out = {}
    for role, name in (roles or {}).items():
        if role not in ROLE_ATTRIBUTES:
            raise ConfigError(
                f"unknown field role {role!r}: expected one of {', '.join(ROLE_ATTRIBUTES)}"
            )
        if not isinstance(name, str) or not name:
            raise ConfigError(f"the field of role {role!r} must be a non-empty name, not {name!r}")
        out[role] = name
    return out


def _stem(path: str) -> str:
    name = Path(path).name
    for ext in (".gz", ".jsonl", ".ndjson", ".json", ".csv", ".tsv"):
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
    return name


def _detect(path: str, raw: bytes) -> str:
    low = path.lower().removesuffix(".gz")
    if low.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if low.endswith((".csv", ".tsv")):
        return "csv"
    if low.endswith(".json"):
        head = raw.lstrip()[:1]
        return "tv" if head == b"{" else "json"
    raise InputError(
        "cannot tell the format from the file name: use .json, .jsonl, .csv or .tsv "
        "(optionally .gz) or pass format=",
        path=path,
        reason="unknown_format",
    )


def _value(v: object, where: str, path: str, line: int | None, field: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise InputError(
            f"{where}expected a string or a number, got "
            f"{'null' if v is None else type(v).__name__}",
            path=path,
            line=line,
            field=field,
            reason="bad_attribute_value",
        )
    return v if isinstance(v, str) else repr(v)


class _Builder:
    """Adds checked records to the offers, applying the id and error rules."""

    def __init__(self, a: dict, offers: Offers, labels: list[str | None]):
        self.a = a
        self.offers = offers
        self.labels = labels
        self.seen: dict[str, str] = {}

    def fail_or_skip(self, err: InputError) -> None:
        if self.a["on_error"] == "fail":
            raise err
        self.offers.skipped.add(err)

    def add(self, rec: object, path: str, line: int | None, where: str, attrs_from=None) -> None:
        a = self.a
        loc = f"{path}:{line}" if line is not None else f"{path}:{where}"
        pre = "" if line is not None else f"{where}: "
        try:
            if not isinstance(rec, Mapping):
                raise InputError(
                    f"{pre}expected an object, got {type(rec).__name__}",
                    path=path,
                    line=line,
                    reason="not_object",
                )
            title = rec.get(a["title_field"])
            if not isinstance(title, str) or not title.strip():
                got = (
                    "missing"
                    if title is None
                    else ("empty" if isinstance(title, str) else f"a {type(title).__name__}")
                )
                raise InputError(
                    f"{pre}expected a non-empty string, got {got}",
                    path=path,
                    line=line,
                    field=a["title_field"],
                    reason="bad_title",
                )
            rid = rec.get(a["id_field"])
            if rid is None or rid == "":
                rid = f"{_stem(path)}:{line if line is not None else where}"
            elif isinstance(rid, bool) or not isinstance(rid, (str, int)):
                raise InputError(
                    f"{pre}expected a string or an integer, got {type(rid).__name__}",
                    path=path,
                    line=line,
                    field=a["id_field"],
                    reason="bad_id",
                )
            rid = str(rid)
            if a["qualify_ids"]:
                rid = f"{_stem(path)}/{rid}"
            shop = rec.get(a["shop_field"])
            if shop is None or shop == "":
                shop = _stem(path)
            shop = _value(shop, pre, path, line, a["shop_field"])
            desc = rec.get(a["description_field"])
            desc = "" if desc is None else _value(desc, pre, path, line, a["description_field"])
            attrs = (
                attrs_from(rec)
                if attrs_from is not None
                else self._json_attrs(rec, pre, path, line)
            )
            for role, name in a["roles"].items():
                # a field given a role: its value under the role's attribute name, which the
                # matcher reads (a brand, a model number), wherever the record holds it
                value = _flat_value(rec[name]) if name in rec else attrs.get(name)
                attrs.pop(name, None)
                if value:
                    attrs[ROLE_ATTRIBUTES[role]] = value
            label = None
            if a["truth_field"] is not None:
                label = rec.get(a["truth_field"])
                if label is None or label == "":
                    raise InputError(
                        f"{pre}the truth is missing",
                        path=path,
                        line=line,
                        field=a["truth_field"],
                        reason="missing_truth",
                    )
                label = _value(label, pre, path, line, a["truth_field"])
            if rid in self.seen:
                hint = (
                    ""
                    if a["qualify_ids"]
                    else " (pass qualify_ids=True / --qualify-ids "
                    "to prefix ids with their file's name)"
                )
                raise InputError(
                    f"{pre}id {rid!r} repeats {self.seen[rid]}{hint}",
                    path=path,
                    line=line,
                    field=a["id_field"],
                    reason="duplicate_id",
                )
        except InputError as err:
            self.fail_or_skip(err)
            return
        self.seen[rid] = loc
        o = self.offers
        o.ids.append(rid)
        o.shops.append(shop)
        o.titles.append(title)
        o.descriptions.append(desc)
        o.attributes.append(attrs)
        o.sources.append(loc)
        self.labels.append(label)

    def _json_attrs(self, rec: Mapping, pre: str, path: str, line: int | None) -> dict:
        field = self.a["attributes_field"]
        m = rec.get(field)
        if m is None and field == "attributes":
            field, m = "featuresMap", rec.get("featuresMap")
        if m is None:
            return self._flat_attrs(rec)
        a = self.a
        used = {
            a["id_field"],
            a["title_field"],
            a["description_field"],
            a["shop_field"],
            a["truth_field"],
            field,
            *a["roles"].values(),
        }
        unused = self.offers.unused_fields
        for k in rec:
            if k not in used:
                unused[str(k)] = unused.get(str(k), 0) + 1
        if not isinstance(m, Mapping):
            raise InputError(
                f"{pre}expected an object, got {type(m).__name__}",
                path=path,
                line=line,
                field=field,
                reason="bad_attributes",
            )
        truth = self.a["truth_field"]
        return {
            str(k): _value(v, pre, path, line, f"{field}.{k}") for k, v in m.items() if k != truth
        }

    def _flat_attrs(self, rec: Mapping, all_fields: bool = False) -> dict:
        """The other top-level fields of a flat record (module docstring); with
        ``all_fields`` a field named like ``attributes_field`` is one of them too (pages)."""
        a = self.a
        used = {
            a["id_field"],
            a["title_field"],
            a["description_field"],
            a["shop_field"],
            a["truth_field"],
        } | (set() if all_fields else {a["attributes_field"]})
        out = {}
        for k, v in rec.items():
            if k in used:
                continue
            got = _flat_value(v)
            if got is not None:
                out[str(k)] = got
        return out


def _flat_value(v: object) -> str | None:
    """A flat record's field as an attribute value: strings and numbers as they are, a list of
    them joined with ", "; ``None`` for what is not a value (null, empty, an object)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v if v.strip() else None
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        parts = [_flat_value(x) for x in v if not isinstance(x, (list, dict))]
        got = ", ".join(p for p in parts if p)
        return got or None
    return None


def load_offers(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    format: str = "auto",
    id_field: str = "id",
    title_field: str = "title",
    description_field: str = "description",
    shop_field: str = "shop",
    attributes_field: str = "attributes",
    attribute_columns: Sequence[str] | None = None,
    truth_field: str | None = None,
    encoding: str = "auto",
    on_error: str = "fail",
    qualify_ids: bool = False,
    sep: str | None = None,
    roles: Mapping[str, str] | None = None,
) -> tuple[Offers, list[str] | None]:
    """Load offers from one file or several (module docstring). Returns the offers and the
    truth labels (one per offer; ``None`` without ``truth_field``, except for the TV format,
    whose modelIDs are always returned). ``roles``: fields (columns) that hold an offer's
    ``brand``, ``model`` number, ``price`` or ``category`` (:data:`ROLE_ATTRIBUTES`), read as
    the attribute the matcher looks for (the brand of a ``maker`` column, the model number of
    an ``mpn`` field) wherever the record holds them: at its top level or in its attribute
    map."""
    check_choice("on_error", on_error, ON_ERROR)
    check_choice("format", format, FORMATS)
    check_sep(sep)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise ConfigError("no input files")
    a = {
        "id_field": id_field,
        "title_field": title_field,
        "description_field": description_field,
        "shop_field": shop_field,
        "attributes_field": attributes_field,
        "truth_field": truth_field,
        "on_error": on_error,
        "qualify_ids": qualify_ids,
        "sep": sep,
        "roles": _check_roles(roles),
    }
    offers = Offers()
    if qualify_ids:
        offers.id_prefixes = list(dict.fromkeys(_stem(os.fspath(p)) for p in paths))
    labels: list[str | None] = []
    b = _Builder(a, offers, labels)
    tv_files = []
    for p in paths:
        path = os.fspath(p)
        if format in ("auto", "pages") and is_pages(path):
            offers.formats.add("pages")
            _add_pages(path, b)
            continue
        raw = read_bytes(path)
        fmt = _detect(path, raw) if format == "auto" else format
        offers.formats.add(fmt)
        dec = LineDecoder(encoding, path)
        if fmt == "tv":
            _add_tv(path, encoding, b)
            tv_files.append(path)
        elif fmt == "jsonl":
            for i, rec in jsonl_records(raw, dec, path):
                if isinstance(rec, InputError):
                    b.fail_or_skip(rec)
                    continue
                b.add(rec, path, i, f"line {i}")
        elif fmt == "json":
            data = parse_json(dec.whole(raw), path)
            if not isinstance(data, list):
                raise InputError(
                    f"expected a list of offers, got {type(data).__name__}",
                    path=path,
                    reason="not_list",
                )
            for k, rec in enumerate(data):
                b.add(rec, path, None, f"record {k}")
        else:
            _add_csv(raw, path, dec, b, attribute_columns)
        offers.decoded_latin1 += dec.latin1
    if len(offers) == 0:
        raise InputError(
            "no usable offers", path=", ".join(os.fspath(p) for p in paths), reason="empty"
        )
    if truth_field is None and not tv_files:
        return offers, None
    if any(lab is None for lab in labels):
        first = offers.sources[next(i for i, lab in enumerate(labels) if lab is None)]
        raise InputError(
            f"no truth for the offer at {first}: the TV format brings its "
            "modelIDs, other files need --truth COLUMN",
            path=first.rsplit(":", 1)[0],
            reason="missing_truth",
        )
    return offers, [str(lab) for lab in labels]


def _add_pages(path: str, b: _Builder) -> None:
    """Add the pages of a folder or archive (module docstring)."""
    a = b.a
    for source, n, raw in pages(path, _stem):
        where = f"{source}/{n}.json"
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            b.fail_or_skip(
                InputError(f"{where}: malformed JSON: {e}", path=path, reason="malformed_json")
            )
            continue
        if isinstance(rec, dict):
            rec = dict(rec)
            if a["title_field"] == "title" and "title" not in rec and "<page title>" in rec:
                rec["title"] = rec.pop("<page title>")
            # the page's place names it: a key of the page called like the id or shop field
            # (a shop's own "shop" attribute) stays an attribute
            for key, value in ((a["id_field"], f"{source}//{n}"), (a["shop_field"], source)):
                if key in rec:
                    rec[f"page {key}"] = rec.pop(key)
                rec[key] = value
            for f in (a["title_field"], "title", a["description_field"]):
                if isinstance(rec.get(f), list):  # a page's value may be a list of strings
                    rec[f] = _flat_value(rec[f]) or ""
        b.add(rec, path, None, where, attrs_from=lambda r: b._flat_attrs(r, all_fields=True))


def _add_tv(path: str, encoding: str, b: _Builder) -> None:
    enc = "utf-8" if encoding == "auto" else encoding
    try:
        tv, tv_labels = load_tv_json(path, on_error=b.a["on_error"], encoding=enc)
    except InputError as e:
        if encoding != "auto" or e.reason != "undecodable":
            raise
        tv, tv_labels = load_tv_json(path, on_error=b.a["on_error"], encoding="latin-1")
        b.offers.decoded_latin1 += 1
    o = b.offers
    for k in range(len(tv)):
        rid = f"{_stem(path)}/{tv.ids[k]}" if b.a["qualify_ids"] else tv.ids[k]
        if rid in b.seen:
            b.fail_or_skip(
                InputError(
                    f"id {rid!r} ({tv.sources[k]}) repeats {b.seen[rid]} "
                    "(pass qualify_ids=True / --qualify-ids)",
                    path=path,
                    reason="duplicate_id",
                )
            )
            continue
        b.seen[rid] = tv.sources[k]
        o.ids.append(rid)
        o.shops.append(tv.shops[k])
        o.titles.append(tv.titles[k])
        o.descriptions.append("")
        o.attributes.append(tv.attributes[k])
        o.sources.append(tv.sources[k])
        b.labels.append(tv_labels[k])
    for reason, count in tv.skipped.counts.items():
        o.skipped.counts[reason] = o.skipped.counts.get(reason, 0) + count
    o.skipped.examples.extend(tv.skipped.examples[: max(0, 10 - len(o.skipped.examples))])


def _add_csv(
    raw: bytes, path: str, dec: LineDecoder, b: _Builder, attribute_columns: Sequence[str] | None
) -> None:
    a = b.a
    text = decoded_text(raw, dec)
    sep = a["sep"] or sniff_sep(text, path)
    rows = csv_rows(text, sep, path)
    first = next(rows, None)
    if first is None:
        raise InputError("empty CSV file (no header row)", path=path, reason="empty")
    header = first[1]
    if isinstance(header, InputError):
        raise InputError(header.detail, path=path, line=1, reason="malformed_csv") from (
            header.__context__
        )
    if a["title_field"] not in header:
        raise InputError(
            f"no column {a['title_field']!r} (columns: {', '.join(header)}; "
            f"read with the separator {sep!r}: give another with sep= / --sep)",
            path=path,
            line=1,
            reason="no_title_column",
        )
    used = {
        a["id_field"],
        a["title_field"],
        a["description_field"],
        a["shop_field"],
        a["truth_field"],
        *a["roles"].values(),
    }
    if attribute_columns is not None:
        missing = [c for c in attribute_columns if c not in header]
        if missing:
            raise InputError(
                f"no column(s) {', '.join(map(repr, missing))}",
                path=path,
                line=1,
                reason="no_attribute_column",
            )
        acols = [c for c in attribute_columns if c != a["truth_field"]]
    else:
        acols = [c for c in header if c not in used]
    left_out = [c for c in header if c not in used and c not in acols]
    missing = [f"{name!r} ({role})" for role, name in a["roles"].items() if name not in header]
    if missing:
        raise InputError(
            f"no column {', '.join(missing)} (columns: {', '.join(header)})",
            path=path,
            line=1,
            reason="no_role_column",
        )
    for line, row in rows:
        if isinstance(row, InputError):
            b.fail_or_skip(row)
            continue
        if not row or row == [""]:
            continue
        if len(row) != len(header):
            b.fail_or_skip(
                InputError(
                    f"{len(row)} fields where the header has {len(header)}",
                    path=path,
                    line=line,
                    reason="bad_row",
                )
            )
            continue
        rec = dict(zip(header, row))
        for c in left_out:
            if rec.get(c, "") != "":
                b.offers.unused_fields[c] = b.offers.unused_fields.get(c, 0) + 1
        b.add(
            rec,
            path,
            line,
            f"row {line}",
            attrs_from=lambda r: {c: r[c] for c in acols if r.get(c, "") != ""},
        )


def load_truth_pairs(
    path: str | os.PathLike, offers: Offers, *, on_error: str = "fail", sep: str | None = None
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Matching id pairs from a CSV file (two columns; a first row in which neither value is a
    known id is a header) or JSONL (``{"a": id, "b": id}`` objects or two-element lists), read
    by :func:`neardup.evaluate.truth.truth_pairs` against the ``offers``' ids.

    Returns ``left, right`` (``int64`` rows of ``offers``, ``left < right``, sorted, distinct)
    and counts of what was left out: ``self_pairs`` (an id paired with itself), ``repeated``
    and, with ``on_error="skip"``, ``unknown_id``. An unknown id is otherwise an
    :class:`InputError` naming the file, line and id."""
    return truth_pairs(path, offers.ids, on_error=on_error, sep=sep)


def labels_from_pairs(n: int, left: np.ndarray, right: np.ndarray) -> list[str]:
    """One label per row: rows joined by a pair (directly or through others) share one, named
    after the group's first row."""
    from ..cluster import connected_components

    reps = connected_components(n, np.asarray(left, np.int64), np.asarray(right, np.int64))
    return [f"c{r}" for r in reps.tolist()]
