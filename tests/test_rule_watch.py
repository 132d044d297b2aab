"""The run-time watch of a rule-bound task (autograder/sandboxed/watch.py, issue #59), in this process: what it sees a
task run while its test cell calls it, what it never reports of honest code, and what the grader makes of it
(autograder/grader/rules.py `flags`). End to end, through the sandbox: tests/test_grader_boundary.py. About 5 s."""
from __future__ import annotations

import pytest

from autograder.grader.plan import Cell, CellRun
from autograder.grader.rules import flags, watch_lines
from autograder.protocol import CellKind
from autograder.sandboxed import executor, watch
from utils.rule_judge import Verdict
from utils.rules import RULES, tasks_of

RULE = {rule.task: rule for rule in RULES.values()}
ASSIGNMENT = {rule.task: assignment for (assignment, _), rule in RULES.items()}


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    import os
    import sys
    before, path = os.getcwd(), list(sys.path)
    os.chdir(tmp_path_factory.mktemp("notebook"))   # the notebook's own folder, as in the sandbox
    yield _shell()
    os.chdir(before)
    sys.path[:] = path
    sys.modules.pop("cheat_helper", None)


def _shell():
    import os
    shell = executor.make_shell()
    names = executor.CellNames(shell)
    watch.install()
    watch.watch_folder(os.getcwd())   # as executor.serve does before the student's code

    def run(kind: CellKind, code: str, task: str | None = None) -> list[str]:
        names.begin(kind)
        watched = watch.Watch(watch_lines(RULE[task], tasks_of(ASSIGNMENT[task])), names.student) if task else None
        if watched is not None:
            watched.arm(shell.user_ns)
        result = shell.run_cell(code, store_history=False, silent=True)
        evidence = watched.disarm() if watched is not None else []
        assert result.error_before_exec is None, result.error_before_exec
        return evidence
    run(CellKind.SETUP, "import math, types, torch, einops\nimport torch.utils.flop_counter, utils.gradients\n"
                        "utils.gradients.count_two_layer_flops(2, 2, 2)   # a warm process, as the grader's are")
    watch.look_at_loaded()   # as the zygote does after its preload
    return run


