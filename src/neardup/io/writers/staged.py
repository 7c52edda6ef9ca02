"""Atomic files and folders: :class:`Staged` (a temporary file or directory next to its final
name, renamed onto it by :meth:`Staged.commit`), :func:`_write_atomic` and the output folder
(:func:`prepare_outdir`)."""

from __future__ import annotations

import os
import shutil
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO

from ...errors import OutputError

_BUFFER = 1 << 20


def _os_error(path: Path, what: str, e: OSError) -> OutputError:
    return OutputError(f"{path}: cannot {what}: {e.strerror or e}")


def _fsync_dir(path: Path) -> None:
    with suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class Staged:
    """A temporary file (or directory) next to ``final``, renamed onto it by :meth:`commit`.
    ``parents=False``: ``final``'s folder must exist (it is not created again: a writer of a
    run that was discarded meanwhile then fails instead of bringing its folders back)."""

    def __init__(self, final: Path, *, directory: bool = False, parents: bool = True):
        self.final = final
        self.directory = directory
        self.parents = parents
        self.file: BinaryIO | None = None
        try:
            if parents:
                final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _os_error(final.parent, "create the directory", e) from e
        for _ in range(100):
            tmp = final.parent / f".{final.name}.{os.urandom(6).hex()}.tmp"
            try:
                if directory:
                    os.mkdir(tmp)
                else:
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                    self.file = os.fdopen(fd, "wb", buffering=_BUFFER)
            except FileExistsError:
                continue
            except OSError as e:
                raise _os_error(final, "create a temporary file for", e) from e
            self.tmp = tmp
            return
        raise OutputError(f"{final}: cannot find a free temporary name")  # pragma: no cover

    def close(self) -> None:
        """Flush, fsync and close the temporary file."""
        f = self.file
        if f is not None and not f.closed:
            try:
                f.flush()
                os.fsync(f.fileno())
            except OSError as e:
                raise _os_error(self.final, "write", e) from e
            finally:
                f.close()

    def commit(self) -> Path:
        self.close()
        try:
            if self.directory and self.final.is_dir() and not self.final.is_symlink():
                trash = self.final.parent / f".{self.final.name}.{os.urandom(6).hex()}.old.tmp"
                os.replace(self.final, trash)
                os.replace(self.tmp, self.final)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.replace(self.tmp, self.final)
        except OSError as e:
            raise _os_error(self.final, "rename the temporary output onto", e) from e
        _fsync_dir(self.final.parent)
        return self.final

    def discard(self) -> None:
        if self.file is not None:
            with suppress(OSError):
                self.file.close()
        if self.directory:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            with suppress(OSError):
                os.unlink(self.tmp)


def _write_atomic(final: Path, write: Any, parents: bool = True) -> Path:
    """Call ``write(file)`` on a temporary file, then rename it onto ``final``."""
    staged = Staged(final, parents=parents)
    try:
        assert staged.file is not None
        write(staged.file)
        return staged.commit()
    except BaseException as e:
        staged.discard()
        if isinstance(e, OSError):
            raise _os_error(final, "write", e) from e
        raise


def prepare_outdir(outdir: str | os.PathLike) -> Path:
    """Create the output directory (and its parents), or say clearly why it cannot be used."""
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise OutputError(f"{outdir}: exists and is not a directory")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{outdir}: cannot create the output directory: {e.strerror}") from e
    if not os.access(outdir, os.W_OK):
        raise OutputError(f"{outdir}: the output directory is not writable")
    return outdir
