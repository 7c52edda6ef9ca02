"""Folders of text files: one record per file, its id the file's path in the folder."""

from __future__ import annotations

import codecs
from collections.abc import Generator

from ...errors import InputError, SkipReason
from .base import (
    _READ_ERRORS,
    _is_utf8,
    _Item,
    _open_binary,
    _Options,
    _Progress,
    _Source,
    _undecodable,
)
from .sources import split_compression


def _textdir_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Generator[_Item | InputError, None, None]:
    """One record per file; ``raw`` is the file's path; ``line`` is the file's 1-based position
    in the sorted listing (used only to locate duplicate ids)."""
    assert src.files is not None
    done = 0
    progress.start(src, lambda: done)
    if not src.files:
        yield InputError(
            "the directory holds no (non-hidden) files",
            path=src.name,
            reason=SkipReason.EMPTY_FILE,
            whole_file=True,
        )
        return
    for k, (rel, path, size) in enumerate(src.files, start=1):
        try:
            if src.compression is None:
                _, comp = split_compression(path.name)
            else:  # pragma: no cover
                comp = src.compression
            with _open_binary(path, comp) as (_, stream):
                data = stream.read()
        except _READ_ERRORS as e:
            done += size
            yield InputError(
                f"cannot read the file: {e}", path=str(path), reason=SkipReason.UNREADABLE
            )
            continue
        done += size
        if _is_utf8(opts.encoding) and data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8) :]
        try:
            text = data.decode(opts.encoding)
        except UnicodeDecodeError as e:
            yield _undecodable(str(path), None, e, opts.encoding, unit="file")
            continue
        del data
        yield k, text, rel, path
