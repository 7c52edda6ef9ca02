"""The API's documentation page (``/docs``), rendered on the server from the OpenAPI schema:
plain HTML and the service's own style sheet, no script and nothing fetched from elsewhere, so
that it works where the service has no internet access. ``/openapi.json`` is the schema
itself, for tools (a client generator, a Swagger UI of one's own)."""

from __future__ import annotations

import html
import json
from typing import Any

_METHODS = ("get", "post", "put", "patch", "delete")


def _ref(schema: dict, spec: dict) -> dict:
    """``schema`` with a ``$ref`` to ``#/components/...`` followed (once per level)."""
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not ref or not ref.startswith("#/"):
        return schema if isinstance(schema, dict) else {}
    node: Any = spec
    for part in ref[2:].split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _type(schema: dict, spec: dict, depth: int = 0) -> str:
    """A short type of ``schema``: ``string``, ``array of Match``, ``integer or null`` ..."""
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        if key in schema and depth < 3:
            return " or ".join(_type(s, spec, depth + 1) for s in schema[key])
    t = schema.get("type", "object" if "properties" in schema else "any")
    if t == "array" and depth < 3:
        return f"array of {_type(schema.get('items', {}), spec, depth + 1)}"
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    return str(t)


def _fields(schema: dict, spec: dict) -> list[tuple[str, str, bool, str]]:
    """``(name, type, required, description)`` of an object schema's properties."""
    schema = _ref(schema, spec)
    req = set(schema.get("required", []))
    out = []
    for name, prop in schema.get("properties", {}).items():
        desc = prop.get("description") or _ref(prop, spec).get("description", "")
        out.append((name, _type(prop, spec), name in req, desc))
    return out


def _table(rows: list[tuple[str, str, bool, str]], what: str) -> str:
    if not rows:
        return ""
    body = "".join(
        f"<tr><td><code>{html.escape(n)}</code></td><td>{html.escape(t)}</td>"
        f"<td>{'yes' if r else ''}</td><td>{html.escape(d)}</td></tr>"
        for n, t, r, d in rows
    )
    return (
        f"<table><caption>{what}</caption><tr><th>name</th><th>type</th>"
        f"<th>required</th><th>description</th></tr>{body}</table>"
    )


def render(spec: dict) -> str:
    """The whole documentation page of an OpenAPI ``spec`` (a dict)."""
    info = spec.get("info", {})
    esc = html.escape
    parts = [f"<h1>{esc(info.get('title', 'API'))} {esc(str(info.get('version', '')))}</h1>"]
    if info.get("summary"):
        parts.append(f"<p>{esc(info['summary'])}</p>")
    if info.get("description"):
        parts.append(f"<p>{esc(info['description'])}</p>")
    parts.append('<p>The schema: <a href="/openapi.json">/openapi.json</a>.</p>')
    toc, ops = [], []
    for path, item in spec.get("paths", {}).items():
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            anchor = f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", "")
            title = f"{method.upper()} {path}"
            toc.append(
                f'<li><a href="#{esc(anchor)}"><code>{esc(title)}</code></a> '
                f"{esc(op.get('summary', ''))}</li>"
            )
            block = [f'<section id="{esc(anchor)}"><h2><code>{esc(title)}</code></h2>']
            if op.get("summary"):
                block.append(f"<p><strong>{esc(op['summary'])}</strong></p>")
            if op.get("description"):
                block.append(f"<p>{esc(op['description'])}</p>")
            params = [
                (
                    p.get("name", ""),
                    f"{_type(p.get('schema', {}), spec)} ({p.get('in', '')})",
                    bool(p.get("required")),
                    p.get("description", ""),
                )
                for p in op.get("parameters", [])
            ]
            block.append(_table(params, "parameters"))
            content = op.get("requestBody", {}).get("content", {})
            for mime, media in content.items():
                block.append(
                    _table(_fields(media.get("schema", {}), spec), f"request body ({mime})")
                )
            resp = [
                (
                    code,
                    next(iter(r.get("content", {}) or {"": None})),
                    False,
                    r.get("description", ""),
                )
                for code, r in op.get("responses", {}).items()
            ]
            block.append(
                "<table><caption>responses</caption><tr><th>status</th><th>type</th>"
                "<th></th><th>description</th></tr>"
                + "".join(
                    f"<tr><td>{esc(str(c))}</td><td>{esc(m or '')}</td><td></td>"
                    f"<td>{esc(d)}</td></tr>"
                    for c, m, _, d in resp
                )
                + "</table>"
            )
            block.append("</section>")
            ops.append("".join(block))
    schemas = spec.get("components", {}).get("schemas", {})
    models = [
        f'<section id="model-{esc(name)}"><h3><code>{esc(name)}</code></h3>'
        + _table(_fields(s, spec), "fields")
        + "</section>"
        for name, s in schemas.items()
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(info.get('title', 'API'))} API</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/static/style.css"></head>'
        '<body class="apidoc"><main>'
        + "".join(parts)
        + "<h2>Endpoints</h2><ul>"
        + "".join(toc)
        + "</ul>"
        + "".join(ops)
        + "<h2>Models</h2>"
        + "".join(models)
        + "</main></body></html>"
    )
