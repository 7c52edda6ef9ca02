"""Engines that run the pipeline's steps (:mod:`neardup.pipeline`): the local one in this process
(:mod:`neardup.engines.local`, whose file job is :func:`neardup.jobs.dedup.dedup_files`), and
:func:`neardup.engines.dask.dedup_dask` on a Dask cluster (import it from its module: Dask is an
optional dependency)."""

__all__: list[str] = []
