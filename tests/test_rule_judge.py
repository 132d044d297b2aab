"""The task rules' judge (utils/rule_judge.py, utils/code_flow.py; the rules: utils/rules.py), issue #59: sound by construction, precise on honest code.

- every name and method each rule rules out (a table written here, apart from utils/rules.py) breaks its rule, and
  the rules rule out nothing else: dropping numpy.finfo from exercise 1's rules fails this file;
- the issue's routes are zeroed or flagged, the issue's honest shapes pass unflagged (here, judged alone; end to end
  in tests/test_grader_boundary.py);
- alias chains of any length, written in any order, reach their name: a fixed point, not a number of passes;
- a task is what its name holds when its test runs, and a later definition replaces an earlier one only when
  nothing before it in its cell can fail;
- generated corpora (tests/rule_corpus.py, a sample here): every route zeroed or flagged, no honest program charged,
  at most 2% flagged.
About 20 s.
"""
from __future__ import annotations

import ast
import random
import textwrap

import pytest

from tests import rule_corpus
from utils.rule_judge import judge, parse
from utils.rules import RULES, Code, tasks_of

# What each task may not use, as this table says it (apart from utils/rules.py, on purpose): a name, `.method`,
# `private-of:module` (its private names), `private` (private attributes of anything).
PROFILERS = ('torch.profiler torch.autograd.profiler torch.autograd.profiler_util torch._C._profiler '
             'torch.utils._python_dispatch torch.overrides')   # counting by running the operations (issue #63)
