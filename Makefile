# One entry point for students, instructors and CI. Run `make help` for the list.
PYTHON ?= python3
# VENV=/path/to/env TORCH=system uses an existing environment and its torch (docs/install.md, docs/gpu.md).
VENV   ?= .venv
TORCH  ?= auto
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
DOWNLOAD ?=
PROGRESS_ARGS ?=
EDITION ?= student-edition

.PHONY: help hub hub-test-env install lab lint test test-units-after-set-up test-packages slurm test-gpu gpu-session gpu-wheels test-units test-notebooks test-gpu-notebooks test-all-notebooks test-other-cpu notebooks chromium progress student-edition release grade report lms-import end-term clean

help:
	@echo "make lab      set up (first time) and open JupyterLab on the course, at its landing page index.ipynb"
	@echo "make test     set up (first time) and run every test: utils, notebooks (nbval, also as on another CPU),"
	@echo "              release, grading, JupyterLab in headless Chromium, grading on a one-node Slurm cluster"
	@echo "              (apt-get installs Chromium, slurm-wlm and munge when root or sudo -n)"
	@echo "make lint     ruff on the repository, mypy on autograder/, utils/ and bench/; settings in pyproject.toml"
	@echo "make progress run the visible tests of your exercises in release/ without changing them: each task"
	@echo "              passed, failed (with the hint) or not attempted; PROGRESS_ARGS=\"--root DIR --timeout 60\""
	@echo "make student-edition  build what students receive into $(EDITION)/ and $(EDITION).tar.gz:"
	@echo "              release/, notebooks/, utils/, index.ipynb, a student Makefile and README; no source/"
	@echo "make test-gpu the same on a CUDA GPU (fails without CUDA): CUDA-only tests and notebooks under CUDA"
	@echo "make gpu-session  the one prepared command for a lent GPU machine: make test-gpu, the GPU lectures re-run"
	@echo "              whole, bench.gpu_figures; results in \$$OUT or gpu-results/ (DRY_RUN=1: rehearse on a CPU)"
	@echo "make gpu-wheels   download the wheels a GPU machine without network needs into .whl/ (git-ignored)"
	@echo "make release  regenerate release/ (student versions) from source/ with nbgrader"
	@echo "make notebooks  re-execute lectures in place, keeping stored GPU figures on a CPU (NB=\"notebooks/01_floats.ipynb\")"
	@echo "make grade    grade $(SUBMITTED)/<student>/<assignment>/ into nbgrader's gradebook (gradebook.db) and"
	@echo "              autograded/, and $(GRADED)/ (grades.csv, summary.txt, feedback); sandboxed and parallel,"
	@echo "              limits in autograder/limits.toml; GRADE_ARGS=\"--fresh --workers 4\"; a progress bar with an"
	@echo "              ETA while it runs; GRADE_ARGS=--help: every option (what a class costs: docs/benchmarks.md)"
	@echo "make report   the class report from the gradebook: $(GRADED)/report.html with its plots (after make grade):"
	@echo "              who needs a person by name (missing, late, NOT GRADED, flagged), the score spread, tasks hardest first"
	@echo "make hub      (as root) a class on this machine: JupyterHub, an account per student of ROSTER=students.csv,"
	@echo "              Formgrader for INSTRUCTOR=name STAFF=ta1,ta2; HUB_PREFIX=$(HUB_PREFIX) (docs/hub.md)"
	@echo "make lms-import DOWNLOAD=submissions.zip  put a Canvas-style download into submitted/ (roster from the gradebook)"
	@echo "make end-term the end of term of a class without the hub: archive the gradebook with its ledger, the term's"
	@echo "              work and the class's exchange folder into ARCHIVE=$(ARCHIVE), then clear them (docs/instructors.md)"

# The virtual environment: created if missing, reinstalled when pyproject.toml changes. The torch build suits
# the machine (scripts/install_env.py: CPU wheel on Linux without an NVIDIA driver; TORCH=cpu|cuda|system).
$(STAMP): pyproject.toml scripts/install_env.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python scripts/install_env.py --torch $(TORCH) --extra test
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (cs336 primitives)"
	touch $(STAMP)

install: $(STAMP)

# JupyterLab starts in LAB_ROOT, with the environment's bin/ first on PATH: nbgrader's Formgrader reads the
# nbgrader_config.py of the folder it starts in (the course) and runs the environment's `alembic`.
ABS_BIN := $(abspath $(BIN))
lab: $(STAMP)
	cd "$(LAB_ROOT)" && PATH="$(ABS_BIN):$$PATH" "$(ABS_BIN)/jupyter" lab --ServerApp.root_dir=. \
		--LabApp.default_url=/lab/tree/index.ipynb --ServerApp.jpserver_extensions=autograder.staff_pages=True \
		--ServerApp.jpserver_extensions=autograder.formgrader_autograde=True \
		--ServerApp.kernel_manager_class=autograder.no_kernels.OwnWorkKernels \
		$(ROOT_FLAG) $(LAB_ARGS)

