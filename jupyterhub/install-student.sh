#!/usr/bin/env bash
# Install the student edition into a JupyterHub single-user image (run once while building it; see Dockerfile).
#
#   bash install-student.sh student-edition.tar.gz [PREFIX]      (PREFIX: / in an image; a scratch folder in tests)
#
# It installs what students receive and nothing else: the lectures, the landing page and `utils` (from the edition,
# which `make student-edition` builds without source/, the grader or the references), the course kernel, and the
# students' nbgrader configuration. The course is kept read-only in PREFIX/opt/course; start-course.sh copies it into
# each student's home on their first start, with an empty release/ that nbgrader's Assignments tab fetches into.
# Set SKIP_PIP=1 to lay out the files without installing the Python package (what the tests check).
set -euo pipefail
tarball=$(realpath "$1")
prefix=${2:-/}
course="$prefix/opt/course"
here=$(dirname "$(realpath "$0")")
rm -rf "$course" && mkdir -p "$course"
tar -xzf "$tarball" -C "$course" --strip-components=1
rm -rf "$course"/release/*            # exercises arrive through nbgrader's exchange (Assignments tab), not the image
if [ "${SKIP_PIP:-0}" != 1 ]; then
    # utils and the pinned packages, with the torch build that suits the machine (CPU on a hub without GPUs)
    python3 "$course/scripts/install_env.py" --package "$course" --torch "${TORCH:-auto}"
    python3 -m ipykernel install --sys-prefix --name cs336-primitives --display-name "Python (cs336 primitives)"
    # `make progress` in a student's home uses this environment (the image sets VENV to it, TORCH=system):
    # its stamp says the course is installed, so make installs nothing
    touch "$(python3 -c 'import sys; print(sys.prefix)')/.installed"
fi
mkdir -p "$prefix/etc/jupyter" "$prefix/usr/local/bin/before-notebook.d"
cp "$here/nbgrader_config_student.py" "$prefix/etc/jupyter/nbgrader_config.py"
cp "$here/start-course.sh" "$prefix/usr/local/bin/before-notebook.d/start-course.sh"
chmod -R a-w "$course"
echo "student edition installed in $course"
