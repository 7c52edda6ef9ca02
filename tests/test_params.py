"""The one table of the flat parameters (``neardup.config.PARAMETERS``): the configuration
records, ``DedupConfig.from_kwargs``, the keyword APIs, the command line, the web service and
the README's parameter reference all follow it."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import typing
from pathlib import Path

import pytest

import neardup
from neardup.config import (
    INDEX_PARAMETERS,
    PARAMETERS,
    PARAMS,
    DedupConfig,
    ShingleConfig,
    flat_defaults,
    markdown,
)
from neardup.errors import ConfigError

README = Path(__file__).resolve().parents[1] / "README.md"


def _value(config: DedupConfig, name: str):
    p = PARAMS[name]
    if p.kind == "shingle":
        return str(config.shingle)
    return getattr(getattr(config, p.section), p.field)


def _other(name: str):
    """A value of the parameter ``name`` that is not its default."""
    p = PARAMS[name]
    if p.kind == "bool":
        return not p.default
    if p.kind == "choice":
        return next(c for c in p.choices if c != p.default)
    if p.kind == "shingle":
        return "char:4"
    if p.default is None:
        return 2
    if p.kind == "int":
        return p.default + 1
    return p.default / 2


def test_names_are_unique_and_cover_every_field_of_the_config():
    assert len(PARAMS) == len(PARAMETERS)
    d = DedupConfig()
    fields = {
        (section.name, f.name)
        for section in dataclasses.fields(d)
        if section.name != "shingle"
        for f in dataclasses.fields(getattr(d, section.name))
    }
    assert fields == {(p.section, p.field) for p in PARAMETERS if p.kind != "shingle"}


def test_defaults_of_the_records_are_the_tables():
    d = DedupConfig()
    assert {p.name: _value(d, p.name) for p in PARAMETERS} == flat_defaults()
    assert str(ShingleConfig()) == PARAMS["shingle"].default
    assert list(flat_defaults()) == [p.name for p in PARAMETERS]


@pytest.mark.parametrize("name", list(PARAMS))
def test_from_kwargs_sets_the_field_of_each_parameter(name):
    value = _other(name)
    config = DedupConfig.from_kwargs(**{name: value})
    assert _value(config, name) == value
    # and nothing else
    others = {p.name: _value(config, p.name) for p in PARAMETERS if p.name != name}
    assert others == {k: v for k, v in flat_defaults().items() if k != name}


@pytest.mark.parametrize("p", [p for p in PARAMETERS if p.kind in ("int", "real", "choice")])
def test_each_parameter_is_checked_with_its_name(p):
    bad = "not a value" if p.kind != "choice" else "no such choice"
    with pytest.raises(ConfigError, match=rf"^{p.name}='{bad}' is invalid: "):
        DedupConfig.from_kwargs(**{p.name: bad})


def test_unknown_parameter_names_the_allowed_ones():
    with pytest.raises(ConfigError) as e:
        DedupConfig.from_kwargs(treshold=0.5)
    assert str(e.value) == ("unknown parameter 'treshold'; allowed: " + ", ".join(sorted(PARAMS)))


def test_markdown_has_a_row_per_parameter():
    rows = markdown().splitlines()[2:]
    names = [p.name for p in PARAMETERS + INDEX_PARAMETERS]
    assert [re.match(r"\| `(\w+)`", r).group(1) for r in rows] == names


def _options(argv: list[str]) -> dict:
    from neardup.cli import build_parser

    parser = build_parser(argv[0])
    for word in argv:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return {o: a for a in parser._actions for o in a.option_strings}


# an index writes no pairs table
INDEX_PARAMS = [p for p in PARAMETERS if p.section != "pairs"]
# `neardup index create` has no verification and clustering options
INDEX_CREATE_PARAMS = [p for p in INDEX_PARAMS if p.section not in ("verify", "cluster")]


@pytest.mark.parametrize(
    "argv, params",
    [(["dedup"], PARAMETERS), (["index", "create"], [*INDEX_CREATE_PARAMS, *INDEX_PARAMETERS])],
)
def test_the_command_line_options_are_the_tables(argv, params):
    options = _options(argv)
    for p in params:
        action = options[p.flag]
        assert action.help == p.help_text().replace("%", "%%"), p.flag  # argparse's escape
        if p.kind == "bool":
            assert action.default is False and action.nargs == 0
        else:
            assert action.default == p.default, p.flag
            assert tuple(action.choices or ()) == p.choices
            assert action.metavar == p.metavar


@pytest.mark.parametrize("p", PARAMETERS, ids=lambda p: p.name)
def test_each_option_sets_its_parameter(p):
    from neardup.cli import build_parser
    from neardup.cli.common import config_from_args

    value = _other(p.name)
    words = [p.flag] if p.kind == "bool" else [p.flag, str(value)]
    args = build_parser("dedup").parse_args(["dedup", "in.jsonl", "-o", "out", *words])
    assert config_from_args(args) == DedupConfig.from_kwargs(**{p.name: value})


def _keywords(fn) -> dict:
    sig = inspect.signature(fn)
    assert not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    return {k: p.default for k, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("fn", [neardup.dedup, neardup.Deduplicator.__init__])
def test_the_keywords_of_dedup_and_deduplicator_are_the_tables(fn):
    named = {k: v for k, v in _keywords(fn).items() if k in PARAMS}
    assert list(named.items()) == list(flat_defaults().items())


def test_the_keywords_of_index_are_the_tables_but_the_pairs():
    named = {k: v for k, v in _keywords(neardup.Index.__init__).items() if k in PARAMS}
    # None: not given (a new index takes the default, an existing one its own)
    assert named == {p.name: None for p in INDEX_PARAMS}
    assert list(named) == [p.name for p in INDEX_PARAMS]
    own = _keywords(neardup.Index.__init__)
    # passages: None is not given (an existing index keeps its own)
    assert own["store_text"] is True and own["passages"] is None
    assert {p.name for p in INDEX_PARAMETERS} <= set(own)


@pytest.mark.parametrize("name", list(PARAMS))
def test_each_keyword_is_passed_on(name):
    """A keyword that an API took and did not pass on would be ignored: each one, with a
    whole ``config`` besides, is the error that names it."""
    config = DedupConfig()
    calls = [
        lambda kw: neardup.dedup(["a text"], config=config, **kw),
        lambda kw: neardup.Deduplicator(config, **kw),
    ]
    if name in {p.name for p in INDEX_PARAMS}:
        calls.append(lambda kw: neardup.Index(config=config, **kw))
    for call in calls:
        with pytest.raises(ConfigError, match=rf"\(given: config and {name}\)$"):
            call({name: _other(name)})


@pytest.mark.parametrize(
    "fn", [neardup.dedup, neardup.Deduplicator.__init__, neardup.Index.__init__]
)
def test_the_literal_choices_of_the_keywords_are_the_tables(fn):
    sig = inspect.signature(fn)
    for p in PARAMETERS:
        if p.kind == "choice" and p.name in sig.parameters:
            annotation = str(sig.parameters[p.name].annotation)
            assert tuple(re.findall(r"""['"](\w+)['"]""", annotation)) == p.choices, p.name


def test_the_service_fields_are_the_tables():
    pytest.importorskip("fastapi")
    from neardup.server import models

    assert typing.get_args(models.ClusterMethod) == PARAMS["cluster"].choices
    assert models.CLUSTER_DEFAULT == PARAMS["cluster"].default
    assert models.THRESHOLD_DEFAULT == PARAMS["threshold"].default
    # threshold: (0, 1]
    assert models.param_bounds("threshold") == (0, None, None, 1)
    assert models.param_bounds("min_recall") == (0, None, 1, None)
    field = typing.get_args(models.ThresholdParam)[1]
    assert [repr(m) for m in field.metadata] == ["Gt(gt=0)", "Le(le=1)"]


def test_the_readme_parameter_table_is_the_generated_one():
    """The README's parameter reference is what ``python -m neardup.config --markdown``
    writes: regenerate it there after changing a parameter."""
    text = README.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- parameters: python -m neardup.config --markdown -->\n(.*?)<!-- /parameters -->",
        text,
        flags=re.S,
    )
    assert found, "the README has no generated parameter table"
    assert found.group(1) == markdown()