# Two parts side by side, each printed whole when it ends: the notebooks (nbval of the lectures, then the checks as on
# another CPU: test-other-cpu), which start as soon as the course's environment is installed; and tests/ (but
# test_variants.py) on two workers, which start when everything they need is there: Chromium and Slurm (apt-get),
# (as root) the class hub's shared environment and proxy, so that tests/test_class_hub.py finds them built when it
# runs the manual's `make hub` (docs/hub.md), and a clean lint (a finding stops the tests before they start).
# At the end it prints its own time, the ten slowest tests and the ten test files that cost the most CPU, with how busy
# the machine was (scripts/test_times.py, from each part's JUnit XML and tests/cpu_cost.py's logs).
TIMINGS ?= test-artifacts/timings
test:
	@rm -rf $(TIMINGS) && $(PYTHON) scripts/test_times.py --start $(TIMINGS)
	@$(MAKE) --no-print-directory -j5 --output-sync=target test-units-after-set-up test-all-notebooks \
		UNIT_ARGS=--ignore=tests/test_variants.py; status=$$?; $(BIN)/python scripts/test_times.py $(TIMINGS); exit $$status

test-units-after-set-up: $(STAMP) test-packages hub-test-env lint
	@date +%s > $(TIMINGS)/set-up-done
	@$(MAKE) --no-print-directory test-units

# ruff on every Python file but the notebooks, mypy on autograder/, utils/ and bench/ (both configured in pyproject.toml).
lint: $(STAMP)
	$(BIN)/python -m ruff check . && $(BIN)/python -m mypy

HUB_TEST_PREFIX ?= /var/tmp/cs336-hub-test
export HUB_TEST_PREFIX
hub-test-env:
	@if [ "$$(id -u)" != 0 ]; then echo "make: not root, so no class hub environment (tests/test_class_hub.py is skipped)"; \
	else $(PYTHON) scripts/class_hub.py prepare --prefix $(HUB_TEST_PREFIX) || \
	echo "make: the class hub's environment was not built (tests/test_class_hub.py says why)"; fi

test-all-notebooks: $(STAMP)
	$(MAKE) --no-print-directory test-notebooks
	$(MAKE) --no-print-directory test-other-cpu

# The system's packages the tests need, one apt-get after the other (two at once would fight over dpkg's lock):
# Chromium, then Slurm and munge.
test-packages:
	@$(MAKE) --no-print-directory chromium
	@$(MAKE) --no-print-directory slurm

# Debian's slurm-wlm and munge for tests/test_clusters.py, which starts a one-node cluster of its own (see the
# script; no system service is started). SKIP_SLURM=1: not even try (the Slurm test is then skipped).
slurm:
	@$(if $(SKIP_SLURM),echo "make: SKIP_SLURM is set: no Slurm install (the Slurm part of tests/test_clusters.py is skipped)",bash tests/ensure_slurm.sh)

# Headless Chromium for tests/test_browser.py, from the system's packages (see the script).
# SKIP_CHROMIUM=1: not even try (a GPU machine has no network for apt-get; the browser test is then skipped).
chromium:
	@$(if $(SKIP_CHROMIUM),echo "make: SKIP_CHROMIUM is set: no Chromium install (tests/test_browser.py is skipped)",bash tests/ensure_chromium.sh)

progress: $(STAMP)
	$(BIN)/python -m utils.progress_check $(PROGRESS_ARGS)

student-edition: $(STAMP)
	$(BIN)/python -m autograder.student_edition --out $(EDITION) --tar

# The same suite on a CUDA machine (the GPU runner): refuses to run without CUDA, then runs every test with the
# CUDA-only ones enabled, the notebooks under CUDA against their stored outputs, and the grader's corpus. The unit
# tests and the notebooks run side by side (a GPU machine has the cores); each part's output is kept together.
# GPU_SYNC=line shows both halves' lines as they come (make gpu-session: a half cut at its time limit still logs).
GPU_SYNC ?= target
test-gpu: $(STAMP) chromium
	$(BIN)/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'make test-gpu needs a CUDA GPU and a CUDA build of torch (docs/gpu.md)')"
	$(BIN)/python -c "import torch; print('CUDA', torch.version.cuda, 'on', torch.cuda.get_device_name(), 'with torch', torch.__version__)"
	$(MAKE) --no-print-directory -j2 --output-sync=$(GPU_SYNC) test-units test-gpu-notebooks