RULED_OUT = {
    ('01_floats', 'after_cast'): 'torch.finfo numpy.finfo utils.floats',
    ('01_floats', 'decode'): 'torch.finfo numpy.finfo utils.floats',
    ('01_floats', 'limits'): 'torch.finfo numpy.finfo utils.floats',
    ('01_floats', 'tensor_nbytes'): 'utils.units',
    ('02_tensors_on_gpu', 'allocated_bytes'): ('torch.cuda torch.backends torch.accelerator torch.mps utils.device utils.transfer utils.units'),
    ('02_tensors_on_gpu', 'copy_gb_per_s'): 'utils.timing.time_it utils.transfer.copy_bandwidth',
    ('02_tensors_on_gpu', 'pick_device'): ('torch.cuda torch.backends torch.accelerator torch.mps utils.device utils.transfer utils.units'),
    ('02_tensors_on_gpu', 'to_copies'): ('torch.cuda torch.backends torch.accelerator torch.mps utils.device utils.transfer utils.units'),
    ('03_strides_views', 'can_view'): ('torch.Tensor.stride torch.Tensor.storage_offset torch.Tensor.is_contiguous torch.Tensor.view '
        'torch.Tensor.reshape torch.Tensor.as_strided torch.Tensor.set_ torch.as_strided torch.empty_strided '
        'torch._prims_common utils.strides numpy.lib.stride_tricks numpy.ndarray torch.from_numpy .stride '
        '.storage_offset .is_contiguous .view .reshape .as_strided .set_ .strides .flags .numpy'),
    ('03_strides_views', 'is_contiguous'): ('torch.Tensor.stride torch.Tensor.storage_offset torch.Tensor.is_contiguous torch.Tensor.view '
        'torch.Tensor.reshape torch.Tensor.as_strided torch.Tensor.set_ torch.as_strided torch.empty_strided '
        'torch._prims_common utils.strides numpy.lib.stride_tricks numpy.ndarray torch.from_numpy .stride '
        '.storage_offset .is_contiguous .view .reshape .as_strided .set_ .strides .flags .numpy'),
    ('03_strides_views', 'row_major_strides'): ('torch.Tensor.stride torch.Tensor.storage_offset torch.Tensor.is_contiguous torch.Tensor.view '
        'torch.Tensor.reshape torch.Tensor.as_strided torch.Tensor.set_ torch.as_strided torch.empty_strided '
        'torch._prims_common utils.strides numpy.lib.stride_tricks numpy.ndarray torch.from_numpy .stride '
        '.storage_offset .is_contiguous .view .reshape .as_strided .set_ .strides .flags .numpy'),
    ('03_strides_views', 'slice_metadata'): ('torch.Tensor.stride torch.Tensor.storage_offset torch.Tensor.is_contiguous torch.Tensor.view '
        'torch.Tensor.reshape torch.Tensor.as_strided torch.Tensor.set_ torch.as_strided torch.empty_strided '
        'torch._prims_common utils.strides numpy.lib.stride_tricks numpy.ndarray torch.from_numpy .stride '
        '.storage_offset .is_contiguous .view .reshape .as_strided .set_ .strides .flags .numpy'),
    ('03_strides_views', 'sliding_windows'): ('torch.Tensor.unfold numpy.lib.stride_tricks torch.from_numpy .unfold .numpy'),
    ('03_strides_views', 'storage_index'): ('torch.Tensor.stride torch.Tensor.storage_offset torch.Tensor.is_contiguous torch.Tensor.view '
        'torch.Tensor.reshape torch.Tensor.as_strided torch.Tensor.set_ torch.as_strided torch.empty_strided '
        'torch._prims_common utils.strides numpy.lib.stride_tricks numpy.ndarray torch.from_numpy .stride '
        '.storage_offset .is_contiguous .view .reshape .as_strided .set_ .strides .flags .numpy'),
    ('04_einops_jaxtyping', 'attention_scores'): ('torch.einsum torch.functional torch.nn.functional .view .reshape .permute .transpose .movedim '
        '.moveaxis .swapaxes .swapdims .flatten .unflatten .einsum .matmul .bmm .mm .T .mT .@ .mH .H .adjoint '
        '.as_strided .unfold .tensordot .inner .outer .vecdot .dot .vdot .mv .addmm .baddbmm .addbmm .addmv '
        '.cat .concat .concatenate .stack .hstack .vstack .dstack .nanmean .nansum .numpy .from_numpy'
        ' .view_as .reshape_as .transpose_ .swapaxes_ .swapdims_ .t .t_ .align_to .align_as .Flatten .Unflatten .sum .mean .cumsum .cumprod .prod .logcumsumexp'),
    ('04_einops_jaxtyping', 'checked_masked_mean'): ('torch.einsum torch.functional torch.mean torch.sum .view .reshape .permute .transpose .movedim '
        '.moveaxis .swapaxes .swapdims .flatten .unflatten .einsum .matmul .bmm .mm .T .mT .@ .mH .H .adjoint '
        '.as_strided .unfold .tensordot .inner .outer .vecdot .dot .vdot .mv .addmm .baddbmm .addbmm .addmv '
        '.cat .concat .concatenate .stack .hstack .vstack .dstack .nanmean .nansum .numpy .from_numpy .mean '
        '.sum .view_as .reshape_as .transpose_ .swapaxes_ .swapdims_ .t .t_ .align_to .align_as .Flatten .Unflatten .sum .mean .cumsum .cumprod .prod .logcumsumexp'),
    ('04_einops_jaxtyping', 'merge_heads'): ('torch.einsum torch.functional .view .reshape .permute .transpose .movedim .moveaxis .swapaxes '
        '.swapdims .flatten .unflatten .einsum .matmul .bmm .mm .T .mT .@ .mH .H .adjoint .as_strided .unfold '
        '.tensordot .inner .outer .vecdot .dot .vdot .mv .addmm .baddbmm .addbmm .addmv .cat .concat '
        '.concatenate .stack .hstack .vstack .dstack .nanmean .nansum .numpy .from_numpy'
        ' .view_as .reshape_as .transpose_ .swapaxes_ .swapdims_ .t .t_ .align_to .align_as .Flatten .Unflatten'),
    ('04_einops_jaxtyping', 'split_qkv'): ('torch.einsum torch.functional .view .reshape .permute .transpose .movedim .moveaxis .swapaxes '
        '.swapdims .flatten .unflatten .einsum .matmul .bmm .mm .T .mT .@ .mH .H .adjoint .as_strided .unfold '
        '.tensordot .inner .outer .vecdot .dot .vdot .mv .addmm .baddbmm .addbmm .addmv .cat .concat '
        '.concatenate .stack .hstack .vstack .dstack .nanmean .nansum .numpy .from_numpy'
        ' .view_as .reshape_as .transpose_ .swapaxes_ .swapdims_ .t .t_ .align_to .align_as .Flatten .Unflatten'),
    ('05_flops_mfu', 'linear_model_flops'): ('torch.utils.flop_counter utils.flops.FlopCounterMode utils.flops.count_flops ' + PROFILERS + ' '
        'utils.flops.matmul_flops utils.flops.linear_flops'),
    ('05_flops_mfu', 'matmul_flop_count'): ('torch.utils.flop_counter utils.flops.FlopCounterMode utils.flops.count_flops ' + PROFILERS + ' '
        'utils.flops.matmul_flops'),
    ('05_flops_mfu', 'matmul_intensity'): ('torch.utils.flop_counter utils.flops.FlopCounterMode utils.flops.count_flops ' + PROFILERS),
    ('06_gradients', 'h1_grad'): ('torch.autograd torch.func torch._functorch utils.gradients.autograd_linear_grads '
        'utils.gradients.autograd_two_layer_grads utils.gradients.autograd_linear_stack_grads '
        'utils.gradients.autograd_linear_stack_activation_grads .backward .grad_fn .next_functions '
        '.run_backward ._execution_engine .register_hook .register_post_accumulate_grad_hook .retain_grad '
        'private-of:torch'),
    ('06_gradients', 'stack_flops'): ('torch.utils.flop_counter utils.flops.FlopCounterMode utils.flops.count_flops ' + PROFILERS + ' '
        'utils.gradients.count_two_layer_flops utils.gradients.count_linear_stack_flops'),
    ('06_gradients', 'stack_grads'): ('torch.autograd torch.func torch._functorch utils.gradients.autograd_linear_grads '
        'utils.gradients.autograd_two_layer_grads utils.gradients.autograd_linear_stack_grads '
        'utils.gradients.autograd_linear_stack_activation_grads .backward .grad_fn .next_functions '
        '.run_backward ._execution_engine .register_hook .register_post_accumulate_grad_hook .retain_grad '
        'private-of:torch'),
    ('06_gradients', 'two_layer_flops'): ('torch.utils.flop_counter utils.flops.FlopCounterMode utils.flops.count_flops ' + PROFILERS + ' '
        'utils.gradients.count_two_layer_flops utils.gradients.count_linear_stack_flops'),
    ('06_gradients', 'two_layer_grads'): ('torch.autograd torch.func torch._functorch utils.gradients.autograd_linear_grads '
        'utils.gradients.autograd_two_layer_grads utils.gradients.autograd_linear_stack_grads '
        'utils.gradients.autograd_linear_stack_activation_grads .backward .grad_fn .next_functions '
        '.run_backward ._execution_engine .register_hook .register_post_accumulate_grad_hook .retain_grad '
        'private-of:torch'),
    ('06_gradients', 'w2_grad'): ('torch.autograd torch.func torch._functorch utils.gradients.autograd_linear_grads '
        'utils.gradients.autograd_two_layer_grads utils.gradients.autograd_linear_stack_grads '
        'utils.gradients.autograd_linear_stack_activation_grads .backward .grad_fn .next_functions '
        '.run_backward ._execution_engine .register_hook .register_post_accumulate_grad_hook .retain_grad '
        'private-of:torch'),
    ('07_models_optimizers', 'AdaGrad'): ('torch.optim.SGD torch.optim.Adagrad torch.optim.Adam torch.optim.AdamW torch.optim.RMSprop '
        'torch.optim.Adamax torch.optim.NAdam torch.optim.RAdam torch.optim.ASGD torch.optim.Rprop '
        'torch.optim.LBFGS torch.optim.Adadelta torch.optim.SparseAdam torch.optim.sgd torch.optim.adagrad '
        'torch.optim.adam torch.optim.adamw torch.optim.rmsprop torch.optim._functional utils.optimizers '
        'utils.optimizer_checks private-of:torch'),
    ('07_models_optimizers', 'AdamW'): ('torch.optim.SGD torch.optim.Adagrad torch.optim.Adam torch.optim.AdamW torch.optim.RMSprop '
        'torch.optim.Adamax torch.optim.NAdam torch.optim.RAdam torch.optim.ASGD torch.optim.Rprop '
        'torch.optim.LBFGS torch.optim.Adadelta torch.optim.SparseAdam torch.optim.sgd torch.optim.adagrad '
        'torch.optim.adam torch.optim.adamw torch.optim.rmsprop torch.optim._functional utils.optimizers '
        'utils.optimizer_checks private-of:torch'),
    ('07_models_optimizers', 'MomentumSGD'): ('torch.optim.SGD torch.optim.Adagrad torch.optim.Adam torch.optim.AdamW torch.optim.RMSprop '
        'torch.optim.Adamax torch.optim.NAdam torch.optim.RAdam torch.optim.ASGD torch.optim.Rprop '
        'torch.optim.LBFGS torch.optim.Adadelta torch.optim.SparseAdam torch.optim.sgd torch.optim.adagrad '
        'torch.optim.adam torch.optim.adamw torch.optim.rmsprop torch.optim._functional utils.optimizers '
        'utils.optimizer_checks private-of:torch'),
    ('07_models_optimizers', 'largest_model'): 'utils.memory',
    ('07_models_optimizers', 'state_bytes'): 'utils.memory',
    ('08_training_loop', 'get_batch'): 'utils.training private',
    ('08_training_loop', 'load_checkpoint'): 'utils.training',
    ('08_training_loop', 'save_checkpoint'): 'utils.training',
    ('08_training_loop', 'train'): 'utils.training',
    ('09_mixed_precision', 'autocast_dtype'): ('utils.mixed_precision torch.autocast torch.amp.autocast torch.amp.autocast_mode '
        'torch.cpu.amp.autocast torch.cuda.amp.autocast torch.set_autocast_enabled'),
    ('09_mixed_precision', 'loss_scaled_step'): ('utils.mixed_precision torch.amp.GradScaler torch.amp.grad_scaler torch.cuda.amp.GradScaler '
        'torch.cpu.amp.GradScaler torch._amp_foreach_non_finite_check_and_unscale_ torch._amp_update_scale_'),
    ('09_mixed_precision', 'master_weight_step'): 'utils.mixed_precision',
    ('09_mixed_precision', 'mlp_activation_bytes'): 'utils.mixed_precision',
    ('09_mixed_precision', 'next_loss_scale'): ('utils.mixed_precision torch.amp.GradScaler torch.amp.grad_scaler torch.cuda.amp.GradScaler '
        'torch.cpu.amp.GradScaler torch._amp_foreach_non_finite_check_and_unscale_ torch._amp_update_scale_'),
    ('10_accounting_a_training_run', 'memory_per_gpu'): ('torch.nn torch.utils.flop_counter utils.models utils.gpt utils.flops utils.planning .parameters '
        '.named_parameters'),
    ('10_accounting_a_training_run', 'param_count'): ('torch.nn torch.utils.flop_counter utils.models utils.gpt utils.flops utils.planning .parameters '
        '.named_parameters'),
    ('10_accounting_a_training_run', 'training_days'): ('torch.nn torch.utils.flop_counter utils.models utils.gpt utils.flops utils.planning .parameters '
        '.named_parameters'),
    ('10_accounting_a_training_run', 'training_flops_per_token'): ('torch.nn torch.utils.flop_counter utils.models utils.gpt utils.flops utils.planning .parameters '
        '.named_parameters'),
}
SETUP = "import torch\nimport numpy as np\nimport functools, types, collections\nfrom einops import rearrange, reduce, einsum\n"
ASSIGNMENT = {rule.task: assignment for (assignment, _), rule in RULES.items()}
RULE = {rule.task: rule for rule in RULES.values()}


