"""Each feature of an extra, run where the extra's packages cannot be imported, fails at once with
one line naming the extra to install (and the figures of a report are left out with a note).

The packages are hidden from a child process by a finder placed first on ``sys.meta_path``, so
that ``import fastapi`` raises ``ModuleNotFoundError`` as it does where fastapi is not installed;
``tests/test_install.py`` checks the same messages from a real installation without extras."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEWS = ROOT / "examples" / "news.jsonl"

HIDE = textwrap.dedent("""
    import sys
    from importlib.abc import MetaPathFinder

    class Hide(MetaPathFinder):
        def __init__(self, names):
            self.names = set(names)

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.names:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Hide({hidden!r}))
""")


def _run_hidden(hidden: list[str], code: str, cwd: Path) -> subprocess.CompletedProcess:
    script = HIDE.replace("{hidden!r}", repr(hidden)) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def _cli(args: list[str]) -> str:
    return f"from neardup.cli import main\nsys.exit(main({args!r}))\n"


@pytest.mark.parametrize(
    ("hidden", "args", "extra"),
    [
        (["fastapi"], ["serve", "--index", "x.db", "--create"], "server"),
        (["uvicorn"], ["serve", "--index", "x.db", "--create"], "server"),
        (["multipart", "python_multipart"], ["serve", "--index", "x.db", "--create"], "server"),
        (["redis"], ["index", "create", "redis://127.0.0.1:1/0"], "redis"),
        (
            ["distributed"],
            ["dedup", str(NEWS), "--id-field", "id", "-o", "out", "--engine", "dask"],
            "dask",
        ),
        (
            ["sklearn"],
            [
                "fca",
                str(NEWS),
                "--id-field",
                "id",
                "-o",
                "out",
                "--min-common",
                "3",
                "--truth",
                "ref.csv",
                "--baseline-clusters",
                "3",
            ],
            "fca",
        ),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(tmp_path, hidden, args, extra):
    (tmp_path / "ref.csv").write_text("id_a,id_b\nn1,n2\n")
    proc = _run_hidden(hidden, _cli(args), tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("neardup: error: ")
    assert line.endswith(f"pip install 'neardup[{extra}]'")
    assert not (tmp_path / "out").exists() and not (tmp_path / "x.db").exists()


def test_the_library_raises_a_missing_extra_error(tmp_path):
    code = """
        from neardup._extras import MissingExtraError
        from neardup.products.matcher import PairModel
        try:
            PairModel()
        except MissingExtraError as e:
            print(e.extra, "|", e)
        try:
            import neardup.server
        except MissingExtraError as e:
            print(e.extra, "|", e)
    """
    proc = _run_hidden(["sklearn", "fastapi"], code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines == [
        "products | the trained product matcher needs scikit-learn, which is not installed: "
        "pip install 'neardup[products]'",
        "server | the neardup web service needs fastapi, which is not installed: "
        "pip install 'neardup[server]'",
    ]


def test_a_broken_module_of_neardup_is_not_taken_for_a_missing_extra():
    from neardup._extras import require

    with pytest.raises(ModuleNotFoundError):
        require("neardup.no_such_module", "server", "x")


@pytest.mark.parametrize("args", [["analyze", "scurve", "-o", "out"]])
def test_reports_leave_out_their_figures_without_matplotlib(tmp_path, args):
    proc = _run_hidden(["matplotlib"], _cli(args), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "figures not drawn" in proc.stderr and "pip install 'neardup[plots]'" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["scurve.csv", "scurve.md"]


def test_the_product_report_without_matplotlib_says_so(tmp_path):
    pytest.importorskip("sklearn")
    code = """
        from neardup.jobs.products import evaluate_offers
        from neardup.products.study import StudyConfig
        from neardup.products.synth import make_catalogue
        offers, labels = make_catalogue(60, seed=5)
        s = evaluate_offers(offers, labels, "rep", StudyConfig(bootstraps=1, num_perm=24,
                                                             bands=8, rows=3))
        print(sorted(s["outputs"]))
    """
    proc = _run_hidden(["matplotlib"], code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(
        sorted(["report.md", "summary.csv", "summary.md", "sweep.csv", "sweep.md", "runs.csv"])
    )
    assert not list((tmp_path / "rep").glob("*.png"))
    assert "figures not drawn" in (tmp_path / "rep" / "report.md").read_text()
