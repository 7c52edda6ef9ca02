"""Paths of a Dask run: made absolute on the client, and checked on every worker before any
work is sent.

A worker resolves a relative path in its own working folder, which is not the client's: every
path a run hands to the workers (the inputs, the output folder, the work folder) is made
absolute on the client first (:func:`absolute`). A worker on another machine, or in a container
with other mounts, may still see nothing at that path, or another file or folder: before the
first step, :func:`check_workers` runs :func:`probe` on every worker, which checks that each
input is there with the size the client sees, and that each folder the workers write into holds
a marker file the client has just written there (the same folder, not one of the same name) and
takes a new file. A problem is raised as one :class:`~neardup.errors.InputError` or
:class:`~neardup.errors.OutputError` that names the path and the worker.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import InputError, NeardupError, OutputError, SkipReason

_SHARED = (
    "every Dask worker must see the inputs, the output folder and the work folder at "
    "the same path as this client (a shared file system)"
)


def absolute(path: str | os.PathLike) -> Path:
    """``path`` as an absolute path of this process's working folder (not resolved: symbolic
    links stay as they are, to be followed on each worker)."""
    return Path(path).absolute()


def probe(
    inputs: Sequence[tuple[str, int | None]], folders: Sequence[tuple[str, str, str]]
) -> list[tuple[str, str, str]]:
    """Run on a worker: what it does not see of a run's paths as the client does, as
    ``(kind, path, why)`` with kind ``"input"`` or ``"folder"``; empty when all is well.

    ``inputs``: ``(path, size)`` of each input (``size`` None: a folder of text files; -1:
    anything).
    ``folders``: ``(folder, marker file name, its contents)`` of each folder the workers write
    into; the client wrote the marker there just before."""
    out: list[tuple[str, str, str]] = []
    for path, size in inputs:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            out.append(("input", path, "no such file or folder there"))
            continue
        except OSError as e:
            out.append(("input", path, f"{e.strerror or e}"))
            continue
        if size is None:
            if not os.path.isdir(path):
                out.append(("input", path, "it is not a folder there"))
        elif size == -1:
            continue
        elif not os.path.isfile(path):
            out.append(("input", path, "it is not a file there"))
        elif st.st_size != size:
            out.append(
                (
                    "input",
                    path,
                    f"another file: {st.st_size:,} bytes there, {size:,} bytes on the client",
                )
            )
        elif not os.access(path, os.R_OK):
            out.append(("input", path, "it cannot be read there (permissions)"))
    for folder, name, token in folders:
        marker = os.path.join(folder, name)
        try:
            with open(marker, encoding="ascii") as f:
                seen = f.read()
        except FileNotFoundError:
            why = (
                "no such folder there"
                if not os.path.isdir(folder)
                else "another folder of the same name: a file the client has just written in "
                "it is missing there"
            )
            out.append(("folder", folder, why))
            continue
        except OSError as e:
            out.append(("folder", folder, f"{e.strerror or e}"))
            continue
        if seen != token:
            out.append(
                (
                    "folder",
                    folder,
                    "another folder of the same name: a file the client "
                    "has just written in it has other contents there",
                )
            )
            continue
        test = os.path.join(folder, f".neardup-probe-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            fd = os.open(test, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            os.unlink(test)
        except OSError as e:
            out.append(("folder", folder, f"it is not writable there ({e.strerror or e})"))
    return out


def _problem_error(what: str, path: str, whys: dict[str, list[str]]) -> NeardupError:
    """One error for a path (``what``: "input" or a folder's label) that some workers do not
    see: ``whys`` maps each reason to the workers that gave it."""
    why, ws = next(iter(whys.items()))
    who = f"the Dask worker {ws[0]}" if len(ws) == 1 else f"the Dask workers {', '.join(ws)}"
    others = sum(len(x) for x in whys.values()) - len(ws)
    if others:
        who += f" (and {others} more, for other reasons)"
    if what == "input":
        return InputError(
            f"not seen by {who} as on this client ({why}): {_SHARED}",
            path=path,
            reason=SkipReason.MISSING_PATH,
            whole_file=True,
        )
    return OutputError(f"{path}: {what} is not seen by {who} as on this client ({why}): {_SHARED}")


def _size(path: Path) -> int | None:
    """What :func:`probe` compares: a file's size, ``None`` for a folder, -1 for a path this
    process does not see either (the workers then only say whether they do)."""
    try:
        return None if path.is_dir() else path.stat().st_size
    except OSError:
        return -1


def check_workers(client: Any, inputs: Sequence[Path], folders: Sequence[tuple[Path, str]]) -> int:
    """Check on every worker of ``client`` that it sees ``inputs`` as this process does and can
    write into ``folders``: ``(folder, label)``, each an existing folder this process can write
    into, called ``label`` ("the output folder") in messages. Raise the first problem (inputs
    first, in order) as an :class:`~neardup.errors.InputError` (an input) or
    :class:`~neardup.errors.OutputError` (a folder) naming the path and the workers. Returns
    the number of workers checked."""
    token = secrets.token_hex(16)
    name = f".neardup-check-{token[:8]}"
    spec_in = [(str(p), _size(p)) for p in inputs]
    spec_f = []
    written: list[Path] = []
    try:
        for d, _ in folders:
            marker = d / name
            try:
                marker.write_text(token, encoding="ascii")
            except OSError as e:
                raise OutputError(
                    f"{d}: cannot write a file in this folder: {e.strerror or e}"
                ) from e
            written.append(marker)
            spec_f.append((str(d), name, token))
        results = client.run(probe, spec_in, spec_f)
    finally:
        for marker in written:
            marker.unlink(missing_ok=True)
    problems: dict[tuple[str, str], dict[str, list[str]]] = {}
    for worker in sorted(results):
        for kind, path, why in results[worker]:
            problems.setdefault((kind, path), {}).setdefault(why, []).append(worker)
    for path, _ in spec_in:
        if ("input", path) in problems:
            raise _problem_error("input", path, problems["input", path])
    for (_, label), (path, _, _) in zip(folders, spec_f, strict=True):
        if ("folder", path) in problems:
            raise _problem_error(label, path, problems["folder", path])
    return len(results)


def worker_os_error(e: OSError, inputs: Sequence[Path]) -> InputError | OutputError:
    """An :class:`OSError` raised during a run (mostly a task's, on a worker: a file of the run
    that vanished or could not be read or written there) as neardup's error, naming the file:
    an :class:`~neardup.errors.InputError` for an input, else an
    :class:`~neardup.errors.OutputError`."""
    path = e.filename if e.filename is not None else "(a file of the run)"
    message = (
        f"{e.strerror or e}, during the Dask run: {_SHARED}, and must stay in place "
        "until the run ends"
    )
    if any(str(path) == str(p) or str(path).startswith(f"{p}{os.sep}") for p in inputs):
        return InputError(message, path=str(path), reason=SkipReason.UNREADABLE, whole_file=True)
    return OutputError(f"{path}: {message}")
