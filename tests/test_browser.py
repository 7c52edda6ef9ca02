"""The web page in a real headless browser (Debian's Chromium driven by Playwright).

The app runs under uvicorn on a loopback port over an SQLite index in ``tmp_path``; the test
clicks through the uniqueness check and a collection upload as a shop owner would and saves a
screenshot of each step to ``test-artifacts/browser/``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "browser"
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if not os.path.exists(CHROMIUM):
    pytest.skip(
        f"{CHROMIUM} is missing: apt-get install chromium to run the browser tests",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
)
uvicorn = pytest.importorskip("uvicorn")

import httpx  # noqa: E402

from neardup import Index  # noqa: E402
from neardup.server import create_app  # noqa: E402
from neardup.server.access import ApiKeys  # noqa: E402

KETTLE = (
    "Stainless steel electric kettle with a capacity of 1.7 litres, rapid boil in under "
    "four minutes, automatic shut off when the water boils, boil dry protection and a "
    "removable washable limescale filter. Cordless design on a 360 degree base."
)
# The same offer as another shop words it: a few words changed, one sentence added.
KETTLE_COPY = (
    "Stainless steel electric kettle with a capacity of 1.7 litres, rapid boil in under "
    "four minutes, automatic shut off when the water boils, boil dry protection and "
    "a removable washable limescale filter. Cordless design on a 360 degree base. "
    "Free delivery."
)
LAMP = (
    "Adjustable LED desk lamp with five brightness levels and three colour temperatures, a "
    "USB charging port in the base and a flexible gooseneck arm for reading at night."
)
NEW_TEXT = (
    "Hand woven wool rug in deep blue with a geometric pattern, 160 by 230 centimetres, "
    "made in a small workshop, suitable for living rooms and bedrooms."
)

CATALOGUE = [
    {"sku": "kettle-1", "title": KETTLE},
    {"sku": "lamp-1", "title": LAMP},
    {"sku": "kettle-2", "title": KETTLE_COPY},
    {"sku": "rug-1", "title": NEW_TEXT},
    {"sku": "lamp-2", "title": LAMP.replace("at night", "late at night")},
    {
        "sku": "chair-1",
        "title": "Oak dining chair with a woven seat, sold as a pair, easy to "
        "assemble, made from sustainably grown timber.",
    },
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_in_thread(app: object) -> Iterator[str]:
    """``app`` under uvicorn on a free loopback port in a background thread; yields its URL."""
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on a free loopback port in a background thread; yields its base URL."""
    db = tmp_path_factory.mktemp("browser") / "shop.db"
    idx = Index(str(db), passages=True)
    idx.add_many([("kettle-shop-a", KETTLE), ("lamp-shop-a", LAMP)])
    yield from _serve_in_thread(create_app(idx))
    idx.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Chromium, with no network beyond the loopback servers of the tests."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _new_page(browser: object, url: str) -> object:
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.set_default_timeout(15_000)
    pg.goto(url)
    pg.js_errors = errors  # type: ignore[attr-defined]
    return pg


@pytest.fixture(scope="module")
def page(server: str, browser: object) -> Iterator[object]:
    """A Chromium page on the app."""
    pg = _new_page(browser, server + "/")
    yield pg
    pg.context.close()  # type: ignore[attr-defined]


def _shot(pg: object, name: str) -> None:
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def _marks(pg: object, testid: str) -> list[str]:
    return pg.locator(f'[data-testid="{testid}"] mark').all_inner_texts()  # type: ignore


def test_page_loads_without_errors(page: object) -> None:
    expect = sync_api.expect
    expect(page.get_by_test_id("index-status")).to_contain_text("2 texts in the index")
    expect(page.get_by_test_id("check-text")).to_be_visible()
    _shot(page, "01-start")
    assert page.js_errors == []