SEEN = {   # task, its answer, the test that calls it, what the watch must report (a part of one line)
    "a forbidden function from a default": (
        "w2_grad", "def w2_grad(h1, g, _grad=torch.autograd.grad):\n"
                   "    w = torch.zeros(h1.shape[1], g.shape[1], requires_grad=True)\n"
                   "    with torch.enable_grad():\n        return _grad(h1 @ w, w, g)[0]",
        "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "torch.autograd.grad, called by the task's code"),
    "the engine, however started": (
        "w2_grad", "_E = torch._C._ImperativeEngine()\ndef w2_grad(h1, g):\n"
                   "    w = torch.zeros(h1.shape[1], g.shape[1], requires_grad=True)\n"
                   "    with torch.enable_grad():\n        y = h1 @ w\n"
                   "    return _E.run_backward((y,), (g,), False, False, (w,), False, False)[0]",
        "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "the autograd engine ran a backward pass"),
    "a rule's method": ("merge_heads", "def merge_heads(x):\n    return x.permute(0, 2, 1, 3).flatten(2)",
                        "merge_heads(torch.randn(2, 3, 4, 5))", ".permute, called by the task's code"),
    "someone else's dispatch mode": (
        "matmul_flop_count", "def matmul_flop_count(a, b):\n"
                             "    with torch.utils.flop_counter.FlopCounterMode(display=False) as c:\n"
                             "        torch.empty(a, device='meta') @ torch.empty(b, device='meta')\n"
                             "    return c.get_total_flops()", "matmul_flop_count((2, 3), (3, 4))",
        "FlopCounterMode was on torch's dispatch stack"),
    "a course helper the rule does not name": (
        "linear_model_flops", "def linear_model_flops(batch, widths, training=False):\n"
                              "    return utils.gradients.count_two_layer_flops(math.prod(batch), widths[0], widths[1])[0]",
        "linear_model_flops((4,), [3, 5])", "torch.utils.flop_counter.FlopCounterMode.__enter__ ran inside the task"),
    "a forbidden optimizer's own code": (
        "AdamW", "class AdamW(torch.optim.Optimizer):\n    def __init__(self, params, lr=1e-3):\n"
                 "        super().__init__(params, dict(lr=lr))\n        self.inner = torch.optim.AdamW(self.param_groups, lr=lr)\n"
                 "    def step(self, closure=None):\n        return self.inner.step()",
        "p = torch.nn.Parameter(torch.randn(3))\nopt = AdamW([p])\np.grad = torch.ones(3)\nopt.step()",
        "ran inside the task"),
    "a private torch function": (
        "AdamW", "class AdamW(torch.optim.Optimizer):\n    def __init__(self, params, lr=1e-3):\n"
                 "        super().__init__(params, dict(lr=lr))\n    @torch.no_grad()\n"
                 "    def step(self, closure=None):\n        ps = self.param_groups[0]['params']\n"
                 "        torch._foreach_add_(ps, [p.grad for p in ps], alpha=-0.1)",
        "p = torch.nn.Parameter(torch.randn(3))\nopt = AdamW([p])\np.grad = torch.ones(3)\nopt.step()",
        "torch._foreach_add_ (private), called by the task's code"),
    "torch.einsum where einops is asked for": (
        "attention_scores", "def attention_scores(q, k):\n    return torch.einsum('bqd,bkd->bqk', q, k) / q.shape[-1] ** 0.5",
        "attention_scores(torch.randn(2, 3, 4), torch.randn(2, 5, 4))", "torch.functional.einsum, called by the task's code"),
    "einops named but never run": (
        "merge_heads", "def merge_heads(x):\n    _pattern = einops.rearrange\n    b, h, s, d = x.shape\n"
                       "    return x.new_zeros(b, s, h * d)",
        "merge_heads(torch.randn(2, 3, 4, 5))", "einops never ran in 1 of the task's calls"),
    "settrace": ("w2_grad", "import sys\ndef w2_grad(h1, g):\n    sys.settrace(None)\n    return h1.T @ g",
                 "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "tampering: the task's code ran sys.settrace"),
    "exec": ("w2_grad", "def w2_grad(h1, g):\n    return eval('h1.T @ g')",
             "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "tampering: the task's code ran exec"),
    "the watch's profile hook taken off": (
        "w2_grad", "import sys\ndef w2_grad(h1, g):\n    sys.setprofile(None)\n    return h1.T @ g",
        "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "tampering: the watch's profile hook was taken off"),
    "a module the notebook wrote": (
        "w2_grad", "import os, sys\nopen('cheat_helper.py', 'w').write('def w2(h1, g):\\n    return h1.T @ g\\n')\n"
                   "sys.path.insert(0, os.getcwd())\nimport cheat_helper\n"
                   "def w2_grad(h1, g):\n    return cheat_helper.w2(h1, g)",
        "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "cheat_helper was imported from a file the notebook wrote"),
    "a mode pushed and left": (
        "w2_grad", "from torch.overrides import TorchFunctionMode\ndef w2_grad(h1, g):\n"
                   "    TorchFunctionMode().__enter__()\n    return h1.T @ g",
        "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "tampering: the task's code left torch's mode stacks changed"),
}


@pytest.mark.parametrize("name", sorted(SEEN))
def test_what_a_task_runs_is_seen(shell, name):
    task, answer, test, expected = SEEN[name]
    shell(CellKind.ANSWER, answer)
    evidence = shell(CellKind.TEST, test, task)
    assert any(expected in line for line in evidence), evidence
    import sys

    import torch
    assert torch._C._len_torch_dispatch_stack() == 0 and sys.getprofile() is None    # the watch never stays
    while torch._C._len_torch_function_stack():
        torch._C._pop_torch_function_stack()
    sys.modules.pop("cheat_helper", None)   # seen by every later watch too, as it would be in that notebook
    watch._CODE_FROM_HERE.clear()


WRITE = "import os, sys, sysconfig\nopen({file!r}, 'w').write({code!r})\nsys.path.insert(0, os.getcwd())\n"
DISGUISED = {   # code the notebook wrote, loaded so that nothing the module says about itself points at the folder
    "a module whose __file__ and __spec__ name the standard library's file (red team, #63)": (
        WRITE.format(file="tabnanny.py", code="import sysconfig\n__file__ = sysconfig.get_paths()['stdlib'] + "
                                               "'/tabnanny.py'\n__spec__.origin = __file__\n"
                                               "def w2(h1, g):\n    return h1.T @ g\n")
        + "import tabnanny\ndef w2_grad(h1, g):\n    return tabnanny.w2(h1, g)", "tabnanny.py"),
    "a zip archive put on sys.path": (
        "import os, sys, zipfile\nwith zipfile.ZipFile('lib.zip', 'w') as z:\n"
        "    z.writestr('zipped_helper.py', 'def w2(h1, g):\\n    return h1.T @ g\\n')\n"
        "sys.path.insert(0, os.path.join(os.getcwd(), 'lib.zip'))\nimport zipped_helper\n"
        "zipped_helper.__file__ = os.__file__\ndef w2_grad(h1, g):\n    return zipped_helper.w2(h1, g)", "lib.zip"),
    "a text file loaded as a module by a spec of its own": (
        "import importlib.util, os\nopen('notes.txt', 'w').write('def w2(h1, g):\\n    return h1.T @ g\\n')\n"
        "from importlib.machinery import SourceFileLoader\n"
        "spec = importlib.util.spec_from_file_location('notes', 'notes.txt', loader=SourceFileLoader('notes', 'notes.txt'))\n"
        "notes = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(notes)\nnotes.__file__ = os.__file__\n"
        "def w2_grad(h1, g):\n    return notes.w2(h1, g)", "notes.txt"),
    "a file run by runpy.run_path into the notebook's names": (
        "import runpy\nopen('helper.txt', 'w').write('def w2(h1, g):\\n    return h1.T @ g\\n')\n"
        "w2_grad = runpy.run_path('helper.txt')['w2']", "helper.txt"),
    "a written module imported with os.path.exists and os.path.realpath rebound first": (
        "import os, os.path, sys\n_e, _r = os.path.exists, os.path.realpath\n"
        "os.path.exists, os.path.realpath = (lambda p: False), (lambda p: '/usr/lib/x.py')\n"
        "open('rebound_helper.py', 'w').write('def w2(h1, g):\\n    return h1.T @ g\\n')\n"
        "sys.path.insert(0, os.getcwd())\ntry:\n    import rebound_helper\nfinally:\n"
        "    os.path.exists, os.path.realpath = _e, _r\n"
        "def w2_grad(h1, g):\n    return rebound_helper.w2(h1, g)", "rebound_helper.py"),
    "code in a memfd, loaded through /proc/self/fd": (
        "import importlib.util, os\nfrom importlib.machinery import SourceFileLoader\n"
        "fd = os.memfd_create('helper')\nos.write(fd, b'def w2(h1, g):\\n    return h1.T @ g\\n')\n"
        "path = f'/proc/self/fd/{fd}'\n"
        "spec = importlib.util.spec_from_file_location('in_memory', path, loader=SourceFileLoader('in_memory', path))\n"
        "in_memory = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(in_memory)\n"
        "def w2_grad(h1, g):\n    return in_memory.w2(h1, g)", "/memfd:helper (deleted), outside the course's installation"),
}


def evidence_of(shell, answer: str, *modules: str) -> list[str]:
    """What the watch says of w2_grad as `answer` defines it; after, the modules it made are dropped and what the
    import system read is forgotten (seen by every later watch too, as it would be in that notebook)."""
    import sys
    try:
        shell(CellKind.ANSWER, answer)
        return shell(CellKind.TEST, "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "w2_grad")
    finally:
        for module in modules:
            sys.modules.pop(module, None)
        watch._CODE_FROM_HERE.clear()


@pytest.mark.parametrize("name", sorted(DISGUISED))
def test_code_the_import_system_read_from_the_notebooks_folder_is_seen_whatever_the_module_says(shell, name):
    """Whatever a module says of itself, the file the import system opened (a loader's get_data, zipimport) is seen
    when it lies in the notebook's folder, in whichever cell it was imported."""
    answer, path = DISGUISED[name]
    evidence = evidence_of(shell, answer, "tabnanny", "zipped_helper", "notes", "in_memory", "rebound_helper")
    where = path if path.startswith("/") else f"{path}, a file in the notebook's own folder"
    assert f"tampering: the import system read {where}" in evidence, evidence


def test_a_module_handed_in_beside_the_notebook_is_seen(shell):
    """The grader puts the student's own files beside her notebook, as `nbgrader autograde` does (executor.write_files):
    a helper.py she handed in is code the judge never read, whatever it says of itself."""
    import base64
    helper = b"import os\n__file__ = os.__file__\ndef w2(h1, g):\n    return h1.T @ g\n"
    assert executor.write_files({"helper.py": base64.b64encode(helper).decode()}) == []
    evidence = evidence_of(shell, "import os, sys\nsys.path.insert(0, os.getcwd())\nimport helper\n"
                                  "def w2_grad(h1, g):\n    return helper.w2(h1, g)", "helper")
    assert "tampering: the import system read helper.py, a file in the notebook's own folder" in evidence, evidence


def test_work_handed_to_a_thread_the_notebook_started_is_seen(shell):
    """The profile hook follows the thread that calls the task: a worker thread started in an earlier cell (as an
    executor of asyncio's or concurrent's would run), fed through a queue, that does the forbidden work is alive when
    the call ends, and said."""
    answer = ("import queue, threading\njobs, done = queue.Queue(), queue.Queue()\n"
              "def _serve():\n    while True:\n        h1, g = jobs.get()\n        if h1 is None:\n            return\n"
              "        w = torch.ones(2, 4, requires_grad=True)\n"
              "        done.put(torch.autograd.grad((h1 @ w * g).sum(), [w])[0])\n"
              "worker = threading.Thread(target=_serve, daemon=True)\nworker.start()\n"
              "def w2_grad(h1, g):\n    jobs.put((h1, g))\n    return done.get()")
    try:
        shell(CellKind.ANSWER, answer)
        evidence = shell(CellKind.TEST, "w2_grad(torch.randn(3, 2), torch.randn(3, 4))", "w2_grad")
        assert any("a thread the notebook started was running while the task ran" in line for line in evidence), evidence
    finally:
        shell(CellKind.ANSWER, "jobs.put((None, None))\nworker.join(10)")


def test_a_loaded_module_put_back_from_the_notebooks_folder_is_seen(shell):
    """A name the zygote's preload holds (looked at once, before any notebook's folder existed) whose module the
    notebook replaces with one it wrote is seen, as a new name is: what was looked at is the module, not the name."""
    import sys
    import types
    loaded = types.ModuleType("course_helper")
    loaded.__file__ = "/the-course/course_helper.py"
    sys.modules["course_helper"] = loaded
    watch.look_at_loaded()
    evidence = evidence_of(shell, "import os, sys\nopen('course_helper.py', 'w').write('def w2(h1, g):\\n    return h1.T @ g\\n')\n"
                                  "del sys.modules['course_helper']\nsys.path.insert(0, os.getcwd())\nimport course_helper\n"
                                  "def w2_grad(h1, g):\n    return course_helper.w2(h1, g)", "course_helper")
    assert "tampering: course_helper was imported from a file the notebook wrote" in evidence, evidence


HONEST = {   # what the watch must not report: honest code, the tests' own use of the oracles, a correct stand-in
    "by hand, checked with autograd in the test": (
        "w2_grad", "def w2_grad(h1, g):\n    return h1.T @ g",
        "h = torch.randn(3, 2, requires_grad=True)\ng = torch.randn(3, 4)\nw = torch.randn(2, 4, requires_grad=True)\n"
        "expected = torch.autograd.grad((h @ w * g).sum(), w)[0]\nassert torch.allclose(w2_grad(h, g), expected)"),
    "einops, whose insides permute": ("merge_heads", "def merge_heads(x):\n    return einops.rearrange(x, 'b h s d -> b s (h d)')",
                                      "merge_heads(torch.randn(2, 3, 4, 5))"),
    "torch.enable_grad and no_grad": ("w2_grad", "@torch.no_grad()\ndef w2_grad(h1, g):\n"
                                                 "    with torch.enable_grad():\n        return h1.T @ g",
                                      "w2_grad(torch.randn(3, 2), torch.randn(3, 4))"),
    "an own optimizer": ("MomentumSGD", "class MomentumSGD(torch.optim.Optimizer):\n    def __init__(self, params, lr=0.1):\n"
                                        "        super().__init__(params, dict(lr=lr))\n    @torch.no_grad()\n"
                                        "    def step(self, closure=None):\n        for p in self.param_groups[0]['params']:\n"
                                        "            p.sub_(self.param_groups[0]['lr'] * p.grad)",
                         "p = torch.nn.Parameter(torch.randn(3))\nopt = MomentumSGD([p])\np.grad = torch.ones(3)\n"
                         "opt.step()\nopt.zero_grad()"),
    "a call refused before einops runs": (   # the tests hand a checked function a wrong shape on purpose
        "merge_heads", "def merge_heads(x):\n    if x.ndim != 4:\n        raise TypeError('want 4 axes')\n"
                       "    return einops.rearrange(x, 'b h s d -> b s (h d)')",
        "merge_heads(torch.randn(2, 3, 4, 5))\ntry:\n    merge_heads(torch.randn(2, 3))\nexcept TypeError:\n    pass"),
    "another task's correct stand-in": (
        "two_layer_grads", "def two_layer_grads(x, w1, w2):\n    return w2_grad(x @ w1, x)",
        "w2_grad = utils.gradients.autograd_linear_grads\n"
        "two_layer_grads(torch.randn(3, 2), torch.randn(2, 2), torch.randn(2, 2))"),
    "the course's own function bound as the earlier task's": (   # earlier_tasks_done_right, as 08's test_train does
        "train", "def train(data):\n    return get_batch(data, 2, 4, 'cpu', torch.Generator().manual_seed(0))",
        "import numpy as np, utils.training\nget_batch = utils.training.get_batch\ntrain(np.arange(100))"),
    "einops.einsum, which runs torch.einsum": (
        "attention_scores", "def attention_scores(q, k):\n"
                            "    return einops.einsum(q, k, '... q d, ... k d -> ... q k') / math.sqrt(q.shape[-1])",
        "attention_scores(torch.randn(2, 3, 4), torch.randn(2, 5, 4))"),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_code_shows_nothing(shell, name):
    task, answer, test = HONEST[name]
    shell(CellKind.ANSWER, answer)
    assert shell(CellKind.TEST, test, task) == []


def test_the_watch_looks_at_a_budget_of_events_and_calls_only(shell):
    """Grading stays cheap: the profile hook takes itself off after EVENT_BUDGET events, and past CALL_BUDGET calls
    of the task in one cell a call runs unwatched; what came first is seen."""
    shell(CellKind.ANSWER, "_n = [0]\ndef merge_heads(x):\n    _n[0] += 1\n"
                           "    return x.permute(0, 1, 2, 3) if _n[0] == 1 else x.clone()")
    evidence = shell(CellKind.TEST, f"for _ in range({watch.CALL_BUDGET + 3}):\n    merge_heads(torch.ones(1, 1, 1, 1))",
                     "merge_heads")
    assert evidence == [".permute, called by the task's code",   # einops never ran in the watched calls either
                        f"einops never ran in {watch.CALL_BUDGET} of the task's calls (the task asks for it)"]
    shell(CellKind.ANSWER, f"def merge_heads(x):\n    for _ in range({watch.EVENT_BUDGET}):\n        len([])\n"
                           "    return x.permute(0, 1, 2, 3)")
    assert shell(CellKind.TEST, "merge_heads(torch.ones(1, 1, 1, 1))", "merge_heads") == []


def test_the_grader_flags_what_ran_against_the_verdict():
    """What the watch saw, against the judge's verdict: run-time evidence on a task the judge did not charge is
    flagged; on one it charged, it agrees (no flag); tampering is always flagged. Nothing is charged from it."""
    rule = RULE["w2_grad"]
    cell = Cell(CellKind.TEST, "test_w2_grad", "")
    seen = CellRun(True, ran=("torch.autograd.grad, called by the task's code",))
    tampered = CellRun(True, ran=("tampering: the task's code ran sys.settrace",))
    passed, charged = Verdict([], []), Verdict(["torch.autograd"], [])
    assert flags({"test_w2_grad": (rule, passed)}, [cell], [seen]) == [
        "w2_grad was seen running what its rule forbids, which its code as the grader reads it does not show "
        "(torch.autograd.grad, called by the task's code)"]
    assert flags({"test_w2_grad": (rule, charged)}, [cell], [seen]) == []
    assert flags({"test_w2_grad": (rule, charged)}, [cell], [tampered]) == [
        "w2_grad's tests ran with the grader's watch tampered with (the task's code ran sys.settrace)"]
    assert flags({"test_w2_grad": (rule, passed)}, [cell], [CellRun(True)]) == []
