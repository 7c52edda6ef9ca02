"""An index's location as it may be shown: no password, token or other secret of a URL."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlsplit

#: Query parameters of an index URL shown with their value (the others are replaced by ***).
SAFE_PARAMS = frozenset({"prefix", "db", "protocol"})
MASK = "***"


def redact_location(target: str) -> str:
    """``target`` with the secrets of a URL masked: the password of ``user:password@``
    (``redis://user:***@host:6379/0``; a user part alone is masked whole), the value of every query parameter but ``prefix``,
    ``db`` and ``protocol`` (``?password=***``), and the fragment dropped. A path that is not
    a URL is returned as it is."""
    if "://" not in target:
        return target
    try:
        parts = urlsplit(target)
        port = parts.port  # a bad port raises here
    except ValueError:
        scheme = target.split("://", 1)[0]
        return f"{scheme}://{MASK}"  # not parseable: nothing of it is known to be safe
    netloc = parts.netloc
    if "@" in netloc:
        # user:password@ keeps the user; a user part alone may be a password (redis://SECRET@)
        userinfo, hostport = netloc.rsplit("@", 1)
        user, sep, _ = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{hostport}" if sep else f"{MASK}@{hostport}"
    del port
    query = "&".join(
        f"{quote(k, safe='')}={quote(v, safe='') if k in SAFE_PARAMS else MASK}"
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    )
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
