"""One prepared command for a lent GPU machine (issues #21 and #25): `make gpu-session`, or on the device

    python3 scripts/gpu_session.py --venv "$(python3 -c 'import sys; print(sys.prefix)')" --torch system

It prints its plan, stops at once when CUDA is missing (but with --dry-run), and then, each step under its own time
limit and all of it inside --budget seconds (540 by default: a device command may run 600):
  device    the device line (nvidia-smi, torch, CUDA) into device.txt
  wheels    .whl/manifest.json (make gpu-wheels) against pyproject.toml: every package carried or on the device
  install   the course into VENV with its own torch (TORCH=system), offline from .whl when it is there
  lectures  lectures 2, 5, 7, 8, 9 and 10 end to end, one kernel each, alone on the GPU (their timings are stored),
            with the prepared edits (scripts/gpu_lectures.py): notebooks.tar.gz, ready to commit
  bench     python -m bench.gpu_figures, alone on the GPU: gpu_figures.txt
  test-gpu  make test-gpu: the unit tests (CUDA ones included) and nbval of notebooks/, source/ and index.ipynb
            under CUDA, side by side on the machine's cores, with the time that is left
and writes into --out ($OUT when set, else gpu-results/) at most 8 files, as a device call brings back: summary.md
(plan, device, each step's result and time, pass counts, the GPU figures, the follow-up steps), device.txt,
gpu_figures.txt, notebooks.tar.gz (the executed lectures, paths as in the repo) and logs.tar.gz. The summary is
rewritten after every step, so a run cut short still leaves what it did.

--dry-run (make gpu-session DRY_RUN=1) rehearses on a CPU: every step that needs no CUDA runs, and the CUDA steps run
their set-up (the edits and conventions of the lectures, the bench's import, the test commands' collection) and say
what they skipped. --quick leaves out the slow parts of the rehearsal (tests/test_gpu_session.py uses it).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WHEELS = REPO / ".whl"
DEVICE_PACKAGES = REPO / "scripts" / "device_packages.txt"
CARRY_LIMIT = 64 * 2**20  # a device call's working tree plus carried paths
KERNEL = "cs336-primitives"


@dataclass
class Step:
    name: str
    what: str
    limit: int          # seconds, at most
    cuda: bool          # needs a GPU to do its real work
    status: str = "not run"
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def plan() -> list[Step]:
    return [
        Step("device", "check CUDA; the device line (nvidia-smi, torch, CUDA) into device.txt", 60, True),
        Step("wheels", "check .whl/manifest.json (make gpu-wheels) against pyproject.toml and the device's packages",
             10, False),
        Step("install", "install the course into VENV with its own torch (TORCH=system), offline from .whl", 180, False),
        Step("lectures", "lectures 2, 5, 7, 8, 9, 10 end to end, one kernel each, alone on the GPU, with the prepared "
                         "edits (scripts/gpu_lectures.py)", 330, True),
        Step("bench", "python -m bench.gpu_figures, alone on the GPU", 120, True),
        Step("test-gpu", "make test-gpu: unit tests and nbval of notebooks/, source/, index.ipynb under CUDA, "
                         "side by side, in the time left", 600, True),
    ]


class Session:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.started = time.monotonic()
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="gpu-session-"))
        (self.work / "logs").mkdir()
        self.venv = Path(args.venv)
        self.python = self.venv / "bin" / "python"
        self.steps = plan()
        self.cuda = False
        self.device_line = "not read yet"
        self.counts: dict[str, str] = {}

    # -- running things -------------------------------------------------------------------------------------------
    def left(self) -> float:
        return self.args.budget - (time.monotonic() - self.started)

    def run(self, step: Step, command: list[str], log: str, limit: float | None = None,
            env: dict[str, str] | None = None) -> int | None:
        """Run `command` in its own process group with output to logs/`log`; None if it ran out of time."""
        limit = max(5.0, min(limit or step.limit, self.left() - 20))
        path = self.work / "logs" / log
        print(f"    $ {shlex.join(command)}   (at most {limit:.0f} s; log {log})", flush=True)
        with open(path, "ab") as sink:
            process = subprocess.Popen(command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT,
                                       env={**os.environ, **(env or {})}, start_new_session=True)
            try:
                return process.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                step.notes.append(f"stopped after {limit:.0f} s (its limit)")
                return None

    def tail(self, log: str, lines: int = 6) -> str:
        path = self.work / "logs" / log
        text = path.read_text(errors="replace").splitlines() if path.exists() else []
        return "\n".join(text[-lines:])

    # -- the steps ------------------------------------------------------------------------------------------------
    def step_device(self, step: Step) -> str:
        probe = ("import torch, platform; ok = torch.cuda.is_available(); "
                 "print(ok); print((f'{torch.cuda.get_device_name()}, ' if ok else 'no CUDA: ') + "
                 "f'torch {torch.__version__}, CUDA {torch.version.cuda}, Python {platform.python_version()}')")
        if not self.python.exists():
            step.notes.append(f"{self.python} does not exist")
            return "failed"
        result = subprocess.run([str(self.python), "-c", probe], capture_output=True, text=True, timeout=step.limit)
        if result.returncode != 0:
            step.notes.append(result.stderr.strip()[-400:])
            return "failed"
        cuda, line = result.stdout.strip().splitlines()[-2:]
        self.cuda = cuda == "True"
        smi = shutil.which("nvidia-smi")
        if smi:
            query = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                                   capture_output=True, text=True, timeout=30)
            line += f"; nvidia-smi: {query.stdout.strip() or query.stderr.strip()}"
        self.device_line = line
        (self.out / "device.txt").write_text(line + "\n")
        step.notes.append(line)
        return "ok" if self.cuda else "no CUDA"

    def step_wheels(self, step: Step) -> str:
        manifest_path = WHEELS / "manifest.json"
        if not manifest_path.exists():
            step.notes.append("no .whl/manifest.json: run `make gpu-wheels` here (PyPI) before a device session; "
                              "without it the device, which has no network, cannot install the course")
            return "missing"
        manifest = json.loads(manifest_path.read_text())
        normalize = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731
        closure = {normalize(pin.split("==")[0]): pin.split("==")[1] for pin in manifest["closure"]}
        project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
        problems = []
        for pin in project["dependencies"] + project["optional-dependencies"]["test"]:
            name, version = pin.split("==")
            if normalize(name) in {"torch", *manifest["left_out"]}:
                continue
            if closure.get(normalize(name)) != version:
                problems.append(f"{pin} is not what .whl was made for ({closure.get(normalize(name))}): make gpu-wheels")
        on_device = {normalize(line.strip()) for line in DEVICE_PACKAGES.read_text().splitlines()
                     if line.strip() and not line.startswith("#")}
        carried = {normalize(pin.split("==")[0]) for pin in manifest["carried"]}
        files = {normalize(name.split("-")[0]) for name in manifest["wheels"]}
        missing_files = sorted(carried - files)
        uncovered = sorted(set(closure) - carried - on_device)
        problems += [f"wheel missing from .whl: {name}" for name in missing_files]
        problems += [f"neither carried nor on the device: {name}" for name in uncovered]
        on_disk = sum(p.stat().st_size for p in WHEELS.glob("*.whl"))
        tree = self.tree_bytes()
        step.notes.append(f"{len(manifest['wheels'])} wheels, {on_disk / 2**20:.1f} MiB; with the working tree "
                          f"({tree / 2**20:.1f} MiB) {(on_disk + tree) / 2**20:.1f} MiB of the {CARRY_LIMIT // 2**20} MiB "
                          f"a device call carries; {len(manifest['from_the_device'])} of {len(closure)} packages are "
                          f"the device's own; left out: {', '.join(manifest['left_out'])}")
        if on_disk + tree > CARRY_LIMIT:
            problems.append("too large to carry")
        step.notes += problems
        return "failed" if problems else "ok"

    def tree_bytes(self) -> int:
        """Bytes of what a device call sends besides carried paths: tracked and untracked, not ignored, files."""
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                                capture_output=True, text=True)
        return sum((REPO / name).stat().st_size for name in listed.stdout.split("\0") if name and (REPO / name).is_file())

    def step_install(self, step: Step) -> str:
        stamp = self.venv / ".installed"
        env = {}
        left_out = ["playwright", "ruff", "mypy"]
        if (WHEELS / "manifest.json").exists():
            env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELS), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
            left_out = list(json.loads((WHEELS / "manifest.json").read_text())["left_out"])  # what .whl has not
        commands = [[str(self.python), "scripts/install_env.py", "--torch", self.args.torch, "--extra", "test",
                     *(flag for name in left_out for flag in ("--without", name))],
                    [str(self.python), "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL,
                     "--display-name", "Python (cs336 primitives)"]]
        shown = " ".join(f"{k}={v}" for k, v in env.items())
        if stamp.exists():
            step.notes.append(f"{self.venv} is installed already ({stamp}); a device runs: {shown} "
                              + " && ".join(map(shlex.join, commands)))
            return "ok (already)"
        if self.args.dry_run:
            step.notes.append("dry run: would run " + shown + " " + " && ".join(map(shlex.join, commands)))
            return "skipped"
        for command in commands:
            code = self.run(step, command, "install.log", env=env)
            if code != 0:
                step.notes.append(self.tail("install.log"))
                return "failed"
        stamp.touch()
        return "ok"

    def step_lectures(self, step: Step) -> str:
        command = [str(self.python), "scripts/gpu_lectures.py", "--out", str(self.work)]
        if self.cuda:
            command.append("--execute")
        else:
            command.append("--dry-run")
            if not self.args.quick:
                command.append("--execute")
                step.notes.append("dry run: the lectures run on this CPU, one kernel each, to show that the edited "
                                  "ones still run; their outputs are not for committing")
            else:
                step.notes.append("dry run, quick: edits and conventions checked, no lecture executed")
        code = self.run(step, command, "lectures.log")
        report_path = self.work / "lectures.json"
        if report_path.exists():
            report = json.loads(report_path.read_text())
            for name, lecture in report["lectures"].items():
                state = "OK" if not lecture["problems"] else "PROBLEMS: " + "; ".join(lecture["problems"])
                step.notes.append(f"{name}: {state} ({lecture['seconds']} s); " + "; ".join(lecture["edits"]))
        if self.cuda and any((self.work / "notebooks").glob("*.ipynb")):
            # Also after a failure or a time-out: each lecture that ran whole is worth keeping (lectures.json, in
            # logs.tar.gz, says which ones had problems), and a device session is rare.
            self.pack("notebooks.tar.gz", self.work, "notebooks")
        if code is None:
            return "timed out"
        if code != 0:
            step.notes.append(self.tail("lectures.log"))
            return "failed"
        return "ok" if self.cuda else "rehearsed"

    def step_bench(self, step: Step) -> str:
        if not self.cuda:
            code = self.run(step, [str(self.python), "-c", "import bench.gpu_figures"], "bench.log", limit=60)
            step.notes.append("dry run: bench.gpu_figures imports; its measurements need CUDA")
            return "rehearsed" if code == 0 else "failed"
        code = self.run(step, [str(self.python), "-m", "bench.gpu_figures"], "bench.log",
                        env={"PYTHONUNBUFFERED": "1"})
        shutil.copy(self.work / "logs" / "bench.log", self.out / "gpu_figures.txt")
        return {None: "timed out", 0: "ok"}.get(code, "failed")

    def test_commands(self) -> tuple[list[str], dict[str, str]]:
        workers = max(2, (os.cpu_count() or 2) // 2)
        variables = {"VENV": str(self.venv), "TORCH": self.args.torch, "SKIP_CHROMIUM": "1", "GPU_SYNC": "line",
                     "UNIT_WORKERS": str(workers), "NB_WORKERS": str(workers),
                     "UNIT_ARGS": f"--junitxml={self.work / 'units.xml'}",
                     "NB_ARGS": f"--junitxml={self.work / 'notebooks.xml'}"}
        return ["make", "--no-print-directory", "test-gpu"] + [f"{k}={v}" for k, v in variables.items()], variables

    def step_test_gpu(self, step: Step) -> str:
        command, variables = self.test_commands()
        if shutil.which("make") is None:
            step.notes.append("no `make` on this machine")
            return "failed"
        if not self.cuda:
            if self.args.quick:
                step.notes.append("dry run, quick: would run " + shlex.join(command))
                return "skipped"
            # The set-up: make's command lines as they would run, and the collection of both halves.
            self.run(step, ["make", "-n", "test-gpu"] + command[3:], "test-gpu-plan.log", limit=30)
            collect = [str(self.python), "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"]
            units = self.run(step, collect + ["tests"], "collect-units.log", limit=120)
            notebooks = self.run(step, collect + ["--nbval", "notebooks", "source", "index.ipynb"],
                                 "collect-notebooks.log", limit=120)
            for log in ("collect-units.log", "collect-notebooks.log"):
                step.notes.append(f"{log}: {self.tail(log, 1)}")
            step.notes.append("dry run: make test-gpu refuses without CUDA; would run " + shlex.join(command))
            return "rehearsed" if units == notebooks == 0 else "failed"
        code = self.run(step, command, "test-gpu.log", limit=self.left() - 25)
        for half in ("units", "notebooks"):
            self.counts[half] = junit_counts(self.work / f"{half}.xml") or final_line(self.work / "logs" / "test-gpu.log")
            step.notes.append(f"{half}: {self.counts[half]}")
        return {None: "timed out", 0: "ok"}.get(code, "failed")

    # -- results --------------------------------------------------------------------------------------------------
    def pack(self, name: str, root: Path, folder: str) -> None:
        with tarfile.open(self.out / name, "w:gz") as archive:
            archive.add(root / folder, arcname=folder)

    def write_summary(self, final: bool = False) -> None:
        lines = [f"# GPU session{' (dry run on a CPU: nothing here is for committing)' if self.args.dry_run else ''}",
                 "", f"device: {self.device_line}", f"elapsed: {time.monotonic() - self.started:.0f} s of a "
                 f"{self.args.budget} s budget", "", "| step | status | seconds | limit |", "|---|---|---|---|"]
        lines += [f"| {s.name} | {s.status} | {s.seconds:.0f} | {s.limit} |" for s in self.steps]
        if self.counts:
            lines += ["", "pass counts: " + "; ".join(f"{k}: {v}" for k, v in self.counts.items())]
        for s in self.steps:
            if s.notes:
                lines += ["", f"## {s.name}", ""] + [f"- {note}" for note in s.notes]
        report_path = self.work / "lectures.json"
        if report_path.exists():
            report = json.loads(report_path.read_text())
            lecture10 = report["lectures"].get("10_accounting_a_training_run", {}).get("figures", {})
            if lecture10:
                lines += ["", "## Lecture 10's GPU cell", "", "```"] + [t.rstrip() for t in lecture10.values()] + ["```"]
        figures = self.out / "gpu_figures.txt"
        if figures.exists():
            lines += ["", "## bench.gpu_figures", "", "```", figures.read_text().rstrip(), "```"]
        lines += ["", FOLLOW_UP]
        (self.out / "summary.md").write_text("\n".join(lines) + "\n")
        if final:
            with tarfile.open(self.out / "logs.tar.gz", "w:gz") as archive:
                archive.add(self.work / "logs", arcname="logs")
                for extra in ("units.xml", "notebooks.xml", "lectures.json"):
                    if (self.work / extra).exists():
                        archive.add(self.work / extra, arcname=f"logs/{extra}")

    def main(self) -> int:
        mode = "DRY RUN on this machine: the CUDA steps run their set-up only" if self.args.dry_run else "GPU run"
        print(f"make gpu-session: {mode}; results in {self.out}; budget {self.args.budget} s", flush=True)
        print("plan:", flush=True)
        for i, s in enumerate(self.steps, 1):
            print(f"  {i}. {s.name:9s} (at most {s.limit:3d} s{', needs CUDA' if s.cuda else ''}) {s.what}", flush=True)
        failed = False
        for s in self.steps:
            if self.left() < 30:
                s.status = "no time left"
                continue
            print(f"[{time.monotonic() - self.started:5.0f} s] {s.name} ...", flush=True)
            begun = time.monotonic()
            s.status = getattr(self, "step_" + s.name.replace("-", "_"))(s)
            s.seconds = time.monotonic() - begun
            print(f"[{time.monotonic() - self.started:5.0f} s] {s.name}: {s.status}", flush=True)
            for note in s.notes:
                print(f"    {note}", flush=True)
            failed |= s.status in {"failed", "timed out"}
            self.write_summary()
            if s.name == "device" and not self.cuda and not self.args.dry_run:
                print("make gpu-session: no CUDA here (" + self.device_line + "). It needs a CUDA GPU and a CUDA "
                      "build of torch; `make gpu-session DRY_RUN=1` rehearses it on a CPU.", file=sys.stderr)
                self.write_summary(final=True)
                return 2
        self.write_summary(final=True)
        print(f"make gpu-session: {'FAILED' if failed else 'done'} in {time.monotonic() - self.started:.0f} s; "
              f"{self.out}/: {', '.join(sorted(p.name for p in self.out.iterdir()))}", flush=True)
        shutil.rmtree(self.work, ignore_errors=True)
        return 1 if failed else 0


FOLLOW_UP = """## Follow-up (docs/gpu.md, "After it")