def test_check_near_duplicate_shows_match_and_passages(page: object) -> None:
    expect = sync_api.expect
    page.get_by_test_id("tab-check").click()
    page.get_by_test_id("check-text").fill(KETTLE_COPY)
    page.get_by_test_id("check-button").click()
    verdict = page.get_by_test_id("check-verdict")
    expect(verdict).to_contain_text("A near-duplicate of kettle-shop-a")
    expect(verdict).to_contain_text("repeats 1 text")
    items = page.get_by_test_id("match-item")
    expect(items).to_have_count(1)
    idx_sim = Index()
    idx_sim.add("k", KETTLE)
    sim = idx_sim.query(KETTLE_COPY)[0].similarity
    pct = f"{round(sim * 1000) / 10:.1f}".removesuffix(".0") + "%"
    expect(items.first).to_contain_text("kettle-shop-a")
    expect(items.first).to_contain_text(pct)
    expect(verdict).to_contain_text(f"({pct} similar)")
    expect(page.get_by_test_id("check-compare")).to_be_visible()
    expect(page.get_by_test_id("check-right-title")).to_contain_text("kettle-shop-a")
    left, right = _marks(page, "check-left"), _marks(page, "check-right")
    # A near-duplicate: what differs is marked, the added sentence; nothing of the indexed
    # text differs
    assert left == ["Free delivery."] and right == []
    expect(page.get_by_test_id("check-right-title")).to_contain_text("words that differ")
    assert page.get_by_test_id("check-left").inner_text() == KETTLE_COPY
    assert page.get_by_test_id("check-right").inner_text() == KETTLE
    _shot(page, "02-check-repeats")
    assert page.js_errors == []


def test_check_new_text_is_unique_and_can_be_added(page: object, server: str) -> None:
    expect = sync_api.expect
    page.get_by_test_id("check-text").fill(NEW_TEXT)
    page.get_by_test_id("check-button").click()
    expect(page.get_by_test_id("check-verdict")).to_contain_text("Unique")
    expect(page.get_by_test_id("match-item")).to_have_count(0)
    expect(page.get_by_test_id("check-compare")).to_be_hidden()
    _shot(page, "03-check-unique")
    # Adding without an id says what is missing.
    page.get_by_test_id("add-button").click()
    expect(page.get_by_test_id("error")).to_contain_text("id")
    page.get_by_test_id("check-id").fill("rug-shop-b")
    page.get_by_test_id("add-button").click()
    expect(page.get_by_test_id("add-message")).to_contain_text("rug-shop-b")
    expect(page.get_by_test_id("error")).to_be_hidden()
    expect(page.get_by_test_id("index-status")).to_contain_text("3 texts in the index")
    # Checked again, it now repeats the text just added.
    page.get_by_test_id("check-id").fill("")
    page.get_by_test_id("check-button").click()
    expect(page.get_by_test_id("check-verdict")).to_contain_text("repeats 1 text")
    expect(page.get_by_test_id("match-item").first).to_contain_text("100%")
    _shot(page, "04-check-after-add")
    assert page.js_errors == []


# New writing that copies the lamp's description word for word in its middle.
LAMP_REUSE = (
    "Our winter guide to a better home office starts with light and comfort. "
    + LAMP
    + " Pair it with a soft rug and a warm throw for long evenings."
)


def test_check_text_with_a_copied_passage_is_not_unique(page: object) -> None:
    expect = sync_api.expect
    page.get_by_test_id("check-id").fill("")
    page.get_by_test_id("check-text").fill(LAMP_REUSE)
    page.get_by_test_id("check-button").click()
    verdict = page.get_by_test_id("check-verdict")
    expect(verdict).to_contain_text("Reuses passages of 1 text: lamp-shop-a")
    expect(verdict).not_to_contain_text("Unique")
    items = page.get_by_test_id("match-item")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("lamp-shop-a")
    expect(items.first).to_contain_text("reused")
    expect(page.get_by_test_id("add-row")).to_be_hidden()
    expect(page.get_by_test_id("check-right-title")).to_contain_text("of your text")
    # the copied description is marked in both texts, the new writing around it is not
    assert " ".join(_marks(page, "check-left")) == LAMP
    assert " ".join(_marks(page, "check-right")) == LAMP
    _shot(page, "06-check-reused-passage")
    assert page.js_errors == []


