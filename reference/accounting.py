"""Exercise 10 (accounting a training run): GPT-2 on the meta device for torch to count, and the answers.

The hidden tests of tasks 1 and 2 ask torch: they build `gpt2(shape)` on the meta device (shapes only: no memory, no
arithmetic) and count its parameters (`counted_params`) and, with `FlopCounterMode`, the FLOPs of one training step
(`counted_training_flops_per_token`). Counting a large model that way takes a while, so tasks 3 and 4 compare with
the same counts written out (`param_count`, `training_flops_per_token`), which tests/test_accounting_reference.py
checks against torch's. `shape` is anything with the fields of the exercise's `GPT2Shape`.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from utils.flops import SECONDS_PER_DAY
from utils.gpt import GPT, GPTConfig
from utils.hardware import peak_flops

# ZeRO stage -> which of (parameters, gradients, optimizer state) are sharded across the GPUs (Rajbhandari et al.).
ZERO_SHARDS = {0: (False, False, False), 1: (False, False, True), 2: (False, True, True), 3: (True, True, True)}
# Bytes per parameter in bf16 mixed precision with AdamW: bf16 weights, bf16 gradients, fp32 master + two moments.
PARAM_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 2, 4 + 4 + 4


def gpt2(shape) -> GPT:
    """GPT-2 of `shape` on the meta device (tensors with shapes and dtypes but no storage): lecture 10's model
    (utils.gpt) with GPT-2's biases in every Linear and its head tied to the token embedding."""
    config = GPTConfig(shape.vocab_size, shape.context_length, shape.d_model, shape.num_layers, shape.num_heads,
                       shape.d_ff, bias=True, tied_head=True)
    with torch.device("meta"):
        return GPT(config)


def counted_params(shape) -> int:
    """Task 1's oracle: trainable parameters (elements) of the model, as torch counts them."""
    return sum(p.numel() for p in gpt2(shape).parameters() if p.requires_grad)


def counted_training_flops_per_token(shape, batch: int = 1) -> int:
    """Task 2's oracle: FLOPs per token of forward, cross-entropy and backward on `batch` sequences of
    context_length tokens, as FlopCounterMode counts them (matmuls only) on the meta device."""
    model = gpt2(shape)
    token_ids = torch.zeros(batch, shape.context_length, dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as counter:
        logits = model(token_ids)
        F.cross_entropy(logits.flatten(0, 1), token_ids.flatten()).backward()
    tokens = batch * shape.context_length
    flops = counter.get_total_flops()
    assert flops % tokens == 0, (flops, tokens)
    return flops // tokens


def param_count(shape) -> int:
    """Task 1 written out: embeddings V d + s d; per block two LayerNorms (4d), Linear(d, 3d) and Linear(d, d) with
    biases (4d^2 + 4d), Linear(d, f) and Linear(f, d) with biases (2 d f + f + d); the final LayerNorm (2d)."""
    v, s, d, layers, f = shape.vocab_size, shape.context_length, shape.d_model, shape.num_layers, shape.d_ff
    return (v + s) * d + layers * (4 * d * d + 2 * d * f + 9 * d + f) + 2 * d


def training_flops_per_token(shape) -> int:
    """Task 2 written out, FLOPs per token: 2 (forward) + 4 (backward) per matmul weight (4d^2 + 2df per block, and
    the tied head's V d), plus attention's two matmuls over the full s x s square, 2 x 2 s d forward per token and
    block, again x 3 with the backward."""
    v, s, d, layers, f = shape.vocab_size, shape.context_length, shape.d_model, shape.num_layers, shape.d_ff
    return 6 * (layers * (4 * d * d + 2 * d * f) + v * d) + 12 * layers * s * d


def memory_per_gpu(shape, num_gpus: int, zero_stage: int) -> float:
    """Task 3: bytes of model states (bf16 weights and gradients, fp32 master weights and AdamW moments) on each of
    `num_gpus` GPUs, with what ZeRO stage `zero_stage` (0-3) shards divided among them. Activations not counted."""
    if zero_stage not in ZERO_SHARDS:
        raise ValueError(f"ZeRO has stages 0 to 3, not {zero_stage!r}")
    params = param_count(shape)
    return sum(part_bytes * params / (num_gpus if sharded else 1)
               for part_bytes, sharded in zip((PARAM_BYTES, GRAD_BYTES, OPTIMIZER_BYTES), ZERO_SHARDS[zero_stage]))


def training_days(shape, tokens: float, num_gpus: int, device_name: str, mfu: float) -> float | None:
    """Task 4: days to train on `tokens` tokens: the step's FLOPs per token x tokens over num_gpus x bf16 peak
    (FLOP/s) x mfu x 86400 s; None when the device's bf16 peak is unknown."""
    peak = peak_flops(device_name, torch.bfloat16)
    if peak is None:
        return None
    return training_flops_per_token(shape) * tokens / (num_gpus * peak * mfu * SECONDS_PER_DAY)
