"""The README's library examples run as written and say what they claim."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_library_examples_run():
    blocks = python_blocks()
    ns: dict = {}
    exec(blocks[0], ns)  # the tour: dedup() on three texts
    r = ns["result"]
    assert r.representative.tolist() == [0, 0, 2]
    assert r.pair_records()[0]["id_a"] == "a"
    # the stage-by-stage pipeline reuses the tour's texts
    exec(next(b for b in blocks if "choose_bands" in b), ns)
    assert (ns["bands"], ns["rows"]) == (16, 8)
    assert ns["rep"].tolist() == [0, 0, 2]


def test_readme_mentions_every_cli_option():
    from neardup.cli import build_parser

    text = README.read_text()
    sub = build_parser()._subparsers._group_actions[0].choices["dedup"]
    for action in sub._actions:
        for opt in action.option_strings:
            if opt.startswith("--") and opt != "--help":
                assert opt in text, f"README does not document {opt}"


def test_readme_index_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    block = next(b for b in python_blocks() if "neardup.Index(" in b)
    ns: dict = {}
    exec(block, ns)
    assert [tuple(m) for m in ns["found"]] == [("sku-1", 1.0)]
    assert [tuple(m) for m in ns["dups"]] == [("sku-2", 0.888889)]
    from neardup import Index

    with Index(tmp_path / "shop.db") as idx:
        assert sorted(idx.ids()) == ["sku-1"]


@pytest.mark.parametrize("words,count", [((" index ", " stream ", "--save-index"), 7),
                                         ((" analyze ", " fca "), 7)])
def test_readme_commands_run(tmp_path, words, count):
    """Every `neardup index`/`stream`/`dedup --save-index`, `analyze` and `fca` line of the
    README runs as written."""
    import shutil
    import subprocess

    root = README.parent
    lines = [ln.split("#")[0].strip().removeprefix("$ ") for ln in README.read_text().splitlines()
             if ln.startswith("$ ") and any(w in ln for w in words)]
    assert len(lines) == count
    shutil.copytree(root / "examples", tmp_path / "examples")
    (tmp_path / ".venv").symlink_to(root / ".venv")
    for cmd in lines:
        r = subprocess.run(cmd, shell=True, cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, (cmd, r.stderr[-2000:])
