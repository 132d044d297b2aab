"""The tasks' rules (utils/rules.py), read from the code: every correct solution keeps them, every route around them
that the code shows breaks them, and a route it does not show is reported for a person."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.grader.plan import make_plan
from autograder.grader.rules import verdicts
from autograder.source import read_notebook as read_source
from tests import submissions
from utils.rule_judge import MAX_ROUTES, Rule, judge, parse
from utils.rules import RULES, Code, check_rule, tasks_of

REPO = Path(__file__).resolve().parent.parent


def verdict(rule: Rule, *cells: str, context: str = "import torch"):
    return judge(rule, Code(parse(textwrap.dedent(c) for c in cells), context=parse([context])))


def graded_rules(assignment: str, notebooks: dict) -> dict:
    """{test grade_id: verdict} as the grader judges the submitted notebooks."""
    found = {}
    for name, notebook in notebooks.items():
        source = read_source(REPO / "source" / assignment / f"{name}.ipynb")
        plan = make_plan(name, source, json.loads(json.dumps(notebook)))
        found.update({gid: v for gid, (_, v) in verdicts(assignment, plan).items()})
    return found


@pytest.mark.parametrize("assignment", sorted({a for a, _ in RULES}))
def test_correct_solutions_keep_every_rule(assignment):
    """The instructor's solution and the independently written variant break no rule and reach nothing dynamic."""
    for maker in (submissions.solved, submissions.variant):
        judged = graded_rules(assignment, maker(assignment))
        assert set(judged) == {t for a, t in RULES if a == assignment}
        for test, found in judged.items():
            assert not found.broken and not found.dynamic, (maker.__name__, test, found)


@pytest.mark.parametrize("assignment, task", sorted(submissions.RULE_BREAKERS))
def test_a_forbidden_route_breaks_its_rule(assignment, task):
    judged = graded_rules(assignment, submissions.rule_breaker(assignment))
    assert judged[f"test_{task}"].broken
    assert all(not v.broken for t, v in judged.items() if t != f"test_{task}")


def test_every_rule_names_a_graded_task_and_its_function():
    for (assignment, test), rule in RULES.items():
        cells = json.loads(next((REPO / "source" / assignment).glob("*.ipynb")).read_text())["cells"]
        ids = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in cells}
        assert test in ids and rule.task in ids, (assignment, test, rule.task)
        assert rule.why and rule.why.endswith("."), (assignment, test)


AUTOGRAD = Rule("w2_grad", ("torch.autograd", "torch.func"), ("backward",), why="by hand.")


@pytest.mark.parametrize("code", [
    "def w2_grad(h1, g):\n    return torch.autograd.grad(h1.sum(), h1)[0]",
    "import torch.autograd as ag\ndef w2_grad(h1, g):\n    return ag.grad(h1, h1)",
    "from torch.autograd import grad as g2\ndef w2_grad(h1, g):\n    return g2(h1, h1)",
    "def w2_grad(h1, g, _grad=torch.autograd.grad):\n    return _grad(h1, h1)",
    "def w2_grad(h1, g):\n    ag = torch.autograd\n    return ag.grad(h1, h1)",
    "def w2_grad(h1, g):\n    return getattr(torch.autograd, 'grad')(h1, h1)",
    "def w2_grad(h1, g):\n    return getattr(getattr(torch, 'autograd'), 'grad')(h1, h1)",
    "torch.my_grad = torch.autograd.grad\ndef w2_grad(h1, g):\n    return torch.my_grad(h1, h1)",
    "def helper(x):\n    x.backward()\ndef w2_grad(h1, g):\n    return helper(h1)",
    "def w2_grad(h1, g):\n    return torch.func.vjp(lambda w: h1 @ w, h1)[1](g)[0]",
    "class Helper:\n    def go(self, x):\n        return x.backward()\ndef w2_grad(h1, g):\n    return Helper().go(h1)",
    # issue #48: a callable kept in a container or wrapped in a partial stands for what it holds
    "_AG = [torch.autograd.grad]\ndef w2_grad(h1, g):\n    return _AG[0](h1, h1)",
    "_AG = {'g': torch.autograd.grad}\ndef w2_grad(h1, g):\n    return _AG['g'](h1, h1)",
    "_AG = (torch.autograd,)\ndef w2_grad(h1, g):\n    return _AG[0].grad(h1, h1)",
    "import functools\n_AG = functools.partial(torch.autograd.grad, retain_graph=True)\ndef w2_grad(h1, g):\n"
    "    return _AG(h1, h1)",
    "from functools import partial\ndef w2_grad(h1, g, _g=partial(torch.func.vjp)):\n    return _g(h1, h1)",
    "def w2_grad(h1, g):\n    first, *rest = [torch.autograd.grad, None]\n    return first(h1, h1)",
])
def test_routes_the_code_shows_break_the_rule(code):
    assert verdict(AUTOGRAD, code).broken


