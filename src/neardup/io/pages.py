"""Folders and tar archives of one JSON object per page, ``<source>/<n>.json`` (the Alaska
benchmark's shape): which inputs are such, and the bytes of their pages in name order."""

from __future__ import annotations

import os
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import InputError, SkipReason


def is_pages(path: str) -> bool:
    """Whether ``path`` is a folder or a ``.tar``/``.tar.gz``/``.tgz`` archive."""
    low = path.lower()
    return os.path.isdir(path) or low.endswith((".tar", ".tar.gz", ".tgz"))


def pages(path: str, source_of_top: Callable[[str], str]) -> Iterator[tuple[str, str, bytes]]:
    """``(source, page number, bytes)`` of every ``<source>/<n>.json`` under a folder or in a
    tar archive, in name order (hidden files left out). A page at the top of an archive has
    the source ``source_of_top(path)``. An :class:`InputError` (``unreadable``) names the page
    or the archive that cannot be read."""
    if os.path.isdir(path):
        root = Path(path)
        for f in sorted(root.rglob("*.json")):
            if any(part.startswith(".") for part in f.relative_to(root).parts):
                continue
            try:
                yield f.parent.name, f.stem, f.read_bytes()
            except OSError as e:
                raise InputError(
                    f"cannot read: {e.strerror or e}", path=str(f), reason=SkipReason.UNREADABLE
                ) from e
        return
    try:
        with tarfile.open(path) as tar:
            members = sorted(
                (
                    m
                    for m in tar
                    if m.isfile()
                    and m.name.endswith(".json")
                    and not any(x.startswith(".") for x in m.name.split("/"))
                ),
                key=lambda m: m.name,
            )
            for m in members:
                member = tar.extractfile(m)
                if member is None:
                    continue
                parts = m.name.split("/")
                source = parts[-2] if len(parts) >= 2 else source_of_top(path)
                yield source, parts[-1][:-5], member.read()
    except (OSError, tarfile.TarError, EOFError) as e:
        raise InputError(
            f"cannot read the archive: {getattr(e, 'strerror', None) or e}",
            path=path,
            reason=SkipReason.UNREADABLE,
        ) from e
