"""Builds neardup's compiled kernels (Cython sources in src/neardup/_kernels) as C extension
modules; everything else about the package is in pyproject.toml."""

import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = Path("src/neardup/_kernels")
# Portable machine code (no -march=native): a wheel built here runs on any x86-64 or arm64.
FLAGS = ["/O2"] if sys.platform == "win32" else ["-O3"]

extensions = [
    Extension(f"neardup._kernels.{pyx.stem}", [str(pyx)], extra_compile_args=FLAGS)
    for pyx in sorted(KERNELS.glob("*.pyx"))
]

setup(ext_modules=cythonize(extensions, language_level=3, quiet=True))
