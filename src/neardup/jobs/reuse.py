"""``neardup reuse``: every pair of documents of a corpus that shares a passage, written as
tables (see :func:`neardup.reuse.find_reuse`)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError, SkipReason
from ..reuse import PassageConfig, find_reuse


def reuse_files(
    paths: Sequence[str | os.PathLike],
    outdir: str | os.PathLike,
    *,
    config: PassageConfig | None = None,
    max_doc_freq: int = 100,
    text_fields: Sequence[str] = ("text",),
    id_field: str | None = None,
    input_format: str | None = None,
    encoding: str = "utf-8",
    on_error: str = "fail",
    output_format: str = "parquet",
) -> dict[str, Any]:
    """Read the documents of ``paths``, find the pairs that share passages, and write
    ``passages`` (one row per passage: ``id_a``, ``id_b``, the character ranges ``a_start``,
    ``a_end``, ``b_start``, ``b_end``, ``words``, ``matched_words``), ``pairs`` (one row per
    pair: ``id_a``, ``id_b``, ``passages``, ``reused_words_a``/``_b``, ``share_a``/``_b``) and
    ``summary.json`` into ``outdir``. Returns the summary."""
    from ..io import SkipReport, prepare_outdir, read_all, write_json_atomic, write_table

    cfg = config or PassageConfig()
    t0 = time.perf_counter()
    report = SkipReport()
    ids, texts, id_info = read_all(
        paths,
        text_fields=text_fields,
        id_field=id_field,
        on_error=on_error,
        encoding=encoding,
        fmt=input_format,
        report=report,
    )
    if not texts:
        raise InputError("no documents: the inputs hold no record", reason=SkipReason.EMPTY_FILE)
    t_read = time.perf_counter() - t0
    res = find_reuse(texts, cfg, max_doc_freq=max_doc_freq)
    t_find = time.perf_counter() - t0 - t_read
    out = prepare_outdir(outdir)
    idarr = np.asarray(ids, dtype=object)
    ps, pr = res.passage_table, res.pair_table
    passages = write_table(
        out / "passages",
        {
            "id_a": idarr[ps["a"]],
            "id_b": idarr[ps["b"]],
            "a_start": ps["a_start"],
            "a_end": ps["a_end"],
            "b_start": ps["b_start"],
            "b_end": ps["b_end"],
            "words": ps["words"],
            "matched_words": ps["matched"],
        },
        output_format,
    )
    pairs = write_table(
        out / "pairs",
        {
            "id_a": idarr[pr["a"]],
            "id_b": idarr[pr["b"]],
            "passages": pr["passages"],
            "reused_words_a": pr["reused_a"],
            "reused_words_b": pr["reused_b"],
            "share_a": pr["share_a"],
            "share_b": pr["share_b"],
        },
        output_format,
    )
    summary = {
        **res.stats,
        "config": {
            "k": cfg.k,
            "window": cfg.window,
            "min_words": cfg.shortest,
            "max_gap": cfg.max_gap,
            "min_match": cfg.min_match,
            "max_occurrences": cfg.max_occurrences,
            "strip_html": cfg.strip_html,
            "max_doc_freq": max_doc_freq,
        },
        "inputs": [str(p) for p in paths],
        "ids": id_info.to_dict(),
        "skipped": report.to_dict(),
        "timings_s": {
            "read": round(t_read, 3),
            "find": round(t_find, 3),
            "write": round(time.perf_counter() - t0 - t_read - t_find, 3),
        },
        "seconds": round(time.perf_counter() - t0, 3),
        "outputs": {
            "passages": str(passages),
            "pairs": str(pairs),
            "summary": str(out / "summary.json"),
        },
    }
    write_json_atomic(out / "summary.json", summary)
    return summary
