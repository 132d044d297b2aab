"""A small GPT for lecture 10 to account for: a decoder-only transformer in the shape of GPT-2, in few lines.

Token and position embeddings, `num_layers` pre-norm blocks (causal self-attention, then an MLP, each added to the
residual stream), a final layer norm and a head to vocabulary logits. By default (lecture 10's model) the linear
layers have no biases and the head has weights of its own; `bias=True, tied_head=True` gives GPT-2's own choices
(biases everywhere, logits from the token embedding's table). The layer norms keep their weight and bias. Attention is
written as two matmuls instead of `scaled_dot_product_attention`, so that `FlopCounterMode` counts it on a CPU
(it counts 0 for the fused kernel on real CPU tensors) and the scores are a tensor whose bytes we can see.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn


@dataclass(frozen=True)
class GPTConfig:
    """The shape of a GPT: vocabulary, longest sequence (tokens), width, depth, heads, the MLP's hidden width;
    whether its linear layers have biases and whether the head reuses the token embedding's table."""
    vocab_size: int
    context_length: int
    d_model: int
    num_layers: int
    num_heads: int
    d_ff: int
    bias: bool = False
    tied_head: bool = False

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads


class CausalSelfAttention(nn.Module):
    """Multi-head attention in which each position sees itself and the positions before it."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.num_heads = config.num_heads
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=config.bias)   # q, k and v in one matmul
        self.proj = nn.Linear(config.d_model, config.d_model, bias=config.bias)

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        batch, seq, d_model = x.shape
        head_dim = d_model // self.num_heads
        # (batch, seq, 3 * d_model) -> three tensors of (batch, heads, seq, head_dim)
        q, k, v = self.qkv(x).view(batch, seq, 3, self.num_heads, head_dim).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * head_dim ** -0.5                  # (batch, heads, seq, seq)
        future = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(diagonal=1)
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        mixed = (weights @ v).transpose(1, 2).reshape(batch, seq, d_model)    # heads side by side again
        return self.proj(mixed)


class MLP(nn.Module):
    """d_model -> d_ff -> d_model, with a GELU between."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.up = nn.Linear(config.d_model, config.d_ff, bias=config.bias)
        self.down = nn.Linear(config.d_ff, config.d_model, bias=config.bias)

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x)): the pre-norm residual block of GPT-2."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.d_model)
        self.attention = CausalSelfAttention(config)
        self.mlp_norm = nn.LayerNorm(config.d_model)
        self.mlp = MLP(config)

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class GPT(nn.Module):
    """Token ids (batch, seq) -> next-token logits (batch, seq, vocab_size)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.context_length, config.d_model)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.num_layers)])
        self.final_norm = nn.LayerNorm(config.d_model)
        self.head = None if config.tied_head else nn.Linear(config.d_model, config.vocab_size, bias=False)
        for name, param in self.named_parameters():   # GPT-2's init: N(0, 0.02), residual projections scaled down
            if param.dim() == 2:
                std = 0.02 / math.sqrt(2 * config.num_layers) if name.endswith(("proj.weight", "down.weight")) else 0.02
                nn.init.normal_(param, std=std)

    def forward(self, token_ids: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch seq vocab"]:
        positions = torch.arange(token_ids.shape[1], device=token_ids.device)
        x = self.token_embedding(token_ids) + self.position_embedding(positions)
        for block in self.blocks:
            x = block(x)
        x = self.final_norm(x)
        return F.linear(x, self.token_embedding.weight) if self.head is None else self.head(x)
