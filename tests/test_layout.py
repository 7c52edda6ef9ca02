"""Imports point one way (the README's architecture section): front ends (cli, server) ->
engines, index and the studies -> the stage library -> the kernels -> config, validate and
errors; io (which reads JSONL with a compiled kernel) is used by the floors above the stages only. Checked on the source with ``ast``,
including imports inside functions."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "neardup"

KERNELS = {
    "text",
    "sketch",
    "lsh",
    "verify",
    "cluster",
    "exact",
    "_arrays",
    "_malloc",
    "_kernels",
    "_threads",
    "_columns",
}
BASE = {"config", "validate", "errors", "_version", "_extras", "_log", "_records"}
# what each floor may import (top-level names under neardup); a floor may import itself
ALLOWED = {
    "kernel": KERNELS | BASE,
    "base": BASE,
    "pipeline": {"pipeline", "expand", "result"} | KERNELS | BASE,
    "io": {"io", "result", "_kernels", "_threads"} | BASE,  # the JSONL scanner; copy threads
    "result": {"result"} | KERNELS | BASE,
}
FRONT = {"cli", "server"}


def _floor(top: str) -> str | None:
    if top in KERNELS:
        return "kernel"
    if top in BASE:
        return "base"
    if top in ALLOWED:
        return top
    return None


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield path, parts


class _RuntimeOnly(ast.NodeTransformer):
    """Leaves out the imports under ``if TYPE_CHECKING:`` (type checkers' only)."""

    def visit_If(self, node: ast.If) -> ast.If:
        t = node.test
        if (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
            isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
        ):
            node.body = [ast.Pass()]
        self.generic_visit(node)
        return node


def _imports(
    path: Path, parts: list[str], runtime_only: bool = False
) -> list[tuple[int, list[str]]]:
    """``(line, absolute module path under neardup)`` of every neardup import in the file
    (``runtime_only``: not those under ``if TYPE_CHECKING:``)."""
    pkg = parts if path.name == "__init__.py" else parts[:-1]
    out = []
    tree = ast.parse(path.read_text())
    if runtime_only:
        tree = _RuntimeOnly().visit(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else list(pkg)
                mod = base + (node.module.split(".") if node.module else [])
                if not node.module:  # from . import x: a module, or a name of the package
                    for alias in node.names:
                        sub = SRC.joinpath(*mod, alias.name)
                        is_mod = sub.with_suffix(".py").exists() or sub.is_dir()
                        out.append((node.lineno, mod + [alias.name] if is_mod else mod))
                    continue
                out.append((node.lineno, mod))
            elif node.module and node.module.split(".")[0] == "neardup":
                out.append((node.lineno, node.module.split(".")[1:]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "neardup":
                    out.append((node.lineno, alias.name.split(".")[1:]))
    return out


def test_imports_point_one_way():
    bad = []
    for path, parts in _modules():
        if not parts:
            continue  # the package root re-exports the public API
        floor = _floor(parts[0])
        for line, target in _imports(path, parts):
            if not target:
                bad.append(f"{path.relative_to(SRC)}:{line}: imports the package root")
                continue
            top = target[0]
            if top in FRONT and parts[0] != top and not (parts[0] == "cli" and top == "server"):
                bad.append(f"{path.relative_to(SRC)}:{line}: imports the front end {top}")
            if floor is not None and top not in ALLOWED[floor]:
                bad.append(f"{path.relative_to(SRC)}:{line}: a {floor} module imports {top}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "old", ["pipeline", "job", "fca_job", "cli_index", "cli_analyze", "_jit", "_hash", "stages"]
)
def test_moved_modules_are_gone(old):
    assert not (SRC / f"{old}.py").exists()


@pytest.mark.parametrize("old", ["engines/local_job", "reuse_job", "fca/job", "products/job"])
def test_the_file_jobs_live_in_one_place(old):
    """The file jobs (files in, a folder out) are in neardup.jobs, apart from the algorithms."""
    assert not (SRC / f"{old}.py").exists()


def test_only_the_front_ends_call_the_jobs():
    """The jobs sit above the engines and the studies: nothing but the command line, the
    service and the jobs themselves import them."""
    bad = []
    for path, parts in _modules():
        if not parts or parts[0] in ("cli", "server", "jobs"):
            continue
        for line, target in _imports(path, parts):
            if target[:1] == ["jobs"]:
                bad.append(f"{path.relative_to(SRC)}:{line}: imports {'.'.join(target)}")
    assert not bad, "\n".join(bad)


def test_no_private_names_across_packages():
    """A module may use another package's public names only (``_name`` stays in its package:
    the Dask engine once imported nine private names of io, job and lsh)."""
    bad = []
    for path, parts in _modules():
        if not parts:
            continue
        pkg = parts[0] if len(parts) > 1 or path.name == "__init__.py" else None
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            private = [
                a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
            ]
            if not private:
                continue
            for line, target in _imports(path, parts):
                if line == node.lineno and (not target or target[0] != pkg or pkg is None):
                    bad.append(
                        f"{path.relative_to(SRC)}:{line}: imports {private} from "
                        f"{'.'.join(target) or 'neardup'}"
                    )
                    break
    assert not bad, "\n".join(bad)


#: the algorithms of candidates, verification, clustering and pair expansion, which the engines
#: and the index reach only through the pipeline's steps (neardup.pipeline)
PIPELINE_ALGORITHMS = {
    ("verify",),
    ("cluster",),
    ("expand",),
    ("_kernels", "verify"),
    ("_kernels", "cluster"),
    ("_kernels", "lsh"),
}
#: what the engines may still take from neardup.lsh: its parameters, not its search
LSH_PARAMETERS = {"lsh_params", "s_curve", "id_bits", "key_mask", "choose_bands"}


def test_engines_and_index_verify_and_cluster_through_the_pipeline():
    """The local engine, the Dask engine's steps and the online index run candidates,
    verification, clustering and pair expansion by the pipeline's functions only: one entry
    point each, not one per engine."""
    bad = []
    for path, parts in _modules():
        if not parts or parts[0] not in ("engines", "index"):
            continue
        tree = ast.parse(path.read_text())
        lsh_names = {
            node.lineno: [a.name for a in node.names]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
        }
        for line, target in _imports(path, parts):
            where = f"{path.relative_to(SRC)}:{line}"
            if any(tuple(target[: len(a)]) == a for a in PIPELINE_ALGORITHMS):
                bad.append(f"{where}: imports {'.'.join(target)} (use neardup.pipeline)")
            elif target[:1] == ["lsh"]:
                extra = set(lsh_names.get(line, ["*"])) - LSH_PARAMETERS
                if extra:
                    bad.append(f"{where}: imports {sorted(extra)} from lsh (use neardup.pipeline)")
    assert not bad, "\n".join(bad)


def test_the_pipeline_check_sees_a_stray_import(tmp_path, monkeypatch):
    """The check above fails on an engine module that verifies by itself."""
    layout = sys.modules[__name__]
    (tmp_path / "engines").mkdir()
    (tmp_path / "engines" / "x.py").write_text(
        "from ..verify import overlap_pairs\nfrom ..lsh import candidate_pairs, lsh_params\n"
    )
    monkeypatch.setattr(layout, "SRC", tmp_path)
    with pytest.raises(AssertionError) as e:
        layout.test_engines_and_index_verify_and_cluster_through_the_pipeline()
    assert "engines/x.py:1: imports verify" in str(e.value)
    assert "engines/x.py:2: imports ['candidate_pairs'] from lsh" in str(e.value)


def test_no_module_is_over_800_lines():
    """A module that grows past 800 lines holds more than one concept: split it (a package of
    modules, each with its docstring), as the readers, writers and the service are."""
    long = []
    for path, _ in _modules():
        n = len(path.read_text().splitlines())
        if n > 800:
            long.append(f"{path.relative_to(SRC)}: {n} lines")
    assert not long, "\n".join(long)


def test_no_import_circle():
    """No module imports, at run time and wherever the import statement is, one that imports
    it back, however far round (a package's ``__init__`` re-exporting its own modules aside):
    what two modules share goes to a third that both import."""
    modules = {".".join(parts): (path, parts) for path, parts in _modules()}
    graph: dict[str, set[str]] = {}
    for name, (path, parts) in modules.items():
        deps = set()
        for _, target in _imports(path, parts, runtime_only=True):
            for k in range(len(target), 0, -1):
                if ".".join(target[:k]) in modules:
                    deps.add(".".join(target[:k]))
                    break
        graph[name] = {d for d in deps if d != name and not d.startswith(name + ".")}
    circles, done = [], set()
    for start in graph:  # a depth-first walk from each module, back to a module on its path
        stack, on_path = [(start, iter(sorted(graph[start])))], [start]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on_path.pop()
                done.add(node)
            elif nxt in on_path:
                circles.append(on_path[on_path.index(nxt) :] + [nxt])
            elif nxt not in done:
                stack.append((nxt, iter(sorted(graph[nxt]))))
                on_path.append(nxt)
    assert not circles, "\n".join(" -> ".join(c) for c in circles)