SHIPPING = (
    "Orders placed before two in the afternoon are shipped the same day, and every "
    "item can be returned within thirty days for a full refund."
)


def test_a_template_sentence_many_offers_share_is_shown_once(
    browser: object, tmp_path: Path
) -> None:
    """A boilerplate-heavy index: 18 offers end with the same shipping sentence. A new offer
    with that sentence is not listed against 18 texts: the page says it shares only a common
    passage, shown once with the number of offers that hold it."""
    expect = sync_api.expect
    idx = Index(str(tmp_path / "boiler.db"), passages=True)
    items = [
        "kettle",
        "toaster",
        "lamp",
        "rug",
        "chair",
        "desk",
        "mirror",
        "clock",
        "vase",
        "towel",
        "pillow",
        "blanket",
        "shelf",
        "stool",
        "basket",
        "candle",
        "frame",
        "mug",
    ]
    idx.add_many(
        [
            (
                f"{x}-1",
                f"A {x} from our own workshop, made by hand in small numbers and "
                f"finished with care, model {i}. {SHIPPING}",
            )
            for i, x in enumerate(items)
        ]
    )
    for url in _serve_in_thread(create_app(idx)):
        pg = _new_page(browser, url + "/")
        pg.get_by_test_id("check-text").fill(NEW_TEXT + " " + SHIPPING)
        pg.get_by_test_id("check-button").click()
        verdict = pg.get_by_test_id("check-verdict")
        expect(verdict).to_contain_text("Shares only common passages")
        expect(verdict).not_to_contain_text("Unique")
        expect(pg.get_by_test_id("match-item")).to_have_count(0)
        common = pg.get_by_test_id("common-item")
        expect(common).to_have_count(1)
        expect(common.first).to_contain_text("in about 18 indexed texts")
        expect(common.first.locator("q")).to_contain_text("shipped the same day")
        _shot(pg, "06b-check-common-passage")
        assert pg.js_errors == []
        pg.context.close()
    idx.close()


ZH = (
    "我们公司成立于二零零五年，专注于研发高品质的家用电器产品，包括电水壶、咖啡机和空气净化器。"
    "所有产品均通过国家质量认证，并提供两年免费保修服务。欢迎广大客户来电咨询，我们将竭诚为您服务。"
)


def test_a_prefixed_copy_of_a_chinese_text_is_not_unique(browser: object, tmp_path: Path) -> None:
    """Chinese has no spaces between words: the page still finds a copy of an indexed text
    with a line added in front, and marks that line as what differs."""
    expect = sync_api.expect
    idx = Index(str(tmp_path / "zh.db"), passages=True)
    idx.add_many([("zh-1", ZH), ("lamp-1", LAMP)])
    for url in _serve_in_thread(create_app(idx)):
        pg = _new_page(browser, url + "/")
        pg.get_by_test_id("check-text").fill("新品上市，限时优惠！" + ZH)
        pg.get_by_test_id("check-button").click()
        verdict = pg.get_by_test_id("check-verdict")
        expect(verdict).to_contain_text("A near-duplicate of zh-1")
        expect(pg.get_by_test_id("match-item").first).to_contain_text("zh-1")
        # the line added in front is what differs; nothing of the indexed text does
        assert _marks(pg, "check-left") == ["新品上市，限时优惠！"]
        assert (
            _marks(pg, "check-right") == [] and pg.get_by_test_id("check-right").inner_text() == ZH
        )
        _shot(pg, "06c-check-chinese-copy")
        assert pg.js_errors == []
        pg.context.close()
    idx.close()


def test_api_error_is_shown(page: object) -> None:
    expect = sync_api.expect
    page.get_by_test_id("check-threshold").fill("1.5")
    page.get_by_test_id("check-text").fill("anything at all")
    # The number input's own max would block the form; submit through the API path directly.
    page.evaluate("document.getElementById('check-threshold').removeAttribute('max')")
    page.get_by_test_id("check-button").click()
    expect(page.get_by_test_id("error")).to_have_text(
        "Threshold: Input should be less than or equal to 1"
    )
    expect(page.get_by_test_id("check-result")).to_be_hidden()
    _shot(page, "05-error")
    page.get_by_test_id("check-threshold").fill("")
    # The browser logs the 422 response itself as a console error: expected here.
    assert all("422" in e for e in page.js_errors)
    page.js_errors.clear()


