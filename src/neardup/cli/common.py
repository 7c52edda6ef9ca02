"""What the ``neardup`` commands share: the input, output and running options, the
normalisation, shingle, MinHash and LSH parameters and the configuration built from them, the
progress bars, the summary tables, the translation of errors into exit codes, and the opening
of an index (its location, storage options and Redis password) for ``neardup index``,
``stream`` and ``serve``.

Exit codes: 0 success; 2 invalid arguments or parameters (:class:`~neardup.errors.ConfigError`,
and argparse's own usage errors); 3 bad input, the message naming the file, line and field
(:class:`~neardup.errors.InputError`); 4 an output could not be written
(:class:`~neardup.errors.OutputError`); 130 interrupted.

This module imports no command module. The library modules a command needs are imported inside
the functions that need them (the I/O formats too: only the parser of the command that runs is
built in full), so that ``neardup --help`` stays fast.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..config import INDEX_PARAMETERS, PARAMETERS, PARAMS, DedupConfig
from ..errors import ConfigError, NeardupError

#: Exit code of a command that succeeded.
EXIT_OK = 0
#: Exit code after Ctrl-C (128 + SIGINT). The error exit codes are the ``exit_code`` attributes
#: of the classes in :mod:`neardup.errors`.
EXIT_INTERRUPTED = 130

Rows = Sequence[tuple[str, str]]


def _count(n: float) -> str:
    """``950``, ``12.3k``, ``243k``, ``1.2M``: a rate in three or four figures."""
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if n >= div:
            v = n / div
            return f"{v:.1f}{unit}" if v < 100 else f"{v:,.0f}{unit}"
    return f"{n:.0f}"


def read_rates(done: int, total: int | None, documents: int | None, seconds: float) -> str:
    """What the read stage shows on a terminal after its megabytes: the megabytes and
    documents (when counted) per second since it started, and the time left at that speed
    (``" 512 MB/s 243k docs/s ETA 0:00:03"``); empty before anything was read."""
    if seconds <= 0 or done <= 0:
        return ""
    mb_s = done / 1e6 / seconds
    parts = [f"{mb_s:,.0f} MB/s" if mb_s >= 100 else f"{mb_s:.1f} MB/s"]
    if documents is not None:
        parts.append(f"{_count(documents / seconds)} docs/s")
    if total and done < total:
        left = int((total - done) * seconds / done + 0.5)
        parts.append(f"ETA {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}")
    return " " + " ".join(parts)


class RichProgress:
    """One progress bar per stage, on stderr. On a terminal the read stage also shows its
    speed (MB/s, and documents/s where the engine counts them) and the time left; elsewhere (a
    log file, a pipe) the lines stay as they were."""

    LABELS = {
        "read": "read, shingle, sketch",
        "candidates": "LSH candidates",
        "verify": "verify pairs",
        "cluster": "cluster",
        "write": "write outputs",
    }

    #: :meth:`update` takes ``documents=``: the documents read so far (the dedup job looks
    #: for this before passing them; other progress objects need not take them)
    counts_documents = True

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        console = console if console is not None else Console(stderr=True)
        self._rates = bool(console.is_terminal)
        # on a terminal the read stage's speed takes ~40 columns more: a shorter bar where the
        # terminal is narrow (the bar of 40 elsewhere)
        bar = max(10, min(40, console.width - 100)) if self._rates else 40
        self._progress = Progress(
            TextColumn("{task.description:<22}"),
            BarColumn(bar_width=bar),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[extra]}"),
            console=console,
            transient=False,
        )
        self._tasks: dict[str, Any] = {}
        self._started: dict[str, float] = {}
        self._documents: dict[str, int | None] = {}
        self._progress.start()

    def start(self, stage: str, total: int | None) -> None:
        if stage not in self._tasks:
            self._tasks[stage] = self._progress.add_task(
                self.LABELS.get(stage, stage), total=total, extra=""
            )
            self._started[stage] = time.perf_counter()

    def _extra(self, stage: str, done: int, total: int | None) -> str:
        if stage != "read":
            return f"{done:,}"
        extra = f"{done / 1e6:,.1f} MB"
        if self._rates:
            seconds = time.perf_counter() - self._started[stage]
            extra += read_rates(done, total, self._documents.get(stage), seconds)
        return extra

    def update(
        self, stage: str, done: int, total: int | None = None, documents: int | None = None
    ) -> None:
        self.start(stage, total)
        if documents is not None:
            self._documents[stage] = documents
        extra = self._extra(stage, done, total)
        self._progress.update(self._tasks[stage], completed=done, total=total, extra=extra)

    def finish(self, stage: str) -> None:
        self.start(stage, 1)
        task = next(t for t in self._progress.tasks if t.id == self._tasks[stage])
        total = task.total if task.total else max(task.completed, 1)
        if self._rates and stage == "read":  # the speed of the whole stage, nothing left
            done = int(task.completed)
            extra = self._extra(stage, done, done)
            self._progress.update(task.id, completed=total, total=total, extra=extra)
            return
        self._progress.update(task.id, completed=total, total=total)

    def close(self) -> None:
        self._progress.stop()


# -- options ------------------------------------------------------------------------------------

Group = argparse.ArgumentParser | argparse._ArgumentGroup

#: ``--id-field`` of the commands that detect the field ``id`` (dedup, index add).
ID_DETECT_HELP = (
    "field holding the document id (default: the field id when every record has "
    "one, a string or an integer, distinct; otherwise the row number across all "
    "inputs; '' for row numbers); a folder's files are named by their paths"
)

ON_ERROR_HELP = (
    "bad records: stop with an error (fail, default) or skip them and count them in "
    "the summary (skip)"
)


def add_input_args(
    p: argparse.ArgumentParser, *, id_help: str | None = None, on_error_help: str = ON_ERROR_HELP
) -> argparse._ArgumentGroup:
    """The INPUT files and how they are read (text and id fields, format, encoding, bad
    records), as :func:`neardup.io.read_documents` takes them. Returns the "input" group, for a
    command's own reading options."""
    from ..io import INPUT_FORMATS

    g = p.add_argument_group("input")
    p.set_defaults(trailing="inputs")  # INPUTs after the options too (see cli.main)
    g.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="JSONL, JSON (an array of objects), CSV, TSV or Parquet files "
        "(optionally .gz or .zst), folders of text files (one document per "
        "file), or - for JSON lines on standard input",
    )
    g.add_argument(
        "--text-field",
        nargs="+",
        default=["text"],
        metavar="FIELD",
        help="field(s) holding the text; several are joined with a newline (default: text)",
    )
    g.add_argument(
        "--id-field",
        default=None,
        metavar="FIELD",
        help=id_help
        or "field holding the document id (default: the row number "
        "across all inputs, or the file path inside a folder)",
    )
    g.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        default=None,
        help="input format (default: from the file name)",
    )
    g.add_argument(
        "--encoding",
        default="utf-8",
        help="text encoding of the inputs (default: utf-8; e.g. latin-1)",
    )
    g.add_argument("--on-error", choices=["fail", "skip"], default="fail", help=on_error_help)
    return g


