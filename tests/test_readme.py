"""The README's library examples run as written and say what they claim."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_library_examples_run():
    blocks = python_blocks()
    ns: dict = {}
    exec(blocks[0], ns)  # the tour: dedup() on three texts
    r = ns["result"]
    assert r.representative.tolist() == [0, 0, 2]
    assert r.pair_records()[0]["id_a"] == "a"
    # the stage-by-stage pipeline reuses the tour's texts
    exec(next(b for b in blocks if "choose_bands" in b), ns)
    assert (ns["bands"], ns["rows"]) == (21, 6)
    assert ns["rep"].tolist() == [0, 0, 2]


def test_readme_mentions_every_cli_option():
    from neardup.cli import build_parser

    text = README.read_text()
    sub = build_parser()._subparsers._group_actions[0].choices["dedup"]
    for action in sub._actions:
        for opt in action.option_strings:
            if opt.startswith("--") and opt != "--help":
                assert opt in text, f"README does not document {opt}"


def test_readme_index_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    block = next(b for b in python_blocks() if "neardup.Index(" in b)
    ns: dict = {}
    exec(block, ns)
    assert [tuple(m) for m in ns["found"]] == [("sku-1", 1.0)]
    assert [tuple(m) for m in ns["dups"]] == [("sku-2", 0.888889)]
    from neardup import Index

    with Index(tmp_path / "shop.db") as idx:
        assert sorted(idx.ids()) == ["sku-1"]


def console_commands() -> list[tuple[str, list[str]]]:
    """Each `$ ` line of the README's console blocks, without the `$ ` and any trailing comment,
    with the lines shown under it (up to the next `$ ` line or the end of the block): the output
    the README says it prints."""
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", README.read_text(), flags=re.S):
        shown: list[str] | None = None  # lines before a block's first `$ ` are no output
        for line in block.splitlines():
            if line.startswith("$ "):
                shown = []
                found.append((line.removeprefix("$ ").split(" #")[0].strip(), shown))
            elif shown is not None and line.strip():
                shown.append(line)
    return found


@pytest.mark.parametrize(
    "words,count",
    [((" index ", " stream ", "--save-index"), 8), ((" analyze ", " fca "), 7), ((" reuse ",), 1)],
)
def test_readme_commands_run(tmp_path, words, count):
    """Every `neardup index`/`stream`/`dedup --save-index`, `analyze` and `fca` line of the
    README runs as written, one after the other, and prints what the README shows under it
    (compared word for word; a line shown with no output under it is only run)."""
    import shutil
    import subprocess

    root = README.parent
    commands = [
        (cmd, shown) for cmd, shown in console_commands() if any(w in f" {cmd} " for w in words)
    ]
    assert len(commands) == count
    shutil.copytree(root / "examples", tmp_path / "examples")
    (tmp_path / ".venv").symlink_to(root / ".venv")
    for cmd, shown in commands:
        r = subprocess.run(cmd, shell=True, cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, (cmd, r.stderr[-2000:])
        if shown:
            printed = (r.stdout + r.stderr).splitlines()
            assert [ln.split() for ln in printed] == [ln.split() for ln in shown], (cmd, printed)


def test_readme_index_examples_show_what_they_claim():
    """The index and stream examples show a near-duplicate found and a stream without errors,
    not only texts the index does not hold."""
    shown = dict(console_commands())
    query = next(out for cmd, out in shown.items() if " index query " in cmd and "--file" in cmd)
    assert len(query) == 1 and query[0].split()[1:2] == ["news-0129"]
    stream = next(out for cmd, out in shown.items() if " stream " in cmd)
    decisions = [json.loads(line)["decision"] for line in stream[:-1]]
    assert "duplicate" in decisions and "unique" in decisions and "error" not in decisions
    assert stream[-1].endswith(" 0 errors")


def test_readme_data_frame_example_runs(tmp_path, monkeypatch):
    """The library's data-frame example, on a posts.parquet of near-duplicate posts."""
    pl = pytest.importorskip("polars")
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    body = [
        "the council approved the new cycle path on monday after a long debate",
        "the council approved the new cycle path on monday after a long debate!",
        "an entirely different story about the harbour and its ferries",
        "the harbour ferries run late again this winter, say commuters",
    ]
    pl.DataFrame({"post_id": list(range(100, 100 + len(body))), "body": body}).write_parquet(
        "posts.parquet"
    )
    block = next(b for b in python_blocks() if "to_polars" in b)
    ns: dict = {}
    exec("import neardup\n" + block, ns)
    kept = ns["kept"]
    assert kept["post_id"].to_list() == [100, 102, 103]
    assert ns["result"].to_pandas("pairs")[["id_a", "id_b"]].values.tolist() == [["100", "101"]]


def test_readme_reused_passages_example_prints_what_it_shows(capsys):
    import neardup

    block = next(b for b in python_blocks() if "reused_passages" in b)
    exec(block, {"neardup": neardup})
    printed = capsys.readouterr().out.splitlines()
    shown = re.search(r"^# (\d+) (\d+) (.*)$", block, flags=re.M)
    assert len(printed) == 1
    words, matched, text = printed[0].split(" ", 2)
    assert (words, matched) == (shown.group(1), shown.group(2))
    head, tail = shown.group(3).split(" ... ")
    assert text.startswith(head) and text.endswith(tail)


def test_readme_passage_index_example_prints_what_it_shows(tmp_path):
    """In a fresh process, after the passages example that defines the texts."""
    import subprocess
    import sys

    blocks = python_blocks()
    first = next(b for b in blocks if "reused_passages" in b)
    index = next(b for b in blocks if "PassageIndex" in b)
    code = "import neardup\n" + first + index
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    shown = re.search(r"^# (harbour-news .*)$", index, flags=re.M).group(1)
    assert out.stdout.splitlines()[-1] == shown