def verdict(task: str, *cells: str, setup: str = SETUP):
    code = Code(parse(textwrap.dedent(c) for c in cells), context=parse([setup]))
    return judge(RULE[task], code, tasks_of(ASSIGNMENT[task]))


def test_the_table_and_the_rules_agree():
    """Every rule rules out exactly what the table lists: a name dropped from a rule (or added) fails here."""
    for (assignment, _), rule in RULES.items():
        listed = set(RULED_OUT[(assignment, rule.task)].split())
        ruled = set(rule.names) | {f".{m}" for m in rule.methods} | {f"private-of:{p}" for p in rule.private_of} | \
            ({"private"} if rule.private else set())
        assert listed == ruled, (assignment, rule.task, sorted(listed - ruled), sorted(ruled - listed))
    assert set(RULED_OUT) == {(a, r.task) for (a, _), r in RULES.items()}


def _breaking(task: str, token: str) -> str:
    """A task's code that uses `token` (a table entry) and nothing else the rule forbids."""
    needs = "    rearrange(x, 'a -> a')\n" if RULE[task].needs else ""
    if token.startswith("."):
        use = "x @ x" if token == ".@" else f"x{token}()"
    elif token == "private":
        use = "x._array"
    elif token.startswith("private-of:"):
        use = f"{token.split(':')[1]}._fused_adamw_"
    else:
        use = token
    header = f"import {use.split('.')[0]}\n" if not token.startswith((".", "private")) else \
        "import torch\n" if token.startswith("private-of") else ""
    if task in rule_corpus.CLASS_TASKS:
        return header + f"class {task}(torch.optim.Optimizer):\n    def step(self, closure=None):\n        x = self\n" + \
            textwrap.indent(needs, "    ") + f"        return {use}\n"
    return header + f"def {task}(x, *args, **kwargs):\n" + needs + f"    return {use}\n"


@pytest.mark.parametrize("key", sorted(RULED_OUT))
def test_every_forbidden_name_breaks_its_rule(key):
    """Each name, method and private name of the table, used plainly by its task, breaks the rule: zeroed, with the
    name in the message."""
    assignment, task = key
    for token in RULED_OUT[key].split():
        found = verdict(task, _breaking(task, token))
        assert found.broken, (task, token, found)


