"""The shape of the command line: every option documented, imports that point one way (command
modules -> ``neardup.cli.common``), and a parser that is built without the heavy libraries."""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import neardup.cli
from neardup.cli import build_parser

CLI_DIR = Path(neardup.cli.__file__).parent
COMMAND_MODULES = {"dedup", "index", "serve", "analyze", "products", "fca", "reuse"}


def parsers(p: argparse.ArgumentParser, path: tuple[str, ...] = ("neardup",)):
    """(command path, parser, {sub-command: its help}) for ``p`` and every sub-parser under it."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), sub, helps.get(name)
                yield from parsers(sub, path + (name,))


def test_every_command_and_option_has_a_help_text():
    top = build_parser()
    found = list(parsers(top))
    names = {" ".join(path) for path, _, _ in found}
    assert {
        "neardup dedup",
        "neardup products dedup",
        "neardup products eval",
        "neardup fca",
        "neardup index create",
        "neardup index add",
        "neardup index query",
        "neardup index remove",
        "neardup index stats",
        "neardup stream",
        "neardup serve",
        "neardup analyze scurve",
        "neardup analyze params",
        "neardup analyze recall",
        "neardup analyze bands",
        "neardup analyze grid",
        "neardup analyze distribution",
    } <= names
    missing = []
    for path, parser, help_text in [(("neardup",), top, "-")] + found:
        assert parser.format_help()  # builds, and every help text formats (no stray %)
        if not (help_text or "").strip():
            missing.append(" ".join(path))
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not (action.help or "").strip():
                missing.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"without a help text: {missing}"


def _help_texts(p: argparse.ArgumentParser, path=("neardup",)) -> dict[str, str]:
    return {" ".join(path): p.format_help()} | {
        " ".join(sub_path): sub.format_help() for sub_path, sub, _ in parsers(p, path)
    }


ALL_COMMANDS = sorted(set().union(*(family.COMMANDS for family in neardup.cli.FAMILIES)))


@pytest.mark.parametrize("command", ALL_COMMANDS)
def test_the_parser_built_for_one_command_is_the_full_one_for_it(command):
    """main builds only the family of the command it runs; that command parses as it does in
    the full parser, and the top-level help lists every command as before."""
    full, lazy = _help_texts(build_parser()), _help_texts(build_parser(command))
    assert lazy["neardup"] == full["neardup"]
    mine = {k: v for k, v in full.items() if k.split()[1:2] == [command]}
    assert mine and {k: lazy[k] for k in mine} == mine


@pytest.mark.parametrize("argv", [[], ["bogus"], ["--bogus"]])
def test_top_level_errors_list_every_command(argv, capsys):
    errors = []
    for parser in (build_parser(), build_parser("")):
        with pytest.raises(SystemExit) as e:
            parser.parse_args(argv)
        errors.append((e.value.code, capsys.readouterr().err))
    assert errors[0] == errors[1] and errors[0][0] == 2


def _cli_imports(module: str) -> set[str]:
    """Modules of ``neardup.cli`` that ``module`` (a file of the package) imports, as
    ``neardup.cli`` or ``neardup.cli.NAME``, wherever the import statement is."""
    tree = ast.parse((CLI_DIR / f"{module}.py").read_text())
    submodules = {f.stem for f in CLI_DIR.glob("*.py")}
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("neardup.cli")}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:  # relative to the package neardup.cli
                parts = ["neardup", "cli"][: 3 - node.level]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base == "neardup" and any(a.name == "cli" for a in node.names):
                base = "neardup.cli"
            if base == "neardup.cli":
                for a in node.names:
                    out.add(f"neardup.cli.{a.name}" if a.name in submodules else "neardup.cli")
            elif base.startswith("neardup.cli."):
                out.add(base)
    return out


def test_cli_imports_point_one_way():
    modules = {f.stem for f in CLI_DIR.glob("*.py")} - {"__init__", "__main__"}
    assert modules == COMMAND_MODULES | {"common"}
    # common is shared by every command and imports none of them
    assert _cli_imports("common") == set()
    for name in COMMAND_MODULES:
        # a command family reads neardup.cli.common and nothing else of the package: not the
        # package itself (whose build_parser imports it) and not another family
        assert _cli_imports(name) == {"neardup.cli.common"}, name
    assert _cli_imports("__init__") == {f"neardup.cli.{m}" for m in COMMAND_MODULES | {"common"}}


def _run_python(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


HEAVY = [
    "pyarrow",
    "rich",
    "fastapi",
    "dask",
    "distributed",
    "uvicorn",
    "redis",
    "matplotlib",
    "sklearn",
    "starlette",
]


def test_building_the_parser_imports_no_heavy_library():
    """``neardup --help`` must stay fast: the libraries of the commands are imported when a
    command runs. (The full parser reads the analyses' defaults, which loads numpy: see the
    next test for the commands users start most.)"""
    got = _run_python(
        "import json, sys\n"
        "from neardup.cli import build_parser\n"
        "build_parser().format_help()\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    assert got == []


def test_neardup_help_builds_no_command_options():
    """``neardup --help`` lists the commands without building their options, which would read
    the I/O formats and the analyses' defaults."""
    got = _run_python(
        "import contextlib, io, json, sys\n"
        "from neardup.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "print(json.dumps([m for m in ['neardup.io', 'neardup.analyze'] if m in sys.modules]))\n"
    )
    assert got == []


