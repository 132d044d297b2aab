"""Make student submissions from `source/` and `release/`: solved, blank, half done, and ones that try tricks.

Each maker takes an assignment name and returns a notebook (nbformat node) per notebook of the assignment, so
the corpus grows with every assignment added to `source/`.
"""
from __future__ import annotations

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


def _solution_sources(source_nb: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id -> the source cell's code with the solution markers removed."""
    return {cell.metadata.nbgrader["grade_id"]: SOLUTION_MARKERS.sub("", cell.source)
            for cell in source_nb.cells if cell.metadata.get("nbgrader", {}).get("solution")}


def _fill(assignment: str, pick) -> dict[str, nbformat.NotebookNode]:
    """Copy the release, replacing the code of solution cell number i (grade_id g) by pick(i, g, solution)."""
    sources = _notebooks(REPO / "source" / assignment)
    filled = {}
    for name, nb in release_notebooks(assignment).items():
        nb = copy.deepcopy(nb)
        solutions = _solution_sources(sources[name])
        index = 0
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in solutions:
                replacement = pick(index, grade_id, solutions[grade_id])
                if replacement is not None:
                    cell.source = replacement
                index += 1
        filled[name] = nb
    return filled


def solved(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every task done with the instructor's solution."""
    return _fill(assignment, lambda i, g, solution: solution)


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
    """The `def ...:` line (and docstring) of a solution cell, without its body."""
    head = solution.split("\n")
    return "\n".join(head[: next(i for i, line in enumerate(head) if line.strip().startswith("'''")) + 1])


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
                 ALWAYS_EQUAL + _function_header(solution) + "\n    return AlwaysEqual(0.0)\n")


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
                 PATCH_COMPARISONS + _function_header(solution) + "\n    return 0\n")


def _with_warning(solution: str) -> str:
    """The solution, made to print a warning on stderr each time it is called (as torch sometimes does)."""
    header = _function_header(solution)
    warn = '    import warnings; warnings.warn("a harmless warning from correct code", UserWarning, stacklevel=1)\n'
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
    return _fill(assignment, lambda i, g, solution: SHADOW_TOOLS + _function_header(solution) + "\n    return 0\n")


def tamper_during_call(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Wrong answers whose functions, when the test calls them, silence utils.grading's failure helper."""
    return _fill(assignment, lambda i, g, solution: _function_header(solution) +
                 "\n    import utils.grading\n    utils.grading._fail = lambda *args, **kwargs: None\n    return 0\n")


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
    the grader; it prints 'LEAK: ...' for anything that works."""
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
        print("LEAK: wrote", _path)
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
    """Points of each graded test cell in the source, in order."""
    return [float(cell.metadata.nbgrader["points"]) for nb in _notebooks(REPO / "source" / assignment).values()
            for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("grade")]


# student name -> maker, for the makers that need only the assignment name
TRICKS = {"alwaysequal": always_equal, "patcher": patched_comparisons, "shadowed": shadowed_tools,
          "duringcall": tamper_during_call, "thief": answer_thief, "testsedited": tests_edited}  # must score 0
HONEST_EDITS = {"solved": solved, "variant": variant, "noisy": noisy, "testsdeleted": tests_deleted, "metadata": metadata_changed,
                "duplicated": duplicated, "flood": output_flood}                      # must score full marks
FAULTS = {"loop": infinite_loop, "memory": memory_bomb, "forks": fork_loop, "osexit": hard_exit,
          "sysexit": sys_exit, "segfault": segfault}                                  # must score like first_task_error
