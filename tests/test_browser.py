"""A student's first session, in a real browser: `make lab`, the landing page, a lecture, an exercise.

Headless Chromium (the system's package, installed by `make test`'s `chromium` step) driven by Playwright. The lab
serves a scratch copy of the course (index.ipynb, notebooks/, release/), so running cells, typing an answer or an
autosave never touches the repository. Screenshots go to $PYTEST_ARTIFACTS/browser/ (default:
test-artifacts/browser/, git-ignored): the landing page, the lecture after Run All with its first figure, and the
exercise with a failed and a passed test.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.lab_server import REPO, start_lab, stop

ARTIFACTS = Path(os.environ.get("PYTEST_ARTIFACTS", REPO / "test-artifacts")) / "browser"
LECTURE = "notebooks/01_floats.ipynb"            # the quickest lecture: a few seconds on a CPU, four figures
EXERCISE = "release/01_floats/01_floats.ipynb"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
                 "--disable-sync", "--no-first-run", "--metrics-recording-only", "--mute-audio"]
# Settings a fresh profile would otherwise fetch or vary: no news or update checks (no network here), and every
# cell attached to the page so that the test sees all of them.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
# The notebook panel of the current tab (other open notebooks stay in the page, merely hidden).
CURRENT_TAB = ".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current"
PROMPTS_JS = """() => {
    const tab = document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current');
    const panel = tab && document.getElementById(tab.dataset.id);
    return panel ? Array.from(panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')).map(p => p.textContent.trim()) : [];
}"""


def current(page) -> str:
    """A CSS selector for the notebook panel of the current tab."""
    return "#" + page.locator(CURRENT_TAB).get_attribute("data-id")


def chromium_path() -> str | None:
    candidates = [os.environ.get("CHROMIUM")] + [shutil.which(name) for name in
                                                  ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")]
    return next((c for c in candidates if c and Path(c).exists()), None)


def needs(what: str) -> None:
    """Skip, saying why, when the browser set-up is missing; fail instead where REQUIRE_BROWSER=1 says it must run."""
    message = f"{what}; `make test` installs it (tests/ensure_chromium.sh, the `test` extra)"
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


def digest(paths: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        needs("the playwright package is not installed")
    executable = chromium_path()
    if executable is None:
        needs("no Chromium found (chromium on PATH, or CHROMIUM=/path)")

    course = tmp_path_factory.mktemp("course")
    shutil.copy2(REPO / "index.ipynb", course / "index.ipynb")
    for folder in ("notebooks", "release"):
        shutil.copytree(REPO / folder, course / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    scratch = tmp_path_factory.mktemp("lab")
    for name, values in LAB_SETTINGS.items():
        (scratch / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / "settings" / name).write_text(json.dumps(values))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "failure.png").unlink(missing_ok=True)  # from an earlier failed run

    started = time.monotonic()
    lab = start_lab(scratch, root=course)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            yield lab, page
            browser.close()
    finally:
        stop(lab.process)
        print(f"\nbrowser session: {time.monotonic() - started:.1f} s; screenshots in {ARTIFACTS}")


def wait_for_idle_kernel(page, timeout_s: float = 90) -> None:
    """Wait until the current notebook's kernel has started and is idle."""
    page.wait_for_selector(f'{current(page)} .jp-Notebook-ExecutionIndicator[data-status="idle"]',
                           timeout=timeout_s * 1000)


def wait_until_run(page, timeout_s: float = 180) -> list[str]:
    """After Run All on a notebook whose outputs were cleared: wait until no cell is queued or running."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        prompts = page.evaluate(PROMPTS_JS)
        if prompts and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts):
            wait_for_idle_kernel(page)
            return prompts
        errors = page.locator(f'{current(page)} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        if errors.count() and not any("*" in p for p in prompts):
            return prompts  # stopped at an error: the caller's checks say which
        time.sleep(0.5)
    raise AssertionError(f"the notebook did not finish within {timeout_s:.0f} s: prompts {page.evaluate(PROMPTS_JS)}")


def menu(page, top: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def open_from_landing_page(page, href: str) -> None:
    """Go back to the landing page's tab and click its link to `href`; wait for that notebook to be current."""
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="index.ipynb").click()
    page.locator(f'{current(page)} .jp-RenderedMarkdown a[href*="/files/{href}?"]').first.click()
    name = Path(href).name
    page.locator(CURRENT_TAB, has_text=name).wait_for()
    page.locator(f"{current(page)} .jp-Notebook").wait_for()


def code_cell(page, index: int):
    return page.locator(f"{current(page)} .jp-CodeCell").nth(index)


