"""An index's location is shown without its secrets: the password of a Redis URL and the values
of query parameters that may hold one are masked in ``Index.stats()``, the command line's output
and its error messages (a real Redis server that asks for a password)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REDIS_PASSWORD

from neardup.index.redact import redact_location

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "target,shown",
    [
        ("redis://user:pass@cache:6379/0?prefix=shop", "redis://user:***@cache:6379/0?prefix=shop"),
        ("redis://:pass@cache:6379/0", "redis://:***@cache:6379/0"),
        ("redis://pass@cache/0", "redis://***@cache/0"),  # a user part alone may be the password
        ("rediss://u:p%40ss@[::1]:6380/2", "rediss://u:***@[::1]:6380/2"),
        (
            "redis://cache/0?prefix=shop&password=pw&db=1",
            "redis://cache/0?prefix=shop&password=***&db=1",
        ),
        ("unix:///run/redis.sock?db=1&password=pw", "unix:///run/redis.sock?db=1&password=***"),
        ("redis://cache/0#token", "redis://cache/0"),
        ("redis://cache:notaport/0", "redis://***"),  # not understood: nothing shown
        ("shop.db", "shop.db"),
        ("/srv/data/shop.db", "/srv/data/shop.db"),
    ],
)
def test_redact_location(target: str, shown: str) -> None:
    assert redact_location(target) == shown


def _neardup(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neardup.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_redis_index_with_a_password_never_shows_it(redis_with_password: str) -> None:
    from neardup import Index

    url = redis_with_password + "?prefix=redacted"
    with Index(url) as idx:
        idx.storage.drop()
    with Index(url) as idx:
        idx.add("a", "a text about kettles and lamps")
        st = idx.stats()
        assert st["documents"] == 1
        assert st["url"].startswith("redis://:***@127.0.0.1:")
        assert REDIS_PASSWORD not in json.dumps(st)
    out = _neardup("index", "stats", url, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["url"].startswith("redis://:***@")
    assert REDIS_PASSWORD not in out.stdout + out.stderr
    # errors name the server without the password
    wrong = url.replace(REDIS_PASSWORD, REDIS_PASSWORD + "-wrong")
    out = _neardup("index", "stats", wrong)
    assert out.returncode != 0 and "cannot reach Redis" in out.stderr
    assert REDIS_PASSWORD not in out.stdout + out.stderr
    out = _neardup("index", "create", url)
    assert out.returncode != 0 and "exists under this prefix" in out.stderr
    assert REDIS_PASSWORD not in out.stdout + out.stderr
    with Index(url) as idx:
        idx.storage.drop()
