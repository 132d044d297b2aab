"""A student's first session, in a real browser: `make lab`, the landing page, a lecture, an exercise; then the
instructor's Formgrader on the same lab, after our grader graded a small class; then lecture 10's planning
calculator, whose answer must follow its controls.

Headless Chromium (the system's package, installed by `make test`'s `chromium` step) driven by Playwright. The lab
serves a scratch copy of the course (index.ipynb, notebooks/, release/, source/, nbgrader_config.py, and its own
gradebook), so running cells, typing an answer, an autosave or grading never touches the repository. Screenshots
go to $PYTEST_ARTIFACTS/browser/ (default: test-artifacts/browser/, git-ignored): the landing page, the lecture
after Run All with its first figure, the exercise with a failed and a passed test, and Formgrader's assignments
and the class's grades, and the calculator after its controls moved.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from autograder.course import assignments
from tests import submissions, warm
from tests.lab_server import REPO, start_lab, stop

ARTIFACTS = Path(os.environ.get("PYTEST_ARTIFACTS", REPO / "test-artifacts")) / "browser"
LECTURE = "notebooks/01_floats.ipynb"            # the quickest lecture: a few seconds on a CPU, four figures
EXERCISE = "release/01_floats/01_floats.ipynb"
GRADED_CLASS = {"ada": submissions.solved, "ben": submissions.half_done, "cy": submissions.release_notebooks}
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


def chromium_for_playwright(missing=needs) -> str:
    """The Chromium Playwright will drive; `missing(why)` (skip, or fail where required) when Playwright or Chromium
    is not here."""
    try:
        import playwright.sync_api  # noqa: F401 - only whether it is installed
    except ImportError:
        missing("the playwright package is not installed (the `test` extra)")
    executable = chromium_path()
    if executable is None:
        missing("no Chromium found (chromium on PATH, or CHROMIUM=/path)")
    return executable  # type: ignore[return-value]  # missing() never returns


def digest(paths: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    executable = chromium_for_playwright()
    from playwright.sync_api import sync_playwright

    course = tmp_path_factory.mktemp("course")
    for name in ("index.ipynb", "nbgrader_config.py"):
        shutil.copy2(REPO / name, course / name)
    for folder in ("notebooks", "release", "source"):
        shutil.copytree(REPO / folder, course / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for student, maker in GRADED_CLASS.items():  # a small class, graded by ours into the copy's gradebook
        submissions.write_submission(course / "submitted", student, "01_floats", maker("01_floats"))
    graded = warm.run([sys.executable, "-m", "autograder.grade", "--assignment", "01_floats", "--limit",
                             "cell_seconds=30"], cwd=course, capture_output=True, text=True, timeout=300)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    scratch = tmp_path_factory.mktemp("lab")
    for name, values in LAB_SETTINGS.items():
        (scratch / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / "settings" / name).write_text(json.dumps(values))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("failure*.png"):  # from an earlier failed run
        old.unlink()

    started = time.monotonic()
    lab = start_lab(scratch, root=course)
    lab.course = course  # the graded scratch course (the class report test reads its gradebook)
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


@contextlib.contextmanager
def screenshot_on_failure(page, name: str):
    """Keep a screenshot of what the page showed when the test failed, in ARTIFACTS/`name`."""
    try:
        yield
    except BaseException:
        page.screenshot(path=str(ARTIFACTS / name))
        raise


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
    with screenshot_on_failure(page, "failure.png"):
        student_session(lab, page)


def test_formgrader_lists_the_assignments_and_the_class_grades(browser_page):
    lab, page = browser_page
    with screenshot_on_failure(page, "failure-formgrader.png"):
        formgrader_session(lab, page)


def formgrader_session(lab, page) -> None:
    """Formgrader (nbgrader's instructor pages, served by `make lab`): Manage Assignments lists the ten, and the
    submissions of 01_floats show the scores our grader recorded in the gradebook."""
    page.goto(lab.url("/formgrader"))
    names = page.locator("td.name")
    page.wait_for_function("() => document.querySelectorAll('td.name a').length >= 9")
    assert sorted(t.strip() for t in names.all_inner_texts()) == assignments()
    page.screenshot(path=str(ARTIFACTS / "5_formgrader_assignments.png"))
    page.goto(lab.url("/formgrader/manage_submissions/01_floats"))
    page.wait_for_function("() => document.querySelectorAll('td.student-id').length >= 3")
    scores = dict(zip((t.strip() for t in page.locator("td.student-id").all_inner_texts()),
                      (t.strip() for t in page.locator("td.score").all_inner_texts())))
    points, possible = sum(submissions.task_points("01_floats")), submissions.total_points("01_floats")
    # ada's tests all pass; her written answer, left as released, scores 0 ("No response."): of the total with it
    assert scores["ada"] == f"{points:g} / {possible:g}" and scores["cy"] == f"0 / {possible:g}", scores
    assert 0 < float(scores["ben"].split(" / ")[0]) < points, scores
    page.screenshot(path=str(ARTIFACTS / "6_formgrader_grades.png"))
    print(f"\nformgrader: {len(assignments())} assignments; 01_floats scores {scores}")


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
    # Every lecture and every exercise is linked (the opening questions also link into lectures 5 and 7).
    assert sorted({h for h in links if h.startswith("notebooks/")}) == sorted(f"notebooks/{p.name}" for p in (REPO / "notebooks").glob("*.ipynb"))
    assert len({h for h in links if h.startswith("release/")}) == len(assignments())
    assert page.locator(f"{current(page)} .jp-OutputArea-output", has_text=re.compile("CPU only|CUDA GPU|MPS")).count()
    page.screenshot(path=str(ARTIFACTS / "1_landing_page.png"))
    wait_for_idle_kernel(page)
    landing_code = [c for c in json.loads((REPO / "index.ipynb").read_text())["cells"] if c["cell_type"] == "code"]
    check = next(i for i, c in enumerate(landing_code) if "progress_check" in "".join(c["source"]))
    run_cell(page, check)                   # the progress check, on the course as released: nothing attempted
    progress = code_cell(page, check).locator(".jp-OutputArea-output").inner_text()
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


def test_the_class_report_opens_in_the_browser(browser_page):
    """autograder.report on the scratch course's three graded students: the page opens, its plot loads, and a
    screenshot is kept (7_class_report.png). About 1 s for the page on top of building the report."""
    from autograder import report
    from autograder.course import Course
    lab, page = browser_page
    started = time.monotonic()
    numbers = report.build(Course.load(lab.course), lab.course / "graded", ["01_floats"]).assignments
    built = time.monotonic()
    with screenshot_on_failure(page, "failure-report.png"):
        page.goto((lab.course / "graded" / "report.html").as_uri())
        page.locator("h2", has_text="01_floats").wait_for()
        page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
        assert numbers["01_floats"].submitted == len(GRADED_CLASS)
        page.screenshot(path=str(ARTIFACTS / "7_class_report.png"), full_page=True)
    print(f"\nclass report: built in {built - started:.1f} s, opened and captured in {time.monotonic() - built:.1f} s")


CALCULATOR_LECTURE = "notebooks/10_accounting_a_training_run.ipynb"


def test_the_planning_calculator_follows_its_controls(browser_page):
    """Lecture 10's calculator in the browser: it opens on lecture 2's first question (about 144 days); typing 2048
    GPUs halves the days, and ticking the three sharding boxes makes the memory per GPU fit."""
    lab, page = browser_page
    with screenshot_on_failure(page, "failure-calculator.png"):
        calculator_session(lab, page)


def calculator_session(lab, page) -> None:
    code = [c for c in json.loads((REPO / CALCULATOR_LECTURE).read_text())["cells"] if c["cell_type"] == "code"]
    calculator = next(i for i, c in enumerate(code) if "show_calculator(" in "".join(c["source"]))
    page.goto(lab.url(f"/lab/tree/{CALCULATOR_LECTURE}"))    # the page may be on Formgrader now
    page.locator(CURRENT_TAB, has_text=Path(CALCULATOR_LECTURE).name).wait_for()
    page.locator(f"{current(page)} .jp-Notebook").wait_for()
    wait_for_idle_kernel(page)
    menu(page, "Edit", "Clear Outputs of All Cells")    # stored prompts would look like fresh ones: [1]
    run_cell(page, 0)                                    # the imports
    run_cell(page, calculator)
    answer = page.locator(f"{current(page)} .course-plan-answer")
    answer.wait_for()
    assert "143.9 days" in answer.inner_text() and "does NOT fit" in answer.inner_text()
    gpus = page.locator(f"{current(page)} .widget-inline-hbox", has_text="number of GPUs").locator("input")
    gpus.fill("2048")
    gpus.press("Enter")
    page.wait_for_function(f"() => document.querySelector('{current(page)} .course-plan-answer')"
                           ".textContent.includes('72.0 days')")
    for box in ("shard optimizer state", "shard gradients", "shard parameters"):
        page.locator(f"{current(page)} .widget-checkbox", has_text=box).locator("input").check()
    page.wait_for_function(f"() => /: fits/.test(document.querySelector('{current(page)} .course-plan-answer')"
                           ".textContent)")
    wait_for_idle_kernel(page)                           # the bar plot has caught up with the last change
    answer.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "7_planning_calculator.png"))
    print(f"\ncalculator: {answer.inner_text()}")


def test_the_hub_refuses_the_ports_chromium_will_not_open(browser_page):
    """`make hub` refuses a public port on BROWSER_BLOCKED_PORTS (a hub there starts, and no student reaches it;
    CI once drew port 601 for the test hub). Chromium answers ERR_UNSAFE_PORT for each of them below 1024 (the hub
    refuses the others anyway; the list's newest, 4190, is not in every Chromium yet), and not for their neighbours
    between 600 and 999, where the test hub's ports are drawn. A page of its own: the shared one may still hold
    JupyterLab, which can hold up leaving it."""
    from playwright.sync_api import Error

    from scripts.class_hub import BROWSER_BLOCKED_PORTS
    lab, shared = browser_page
    page = shared.context.browser.new_page()

    def answer(port: int) -> str:
        """What Chromium says to http://127.0.0.1:`port`/: its net:: error, or 'opened'."""
        try:
            page.goto(f"http://127.0.0.1:{port}/", timeout=30_000)
        except Error as error:
            return str(error).split(" at ")[0]
        return "opened"

    try:
        blocked = {p: answer(p) for p in sorted(BROWSER_BLOCKED_PORTS) if p < 1024}
        neighbours = {p + d for p in BROWSER_BLOCKED_PORTS if 600 <= p < 1000 for d in (-1, 1)} - BROWSER_BLOCKED_PORTS
        allowed = {p: answer(p) for p in sorted(neighbours | {80, 443, 600, 999})}
    finally:
        page.close()
    assert {p: said for p, said in blocked.items() if "ERR_UNSAFE_PORT" not in said} == {}
    assert {p: said for p, said in allowed.items() if "ERR_UNSAFE_PORT" in said} == {}
