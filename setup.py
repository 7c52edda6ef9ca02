"""Builds neardup's compiled kernels (Cython sources in src/neardup/_kernels) as C extension
modules; everything else about the package is in pyproject.toml."""

import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = Path("src/neardup/_kernels")
# Portable machine code (no -march=native): a wheel built here runs on any x86-64 or arm64.
# No debug information (Python's own flags ask for it): 1.2 MB -> 0.2 MB a module.
FLAGS = ["/O2"] if sys.platform == "win32" else ["-O3", "-g0"]

# the folding table of the normalisation kernel, from this Python's unicodedata
sys.path.insert(0, str(Path(__file__).resolve().parent / "build_tools"))
import unifold  # noqa: E402

unifold.write(KERNELS / "unifold.h")

extensions = [
    Extension(f"neardup._kernels.{pyx.stem}", [str(pyx)], extra_compile_args=FLAGS)
    for pyx in sorted(KERNELS.glob("*.pyx"))
]
if not extensions:  # a source tree without them would build a package that cannot run
    raise SystemExit(f"{KERNELS}: no kernel sources (*.pyx) to build")

setup(ext_modules=cythonize(extensions, language_level=3, quiet=True))