@pytest.mark.parametrize("rule, code", [
    (Rule("AdamW", ("torch.optim.AdamW",), private_of=("torch",), why="."),
     "_KERNEL = [torch._fused_adamw_]\nclass AdamW:\n    def step(self):\n        _KERNEL[0]()"),
    (Rule("split_qkv", ("torch.einsum",), ("view", "permute"), needs=("einops",), why="."),
     "import einops\n_ES = (torch.einsum,)\ndef split_qkv(x):\n    einops.rearrange(x, 'a b -> b a')\n    return _ES[0]('ij->ji', x)"),
])
def test_a_container_of_a_forbidden_callable_breaks_its_rule(rule, code):
    assert verdict(rule, code).broken


GET_BATCH = Rule("get_batch", ("utils.training",), private=True, why=".")


@pytest.mark.parametrize("rule, cells", [
    (GET_BATCH, ["def get_batch(data, n):\n    return data.__getstate__()[:n]"]),          # the stand-in's insides
    (AUTOGRAD, ["import sys\nsys.setrecursionlimit(200000)", "_x = " + "(" * 5000 + "1" + ")" * 5000,
                "def w2_grad(h1, g):\n    return h1.T @ g"]),                                  # a cell it cannot read
    (AUTOGRAD, ["import base64\nexec(base64.b64decode('ZGVmIHcyX2dyYWQoaCwgZyk6IHBhc3M='))"]),  # the answer, built
    (AUTOGRAD, ["_x = torch.autograd\nif False:\n" + "".join(f"    _x = _x.a{i}\n    _x = _x.b{i}\n" for i in range(12)),
                "def w2_grad(h1, g):\n    return h1.T @ g"]),                                  # routes past the cap
])
def test_what_the_judge_cannot_follow_is_flagged_never_passed(rule, cells):
    """Issue #48: the judge's default is "a person looks": whatever it cannot resolve flags the task, never a pass."""
    found = verdict(rule, *cells)
    assert found.dynamic and not found.broken, found


def test_the_judge_stays_small_on_aliases_that_double():
    """Twelve lines of dead code that double a name's routes each: bounded by MAX_ROUTES, quickly."""
    import time
    cells = ["_x = torch.autograd\nif False:\n" + "".join("    _x = _x.a\n    _x = _x.b\n" for _ in range(24)),
             "def w2_grad(h1, g):\n    return h1.T @ g"]
    started = time.process_time()
    code = Code(parse(cells), context=parse(["import torch"]))
    assert judge(AUTOGRAD, code).dynamic
    assert max(len(v) for v in code.flow.store.values()) <= MAX_ROUTES + 1
    assert time.process_time() - started < 10   # seconds; about 2.3 GB and 47 s with 4 pairs before the cap