ISSUE_ROUTES = {   # issue #59's routes, each of which earned full marks with no flag
    "dict(g=...)": ("w2_grad", "_D = dict(g=torch.autograd.grad)\ndef w2_grad(h1, g):\n    return _D['g'](h1, h1)"),
    "list([...])": ("w2_grad", "_L = list([torch.autograd.grad])\ndef w2_grad(h1, g):\n    return _L[0](h1, h1)"),
    "SimpleNamespace": ("h1_grad", "_N = types.SimpleNamespace(g=torch.autograd.grad)\n"
                                   "def h1_grad(h1, g):\n    return _N.g(h1, h1)"),
    "comprehension": ("w2_grad", "_C = [f for f in (torch.autograd.grad,)]\ndef w2_grad(h1, g):\n    return _C[0](h1, h1)"),
    "L += [...]": ("w2_grad", "_L = []\n_L += [torch.autograd.grad]\ndef w2_grad(h1, g):\n    return _L[0](h1, h1)"),
    "L.append": ("w2_grad", "_L = []\n_L.append(torch.autograd.grad)\ndef w2_grad(h1, g):\n    return _L[0](h1, h1)"),
    "class attribute set at top level": ("w2_grad", "class K:\n    pass\nK.g = torch.autograd.grad\n"
                                                    "def w2_grad(h1, g):\n    return K.g(h1, h1)"),
    "task bound by assignment": ("w2_grad", "def _impl(h1, g):\n    return torch.autograd.grad(h1, h1)\nw2_grad = _impl"),
    "after an honest def": ("w2_grad", "def w2_grad(h1, g):\n    return h1.T @ g\n"
                                       "def _impl(h1, g):\n    return torch.autograd.grad(h1, h1)\nw2_grad = _impl"),
    "factory closure": ("two_layer_grads", "def _make():\n    g = torch.autograd.grad\n    def inner(*a):\n"
                                           "        return g(a[0], a[0])\n    return inner\ntwo_layer_grads = _make()"),
    "exec in a function called at top level": ("w2_grad", "def _go():\n    exec('w2_grad = lambda h1, g: torch.autograd."
                                                          "grad(h1, h1)', globals())\n_go()"),
    "the engine itself": ("stack_grads", "def stack_grads(x, ws, bs):\n    return torch._C._ImperativeEngine().run_backward("
                                         "(x,), (x,), False, False, (x,), False, False)"),
    "calling a node": ("h1_grad", "def h1_grad(h1, g):\n    w = torch.zeros(3, requires_grad=True)\n"
                                  "    return (h1 @ w).grad_fn(g)"),
    "torch._fused_adamw_ in dict(...)": ("AdamW", "_K = dict(k=torch._fused_adamw_)\nclass AdamW(torch.optim.Optimizer):\n"
                                                  "    def step(self, closure=None):\n        _K['k']()"),
    "torch.einsum in a dict": ("split_qkv", "_E = dict(e=torch.einsum)\ndef split_qkv(x, h):\n    rearrange(x, 'a b -> a b')\n"
                                            "    return _E['e']('ij->ji', x)"),
    "Tensor.view and permute in a list": ("split_qkv", "_M = [torch.Tensor.view, torch.Tensor.permute]\n"
                                                       "def split_qkv(x, h):\n    rearrange(x, 'a b -> a b')\n"
                                                       "    return _M[1](_M[0](x, 2, 3), 0, 1)"),
    "FlopCounterMode in a SimpleNamespace": ("matmul_flop_count", "import torch.utils.flop_counter\n"
                                             "_N = types.SimpleNamespace(F=torch.utils.flop_counter.FlopCounterMode)\n"
                                             "def matmul_flop_count(a, b):\n    with _N.F(display=False) as c:\n"
                                             "        pass\n    return c.get_total_flops()"),
    "a for target": ("w2_grad", "for _f in [torch.autograd.grad]:\n    pass\ndef w2_grad(h1, g):\n    return _f(h1, h1)"),
    "with ... as": ("w2_grad", "import contextlib\nwith contextlib.nullcontext(torch.autograd.grad) as _f:\n    pass\n"
                               "def w2_grad(h1, g):\n    return _f(h1, h1)"),
    "except ... as": ("w2_grad", "try:\n    raise ValueError(torch.autograd.grad)\nexcept ValueError as _e:\n"
                                 "    _f = _e.args[0]\ndef w2_grad(h1, g):\n    return _f(h1, h1)"),
    "next(iter(...))": ("w2_grad", "_f = next(iter([torch.autograd.grad]))\ndef w2_grad(h1, g):\n    return _f(h1, h1)"),
    "default argument of a helper": ("w2_grad", "def _h(a, _f=torch.autograd.grad):\n    return _f(a, a)\n"
                                                "def w2_grad(h1, g):\n    return _h(h1)"),
}


