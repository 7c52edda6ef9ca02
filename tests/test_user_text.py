"""What users read (help text, docstrings, error messages and the web page in the package
sources; the README, docs, CHANGELOG and benchmark notes) names methods, not the internal
planning documents they came from ("seed 001", "seeds 002-004", "issue 3")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Words a user cannot know. A random-number seed ("--seed 0", "seed=1", "3 random seeds")
#: does not match.
INTERNAL = re.compile(r"\bseed 0\d\d|\bseeds \d|\bissues? #?\d", re.IGNORECASE)

#: Files whose wording is another change's to make: the test fails once they are clean, so that
#: the entry is removed then.
PENDING: dict[str, str] = {}

SOURCE_SUFFIXES = {".py", ".pyx", ".pxd", ".html", ".js", ".css"}


def user_read_files() -> list[str]:
    package = [
        p
        for p in (ROOT / "src" / "neardup").rglob("*")
        if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts
    ]
    text = [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "benchmarks" / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "benchmarks").glob("*.py"),
    ]
    return sorted(str(p.relative_to(ROOT)) for p in package + text if p.is_file())


def _params() -> list:
    return [
        pytest.param(
            rel,
            id=rel,
            marks=[pytest.mark.xfail(strict=True, reason=PENDING[rel])] if rel in PENDING else [],
        )
        for rel in user_read_files()
    ]


def test_the_scan_covers_what_users_read():
    files = user_read_files()
    for rel in (
        "README.md",
        "docs/fca.md",
        "src/neardup/cli/fca.py",
        "src/neardup/server/app.py",
        "benchmarks/fca.py",
        "src/neardup/server/static/index.html",
    ):
        assert rel in files, rel


@pytest.mark.parametrize("rel", _params())
def test_no_internal_planning_words(rel):
    text = (ROOT / rel).read_text(encoding="utf-8")
    hits = [
        f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
        for m in INTERNAL.finditer(text)
    ]
    assert not hits, "say what the method is instead of: " + "; ".join(hits)


@pytest.mark.parametrize(
    "line,bad",
    [
        ("Near-duplicate clusters by Formal Concept Analysis (seed 001).", True),
        ("the parameter experiments of seeds 002-004", True),
        ("Issue 3's targets, measured in that run:", True),
        ("Work in progress (issue #4)", True),
        ("--seed 0 gives the same signatures", False),
        ("15 bootstrap draws (3 random seeds x 5)", False),
        ("the title-word baseline", False),
    ],
)
def test_the_pattern(line, bad):
    assert bool(INTERNAL.search(line)) is bad
