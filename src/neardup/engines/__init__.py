"""Engines that run the dedup job: the local one is :func:`neardup.engines.local_job.dedup_files`;
:func:`neardup.engines.dask.dedup_dask` runs the same stages on a Dask cluster (import it from
its module: Dask is an optional dependency)."""

__all__: list[str] = []