BEYOND = {   # routes the issue did not list
    "another path to numpy.finfo": ("decode", "from numpy.core.getlimits import finfo as _f\n"
                                              "def decode(b, e, m):\n    return _f(np.float32).max"),
    "a private path to Tensor.stride": ("storage_index", "import torch._tensor\n"
                                                         "def storage_index(i, s, o):\n    return torch._tensor.Tensor.stride"),
    "utils.floats through another course module": ("limits", "import utils.earlier\ndef limits(e, m, s=True):\n"
                                                            "    return utils.earlier.floats.limits(e, m)"),
    "IPython's _": ("w2_grad", "torch.autograd.grad", "def w2_grad(h1, g):\n    return _(h1, h1)"),
    "IPython's Out": ("w2_grad", "torch.autograd.grad", "def w2_grad(h1, g):\n    return Out[2](h1, h1)"),
    "__builtins__": ("w2_grad", "def w2_grad(h1, g):\n    return __builtins__.eval('torch.autograd.grad')(h1, h1)"),
    "a metaclass's __call__": ("AdamW", "class _Meta(type):\n    def __call__(cls, *a, **k):\n"
                                        "        return torch.optim.AdamW(*a, **k)\n"
                                        "class AdamW(torch.optim.Optimizer, metaclass=_Meta):\n    pass"),
    "a descriptor's __get__": ("w2_grad", "class _D:\n    def __get__(self, obj, owner):\n        return torch.autograd.grad\n"
                                          "class _K:\n    g = _D()\ndef w2_grad(h1, g):\n    return _K().g(h1, h1)"),
    "torch._C._VariableFunctions.einsum": ("merge_heads", "def merge_heads(x):\n    rearrange(x, 'a b -> a b')\n"
                                                          "    return torch._C._VariableFunctions.einsum('ij->ji', x)"),
    "a module the notebook wrote": ("w2_grad", "open('g.py', 'w').write('from torch.autograd import grad')\nimport g\n"
                                               "def w2_grad(h1, h2):\n    return g.grad(h1, h1)"),
    "type() building a class": ("AdamW", "AdamW = type('AdamW', (torch.optim.AdamW,), {})"),
    "super(C, self)": ("w2_grad", "class _B:\n    def f(self):\n        return torch.autograd.grad\n"
                                  "class _C(_B):\n    def f(self):\n        return super(_C, self).f()\n"
                                  "def w2_grad(h1, g):\n    return _C().f()(h1, h1)"),
    # a student's view of the release (a red team, 2026-11-29): numpy's arrays and torch's other products
    "numpy's strides": ("row_major_strides", "def row_major_strides(shape):\n"
                                             "    return torch.empty(shape, dtype=torch.int8).numpy().strides"),
    "numpy's flags": ("is_contiguous", "def is_contiguous(shape, strides):\n"
                                       "    return np.ndarray(shape, np.int8, buffer=bytearray(64), strides=strides)"
                                       ".flags['C_CONTIGUOUS']"),
    "numpy's sliding windows": ("sliding_windows", "def sliding_windows(x, width):\n"
                                                   "    w = np.lib.stride_tricks.sliding_window_view(x.numpy(), width)\n"
                                                   "    return torch.from_numpy(w)"),
    "as_strided with a dead einops name": ("split_qkv", "def split_qkv(qkv, n_heads):\n    pattern = rearrange\n"
                                                        "    return qkv.as_strided((3, 1), (1, 1))"),
    "cat of unbind": ("merge_heads", "def merge_heads(x):\n    pattern = rearrange\n"
                                     "    return torch.cat(x.unbind(1), dim=-1)"),
    "linalg.vecdot": ("attention_scores", "def attention_scores(q, k):\n    pattern = einsum\n"
                                          "    return torch.linalg.vecdot(q.unsqueeze(-2), k.unsqueeze(-3))"),
    "nanmean": ("checked_masked_mean", "def checked_masked_mean(x, mask):\n    pattern = reduce\n"
                                       "    return torch.where(mask[..., None], x, float('nan')).nanmean(1)"),
    "a star import": ("w2_grad", "from torch.autograd import *\ndef w2_grad(h1, g):\n    return grad(h1, h1)"),
}


@pytest.mark.parametrize("name", sorted(ISSUE_ROUTES) + sorted(BEYOND))
def test_the_issues_routes_are_zeroed_or_flagged(name):
    task, *cells = ISSUE_ROUTES.get(name) or BEYOND[name]
    found = verdict(task, *cells)
    assert found.broken or found.dynamic, (name, found)


