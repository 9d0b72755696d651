"""The page of ``hygraph serve`` in a real browser: headless Chromium driven by Selenium.

``hygraph serve`` runs as a separate process over an index of the bundled sample corpus
(offline defaults); the browser opens the page, asks a question with the recommended
method and a second one side by side, and the test checks that passages came back with
highlighted entities and that Cytoscape drew the evidence graph. Debian's ``chromium``
and ``chromium-driver`` are needed (``.ci/run`` installs them and sets
``HYGRAPH_REQUIRE_BROWSER=1``, so that CI fails rather than skips without them).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from hygraph import GraphIndex

BROWSER = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
if not (BROWSER and DRIVER) and not os.environ.get("HYGRAPH_REQUIRE_BROWSER"):
    pytest.skip("Chromium and chromedriver are not installed", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver")

QUESTION = "Which shipyard built the research vessel of the Northern Shelf Expedition?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory, minilm, sample_path):
    path = tmp_path_factory.mktemp("page") / "index"
    GraphIndex.build(sorted(sample_path.glob("*.md")), path, embedder=minilm,
                     progress=False).close()  # fmt: skip
    port = _free_port()
    log = open(tmp_path_factory.mktemp("page-log") / "serve.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "hygraph.cli", "serve", "--index", str(path), "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/v1/health", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("hygraph serve did not start: " + Path(log.name).read_text()[-2000:])
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = BROWSER or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--window-size=1400,1500", "--disable-gpu"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER or "/usr/bin/chromedriver"), options=options)
    yield driver
    driver.quit()


def _wait(driver, script: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for: {script}")


def test_a_question_shows_passages_and_a_drawn_graph(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(server + "/")
    _wait(browser, "return document.querySelectorAll('#method-a option').length > 1")
    picker = Select(browser.find_element(By.ID, "method-a"))
    assert picker.first_selected_option.get_attribute("value") == "hybrid-ppr"
    Select(browser.find_element(By.ID, "method-b")).select_by_value("vanilla")
    browser.find_element(By.ID, "question").send_keys(QUESTION)
    browser.find_element(By.ID, "ask").click()
    _wait(browser, "return document.querySelectorAll('.result').length == 2")
    methods = browser.execute_script(
        "return [...document.querySelectorAll('.result')].map(r => r.dataset.method)"
    )
    assert methods == ["hybrid-ppr", "vanilla"]
    passages = browser.execute_script(
        "return document.querySelectorAll('.result[data-method=\"hybrid-ppr\"] .passage').length"
    )
    assert passages >= 3
    assert browser.execute_script("return document.querySelectorAll('.result mark').length") > 0
    # Cytoscape drew the evidence graph: its canvases are in the graph box, with nodes.
    _wait(browser, "return document.querySelectorAll('.result .graph canvas').length > 0")
    drawn = browser.execute_script(
        "return (window.hygraphGraphs || []).map(cy => [cy.nodes().length, cy.edges().length,"
        " cy.nodes('[kind = \"entity\"]').length])"
    )
    assert len(drawn) == 2
    nodes, edges, entities = drawn[0]  # hybrid-ppr: entities, passages and facts between them
    assert nodes >= 5 and edges >= 1 and entities >= 1
    assert drawn[1][2] == 0  # vanilla walks no graph: passages only
    assert not browser.find_element(By.ID, "error").is_displayed()
    shot = os.environ.get("HYGRAPH_PAGE_SCREENSHOT") or str(tmp_path / "page.png")
    browser.save_screenshot(shot)
    assert Path(shot).stat().st_size > 10_000


def test_the_documents_tab_lists_the_corpus(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server + "/")
    _wait(browser, "return document.querySelectorAll('#method-a option').length > 1")
    browser.find_element(By.CSS_SELECTOR, 'button[data-tab="documents"]').click()
    _wait(browser, "return document.querySelectorAll('#doc-table tbody tr').length == 12")
    assert "(12)" in browser.find_element(By.ID, "doc-total").text
    browser.find_element(By.CSS_SELECTOR, 'button[data-tab="builds"]').click()
    _wait(browser, "return document.querySelectorAll('#builds tr').length > 2")
