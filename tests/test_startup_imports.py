"""What the commands started often leave unloaded: ``neardup products dedup`` loads neither the
bootstrap study nor the libraries of ``products eval`` (scikit-learn, matplotlib), and the HTTP
service loads the readers and the batch engine with the first upload, not at start-up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOPS = sorted((ROOT / "examples" / "offers").glob("*.jsonl"))


def _loaded(code: str, names: list[str]) -> list[str]:
    """The modules of ``names`` in ``sys.modules`` after running ``code`` in a fresh process."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code + f"\nimport json, sys\n"
            f"print(json.dumps([m for m in {names!r} "
            f"if m in sys.modules]))\n",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_products_dedup_loads_no_study_and_no_eval_libraries(tmp_path):
    argv = ["products", "dedup", *map(str, SHOPS), "-o", str(tmp_path / "out"), "--quiet"]
    got = _loaded(
        f"from neardup.cli import main\nassert main({argv!r}) == 0\n",
        [
            "sklearn",
            "matplotlib",
            "pandas",
            "rich",
            "neardup.products.study",
            "neardup.products.report",
            "neardup.evaluate.bootstrap",
        ],
    )
    assert got == []
    assert (tmp_path / "out" / "pairs.jsonl").exists()


def test_server_app_loads_readers_and_engine_on_first_upload(tmp_path):
    pytest.importorskip("fastapi")
    db = tmp_path / "i.db"
    got = _loaded(
        "import warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from neardup import Index\n"
        "from neardup.server.app import create_app\n"
        f"create_app(Index({str(db)!r}))\n",
        ["neardup.io.readers", "neardup.io.writers", "neardup.engines.local"],
    )
    assert got == []


def test_dedup_loads_no_html_or_resource_modules(tmp_path):
    # they serve options that are off by default (strip_html, strip_stopwords)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"text": "one two three four five six"}\n{"text": "seven eight"}\n')
    argv = ["dedup", str(corpus), "-o", str(tmp_path / "out"), "--quiet"]
    got = _loaded(
        f"from neardup.cli import main\nassert main({argv!r}) == 0\n",
        ["html", "importlib.resources"],
    )
    assert got == []
