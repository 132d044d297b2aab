"""The course's policy: what each task may not use (`RULES`, with the hint a student reads), checked on the task's code
itself by the judge (utils/rule_judge.py), which knows no task: adding a rule changes this file only.

The grader judges the submitted cells outside the student's process; the visible tests
run the same judgement in the notebook (`check_rule`), so that a student sees at once what grading will say.

Judged from the text here: every rule in `RULES` (what a task may call or reach). Measured by the kernel at run time
instead, by the grader from outside the student's process, against budgets the instructor declares beside the
hidden tests:
what a task's code costs: exercise 3's `sliding_windows` (peak memory: a view, not a copy), exercise 8's
`get_batch` (bytes read of a real memmap file: only the batch's pages; this replaced the text rule's only run-time
stand-in, a counting array-like whose insides a student could open) and exercise 9's `mlp_activation_bytes` (an MLP
forward pass's peak memory against the student's own prediction).
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

from utils.rule_judge import Code as Judged
from utils.rule_judge import Rule, RuleSet, globals_named, judge, notebook_cells, parse


def check_rule(assignment: str, test: str, fn: Callable) -> None:
    """The visible side of a task's rule: AssertionError with the rule it breaks, as grading will decide; a warning
    printed when the code reaches names built at run time (grading flags those for a person)."""
    rule = RULES.get((assignment, test))
    if rule is None:
        return
    tasks = tasks_of(assignment)
    verdict = judge(rule, Code(parse(notebook_cells(fn)), known=globals_named(fn), entries=tasks), tasks)
    if verdict.broken:
        raise AssertionError(verdict.message(rule))
    if verdict.dynamic:
        print(f"Note: {rule.task} reaches {', '.join(verdict.dynamic[:3])}, which grading cannot read from the code: "
              "it will be flagged for your instructor to look at.")


# ---- the rules ----------------------------------------------------------------------------------------------------
# What each exercise's text says a task may not use (the exercise's intro and the task's own text say it to students).
LAYOUT_ORACLES = ("torch.Tensor.stride", "torch.Tensor.storage_offset", "torch.Tensor.is_contiguous", "torch.Tensor.view",
                  "torch.Tensor.reshape", "torch.Tensor.as_strided", "torch.Tensor.set_", "torch.as_strided",
                  "torch.empty_strided", "torch._prims_common", "utils.strides",
                  # numpy's arrays know their layout too (its strides, flags, in-place reshape, sliding windows)
                  "numpy.lib.stride_tricks", "numpy.ndarray", "torch.from_numpy")
LAYOUT_METHODS = ("stride", "storage_offset", "is_contiguous", "view", "reshape", "as_strided", "set_", "strides",
                  "flags", "numpy")
# Every tool that counts by running the operations: torch's FLOP counter, its profiler's with_flops (the red team of
# issue #63 summed its events), and the modes one would build a counter of one's own from.
FLOP_COUNTERS = ("torch.utils.flop_counter", "utils.flops.FlopCounterMode", "utils.flops.count_flops",
                 "torch.profiler", "torch.autograd.profiler", "torch.autograd.profiler_util", "torch._C._profiler",
                 "torch.utils._python_dispatch", "torch.overrides")
AUTOGRAD = ("torch.autograd", "torch.func", "torch._functorch", "utils.gradients.autograd_linear_grads",
            "utils.gradients.autograd_two_layer_grads", "utils.gradients.autograd_linear_stack_grads",
            "utils.gradients.autograd_linear_stack_activation_grads")
# The autograd engine's own doors, whatever holds them: a tensor's backward, its graph's nodes (calling one runs its
# backward formula), the engine object.
ENGINE = ("backward", "grad_fn", "next_functions", "run_backward", "_execution_engine", "register_hook",
          "register_post_accumulate_grad_hook", "retain_grad")
READY_OPTIMIZERS = ("torch.optim.SGD", "torch.optim.Adagrad", "torch.optim.Adam", "torch.optim.AdamW",
                    "torch.optim.RMSprop", "torch.optim.Adamax", "torch.optim.NAdam", "torch.optim.RAdam",
                    "torch.optim.ASGD", "torch.optim.Rprop", "torch.optim.LBFGS", "torch.optim.Adadelta",
                    "torch.optim.SparseAdam", "torch.optim.sgd", "torch.optim.adagrad", "torch.optim.adam",
                    "torch.optim.adamw", "torch.optim.rmsprop", "torch.optim._functional", "utils.optimizers",
                    "utils.optimizer_checks")
# Every torch route that moves axes or contracts them, which is what these tasks ask of einops: layout changes, products
# of any name, gluing slices back together, a strided view, numpy's arrays. Splitting one axis into pieces (chunk,
# unbind, split, indexing) is left to the student: it moves nothing.
EINOPS_ONLY = ("view", "reshape", "permute", "transpose", "movedim", "moveaxis", "swapaxes", "swapdims", "flatten",
               "unflatten", "einsum", "matmul", "bmm", "mm", "T", "mT", "@", "mH", "H", "adjoint", "as_strided", "unfold",
               "tensordot", "inner", "outer", "vecdot", "dot", "vdot", "mv", "addmm", "baddbmm", "addbmm", "addmv",
               "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "nanmean", "nansum", "numpy",
               "from_numpy",
               # their in-place and "_as" forms, and the modules (red team, 2026-11-30: view_as, transpose_ went unseen)
               "view_as", "reshape_as", "transpose_", "swapaxes_", "swapdims_", "t", "t_", "align_to", "align_as",
               "Flatten", "Unflatten")
# What contracts or totals an axis without naming it as a product: a sum of a broadcast product, a running total
# (red team: (q.unsqueeze(-2) * k.unsqueeze(-3)).sum(-1) for the scores, cumsum(1)[:, -1] for a sum).
TOTALS = ("sum", "mean", "cumsum", "cumprod", "prod", "logcumsumexp")
AUTOCASTS = ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode", "torch.cpu.amp.autocast",
             "torch.cuda.amp.autocast", "torch.set_autocast_enabled")
GRAD_SCALERS = ("torch.amp.GradScaler", "torch.amp.grad_scaler", "torch.cuda.amp.GradScaler", "torch.cpu.amp.GradScaler",
                "torch._amp_foreach_non_finite_check_and_unscale_", "torch._amp_update_scale_")
FLOAT_ORACLES = ("torch.finfo", "numpy.finfo", "utils.floats")
MACHINE_QUERIES = ("torch.cuda", "torch.backends", "torch.accelerator", "torch.mps", "utils.device", "utils.transfer",
                   "utils.units")
GRADIENT_COUNTERS = ("utils.gradients.count_two_layer_flops", "utils.gradients.count_linear_stack_flops")
_FROM_THE_SHAPE = (("torch.nn", "torch.utils.flop_counter", "utils.models", "utils.gpt", "utils.flops", "utils.planning"),
                   ("parameters", "named_parameters"))

_YOURSELF = "this task asks you to work it out yourself; the lecture shows how."
_FROM_BITS = "work it out from the format's bits, as the lecture's sections on the formats do."
_ARGUMENTS = "work it out from the arguments you are given, not by asking this machine or the course's helpers."
_SHAPE = "count from the shape, as the lecture's accounting does: no model to build, no counter to run."
_LAYOUT = "work the layout out yourself, in plain Python (the lecture's sections on strides show how)."
_OWN_UPDATE = "write the update rule yourself, in a subclass of torch.optim.Optimizer (the lecture's SGD shows the shape)."
_BY_HAND = "write the gradient by hand, as the lecture's backward pass does; autograd is for checking, in a scratch cell."
_EINOPS = "this task is einops only: do the rearranging and the products with rearrange, reduce or einsum."
RULES: dict[tuple[str, str], Rule] = {
    ("01_floats", "test_decode"): Rule("decode", FLOAT_ORACLES, why=_FROM_BITS),
    ("01_floats", "test_limits"): Rule("limits", FLOAT_ORACLES, why=_FROM_BITS),
    ("01_floats", "test_tensor_nbytes"): Rule("tensor_nbytes", ("utils.units",), why=_YOURSELF),
    ("01_floats", "test_after_cast"): Rule("after_cast", FLOAT_ORACLES, why=_FROM_BITS),
    ("02_tensors_on_gpu", "test_pick_device"): Rule("pick_device", MACHINE_QUERIES, why=_ARGUMENTS),
    ("02_tensors_on_gpu", "test_allocated_bytes"): Rule("allocated_bytes", MACHINE_QUERIES, why=_ARGUMENTS),
    ("02_tensors_on_gpu", "test_to_copies"): Rule("to_copies", MACHINE_QUERIES, why=_ARGUMENTS),
    ("02_tensors_on_gpu", "test_copy_gb_per_s"): Rule("copy_gb_per_s", ("utils.timing.time_it",
                                                                        "utils.transfer.copy_bandwidth"),
                                                       why="time the copies yourself with the clock you are given."),
    ("03_strides_views", "test_storage_index"): Rule("storage_index", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("03_strides_views", "test_row_major_strides"): Rule("row_major_strides", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("03_strides_views", "test_is_contiguous"): Rule("is_contiguous", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("03_strides_views", "test_slice_metadata"): Rule("slice_metadata", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("03_strides_views", "test_sliding_windows"): Rule("sliding_windows", ("torch.Tensor.unfold", "numpy.lib.stride_tricks",
                                                                           "torch.from_numpy"), ("unfold", "numpy"),
                                                       why="build the view with as_strided, from x's own stride and offset."),
    ("03_strides_views", "test_can_view"): Rule("can_view", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("04_einops_jaxtyping", "test_split_qkv"): Rule("split_qkv", ("torch.einsum", "torch.functional"), EINOPS_ONLY,
                                                     needs=("einops",), why=_EINOPS),
    ("04_einops_jaxtyping", "test_merge_heads"): Rule("merge_heads", ("torch.einsum", "torch.functional"), EINOPS_ONLY,
                                                       needs=("einops",), why=_EINOPS),
    ("04_einops_jaxtyping", "test_attention_scores"): Rule("attention_scores", ("torch.einsum", "torch.functional",
                                                                                "torch.nn.functional"),
                                                           EINOPS_ONLY + TOTALS, needs=("einops",), why=_EINOPS),
    ("04_einops_jaxtyping", "test_checked_masked_mean"): Rule("checked_masked_mean", ("torch.einsum", "torch.functional",
                                                                                      "torch.mean", "torch.sum"),
                                                              EINOPS_ONLY + TOTALS, needs=("einops",), why=_EINOPS),
    ("05_flops_mfu", "test_matmul_flop_count"): Rule("matmul_flop_count", FLOP_COUNTERS + ("utils.flops.matmul_flops",),
                                                      why="count the multiply-adds from the shapes yourself."),
    ("05_flops_mfu", "test_linear_model_flops"): Rule("linear_model_flops", FLOP_COUNTERS + (
        "utils.flops.matmul_flops", "utils.flops.linear_flops"), why="count from the shapes, with your matmul_flop_count."),
    ("05_flops_mfu", "test_matmul_intensity"): Rule("matmul_intensity", FLOP_COUNTERS,
                                                     why="FLOPs from your matmul_flop_count, bytes from the shapes."),
    ("06_gradients", "test_w2_grad"): Rule("w2_grad", AUTOGRAD, ENGINE, private_of=("torch",), why=_BY_HAND),
    ("06_gradients", "test_h1_grad"): Rule("h1_grad", AUTOGRAD, ENGINE, private_of=("torch",), why=_BY_HAND),
    ("06_gradients", "test_two_layer_grads"): Rule("two_layer_grads", AUTOGRAD, ENGINE, private_of=("torch",),
                                                   why=_BY_HAND),
    ("06_gradients", "test_two_layer_flops"): Rule("two_layer_flops", FLOP_COUNTERS + GRADIENT_COUNTERS,
                                                    why="count the matmuls of the forward and backward passes yourself."),
    ("06_gradients", "test_stack_grads"): Rule("stack_grads", AUTOGRAD, ENGINE, private_of=("torch",), why=_BY_HAND),
    ("06_gradients", "test_stack_flops"): Rule("stack_flops", FLOP_COUNTERS + GRADIENT_COUNTERS,
                                                why="count the matmuls of the forward and backward passes yourself."),
    ("07_models_optimizers", "test_MomentumSGD"): Rule("MomentumSGD", READY_OPTIMIZERS, private_of=("torch",), why=_OWN_UPDATE),
    ("07_models_optimizers", "test_AdaGrad"): Rule("AdaGrad", READY_OPTIMIZERS, private_of=("torch",), why=_OWN_UPDATE),
    ("07_models_optimizers", "test_AdamW"): Rule("AdamW", READY_OPTIMIZERS, private_of=("torch",), why=_OWN_UPDATE),
    ("07_models_optimizers", "test_state_bytes"): Rule("state_bytes", ("utils.memory",), why=_YOURSELF),
    ("07_models_optimizers", "test_largest_model"): Rule("largest_model", ("utils.memory",), why=_YOURSELF),
    ("08_training_loop", "test_get_batch"): Rule("get_batch", ("utils.training",), private=True,
                                                  why="read the windows through len(data) and data[a:b] only, as a "
                                                      "memmap is read."),
    ("08_training_loop", "test_train"): Rule("train", ("utils.training",), why="write the loop yourself."),
    ("08_training_loop", "test_save_checkpoint"): Rule("save_checkpoint", ("utils.training",), why=_YOURSELF),
    ("08_training_loop", "test_load_checkpoint"): Rule("load_checkpoint", ("utils.training",), why=_YOURSELF),
    ("09_mixed_precision", "test_master_weight_step"): Rule("master_weight_step", ("utils.mixed_precision",),
                                                             why=_YOURSELF),
    ("09_mixed_precision", "test_loss_scaled_step"): Rule("loss_scaled_step", ("utils.mixed_precision",) + GRAD_SCALERS,
                                                           why="scale, unscale and look for inf yourself, without GradScaler."),
    ("09_mixed_precision", "test_next_loss_scale"): Rule("next_loss_scale", ("utils.mixed_precision",) + GRAD_SCALERS,
                                                          why="follow GradScaler's rule yourself, without GradScaler."),
    ("09_mixed_precision", "test_mlp_activation_bytes"): Rule("mlp_activation_bytes", ("utils.mixed_precision",),
                                                               why="count the saved tensors' bytes yourself."),
    ("09_mixed_precision", "test_autocast_dtype"): Rule("autocast_dtype", ("utils.mixed_precision",) + AUTOCASTS,
                                                         why="answer from autocast's rules (the lecture's table), "
                                                             "without running autocast."),
    ("10_accounting_a_training_run", "test_param_count"): Rule("param_count", *_FROM_THE_SHAPE, why=_SHAPE),
    ("10_accounting_a_training_run", "test_training_flops_per_token"): Rule("training_flops_per_token", *_FROM_THE_SHAPE,
                                                                            why=_SHAPE),
    ("10_accounting_a_training_run", "test_memory_per_gpu"): Rule("memory_per_gpu", *_FROM_THE_SHAPE, why=_SHAPE),
    ("10_accounting_a_training_run", "test_training_days"): Rule("training_days", *_FROM_THE_SHAPE, why=_SHAPE),
}


def tasks_of(assignment: str) -> set[str]:
    """The functions of an assignment's rule-bound tasks: in one task's judgement, the others' are stand-ins."""
    return {rule.task for (name, _), rule in RULES.items() if name == assignment}


RULE_SET = RuleSet.of(RULES.values())   # what the judge follows in a notebook: every rule's names and methods


class Code(Judged):
    """A notebook's cells as the judge reads them (utils/rule_judge.py's Code) for this course's rules (RULE_SET)."""

    def __init__(self, modules: Sequence, context: Sequence = (), known: dict[str, str] | None = None,
                 entries: Iterable[str] | None = None):
        super().__init__(modules, context, known, entries, rules=RULE_SET)
