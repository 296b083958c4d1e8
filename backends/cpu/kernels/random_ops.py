"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL, MULTINOMIAL: LiteRT's random numbers, the same ones.

As TFLite (``kernels/random_ops.cc``) each node owns a Philox4x32-10 generator (``_counter_rng``)
made from its ``seed`` and ``seed2`` options (their low 32 bits, sign-extended, as TFLite's
``int`` fields hold them) at prepare, so at every allocation that prepares it again, and
drawn on at every invoke: the same seeds give LiteRT's numbers, invoke after invoke. With
both seeds 0 the seeds are random (from the OS), as in TFLite.

- RANDOM_UNIFORM: one uint32 per value, ``Uint32ToFloat`` (float32 in [0, 1)).
- RANDOM_STANDARD_NORMAL: Box-Muller on pairs of uint32: ``u1 = max(Uint32ToFloat(x0), 1e-7)``,
  ``v1 = float(2 * pi * Uint32ToFloat(x1))`` (pi a double), ``u2 = sqrtf(-2 * logf(u1))``,
  then ``sin(v1) * u2`` and ``cos(v1) * u2`` (float32). Four values per Philox block; the
  values past the output's end are drawn and dropped. The one difference from LiteRT: the
  float32 log, sin and cos here are the correctly rounded ones (computed in double, rounded
  once); LiteRT calls glibc's ``logf`` and ``sincosf``, which are off by one unit in the
  last place now and then (and differ between glibc's FMA and plain builds). So about 1.5%
  of the values differ from LiteRT's, by at most 2 float32 ulps (measured on 10**5 draws):
  within the oracle's float tolerance, not bit for bit. The uniform and multinomial draws
  are LiteRT's bits.
- MULTINOMIAL: ``num_samples`` classes per row of float32 ``logits``: the cumulative sums of
  ``exp(logit - max)`` over the finite logits (double), and for each sample a double in
  [0, 1) from two uint32 (``Uint64ToDouble``) times the total, located with ``upper_bound``.
  Drawn from a copy of the generator; the generator itself skips
  ``batch * round_up(num_samples, 4) * 2 * 256`` blocks per invoke, as TFLite's does.

The output shape comes from the shape input (RANDOM_*) or ``[batch, num_samples]``
(MULTINOMIAL); a shape known only at invoke makes the output dynamic.
"""

from __future__ import annotations

import math
import secrets

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._counter_rng import Philox
from schema.enums import BuiltinOperator, TensorType

T = TensorType
BOX_MULLER_EPSILON = np.float32(1.0e-7)


def uint32_to_float(bits: np.ndarray) -> np.ndarray:
    """Floats in [0, 1): 23 random mantissa bits under exponent 0, minus 1 (``Uint32ToFloat``)."""
    return ((bits.astype(np.uint32) & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)).view(np.float32) - np.float32(1)


def uint64_to_double(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Doubles in [0, 1) from 20 bits of ``high`` and 32 of ``low`` (``Uint64ToDouble``)."""
    mantissa = ((high.astype(np.uint64) & np.uint64(0xFFFFF)) << np.uint64(32)) | low.astype(np.uint64)
    return (mantissa | np.uint64(1023 << 52)).view(np.float64) - 1.0


def as_int32(value: int) -> int:
    """An int64 option as TFLite's ``int`` params field holds it (two's complement, low 32 bits)."""
    return (int(value) + 2**31) % 2**32 - 2**31


def seeded_generator(params) -> Philox:
    """The node's generator: its seeds, or two random ones when both are 0 (as TFLite).

    TFLite's ``TfLiteRandomParams`` holds the int64 options in ``int`` fields: only their low
    32 bits count, sign-extended (seed 2**33 is seed 0, seed2 2**31 is -2**31)."""
    seed, seed2 = as_int32(params.seed), as_int32(params.seed2)
    if seed == 0 and seed2 == 0:
        seed, seed2 = secrets.randbits(64), secrets.randbits(64)
    return Philox(seed, seed2)


def box_muller(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 standard normals from two uint32 (TensorFlow's ``BoxMullerFloat``)."""
    u1 = np.maximum(uint32_to_float(x0), BOX_MULLER_EPSILON)
    v1 = (2.0 * math.pi * uint32_to_float(x1).astype(np.float64)).astype(np.float32)
    log_u1 = np.log(u1.astype(np.float64)).astype(np.float32)
    u2 = np.sqrt(np.float32(-2.0) * log_u1)
    angle = v1.astype(np.float64)
    return np.sin(angle).astype(np.float32) * u2, np.cos(angle).astype(np.float32) * u2


class _Random(CpuKernel):
    foldable = False  # a new draw at every invoke

    def start_generator(self) -> None:
        self.generator = seeded_generator(self.params)


class _RandomOfShape(_Random):
    """RANDOM_UNIFORM and RANDOM_STANDARD_NORMAL: float32 values of the shape input's shape."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        shape = self.inputs[0]
        self.require_types(shape, T.INT32, role="shape input")
        if len(shape.shape) != 1:
            raise self.unsupported(f"the shape input {shape.name!r} must be a vector, it has shape {list(shape.shape)}")
        self.require_types(self.outputs[0], T.FLOAT32, role="output")
        self.start_generator()
        if shape.is_constant:
            self.outputs[0].resize(self.output_shape())
        else:
            self.outputs[0].set_dynamic()

    def output_shape(self) -> list[int]:
        dims = [int(d) for d in self.inputs[0].data]
        if any(d < 0 for d in dims):
            raise ValueError(f"{self.op_name}: the shape {dims} has a negative dimension")
        return dims

    def invoke(self) -> None:
        out = self.outputs[0]
        if out.is_dynamic:
            out.set_data(np.empty(self.output_shape(), np.float32))
        count = out.data.size
        values = self.values(self.generator.blocks(-(-count // 4)).reshape(-1))
        out.data.reshape(-1)[:] = values[:count]


# v1: the only version
@register(BuiltinOperator.RANDOM_UNIFORM, 1, 1)
class RandomUniform(_RandomOfShape):
    """RANDOM_UNIFORM v1: float32 in [0, 1)."""

    @staticmethod
    def values(bits: np.ndarray) -> np.ndarray:
        return uint32_to_float(bits)


# v1: the only version
@register(BuiltinOperator.RANDOM_STANDARD_NORMAL, 1, 1)
class RandomStandardNormal(_RandomOfShape):
    """RANDOM_STANDARD_NORMAL v1: float32 standard normals (Box-Muller)."""

    @staticmethod
    def values(bits: np.ndarray) -> np.ndarray:
        first, second = box_muller(bits[0::2], bits[1::2])
        return np.stack([first, second], axis=1).reshape(-1)


# v1: the only version
@register(BuiltinOperator.MULTINOMIAL, 1, 1)
class Multinomial(_Random):
    """MULTINOMIAL v1: ``num_samples`` draws of a class per row of logits (int64 or int32)."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        logits, num_samples = self.inputs
        self.require_types(logits, T.FLOAT32, role="logits input")
        self.require_types(num_samples, T.INT32, role="num_samples input")
        self.require_types(self.outputs[0], T.INT64, T.INT32, role="output")
        if len(logits.shape) != 2 or logits.shape[1] == 0:
            raise self.unsupported(
                f"the logits {logits.name!r} must be [batch, classes] with classes > 0, they have shape {list(logits.shape)}"
            )
        if len(num_samples.shape) != 0:
            raise self.unsupported(f"num_samples {num_samples.name!r} must be a scalar, it has shape {list(num_samples.shape)}")
        self.start_generator()
        if num_samples.is_constant:
            self.outputs[0].resize([logits.shape[0], self.num_samples()])
        else:
            self.outputs[0].set_dynamic()

    def num_samples(self) -> int:
        count = int(self.inputs[1].data)
        if count < 0:
            raise ValueError(f"{self.op_name}: num_samples is {count}; it must be 0 or more")
        return count

    def invoke(self) -> None:
        logits, out = self.inputs[0].data, self.outputs[0]
        batch, count = logits.shape[0], self.num_samples()
        if out.is_dynamic:
            out.set_data(np.empty([batch, count], out.dtype))
        draws = self.generator.copy()
        self.generator.skip(batch * ((count + 3) // 4 * 4) * 2 * 256)
        bits = draws.blocks(-(-batch * count // 2)).reshape(-1, 2)[: batch * count]
        uniform = uint64_to_double(bits[:, 0], bits[:, 1]).reshape(batch, count)
        for row in range(batch):
            cdf = self.cumulative_weights(logits[row])
            out.data[row] = np.searchsorted(cdf, uniform[row] * cdf[-1], side="right")

    @staticmethod
    def cumulative_weights(logits: np.ndarray) -> np.ndarray:
        """``exp(logit - max)`` summed in order in double, finite logits only (the others add 0)."""
        finite = np.isfinite(logits)
        largest = float(logits[finite].max()) if finite.any() else float(np.finfo(np.float32).min)
        weights = [math.exp(float(v) - largest) if ok else 0.0 for v, ok in zip(logits, finite)]  # libm's exp
        return np.add.accumulate(np.array(weights, np.float64))
