"""The students' JupyterHub image holds the student edition only (jupyterhub/: Dockerfile.student runs
install-student.sh), and a student's home gets the course on the first start, with exercises arriving through
nbgrader's exchange into release/, where the landing page and the progress check look for them."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.student_edition import LEAK, build
from tests import warm

REPO = Path(__file__).resolve().parent.parent
HUB = REPO / "jupyterhub"


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """The files install-student.sh lays out in an image (the pip install is skipped: SKIP_PIP=1)."""
    root = tmp_path_factory.mktemp("hub")
    tarball = build(root / "student-edition", tar=True)
    subprocess.run(["bash", str(HUB / "install-student.sh"), str(tarball), str(root / "image")], check=True,
                   env={**os.environ, "SKIP_PIP": "1"}, capture_output=True)
    return root / "image"


def test_the_image_holds_the_student_edition_and_nothing_of_the_instructors(image):
    course = image / "opt" / "course"
    assert {"index.ipynb", "notebooks", "utils", "release", "Makefile"} <= {p.name for p in course.iterdir()}
    assert not any((course / name).exists() for name in ("source", "autograder", "reference", "tests", "bench"))
    assert not list((course / "release").iterdir()), "exercises come through the exchange, not the image"
    for path in image.rglob("*"):
        if path.is_file():
            assert not LEAK.search(path.read_bytes().decode("utf-8", errors="replace")), path


def test_the_dockerfile_copies_only_the_edition_and_the_hub_scripts():
    copies = [line for line in (HUB / "Dockerfile.student").read_text().splitlines() if line.startswith(("COPY", "ADD"))]
    assert copies == ["COPY student-edition.tar.gz install-student.sh start-course.sh nbgrader_config_student.py /tmp/course/"]


def test_a_students_first_start_copies_the_course_and_later_starts_keep_their_work(image, tmp_path):
    env = {**os.environ, "COURSE": str(image / "opt" / "course"), "COURSE_HOME": str(tmp_path)}
    script = image / "usr" / "local" / "bin" / "before-notebook.d" / "start-course.sh"
    subprocess.run(["bash", str(script)], env=env, check=True)
    assert (tmp_path / "index.ipynb").exists() and (tmp_path / "release").is_dir()
    (tmp_path / "notebooks" / "01_floats.ipynb").write_text("my notes")
    subprocess.run(["bash", str(script)], env=env, check=True)
    assert (tmp_path / "notebooks" / "01_floats.ipynb").read_text() == "my notes"



def test_a_course_update_reaches_students_without_touching_their_work(image, tmp_path):
    """Mid-term the course changes (a lecture corrected, one added); a student had edited one lecture and deleted
    another: at their next start the unedited lecture is replaced, the new one appears, theirs is kept with the new
    version beside it, the deleted one stays deleted."""
    course = tmp_path / "course"
    shutil.copytree(image / "opt" / "course", course)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "COURSE": str(course), "COURSE_HOME": str(home)}
    script = image / "usr" / "local" / "bin" / "before-notebook.d" / "start-course.sh"
    subprocess.run(["bash", str(script)], env=env, check=True, capture_output=True)
    lectures = home / "notebooks"
    (lectures / "01_floats.ipynb").write_text("my notes")
    (lectures / "03_strides_views.ipynb").unlink()
    for name in ("01_floats", "02_tensors_on_gpu", "03_strides_views"):
        (course / "notebooks" / f"{name}.ipynb").chmod(0o644)
        (course / "notebooks" / f"{name}.ipynb").write_text(f"{name}, corrected")
    (course / "notebooks" / "11_new.ipynb").write_text("a new lecture")
    started = subprocess.run(["bash", str(script)], env=env, check=True, capture_output=True, text=True)
    assert (lectures / "01_floats.ipynb").read_text() == "my notes"
    assert (lectures / "01_floats.course-update.ipynb").read_text() == "01_floats, corrected"
    assert (lectures / "02_tensors_on_gpu.ipynb").read_text() == "02_tensors_on_gpu, corrected"
    assert (lectures / "11_new.ipynb").read_text() == "a new lecture"
    assert (lectures / "03_strides_views.ipynb").read_text() == "03_strides_views, corrected", "changed: back"
    assert "notebooks/01_floats.ipynb: kept yours; the new version is 01_floats.course-update.ipynb" in started.stderr
    again = subprocess.run(["bash", str(script)], env=env, check=True, capture_output=True, text=True)
    assert again.stderr == "" and (lectures / "01_floats.ipynb").read_text() == "my notes"


def test_fetched_exercises_land_where_the_landing_page_and_the_progress_check_look(image, tmp_path, monkeypatch):
    # nbgrader_config_hub.py sets COURSE_EXCHANGE for the course's config read after it: not in this process's tests
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if k != "COURSE_EXCHANGE"})
    student = PyFileConfigLoader("nbgrader_config.py", path=str(image / "etc" / "jupyter")).load_config()
    instructor = PyFileConfigLoader("nbgrader_config_hub.py", path=str(REPO)).load_config()
    assert student.CourseDirectory.course_id == instructor.CourseDirectory.course_id
    assert student.Exchange.root == instructor.Exchange.root
    assert student.Exchange.assignment_dir == os.path.join(os.path.expanduser("~"), "release")
    assert student.Exchange.path_includes_course is False
    # nbgrader's fetch puts an assignment at <assignment_dir>/<assignment>/, relative to the server's root (home)
    fetched = tmp_path / "release" / "01_floats"
    fetched.mkdir(parents=True)
    (fetched / "01_floats.ipynb").write_bytes((REPO / "release" / "01_floats" / "01_floats.ipynb").read_bytes())
    assert "release/01_floats/01_floats.ipynb" in (REPO / "index.ipynb").read_text()
    check = warm.run([sys.executable, "-m", "utils.progress_check", "01_floats"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and "not attempted" in check.stdout, check.stdout + check.stderr