@pytest.mark.parametrize("code", [
    "def w2_grad(h1, g):\n    return getattr(torch, 'auto' + 'grad').grad(h1, h1)",
    "def w2_grad(h1, g):\n    return eval('torch.autograd').grad(h1, h1)",
    "import importlib\ndef w2_grad(h1, g):\n    return importlib.import_module('torch.autograd').grad(h1, h1)",
    "def w2_grad(h1, g):\n    return vars(torch)['autograd'].grad(h1, h1)",
    "def w2_grad(h1, g):\n    return torch.__dict__['autograd'].grad(h1, h1)",
    "from torch.autograd import *\ndef w2_grad(h1, g):\n    return grad(h1, h1)",
])
def test_routes_built_at_run_time_are_reported_for_a_person(code):
    found = verdict(AUTOGRAD, code)
    assert found.dynamic or found.broken, found     # a star import's names are read: `grad` is torch.autograd.grad


def test_only_the_tasks_own_code_counts():
    """Another function that breaks the rule, never called by the task, is not the task's."""
    code = "def scratch(x):\n    return torch.autograd.grad(x, x)\ndef w2_grad(h1, g):\n    return h1.T @ g"
    assert not verdict(AUTOGRAD, code).broken
    assert verdict(AUTOGRAD, code, "def w2_grad(h1, g):\n    return scratch(h1)").broken  # once it calls it, it is


def test_the_last_definition_wins_and_einops_needs_an_answer():
    einops = RULES[("04_einops_jaxtyping", "test_merge_heads")]
    old = "def merge_heads(x):\n    return x.permute(0, 2, 1, 3).flatten(2)"
    new = "def merge_heads(x):\n    return rearrange(x, 'b h s d -> b s (h d)')"
    assert verdict(einops, old).broken
    assert not verdict(einops, old, new, context="from einops import rearrange").broken
    assert verdict(einops, "def merge_heads(x):\n    return x").broken  # answered without einops
    assert not verdict(einops, "def merge_heads(x):\n    raise NotImplementedError('replace this line')").broken
    assert not verdict(einops, "def merge_heads(x):\n    return einops.einsum(x, 'a -> a')", context="import einops").broken


