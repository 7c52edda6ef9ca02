"""The dedup job on a Dask cluster: the local engine's stages, run per partition on workers.

Results are those of :func:`neardup.jobs.dedup.dedup_files` on the same inputs and
parameters: the same clusters (labels included), representatives, similarities and pairs. Only
the orchestration differs; every step calls the pipeline's functions the local engine calls
(:mod:`neardup.pipeline`: ``ingest_chunk``, ``run_candidates``, ``verify_pairs``,
``cluster_texts``, ``within_pairs``/``cross_pairs``, ``RunSummary``). A run is a list of steps over
one run context (:data:`STEPS`, one module each: ``read``, ``ids``, ``exact``, ``candidates``,
``verify``, ``cluster``, ``write``; ``scratch`` holds the scratch folder, ``plan`` the
partitions), with P partitions (and P shuffle buckets):

0. **Scratch folder.** Per-partition state lives on disk, not in worker memory: a folder
   ``.neardup-work-XXXXXXXX`` under ``work_dir`` (default ``outdir``) holds one sub-folder per
   partition (its arrays as ``.npy`` files, written once and never changed) and one per shuffle.
   Tasks return only small handles (:class:`~neardup.engines.dask.scratch.Part`, counts); each task loads the arrays it needs
   (the shingle fingerprints memory-mapped) and drops them when it ends. A shuffle's map task
   writes its items sorted by bucket, one file per column plus the bucket bounds; each reducer
   reads only its slice of each map file. Files are written under a temporary name and renamed,
   so a task that Dask runs again after losing a worker rewrites the same bytes. The folder is
   removed at the end, also on error (pending tasks are cancelled first).

1. **Read** each partition on a worker with the same reader. A partition is one input (a file;
   a directory of text files; a shard of a folder of Parquet shards), or a part of a large one:
   an uncompressed JSONL file of more than ~1.5 x ``partition_docs`` records (estimated from its
   first 1 MB) is cut into line-aligned byte ranges of about equal size, ~``partition_docs``
   records each and as many as a multiple of the workers (scanned from a memory map of the
   file); a Parquet file of more than 1.5 x
   ``partition_docs`` rows (counted in its footer) into contiguous runs of row groups of about
   ``partition_docs`` rows each (a row group is never cut, so a file of one huge row group stays
   one partition; a short last run joins the one before), read with
   ``ParquetFile.iter_batches(row_groups=...)``. Compressed files (``.gz``/``.zst``) and CSV/TSV
   are one partition each. A part's rows are numbered across its file (line numbers of a JSONL
   range from the lines before it, counted in parallel; row numbers of a Parquet run from the
   footer), and errors about the whole file (missing columns, ...) come from its first part
   only, so every message and skip count is the local engine's. Normalise, fingerprint and
   shingle+sketch the first copy of each text *within the partition*; write the band keys and
   the 32-bit shingle fingerprints (streamed chunk by chunk) per distinct text to the
   partition's folder. Row numbers need the records of all earlier partitions: each partition
   counts its valid records while it reads, and the client turns the counts into global row
   offsets that the later stages take as arguments (no second read, no guessing). Errors come
   back as values, so the client raises the one the local engine would raise first (global
   record order).
2. **Ids**: repeated ids across partitions are found by shuffling ``(id, partition, row)`` by a
   hash of the id.
3. **Exact groups**: ``(fingerprint, first row, copies)`` of each distinct text of each partition
   is shuffled by fingerprint; the bucket finds the global first row of each text (the local
   engine's group) and sends it back. A text is identified by its global first row everywhere
   after this (its order is the local engine's group order).
4. **LSH**: the band keys of every global-first text — masked to the bits the local engine
   compares — go to reducers by band, each band cut by the top bits of its keys into as many
   pieces as it takes for every reducer to have one, so equal keys meet; a reducer joins each
   piece from every partition in row order and emits pairs within runs with
   :func:`~neardup.pipeline.run_candidates` (the same bucket cap: a run over the cap is a star
   around its first row). Pairs go to the partition that holds their left text.
5. **Verify next to the data**: each partition asks the owners of the right texts for their
   shingle fingerprints (only those, read with the compiled range reader), computes exact
   Jaccard and keeps pairs over the threshold, left in the scratch folder both ways round
   (only counts reach the client).
6. **Cluster**: connected components (the default) by rounds of min-label propagation on the
   workers (:mod:`~neardup.engines.dask.components`), each member's similarity to its
   representative computed like step 5 where no verified pair gives it; the cluster map (texts
   in verified pairs -> representative) is made on a worker. Strict clusters (greedy, in rank
   order: sequential) gather the verified pairs on the client.
7. **Write**: each partition labels its rows (labels by first appearance need a prefix sum of
   "new" rows per partition and one more small broadcast) and writes its rows of ``clusters``
   and of ``pairs`` as Parquet parts in the scratch folder (the pairs that the verified pairs
   and the exact groups imply are made on the workers: :mod:`~neardup.engines.dask.pairs`);
   the client appends them to one
   ``clusters`` / ``pairs`` file (parquet, jsonl or csv) in row order, one part at a time (the
   output layout is that of the local engine). Meanwhile each partition writes its kept records
   as the local engine writes them (:func:`neardup.io.write_deduplicated_part`: the input's
   format and all its columns; the kept JSONL lines copied by line number from its byte range,
   CSV rows and Parquet row groups read again) into ``deduplicated/``, under the local engine's
   names; the parts of an input of several partitions are joined on a worker
   (:func:`neardup.io.concat_files`), or kept as a folder of parts (``partitioned_tables``).
   Every output takes its place only once all are written.

Growth. With N documents, P partitions and B bands: reading, sketching and verification are
O(N/P) per partition and parallel. Memory per worker is that of one task (about one
partition's arrays, or one shuffle bucket), not of the corpus: at 1M documents in 6
partitions of ~170,000, 2 workers peak at ~570 MB each (``benchmarks/dask_scale.py``).
The scratch folder holds ~1.5 GB per million documents of ~2 KB (mostly the 32-bit shingle
fingerprints). The band-key shuffle writes B * U * 8 bytes and U row numbers (U distinct texts), the exact-group
shuffle ~40 bytes per distinct text of each partition; the shingle shuffle moves only the sets
of right texts held elsewhere, O(candidates). Each shuffle is P map and P reduce tasks (P * P
small slices read from P files per reducer). The client holds the rows that start a group or
cluster (labels), the per-partition counts, and one output part at a time; with ``cluster``
"strict" also the verified pairs (with the length, fingerprint and id of each text in them).

Assumptions: inputs, ``outdir`` and ``work_dir`` are on a file system every worker sees at the
same path as the client (a shared disk, or a ``LocalCluster``). Relative paths are made absolute
on the client (a worker's working folder is its own), and before the first step every worker
checks that it sees each input as the client does (there, with the same size) and that it can
write into the output and work folders (the same folders: a file the client has just written
there is there); a worker that does not stops the run with an error naming the path and the
worker (:mod:`~neardup.engines.dask.paths`). ``verify="estimate"`` is not supported yet (exact verification only).
A text repeated in two partitions is sketched in both (the second sketch is dropped after the
exact-group stage). Textdir ids and row-number ids of other inputs are not cross-checked for
collisions across partitions (the local engine does; it needs a file named like a row number).
"""

from ..._extras import require

require("distributed", "dask", "the Dask engine")
require("dask", "dask", "the Dask engine")

from .run import STEPS, dedup_dask  # noqa: E402

__all__ = ["dedup_dask", "STEPS"]
