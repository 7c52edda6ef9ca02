"""Product offers as columns, and the loader of the TV data format
(``TVs-all-merged.json``: an object ``modelID -> [offers]``).

:class:`Offers` holds what a matcher may use: id, shop, title, attributes (and the source of
each offer, for messages). Ground truth never lives in it: loaders return the truth labels as a
separate list, so no feature can read them by accident.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import field

from .._records import record
from ..errors import InputError
from ..io.files import decode_strictly, parse_json, read_bytes
from ..io.readers import SkipReport
from ..validate import check_choice

ON_ERROR = ("fail", "skip")


@record
class Offers:
    """``n`` offers: ``ids[i]`` (unique strings), ``shops[i]``, ``titles[i]`` (non-empty),
    ``attributes[i]`` (attribute name -> string value, possibly empty) and ``sources[i]``
    (``"file:where"`` for messages), ``descriptions[i]`` (``""`` when none).
    ``skipped`` counts what the loader left out, by reason; ``decoded_latin1`` the lines (or
    whole JSON files) that were not UTF-8 and were read as latin-1; ``formats`` the formats
    read; ``unused_fields`` the fields or columns left unread (beside a nested attribute map,
    or CSV columns outside ``attribute_columns``), with how many records had each."""

    ids: list[str] = field(default_factory=list)
    shops: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    attributes: list[dict[str, str]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    skipped: SkipReport = field(default_factory=SkipReport)
    descriptions: list[str] = field(default_factory=list)
    decoded_latin1: int = 0
    #: the formats the offers were read from ("tv", "json", "jsonl", "csv")
    formats: set[str] = field(default_factory=set)
    #: fields (columns) of the records that nothing read -> how many records had them
    unused_fields: dict[str, int] = field(default_factory=dict)
    #: with ids qualified by their file (``qualify_ids``): the names put before the ids
    #: (``NAME/ID``), one per input file, in the order the files were given
    id_prefixes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[tuple[str, str, str, dict[str, str]]]:
        return iter(zip(self.ids, self.shops, self.titles, self.attributes))


def _check_offer(raw: object, where: str, path: str) -> tuple[str, str, dict[str, str]]:
    """(shop, title, attributes) of one raw offer, or an :class:`InputError` naming the field."""
    if not isinstance(raw, Mapping):
        raise InputError(
            f"{where}: expected an object, got {type(raw).__name__}", path=path, reason="not_object"
        )
    title = raw.get("title")
    if not isinstance(title, str) or not title.strip():
        got = (
            "missing"
            if title is None
            else ("empty" if isinstance(title, str) else f"a {type(title).__name__}")
        )
        raise InputError(
            f"{where}: field 'title': expected a non-empty string, got {got}",
            path=path,
            reason="bad_title",
        )
    shop = raw.get("shop", "")
    if not isinstance(shop, str):
        raise InputError(
            f"{where}: field 'shop': expected a string, got {type(shop).__name__}",
            path=path,
            reason="bad_shop",
        )
    feats = raw.get("featuresMap", {})
    if feats is None:
        feats = {}
    if not isinstance(feats, Mapping):
        raise InputError(
            f"{where}: field 'featuresMap': expected an object, got {type(feats).__name__}",
            path=path,
            reason="bad_attributes",
        )
    attrs: dict[str, str] = {}
    for k, v in feats.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise InputError(
                f"{where}: field 'featuresMap.{k}': expected a string or a number, "
                f"got {type(v).__name__}",
                path=path,
                reason="bad_attribute_value",
            )
        attrs[str(k)] = v if isinstance(v, str) else repr(v)
    return shop, title, attrs


def load_tv_json(
    path: str | os.PathLike, on_error: str = "fail", encoding: str = "utf-8"
) -> tuple[Offers, list[str]]:
    """Load the TV offers: one JSON object ``modelID -> [offer, ...]``, each offer with
    ``shop``, ``url``, ``modelID``, ``featuresMap`` and ``title``.

    Returns the offers (ids ``"<n>"``, the offer's position in the file, 0-based) and, apart,
    the truth label of each offer (its modelID key): use it to evaluate, never as a feature.
    ``on_error="skip"`` leaves out bad offers and counts them in ``offers.skipped``; ``"fail"``
    raises the first :class:`InputError` (which names the file, the modelID and the field).
    """
    check_choice("on_error", on_error, ON_ERROR)
    name = os.fspath(path)
    data = parse_json(decode_strictly(read_bytes(name, gunzip=False), encoding, name), name)
    if not isinstance(data, dict):
        raise InputError(
            f"expected a JSON object modelID -> [offers], got {type(data).__name__}",
            path=name,
            reason="not_object",
        )
    offers = Offers()
    labels: list[str] = []
    pos = 0
    for model, items in data.items():
        if not isinstance(items, list):
            err = InputError(
                f"modelID {model!r}: expected a list of offers, got {type(items).__name__}",
                path=name,
                reason="not_list",
            )
            if on_error == "fail":
                raise err
            offers.skipped.add(err)
            continue
        for k, item in enumerate(items):
            where = f"modelID {model!r}, offer {k}"
            try:
                shop, title, attrs = _check_offer(item, where, name)
            except InputError as err:
                if on_error == "fail":
                    raise
                offers.skipped.add(err)
                pos += 1
                continue
            offers.ids.append(str(pos))
            offers.shops.append(shop)
            offers.titles.append(title)
            offers.attributes.append(attrs)
            offers.descriptions.append("")
            offers.sources.append(f"{name}:{where}")
            labels.append(str(model))
            pos += 1
    if len(offers) == 0:
        raise InputError("no usable offers", path=name, reason="empty")
    return offers, labels