def test_the_grader_reads_the_rules_without_importing_torch():
    """`utils` binds its names on first use, so the grader's `import utils.rules` costs no torch; every name the
    package offers is still there, and is the object its module defines."""
    script = textwrap.dedent("""
        import sys
        import utils, utils.rules
        assert "torch" not in sys.modules, "importing utils.rules imported torch"
        from utils import describe_device
        import utils.device, utils.units
        assert describe_device is utils.device.describe_device and utils.format_bytes is utils.units.format_bytes
        assert set(utils.__all__) <= set(dir(utils))
        for name in utils.__all__:
            getattr(utils, name)
        try:
            utils.no_such_name
        except AttributeError as error:
            assert "no_such_name" in str(error)
        else:
            raise AssertionError("utils.no_such_name did not raise AttributeError")
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr


def test_a_rule_broken_in_an_earlier_task_costs_its_points_once():
    """Issue #48: a correct after_cast that calls the student's limits is not charged for the torch.finfo in limits;
    limits is, once. The visible check and the grader judge alike (tasks_of)."""
    cells = ["def limits(dtype):\n    info = torch.finfo(dtype)\n    return info.max, info.tiny",
             "def after_cast(x, dtype):\n    top, _ = limits(dtype)\n    return min(x, top)"]
    found = {rule.task: judge(rule, Code(parse(cells), context=parse(["import torch"])), tasks_of("01_floats"))
             for (a, _), rule in RULES.items() if a == "01_floats" and rule.task in ("limits", "after_cast")}
    assert found["limits"].broken == ["torch.finfo"] and found["after_cast"].broken == [], found
    assert verdict(RULES[("01_floats", "test_after_cast")], *cells).broken   # without stand-ins it was charged


def test_the_grader_charges_the_earlier_task_only():
    """The same through the grader's judge on a whole notebook: limits reaches torch.finfo, after_cast (which calls
    limits) keeps its points."""
    notebooks = submissions.solved("01_floats")
    for nb in notebooks.values():
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "limits":
                cell.source = ("def limits(exponent_bits, mantissa_bits, ieee_specials=True):\n"
                               "    info = torch.finfo({(8, 23): torch.float32, (5, 10): torch.float16}"
                               "[(exponent_bits, mantissa_bits)])\n"
                               "    return info.max, info.tiny, info.smallest_normal * info.eps, info.eps")
    judged = graded_rules("01_floats", notebooks)
    assert judged["test_limits"].broken and not judged["test_after_cast"].broken, judged


# ---- generated routes (issue #48): every way of hiding a forbidden callable, composed, is zeroed or flagged --------
HIDINGS = {   # one step: (setup lines, the expression it leaves), given the expression so far and a fresh number
    "alias": lambda e, i: ([f"_a{i} = {e}"], f"_a{i}"),
    "list": lambda e, i: ([f"_l{i} = [None, {e}]"], f"_l{i}[1]"),
    "tuple": lambda e, i: ([f"_t{i} = ({e},)"], f"_t{i}[0]"),
    "dict": lambda e, i: ([f"_d{i} = {{'k': {e}}}"], f"_d{i}['k']"),
    "partial": lambda e, i: ([f"_p{i} = functools.partial({e})"], f"_p{i}"),
    "unpack": lambda e, i: ([f"_u{i}, _v{i} = {e}, None"], f"_u{i}"),
    "starred": lambda e, i: ([f"_s{i}, *_r{i} = [{e}, None]"], f"_s{i}"),
    "attribute": lambda e, i: ([f"torch.hidden_{i} = {e}"], f"torch.hidden_{i}"),
}
STARTS = {   # the forbidden callable, named as the code may first name it
    "plain": ([], "torch.autograd.grad"),
    "import as": (["import torch.autograd as _ag"], "_ag.grad"),
    "from import": (["from torch.autograd import grad as _g"], "_g"),
    "getattr": ([], "getattr(torch.autograd, 'grad')"),
}
BUILT = {   # names built at run time: a person decides
    "concatenated getattr": "getattr(torch.autograd, 'gr' + 'ad')",
    "eval": "eval('torch.autograd.grad')",
    "vars": "vars(torch.autograd)['grad']",
}


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(start=st.sampled_from(sorted(STARTS)), steps=st.lists(st.sampled_from(sorted(HIDINGS)), max_size=5),
       as_default=st.booleans(), built=st.sampled_from([None, *sorted(BUILT)]))
def test_generated_routes_are_zeroed_or_flagged(start, steps, as_default, built):
    lines, expression = list(STARTS[start][0]), BUILT[built] if built else STARTS[start][1]
    for index, step in enumerate(steps):
        setup, expression = HIDINGS[step](expression, index)
        lines += setup
    call = "_f" if as_default else expression
    default = f", _f={expression}" if as_default else ""
    code = "import functools\n" + "\n".join(lines) + f"\ndef w2_grad(h1, g{default}):\n    return {call}(h1, h1)"
    found = verdict(AUTOGRAD, code)
    if built:
        assert found.broken or found.dynamic, code
    else:
        assert found.broken, code


@pytest.mark.parametrize("code", [
    "_fns = [torch.zeros, torch.ones]\ndef w2_grad(h1, g):\n    return h1.T @ g + _fns[0](1)",
    "grad_fn, n = torch.autograd.grad, 3\ndef w2_grad(h1, g):\n    return h1.T @ g * n",
    "import functools\n_mm = functools.partial(torch.matmul)\ndef w2_grad(h1, g):\n    return _mm(h1.T, g)",
])
def test_containers_of_allowed_names_stay_allowed(code):
    """The same shapes holding only what the task may use: no charge, no flag."""
    found = verdict(AUTOGRAD, code)
    assert not found.broken and not found.dynamic, found


def test_the_judge_is_bounded_and_a_judge_that_runs_out_flags_for_a_person(monkeypatch):
    """Issue #48: the grader judges each notebook in a child with a time and memory cap; a judgement that runs out
    of either flags every rule-bound task for a person instead of a MemoryError or a stalled run."""
    from autograder.grader import rules as grader_rules
    notebooks = submissions.solved("01_floats")
    name, notebook = next(iter(notebooks.items()))
    source = read_source(REPO / "source" / "01_floats" / f"{name}.ipynb")
    plan = make_plan(name, source, json.loads(json.dumps(notebook)))
    plain = {gid: (v.broken, v.dynamic) for gid, (_, v) in verdicts("01_floats", plan).items()}
    bounded = grader_rules.bounded_verdicts("01_floats", plan)
    assert {gid: (v.broken, v.dynamic) for gid, (_, v) in bounded.items()} == plain and plain

    def hungry(assignment, plan):
        return bytearray(16 << 30)                                   # 16 GiB at once, past the cap: no time to fill it

    def endless(assignment, plan):
        while True:
            pass
    monkeypatch.setattr(grader_rules, "JUDGE_SECONDS", 2.0)
    for runaway, why in ((hungry, "MemoryError"), (endless, "ran longer than 2 s")):
        monkeypatch.setattr(grader_rules, "verdicts", runaway)
        judged = grader_rules.bounded_verdicts("01_floats", plan)
        assert set(judged) == set(plain)
        assert all(not v.broken and any(why in d for d in v.dynamic) for _, v in judged.values()), judged


def test_the_message_names_the_route_through_a_helper():
    """Issue #48: a rule broken in a helper the task calls is charged to the task, and the message says where."""
    found = verdict(AUTOGRAD, "def helper(x):\n    return torch.autograd.grad(x.sum(), x)\n"
                              "def w2_grad(h1, g):\n    return helper(h1)")
    assert found.broken == ["torch.autograd, reached through your `helper`"], found
    assert "reached through your `helper`" in found.message(AUTOGRAD)


