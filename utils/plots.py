"""Pictures for the floats lecture: bit layouts, where the numbers lie, and the range of each format."""
from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from utils.floats import FloatFormat, format_limits, positive_values

FIELD_COLOURS = {"sign": "#d62728", "exponent": "#1f77b4", "mantissa": "#2ca02c"}


def plot_bit_layouts(formats: Sequence[FloatFormat]) -> Figure:
    """One row of cells per format: the sign, exponent and mantissa bits, drawn to scale."""
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(formats) + 1))
    for row, fmt in enumerate(formats):
        fields = (("sign", 1), ("exponent", fmt.exponent_bits), ("mantissa", fmt.mantissa_bits))
        left = 0
        for field, width in fields:
            ax.barh(row, width, left=left, color=FIELD_COLOURS[field], edgecolor="white")
            label = f"{field} {width}" if width >= 6 else f"{field[0].upper()}{width}"
            ax.text(left + width / 2, row, label, ha="center", va="center", color="white", fontsize=9)
            left += width
    ax.set_yticks(range(len(formats)), [f"{f.name} ({f.total_bits} bits)" for f in formats])
    ax.invert_yaxis()
    ax.set_xlabel("bit position (most significant first)")
    ax.set_title("Bit layouts: sign | exponent | mantissa")
    fig.tight_layout()
    return fig


def plot_number_spacing(formats: Sequence[FloatFormat], xlim: tuple[float, float] | None = None) -> Figure:
    """Gap to the next representable number against the number itself (log-log): spacing grows with magnitude.

    `xlim` zooms in on a range of values (bf16 alone spans about 80 decades).
    """
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for fmt in formats:
        values = positive_values(fmt)
        pairs = [(a, b - a) for a, b in zip(values, values[1:]) if xlim is None or xlim[0] <= a <= xlim[1]]
        ax.loglog([a for a, _ in pairs], [gap for _, gap in pairs], ".", markersize=2, label=fmt.name)
    if xlim is not None:
        ax.set_xlim(*xlim)
    ax.set_xlabel("value x (log scale)")
    ax.set_ylabel("gap to the next number (log scale)")
    ax.set_title("Representable numbers thin out as they grow")
    ax.legend(markerscale=6)
    fig.tight_layout()
    return fig


def plot_number_line(fmt: FloatFormat, upper: float) -> Figure:
    """Every representable number of `fmt` in [0, upper] as a tick on a line."""
    values = [v for v in positive_values(fmt) if v <= upper]
    fig, ax = plt.subplots(figsize=(10, 1.6))
    ax.vlines(values, 0, 1, linewidth=0.8)
    ax.set_yticks([])
    ax.set_xlim(0, upper)
    ax.set_xlabel("value")
    ax.set_title(f"The {len(values)} positive {fmt.name} numbers up to {upper:g}")
    fig.tight_layout()
    return fig


def plot_dynamic_range(formats: Sequence[FloatFormat]) -> Figure:
    """Each format's range on a log axis: subnormals (light) from the smallest subnormal, normals up to max."""
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(formats) + 1.2))
    lowest, highest = 0.0, 0.0
    for row, fmt in enumerate(formats):
        limits = format_limits(fmt)
        low, normal, high = (math.log10(x) for x in (limits.smallest_subnormal, limits.smallest_normal, limits.max))
        ax.barh(row, normal - low, left=low, color="#aec7e8", label="subnormal" if row == 0 else None)
        ax.barh(row, high - normal, left=normal, color="#1f77b4", label="normal" if row == 0 else None)
        ax.text(high + 0.5, row, f"max {limits.max:.3g}", va="center", fontsize=9)
        lowest, highest = min(lowest, low), max(highest, high)
    ax.set_xlim(lowest - 2, highest + 12)  # room for the labels
    ax.set_yticks(range(len(formats)), [f.name for f in formats])
    ax.invert_yaxis()
    ax.set_xlabel("log10 of magnitude")
    ax.set_title("Dynamic range: exponent bits buy range, mantissa bits buy precision")
    ax.legend(loc="lower left")
    fig.tight_layout()
    return fig
