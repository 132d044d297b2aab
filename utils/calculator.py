"""The planning calculator: ipywidgets controls for a `utils.planning.Plan`, its answer, and a bar plot of memory.

All arithmetic lives in utils.planning (tested as plain functions); this module only lays out widgets and draws.
ipywidgets already does controls, their layout and re-running on change (`interactive_output`), so nothing of that
is written here.
"""
from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

from utils.memory import STATE_NAMES
from utils.planning import (
    PARTS,
    PLANNABLE_GPUS,
    PRECISIONS,
    Plan,
    days,
    fits,
    gpu_memory,
    largest_model,
    memory_per_gpu,
)
from utils.units import GB

ANSWER_CLASS = "course-plan-answer"   # the browser test finds the answer by this CSS class


def describe(plan: Plan) -> str:
    """The plan's answer as HTML: training days, memory per GPU against the GPU's memory, the largest model that fits."""
    memory = memory_per_gpu(plan)
    total = sum(memory.values())
    verdict = "fits" if fits(plan) else "does NOT fit"
    parts = ", ".join(f"{part} {memory[part] / GB:,.1f}" for part in PARTS)
    return (f"<b>{days(plan):,.1f} days</b> of training on {plan.num_gpus:,} {plan.gpu} at MFU {plan.mfu:.2f} "
            f"({plan.precision}, 6 x params x tokens FLOPs).<br>"
            f"Memory per GPU: {total / GB:,.1f} GB ({parts}) of {gpu_memory(plan) / GB:g} GB: <b>{verdict}</b> "
            f"before activations. Largest model that fits this way: {largest_model(plan) / 1e9:,.1f}B parameters.")


def plot_memory(plan: Plan) -> None:
    """A stacked bar of memory per GPU by part, next to the GPU's memory."""
    memory = memory_per_gpu(plan)
    fig, ax = plt.subplots(figsize=(7, 2.6))
    left = 0.0
    for part in PARTS:
        ax.barh(["per GPU"], [memory[part] / GB], left=left, label=part)
        left += memory[part] / GB
    ax.axvline(gpu_memory(plan) / GB, color="black", linestyle="--", label=f"{plan.gpu} memory")
    ax.set_xlabel("GB (10^9 bytes)")
    ax.set_title("Training state on each GPU (activations not counted)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.4), ncol=4, fontsize=8)
    fig.tight_layout()
    plt.show()


def planning_calculator(params: float = 70e9, tokens: float = 15e12, gpu: str = "H100 SXM", num_gpus: int = 1024,
                        mfu: float = 0.5) -> widgets.VBox:
    """Controls for every input of a Plan, starting at lecture 2's first question; the answer updates on change."""
    style = {"description_width": "150px"}
    controls = {
        # Text boxes, not log sliders: a slider snaps to its steps (70e9 would become 10^10.85 = 70.8e9).
        "params": widgets.BoundedFloatText(value=params / 1e9, min=0.001, max=100_000, step=1,
                                           description="parameters (B)", style=style),
        "tokens": widgets.BoundedFloatText(value=tokens / 1e12, min=1e-6, max=10_000, step=1,
                                           description="tokens (T)", style=style),
        "gpu": widgets.Dropdown(options=PLANNABLE_GPUS, value=gpu, description="GPU", style=style),
        "num_gpus": widgets.BoundedIntText(value=num_gpus, min=1, max=1_000_000, description="number of GPUs",
                                           style=style),
        "mfu": widgets.FloatSlider(value=mfu, min=0.05, max=1.0, step=0.01, description="MFU", style=style),
        "precision": widgets.Dropdown(options=list(PRECISIONS), value="bf16 mixed", description="precision",
                                      style=style),
        "optimizer": widgets.Dropdown(options=list(STATE_NAMES), value="adamw", description="optimizer", style=style),
        "shard_optimizer": widgets.Checkbox(value=False, description="shard optimizer state", indent=False),
        "shard_gradients": widgets.Checkbox(value=False, description="shard gradients", indent=False),
        "shard_parameters": widgets.Checkbox(value=False, description="shard parameters", indent=False),
    }
    answer = widgets.HTML()
    answer.add_class(ANSWER_CLASS)

    def update(params: float, tokens: float, **inputs) -> None:
        plan = Plan(params=params * 1e9, tokens=tokens * 1e12, **inputs)   # billions, trillions
        answer.value = describe(plan)
        plot_memory(plan)

    figure = widgets.interactive_output(update, controls)
    return widgets.VBox([widgets.HBox([widgets.VBox(list(controls.values())[:5]),
                                       widgets.VBox(list(controls.values())[5:])]), answer, figure])


def show_calculator(**start: Any) -> None:
    """Display the calculator (keyword arguments: planning_calculator's, the inputs it starts with)."""
    display(planning_calculator(**start))
