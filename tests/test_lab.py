"""The README's main command serves JupyterLab on the course, with the course kernel available."""
import json
import urllib.error
import urllib.request

from tests.lab_server import get, start_lab, stop


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_make_lab_serves_lab_and_lists_the_course_kernel(tmp_path):
    lab = start_lab(tmp_path)
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
            opener.open(lab.url("/"), timeout=5)
            raise AssertionError("`/` should redirect to the landing page")
        except urllib.error.HTTPError as redirect:
            assert redirect.code in (301, 302)
            assert redirect.headers["Location"].split("?")[0].endswith("/lab/tree/index.ipynb")
        status, body = get(lab.url("/api/contents/index.ipynb"))
        assert json.loads(body)["type"] == "notebook"
    finally:
        stop(lab.process)