def add_output_args(
    p: argparse.ArgumentParser, help: str, metavar: str = "OUTDIR"
) -> argparse._ArgumentGroup:
    """``-o/--output`` (required) in an "output" group, which is returned for a command's own
    output options."""
    g = p.add_argument_group("output")
    g.add_argument("-o", "--output", required=True, metavar=metavar, help=help)
    return g


def add_running_args(
    g: Group,
    *,
    workers: bool = False,
    quiet_help: str = "print nothing on success",
    json_help: str | None = "print the summary as JSON on stdout",
    quiet_short: bool = True,
) -> None:
    """``--workers`` (with ``workers``; see :func:`set_workers`), ``--quiet`` (``-q`` unless not
    ``quiet_short``) and ``--json`` (unless ``json_help`` is None) on ``g``, a parser or a group."""
    if workers:
        g.add_argument(
            "--workers",
            type=int,
            default=None,
            help="threads for the compiled stages (default: all cores)",
        )
    g.add_argument(
        "--quiet", *(["-q"] if quiet_short else []), action="store_true", help=quiet_help
    )
    if json_help is not None:
        g.add_argument("--json", action="store_true", help=json_help)


#: The option groups of the parameters (:data:`~neardup.config.PARAMETERS`) that
#: :func:`add_param_args` adds, in the order of ``--help``; the last one with ``clustering``.
PARAM_GROUPS = (
    (
        "normalisation (NFKC, case folding and whitespace collapsing are on)",
        (
            "nfkc",
            "casefold",
            "strip_html",
            "strip_punctuation",
            "strip_digits",
            "strip_stopwords",
        ),
    ),
    ("shingles and MinHash", ("shingle", "num_perm", "seed", "scheme")),
    ("LSH", ("threshold", "bands", "rows", "min_recall", "bucket_cap")),
    ("verification and clustering", ("verify", "cluster", "keep")),
)


#: The index's own parameters (:data:`~neardup.config.INDEX_PARAMETERS`) by keyword.
INDEX_PARAMS = {p.name: p for p in INDEX_PARAMETERS}


