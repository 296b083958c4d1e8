"""How fast numpy can run a float32 depthwise convolution, formulation by formulation.

    python benchmarks/depthwise_formulations.py [--shape 96 96 32] [--kernel 5] [--runs 7]

The float CPU path spends 40-52% of the MediaPipe models' time in DEPTHWISE_CONV_2D
(``cpu_breakdown.py``). This script times, on one thread and one stride-1 layer (default:
mp_palm_detection_lite's [1, 96, 96, 32] with a 5x5 filter), every numpy formulation we
know of, and one float32 BLAS call of the same number of multiply-adds for scale:

- ``taps einsum (ours)``: one ``einsum`` over a strided view of the taps ``[KH, KW, N, OH,
  OW*C]`` with the weights tiled along the output row (``depthwise_conv2d.py``);
- ``taps einsum, weights tiled P times``: the same with the weights tiled over P pixels
  only and broadcast over the rest (less weight traffic, shorter inner loops);
- ``taps einsum, untiled``: the weights not tiled at all (inner loop over C only);
- ``taps einsum per block of 16 columns``: one call per block of output columns;
- ``multiply + add per tap``: two ufunc passes per tap over the whole output;
- ``... per block of 8 rows``: the same with the temporaries kept small.

Every formulation is checked against the first before it is timed. Printed: microseconds
per call (the minimum of ``--runs`` means) and GMAC/s.
"""

from __future__ import annotations

import argparse
import os
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # (before numpy loads BLAS)

import numpy as np
from numpy.lib.stride_tricks import as_strided

try:  # the C implementation behind np.einsum(optimize=False), as the kernel uses it
    from numpy._core.multiarray import c_einsum as einsum
except ImportError:  # pragma: no cover
    einsum = np.einsum


def formulations(height: int, width: int, channels: int, kernel: int):
    """``(name, function, output)`` for each formulation, on one random layer."""
    rng = np.random.default_rng(0)
    padded = rng.standard_normal((1, height + kernel - 1, width + kernel - 1, channels)).astype(np.float32)
    weights = rng.standard_normal((kernel, kernel, channels)).astype(np.float32)
    row, item = width * channels, padded.itemsize
    row_stride = padded.strides[1]
    taps = as_strided(padded, (kernel, kernel, 1, height, row), (row_stride, channels * item, padded.strides[0], row_stride, item))
    tiled = np.ascontiguousarray(np.broadcast_to(weights[:, :, None, :], (kernel, kernel, width, channels))).reshape(kernel, kernel, row)

    def output():
        return np.empty((1, height, row), np.float32)

    found = []
    ours = output()
    found.append(("taps einsum (ours)", lambda: einsum("hwnyr,hwr->nyr", taps, tiled, out=ours), ours))

    for pixels in (4, 16):
        if width % pixels:
            continue
        groups = width // pixels
        taps_p = as_strided(
            padded,
            (kernel, kernel, 1, height, groups, pixels * channels),
            (row_stride, channels * item, padded.strides[0], row_stride, pixels * channels * item, item),
        )
        weights_p = tiled[:, :, : pixels * channels].copy()
        out_p = output()
        rows_p = out_p.reshape(1, height, groups, pixels * channels)
        found.append((
            f"taps einsum, weights tiled {pixels} times",
            lambda t=taps_p, w=weights_p, o=rows_p: einsum("hwnyqr,hwr->nyqr", t, w, out=o),
            out_p,
        ))

    taps_6 = as_strided(
        padded, (kernel, kernel, 1, height, width, channels),
        (row_stride, channels * item, padded.strides[0], row_stride, channels * item, item),
    )
    untiled = output()
    pixels_out = untiled.reshape(1, height, width, channels)
    found.append(("taps einsum, untiled", lambda: einsum("hwnyxc,hwc->nyxc", taps_6, weights, out=pixels_out), untiled))

    blocked = output()
    block = 16 * channels

    def einsum_blocks() -> None:
        for start in range(0, row, block):
            part = slice(start, start + block)
            einsum("hwnyr,hwr->nyr", taps[..., part], tiled[..., part], out=blocked[..., part])

    found.append(("taps einsum per block of 16 columns", einsum_blocks, blocked))

    summed, product = output(), output()

    def per_tap(rows: slice = slice(None)) -> None:
        out, scratch = summed[:, rows], product[:, rows]
        np.multiply(taps[0, 0][:, rows], tiled[0, 0], out=out)
        for ky in range(kernel):
            for kx in range(kernel):
                if ky or kx:
                    np.multiply(taps[ky, kx][:, rows], tiled[ky, kx], out=scratch)
                    np.add(out, scratch, out=out)

    found.append(("multiply + add per tap", per_tap, summed))

    def per_tap_blocks() -> None:
        for start in range(0, height, 8):
            per_tap(slice(start, start + 8))

    found.append(("multiply + add per tap, per block of 8 rows", per_tap_blocks, summed))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=3, default=(96, 96, 32), metavar=("H", "W", "C"))
    parser.add_argument("--kernel", type=int, default=5)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    height, width, channels = args.shape
    macs = height * width * channels * args.kernel**2

    def microseconds(function) -> float:
        number = 5
        return min(timeit.repeat(function, number=number, repeat=args.runs)) / number * 1e6

    print(f"depthwise [1, {height}, {width}, {channels}], {args.kernel}x{args.kernel}, stride 1: {macs / 1e6:.2f} M multiply-adds")
    print(f"{'formulation':48s} {'us':>9s} {'GMAC/s':>8s}")
    expected = None
    for name, function, out in formulations(height, width, channels, args.kernel):
        function()
        if expected is None:
            expected = out.copy()
        else:  # the same sums (the order of the additions may differ)
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4, err_msg=name)
        seconds = microseconds(function)
        print(f"{name:48s} {seconds:9.1f} {macs / seconds / 1e3:8.2f}")

    # For scale: one float32 BLAS call with as many multiply-adds ([M, K] x [K, N]).
    k = n = 64
    m = max(1, macs // (k * n))
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    c = np.empty((m, n), np.float32)
    seconds = microseconds(lambda: np.dot(a, b, out=c))
    print(f"{f'(BLAS sgemm [{m}, {k}] x [{k}, {n}], for scale)':48s} {seconds:9.1f} {m * k * n / seconds / 1e3:8.2f}")


if __name__ == "__main__":
    main()