# Two pytest workers, each taking whole test files (a file's shared fixtures, such as the graded class, run once),
# the longest first (tests/conftest.py).
UNIT_ARGS ?=
UNIT_WORKERS ?= 2
test-units:
	$(BIN)/python -m pytest -q -rs -n $(UNIT_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 \
		--junitxml=$(TIMINGS)/units.xml $(call CPU_LOG,units) $(UNIT_ARGS) tests

NBVAL := $(BIN)/python -m pytest -q --nbval --sanitize-with tests/nbval_sanitize.cfg
# Each test file's CPU, for the report at the end of `make test` (tests/cpu_cost.py).
CPU_LOG = -p tests.cpu_cost --cpu-log $(TIMINGS)/$(1)
# The lectures and the landing page against their stored outputs. On a CPU the exercise sources are not run by nbval:
# the grader runs them, hidden tests included, where every solution must earn every point (tests/test_autograde.py
# under this CPU's dispatch, tests/test_variants.py under the second one); a second run here would only repeat that.
test-notebooks:
	$(NBVAL) --junitxml=$(TIMINGS)/notebooks.xml $(call CPU_LOG,notebooks) notebooks index.ipynb

# On the GPU runner nbval also runs the exercise sources: their solutions under CUDA, against their stored outputs,
# NB_WORKERS notebooks at a time (one worker keeps a notebook's cells together); NB_ARGS adds pytest options.
NB_WORKERS ?= 1
NB_ARGS ?=
test-gpu-notebooks:
	$(NBVAL) $(if $(filter-out 1,$(NB_WORKERS)),-n $(NB_WORKERS) --dist loadfile) $(NB_ARGS) notebooks source index.ipynb

# The lectures and the landing page once more on "another CPU": torch's generic kernels instead of this CPU's vector
# units, and oneDNN without native bf16, so that a stored output depending on one machine's low bits fails here, not
# on a student's laptop. Then tests/test_variants.py grades the exercise sources' solutions and the variant solutions
# under the same settings (it sets them for the grader itself; `make test` runs it here, not among the unit tests).
OTHER_CPU := ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=AVX2
test-other-cpu:
	$(OTHER_CPU) $(NBVAL) --junitxml=$(TIMINGS)/notebooks-other-cpu.xml $(call CPU_LOG,notebooks-other-cpu) notebooks index.ipynb
	$(BIN)/python -m pytest -q --junitxml=$(TIMINGS)/variants.xml $(call CPU_LOG,variants) tests/test_variants.py

# The one command for a lent GPU machine (docs/gpu.md; scripts/gpu_session.py says what it does):
#   make gpu-session VENV=$$(python3 -c 'import sys; print(sys.prefix)') TORCH=system     on the GPU machine
#   make gpu-session DRY_RUN=1 [QUICK=1]                                                    rehearsal on a CPU
# It installs the course itself (offline from .whl/ when there), so it does not depend on $(STAMP).
gpu-session:
	$(PYTHON) scripts/gpu_session.py --venv $(VENV) --torch $(if $(filter auto,$(TORCH)),system,$(TORCH)) \
		$(if $(DRY_RUN),--dry-run) $(if $(QUICK),--quick) $(GPU_SESSION_ARGS)

# The wheels the GPU machine (no network) lacks, for Python 3.12 on x86-64, into .whl/ (git-ignored; their size:
# docs/benchmarks.md, The GPU session's wheels).
gpu-wheels:
	$(PYTHON) scripts/gpu_wheels.py

release: $(STAMP)
	$(BIN)/python -m autograder.release $(ASSIGNMENTS)

# Re-execute notebooks in place (NB="notebooks/05_flops_mfu.ipynb ..."; default: every lecture and the landing page).
# Without a GPU the stored GPU figures (cells tagged gpu-figure) are kept: scripts/execute_notebooks.py.
NB ?= notebooks/*.ipynb index.ipynb
notebooks: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py $(NB)

grade: $(STAMP)
	$(BIN)/python -m autograder.grade $(SUBMITTED) --out $(GRADED) $(GRADE_ARGS)

report: $(STAMP)
	$(BIN)/python -m autograder.report --out $(GRADED)

# A class on this machine (docs/hub.md), as root: accounts from the roster, the shared environment, the
# proxy and Formgrader's service, then JupyterHub in the foreground (Ctrl-C stops it; running it again keeps
# everything). Plain python3: the set-up needs only the standard library, and builds the hub's own environment.
HUB_PREFIX ?= /opt/cs336-hub
ROSTER ?=
STAFF ?=
INSTRUCTOR ?=
HUB_ARGS ?=
hub:
	$(PYTHON) scripts/class_hub.py setup --prefix $(HUB_PREFIX) --roster "$(ROSTER)" --staff "$(STAFF)" \
		--instructor "$(INSTRUCTOR)" $(HUB_ARGS)
	$(PYTHON) scripts/class_hub.py start --prefix $(HUB_PREFIX)

lms-import: $(STAMP)
	$(BIN)/python -m autograder.lms_import $(DOWNLOAD)

# The end of term of a class on one machine (docs/instructors.md, "End of term"); the hub has its own.
ARCHIVE ?= $(HOME)/cs336-primitives-archive
end-term: $(STAMP)
	$(BIN)/python -m autograder.end_term --archive "$(ARCHIVE)" --out $(GRADED)

# The gradebook (gradebook.db) is the record of the class, manual scores included: `clean` never removes it.
clean:
	rm -rf $(VENV) $(GRADED) autograded feedback
