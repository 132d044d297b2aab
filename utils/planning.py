"""Planning a training run on the back of an envelope: how many days it takes and whether it fits on the GPUs.

The rules are the course's rules of thumb, each checked in a lecture:
- training costs about 6 x parameters x tokens FLOPs (lecture 5; lecture 10 measures what it leaves out);
- each GPU delivers its dense peak for the compute dtype (utils.hardware) times the MFU you expect;
- each parameter costs its own bytes, its gradient's, an fp32 master copy in mixed precision, and the optimizer's
  state (lecture 7; utils.memory.bytes_per_param), and each of those three parts can be split evenly across the GPUs
  (sharding, as ZeRO and FSDP do) instead of copied onto every one.
Activations are left out: they depend on the batch and sequence length, which a plan at this level does not fix.
`utils.calculator` puts these functions behind widgets; lecture 10 checks them against a real run.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from utils.flops import SECONDS_PER_DAY
from utils.hardware import MEMORY_BYTES, PEAK_FLOPS, peak_flops
from utils.memory import optimizer_state_bytes

# precision -> (dtype of parameters, gradients and the matmuls, whether an fp32 master copy is kept)
PRECISIONS: dict[str, tuple[torch.dtype, bool]] = {
    "fp32": (torch.float32, False),
    "bf16 mixed": (torch.bfloat16, True),
}
# GPUs a plan can use: both a bf16 and an fp32 peak and a memory size are known.
PLANNABLE_GPUS = [gpu for gpu, peaks in PEAK_FLOPS.items()
                  if gpu in MEMORY_BYTES and torch.bfloat16 in peaks and torch.float32 in peaks]
PARTS = ("parameters", "gradients", "optimizer state")


@dataclass(frozen=True)
class Plan:
    """A training run: model and data size, hardware, expected MFU, precision, optimizer, what is sharded."""
    params: float
    tokens: float
    gpu: str
    num_gpus: int
    mfu: float
    precision: str = "bf16 mixed"
    optimizer: str = "adamw"
    shard_optimizer: bool = False
    shard_gradients: bool = False
    shard_parameters: bool = False


def bytes_per_param_by_part(precision: str, optimizer: str) -> dict[str, int]:
    """Bytes each parameter costs in each part of training memory; the fp32 master copy counts as optimizer state
    (it exists only for the optimizer's update). fp32 AdamW: 4, 4, 8; bf16 mixed AdamW: 2, 2, 4 + 8."""
    dtype, master_weights = PRECISIONS[precision]
    master = torch.float32.itemsize if master_weights else 0
    state = optimizer_state_bytes(1, optimizer) + master
    return {"parameters": dtype.itemsize, "gradients": dtype.itemsize, "optimizer state": state}


def sharded_parts(plan: Plan) -> dict[str, bool]:
    return {"parameters": plan.shard_parameters, "gradients": plan.shard_gradients,
            "optimizer state": plan.shard_optimizer}


def memory_per_gpu(plan: Plan) -> dict[str, float]:
    """Bytes each GPU holds for each part: the part's bytes for the whole model, over num_gpus if it is sharded."""
    per_param = bytes_per_param_by_part(plan.precision, plan.optimizer)
    return {part: per_param[part] * plan.params / (plan.num_gpus if sharded else 1)
            for part, sharded in sharded_parts(plan).items()}


def gpu_memory(plan: Plan) -> float:
    """Bytes of memory on each of the plan's GPUs (data-sheet GB)."""
    return MEMORY_BYTES[plan.gpu]


def fits(plan: Plan) -> bool:
    """Whether the parameters, gradients and optimizer state fit in each GPU's memory (activations not counted)."""
    return sum(memory_per_gpu(plan).values()) <= gpu_memory(plan)


def largest_model(plan: Plan) -> float:
    """The most parameters whose training state fits on each GPU with the plan's precision, optimizer and sharding."""
    one_param = replace(plan, params=1)
    return gpu_memory(plan) / sum(memory_per_gpu(one_param).values())


def cluster_flops_per_second(plan: Plan) -> float:
    """FLOP/s the plan's GPUs deliver together: peak for the compute dtype x MFU x number of GPUs."""
    dtype, _ = PRECISIONS[plan.precision]
    peak = peak_flops(plan.gpu, dtype)
    if peak is None:
        raise ValueError(f"no peak FLOP/s known for {plan.gpu!r} in {dtype} (utils/hardware.py's PEAK_FLOPS lists the "
                         "GPUs and dtypes it knows)")
    return peak * plan.mfu * plan.num_gpus


def total_training_flops(plan: Plan) -> float:
    """FLOPs of the whole run by the 6 x parameters x tokens rule (forward 2, backward 4, per parameter and token)."""
    return 6 * plan.params * plan.tokens


def days(plan: Plan) -> float:
    """Days of training: the run's FLOPs over the cluster's FLOP/s, in days of 86,400 seconds."""
    return total_training_flops(plan) / cluster_flops_per_second(plan) / SECONDS_PER_DAY
