"""The whole HTTP API fuzzed from its own OpenAPI schema: for every operation, requests whose
bodies, path and query parameters are drawn from the schema (and some that break it), sent
with a write key, never get a 5xx, and every answer matches the schema the API states (its
response model for 2xx, ``{"detail": ...}`` for errors). Bounded in time (a fixed number of
examples)."""

from __future__ import annotations

import copy
import json
import random
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
jsonschema = pytest.importorskip("jsonschema")

from fastapi.testclient import TestClient  # noqa: E402

from neardup import Index  # noqa: E402
from neardup.server import create_app  # noqa: E402
from neardup.server.access import ApiKeys  # noqa: E402

KEY = "fuzz-write-key-0123456789abcdef"


def _app() -> tuple[TestClient, dict]:
    idx = Index(passages=True)
    rng = random.Random(3)
    words = [f"w{i}" for i in range(300)]
    idx.add_many([(f"doc-{i}", " ".join(rng.choice(words) for _ in range(80))) for i in range(30)])
    keys = ApiKeys(write=[KEY])
    app = create_app(idx, api_keys=keys, max_text_bytes=20_000, max_batch=50)
    client = TestClient(
        app,
        base_url="http://localhost",
        raise_server_exceptions=False,
        headers={"Authorization": f"Bearer {KEY}"},
    )
    return client, app.openapi()


CLIENT, SPEC = _app()


def _inline(schema: Any, depth: int = 0) -> Any:
    """``schema`` with every ``$ref`` to the components replaced by its target."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if ref is not None and depth < 8:
            target = SPEC
            for part in ref[2:].split("/"):
                target = target[part]
            return _inline(copy.deepcopy(target), depth + 1)
        return {k: _inline(v, depth) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inline(v, depth) for v in schema]
    return schema


def _operations() -> list[tuple[str, str, dict]]:
    ops = []
    for path, item in SPEC["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "delete", "put", "patch"):
                ops.append((method, path, op))
    return ops


OPS = _operations()


def from_schema(schema: dict, depth: int = 0) -> st.SearchStrategy:
    """Values of the JSON Schema subset that the API's models use (types, ``anyOf``,
    ``enum``/``const``, bounds, lengths, ``items``, ``properties``/``required``)."""
    if not isinstance(schema, dict) or not schema or depth > 6:
        return st.none() | st.booleans() | st.integers() | _TEXT
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, depth + 1) for s in schema[key]])
    t = schema.get("type")
    if isinstance(t, list):
        return st.one_of([from_schema({**schema, "type": x}, depth + 1) for x in t])
    if t == "null":
        return st.none()
    if t == "boolean":
        return st.booleans()
    if t == "integer":
        return st.integers(schema.get("minimum", -(2**40)), schema.get("maximum", 2**40))
    if t == "number":
        return st.floats(
            schema.get("minimum", -1e9),
            schema.get("maximum", 1e9),
            allow_nan=False,
            allow_infinity=False,
        )
    if t == "string":
        return st.text(
            alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
            min_size=schema.get("minLength", 0),
            max_size=min(schema.get("maxLength", 200), 200),
        )
    if t == "array":
        return st.lists(
            from_schema(schema.get("items", {}), depth + 1),
            min_size=schema.get("minItems", 0),
            max_size=min(schema.get("maxItems", 4), 4),
        )
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {k: from_schema(v, depth + 1) for k, v in props.items() if k in required},
        optional={k: from_schema(v, depth + 1) for k, v in props.items() if k not in required},
    )


_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict | None, dict, Any]:
    method, path, op = draw(st.sampled_from(OPS))
    url = path
    params: dict[str, Any] = {}
    for p in op.get("parameters", []):
        schema = _inline(p.get("schema", {}))
        value = draw(from_schema(schema) if schema else _TEXT)
        if p["in"] == "path":
            seg = quote(str(value), safe="") or "x"
            if seg in (".", ".."):  # dot segments are removed by every client (RFC 3986)
                seg = seg.replace(".", "%2E")
            url = url.replace("{" + p["name"] + "}", seg).replace("{" + p["name"] + ":path}", seg)
        elif p["in"] == "query" and (p.get("required") or draw(st.booleans())):
            params[p["name"]] = value
    body = None
    content = op.get("requestBody", {}).get("content", {})
    if "application/json" in content:
        schema = _inline(content["application/json"]["schema"])
        # mostly valid bodies, sometimes anything JSON (the API must refuse those with a 4xx)
        body = draw(
            st.one_of(
                from_schema(schema),
                from_schema(schema),
                st.recursive(
                    st.none() | st.booleans() | st.integers() | _TEXT,
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(_TEXT, c, max_size=3),
                    max_leaves=6,
                ),
            )
        )
    return method, url, body, params, op


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(requests())
def test_no_request_drawn_from_the_schema_gets_a_server_error(req) -> None:
    method, url, body, params, op = req
    if "multipart/form-data" in op.get("requestBody", {}).get("content", {}):
        return  # uploads: fuzzed in test_server.py with real multipart bodies
    r = CLIENT.request(
        method.upper(),
        url,
        params=params,
        content=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"} if body is not None else {},
    )
    assert r.status_code < 500, (method, url, body, r.status_code, r.text[:500])
    if r.headers.get("content-type", "").startswith("application/json"):
        got = r.json()
        status = str(r.status_code)
        responses = op.get("responses", {})
        declared = responses.get(status) or responses.get(f"{status[0]}XX")
        if r.status_code >= 400:
            assert isinstance(got, dict) and isinstance(got.get("detail"), str), got
        elif declared is not None and "application/json" in declared.get("content", {}):
            schema = _inline(declared["content"]["application/json"].get("schema", {}))
            if schema:
                jsonschema.validate(got, schema)