def test_upload_collection_shows_clusters_and_pair(page: object, tmp_path: Path) -> None:
    expect = sync_api.expect
    page.get_by_test_id("tab-upload").click()
    lines = [json.dumps(r) for r in CATALOGUE]
    lines.insert(3, "{not json")
    lines.append(json.dumps({"sku": "no-title"}))
    f = tmp_path / "catalogue.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    page.get_by_test_id("upload-file").set_input_files(str(f))
    page.get_by_test_id("upload-text-field").fill("title")
    page.get_by_test_id("upload-id-field").fill("sku")
    page.get_by_test_id("upload-button").click()
    expect(page.get_by_test_id("upload-summary")).to_contain_text("2 groups of repeated texts")
    expect(page.get_by_test_id("upload-skipped")).to_contain_text("2 records skipped")
    expect(page.get_by_test_id("upload-skipped")).to_contain_text("line 4")
    clusters = page.get_by_test_id("cluster")
    expect(clusters).to_have_count(2)
    text = " ".join(clusters.all_inner_texts())
    for sku in ("kettle-1", "kettle-2", "lamp-1", "lamp-2"):
        assert sku in text
    assert "chair-1" not in text and "rug-1" not in text
    _shot(page, "06-upload-clusters")
    kettle = clusters.filter(has_text="kettle-1")
    kettle.get_by_test_id("member-pair").click()
    expect(page.get_by_test_id("pair-compare")).to_be_visible()
    expect(page.get_by_test_id("pair-left-title")).to_contain_text("kettle-1")
    expect(page.get_by_test_id("pair-right-title")).to_contain_text("kettle-2")
    expect(page.get_by_test_id("pair-title")).to_contain_text("similar")
    assert "".join(_marks(page, "pair-left")) == KETTLE
    assert "".join(_marks(page, "pair-right")) == KETTLE
    assert page.get_by_test_id("pair-right").inner_text() == KETTLE_COPY
    _shot(page, "07-upload-pair")
    lamp = clusters.filter(has_text="lamp-1")
    lamp.get_by_test_id("member-pair").click()
    expect(page.get_by_test_id("pair-right-title")).to_contain_text("lamp-2")
    marks = _marks(page, "pair-right")
    assert marks and "late" not in " ".join(marks).split()
    _shot(page, "08-upload-pair-lamp")
    assert page.js_errors == []


def test_upload_with_two_text_fields_shows_titles_and_downloads(
    page: object, tmp_path: Path
) -> None:
    """A CSV whose text is a title and a description: the groups show each offer's title, and
    the deduplicated list downloads as a CSV file."""
    import csv

    expect = sync_api.expect
    page.get_by_test_id("tab-upload").click()
    f = tmp_path / "offers.csv"
    with open(f, "w", newline="", encoding="utf-8") as out:
        w = csv.writer(out)
        w.writerow(["sku", "name", "details"])
        w.writerow(["k1", "Steel kettle 1.7 l", KETTLE])
        w.writerow(["k2", "Kettle, stainless steel", KETTLE_COPY])
        w.writerow(["r1", "Blue wool rug", NEW_TEXT])
    page.get_by_test_id("upload-file").set_input_files(str(f))
    page.get_by_test_id("upload-text-field").fill("name,details")
    page.get_by_test_id("upload-id-field").fill("sku")
    page.get_by_test_id("upload-threshold").fill("0.6")
    page.get_by_test_id("upload-button").click()
    expect(page.get_by_test_id("upload-summary")).to_contain_text("1 group of repeated texts")
    titles = page.get_by_test_id("member-title")
    expect(titles).to_have_count(2)
    assert titles.all_inner_texts() == ["Steel kettle 1.7 l", "Kettle, stainless steel"]
    with page.expect_download() as got:
        page.get_by_test_id("download-kept-csv").click()
    download = got.value
    assert download.suggested_filename == "offers-deduplicated.csv"
    rows = list(csv.reader(open(download.path(), encoding="utf-8")))
    assert [r[0] for r in rows] == ["id", "k1", "r1"]
    assert rows[1][1] == "Steel kettle 1.7 l\n" + KETTLE
    _shot(page, "08b-upload-titles")
    assert page.js_errors == []