def add_param_arg(g: Group, name: str) -> None:
    """The option of the parameter ``name`` of :data:`~neardup.config.PARAMETERS` (or
    :data:`~neardup.config.INDEX_PARAMETERS`) on ``g``:
    its flag, help, default and allowed values as the table gives them (a boolean: a switch,
    ``--no-...`` for one that is on by default)."""
    p = PARAMS[name] if name in PARAMS else INDEX_PARAMS[name]
    kw: dict[str, Any] = {"help": p.help_text().replace("%", "%%")}
    if p.kind == "bool":
        kw["action"] = "store_true"
    else:
        kw["default"] = p.default
        if p.kind in ("int", "real"):
            kw["type"] = int if p.kind == "int" else float
        if p.choices:
            kw["choices"] = p.choices
        if p.metavar is not None:
            kw["metavar"] = p.metavar
    g.add_argument(p.flag, **kw)


def add_param_args(p: argparse.ArgumentParser, clustering: bool = True) -> None:
    """Normalisation, shingle, MinHash and LSH parameters (shared by dedup and index create),
    with the defaults of :class:`~neardup.config.DedupConfig`; ``clustering`` adds verification
    and clustering."""
    for title, names in PARAM_GROUPS[: None if clustering else -1]:
        g = p.add_argument_group(title)
        for name in names:
            add_param_arg(g, name)


def config_from_args(a: argparse.Namespace) -> DedupConfig:
    """The :class:`~neardup.config.DedupConfig` of the parameter options that the command
    has (:func:`add_param_args`, :func:`add_param_arg`)."""
    params = {}
    for p in PARAMETERS:
        if hasattr(a, p.dest):
            value = getattr(a, p.dest)
            params[p.name] = not value if p.negated else value
    return DedupConfig.from_kwargs(**params)


def set_workers(n: int | None) -> None:
    """Threads of the compiled stages (``--workers``); None leaves the default (every
    available processor)."""
    if n is None:
        return
    from .._threads import set_num_threads

    if n < 1:
        raise ConfigError(f"workers={n} is invalid: a positive integer")
    set_num_threads(n)


# -- printing -----------------------------------------------------------------------------------


def print_table(title: str, rows: Rows) -> None:
    """A two-column table (bold names, values) on stdout."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, show_header=False, box=None, padding=(0, 2))
    for k, v in rows:
        t.add_row(f"[bold]{k}[/bold]", v)
    Console().print(t)


def print_summary(
    a: argparse.Namespace,
    data: Any,
    title: str,
    rows: Callable[[], Rows],
    *,
    json_default: Callable[[Any], Any] | None = None,
) -> None:
    """``data`` as JSON with ``--json``; otherwise the table ``rows()`` unless ``--quiet``."""
    if getattr(a, "json", False):
        print(json.dumps(data, indent=2, default=json_default))
    elif not getattr(a, "quiet", False):
        print_table(title, rows())


def skipped_text(sk: dict) -> str:
    """A skip report's total, with the count per reason when there are any."""
    return f"{sk['total']:,}" + (f"  {sk['by_reason']}" if sk["total"] else "")


# -- running ------------------------------------------------------------------------------------


def _way_past(e: NeardupError, args: argparse.Namespace) -> str:
    """What to add to the error that stopped a command on its input: the option that names
    another field, for a field the input lacks, and ``--on-error skip``, which goes past bad
    records, for a bad record (where the command has it)."""
    from ..errors import InputError, SkipReason

    if not isinstance(e, InputError) or not isinstance(e.reason, SkipReason):
        return ""  # not about a record, a field or a file
    hints = []
    field = getattr(e, "field", None)
    if field is not None and e.reason == SkipReason.MISSING_FIELD:
        for name, value in vars(args).items():
            values = value if isinstance(value, (list, tuple)) else [value]
            if name.endswith("_field") and field in values:
                hints.append(f"name another with --{name.replace('_', '-')}")
                break
    if getattr(args, "on_error", None) == "fail" and not getattr(e, "whole_file", False):
        hints.append("--on-error skip leaves out the records that are bad and counts them")
    return f" ({'; '.join(hints)})" if hints else ""


