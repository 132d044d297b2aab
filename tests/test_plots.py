"""The floats plots draw what they claim, with a title and labelled axes."""
import matplotlib

matplotlib.use("Agg")

from utils.floats import BF16, FORMATS, FP8_E4M3, FP16
from utils.plots import plot_bit_layouts, plot_dynamic_range, plot_number_line, plot_number_spacing


def labelled(fig) -> bool:
    ax = fig.axes[0]
    return bool(ax.get_title() and ax.get_xlabel())


def test_bit_layouts_draw_every_bit():
    fig = plot_bit_layouts(FORMATS)
    widths = sum(patch.get_width() for patch in fig.axes[0].patches)
    assert labelled(fig) and widths == sum(f.total_bits for f in FORMATS)


def test_number_line_has_a_tick_per_number():
    fig = plot_number_line(FP8_E4M3, 16)
    assert labelled(fig) and len(fig.axes[0].collections[0].get_segments()) == 88


def test_spacing_and_range_plots():
    fig = plot_number_spacing([FP16, BF16], xlim=(1e-8, 1e5))
    assert labelled(fig) and fig.axes[0].get_ylabel() and fig.axes[0].get_xlim() == (1e-8, 1e5)
    fig = plot_dynamic_range(FORMATS)
    assert labelled(fig) and len(fig.axes[0].patches) == 2 * len(FORMATS)