HONEST = {   # issue #59's honest shapes, each of which was charged or flagged
    "own Layer class with a backward method": ("stack_grads", """
        class Layer:
            def __init__(self, w, b):
                self.w, self.b = w, b
            def forward(self, x):
                self.x = x
                return x @ self.w + self.b
            def backward(self, g):
                self.gw, self.gb = self.x.T @ g, g.sum(0)
                return g @ self.w.T
        def stack_grads(x, weights, biases):
            layers = [Layer(w, b) for w, b in zip(weights, biases)]
            h = x
            for layer in layers:
                h = layer.forward(h)
            g = 2 * h / h.numel()
            for layer in reversed(layers):
                g = layer.backward(g)
            return [l.gw for l in layers], [l.gb for l in layers]"""),
    "a local grad beside a scratch import": ("w2_grad", "from torch.autograd import grad\nh = torch.randn(3, 2, "
                                             "requires_grad=True)\nprint(grad(h.sum(), h))",
                                             "def w2_grad(h1, h2_grad):\n    grad = h1.T @ h2_grad\n    return grad"),
    "an own namedtuple's .stride": ("slice_metadata", "Meta = collections.namedtuple('Meta', 'shape stride offset')\n"
                                    "def slice_metadata(shape, strides, offset, start, stop):\n"
                                    "    m = Meta(shape, strides, offset)\n"
                                    "    return (m.shape, m.stride, m.offset + start * m.stride[0])"),
    "a scratch variable named reference": ("w2_grad", "reference = torch.randn(2, 2)\nprint(reference.T.shape)",
                                           "def w2_grad(h1, h2_grad):\n    return h1.T @ h2_grad"),
    "getattr(config, f) for f in (...)": ("param_count", "config = types.SimpleNamespace(d=4, l=2)\n"
                                          "vals = [getattr(config, f) for f in ('d', 'l')]",
                                          "def param_count(d, l, v):\n    return 12 * l * d ** 2 + v * d"),
    "a later honest definition": ("merge_heads", "def merge_heads(x):\n    return x.permute(0, 2, 1, 3).flatten(2)",
                                  "def merge_heads(x):\n    return rearrange(x, 'b h s d -> b s (h d)')"),
    "a wrapper and a factory": ("w2_grad", "def _make():\n    def w2_grad(h1, g):\n        return h1.T @ g\n"
                                "    return w2_grad\nw2_grad = _make()\n_impl = w2_grad\n"
                                "def w2_grad(h1, g):\n    return _impl(h1, g)"),
    "own class methods named view and stride": ("storage_index", "class Shape:\n    def __init__(self, s):\n"
                                                "        self.s = s\n    def stride(self):\n        return [1] * len(self.s)\n"
                                                "    def view(self):\n        return self.s\n"
                                                "def storage_index(index, strides, offset):\n"
                                                "    return offset + sum(i * s for i, s in zip(Shape(index).view(), strides))"),
    "a lambda in a class body": ("MomentumSGD", "class MomentumSGD(torch.optim.Optimizer):\n"
                                 "    scale = lambda self, g: self.param_groups[0]['lr'] * g\n"
                                 "    def __init__(self, params, lr=0.1):\n        super().__init__(params, dict(lr=lr))\n"
                                 "    @torch.no_grad()\n"
                             "    def step(self, closure=None):\n        for p in self.param_groups[0]['params']:\n"
                             "            p.sub_(self.scale(p.grad))"),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_the_issues_honest_shapes_are_neither_charged_nor_flagged(name):
    task, *cells = HONEST[name]
    found = verdict(task, *cells)
    assert not found.broken and not found.dynamic, (name, found)


@pytest.mark.parametrize("length", [1, 2, 5, 13, 40])
def test_alias_chains_of_any_length_and_order_reach_their_name(length):
    """`_g = _n.grad; _n = _m.autograd; _m = torch`, any length, in any order: in functions, set through `global`,
    and at the top level in the order that runs; each reaches torch.autograd.grad (the judge runs to a fixed
    point, not a number of passes)."""
    generator = random.Random(length)
    names = [f"_v{i}" for i in range(length + 1)]
    links = [f"{names[0]} = torch"] + [f"{names[i + 1]} = {names[i]}.{'autograd' if i == 0 else 'self'}"
                                       for i in range(length)]
    grad = f"{names[-1]}.grad" if length == 1 else f"getattr({names[-1]}, 'grad')"
    links = [link.replace(".self", "") for link in links]      # each link an alias of the one before, but the first
    shuffled = links[:]
    generator.shuffle(shuffled)
    task = f"def w2_grad(h1, g):\n    return {grad}(h1, h1)"
    in_order = "\n".join(links)
    in_function = "def _set():\n    global " + ", ".join(names) + "\n" + textwrap.indent("\n".join(shuffled), "    ") + \
        "\n_set()"
    in_defaults = "\n".join(f"def _f{i}(_x={names[i]}):\n    return _x" for i in range(length + 1))
    for cells in ([in_order, task], [task, in_function], [in_order, in_defaults, task],
                  ["\n".join(reversed(links)), in_order, task]):
        found = verdict("w2_grad", *cells)
        assert found.broken == ["torch.autograd"], (length, cells, found)


@pytest.mark.parametrize("cells, charged", [
    # a cheat defined after the task's own test cell ran does not count for it (graded separately: `at`)
    (["def w2_grad(h1, g):\n    return h1.T @ g", "def w2_grad(h1, g):\n    return torch.autograd.grad(h1, h1)"], False),
    # a later honest def replaces an earlier cheat when nothing before it in its cell can fail ...
    (["def w2_grad(h1, g):\n    return torch.autograd.grad(h1, h1)", "def w2_grad(h1, g):\n    return h1.T @ g"], False),
    # ... but not after a statement that can raise: the cell stops there, and the cheat stays
    (["def w2_grad(h1, g):\n    return torch.autograd.grad(h1, h1)", "1 / 0\ndef w2_grad(h1, g):\n    return h1.T @ g"],
     True),
    (["def w2_grad(h1, g):\n    return torch.autograd.grad(h1, h1)",
      "def w2_grad(h1: torch.Tensor, g) -> torch.Tensor:\n    return h1.T @ g"], False),   # an annotation that is sure
    (["def w2_grad(h1, g):\n    return torch.autograd.grad(h1, h1)",
      "def w2_grad(h1: torch.Tensorr, g):\n    return h1.T @ g"], True),       # one that raises: the def never binds
    (["def w2_grad(h1, g):\n    return torch.autograd.grad(h1, h1)", "torch.Tensor = None",
      "def w2_grad(h1: torch.Tensor, g):\n    return h1.T @ g"], True),       # an annotation that may raise
])
def test_a_task_is_what_its_name_holds_when_its_test_runs(cells, charged):
    code = Code(parse(cells), context=parse([SETUP]))
    at = 1 if cells[1].endswith("torch.autograd.grad(h1, h1)") else None
    found = judge(RULE["w2_grad"], code, tasks_of("06_gradients"), at=at)
    assert bool(found.broken) == charged, (cells, found)


def test_a_stand_in_is_what_the_other_task_held_at_its_own_test():
    """Issue #48's charge-once: after_cast calling limits is not charged for limits' torch.finfo; but a cheating
    `limits` defined after limits' own test (so never judged as limits) is after_cast's, and charged to it."""
    honest_limits = "def limits(e, m, s=True):\n    return 1.0, 1.0, 1.0, 1.0"
    cheat_limits = "def limits(e, m, s=True):\n    info = torch.finfo(torch.float32)\n    return info.max, 1, 1, 1"
    after_cast = "def after_cast(x, e, m):\n    return min(x, limits(e, m)[0])"
    rule = RULE["after_cast"]
    charged_once = Code(parse([cheat_limits, after_cast]), context=parse([SETUP]))
    assert not judge(rule, charged_once, {"limits": 1, "after_cast": 2, "decode": 0}, at=2).broken
    late = Code(parse([honest_limits, cheat_limits, after_cast]), context=parse([SETUP]))
    assert judge(rule, late, {"limits": 1, "after_cast": 3, "decode": 0}, at=3).broken == \
        ["torch.finfo, reached through your `limits`"]


def test_a_lambda_in_a_class_body_is_read_as_the_method_it_may_be():
    """A class body may bind a lambda to a special method (`__len__ = lambda self: ...`), which Python calls itself:
    the judge reads it (issue #63: mypy found that a lambda there crashed the judge with an AttributeError)."""
    found = verdict("limits", """
        class Box:
            __len__ = lambda self: torch.finfo(torch.float16).bits
        def limits(fmt):
            return len(Box())
        """)
    assert any("torch.finfo" in broken for broken in found.broken), found
    honest = verdict("limits", """
        class Box:
            double = lambda self, x: 2 * x
        def limits(fmt):
            return Box().double(3)
        """)
    assert not honest.broken, honest


def test_generated_corpora_zero_or_flag_every_route_and_never_charge_honest_code():
    """A sample of tests/rule_corpus.py (the whole, measured for docs/security.md, with `python -m tests.rule_corpus`):
    15 generated routes per rule and two honest notebooks per assignment (its solution and its variant)."""
    table = rule_corpus.measure(15, 2, seed=59, every_atom=False)
    missed = [(test, how) for test, row in table.items() for how, _ in row["missed"]]
    charged = [(test, how, broken) for test, row in table.items() for how, broken in row["charged"]]
    flagged = sum(len(row["honest_flagged"]) for row in table.values())
    honest = sum(row["honest"] for row in table.values())
    assert sum(row["routes"] for row in table.values()) >= 600 and honest >= 80
    assert missed == [] and charged == [], (missed[:5], charged[:5])
    assert flagged <= 0.02 * honest, [row["honest_flagged"][:2] for row in table.values() if row["honest_flagged"]]


def test_a_cell_is_read_as_ipython_would_run_it_and_python_without_ipython():
    """parse: a cell that is Python is read as written, without importing IPython (the grader's judge runs in a fresh
    child per submission; the import cost it 0.15 s); one that is not (a %magic, a !shell line, an indented first
    line) is read as IPython rewrites it, the code inside %time and %%capture included."""
    import subprocess
    import sys
    script = ("import sys\nfrom utils.rule_judge import parse\n"
              "cells = parse(['import torch\\nx = torch.ones(3)', 'def f(x):\\n    return x % 2'])\n"
              "print(len(cells), cells.unreadable, 'IPython' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["2", "0", "False"], done.stdout + done.stderr
    cells = parse(["%time y = sum(range(3))", "!ls\nz = 1", "    w = 2", "%%capture\nv = 3", "print(1"])
    assert cells.unreadable == 1
    assigned = {t.id for tree, _ in cells for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    assert {"y", "z", "w", "v"} <= assigned, assigned


def _judged_at(cells: list[str], at: int | None):
    return judge(RULE["w2_grad"], Code(parse(cells), context=parse([SETUP])), tasks_of("06_gradients"), at=at)


def test_a_test_sees_every_statement_of_the_cells_before_it_and_a_magics_code_in_its_own_cell():
    """A test run after `at` cells sees what their last statements bound, and nothing of the next cell; the code of
    a %time is read inside the cell it is in, which stays one cell (the test after cell 2 sees the cheat of cell 2,
    not the honest def of cell 3)."""
    cheat = "def w2_grad(h1, g):\n    return torch.autograd.grad(h1, h1)"
    honest = "def w2_grad(h1, g):\n    return h1.T @ g"
    for cells, at in ((["x = 1\ny = 2\n" + cheat, honest], 1), (["%time y = 1", cheat, honest], 2),
                      (["%%capture\ny = 1", "z = 2\n" + cheat, honest], 2)):
        assert _judged_at(cells, at).broken == ["torch.autograd"], (cells, at)
        assert _judged_at(cells, None).broken == [], cells             # after every cell: the honest def


@pytest.mark.parametrize("cell", [
    "%%capture --no-stdout\ndef w2_grad(h1, g):\n    return torch.autograd.grad(h1, h1)",
    "%time w2_grad = torch.autograd.grad",
    "%prun -q w2_grad = torch.autograd.grad",                       # issue #63: a line with options was not read
    "%prun -s cumulative -q w2_grad = torch.autograd.grad",
    "%%timeit -n 1 w2_grad = torch.autograd.grad\nx = 1",
])
def test_the_code_a_magic_runs_is_read_past_its_options(cell):
    """A magic that runs code in the notebook (%time, %timeit, %prun, %%capture) binds what that code binds, options
    or not: IPython runs what follows them (%prun -q runs its statement in the notebook's namespace)."""
    found = verdict("w2_grad", cell)
    assert found.broken == ["torch.autograd"] and not found.dynamic, found


def test_options_are_not_read_as_code_that_breaks_a_rule():
    found = verdict("w2_grad", "%timeit -n 10 -r 3 w2_grad(1, 2)\ndef w2_grad(h1, g):\n    return h1.T @ g")
    assert not found.broken and not found.dynamic, found
    cells = parse(["%timeit -n 10 -r 3 f(x)", "%%capture --no-stdout\ny = 1"])
    assert [text for _, text in cells][1::2] == ["f(x)", "y = 1\n"] and cells.unreadable == 0


def test_what_code_outside_the_notebook_calls_back_is_flagged_never_charged():
    """A helper handed to a library call (numpy calls it back) runs only through code the judge cannot read: what it
    reaches is flagged for a person, not charged; the same helper called by the task itself is charged."""
    helper = "def helper(x):\n    return torch.autograd.grad(x.sum(), x)\n"
    found = verdict("w2_grad", helper + "def w2_grad(h1, g):\n    return np.vectorize(helper)(h1)")
    assert found.broken == [] and found.dynamic == ["torch.autograd, reached through your `helper`, reached through code "
                                                    "the grader cannot follow"], found
    assert verdict("w2_grad", helper + "def w2_grad(h1, g):\n    return helper(h1)").broken == \
        ["torch.autograd, reached through your `helper`"]


@pytest.mark.parametrize("call", ["np.apply_along_axis(helper, 0, h1)", "torch.utils.checkpoint.checkpoint(helper, h1)",
                                  "np.vectorize(helper)(h1)"])
def test_a_helper_a_library_calls_during_the_call_is_flagged(call):
    """Issue #63: a helper handed to a library that calls it at once (numpy's apply_along_axis, torch's checkpoint)
    passed unflagged: the judge followed a function handed out only when what the library returned was called."""
    found = verdict("w2_grad", "def helper(x):\n    return torch.autograd.grad(x.sum(), x)\n"
                               f"def w2_grad(h1, g):\n    return {call}")
    assert found.broken == [] and found.dynamic == ["torch.autograd, reached through your `helper`, reached through "
                                                    "code the grader cannot follow"], found


def test_a_task_bound_to_what_a_library_returned_is_flagged():
    found = verdict("w2_grad", "w2_grad = np.vectorize(lambda h1, g: h1)")
    assert not found.broken and found.dynamic == ["w2_grad is bound to what code outside the notebook returned"], found


@pytest.mark.parametrize("task, code", [
    ("storage_index", "def storage_index(index, strides, offset):\n    getattr(strides, chr(115) + 'tride')\n    return 0"),
    ("get_batch", "def get_batch(data, n):\n    getattr(data, chr(95) + 'array')\n    return data[:n]"),
    ("limits", "def limits(e, m, s=True):\n    getattr(e, chr(114) + 'eal')\n    return 0"),
])
def test_an_attribute_named_at_run_time_is_flagged_for_a_person(task, code):
    """getattr with a name built at run time (`chr(115) + 'tride'` is `stride`): whatever the rule, a person looks."""
    found = verdict(task, code)
    assert not found.broken and found.dynamic == ["an attribute named at run time"], found


def test_the_message_names_the_first_four_things_a_task_uses():
    found = verdict("storage_index", "def storage_index(index, strides, offset):\n    x = torch.ones(2)\n"
                    "    return x.stride(), x.storage_offset(), x.is_contiguous(), x.view(2), x.reshape(2)")
    assert found.broken == [".stride", ".storage_offset", ".is_contiguous", ".view", ".reshape"], found
    assert found.message(RULE["storage_index"]) == (
        "storage_index uses .stride; .storage_offset; .is_contiguous; .view, which this task rules out\n"
        "Hint: " + RULE["storage_index"].why)


@pytest.mark.parametrize("task, code, broken", [
    ("storage_index", "from torch import reshape as _r\ndef storage_index(index, strides, offset):\n"
                      "    return _r(index, (-1,))", [".reshape"]),                  # a forbidden method by its name
    ("row_major_strides", "import numpy\ndef row_major_strides(shape):\n"
                          "    return [int(numpy.prod(shape[i + 1:])) for i in range(len(shape))]", []),  # `numpy` itself
])
def test_a_function_named_like_a_forbidden_method_breaks_the_rule_and_a_module_so_named_does_not(task, code, broken):
    """torch.reshape imported under another name is the method the rule forbids; the module `numpy` is no `.numpy()`."""
    found = verdict(task, code)
    assert found.broken == broken and not found.dynamic, found


@pytest.mark.parametrize("held, dynamic", [
    ("torch.autograd.grad", ["torch.autograd, reached through code the grader cannot follow"]),
    ("eval('torch.autograd.grad')", ["code built or names read at run time (eval)", "eval()",
                                     "eval(), reached through code the grader cannot follow"]),
])
def test_what_a_library_hands_back_and_the_task_calls_is_flagged_as_reached_through_it(held, dynamic):
    """A forbidden name (or a value built at run time) handed to a library whose result the task calls: the call
    goes through code the grader cannot follow, and the person who looks is told so."""
    found = verdict("w2_grad", f"def w2_grad(h1, g):\n    return np.vectorize({held})(h1, h1)")
    assert found.dynamic == dynamic, found


@pytest.mark.parametrize("resolver", [
    "import logging.config\n_f = logging.config.BaseConfigurator({}).resolve('torch.autograd.grad')",
    "from unittest import mock\n_f = mock._importer('torch.autograd').grad",
])
def test_a_name_given_as_a_string_to_a_resolver_is_flagged(resolver):
    """Red team, 2026-11-30: logging.config's resolver turned 'torch.autograd.grad' into the function, and the judge,
    which reads no strings, took what it returned for data: now what such a resolver returns is reflection."""
    found = verdict("w2_grad", f"{resolver}\ndef w2_grad(h1, g):\n    return _f((h1 * g).sum(), h1)")
    assert found.dynamic, found


def test_a_task_bound_to_another_task_s_function_is_judged_on_that_function():
    """A stand-in is another task's code; a task whose own name holds that same function runs it, and is charged."""
    cells = ["def limits(e, m, s=True):\n    info = torch.finfo(torch.float32)\n    return info.max, 1, 1, 1",
             "after_cast = limits"]
    found = judge(RULE["after_cast"], Code(parse(cells), context=parse([SETUP])), tasks_of("01_floats"))
    assert found.broken == ["torch.finfo, reached through your `limits`"], found


@pytest.mark.parametrize("cell", ["%run -i cheat.py", "%load_ext cheat", "%macro m 1", "%store -r after_cast",
                                  "get_ipython().run_cell(open('cheat.py').read())", "%config Completer.x = 1",
                                  "get_ipython().run_line_magic(''.join(['r', 'un']), '-i cheat.py')"])
def test_a_magic_that_runs_code_the_judge_cannot_read_is_flagged(cell):
    """Red team (issue #63): an honest-looking after_cast, then `%run -i` of a file the notebook wrote rebinding it with
    torch.finfo, earned full marks unflagged. Any magic outside READABLE_MAGICS (an allow-list), or get_ipython()
    used other than through its magics, is flagged for a person; the honest cell alone is not."""
    honest = "def after_cast(x, dtype):\n    return x.to(dtype)"
    assert verdict("after_cast", honest).dynamic == []
    flagged = verdict("after_cast", honest, "open('cheat.py', 'w').write('x = 1')\n" + cell)
    assert flagged.broken == [] and any("runs code the grader cannot read" in d for d in flagged.dynamic), flagged
    for readable in ("%timeit -n 1 -r 1 after_cast(torch.ones(1), torch.float16)", "%matplotlib inline", "!ls"):
        assert verdict("after_cast", honest, readable).dynamic == [], readable
