"""The ``neardup`` command line: a thin layer of argument parsing and progress over the library.

One module per command family (:mod:`.dedup`, :mod:`.products`, :mod:`.fca`, :mod:`.index` for
``index`` and ``stream``, :mod:`.serve`, :mod:`.analyze`), each with its top-level ``COMMANDS`` (name
-> help) and an ``add_commands(subparsers)``; what they share is in :mod:`.common`. The library
modules a command needs are imported when it runs, and :func:`main` builds in full only the
family of the command it is given, so that ``neardup --help`` stays fast.

Exit codes: 0 success; 2 invalid arguments or parameters; 3 bad input (the message names the
file, line and field); 4 an output could not be written; 130 interrupted (see
:mod:`neardup.cli.common`).
"""

from __future__ import annotations

import argparse
import gc
import sys

from .._version import __version__
from . import analyze, dedup, fca, index, products, reuse, serve
from .common import run_command

__all__ = ["build_parser", "main"]

#: The command families in the order ``neardup --help`` lists their commands.
FAMILIES = (dedup, reuse, products, fca, index, serve, analyze)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``neardup`` and all its commands. With ``command`` (a word of the command
    line, "" for none), only the family that has it is built in full; the other commands are
    there by name and help, which is all that ``neardup --help`` and the top-level parser's
    errors show."""
    p = argparse.ArgumentParser(prog="neardup", description="Find near-duplicate documents.")
    p.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = p.add_subparsers(
        dest="command",
        required=True,
        metavar="COMMAND",
        help="what to do (`neardup COMMAND --help` for its options)",
    )
    for family in FAMILIES:
        if command is None or command in family.COMMANDS:
            family.add_commands(sub)
        else:
            for name, help_text in family.COMMANDS.items():
                sub.add_parser(name, help=help_text)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``neardup`` with ``argv`` (default: the process's arguments); return the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # the top-level options (--help, --version) take no value: the first other word is the
    # command, or a word that is none, which the parser reports with the list of commands
    command = next((word for word in argv if not word.startswith("-")), "")
    parser = build_parser(command)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse gives a list positional (nargs="*") only the words before the first option
        # (``index query INDEX --top-k 1 TEXT`` left TEXT over): a command that names its list
        # positional ``trailing`` takes the words after the options too
        trailing = getattr(args, "trailing", None)
        if trailing is None or any(word.startswith("-") for word in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        getattr(args, trailing).extend(extra)
    code = run_command(args)
    # The interpreter's last garbage collection at exit walks every object the imports made
    # (numpy, pyarrow: ~50 ms of a 0.4 s run). Everything the command opened is closed by now;
    # frozen objects are still freed at exit, only not walked for cycles.
    gc.freeze()
    return code
