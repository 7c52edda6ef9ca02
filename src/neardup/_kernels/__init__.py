"""neardup's compiled kernels: C extension modules built from the Cython sources beside this
file when the package is built (``pip install``, ``python -m build``), so that an installed
neardup runs machine code from its first call: nothing is compiled or cached at run time.

Every function here is a plain loop over buffers (numpy arrays, Arrow buffers) that the Python
modules allocate and check; the loops run without the GIL, so :mod:`neardup._threads` can run
ranges of documents on several threads. The Python modules (:mod:`neardup.text`,
:mod:`neardup.sketch`, :mod:`neardup.lsh`, :mod:`neardup.verify`, :mod:`neardup.cluster`,
:mod:`neardup.exact`, :mod:`neardup.fca.itemsets`) are the API; their tests hold a plain-Python
oracle for each kernel.
"""
