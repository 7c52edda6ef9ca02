"""The ``neardup`` command line: a thin layer of argument parsing and progress over the library.

One module per command family (:mod:`.dedup`, :mod:`.products`, :mod:`.fca`, :mod:`.index` for
``index``, ``stream`` and ``serve``, :mod:`.analyze`), each with an ``add_commands(subparsers)``;
what they share is in :mod:`.common`. The library modules a command needs are imported when it
runs, so that ``neardup --help`` stays fast.

Exit codes: 0 success; 2 invalid arguments or parameters; 3 bad input (the message names the
file, line and field); 4 an output could not be written; 130 interrupted (see
:mod:`neardup.cli.common`).
"""

from __future__ import annotations

import argparse

from .. import __version__
from . import analyze, dedup, fca, index, products
from .common import run_command

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``neardup`` and all its commands."""
    p = argparse.ArgumentParser(prog="neardup", description="Find near-duplicate documents.")
    p.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for family in (dedup, products, fca, index, analyze):
        family.add_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``neardup`` with ``argv`` (default: the process's arguments); return the exit code."""
    args = build_parser().parse_args(argv)
    return run_command(args)