def test_readme_index_check_example_runs(tmp_path, monkeypatch):
    import neardup

    monkeypatch.chdir(tmp_path)
    block = next(b for b in python_blocks() if "passages=True" in b)
    copied = " ".join(f"word{i}" for i in range(20))
    ns = {
        "neardup": neardup,
        "my_articles": [("a1", "intro " + copied + " outro")],
        "new_text": "new writing around " + copied + " and more of it",
    }
    exec(block, ns)
    r = ns["result"]
    assert r.matches == [] and [m.id for m in r.reused] == ["a1"] and not r.unique
    ns["idx"].close()


def test_readme_reuse_figure_is_what_the_tool_finds(tmp_path):
    """The number of pairs the README says `neardup reuse` finds in the examples is what it
    finds (a changed figure fails here rather than drifting)."""
    import subprocess
    import sys

    root = README.parent
    said = re.search(r"share a sentence or two: ([\d,]+) pairs", README.read_text())
    assert said is not None
    out = tmp_path / "reuse-out"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "reuse",
            str(root / "examples" / "news.jsonl"),
            "--id-field",
            "id",
            "-o",
            str(out),
            "--quiet",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pairs"] == int(said.group(1).replace(",", ""))


def test_readme_analysis_figures_are_what_the_tool_says(tmp_path):
    """The table of `neardup analyze` gives the choices and recalls the commands print."""
    import subprocess
    import sys

    root = README.parent
    text = README.read_text()
    params = re.search(
        r"at 0\.8 and 128 permutations: neardup (\d+)x(\d+) finds ([\d.]+)% of "
        r"pairs exactly at the threshold, datasketch's (\d+)x(\d+) ([\d.]+)%",
        text,
    )
    recall = re.search(r"at t = 0\.8 \((\d+)x(\d+)\): (\d+) of (\d+) pairs >= 0\.8 found", text)
    assert params is not None and recall is not None

    def run(*args: str) -> dict:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "analyze",
                *args,
                "-o",
                str(tmp_path / args[0]),
                "--json",
                "--quiet",
            ],
            capture_output=True,
            text=True,
            cwd=root,
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    rows = {r["method"].split()[0]: r for r in run("params", "--thresholds", "0.8")["rows"]}
    ours, theirs = rows["neardup"], rows["datasketch"]
    assert (ours["bands"], ours["rows"]) == (int(params.group(1)), int(params.group(2)))
    assert round(100 * ours["recall_at_threshold"], 1) == float(params.group(3))
    assert (theirs["bands"], theirs["rows"]) == (int(params.group(4)), int(params.group(5)))
    assert round(100 * theirs["recall_at_threshold"], 1) == float(params.group(6))
    got = next(
        s
        for s in run("recall", "examples/news.jsonl", "--id-field", "id")["summary"]["settings"]
        if s["threshold"] == 0.8
    )
    assert (
        got["bands"],
        got["rows"],
        got["found_at_threshold"],
        got["true_pairs_at_threshold"],
    ) == tuple(int(recall.group(i)) for i in range(1, 5))


def test_readme_products_commands_run_on_the_bundled_offers(tmp_path):
    """Every `neardup products` line of the README on the bundled offers runs as written
    (those on a benchmark data set in ../shared are left to the benchmarks)."""
    import shutil
    import subprocess

    pytest.importorskip("sklearn")
    root = README.parent
    commands = [
        cmd
        for cmd, _ in console_commands()
        if " products " in f" {cmd} " and "../shared" not in cmd
    ]
    assert len(commands) == 3
    shutil.copytree(root / "examples", tmp_path / "examples")
    (tmp_path / ".venv").symlink_to(root / ".venv")
    for cmd in commands:
        r = subprocess.run(
            cmd + " --quiet", shell=True, cwd=tmp_path, capture_output=True, text=True
        )
        assert r.returncode == 0, (cmd, r.stderr[-2000:])
    assert (tmp_path / "offers-report" / "report.md").exists()


def test_the_fca_page_shows_what_its_command_writes(tmp_path):
    """docs/fca.md's console example runs as written, and its table of precision, recall and
    F1 per threshold and per baseline is what the command writes (evaluation.csv)."""
    import csv
    import shutil
    import subprocess

    pytest.importorskip("sklearn")
    root = README.parent
    page = (root / "docs" / "fca.md").read_text()
    block = re.search(r"```console\n\$ (.*?)```", page, flags=re.S).group(1)
    cmd = " ".join(part.strip() for part in block.replace("\\\n", " ").split())
    shutil.copytree(root / "examples", tmp_path / "examples")
    (tmp_path / ".venv").symlink_to(root / ".venv")
    r = subprocess.run(cmd + " --quiet", shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    shown = re.findall(
        r"^\| (FPmax|bisecting k-means) \| (?:K = )?(\d+)[^|]*\| ([\d.]+) \| "
        r"([\d.]+) \| \*{0,2}([\d.]+)\*{0,2} \|$",
        page,
        flags=re.M,
    )
    assert len(shown) == 9
    with open(tmp_path / "fca-out" / "evaluation.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    written = {
        (
            "FPmax" if x["method"] == "fpmax" else "bisecting k-means",
            x["threshold"] or x["requested_clusters"],
        ): tuple(f"{float(x[k]):.3f}" for k in ("precision", "recall", "f1"))
        for x in rows
    }
    assert {(m, k): (p, r_, f) for m, k, p, r_, f in shown} == written
