"""Every option and positional of every `neardup` command has help text, and the help of an
option with a default says what the default is, so that `--help` answers a user's questions."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from neardup.cli import build_parser


def actions(
    parser: argparse.ArgumentParser, path: str = "neardup"
) -> Iterator[tuple[str, argparse.Action]]:
    """(command path, action) for every action of ``parser`` and of all its sub-commands, -h and
    --version left out."""
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        yield path, action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from actions(sub, f"{path} {name}")


def name(action: argparse.Action) -> str:
    return "/".join(action.option_strings) or (action.metavar or action.dest)


def test_the_walk_reaches_every_command():
    commands = {path for path, _ in actions(build_parser())}
    for want in (
        "neardup dedup",
        "neardup fca",
        "neardup index add",
        "neardup index query",
        "neardup stream",
        "neardup serve",
        "neardup products eval",
        "neardup analyze distribution",
    ):
        assert want in commands


def test_every_option_and_positional_has_help():
    missing = [
        f"{path} {name(a)}"
        for path, a in actions(build_parser())
        if not a.help or a.help == argparse.SUPPRESS or not a.help.strip()
    ]
    assert not missing, "no help text: " + ", ".join(missing)


def test_every_default_is_in_the_help():
    """An option whose default is a value (not None, off or an empty list) names it."""
    silent = [
        f"{path} {name(a)} (default {a.default!r})"
        for path, a in actions(build_parser())
        if a.option_strings
        and not a.required
        and a.default not in (None, False, [], argparse.SUPPRESS)
        and "default" not in (a.help or "")
    ]
    assert not silent, "help does not give the default: " + ", ".join(silent)
