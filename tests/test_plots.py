"""The floats plots draw what they claim, with a title and labelled axes."""
import matplotlib

matplotlib.use("Agg")

from utils.floats import BF16, FORMATS, FP8_E4M3, FP16
from utils.plots import plot_bit_layouts, plot_dynamic_range, plot_number_line, plot_number_spacing


def labelled(fig) -> bool:
    ax = fig.axes[0]
    return bool(ax.get_title() and ax.get_xlabel())


def test_bit_layouts_draw_every_bit():
    """Each format's row: its sign, exponent and mantissa, in that order, each as wide as its bits and named."""
    fig = plot_bit_layouts(FORMATS)
    ax = fig.axes[0]
    assert labelled(fig) and len(ax.patches) == 3 * len(FORMATS)
    for row, fmt in enumerate(FORMATS):
        bars = ax.patches[3 * row:3 * row + 3]
        assert [bar.get_width() for bar in bars] == [1, fmt.exponent_bits, fmt.mantissa_bits], fmt.name
        assert [bar.get_x() for bar in bars] == [0, 1, 1 + fmt.exponent_bits], fmt.name
        labels = [text.get_text() for text in ax.texts[3 * row:3 * row + 3]]
        assert labels[0] == "S1" and labels[1] in (f"exponent {fmt.exponent_bits}", f"E{fmt.exponent_bits}"), labels
        assert labels[2] in (f"mantissa {fmt.mantissa_bits}", f"M{fmt.mantissa_bits}"), labels
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"{f.name} ({f.total_bits} bits)" for f in FORMATS]


def test_number_line_has_a_tick_per_number():
    fig = plot_number_line(FP8_E4M3, 16)
    assert labelled(fig) and len(fig.axes[0].collections[0].get_segments()) == 88


def test_spacing_and_range_plots():
    fig = plot_number_spacing([FP16, BF16], xlim=(1e-8, 1e5))
    assert labelled(fig) and fig.axes[0].get_ylabel() and fig.axes[0].get_xlim() == (1e-8, 1e5)
    fig = plot_dynamic_range(FORMATS)
    assert labelled(fig) and len(fig.axes[0].patches) == 2 * len(FORMATS)
