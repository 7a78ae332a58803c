"""The documentation site: built strictly, every public name on a reference page, every example
run with its output checked, the README's figures drawn from the benchmark's output, and the
pages working in a real browser (headless Chromium)."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.conftest import ROOT, docs_examples, hooks
from tests.docs.test_api_coverage import callables, exported, load, public_modules

#: The pages whose examples run: the ones scripts/docs_examples.py runs when given none.
PAGES = [p.relative_to(ROOT).as_posix() for p in docs_examples().pages()]


def inventory(site: Path) -> set[str]:
    """The object names of the site's objects.inv (Sphinx's format, which mkdocstrings writes)."""
    raw = (site / "objects.inv").read_bytes()
    body = raw.split(b"\n", 4)[4]  # four header lines, then the zlib-compressed entries
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines() if line}


@pytest.mark.parametrize("module_name", public_modules())
def test_every_public_name_is_on_a_reference_page(site: Path, module_name: str) -> None:
    """Every name of the module's ``__all__`` has an entry in the site's inventory, and so does
    every public method of each class (once: ``open_file`` and ``IpcFileReader`` are other
    names of ``RecordBatchFileReader``, whose methods are listed under it)."""
    module = load(module_name)
    names = inventory(site)
    assert module_name in names, f"no reference page renders {module_name}"
    missing = [
        f"{module_name}.{n}" for n, _ in exported(module) if f"{module_name}.{n}" not in names
    ]
    seen: set[int] = set()
    for name, obj in sorted(exported(module), key=lambda e: e[0] != getattr(e[1], "__name__", "")):
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        qualname = f"{module_name}.{name}"
        missing += [where for where, _fn, _doc in callables(qualname, obj) if where not in names]
    assert not missing, f"the reference leaves out {sorted(set(missing))}"


@pytest.mark.parametrize("page", PAGES)
def test_the_examples_run(page: str, tmp_path: Path) -> None:
    """Each page's examples, in a fresh interpreter outside the tree (as a user runs them)."""
    if os.environ.get("ZSTDPOOL_EXPECT_INSTALLED") == "1":
        pytest.skip(
            "the release matrix runs every page's examples as its tour, in a venv of its own"
        )
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs_examples.py"), str(ROOT / page)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIP ")]
    for line in skipped:  # only an optional engine or library may be missing
        module = re.search(r"\((\S+) is not installed", line)
        assert module, line
        assert importlib.util.find_spec(module.group(1)) is None, line


def test_an_example_with_wrong_output_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('```python\nprint(1 + 1)\n```\n\n```text title="Output"\n3\n```\n')
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs_examples.py"), str(page)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert "printed\n2\nwhere the page shows\n3" in result.stdout


def test_the_generated_tables_are_the_runs() -> None:
    """The README's and RESULTS.md's tables are what docs/hooks.py draws from
    benchmarks/results: regenerating them changes nothing (``python docs/hooks.py`` does)."""
    docs_hooks = hooks()
    expected = {"README.md": 1, "RESULTS.md": 3}  # the blocks each file holds
    for path in docs_hooks.OUTSIDE:
        text = path.read_text(encoding="utf-8")
        blocks = len(docs_hooks.GENERATED.findall(text))
        assert blocks == expected[path.name], f"{path.name} holds {blocks} generated blocks"
        assert docs_hooks.regenerate(text) == text, (
            f"{path.name} is stale: run python docs/hooks.py"
        )


# --- in a browser -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on 127.0.0.1 (search needs it served, not opened as files)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))

    class Quiet(handler.func):  # type: ignore[misc,name-defined]
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(chromium: tuple[str, str]) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium[0]
    # A desktop's window: in the headless default (780x580) the theme folds the search box.
    options.add_argument("--window-size=1280,1024")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(chromium[1]), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: object, css: str, timeout: float = 20) -> list[object]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(  # type: ignore[no-any-return]
        lambda d: d.find_elements(By.CSS_SELECTOR, css) or False
    )


def test_navigation_reaches_every_section(browser: object, served: str) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(served)  # type: ignore[attr-defined]
    assert driver.title.startswith("zstdpool")  # type: ignore[attr-defined]
    labels = {
        e.get_attribute("textContent").strip()
        for e in wait_for(driver, "nav.md-nav--primary .md-nav__link")
    }
    for section in ("Getting started", "User guide", "API reference", "Benchmarks", "Architecture"):
        assert section in labels, f"the navigation has no {section!r}: {sorted(labels)}"
    # Follow the navigation to a reference page, as a reader clicks through.
    link = driver.find_element(By.CSS_SELECTOR, 'a.md-nav__link[href$="reference/parquet/"]')  # type: ignore[attr-defined]
    driver.get(link.get_attribute("href"))  # type: ignore[attr-defined]
    heading = wait_for(driver, '[id="zstdpool.parquet.write_table"]')[0]
    assert heading.is_displayed()  # type: ignore[attr-defined]
    body = driver.find_element(By.TAG_NAME, "article").text  # type: ignore[attr-defined]
    for words in ("ParquetFile(", "page_checksum_verification: bool = False", "storage_options"):
        assert words in body, f"the Parquet reference does not show {words!r}"


def test_search_finds_the_api(browser: object, served: str) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(served)  # type: ignore[attr-defined]
    wait_for(driver, "label.md-search__icon, input.md-search__input")
    box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")  # type: ignore[attr-defined]
    driver.execute_script("arguments[0].focus();", box)  # type: ignore[attr-defined]
    box.send_keys("ParquetWriter")
    results = wait_for(driver, ".md-search-result__item a", timeout=30)
    targets = [r.get_attribute("href") for r in results]  # type: ignore[attr-defined]
    assert any("reference/parquet/" in t for t in targets), targets


def test_benchmark_charts_render(browser: object, served: str) -> None:
    driver = browser
    driver.get(served + "benchmarks/")  # type: ignore[attr-defined]
    images = wait_for(driver, "article img")
    assert len(images) >= 3
    for image in images:
        width = driver.execute_script(  # type: ignore[attr-defined]
            "return arguments[0].complete && arguments[0].naturalWidth", image
        )
        assert width and width > 100, f"{image.get_attribute('src')} did not load"  # type: ignore[attr-defined]
