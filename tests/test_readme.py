"""The README's library examples run as written and say what they claim."""

from __future__ import annotations

import re
from pathlib import Path

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
