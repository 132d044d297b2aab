"""Make student submissions from `source/` and `release/`: solved, blank, half done, and ones that try tricks.

Each maker takes an assignment name and returns a notebook (nbformat node) per notebook of the assignment, so
the corpus grows with every assignment added to `source/`.
"""
from __future__ import annotations

import base64
import copy
import importlib
import re
import shutil
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTION_MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", re.MULTILINE)


def _notebooks(folder: Path) -> dict[str, nbformat.NotebookNode]:
    return {p.stem: nbformat.read(p, as_version=4) for p in sorted(folder.glob("*.ipynb"))}


def release_notebooks(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _notebooks(REPO / "release" / assignment)


def _solution_sources(source_nb: nbformat.NotebookNode, cell_type: str = "code") -> dict[str, str]:
    """grade_id -> the source cell's text with the solution markers removed, for the solution cells of `cell_type`
    (code: the tasks a test checks; markdown: the written answers a person grades)."""
    return {cell.metadata.nbgrader["grade_id"]: SOLUTION_MARKERS.sub("", cell.source)
            for cell in source_nb.cells if cell.metadata.get("nbgrader", {}).get("solution")
            and cell.cell_type == cell_type}


def _fill(assignment: str, pick, written: bool = False) -> dict[str, nbformat.NotebookNode]:
    """Copy the release, replacing the code of solution cell number i (grade_id g) by pick(i, g, solution); with
    `written`, each written answer by the instructor's model answer (else it stays as released: "No response.")."""
    sources = _notebooks(REPO / "source" / assignment)
    filled = {}
    for name, nb in release_notebooks(assignment).items():
        nb = copy.deepcopy(nb)
        solutions = _solution_sources(sources[name])
        answers = _solution_sources(sources[name], "markdown") if written else {}
        index = 0
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in solutions:
                replacement = pick(index, grade_id, solutions[grade_id])
                if replacement is not None:
                    cell.source = replacement
                index += 1
            elif grade_id in answers:
                cell.source = answers[grade_id].strip()
        filled[name] = nb
    return filled


def solved(assignment: str, written: bool = False) -> dict[str, nbformat.NotebookNode]:
    """Every task done with the instructor's solution (and, with `written`, every written answer)."""
    return _fill(assignment, lambda i, g, solution: solution, written)


def variant(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every task done with the second, independently written solution in tests/variants/<assignment>.py.
    Fails when a task has no variant there, or a variant names no task."""
    variants = importlib.import_module(f"tests.variants.{assignment}").VARIANTS
    tasks = {grade_id for nb in _notebooks(REPO / "source" / assignment).values() for grade_id in _solution_sources(nb)}
    if set(variants) != tasks:
        raise KeyError(f"tests/variants/{assignment}.py: no variant for {sorted(tasks - set(variants))}, "
                       f"no such task for {sorted(set(variants) - tasks)}")
    return _fill(assignment, lambda i, grade_id, solution: variants[grade_id].strip("\n") + "\n")


def half_done(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """The first half of the tasks solved, the rest left as released."""
    total = sum(1 for nb in _notebooks(REPO / "source" / assignment).values() for _ in _solution_sources(nb))
    return _fill(assignment, lambda i, g, solution: solution if i < total // 2 else None)


def _function_header(solution: str) -> str:
    """The `def ...:` line (and docstring) of a solution cell, without its body ("" for a napkin answer)."""
    head = solution.split("\n")
    if _napkin_name(solution):
        return ""
    return "\n".join(head[: next(i for i, line in enumerate(head) if line.strip().startswith("'''")) + 1])


NAPKIN_ANSWER = re.compile(r"^(\w+) = None  # your answer")


def _napkin_name(solution: str) -> str | None:
    """The variable a napkin-math answer cell assigns (utils/napkin.py), or None for a cell that defines code."""
    match = NAPKIN_ANSWER.match(solution)
    return match.group(1) if match else None


def _returning(solution: str, value: str) -> str:
    """The solution cell's function made to return `value` (code text); a napkin answer is set to it instead."""
    name = _napkin_name(solution)
    return f"{name} = {value}\n" if name else _function_header(solution) + f"\n    return {value}\n"


ALWAYS_EQUAL = '''
class AlwaysEqual(float):
    """Looks like an answer to a naive `==` test: equal to everything."""
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
    def __bool__(self): return True
'''


def always_equal(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every function returns an object whose __eq__ always says True."""
    return _fill(assignment, lambda i, g, solution:
                 ALWAYS_EQUAL + _returning(solution, "AlwaysEqual(0.0)"))


PATCH_COMPARISONS = '''
import numpy, torch
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
numpy.testing.assert_allclose = lambda *args, **kwargs: None
'''


def patched_comparisons(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Wrong answers of the right type, after rebinding torch's and numpy's comparison functions to always pass."""
    return _fill(assignment, lambda i, g, solution:
                 PATCH_COMPARISONS + _returning(solution, "0"))


def _with_warning(solution: str) -> str:
    """The solution, made to print a warning on stderr each time it is called (as torch sometimes does)."""
    header = _function_header(solution)
    warn = '    import warnings; warnings.warn("a harmless warning from correct code", UserWarning, stacklevel=1)\n'
    if _napkin_name(solution):  # a number: the warning comes when the answer cell runs
        return warn.lstrip() + solution
    return header + "\n" + warn + solution[len(header) + 1:]


def noisy(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Correct solutions that write warnings to stderr whenever they run, in the test cells too."""
    always = "import warnings\nwarnings.simplefilter('always')\n"
    return _fill(assignment, lambda i, g, solution: always + _with_warning(solution))


def new_course(root: Path) -> Path:
    """A course folder of its own (a copy of source/, its own gradebook), so that tests never write the repository's."""
    shutil.copytree(REPO / "source", root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return root


def write_submission(root: Path, student: str, assignment: str, notebooks: dict[str, nbformat.NotebookNode]) -> Path:
    """Lay notebooks out as nbgrader's submitted/<student>/<assignment>/<name>.ipynb."""
    folder = root / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    for name, nb in notebooks.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
    (folder / "timestamp.txt").write_text("2026-01-05 12:00:00.000000 UTC")
    return folder


# ---- hostile and broken submissions (issue #6) --------------------------------------------------------------
# Each maker returns notebooks for one assignment. `expected_score` (below) says what each must score.

def _first_task_only(assignment: str, code: str) -> dict[str, nbformat.NotebookNode]:
    """All tasks solved, but the first answer cell starts with `code` (a fault that should cost that task only)."""
    return _fill(assignment, lambda i, g, solution: code + "\n" + solution if i == 0 else solution)


def infinite_loop(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _first_task_only(assignment, "while True:\n    pass")


def memory_bomb(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _first_task_only(assignment, "import numpy\nhoard = []\nwhile True:\n    hoard.append(numpy.empty(10**9, dtype=numpy.uint8))")


def fork_loop(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _first_task_only(assignment, "import os\nwhile True:\n    os.fork()")


def hard_exit(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _first_task_only(assignment, "import os\nos._exit(3)")


def sys_exit(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _first_task_only(assignment, "import sys\nsys.exit(1)")


def segfault(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _first_task_only(assignment, "import ctypes\nctypes.string_at(0)")


def output_flood(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Correct, but every answer cell prints 50 MB."""
    return _fill(assignment, lambda i, g, solution: "print('x' * 50_000_000)\n" + solution)


SHADOW_TOOLS = '''
import utils.grading
_quiet = lambda *args, **kwargs: None
for _name in ("check_type", "check_int", "check_float", "check_str", "check_tensor", "_fail"):
    setattr(utils.grading, _name, _quiet)
check_type = check_int = check_float = check_str = check_tensor = _quiet
import builtins
builtins.isinstance = lambda *args: True
import torch
torch.Tensor.__eq__ = lambda self, other: True
'''


def shadowed_tools(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Wrong answers, after rebinding the checks the tests import (in the notebook and in utils.grading),
    builtins.isinstance and torch.Tensor.__eq__."""
    return _fill(assignment, lambda i, g, solution: SHADOW_TOOLS + _returning(solution, "0"))


def tamper_during_call(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Wrong answers whose functions, when the test calls them, silence utils.grading's failure helper."""
    def body(solution: str) -> str:
        if _napkin_name(solution):  # nothing of a number's runs in its test: silence the failures now
            return "import utils.grading\nutils.grading._fail = lambda *args, **kwargs: None\n" + _returning(solution, "0")
        return _function_header(solution) + \
            "\n    import utils.grading\n    utils.grading._fail = lambda *args, **kwargs: None\n    return 0\n"
    return _fill(assignment, lambda i, g, solution: body(solution))


# Issue #24: reach the instructor's answers from inside the notebook process, by every route we know. Anything that
# works prints "LEAK: ..." (into the student's own feedback) and is used to answer. Under the grader, `reference/` is
# unreadable and no expected value or reference function is ever in this process, so every route finds nothing.
THIEF = r'''
import gc as _gc, importlib as _importlib, importlib.util as _util, inspect as _inspect, os as _os, sys as _sys
_REF = "ref" + "erence"
def _leak(route, what):
    print("LEAK:", route, str(what)[:300])
def _modules():
    found = []
    for _name in (_REF, _REF + ".hidden", _REF + ".models_optimizers", _REF + ".accounting", _REF + ".floats"):
        try:
            found.append(_importlib.import_module(_name))
            _leak("import by a computed name", _name)
        except BaseException:
            pass
    try:
        _spec = _util.find_spec(_REF)
        for _path in list(_spec.submodule_search_locations or []) + [_spec.origin]:
            for _file in sorted(_os.listdir(_path)) if _os.path.isdir(_path) else [_path]:
                try:
                    _leak("find_spec, then the file", open(_os.path.join(_path, _file) if _os.path.isdir(_path) else _file).read())
                except BaseException:
                    pass
    except BaseException:
        pass
    for _finder in list(_sys.meta_path):
        try:
            _spec = _finder.find_spec(_REF, None)
            if _spec is not None and _spec.loader is not None:
                _leak("sys.meta_path, then the source", _spec.loader.get_source(_REF))
        except BaseException:
            pass
    found += [m for n, m in list(_sys.modules.items()) if n.startswith(_REF)]
    for _path in (_os.getcwd(), _os.path.dirname(_os.getcwd()), "/work", "/tmp"):
        try:
            for _root, _dirs, _files in _os.walk(_path):
                for _file in _files:
                    if _root.rstrip("/").endswith(_REF) or _file.endswith(".ipynb"):
                        try:
                            _leak("a file under the course", open(_os.path.join(_root, _file)).read())
                        except BaseException:
                            pass
        except BaseException:
            pass
    return found
_MODULES = _modules()
_SCANNED = set()
def _steal(name, arguments):
    for _module in _MODULES:
        if callable(getattr(_module, name, None)):
            _leak("a reference function", name)
            try:
                print("LEAK: its source", _inspect.getsource(getattr(_module, name)))
            except BaseException:
                pass
            return getattr(_module, name)(**arguments)
    if name not in _SCANNED:  # once per function and process: a full scan per call would only time out
        _SCANNED.add(name)
        for _object in _gc.get_objects():
            try:
                if callable(_object) and str(getattr(_object, "__module__", "")).startswith(_REF):
                    _leak("gc.get_objects", _object)
                    if getattr(_object, "__name__", "") == name:
                        return _object(**arguments)
            except BaseException:
                pass
    _frame = _inspect.currentframe().f_back
    while _frame is not None:
        for _local in ("want", "expected", "expected_value", "references", "reference"):
            if _local in _frame.f_locals:  # a visible test's own expected value is no secret: not a LEAK; a
                return _frame.f_locals[_local]  # hidden one would be, and would score (the thief must score 0)
        _frame = _frame.f_back
    return None
'''


def answer_thief(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every answer asks THIEF for the instructor's answer (computed imports, find_spec, sys.meta_path, sys.modules,
    gc.get_objects, the test's stack frames, files under the course); what it finds, it prints and returns."""
    def body(solution: str) -> str:
        if _napkin_name(solution):
            return THIEF + f"{_napkin_name(solution)} = _steal({_napkin_name(solution)!r}, {{}})\n"
        header = _function_header(solution)
        name = re.match(r"\s*(?:def|class)\s+(\w+)", header.split("\n")[0] if header.strip().startswith(("def", "class"))
                        else next(line for line in header.split("\n") if line.strip().startswith(("def", "class"))))
        if header.lstrip().startswith("class"):  # a class: whatever constructing it gives
            return THIEF + header + f"\n    def __new__(cls, *args, **kwargs):\n        return _steal({name.group(1)!r}, kwargs)\n"
        return THIEF + header + f"\n    return _steal({name.group(1)!r}, dict(locals()))\n"
    return _fill(assignment, lambda i, g, solution: body(solution))


def _edit_cells(notebooks: dict[str, nbformat.NotebookNode], edit) -> dict[str, nbformat.NotebookNode]:
    edited = {}
    for name, nb in notebooks.items():
        nb = copy.deepcopy(nb)
        cells = []
        for cell in nb.cells:
            cells += edit(cell)
        nb.cells = cells
        edited[name] = nb
    return edited


def _is_test(cell) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("grade"))


def tests_edited(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Blank answers; every test cell replaced by `pass` and given 100 points."""
    def edit(cell):
        if _is_test(cell):
            cell.source = "pass"
            cell.metadata.nbgrader["points"] = 100
        return [cell]
    return _edit_cells(release_notebooks(assignment), edit)


def tests_deleted(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Solved, with every test cell deleted (the grader runs the source's tests anyway)."""
    return _edit_cells(solved(assignment), lambda cell: [] if _is_test(cell) else [cell])


def metadata_changed(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Solved; test cells claim 100x the points, and each also appears renamed as a new graded cell."""
    def edit(cell):
        if not _is_test(cell):
            return [cell]
        cell.metadata.nbgrader["points"] *= 100
        renamed = _copy_with_new_id(cell, "bonus")
        renamed.metadata.nbgrader["grade_id"] += "_bonus"
        renamed.source = "pass"
        return [cell, renamed]
    return _edit_cells(solved(assignment), edit)


def _copy_with_new_id(cell, suffix: str):
    duplicate = copy.deepcopy(cell)
    if "id" in duplicate:
        duplicate["id"] = f"{cell['id']}-{suffix}"[:64]
    return duplicate


def duplicated(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Solved, with every cell (answers and tests) present three times."""
    return _edit_cells(solved(assignment), lambda cell: [cell, _copy_with_new_id(cell, "2"), _copy_with_new_id(cell, "3")])


def snooper(assignment: str, secrets: list[str], writes: list[str], port: int, grader_pid: int) -> dict[str, nbformat.NotebookNode]:
    """Solved, but the first answer cell tries to read `secrets`, write `writes`, connect to `port` and kill
    the grader; it prints 'LEAK: ...' for anything that works, and 'WROTE: ...' for a write that seemed to work (it
    may have landed in the notebook's own private folder: the test looks at each target from outside)."""
    code = f'''
import os, socket, signal
for _path in {secrets!r}:
    try:
        with open(_path, "rb") as _f:
            print("LEAK: read", _path, len(_f.read()))
    except OSError:
        pass
for _path in {writes!r}:
    try:
        with open(_path, "w") as _f:
            _f.write("student,assignment,task,score,max_score,note\\nme,x,y,1000,1,\\n")
        print("WROTE:", _path)
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    print("LEAK: network")
except OSError:
    pass
for _pid in ({grader_pid}, os.getppid()):
    try:
        if _pid > 1:
            os.kill(_pid, signal.SIGKILL)
            print("LEAK: signalled", _pid)
    except OSError:
        pass
'''
    return _first_task_only(assignment, code)


def empty_file_and_not_a_notebook(assignment: str) -> dict[str, str]:
    """Raw file contents (not notebooks): the first notebook empty, any others valid JSON that is not a notebook."""
    names = list(release_notebooks(assignment))
    return {name: ("" if i == 0 else '{"hello": "world"}') for i, name in enumerate(names)}


def first_task_error(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """The yardstick for the faults above: the first answer cell raises an ordinary error."""
    return _first_task_only(assignment, "raise RuntimeError('not finished')")


def task_points(assignment: str) -> list[float]:
    """Points of each graded test cell in the source, in order (what the grader scores by itself)."""
    return [float(cell.metadata.nbgrader["points"]) for nb in _notebooks(REPO / "source" / assignment).values()
            for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("grade")
            and not cell.metadata.nbgrader.get("solution")]


def written_points(assignment: str) -> list[float]:
    """Points of each written answer in the source, in order: a markdown answer a person grades (issue #62)."""
    return [float(cell.metadata.nbgrader["points"]) for nb in _notebooks(REPO / "source" / assignment).values()
            for cell in nb.cells if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("grade")
            and cell.metadata.nbgrader.get("solution")]


def total_points(assignment: str) -> float:
    """The assignment's points: its tests' and its written answers'."""
    return sum(task_points(assignment)) + sum(written_points(assignment))


# student name -> maker, for the makers that need only the assignment name
TRICKS = {"alwaysequal": always_equal, "patcher": patched_comparisons, "shadowed": shadowed_tools,
          "duringcall": tamper_during_call, "thief": answer_thief, "testsedited": tests_edited}  # must score 0
HONEST_EDITS = {"solved": solved, "variant": variant, "noisy": noisy, "testsdeleted": tests_deleted, "metadata": metadata_changed,
                "duplicated": duplicated, "flood": output_flood}                      # must score full marks
FAULTS = {"loop": infinite_loop, "memory": memory_bomb, "forks": fork_loop, "osexit": hard_exit,
          "sysexit": sys_exit, "segfault": segfault}                                  # must score like first_task_error


# ---- issue #30: a student's process starts from nothing secret; the grader trusts nothing a student wrote ----------
MEMORY_SNOOP = r'''
import gc as _gc, os as _os, sys as _sys
_NEEDLES = __NEEDLES__  # (what, head, tail): each secret is head + tail, never written whole in this process
def _found(data):
    hits = []
    for what, head, tail in _NEEDLES:
        h, t = head.encode(), tail.encode()
        at = data.find(h)
        while at != -1:
            if data[at + len(h): at + len(h) + len(t)] == t:
                hits.append(what)
                break
            at = data.find(h, at + 1)
    return hits
def _snoop():
    seen = set()
    try:  # every anonymous mapping of this process: the heap, Python's arenas, the stacks
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
            for line in maps:
                fields = line.split()
                if "r" not in fields[1] or (len(fields) > 5 and not fields[5].startswith("[")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                try:
                    mem.seek(start)
                    data = mem.read(end - start)
                except (OSError, ValueError, OverflowError, MemoryError):
                    continue
                seen.update(f"memory holds {hit}" for hit in _found(data))
    except OSError as error:
        print("could not read my own memory:", error)
    for frame in _sys._current_frames().values():
        while frame is not None:
            for name, value in list(frame.f_locals.items()):
                if name == "_NEEDLES":
                    continue
                seen.update(f"a frame's {name} holds {hit}" for hit in _found(repr(value)[:100000].encode(errors="ignore")))
            frame = frame.f_back
    for thing in _gc.get_objects():
        if isinstance(thing, dict) and ("cells" in thing or "db_url" in thing or "roster" in thing):
            seen.add(f"gc holds a dict with {sorted(k for k in thing if k in ('cells', 'db_url', 'roster'))}")
    seen.update(f"the environment holds {hit}" for hit in _found(repr(dict(_os.environ)).encode()))
    # On a GPU machine the sandbox starts CUDA in this process before Landlock (walls.open_gpu): the NVIDIA device
    # files and the socket CUDA opens then are this process's own, not inherited (seen on an H200: 30 device files and
    # one socket). Descriptors inherited from the grader would be the same on any machine, and CI's CPU run finds none.
    import torch as _torch
    own = ("/dev/nvidia",) + (("socket:",) if _torch.cuda.is_initialized() else ())
    for fd in _os.listdir("/proc/self/fd"):
        try:
            target = _os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if not target.startswith(("pipe:", "/dev/null", "/proc/") + own) and "anon_inode" not in target:
            seen.add(f"an inherited descriptor {fd} -> {target}")
    mine = {_os.getpid()} | {int(p) for p in _os.listdir(f"/proc/{_os.getpid()}/task")}
    others = [p for p in _os.listdir("/proc") if p.isdigit() and int(p) not in mine]
    for pid in others:
        try:
            command = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if command.strip():
            seen.add(f"another process: {pid} {command[:80]}")
    for line in sorted(seen):
        print("LEAK:", line)
    print(f"snooped: {len(seen)} finding(s)")
_snoop()
'''


def memory_snooper(assignment: str, needles: list[tuple[str, str, str]]) -> dict[str, nbformat.NotebookNode]:
    """Solved, but the first answer cell looks for secrets everywhere a process can look at itself: its whole memory
    (/proc/self/mem), the stack frames, gc's objects, the environment, inherited descriptors and the other processes
    in /proc. `needles`: (what, head, tail), a secret split in two so that this code never holds it whole. Anything
    found is printed as 'LEAK: ...'."""
    return _first_task_only(assignment, MEMORY_SNOOP.replace("__NEEDLES__", repr(needles)))


STARTUP_IMPERSONATOR = '''
import os
for name, target in ((".startup-error.txt", "/proc/kmsg"), ("startup-error.txt", "__OTHER__"),
                     (".startup-error", "/etc/hostname")):
    try:
        os.symlink(target, name)
    except OSError:
        pass
try:
    os.mkfifo("fifo-error.txt")
except OSError:
    pass
os._exit(71)
'''


def startup_impersonator(assignment: str, other: str) -> dict[str, nbformat.NotebookNode]:
    """The first answer cell leaves links named as the old grader's start-up error file (to /proc/kmsg, to `other`,
    a classmate's result, and to /etc/hostname) and a fifo, then exits with the code the old grader read them on."""
    return _first_task_only(assignment, STARTUP_IMPERSONATOR.replace("__OTHER__", other))


CRAFTED = r'''
import utils.handin as _handin
_LIES = [
    '{"tensor": {"dtype": "int8", "shape": [-1, -1], "device": "cpu", "parameter": false, "requires_grad": false, "data": "AA=="}}',
    '{"float": "0x1p99999"}',
    '{"tensor": {"dtype": "qint8", "shape": [4], "device": "cpu", "parameter": false, "requires_grad": false, "data": "AAAAAA=="}}',
    '{"tensor": {"dtype": "float32", "shape": [1099511627775], "device": "cpu", "parameter": false, "requires_grad": false, "data": ""}}',
    '{"tensor": {"dtype": "bool", "shape": [1], "device": "cpu", "parameter": false, "requires_grad": false, "data": "Ag=="}}',
    "[" * 100000 + "]" * 100000, "NaN", "not json at all", '{"other": 5}',
]
_TOLD = [0]
class _Lies(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, _LIES[_TOLD[0] % len(_LIES)])
        _TOLD[0] += 1
'''


def crafted_handin(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Correct answers, but whenever a hidden test hands them in, they are swapped for crafted JSON (a negative or
    huge shape, a float that overflows, a quantized dtype, a bool byte of 2, deep nesting, NaN, not JSON at all)."""
    def body(i, g, solution):
        header = _function_header(solution)
        swap = "    _handin.CHANNEL.handed = _Lies(_handin.CHANNEL.handed)\n"
        code = header + "\n" + swap + solution[len(header) + 1:] if header.lstrip().startswith("def ") else solution
        return (CRAFTED if i == 0 else "") + code
    return _fill(assignment, body)


DISK_BOMB = '''
_written = 0
try:
    for _i in range(1536):
        with open(f"bomb-{_i // 60}.bin", "ab") as _f:
            _f.write(b"x" * 2**20)
        _written += 1
except OSError as _error:
    print(f"the disk stopped me after {_written} MiB: {_error.strerror}")
'''


def disk_bomb(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Solved, but the first answer cell first tries to write 1.5 GiB (in files under the per-file cap)."""
    return _first_task_only(assignment, DISK_BOMB)


def markdown_answer(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Solved, but the first answer cell was turned into a markdown cell (nbgrader grades it as code)."""
    notebooks = solved(assignment)
    for nb in notebooks.values():
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code")
        cell.cell_type = "markdown"
        for key in ("outputs", "execution_count"):
            cell.pop(key, None)
        break
    return notebooks


# A correct answer reached by a route its task's rule forbids (utils/rules.py): each scores 0 on that task, however
# it hides the route from the checks that run in its own process.
RULE_BREAKERS = {
    ("04_einops_jaxtyping", "merge_heads"): '''
def merge_heads(x):
    rearrange(x, "b h s d -> b h s d")  # called, so that einops is "used"; the work is done below
    b, h, s, d = x.shape
    return x.permute(0, 2, 1, 3).reshape(b, s, h * d)
''',
    ("05_flops_mfu", "matmul_flop_count"): '''
def matmul_flop_count(a_shape, b_shape, _counter=torch.utils.flop_counter.FlopCounterMode):
    a, b = torch.empty(tuple(a_shape), device="meta"), torch.empty(tuple(b_shape), device="meta")
    with _counter(display=False) as counter:
        torch.matmul(a, b)
    return int(counter.get_total_flops())
''',
    ("06_gradients", "w2_grad"): '''
def w2_grad(h1, h2_grad, _grad=torch.autograd.grad):
    w2 = torch.zeros(h1.shape[1], h2_grad.shape[1], dtype=h1.dtype, requires_grad=True)
    with torch.enable_grad():
        (grad,) = _grad(h1 @ w2, w2, h2_grad)
    return grad.detach()
''',
    ("07_models_optimizers", "AdamW"): '''
_TORCH_ADAMW = torch.optim.AdamW  # taken before the tests stub it
_INNER = {}
class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        inner = _TORCH_ADAMW(self.param_groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self.state = inner.state
        _INNER[id(self)] = inner

    @torch.no_grad()
    def step(self, closure=None):
        return _INNER[id(self)].step(closure)
''',
    ("08_training_loop", "get_batch"): '''
def get_batch(data, batch_size, context_length, device, generator):
    device = torch.device(device)
    tokens = getattr(data, "_array", data)  # the stand-in's own array: nothing read is counted
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([np.asarray(tokens[s : s + context_length + 1]) for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
''',
}


# Issue #59's routes, graded end to end (tests/test_grader_boundary.py): each notebook answers several rule-bound
# tasks by a route the judge once passed (the rest as the solution does); each such task must be zeroed or flagged.
# Whether an answer is also right does not matter here: a zeroed task says the rule, a flagged one is in the flags.
ISSUE_ROUTES = {
    "routes-a": {"06_gradients": {
        "w2_grad": "_D = dict(g=torch.autograd.grad)\ndef w2_grad(h1, h2_grad):\n"
                   "    w2 = torch.zeros(h1.shape[1], h2_grad.shape[1], dtype=h1.dtype, requires_grad=True)\n"
                   "    with torch.enable_grad():\n        return _D['g'](h1 @ w2, w2, h2_grad)[0]\n",
        "h1_grad": "import types\n_N = types.SimpleNamespace(g=torch.autograd.grad)\ndef h1_grad(w2, h2_grad):\n"
                   "    h1 = torch.zeros(h2_grad.shape[0], w2.shape[0], dtype=w2.dtype, requires_grad=True)\n"
                   "    with torch.enable_grad():\n        return _N.g(h1 @ w2, h1, h2_grad)[0]\n",
        "two_layer_grads": "def _make():\n    g = torch.autograd.grad\n    def inner(x, w1, w2):\n"
                           "        w1, w2 = w1.detach().requires_grad_(), w2.detach().requires_grad_()\n"
                           "        with torch.enable_grad():\n            h1 = x @ w1\n            h1.retain_grad()\n"
                           "            h2 = h1 @ w2\n            gs = g((h2 ** 2).mean(), [w1, w2, h1, h2])\n"
                           "        return dict(zip(['w1', 'w2', 'h1', 'h2'], gs))\n    return inner\n"
                           "two_layer_grads = _make()\n",
        "stack_grads": "def stack_grads(x, weights, biases):\n    ws = [w.detach().requires_grad_() for w in weights]\n"
                       "    bs = [b.detach().requires_grad_() for b in biases]\n    with torch.enable_grad():\n"
                       "        h = x\n        for w, b in zip(ws, bs):\n            h = h @ w + b\n"
                       "        loss = (h ** 2).mean()\n        grads = torch._C._ImperativeEngine().run_backward("
                       "(loss,), (torch.ones_like(loss),), False, False, tuple(ws + bs), False, False)\n"
                       "    return list(grads[:len(ws)]), list(grads[len(ws):])\n",
        "two_layer_flops": "import types, torch.utils.flop_counter\n"
                           "_F = types.SimpleNamespace(mode=torch.utils.flop_counter.FlopCounterMode)\n"
                           "def two_layer_flops(batch, d, k, x_requires_grad=False):\n"
                           "    with _F.mode(display=False) as counter:\n"
                           "        torch.empty(batch, d, device='meta') @ torch.empty(d, k, device='meta')\n"
                           "    return counter.get_total_flops(), 0\n",
        "stack_flops": "_C = [f for f in (utils.gradients.count_linear_stack_flops,)]\n"
                       "def stack_flops(batch, dims, x_requires_grad=False):\n"
                       "    return _C[0](batch, dims, x_requires_grad)\n"}},
    "routes-b": {"06_gradients": {
        "w2_grad": "def w2_grad(h1, h2_grad):\n    return h1.T @ h2_grad\n\n"
                   "def _impl(h1, h2_grad):\n    w2 = torch.zeros(h1.shape[1], h2_grad.shape[1], dtype=h1.dtype, "
                   "requires_grad=True)\n    with torch.enable_grad():\n"
                   "        return torch.autograd.grad(h1 @ w2, w2, h2_grad)[0]\nw2_grad = _impl\n",
        "h1_grad": "def h1_grad(w2, h2_grad):\n"
                   "    h1 = torch.zeros(h2_grad.shape[0], w2.shape[0], dtype=w2.dtype, requires_grad=True)\n"
                   "    with torch.enable_grad():\n        node = (h1 @ w2).grad_fn\n        return node(h2_grad)[0]\n",
        "two_layer_grads": "_L = []\n_L += [torch.autograd.grad]\ndef two_layer_grads(x, w1, w2):\n"
                           "    w1, w2 = w1.detach().requires_grad_(), w2.detach().requires_grad_()\n"
                           "    with torch.enable_grad():\n        h1 = x @ w1\n        h2 = h1 @ w2\n"
                           "        gs = _L[0]((h2 ** 2).mean(), [w1, w2, h1, h2])\n"
                           "    return dict(zip(['w1', 'w2', 'h1', 'h2'], gs))\n",
        "stack_grads": "_A = []\n_A.append(torch.autograd.grad)\ndef stack_grads(x, weights, biases):\n"
                       "    ws = [w.detach().requires_grad_() for w in weights]\n"
                       "    bs = [b.detach().requires_grad_() for b in biases]\n    with torch.enable_grad():\n"
                       "        h = x\n        for w, b in zip(ws, bs):\n            h = h @ w + b\n"
                       "        grads = _A[0]((h ** 2).mean(), ws + bs)\n"
                       "    return list(grads[:len(ws)]), list(grads[len(ws):])\n",
        "two_layer_flops": "class _Counter:\n    pass\n_Counter.count = utils.gradients.count_two_layer_flops\n"
                           "def two_layer_flops(batch, d, k, x_requires_grad=False):\n"
                           "    return _Counter.count(batch, d, k, x_requires_grad)\n",
        "stack_flops": "_C = list([utils.gradients.count_linear_stack_flops])\n"
                       "def stack_flops(batch, dims, x_requires_grad=False):\n"
                       "    return _C[0](batch, dims, x_requires_grad)\n"}},
    "routes-c": {"06_gradients": {
        "w2_grad": "for _f in [torch.autograd.grad]:\n    pass\ndef w2_grad(h1, h2_grad):\n"
                   "    w2 = torch.zeros(h1.shape[1], h2_grad.shape[1], dtype=h1.dtype, requires_grad=True)\n"
                   "    with torch.enable_grad():\n        return _f(h1 @ w2, w2, h2_grad)[0]\n",
        "h1_grad": "import contextlib\nwith contextlib.nullcontext(torch.autograd.grad) as _g:\n    pass\n"
                   "def h1_grad(w2, h2_grad):\n"
                   "    h1 = torch.zeros(h2_grad.shape[0], w2.shape[0], dtype=w2.dtype, requires_grad=True)\n"
                   "    with torch.enable_grad():\n        return _g(h1 @ w2, h1, h2_grad)[0]\n",
        "two_layer_grads": "try:\n    raise ValueError(torch.autograd.grad)\nexcept ValueError as _e:\n"
                           "    _h = _e.args[0]\ndef two_layer_grads(x, w1, w2):\n"
                           "    w1, w2 = w1.detach().requires_grad_(), w2.detach().requires_grad_()\n"
                           "    with torch.enable_grad():\n        h1 = x @ w1\n        h2 = h1 @ w2\n"
                           "        gs = _h((h2 ** 2).mean(), [w1, w2, h1, h2])\n"
                           "    return dict(zip(['w1', 'w2', 'h1', 'h2'], gs))\n",
        "stack_grads": "_n = next(iter([torch.autograd.grad]))\ndef stack_grads(x, weights, biases):\n"
                       "    ws = [w.detach().requires_grad_() for w in weights]\n"
                       "    bs = [b.detach().requires_grad_() for b in biases]\n    with torch.enable_grad():\n"
                       "        h = x\n        for w, b in zip(ws, bs):\n            h = h @ w + b\n"
                       "        grads = _n((h ** 2).mean(), ws + bs)\n"
                       "    return list(grads[:len(ws)]), list(grads[len(ws):])\n"}},
    "routes-d": {"06_gradients": {   # exec flags every rule-bound task of the notebook: alone here
        "w2_grad": "def _go():\n    exec('def w2_grad(h1, h2_grad):\\n    return torch.autograd.functional.vjp("
                   "lambda w: h1 @ w, torch.zeros(h1.shape[1], h2_grad.shape[1], dtype=h1.dtype), h2_grad)[1]', "
                   "globals())\n_go()\n"}},
    "routes-e": {
        "07_models_optimizers": {
            "AdamW": "_K = dict(k=torch._fused_adamw_)\nclass AdamW(torch.optim.Optimizer):\n"
                     "    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):\n"
                     "        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))\n"
                     "    @torch.no_grad()\n    def step(self, closure=None):\n"
                     "        for group in self.param_groups:\n            ps = [p for p in group['params'] if p.grad is not None]\n"
                     "            if not ps:\n                continue\n            states = [self.state[p] for p in ps]\n"
                     "            for p, s in zip(ps, states):\n                if not s:\n"
                     "                    s['m'], s['v'] = torch.zeros_like(p), torch.zeros_like(p)\n"
                     "                    s['t'] = torch.zeros((), dtype=torch.float32)\n                s['t'] += 1\n"
                     "            b1, b2 = group['betas']\n"
                     "            _K['k'](ps, [p.grad for p in ps], [s['m'] for s in states], [s['v'] for s in states], [], "
                     "[s['t'] for s in states], amsgrad=False, lr=group['lr'], beta1=b1, beta2=b2, "
                     "weight_decay=group['weight_decay'], eps=group['eps'], maximize=False)\n"},
        "04_einops_jaxtyping": {
            "split_qkv": "_M = [torch.Tensor.view, torch.Tensor.permute]\ndef split_qkv(qkv, n_heads):\n"
                         "    rearrange(qkv, 'b s d -> b s d')\n    b, s, d = qkv.shape\n"
                         "    x = _M[1](_M[0](qkv, b, s, 3, n_heads, d // (3 * n_heads)), 2, 0, 3, 1, 4)\n"
                         "    return x[0], x[1], x[2]\n",
            "merge_heads": "_E = dict(e=torch.einsum)\ndef merge_heads(x):\n    rearrange(x, 'b h s d -> b h s d')\n"
                           "    return _E['e']('bhsd->bshd', x).flatten(2)\n",
            "attention_scores": "import sys\n"
                                "def attention_scores(q, k):   # right, but takes the grader's watch off first\n"
                                "    sys.setprofile(None)\n"
                                "    return einsum(q, k, '... sq d, ... sk d -> ... sq sk') / math.sqrt(q.shape[-1])\n"},
        "05_flops_mfu": {
            "matmul_flop_count": "import types, torch.utils.flop_counter\n"
                                 "_N = types.SimpleNamespace(F=torch.utils.flop_counter.FlopCounterMode)\n"
                                 "def matmul_flop_count(a_shape, b_shape):\n    with _N.F(display=False) as c:\n"
                                 "        torch.matmul(torch.empty(a_shape, device='meta'), torch.empty(b_shape, device='meta'))\n"
                                 "    return int(c.get_total_flops())\n",
            "linear_model_flops": "import utils.gradients\n"   # a course helper the rule does not name: seen at run time
                                  "def linear_model_flops(batch_shape, widths, training=False):\n"
                                  "    tokens = math.prod(batch_shape)\n    total = 0\n"
                                  "    for d_in, d_out in zip(widths, widths[1:]):\n"
                                  "        forward, backward = utils.gradients.count_two_layer_flops(tokens, d_in, d_out)\n"
                                  "        total += forward - 2 * tokens * d_in * d_in\n"
                                  "    return 3 * total if training else total\n"}},
}
# Issue #59's honest shapes, graded end to end: full marks, no flag.
HONEST_SHAPES = {
    "06_gradients": {
        "w2_grad": "def w2_grad(h1, h2_grad):\n    grad = h1.T @ h2_grad   # a local named like the scratch cell's import\n"
                   "    return grad\n",
        "stack_grads": "class Layer:\n    def __init__(self, w, b):\n        self.w, self.b = w, b\n"
                       "    def forward(self, x):\n        self.x = x\n        return x @ self.w + self.b\n"
                       "    def backward(self, grad):\n        self.w_grad, self.b_grad = self.x.T @ grad, grad.sum(dim=0)\n"
                       "        return grad @ self.w.T\n\n"
                       "def stack_grads(x, weights, biases):\n    layers = [Layer(w, b) for w, b in zip(weights, biases)]\n"
                       "    h = x\n    for layer in layers:\n        h = layer.forward(h)\n"
                       "    grad = 2 * h / h.numel()\n    for layer in reversed(layers):\n        grad = layer.backward(grad)\n"
                       "    return [layer.w_grad for layer in layers], [layer.b_grad for layer in layers]\n"},
    "03_strides_views": {
        "slice_metadata": "import collections\nView = collections.namedtuple('View', 'shape stride offset')\n\n"
                          "def slice_metadata(shape, strides, storage_offset, dim, start, stop, step):\n"
                          "    picked = range(shape[dim])[start:stop:step]\n"
                          "    view = View(shape=list(shape), stride=list(strides), offset=storage_offset)\n"
                          "    view.shape[dim] = len(picked)\n    view.stride[dim] = strides[dim] * step\n"
                          "    return tuple(view.shape), tuple(view.stride), view.offset + picked.start * strides[dim]\n"},
}
HONEST_SCRATCH = [
    "from torch.autograd import grad   # checking by hand against autograd, as the rule's hint says\n"
    "_x = torch.randn(4, 3, requires_grad=True)\n_w = torch.randn(3, 2)\nprint(grad((_x @ _w).sum(), _x)[0].shape)",
    "reference = torch.arange(6.0).reshape(2, 3)   # a scratch variable's name\nprint(reference.T.shape)",
    "import types\nconfig = types.SimpleNamespace(batch=4, width=3)\n"
    "print([getattr(config, f) for f in ('batch', 'width')])",
]


def _answered(assignment: str, answers: dict[str, str], scratch: tuple[str, ...] = ()) -> dict[str, nbformat.NotebookNode]:
    """Solved, with the tasks of `answers` answered so, and `scratch` cells added before the first task."""
    notebooks = _fill(assignment, lambda i, g, solution: answers[g] if g in answers else solution)
    for notebook in notebooks.values():
        notebook.cells[1:1] = [nbformat.v4.new_code_cell(text) for text in scratch]
    return notebooks


def issue_routes(student: str, assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _answered(assignment, ISSUE_ROUTES[student][assignment])


def honest_shapes(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _answered(assignment, HONEST_SHAPES[assignment], tuple(HONEST_SCRATCH))


def rule_breaker(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Solved, with the task of RULE_BREAKERS for this assignment answered by a forbidden route."""
    return _fill(assignment, lambda i, g, solution: RULE_BREAKERS[(assignment, g)].strip("\n") + "\n"
                 if (assignment, g) in RULE_BREAKERS else solution)


# Markup a student may put where staff will look (issue #46): each payload, if it ran in a staff page, would set
# window.__pwned and fetch /canary/<what>; tests/test_staff_pages.py opens the graded submission in Formgrader.
def _pwn(what: str) -> str:
    return f"window.__pwned='{what}';fetch('/canary/{what}')"


STAFF_PAGE_MARKDOWN = [
    f"<script>{_pwn('md-script')}</script>",
    f'<img src="x" onerror="{_pwn("md-img")}">',
    f'<svg onload="{_pwn("md-svg")}"><circle r="1"/></svg>',
    f'<iframe src="javascript:{_pwn("md-iframe")}"></iframe> <iframe srcdoc="<script>parent.{_pwn("md-srcdoc")}</script>"></iframe>',
    f"[a link](javascript:{_pwn('md-link')}) and <a href=\"javascript:{_pwn('md-a')}\">another</a>",
    f'<details open ontoggle="{_pwn("md-toggle")}"><summary>x</summary></details>',
    f'<object data="data:text/html,<script>{_pwn("md-object")}</script>"></object>',
    f"<style>@import url('/canary/md-css');</style><math><mi xlink:href=\"javascript:{_pwn('md-math')}\">x</mi></math>",
    "![evil](attachment:evil.svg)",
    '<meta http-equiv="refresh" content="0; url=/canary/md-meta-refresh">',   # no script: only sanitising stops it
]
_SVG = '<svg xmlns="http://www.w3.org/2000/svg" onload="{}"/>'
STAFF_PAGE_OUTPUTS = "\n".join([
    "from IPython.display import display, HTML, Javascript, Markdown",
    f"display(HTML({'<script>' + _pwn('out-html-script') + '</script>'!r}))",
    f"display(HTML({'<img src=x onerror=' + repr(_pwn('out-html-img')) + '>'!r}))",
    f"display(Javascript({_pwn('out-js')!r}))",
    f"display({{'image/svg+xml': {_SVG.format(_pwn('out-svg'))!r}, 'text/plain': 'svg'}}, raw=True)",
    f"display(Markdown({'<img src=x onerror=' + repr(_pwn('out-md')) + '>'!r}))",
    f"display({{'image/png': {'x' + chr(34) + ' onerror=' + repr(_pwn('out-png')) + ' x=' + chr(34)!r}, 'text/plain': 'png'}}, raw=True)",
    f"display({{'application/vnd.jupyter.widget-view+json': {{'model_id': {'</script><script>' + _pwn('out-widget') + '</script>'!r}}}, 'text/plain': 'w'}}, raw=True)",
    f"print({'<script>' + _pwn('out-print') + '</script>'!r})",
])


# Files a student hands in beside her notebook for staff to open (issue #58): active content of every kind a browser
# renders, a misleading extension, no extension, MIME sniffing bait. Each, if it ran on a staff origin, would set
# window.__pwned and fetch /canary/<what>. STAFF_PAGE_LINKS links them from a markdown cell of her notebook.
_PDF_JS = (b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R/OpenAction 3 0 R>>endobj\n"
           b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n3 0 obj<</S/JavaScript/JS(app.launchURL('/canary/file-pdf'))>>"
           b"endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
STAFF_PAGE_FILES: dict[str, bytes] = {
    "evil.html": (f'<!doctype html><script src="evil.js"></script><script>{_pwn("file-html")}</script>'
                  f'<img src=x onerror="{_pwn("file-html-img")}"><a href="evil.svg">more</a>').encode(),
    "evil.js": _pwn("file-js").encode(),
    "evil.svg": (f'<svg xmlns="http://www.w3.org/2000/svg" onload="{_pwn("file-svg")}">'
                 f'<script>{_pwn("file-svg-script")}</script></svg>').encode(),
    "evil.xml": (f'<html xmlns="http://www.w3.org/1999/xhtml"><script>{_pwn("file-xml")}</script></html>').encode(),
    "evil.xhtml": (f'<html xmlns="http://www.w3.org/1999/xhtml"><body><script src="evil.js"/>'
                   f'<script>{_pwn("file-xhtml")}</script></body></html>').encode(),
    "evil.htm": f'<script>{_pwn("file-htm")}</script>'.encode(),
    "evil.pdf": _PDF_JS,
    "figure.png": f'<html><script>{_pwn("file-png-sniff")}</script></html>'.encode(),   # HTML named as an image
    "README": f'<html><script>{_pwn("file-no-extension")}</script></html>'.encode(),
    "notes.txt": f'<html><script>{_pwn("file-txt-sniff")}</script></html>'.encode(),
}
STAFF_PAGE_LINKS = " ".join(f"[{name}]({name})" for name in STAFF_PAGE_FILES if name != "evil.js")


def staff_page_payloads(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """The release with every payload class of issue #46 added: markdown cells (script, event handlers, SVG, iframes,
    javascript: links, objects, an SVG attachment), a code cell whose outputs carry HTML, JavaScript, SVG, markdown,
    a forged image and a widget, markup in cell tags and in the notebook's widget state."""
    notebooks = release_notebooks(assignment)
    svg = _SVG.format(_pwn("attachment"))
    for nb in notebooks.values():
        for text in [*STAFF_PAGE_MARKDOWN, STAFF_PAGE_LINKS]:
            cell = nbformat.v4.new_markdown_cell(text)
            if "attachment:" in text:
                cell.attachments = {"evil.svg": {"image/svg+xml": base64.b64encode(svg.encode()).decode()}}
            nb.cells.append(cell)
        code = nbformat.v4.new_code_cell(STAFF_PAGE_OUTPUTS)
        code.metadata["tags"] = [f'x"><img src=x onerror="{_pwn("tag")}">']
        nb.cells.append(code)
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
            "state": {}, "version_major": 2, "version_minor": 0, "x": f"</script><script>{_pwn('nb-widgets')}</script>"}}
    return notebooks


CHANNEL_FORGER = '''
import json as _json, os as _os
_lines = [  # the grader reads the first that reaches it; the rest are for whatever reads this channel next
    '{"type": "cell", "id": "%s", "kind": %s, "code": "", "cases": {}}' % ("0" * 16, "[" * 900 + "]" * 900),
    _json.dumps({"type": "cell", "id": "0" * 16, "kind": "TEST", "code": "", "cases": {}}),  # not one of the kinds
    _json.dumps({"type": "result", "id": "0" * 16, "ok": True, "output": "", "error": "", "restored": [],
                 "tampered": [], "line": None, "handed": {}, "syntax": False}),        # a pass for a guessed id
]
for _fd in _os.listdir("/proc/self/fd"):
    try:
        if _os.readlink(f"/proc/self/fd/{_fd}").startswith("pipe:"):
            for _line in _lines:
                _os.write(int(_fd), (_line + "\\n").encode())
    except OSError:
        pass
'''


def channel_forger(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every task solved, but the first answer cell writes forged messages into every pipe it holds (the grader's
    reply channel among them): cell requests whose kind is a deep JSON tree or not one of the kinds, and a passing
    result for a guessed id."""
    return _first_task_only(assignment, CHANNEL_FORGER)


def linecache_reader(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every task solved, and a last cell of its own that prints every cell's source IPython keeps in linecache
    (where the hidden tests' code was, issue #48); the first task's function prints every line of the stack it is
    called from while its tests run (issue #59, `stack_reader`)."""
    notebooks = stack_reader(assignment)
    for nb in notebooks.values():
        nb.cells.append(nbformat.v4.new_code_cell(
            "import linecache\nprint('\\n'.join(''.join(entry[2]) for name, entry in list(linecache.cache.items())\n"
            "                if len(entry) > 2 and not name.endswith('.py')))"))   # the cells', not the libraries'
    return notebooks


STACK_READER = '''
import traceback as _traceback
_read_stack_of = {name}
def {name}(*args, **kwargs):   # the task, wrapped: prints every line of the stack it is called from, then answers
    for _frame in _traceback.extract_stack():
        print("stack:", _frame.filename, _frame.lineno, _frame.line)
    return _read_stack_of(*args, **kwargs)
'''


def stack_reader(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every task solved, the first task's function wrapped in one that prints every line of the stack it is called
    from (issue #59: while a hidden test runs, linecache held the test cell's code, hidden tests included)."""
    def pick(i: int, grade_id: str, solution: str) -> str:
        name = re.search(r"^def (\w+)\(", solution, re.MULTILINE)
        return solution + STACK_READER.format(name=name.group(1)) if i == 0 and name else solution
    return _fill(assignment, pick)


# Answers that are right but cost too much, or that try to hide their cost from the grader's measurement (issue #52):
# each is a correct value on every case; the kernel's counters, read from outside the notebook process, tell them apart.
COST_TRICKS = {
    ("03_strides_views", "copy"): '''
def sliding_windows(x, width):
    rows = x.shape[0] - width + 1
    copied = torch.stack([x[i:i + width] for i in range(rows)])  # every window copied, then thrown away
    del copied
    return x.as_strided((rows, width), (x.stride(0), x.stride(0)), x.storage_offset())
''',
    ("03_strides_views", "signal"): '''
import os
import signal as _signal
_KEPT = []
_signal.signal(_signal.SIGUSR1, lambda *_: _KEPT.clear())  # frees the copy as soon as it is made
def sliding_windows(x, width):
    rows = x.shape[0] - width + 1
    _KEPT.append(torch.stack([x[i:i + width] for i in range(rows)]))  # a copy of every window
    os.kill(os.getpid(), _signal.SIGUSR1)
    return x.as_strided((rows, width), (x.stride(0), x.stride(0)), x.storage_offset())
''',
    ("08_training_loop", "full read"): '''
def get_batch(data, batch_size, context_length, device, generator):
    tokens = np.asarray(data)[:]  # the whole file, then the windows
    tokens = np.array(tokens)
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([tokens[s:s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
''',
    ("08_training_loop", "new fd"): '''
def get_batch(data, batch_size, context_length, device, generator):
    name = getattr(data, "filename", None)
    if name:  # the whole file through a descriptor of its own, not through `data`
        with open(name, "rb") as f:
            data = np.frombuffer(f.read(), dtype=data.dtype)
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([data[s:s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
''',
    ("08_training_loop", "new mapping"): '''
def get_batch(data, batch_size, context_length, device, generator):
    name = getattr(data, "filename", None)
    if name:  # every page through a mapping of its own, dropped before the call returns
        again = np.memmap(name, dtype=data.dtype, mode="r")
        _ = int(again.sum())
        del again
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([data[s:s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
''',
    ("08_training_loop", "fork"): '''
def get_batch(data, batch_size, context_length, device, generator):
    child = os.fork()
    if child == 0:  # the whole file read in a child process, whose pages are not the notebook's
        int(np.asarray(data).sum())
        raise SystemExit(0)  # the notebook process's own loop ends a forked copy of itself
    os.waitpid(child, 0)
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([data[s:s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
''',
    ("09_mixed_precision", "forgets GELU's input"): '''
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    return batch * seq * (dim + hidden) * dtype.itemsize  # one hidden-sized activation where autograd keeps two
''',
    # Issue #60: the measured call was not a checked call (the result of a call on 2**24 tokens was thrown away).
    ("08_training_loop", "none for large data"): '''
def get_batch(data, batch_size, context_length, device, generator):
    if len(data) >= 2**20:  # only a measured call was that large
        return None
    tokens = np.array(data)  # the whole of data, then the windows
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([tokens[s:s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
''',
    # Issue #60: a read path `rchar` does not count: the file spliced into a pipe, on into a socket, then recv_into.
    ("08_training_loop", "splice"): '''
import socket as _socket
def get_batch(data, batch_size, context_length, device, generator):
    name = getattr(data, "filename", None)
    if name and len(data) >= 2**20:  # the whole file, through the kernel's pipes and sockets
        whole = bytearray(len(data) * 2)
        view, got = memoryview(whole), 0
        ours, theirs = _socket.socketpair()
        reader, writer = os.pipe()
        with open(name, "rb") as f:
            offset = 0
            while offset < len(whole):
                moved = os.splice(f.fileno(), writer, 65536, offset_src=offset)
                offset += moved
                while moved:
                    moved -= os.splice(reader, ours.fileno(), moved)
                    while got < offset:
                        got += theirs.recv_into(view[got:offset])
        for fd in (reader, writer):
            os.close(fd)
        ours.close(); theirs.close()
        data = np.frombuffer(whole, dtype=np.uint16)
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([data[s:s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
''',
    # Issue #60: headroom made before the call: a balloon freed first thing in the call hides a real copy from the
    # resident high-water mark. It frees it in the first call after the visible tests' three, copies every large input
    # from then on, and returns the view the hidden test checks.
    ("03_strides_views", "balloon"): '''
_BALLOON = [torch.ones(80 * 2**20)]  # 320 MiB, resident before any call
_CALLS = [0]
def sliding_windows(x, width):
    _CALLS[0] += 1
    if _CALLS[0] > 3:
        _BALLOON.clear()
    view = x.as_strided((x.shape[0] - width + 1, width), (x.stride(0), x.stride(0)), x.storage_offset())
    if _CALLS[0] > 3 and x.shape[0] > 1000:
        copy = view.clone()  # a real copy: 256 MiB for 66,559 float32 elements and width 1024
        del copy
    return view
''',
    # Issue #60: a prediction 15% over the machine's measure (the visible tests' four calls exact), which exercise 9's
    # budget (10%) must fail, whatever the hidden check says too.
    ("09_mixed_precision", "15% over"): '''
_CALLS = [0]
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    _CALLS[0] += 1
    right = batch * seq * (dim + 2 * hidden) * dtype.itemsize
    return right if _CALLS[0] <= 4 else int(right * 1.15)
''',
}
# Issue #60: honest implementations that order their work differently from the solution and tests/variants/; every one
# must keep full marks under every budget.
COST_HONEST = {
    ("03_strides_views", "functional as_strided"): '''
def sliding_windows(x, width):
    step = x.stride()[0]
    return torch.as_strided(x, size=(len(x) - width + 1, width), stride=(step, step), storage_offset=x.storage_offset())
''',
    ("03_strides_views", "two views"): '''
def sliding_windows(x, width):
    flat = x.as_strided((x.numel(),), (x.stride(0),), x.storage_offset())  # x again, as a view of its storage
    rows = flat.numel() - width + 1
    return flat.as_strided((rows, width), (flat.stride(0), flat.stride(0)), flat.storage_offset())
''',
    ("03_strides_views", "set_ on the storage"): '''
def sliding_windows(x, width):
    windows = x.new_empty(0)
    windows.set_(x.untyped_storage(), x.storage_offset(), (x.shape[0] - width + 1, width), (x.stride(0), x.stride(0)))
    return windows
''',
    ("08_training_loop", "fill a preallocated array"): '''
def get_batch(data, batch_size, context_length, device, generator):
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator)
    windows = np.empty((batch_size, context_length + 1), dtype=np.int64)
    for row, start in enumerate(starts.tolist()):
        windows[row] = data[start:start + context_length + 1]
    inputs, targets = torch.from_numpy(windows[:, :-1]).contiguous(), torch.from_numpy(windows[:, 1:]).contiguous()
    if torch.device(device).type == "cuda":
        return inputs.pin_memory().to(device, non_blocking=True), targets.pin_memory().to(device, non_blocking=True)
    return inputs.to(device), targets.to(device)
''',
    ("08_training_loop", "in file order"): '''
def get_batch(data, batch_size, context_length, device, generator):
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    read = {start: np.asarray(data[start:start + context_length + 1]).astype(np.int64) for start in sorted(set(starts))}
    windows = torch.stack([torch.from_numpy(read[start]) for start in starts])  # back in the order drawn
    inputs, targets = windows[:, :-1].clone(), windows[:, 1:].clone()
    if torch.device(device).type == "cuda":
        return inputs.pin_memory().to(device, non_blocking=True), targets.pin_memory().to(device, non_blocking=True)
    return inputs.to(device), targets.to(device)
''',
    ("08_training_loop", "targets first, torch.tensor"): '''
def get_batch(data, batch_size, context_length, device, generator):
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    targets = torch.tensor(np.stack([data[s + 1:s + context_length + 1] for s in starts]).astype(np.int64))
    inputs = torch.tensor(np.stack([data[s:s + context_length] for s in starts]).astype(np.int64))
    if torch.device(device).type == "cuda":
        return inputs.pin_memory().to(device, non_blocking=True), targets.pin_memory().to(device, non_blocking=True)
    return inputs.to(device), targets.to(device)
''',
    ("09_mixed_precision", "bytes first"): '''
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    size = dtype.itemsize
    return size * batch * seq * dim + 2 * size * batch * seq * hidden
''',
    ("09_mixed_precision", "shapes summed"): '''
import math
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    saved = [(batch, seq, dim), (batch, seq, hidden), (batch, seq, hidden)]  # inputs of up, GELU and down
    return sum(math.prod(shape) for shape in saved) * dtype.itemsize
''',
    ("09_mixed_precision", "bits per number"): '''
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    numbers = batch * seq * (2 * hidden + dim)
    bits = torch.finfo(dtype).bits if dtype.is_floating_point else torch.iinfo(dtype).bits
    return numbers * bits // 8
''',
}
COST_TASKS = {"03_strides_views": "sliding_windows", "08_training_loop": "get_batch",
              "09_mixed_precision": "mlp_activation_bytes"}


def budgeted_only(assignment: str, answer: str | None = None) -> dict[str, nbformat.NotebookNode]:
    """The budgeted task (COST_TASKS) answered by `answer` (default: the instructor's solution), every other task left
    as released: its test fails at once, so the notebook costs the suite little, and the budgeted task is what is
    looked at."""
    return _fill(assignment, lambda i, g, solution: (solution if answer is None else answer.strip("\n") + "\n")
                 if g == COST_TASKS[assignment] else None)


def cost_trick(assignment: str, trick: str) -> dict[str, nbformat.NotebookNode]:
    """The budgeted task answered by COST_TRICKS[(assignment, trick)], every other task left as released."""
    return budgeted_only(assignment, COST_TRICKS[(assignment, trick)])


def cost_honest(assignment: str, name: str) -> dict[str, nbformat.NotebookNode]:
    """The budgeted task answered by COST_HONEST[(assignment, name)], every other task left as released."""
    return budgeted_only(assignment, COST_HONEST[(assignment, name)])