def test_upload_of_wrong_file_shows_error(page: object, tmp_path: Path) -> None:
    expect = sync_api.expect
    f = tmp_path / "notes.txt"
    f.write_text("just some notes\n", encoding="utf-8")
    page.get_by_test_id("upload-file").set_input_files(str(f))
    page.get_by_test_id("upload-button").click()
    expect(page.get_by_test_id("error")).to_have_text(
        "Upload a CSV (.csv), JSON Lines (.jsonl) or Parquet (.parquet) file; got 'notes.txt' (text/plain)"
    )
    _shot(page, "09-upload-error")


# ---------------------------------------------------------------------------------------------
# A service that needs keys, and a page of another web site that posts to the service

READ_KEY = "read-" + secrets.token_urlsafe(24)
WRITE_KEY = "write-" + secrets.token_urlsafe(24)


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    idx = Index(str(tmp_path_factory.mktemp("keyed") / "shop.db"), passages=True)
    idx.add_many([("kettle-shop-a", KETTLE), ("lamp-shop-a", LAMP)])
    yield from _serve_in_thread(
        create_app(idx, api_keys=ApiKeys(read=[READ_KEY], write=[WRITE_KEY]))
    )
    idx.close()


def test_the_page_asks_for_a_key_and_sends_it(keyed_server: str, browser: object) -> None:
    expect = sync_api.expect
    pg = _new_page(browser, keyed_server + "/")
    expect(pg.get_by_test_id("index-status")).to_have_text("An API key is needed to use the index.")
    expect(pg.get_by_test_id("key-form")).to_be_visible()
    expect(pg.get_by_test_id("key-message")).to_have_text(
        "This service needs an API key: enter it to go on."
    )
    _shot(pg, "10-key-asked")
    # a wrong key is not accepted
    pg.get_by_test_id("key-input").fill("not-the-key-" + "x" * 20)
    pg.get_by_test_id("key-button").click()
    expect(pg.get_by_test_id("key-message")).to_have_text(
        "The API key was not accepted: enter the current one."
    )
    # a read key checks texts, and may not add them
    pg.get_by_test_id("key-input").fill(READ_KEY)
    pg.get_by_test_id("key-button").click()
    expect(pg.get_by_test_id("index-status")).to_contain_text("2 texts in the index")
    expect(pg.get_by_test_id("key-form")).to_be_hidden()
    pg.get_by_test_id("check-text").fill(KETTLE_COPY)
    pg.get_by_test_id("check-button").click()
    expect(pg.get_by_test_id("check-verdict")).to_contain_text("A near-duplicate of kettle-shop-a")
    pg.get_by_test_id("check-text").fill(NEW_TEXT)
    pg.get_by_test_id("check-button").click()
    expect(pg.get_by_test_id("check-verdict")).to_contain_text("Unique")
    pg.get_by_test_id("check-id").fill("rug-shop-b")
    pg.get_by_test_id("add-button").click()
    expect(pg.get_by_test_id("error")).to_contain_text(
        "Adding a text (add=true) needs an API key with the write role"
    )
    expect(pg.get_by_test_id("key-message")).to_contain_text("a key with the write role")
    _shot(pg, "11-key-read-only")
    # a write key adds it; the key stays for the tab, also after a reload
    pg.get_by_test_id("key-input").fill(WRITE_KEY)
    pg.get_by_test_id("key-button").click()
    pg.get_by_test_id("add-button").click()
    expect(pg.get_by_test_id("add-message")).to_contain_text("rug-shop-b")
    expect(pg.get_by_test_id("index-status")).to_contain_text("3 texts in the index")
    pg.reload()
    expect(pg.get_by_test_id("index-status")).to_contain_text("3 texts in the index")
    expect(pg.get_by_test_id("key-form")).to_be_hidden()
    # uploads send it too
    pg.get_by_test_id("tab-upload").click()
    pg.get_by_test_id("upload-file").set_input_files(
        files=[
            {
                "name": "c.jsonl",
                "mimeType": "application/jsonl",
                "buffer": "\n".join(
                    json.dumps({"text": t}) for t in (KETTLE, KETTLE_COPY)
                ).encode(),
            }
        ]
    )
    pg.get_by_test_id("upload-button").click()
    expect(pg.get_by_test_id("upload-summary")).to_contain_text("1 group of repeated texts")
    # forgetting the key asks for one again
    pg.get_by_test_id("key-change").click()
    pg.get_by_test_id("key-forget").click()
    expect(pg.get_by_test_id("index-status")).to_have_text("An API key is needed to use the index.")
    assert pg.evaluate("sessionStorage.length") == 0
    _shot(pg, "12-key-forgotten")
    # only the 401 and 403 answers the page asked for were logged by the browser
    assert all("401" in e or "403" in e for e in pg.js_errors), pg.js_errors
    pg.context.close()


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[tuple[str, Index]]:
    """A service without keys (this machine only), as `neardup serve` runs by default."""
    idx = Index(str(tmp_path / "open.db"))
    for url in _serve_in_thread(create_app(idx)):
        yield url, idx
    idx.close()


