import torch

from utils.units import GB, GiB, MiB, bytes_for, format_bytes, tensor_bytes


def test_small_tensor_bytes_match_torch():
    x = torch.zeros(4, 8, dtype=torch.float32)
    assert tensor_bytes(x) == 128 == x.untyped_storage().nbytes()
    for dtype in (torch.float64, torch.bfloat16, torch.float8_e4m3fn, torch.int8, torch.bool, torch.complex64):
        y = torch.zeros(3, 5, dtype=dtype)
        assert bytes_for((3, 5), dtype) == tensor_bytes(y) == y.untyped_storage().nbytes()


def test_gpt3_feed_forward_matrix_without_allocating_it():
    n = bytes_for((4 * 12288, 12288), torch.float32)
    assert n == 2_415_919_104
    assert n / MiB == 2304 and n / GiB == 2.25 and round(n / GB, 2) == 2.42
    assert format_bytes(n) == "2,415,919,104 bytes = 2.42 GB = 2.25 GiB"


def test_views_count_their_elements_not_their_storage():
    x = torch.zeros(10, 10)
    assert tensor_bytes(x[0]) == 40


def test_format_bytes_small_and_scalar():
    assert format_bytes(12) == "12 bytes"
    assert format_bytes(1000) == "1,000 bytes = 1 KB"
    assert format_bytes(2048) == "2,048 bytes = 2.05 KB = 2 KiB"
    assert bytes_for((), torch.float16) == 2 and bytes_for((0, 5), torch.float32) == 0


def test_significant_keeps_the_digits_that_carry_information():
    from utils.units import significant
    assert [significant(x, 2) for x in (2712.4, 27.3, 5.25, 0.0123)] == ["2,700", "27", "5.2", "0.012"]
    assert [significant(x, 3) for x in (726186.0, 18.34, 0.01834, -1234.5)] == ["726,000", "18.3", "0.0183", "-1,230"]
