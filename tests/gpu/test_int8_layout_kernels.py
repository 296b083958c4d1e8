"""The 8-bit data movement kernels (``int8_layout.cu``: PAD, CONCATENATION with rescale
tables) and their numpy twins (``backends/gpu/cuda/int8_layout.py``): each twin computes
what its kernel computes (built for the CPU by the host shim), bit for bit, in one launch
(per 8 concatenated inputs), and both equal numpy's own pad / concatenate and table lookup.
The ops end to end against the oracle are in test_quantized_layout.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu.cuda.int8_layout import ByteConcatenationCuda, BytePadCuda
from kernel_twin import assert_twin_matches, run_both_ways

RNG = np.random.default_rng(3)
SOURCE = "int8_layout.cu"


def full_range(dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize(
    "shape, before, after, value",
    [((2, 3, 4, 5), (0, 1, 2, 0), (1, 0, 3, 2), -7), ((5,), (3,), (0,), 0), ((3, 4), (0, 0), (0, 0), 5), ((1, 2, 3), (2, 2, 2), (1, 1, 1), -128)],
    ids=str,
)
def test_pad_twin_matches_the_kernel_and_numpy(shape, before, after, value, dtype):
    if dtype == np.uint8:
        value = abs(value) % 256
    x = full_range(dtype, shape)
    both = run_both_ways(lambda **where: BytePadCuda(before, after, value, dtype, **where), SOURCE, [x])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.kernel[0], np.pad(x, list(zip(before, after)), constant_values=value))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("count", [1, 2, 6, 8, 11])
@pytest.mark.parametrize("axis", [0, 2, -1])
@pytest.mark.parametrize("rescaled", [False, True], ids=["moved", "rescaled"])
def test_concatenation_twin_matches_the_kernel_and_numpy(axis, count, dtype, rescaled):
    shapes = []
    for k in range(count):
        shape = [2, 3, 4]
        shape[axis] = 1 + k % 3
        shapes.append(tuple(shape))
    inputs = [full_range(dtype, s) for s in shapes]
    tables = np.stack([full_range(dtype, (256,)) for _ in inputs]).view(np.uint8) if rescaled else None
    launches = -(-count // 8)
    both = run_both_ways(lambda **where: ByteConcatenationCuda(axis, **where), SOURCE, [tables, *inputs],
                         call=lambda launcher, tables, *xs: launcher(list(xs), tables))
    assert both.kernel_launches == launches
    assert_twin_matches(both)
    looked_up = inputs if tables is None else [tables[k].view(dtype)[x.view(np.uint8)] for k, x in enumerate(inputs)]
    np.testing.assert_array_equal(both.kernel[0], np.concatenate(looked_up, axis=axis))
