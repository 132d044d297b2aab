"""The README's main command serves JupyterLab on the course, with the course kernel and nbgrader's Formgrader."""
import json
import shutil
import urllib.error
import urllib.request

from autograder.course import assignments
from tests.lab_server import REPO, get, start_lab, stop


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def course_copy(root):
    """A scratch copy of the course as `make lab` serves it (so that Formgrader's gradebook is made there)."""
    root.mkdir(parents=True)
    shutil.copy2(REPO / "index.ipynb", root / "index.ipynb")
    shutil.copy2(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    for folder in ("notebooks", "release", "source"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return root


def test_make_lab_serves_lab_the_course_kernel_and_formgrader(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_EXCHANGE", raising=False)
    course = course_copy(tmp_path / "course")
    lab = start_lab(tmp_path / "lab", root=course)
    try:
        status, page = get(lab.url("/lab"))
        assert status == 200 and b"JupyterLab" in page
        status, body = get(lab.url("/api/kernelspecs"))
        kernels = json.loads(body)["kernelspecs"]
        assert "cs336-primitives" in kernels
        assert kernels["cs336-primitives"]["spec"]["display_name"] == "Python (cs336 primitives)"
        status, body = get(lab.url("/api/contents/notebooks"))
        assert "01_floats.ipynb" in {item["name"] for item in json.loads(body)["content"]}
        # The lab opens on the landing page: the browser `make lab` starts goes to `/`, which leads there.
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(lab.url("/"), timeout=60)
            raise AssertionError("`/` should redirect to the landing page")
        except urllib.error.HTTPError as redirect:
            assert redirect.code in (301, 302)
            assert redirect.headers["Location"].split("?")[0].endswith("/lab/tree/index.ipynb")
        status, body = get(lab.url("/api/contents/index.ipynb"))
        assert json.loads(body)["type"] == "notebook"
        # Formgrader finds the course's nbgrader_config.py and the environment's `alembic` (it makes the gradebook).
        # The first call runs alembic's migrations to create the gradebook: under CI's load that took more than 5 s.
        status, body = get(lab.url("/formgrader/api/assignments"), timeout=180)
        assert status == 200, body
        assert sorted(a["name"] for a in json.loads(body)) == assignments()
        assert (course / "gradebook.db").is_file()
        # Formgrader's Release and Collect buttons use the exchange the course's nbgrader_config.py names: exchange/
        # in the course (git-ignored), since no COURSE_EXCHANGE is set here.
        for button in ("release", "collect"):
            request = urllib.request.Request(lab.url(f"/formgrader/api/assignment/01_floats/{button}"), data=b"",
                                             method="POST")
            with urllib.request.urlopen(request, timeout=120) as response:
                result = json.loads(response.read())
            assert result["success"], (button, result)
        assert (course / "exchange" / "cs336-primitives" / "outbound" / "01_floats" / "01_floats.ipynb").is_file()
        # issue #58: the route table of `make lab` as users get it, every route classified (autograder/routes.py)
        inventory = json.loads(next((tmp_path / "lab" / "runtime").glob("staff-routes-*.json")).read_text())
        assert inventory["server"] == "lab" and len(inventory["routes"]) > 100
        assert [route for route in inventory["routes"] if not route["classified"]] == []
        decided = {(route["pattern"], route["handler"].rsplit(".", 1)[1]): route["decision"]
                   for route in inventory["routes"]}
        assert decided[("/files/(.*)$", "AuthenticatedFileHandler")] == "inert"
        assert decided[("/assignments/validate$", "ValidateAssignmentHandler")] == "own work only"
        # Formgrader's Autograde on make lab is the sandboxed grader's too (autograder/formgrader_autograde.py)
        assert "Formgrader's Autograde runs `python -m autograder.grade`" in lab.log.read_text()
    finally:
        stop(lab.process)
    assert b"No nbgrader_config.py file found" not in lab.log.read_bytes()
