# One entry point for students, instructors and CI. Run `make help` for the list.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
KERNEL := cs336-primitives
ASSIGNMENTS := $(notdir $(wildcard source/[0-9]*))
LAB_ARGS ?=
LAB_ROOT ?= .
# Jupyter refuses to run as root unless told; containers and CI machines often are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
SUBMITTED ?= submitted
GRADED ?= graded
GRADE_ARGS ?=
PROGRESS_ARGS ?=
EDITION ?= student-edition

.PHONY: help install lab test test-gpu chromium progress student-edition release grade clean

help:
	@echo "make lab      set up (first time) and open JupyterLab on the course, at its landing page index.ipynb"
	@echo "make test     set up (first time) and run every test: utils, notebooks (nbval), release, grading,"
	@echo "              JupyterLab in headless Chromium (installed with apt-get when missing and root or sudo -n)"
	@echo "make progress run the visible tests of your exercises in release/ without changing them: each task"
	@echo "              passed, failed (with the hint) or not attempted; PROGRESS_ARGS=\"--root DIR --timeout 60\""
	@echo "make student-edition  build what students receive into $(EDITION)/ and $(EDITION).tar.gz:"
	@echo "              release/, notebooks/, utils/, index.ipynb, a student Makefile and README; no source/"
	@echo "make test-gpu the same on a CUDA GPU (fails without CUDA): CUDA-only tests and notebooks under CUDA"
	@echo "make release  regenerate release/ (student versions) from source/ with nbgrader"
	@echo "make grade    grade $(SUBMITTED)/<student>/<assignment>/ into $(GRADED)/ (grades.csv + feedback);"
	@echo "              sandboxed and parallel, limits in autograder/limits.toml; GRADE_ARGS=\"--fresh --workers 4\""

# The virtual environment: created if missing, reinstalled when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (cs336 primitives)"
	touch $(STAMP)

install: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=$(LAB_ROOT) --LabApp.default_url=/lab/tree/index.ipynb $(ROOT_FLAG) $(LAB_ARGS)

test: $(STAMP) chromium
	$(BIN)/python -m pytest -q -rs tests
	$(BIN)/python -m pytest -q --nbval --sanitize-with tests/nbval_sanitize.cfg notebooks source index.ipynb

# Headless Chromium for tests/test_browser.py, from the system's packages (see the script).
chromium:
	@bash tests/ensure_chromium.sh

progress: $(STAMP)
	$(BIN)/python -m utils.progress_check $(PROGRESS_ARGS)

student-edition: $(STAMP)
	$(BIN)/python -m autograder.student_edition --out $(EDITION) --tar

# The same suite on a CUDA machine (the GPU runner): refuses to run without CUDA, then runs every test with the
# CUDA-only ones enabled, the notebooks under CUDA against their stored outputs, and the grader's corpus.
test-gpu: $(STAMP) chromium
	$(BIN)/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'make test-gpu needs a CUDA GPU and a CUDA build of torch (README: Running on a GPU)')"
	$(BIN)/python -c "import torch; print('CUDA', torch.version.cuda, 'on', torch.cuda.get_device_name())"
	$(BIN)/python -m pytest -q -rs tests
	$(BIN)/python -m pytest -q --nbval --sanitize-with tests/nbval_sanitize.cfg notebooks source index.ipynb

release: $(STAMP)
	$(BIN)/python -m autograder.release $(ASSIGNMENTS)

grade: $(STAMP)
	$(BIN)/python -m autograder.grade $(SUBMITTED) --out $(GRADED) $(GRADE_ARGS)

clean:
	rm -rf $(VENV) $(GRADED) autograded feedback gradebook.db