SPLIT = Rule("split_qkv", ("torch.einsum",), ("view", "permute"), needs=("einops",), why=".")


@pytest.mark.parametrize("code, broken", [
    ("_V = [torch.Tensor.view]\ndef split_qkv(x):\n    einops.rearrange(x, 'a b -> b a')\n    return _V[0](x, 2, 3)",
     [".view"]),                                               # a forbidden method taken from its class
    ("_V = [einops.rearrange]\ndef split_qkv(x):\n    return _V[0](x, 'a b -> b a')", []),   # what the task needs
])
def test_a_forbidden_method_held_as_a_value_breaks_its_rule(code, broken):
    assert verdict(SPLIT, "import einops\n" + code).broken == broken


@pytest.mark.parametrize("code, said", [
    ("def w2_grad(h1, g):\n    return eval('torch.autograd').grad(h1, h1)",
     ["code built or names read at run time (eval)", "eval()"]),
    ("_x = torch.autograd\nif False:\n" + "".join(f"    _x = _x.a{i}\n    _x = _x.b{i}\n" for i in range(12))
     + "def w2_grad(h1, g):\n    return h1.T @ g", ["names aliased more than 256 ways"]),
])
def test_a_route_the_judge_reports_is_said_in_words_for_the_person_who_looks(code, said):
    assert verdict(AUTOGRAD, code).dynamic == said


@pytest.mark.parametrize("code, broken", [
    ("def get_batch(d, n):\n    np.asarray(d)\n    return torch._utils._rebuild(d)", ["._utils", "._rebuild"]),
    ("_F = [torch._utils]\ndef get_batch(d, n):\n    np.asarray(d)\n    return _F[0](d)", ["._utils"]),    # held
    ("from torch import _utils\ndef get_batch(d, n):\n    np.asarray(d)\n    return _utils(d)", ["._utils"]),
])
def test_a_private_name_breaks_a_rule_that_forbids_them(code, broken):
    rule = Rule("get_batch", ("utils.training",), private=True, needs=("numpy",), why=".")
    found = verdict(rule, "import numpy as np\n" + code)
    assert found.broken == [f"a private attribute ({name})" for name in broken], found


