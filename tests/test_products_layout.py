"""The product-matching package reads no input file itself: opening, decompressing, decoding
and parsing files (offers, catalogues, page folders and archives, truth files, models) is the
work of :mod:`neardup.io` (and the truth reader of :mod:`neardup.evaluate.truth`). Checked on
the source with ``ast``. Writing its outputs (reports, pairs, models) is allowed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PRODUCTS = Path(__file__).resolve().parents[1] / "src" / "neardup" / "products"

#: modules that read or decompress files (csv: its readers only, see below)
READING_MODULES = {"gzip", "tarfile", "zipfile", "io", "bz2", "lzma", "zstandard"}
CSV_READERS = {"reader", "DictReader", "Sniffer"}
WRITE_MODES = ("w", "a", "x")


def _open_mode(call: ast.Call) -> str | None:
    """The mode of an ``open(...)`` call as written (``"r"`` when none is given; ``None`` when
    it is not a literal)."""
    mode: ast.expr | None = call.args[1] if len(call.args) > 1 else None
    for k in call.keywords:
        if k.arg == "mode":
            mode = k.value
    if mode is None:
        return "r"
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None


def reading_calls(source: str) -> list[str]:
    """``"line: what"`` for every place in ``source`` that reads a file itself."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in READING_MODULES:
                    bad.append(f"{line}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            top = node.module.split(".")[0]
            if top in READING_MODULES or (
                top == "csv" and any(a.name in CSV_READERS for a in node.names)
            ):
                bad.append(f"{line}: from {node.module} import ...")
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open":
                mode = _open_mode(node)
                if mode is None or not any(c in mode for c in WRITE_MODES):
                    bad.append(f"{line}: open(..., {mode!r})")
            elif isinstance(f, ast.Attribute) and f.attr in ("read_bytes", "read_text", "open"):
                if not (isinstance(f.value, ast.Name) and f.value.id in ("os", "self")):
                    if f.attr != "open" or _open_mode(node) in (None, "r", "rb"):
                        bad.append(f"{line}: .{f.attr}()")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "csv"
            and node.attr in CSV_READERS
        ):
            bad.append(f"{line}: csv.{node.attr}")
    return bad


def test_products_read_no_file_themselves():
    bad = []
    for path in sorted(PRODUCTS.rglob("*.py")):
        bad += [f"{path.name}:{b}" for b in reading_calls(path.read_text())]
    assert not bad, "read these through neardup.io:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "source",
    [
        "import gzip",
        "import tarfile",
        "from zipfile import ZipFile",
        "import io",
        "def f(p):\n    import csv\n    return list(csv.reader(open(p, 'w')))",
        "from csv import DictReader",
        "def f(p):\n    with open(p) as f:\n        return f.read()",
        "def f(p):\n    with open(p, 'rb') as f:\n        return f.read()",
        "def f(p, m):\n    return open(p, mode=m)",
        "def f(p):\n    return p.read_bytes()",
        "def f(p):\n    return p.read_text()",
        "def f(p):\n    return p.open()",
    ],
)
def test_the_check_finds_reading(source):
    assert reading_calls(source)


def test_the_check_allows_writing():
    source = (
        "import csv\n"
        "def f(p, rows):\n"
        "    with open(p, 'w', newline='') as f:\n"
        "        csv.writer(f).writerows(rows)\n"
        "    with open(p, 'wb') as f:\n"
        "        f.write(b'')\n"
    )
    assert reading_calls(source) == []