def run_command(args: argparse.Namespace) -> int:
    """Run the command ``args.func`` chose; a :class:`~neardup.errors.NeardupError` becomes its
    message on stderr and its ``exit_code``.

    Commands that do no linear algebra (all but those that set ``linear_algebra``) run numpy's
    OpenBLAS with one thread unless ``OPENBLAS_NUM_THREADS`` says otherwise: it would start a
    thread per core at import that spins for a while (measured 0.07 CPU-s of a 0.5 s run, 2%
    of a long one) and does nothing for them.

    Commands that set ``acyclic`` (``dedup``, the ``index`` commands and ``stream``) run with
    the cyclic garbage collector off: they make no reference cycles as they run (what a run
    leaves to the collector, the few hundred objects of its start-up, does not grow with the
    corpus or the records, bad ones included), and the collector would walk every object their
    imports make, again and again: 10 ms of a 0.3 s ``dedup``, 12 ms of a 0.13 s ``index
    query``. It is on again when the command returns. ``serve`` keeps it: its event loop makes
    cycles."""
    if not getattr(args, "linear_algebra", False):
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    collect = getattr(args, "acyclic", False) and gc.isenabled()
    if collect:
        gc.disable()
    try:
        return args.func(args)
    except NeardupError as e:
        print(f"neardup: error: {e}{_way_past(e, args)}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        note = getattr(args, "on_interrupt", None) or (
            "files it had written so far were left as they are"
        )
        print(f"neardup: interrupted; {note}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    finally:
        if collect:
            gc.enable()


# -- opening an index (neardup index, stream and serve) -----------------------------------
INDEX_HELP = "an SQLite file or a Redis URL (redis://host:port/db?prefix=NAME)"


def _is_url(target: str) -> bool:
    return target.startswith(("redis://", "rediss://", "unix://"))


def _shown(target: str) -> str:
    """The index as printed: a URL's password and secret parameters masked."""
    if not _is_url(target):
        return target
    from ..index.redact import redact_location

    return redact_location(target)


#: The environment variable that may hold the password of a Redis index.
REDIS_PASSWORD_ENV = "NEARDUP_REDIS_PASSWORD"


def _say(command: str, message: str) -> None:
    print(f"neardup {command}: {message}", file=sys.stderr, flush=True)


def _storage_options(a: argparse.Namespace, target: str, command: str = "index") -> dict:
    """The backend's options for ``target``: a Redis index's password from
    ``--redis-password-file`` or the environment (never echoed), and a warning on stderr
    when the URL itself holds one (a command line is visible to every user of the machine)."""
    import os
    from urllib.parse import parse_qsl, urlsplit

    file = getattr(a, "redis_password_file", None)
    env = os.environ.get(REDIS_PASSWORD_ENV) or None
    if not _is_url(target):
        if file is not None:
            raise ConfigError(
                f"--redis-password-file is for an index in Redis; {target} is an SQLite file"
            )
        return {}
    try:
        parts = urlsplit(target)
        in_url = bool(parts.password) or any(k == "password" for k, _ in parse_qsl(parts.query))
    except ValueError:
        in_url = False  # the backend says what is wrong with the URL
    given = [
        name
        for name, there in (
            ("in the URL", in_url),
            ("--redis-password-file", file),
            (REDIS_PASSWORD_ENV, env),
        )
        if there
    ]
    if len(given) > 1:
        raise ConfigError(
            f"the Redis password is given more than once ({', '.join(given)}); give it once"
        )
    if in_url:
        _say(
            command,
            f"warning: the Redis password is in the URL on the command line, where other "
            f"users of this machine can see it (ps); give it with --redis-password-file "
            f"PATH or the environment variable {REDIS_PASSWORD_ENV} instead",
        )
        return {}
    if file is not None:
        try:
            password = Path(file).read_text(encoding="utf-8").strip("\r\n")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(
                f"--redis-password-file {file}: cannot read it "
                f"({getattr(e, 'strerror', None) or e.__class__.__name__})"
            ) from None
        if not password or "\n" in password:
            raise ConfigError(
                f"--redis-password-file {file}: holds no password (one line expected)"
            )
        return {"password": password}
    return {"password": env} if env else {}


def _open(a: argparse.Namespace, target: str, command: str = "index"):
    """An existing index (an IndexNotFoundError, saying how to make one, for a missing one:
    never a new, empty index made by a command that reads or adds)."""
    from ..index import Index, IndexNotFoundError

    options = _storage_options(a, target, command)
    try:
        return Index(target, create=False, storage_options=options)
    except IndexNotFoundError as e:
        if _is_url(target):
            raise
        raise IndexNotFoundError(
            f"{target}: no such index; create it with `neardup index create {target}`"
        ) from e


def _add_redis_password(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument(
        "--redis-password-file",
        metavar="PATH",
        help="a file holding the password of a Redis index (one line); or set the "
        f"environment variable {REDIS_PASSWORD_ENV}. A password in the URL "
        "works too, but other users of the machine see it in the command "
        "line",
    )
