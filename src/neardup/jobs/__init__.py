"""The file jobs: files in, a folder of outputs and a summary out, each the library call behind
one command (and what the service runs where it takes files):

- :func:`neardup.jobs.dedup.dedup_files`: ``neardup dedup`` (the local engine; the Dask
  engine's own job is :func:`neardup.engines.dask.dedup_dask`);
- :func:`neardup.jobs.reuse.reuse_files`: ``neardup reuse``;
- :func:`neardup.jobs.fca.fca_files`: ``neardup fca``;
- :func:`neardup.jobs.products.dedup_offers` and :func:`~neardup.jobs.products.evaluate_offers`:
  ``neardup products dedup`` and ``neardup products eval``.

They read through :mod:`neardup.io` and call the algorithms (the engines, :mod:`neardup.reuse`,
:mod:`neardup.fca`, :mod:`neardup.products`); nothing below them imports them. Each module is
loaded on use, so that ``import neardup`` stays light.
"""

__all__: list[str] = []
