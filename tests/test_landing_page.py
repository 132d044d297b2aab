"""index.ipynb, the page `make lab` opens on: the ten topics in order, with working links, the device, progress."""
import json
import re
import subprocess

from tests.submissions import REPO, total_points

INDEX = REPO / "index.ipynb"
LOCAL_PATH = re.compile(r"/(tmp|root|work|home)/[A-Za-z0-9_.-]+")
TOPICS = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))


def notebook() -> dict:
    return json.loads(INDEX.read_text())


def markdown() -> str:
    return "\n".join("".join(c["source"]) for c in notebook()["cells"] if c["cell_type"] == "markdown")


def test_course_kernel():
    assert notebook()["metadata"]["kernelspec"] == {"display_name": "Python (cs336 primitives)", "language": "python",
                                                    "name": "cs336-primitives"}


def test_lists_the_ten_topics_in_order_with_links_that_exist():
    assert len(TOPICS) == 10
    links = re.findall(r"\]\(([^)]+\.ipynb)\)", markdown())
    assert [link for link in links if link.startswith("notebooks/")] == [f"notebooks/{t}.ipynb" for t in TOPICS]
    assert [link for link in links if link.startswith("release/")] == [f"release/{t}/{t}.ipynb" for t in TOPICS]
    assert all((REPO / link).is_file() for link in links)


def test_points_per_topic_match_the_exercises():
    rows = [line for line in markdown().splitlines() if re.match(r"\|\s*\d+\s*\|", line)]
    assert len(rows) == len(TOPICS)
    for topic, row in zip(TOPICS, rows):
        assert f"release/{topic}/" in row
        assert float(row.rstrip(" |").rsplit("|", 1)[1]) == total_points(topic), topic  # tests and written answers


def test_device_and_progress_cells_are_stored_and_clean():
    cells = [c for c in notebook()["cells"] if c["cell_type"] == "code"]
    device = next(c for c in cells if "describe_device()" in "".join(c["source"]))
    progress = next(c for c in cells if "progress_check" in "".join(c["source"]))
    for cell in (device, progress):
        assert "nbval-ignore-output" in cell["metadata"].get("tags", [])  # machine and student dependent
        assert cell["execution_count"] is not None and cell["outputs"], "execute index.ipynb and store its outputs"
        for output in cell["outputs"]:
            assert output["output_type"] == "stream" and output["name"] == "stdout"
            assert not LOCAL_PATH.search(json.dumps(output))
    assert re.search(r"CPU only|CUDA GPU|MPS", "".join(device["outputs"][0]["text"]))


def test_make_lab_opens_it_and_make_test_runs_it():
    dry_run = subprocess.run(["make", "-n", "lab", "LAB_ARGS=--no-browser"], cwd=REPO, capture_output=True, text=True)
    assert "--LabApp.default_url=/lab/tree/index.ipynb" in dry_run.stdout
    test = subprocess.run(["make", "-n", "test", "STAMP=/dev/null", "CHROMIUM=/bin/true"], cwd=REPO,
                          capture_output=True, text=True).stdout
    nbval_runs = [line for line in test.splitlines() if re.search(r"--nbval .*index\.ipynb", line)]
    assert len(nbval_runs) == 2 and "ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=AVX2" in nbval_runs[1]


def test_opens_with_lecture_2s_two_questions_answered_by_a_cell_and_linked_to_their_lectures():
    cells = notebook()["cells"]
    opening = "".join(cells[0]["source"])
    assert "70B" in opening and "1024 H100s" in opening and "8 H100s" in opening
    for lecture, heading in re.findall(r"\]\((notebooks/[^)#]+\.ipynb)#([^)]+)\)", opening):
        headings = ["".join(c["source"]).splitlines()[0].lstrip("# ").replace(" ", "-")
                    for c in json.loads((REPO / lecture).read_text())["cells"] if c["cell_type"] == "markdown"]
        assert heading in headings, f"{lecture}#{heading}: no such heading (JupyterLab's anchor: spaces become '-')"
    answers = cells[1]
    assert answers["cell_type"] == "code" and "144 days" in "".join(answers["outputs"][0]["text"])