@pytest.mark.parametrize("argv", [["--version"], ["dedup", "--help"]])
def test_python_m_neardup_cli(argv):
    proc = subprocess.run(
        [sys.executable, "-m", "neardup.cli", *argv], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "neardup" in proc.stdout


def test_import_neardup_is_light_and_the_public_names_load_on_use():
    got = _run_python(
        "import json, sys\n"
        "import neardup\n"
        "light = [m for m in ('numba', 'numpy', 'neardup.io', 'neardup.client', 'httpx')\n"
        "         if m in sys.modules]\n"
        "import neardup.pipeline\n"  # imports the submodule neardup.sketch
        "from neardup import dedup, Index\n"
        "print(json.dumps({'light': light, 'sketch': callable(neardup.sketch)\n"
        "                  and neardup.sketch.__module__ == 'neardup.sketch',\n"
        "                  'dedup': dedup is neardup.dedup,\n"
        "                  'all': sorted(n for n in neardup.__all__ if not hasattr(neardup, n))}))\n"
    )
    assert got == {"light": [], "sketch": True, "dedup": True, "all": []}


@pytest.mark.parametrize("argv", [["--help"], ["dedup", "--help"], ["index", "query", "--help"]])
def test_help_loads_no_compiled_kernels(argv):
    got = _run_python(
        "import contextlib, io, json, sys\n"
        "from neardup.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})\n"
        "print(json.dumps([m for m in ['numba', 'numpy', 'orjson', 'pyarrow', 'rich']\n"
        "                  if m in sys.modules]))\n"
    )
    assert got == []


def test_commands_without_linear_algebra_run_openblas_with_one_thread(tmp_path):
    """numpy's OpenBLAS starts a spinning thread per core at import: commands that do no linear
    algebra set it to one thread before numpy is imported (a user's setting wins); those that
    use it (fca, products, analyze) keep the default."""
    pytest.importorskip("threadpoolctl")  # reads the thread count OpenBLAS runs with
    news = Path(__file__).resolve().parents[1] / "examples" / "news.jsonl"
    code = (
        "import json, os, sys\n"
        "os.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
        "from neardup.cli import build_parser\n"
        "from neardup.cli.common import run_command\n"
        f"args = build_parser('dedup').parse_args(['dedup', {str(news)!r}, '--id-field', 'id',"
        f" '-o', {str(tmp_path / 'out')!r}, '--quiet'])\n"
        "before = 'numpy' in sys.modules\n"
        "rc = run_command(args)\n"
        "from threadpoolctl import threadpool_info\n"
        "blas = [i['num_threads'] for i in threadpool_info() if i['internal_api'] == 'openblas']\n"
        "fca = build_parser('fca').parse_args(['fca', 'x.jsonl', '-o', 'y', '--min-common', '5'])\n"
        "print(json.dumps([before, rc, blas, fca.linear_algebra]))\n"
    )
    before, rc, blas, fca = _run_python(code)
    assert before is False and rc == 0 and fca is True
    assert blas and set(blas) == {1}
