"""Inputs that can be read only once: standard input (``-``), a named pipe, ``/dev/stdin``.

A batch run reads its inputs twice (once to find the duplicates, once to copy the kept records
into the deduplicated corpus), so such an input is first copied into a hidden folder inside the
output folder, under the name the deduplicated copy will have (``stdin.jsonl`` for ``-``, the
pipe's own name otherwise); the folder is removed when the run ends, whether it succeeded or
not. The format of ``-`` is the one given, else told from its first bytes (a JSON object or
array: JSON; gzip or Zstandard magic bytes: compressed).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError, OutputError, SkipReason

#: the word for standard input among the inputs
STDIN = "-"

_EXT = {"jsonl": ".jsonl", "json": ".json", "csv": ".csv", "tsv": ".tsv", "parquet": ".parquet"}
_MAGIC = {b"\x1f\x8b": ".gz", b"\x28\xb5\x2f\xfd": ".zst"}
_CHUNK = 8 << 20


def is_stream(path: str | os.PathLike) -> bool:
    """Whether ``path`` is ``-`` or names something that is neither a regular file nor a folder
    (a pipe, a character device such as ``/dev/stdin``)."""
    if os.fspath(path) == STDIN:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


class Spool:
    """The copies of the once-only inputs of one run, in ``outdir/.neardup-input-<pid>/``.

    ``paths(inputs)`` returns the inputs with each stream replaced by its copy;
    ``display(path)`` the name a user gave for a copy (``-``); :meth:`close` removes the copies.
    """

    def __init__(self, outdir: Path, input_format: str | None):
        self.outdir = Path(outdir)
        self.format = input_format
        self.folder: Path | None = None
        self.made_outdir = False
        self._given: dict[Path, str] = {}

    def paths(self, inputs: list[Path]) -> list[Path]:
        out = []
        for p in inputs:
            if is_stream(p):
                out.append(self._copy(p))
            else:
                out.append(p)
        return out

    def display(self, path: Path) -> str:
        return self._given.get(path, str(path))

    def _copy(self, given: Path) -> Path:
        from .writers import prepare_outdir

        if self.folder is None:
            self.made_outdir = not self.outdir.exists()
            prepare_outdir(self.outdir)
            self.folder = self.outdir / f".neardup-input-{os.getpid()}"
            self.folder.mkdir(exist_ok=True)
        src: BinaryIO
        if os.fspath(given) == STDIN:
            src, name, own = sys.stdin.buffer, "stdin", False
        else:
            try:
                src = open(given, "rb")  # noqa: SIM115 - closed below
            except OSError as e:
                raise InputError(
                    f"cannot open: {e.strerror or e}",
                    path=str(given),
                    reason=SkipReason.UNREADABLE,
                    whole_file=True,
                ) from e
            name, own = given.name, True
        try:
            head = src.read(_CHUNK)
            if "." not in name:
                name += _suffix(head, self.format, given)
            target = self.folder / name
            n = 1
            while target.exists():  # two streams of the same name
                n += 1
                target = self.folder / f"{n}-{name}"
            try:
                with open(target, "wb") as f:
                    f.write(head)
                    shutil.copyfileobj(src, f, _CHUNK)
            except OSError as e:
                raise OutputError(
                    f"{target}: cannot keep a copy of {given} for the "
                    f"deduplicated corpus: {e.strerror or e}"
                ) from e
        finally:
            if own:
                src.close()
        self._given[target] = os.fspath(given)
        return target

    def close(self, failed: bool = False) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
            if failed and self.made_outdir:
                try:
                    self.outdir.rmdir()  # made for the copy only, and empty
                except OSError:
                    pass


def _suffix(head: bytes, fmt: str | None, given: Path) -> str:
    comp = next((ext for magic, ext in _MAGIC.items() if head.startswith(magic)), "")
    if fmt is not None:
        return _EXT.get(fmt, "") + comp
    if comp:
        return ".jsonl" + comp
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first == b"{":
        return ".jsonl"
    if first == b"[":
        return ".json"
    if head.startswith(b"PAR1"):
        return ".parquet"
    raise InputError(
        "cannot tell the format of this stream from its first bytes (not JSON "
        "lines); give it with --input-format",
        path=os.fspath(given),
        reason=SkipReason.UNKNOWN_FORMAT,
        whole_file=True,
    )
