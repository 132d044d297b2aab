"""Small models the later topics share: a linear layer built from nn.Parameter, a deep linear stack, a tiny LM."""
from __future__ import annotations

import math

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn


class Linear(nn.Module):
    """y = x @ weight, with weight ~ N(0, 1/in_features) so outputs neither grow nor shrink with the width."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) / math.sqrt(in_features))

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_out"]:
        return x @ self.weight


class DeepLinear(nn.Module):
    """`num_layers` (dim x dim) linear layers, then a (dim x out_features) head. No biases, no nonlinearity."""

    def __init__(self, dim: int, num_layers: int, out_features: int):
        super().__init__()
        self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])
        self.head = Linear(dim, out_features)

    def forward(self, x: Float[Tensor, "batch dim"]) -> Float[Tensor, "batch out"]:
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class TinyLM(nn.Module):
    """Next-token model: embed each token, a GELU MLP, project back to vocabulary logits (no attention)."""

    def __init__(self, vocab_size: int, dim: int, hidden: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.up = Linear(dim, hidden)
        self.down = Linear(hidden, vocab_size)

    def forward(self, token_ids: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch seq vocab"]:
        return self.down(torch.nn.functional.gelu(self.up(self.embedding(token_ids))))


def count_params(model: nn.Module) -> int:
    """Number of trainable scalars (parameter elements) in `model`."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
