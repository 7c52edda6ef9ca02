import os
import sys

from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

# Compiled kernels make the first example slow; never fail a property on timing.
settings.register_profile(
    "neardup", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
# CI runs the same examples every time (a failure there is reproducible and does not depend on
# the day's luck); developers' runs draw new examples and so keep searching.
settings.register_profile("ci", parent=settings.get_profile("neardup"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "neardup")


# -- real servers, started by the tests that need them -----------------------------------------
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_redis(tmp_path_factory, *args: str):
    """A redis-server on a free loopback port with ``args``: ``(process, port)``; skips where
    it is not installed."""
    exe = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None
    )
    if exe is None:
        pytest.skip(
            "redis-server is not installed (apt-get install redis-server; .ci/run does this)"
        )
    port = free_port()
    d = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [
            exe,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(d),
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    return proc, port


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server on loopback for this test session (Debian's redis-server, installed
    by .ci/run); the Redis tests skip, saying why, where it is not installed."""
    proc, port = _start_redis(tmp_path_factory)
    url = f"redis://127.0.0.1:{port}/0"
    yield from _ready(proc, url)


#: The password of :func:`redis_with_password`'s server.
REDIS_PASSWORD = "s3cret-Redis-pw-4417"


@pytest.fixture(scope="session")
def redis_with_password(tmp_path_factory):
    """A real redis-server that asks for :data:`REDIS_PASSWORD`; yields its URL with it."""
    proc, port = _start_redis(tmp_path_factory, "--requirepass", REDIS_PASSWORD)
    yield from _ready(proc, f"redis://:{REDIS_PASSWORD}@127.0.0.1:{port}/0")


def _ready(proc, url):
    import redis

    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.skip("redis-server did not start")
    yield url
    proc.terminate()
    proc.wait(10)


# -- the cyclic garbage collector around a command ----------------------------------------------


class CycleSpy:
    """Around each command that ``neardup.cli.main`` runs: whether the cyclic collector was on
    while it ran (``enabled``), the collections made meanwhile (``collections``), and, after
    ``main`` returned, the objects of reference cycles it left (``left()``)."""

    def __init__(self, monkeypatch):
        import gc

        import neardup.cli as cli

        self.gc = gc
        self.enabled: list[bool] = []
        self.collections: list[list[str]] = []
        self._seen: list[str] = []
        real = cli.run_command

        def spy(args):
            command = args.func

            def func(a):
                self._seen.clear()
                self.enabled.append(gc.isenabled())
                try:
                    return command(a)
                finally:
                    self.collections.append(list(self._seen))

            args.func = func
            return real(args)

        monkeypatch.setattr(cli, "run_command", spy)

    def _callback(self, phase, info):
        self._seen.append(phase)

    def left(self) -> int:
        """Collect now (frozen objects included: ``main`` freezes what is left, for the
        process's exit); the number of unreachable objects found."""
        gc = self.gc
        gc.disable()
        try:
            gc.unfreeze()
            return gc.collect()
        finally:
            gc.enable()


@pytest.fixture
def cycle_spy(monkeypatch):
    import gc

    spy = CycleSpy(monkeypatch)
    gc.callbacks.append(spy._callback)
    try:
        yield spy
    finally:
        gc.callbacks.remove(spy._callback)
