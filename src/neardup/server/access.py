"""Who may use the service, and from where: API keys and their roles, the Host names the service
answers to, and the web origins that may send it state-changing requests.

- :class:`ApiKeys`: keys with a role, ``read`` (query, check without adding, get, list, stats)
  or ``write`` (everything, adding and deleting included), from a key file and the environment
  variables ``NEARDUP_API_KEY_READ`` / ``NEARDUP_API_KEY_WRITE``. Only SHA-256 digests of the
  keys are kept, compared in constant time; a key file is read again when it changes (or on
  ``reload()``, which ``neardup serve`` calls on SIGHUP), so keys are rotated without a restart.
- :class:`HostRules`: the ``Host`` header allow-list (DNS rebinding).
- :func:`origin_allowed`: the ``Origin`` check of requests that change something (cross-site
  form posts, uploads included).
- :func:`is_loopback`: whether an address to bind to reaches this machine only.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal

from .._records import record
from ..errors import ConfigError

Role = Literal["read", "write"]
#: The roles, weakest first: a role may do what every role before it may.
ROLES: tuple[Role, ...] = ("read", "write")
#: Environment variables holding keys, by role (several keys: separated by commas or spaces).
ENV_KEYS: dict[Role, str] = {"read": "NEARDUP_API_KEY_READ", "write": "NEARDUP_API_KEY_WRITE"}
#: The shortest key accepted.
MIN_KEY_LENGTH = 16
#: A key's characters: RFC 6750's bearer token (letters, digits, ``-._~+/``, trailing ``=``),
#: so that a key travels unchanged in an ``Authorization`` header.
_KEY = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
#: How often, in seconds, a request may look whether the key file changed.
RELOAD_CHECK_SECONDS = 1.0
#: How to make a good key, for the error messages.
MAKE_KEY = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


def allows(role: Role, needed: Role) -> bool:
    """Whether a key with ``role`` may do what needs ``needed``."""
    return ROLES.index(role) >= ROLES.index(needed)


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def _check_key(key: str, where: str) -> None:
    """Refuse a key that is not a bearer token or is too short; the message never shows it."""
    if not _KEY.fullmatch(key):
        raise ConfigError(
            f"{where}: a key may hold only letters, digits and - . _ ~ + / "
            f"(and = at its end); make one with {MAKE_KEY}"
        )
    if len(key) < MIN_KEY_LENGTH:
        raise ConfigError(
            f"{where}: the key has {len(key)} characters; a key needs at least "
            f"{MIN_KEY_LENGTH} (make one with {MAKE_KEY})"
        )


def parse_key_file(text: str, name: str = "the key file") -> list[tuple[Role, str]]:
    """The ``(role, key)`` pairs of a key file: one ``ROLE:KEY`` a line (``read`` or
    ``write``), blank lines and lines starting with ``#`` ignored, white space around the role
    and the key ignored. Errors name the line, never the key."""
    out: list[tuple[Role, str]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        role, sep, key = line.partition(":")
        role, key = role.strip().lower(), key.strip()
        if not sep or role not in ROLES:
            raise ConfigError(
                f"{name}, line {n}: expected ROLE:KEY with ROLE one of "
                f"{', '.join(ROLES)} (e.g. read:KEY)"
            )
        _check_key(key, f"{name}, line {n}")
        out.append((role, key))  # type: ignore[arg-type]
    return out


@record(frozen=True)
class _Keys:
    """One generation of keys: digests by role, and what the start-up message says."""

    digests: tuple[tuple[bytes, Role], ...]

    def counts(self) -> dict[str, int]:
        return {r: sum(1 for _, role in self.digests if role == r) for r in ROLES}


class ApiKeys:
    """API keys with roles. ``read``/``write``: keys given directly (the library's way);
    ``file``: a key file (see :func:`parse_key_file`), read now and again whenever it changes;
    ``environ``: a mapping to take ``NEARDUP_API_KEY_READ``/``NEARDUP_API_KEY_WRITE`` from
    (``os.environ`` for the command line). ``log`` receives what a reload did (never a key).

    Keys are not stored in the index: rotating them never touches the data. A reload that finds
    an unreadable or invalid file, or one with no key, keeps the keys in use and says why."""

    def __init__(
        self,
        *,
        read: Iterable[str] = (),
        write: Iterable[str] = (),
        file: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        log: Callable[[str], None] | None = None,
    ):
        self.file = Path(file) if file is not None else None
        self._log = log or (lambda message: None)
        fixed: list[tuple[Role, str]] = []
        for role, keys in (("read", read), ("write", write)):
            for key in keys:
                _check_key(key, f"a {role} key")
                fixed.append((role, key))  # type: ignore[arg-type]
        for role, var in ENV_KEYS.items():
            for key in re.split(r"[\s,]+", (environ or {}).get(var, "").strip()):
                if key:
                    _check_key(key, f"environment variable {var}")
                    fixed.append((role, key))
        self._fixed = tuple((_digest(k), r) for r, k in fixed)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._checked = 0.0
        from_file: tuple[tuple[bytes, Role], ...] = ()
        if self.file is not None:
            from_file, self._stamp = self._read_file()
            if not from_file:
                raise ConfigError(
                    f"{self.file}: no key in the file; add lines such as "
                    f"write:KEY (make a key with {MAKE_KEY})"
                )
        self._keys = _Keys(self._fixed + from_file)
        if not self._keys.digests:
            raise ConfigError(
                "no API key given: pass keys, a key file or the environment "
                f"variables {' / '.join(ENV_KEYS.values())}"
            )

    @classmethod
    def configured(
        cls,
        file: str | os.PathLike[str] | None,
        environ: Mapping[str, str],
        log: Callable[[str], None] | None = None,
    ) -> ApiKeys | None:
        """The keys of ``file`` and ``environ``'s variables, or None if neither gives any."""
        if file is None and not any(environ.get(v, "").strip() for v in ENV_KEYS.values()):
            return None
        return cls(file=file, environ=environ, log=log)

    def _read_file(self) -> tuple[tuple[tuple[bytes, Role], ...], tuple[int, int, int]]:
        assert self.file is not None
        try:
            st = self.file.stat()
            text = self.file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
            raise ConfigError(f"{self.file}: cannot read the key file ({why})") from None
        pairs = parse_key_file(text, str(self.file))
        return (tuple((_digest(k), r) for r, k in pairs), (st.st_mtime_ns, st.st_size, st.st_ino))

    def counts(self) -> dict[str, int]:
        """How many keys each role has."""
        return self._keys.counts()

    def describe(self) -> str:
        """Where the keys come from and how many there are, for the start-up message."""
        c = self.counts()
        where = [str(self.file)] if self.file is not None else []
        return (
            f"{c['read']} read key{'s' if c['read'] != 1 else ''}, {c['write']} write "
            f"key{'s' if c['write'] != 1 else ''}"
            + (f" ({', '.join(where)}; read again when it changes)" if where else "")
        )

    def reload(self) -> bool:
        """Read the key file again; True if the keys changed. On a bad file the keys in use
        stay, and ``log`` says why."""
        if self.file is None:
            return False
        with self._lock:
            try:
                from_file, stamp = self._read_file()
            except ConfigError as e:
                self._log(f"API keys not reloaded, the keys in use stay: {e}")
                return False
            self._stamp = stamp
            if not from_file:
                self._log(f"API keys not reloaded, the keys in use stay: {self.file} holds no key")
                return False
            new = _Keys(self._fixed + from_file)
            changed = new != self._keys
            self._keys = new
        if changed:
            c = new.counts()
            self._log(f"API keys reloaded from {self.file}: {c['read']} read, {c['write']} write")
        return changed

    def reload_if_changed(self) -> None:
        """Reload the key file if its modification time, size or inode changed (looked at
        most once every ``RELOAD_CHECK_SECONDS``)."""
        if self.file is None:
            return
        now = time.monotonic()
        if now - self._checked < RELOAD_CHECK_SECONDS:
            return
        self._checked = now
        try:
            st = self.file.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        if stamp != self._stamp:
            self.reload()
            self._stamp = stamp  # a bad file is reported once, not at every request

    def role(self, key: str) -> Role | None:
        """The role of ``key``, or None if it is no key of the service. Every stored digest is
        compared, in constant time, whatever the key."""
        d = _digest(key)
        found: Role | None = None
        for digest, role in self._keys.digests:
            if hmac.compare_digest(d, digest) and (found is None or allows(role, found)):
                found = role
        return found


# ---------------------------------------------------------------------------------------------
# Host names and origins


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of a Host header or an allow-list entry, host in lower case without a
    trailing dot, IPv6 addresses in brackets; None if it is not one."""
    value = value.strip().lower()
    if not value:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_s = rest[1:] if rest else None
    else:
        host, sep, port_s = value.partition(":")
        if not sep:
            port_s = None
        if ":" in (port_s or ""):
            return None
    host = host.rstrip(".")
    if port_s is not None:
        if not port_s.isdigit() or not 0 < int(port_s) < 65536:
            return None
        return host, int(port_s)
    return host, None


def host_entry(host: str, port: int | None = None) -> str:
    """The allow-list entry of an address to bind to: IPv6 addresses bracketed."""
    h = host.strip().lower()
    if ":" in h and not h.startswith("["):
        h = f"[{h}]"
    return h if port is None else f"{h}:{port}"


#: The names of this machine, always allowed.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


class HostRules:
    """The Host header values the service answers to. An entry is ``NAME`` (any port) or
    ``NAME:PORT``; ``*`` allows every Host (for a service behind a proxy that checks it)."""

    def __init__(self, entries: Iterable[str]):
        self.any = False
        self._allowed: set[tuple[str, int | None]] = set()
        self.entries: list[str] = []
        for e in entries:
            if e.strip() == "*":
                self.any = True
                self.entries.append("*")
                continue
            got = _split_host(e)
            if got is None or not got[0] or "/" in e:
                raise ConfigError(
                    f"allowed host {e!r} is invalid: a host name or address, "
                    "optionally with :PORT (e.g. search.example.com or "
                    "10.0.0.5:8000), or *"
                )
            self._allowed.add(got)
            self.entries.append(e.strip().lower())

    @classmethod
    def for_binding(cls, host: str, port: int, extra: Iterable[str] = ()) -> HostRules:
        """The bound address and this machine's names, with the port, plus ``extra``."""
        names = [host_entry(host, port)] if host not in ("", "0.0.0.0", "::") else []
        names += [f"{n}:{port}" for n in LOOPBACK_NAMES]
        return cls(dict.fromkeys(names + list(extra)))

    def allows(self, header: str | None) -> bool:
        if self.any:
            return True
        if header is None:
            return False
        got = _split_host(header)
        if got is None:
            return False
        return got in self._allowed or (got[0], None) in self._allowed


_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalise_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` in lower case with the scheme's default port left out, or None
    if ``origin`` is not a web origin (``null``, a path, another scheme)."""
    origin = origin.strip().lower()
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme not in _DEFAULT_PORTS or "/" in rest or "@" in rest:
        return None
    got = _split_host(rest)
    if got is None or not got[0]:
        return None
    host, port = got
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def check_origins(origins: Iterable[str], what: str) -> list[str]:
    """``origins`` normalised; an invalid one is a ConfigError naming ``what``."""
    out = []
    for o in origins:
        n = normalise_origin(o)
        if n is None:
            raise ConfigError(
                f"{what} {o!r} is invalid: a web origin such as "
                "https://app.example.com (scheme, host and port; no path, no *)"
            )
        out.append(n)
    return out


def origin_allowed(
    origin: str, scheme: str, host_header: str | None, allowed: Iterable[str]
) -> bool:
    """Whether a request from web page ``origin`` may change something: the service's own
    origin (``scheme`` and the request's Host) or one of ``allowed`` (normalised)."""
    got = normalise_origin(origin)
    if got is None:
        return False
    own = normalise_origin(f"{scheme}://{host_header}") if host_header else None
    return got == own or got in allowed


# ---------------------------------------------------------------------------------------------
# Binding


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` serves this machine only: a loopback address, or a name
    all of whose addresses are loopback ones (``localhost``)."""
    h = host.strip().strip("[]")
    if not h:
        return False
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(h, None)
    except OSError:
        return False
    # the host of each socket address: a str for AF_INET and AF_INET6, which a name gives
    addrs = {str(info[4][0]) for info in infos}
    return bool(addrs) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs)