def run_cell(page, index: int, timeout_s: float = 60) -> None:
    """Click into code cell `index` and run it in place (Ctrl+Enter); wait until it has a new execution count.

    A tab that has just opened may still move the focus after the click, and then the key press goes nowhere:
    if the cell has not started (queued or running: its prompt changed) within a few seconds, try again.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    before = page.evaluate(PROMPTS_JS)[index]
    prompt = f"({PROMPTS_JS})()[{index}]"
    for _ in range(3):
        code_cell(page, index).locator(".jp-InputArea-editor").click()
        page.keyboard.press("Control+Enter")
        try:
            page.wait_for_function(f"() => {prompt} !== {json.dumps(before)}", timeout=5_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        raise AssertionError(f"code cell {index} did not start after 3 tries of Ctrl+Enter")
    page.wait_for_function(f"() => /^\\[\\d+\\]:$/.test({prompt}) && {prompt} !== {json.dumps(before)}",
                           timeout=timeout_s * 1000)


def test_student_session_in_jupyterlab(browser_page):
    lab, page = browser_page
    try:
        student_session(lab, page)
    except BaseException:
        page.screenshot(path=str(ARTIFACTS / "failure.png"))  # what the page showed when the test failed
        raise


def student_session(lab, page) -> None:
    watched = [REPO / LECTURE, REPO / EXERCISE, REPO / "index.ipynb"]
    before = digest(watched)

    # 1. `make lab` opens on the landing page: `/` leads to index.ipynb.
    page.goto(lab.url("/"))
    page.wait_for_url(re.compile(r"/lab/tree/index\.ipynb"))
    page.locator(f"{current(page)} .jp-RenderedMarkdown h1", has_text="Start here").wait_for()
    # JupyterLab turns a relative link into <base>/files/<path>?_xsrf=... and opens it in a tab when clicked.
    hrefs = page.eval_on_selector_all(f"{current(page)} .jp-RenderedMarkdown a", "links => links.map(a => a.href)")
    links = [m.group(1) for h in hrefs if (m := re.search(r"/files/([^?#]+\.ipynb)", h))]
    assert [h for h in links if h.startswith("notebooks/")] == sorted(f"notebooks/{p.name}" for p in (REPO / "notebooks").glob("*.ipynb"))
    assert len([h for h in links if h.startswith("release/")]) == 9
    assert page.locator(f"{current(page)} .jp-OutputArea-output", has_text=re.compile("CPU only|CUDA GPU|MPS")).count()
    page.screenshot(path=str(ARTIFACTS / "1_landing_page.png"))
    wait_for_idle_kernel(page)
    run_cell(page, 1)                       # the progress check, on the course as released: nothing attempted
    progress = code_cell(page, 1).locator(".jp-OutputArea-output").inner_text()
    assert "not attempted" in progress and "0 tasks passed, 0 failed" in progress, progress

    # 2. A lecture, from the landing page's link: clear the stored outputs, Run > Run All Cells, and check that
    #    every cell ran, nothing wrote an error, and the figures rendered.
    open_from_landing_page(page, LECTURE)
    wait_for_idle_kernel(page)
    menu(page, "Edit", "Clear Outputs of All Cells")
    assert page.locator(f"{current(page)} .jp-OutputArea-output img").count() == 0
    started = time.monotonic()
    menu(page, "Run", "Run All Cells")
    prompts = wait_until_run(page)
    lecture_seconds = time.monotonic() - started
    errors = page.locator(f'{current(page)} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    assert errors.count() == 0, f"the lecture wrote errors or stderr in the browser: {errors.first.inner_text()[:2000]}"
    assert all(re.fullmatch(r"\[\d+\]:", p) for p in prompts), prompts
    stored = json.loads((REPO / LECTURE).read_text())
    figures = sum("image/png" in o.get("data", {}) for c in stored["cells"] if c["cell_type"] == "code"
                  for o in c.get("outputs", []))
    images = page.locator(f"{current(page)} .jp-OutputArea-output img")
    assert images.count() == figures > 0
    assert page.eval_on_selector_all(f"{current(page)} .jp-OutputArea-output img",
                                     "imgs => imgs.every(i => i.complete && i.naturalWidth > 100)")
    images.first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "2_lecture_after_run_all.png"))
    print(f"\nlecture {LECTURE}: Run All took {lecture_seconds:.1f} s in the browser, {figures} figures")

    # 3. The exercise, from the landing page's link: the set-up cell runs, task 1's test fails as released
    #    (NotImplementedError), and task 3 passes once its answer is typed in.
    open_from_landing_page(page, EXERCISE)
    wait_for_idle_kernel(page)
    for index in (0, 1, 2):                 # the set-up cell, task 1's answer as released, task 1's test
        run_cell(page, index)
    failure = code_cell(page, 2).locator(".jp-OutputArea-output").inner_text()
    assert "NotImplementedError" in failure and "visible tests passed" not in failure, failure
    answer = code_cell(page, 5)             # task 3: tensor_nbytes
    assert "def tensor_nbytes" in answer.inner_text()
    for _ in range(3):                      # type the answer over the stub (again if the focus was elsewhere)
        answer.locator(".jp-InputArea-editor").click()
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.insert_text("def tensor_nbytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize\n")
        typed = answer.locator(".cm-content").inner_text()
        if "math.prod" in typed and "NotImplementedError" not in typed:
            break
    else:
        raise AssertionError(f"could not type the answer into the cell: {typed!r}")
    run_cell(page, 5)                       # the answer, as typed
    run_cell(page, 6)                       # its test
    passed = code_cell(page, 6).locator(".jp-OutputArea-output").inner_text()
    assert "Task 3: visible tests passed." in passed, passed
    assert "Error" not in passed, passed
    code_cell(page, 2).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "3_exercise_task1_fails_as_released.png"))
    code_cell(page, 6).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "4_exercise_task3_passes.png"))

    assert digest(watched) == before, "the browser session changed a file of the repository"