@pytest.mark.parametrize("code", [
    "def two_layer_flops(b, d, k):\n    with torch.profiler.profile(with_flops=True) as p:\n        pass\n"
    "    return sum(e.flops for e in p.key_averages())",
    "from torch.autograd import profiler\ndef two_layer_flops(b, d, k):\n    with profiler.profile(with_flops=True) as p:\n"
    "        pass\n    return p.total_average().flops",
    "from torch.utils._python_dispatch import TorchDispatchMode\nclass Count(TorchDispatchMode):\n    pass\n"
    "def two_layer_flops(b, d, k):\n    with Count():\n        pass\n    return 0",
])
def test_counting_by_running_the_operations_breaks_a_flop_task_s_rule(code):
    """The red team of issue #63 summed torch.profiler's with_flops events for 06's FLOP tasks (6 points, unflagged):
    every tool that counts by running the operations is a FLOP counter to the rule."""
    assert verdict(RULES[("06_gradients", "test_two_layer_flops")], code).broken


# ---- the visible check in the notebook (check_rule): the student sees what grading will decide ----------------------

def _student(tmp_path, code: str):
    """A student's functions with their source in a file, as check_rule reads a function outside IPython's history."""
    import importlib.util
    path = tmp_path / "student_cells.py"
    path.write_text(textwrap.dedent(code))
    spec = importlib.util.spec_from_file_location("student_cells", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_visible_check_passes_honest_code_silently_and_raises_the_rule_a_cheat_breaks(tmp_path, capsys):
    """check_rule outside IPython (the grader's kernels keep no history): an honest task passes without a word, a
    cheat raises AssertionError with the rule's message and hint, a test that has no rule checks nothing."""
    student = _student(tmp_path, """
        import numpy as np
        def limits(exponent_bits, mantissa_bits, ieee_specials=True):
            bias = 2 ** (exponent_bits - 1) - 1
            return (2 - 2.0 ** -mantissa_bits) * 2.0 ** bias, 2.0 ** (1 - bias), 2.0 ** (1 - bias - mantissa_bits), \\
                2.0 ** -mantissa_bits
        def decode(bits, exponent_bits, mantissa_bits):
            return float(np.finfo(np.float32).max)
        """)
    assert check_rule("01_floats", "test_limits", student.limits) is None
    with pytest.raises(AssertionError) as raised:
        check_rule("01_floats", "test_decode", student.decode)
    assert str(raised.value) == ("decode uses numpy.finfo, which this task rules out\n"
                                 "Hint: work it out from the format's bits, as the lecture's sections on the formats do.")
    assert check_rule("01_floats", "test_no_such_test", student.decode) is None   # a test without a rule
    assert capsys.readouterr().out == ""


def test_the_visible_check_warns_of_the_first_three_things_grading_will_flag(tmp_path, capsys):
    """Code that reaches names built at run time passes the visible check with a note naming the first three (a
    short line); grading flags the notebook for a person."""
    student = _student(tmp_path, """
        import numpy as np
        def limits(exponent_bits, mantissa_bits, ieee_specials=True):
            big = eval("2.0 ** 127")
            names = vars(np)
            math = __import__("math")
            return getattr(np, chr(102) + "info"), big, names, math
        """)
    assert check_rule("01_floats", "test_limits", student.limits) is None      # flagged for a person, not zeroed
    assert capsys.readouterr().out == (
        "Note: limits reaches code built or names read at run time (eval), code built or names read at run time "
        "(__import__), eval(), which grading cannot read from the code: it will be flagged for your instructor to look "
        "at.\n")   # three of the six things it reaches (eval, __import__, eval(), vars(), __import__(), the getattr)