def _other_site(html: str) -> Iterator[str]:
    """A page of another web site: served by another server on another port, reached as
    localhost (the service is 127.0.0.1), so that it is another origin and another site."""
    import http.server

    body = html.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{httpd.server_address[1]}/"
    httpd.shutdown()


def test_a_page_of_another_site_cannot_upload_or_add(
    open_server: tuple[str, Index], browser: object
) -> None:
    service, idx = open_server
    html = f"""<!doctype html><html><body>
<form id="up" action="{service}/collections" method="post" enctype="multipart/form-data">
  <input type="file" id="file" name="file"><input name="text_field" value="text">
</form>
<form id="add" action="{service}/documents" method="post" enctype="text/plain">
  <input name='{{"id": "forged", "text": "forged text", "x": "' value='"}}'>
</form>
<script>
  async function tryFetch() {{
    try {{
      await fetch("{service}/documents", {{method: "POST", mode: "no-cors",
        headers: {{"Content-Type": "text/plain"}},
        body: JSON.stringify({{id: "forged-fetch", text: "forged text"}})}});
      return "sent";
    }} catch (e) {{ return "failed: " + e.message; }}
  }}
</script></body></html>"""
    for site in _other_site(html):
        pg = _new_page(browser, site)
        # 1. a multipart upload by a form of the other site: refused, nothing kept
        pg.set_input_files(
            "#file",
            files=[
                {
                    "name": "c.jsonl",
                    "mimeType": "application/jsonl",
                    "buffer": b'{"text": "one two three four five six"}\n',
                }
            ],
        )
        with pg.expect_navigation():
            pg.evaluate("document.getElementById('up').submit()")
        answer = json.loads(pg.locator("body").inner_text())
        assert answer["detail"].startswith(
            f"cross-origin request refused: a web page of '{site.rstrip('/')}' may not POST here"
        )
        _shot(pg, "13-cross-site-upload-refused")
        # 2. a form posting JSON-looking text, and a fetch that cannot read its answer
        pg.goto(site)
        with pg.expect_navigation():
            pg.evaluate("document.getElementById('add').submit()")
        assert "cross-origin request refused" in pg.locator("body").inner_text()
        pg.goto(site)
        assert pg.evaluate("tryFetch()") == "sent"
        pg.context.close()
    stats = httpx.get(service + "/stats").json()
    assert stats["collections"] == 0 and stats["documents"] == 0 and len(idx) == 0
    assert stats["requests"]["by_status"].get("403") == 3