In the session that gets these files back, on its own machine (CPU):
1. `tar -xzf notebooks.tar.gz` in the repository root: lectures 2, 5, 7, 8, 9 and 10 as this GPU ran them, whole.
2. Check on the CPU: `.venv/bin/python -m pytest -q -n 2 --dist loadfile --nbval --sanitize-with
   tests/nbval_sanitize.cfg` on the six lectures (and again under ATEN_CPU_CAPABILITY=default
   ONEDNN_MAX_CPU_ISA=AVX2), tests/test_notebook_conventions.py and tests/test_notebook_provenance.py.
3. Put the device line, the pass counts and bench.gpu_figures' table into docs/benchmarks.md ("GPU figures on an
   H100", with the date), and commit.
"""


def junit_counts(path: Path) -> str | None:
    if not path.exists():
        return None
    text = path.read_text(errors="replace")
    match = re.search(r'<testsuite [^>]*', text)
    if not match:
        return None
    fields = dict(re.findall(r'(\w+)="([^"]*)"', match.group(0)))
    tests, failures, errors, skipped = (int(fields.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
    return (f"{tests - failures - errors - skipped} passed, {failures} failed, {errors} errors, {skipped} skipped "
            f"in {float(fields.get('time', 0)):.0f} s")


def final_line(path: Path) -> str:
    lines = [line for line in (path.read_text(errors="replace").splitlines() if path.exists() else [])
             if re.search(r"\d+ (passed|failed)", line)]
    return lines[-1] if lines else "no result"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", default=".venv", help="the environment with torch (default .venv)")
    parser.add_argument("--torch", default="system", help="install_env.py's mode (a device: system)")
    parser.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "gpu-results"))
    parser.add_argument("--budget", type=int, default=540, help="seconds for the whole session")
    parser.add_argument("--dry-run", action="store_true", help="rehearse on a machine without CUDA")
    parser.add_argument("--quick", action="store_true", help="with --dry-run: leave out the slow rehearsals")
    args = parser.parse_args(argv)
    return Session(args).main()


if __name__ == "__main__":
    sys.exit(main())
