"""Seeded mutations of ``.tflite`` models for the fuzz harness (``harness.py``).

A case is a pure function of ``(seed, index)``: ``make_case(corpus, seed, index)`` picks a
seed model and one to three mutations with ``random.Random(f"{seed}:{index}")``, so any
case can be regenerated anywhere (the harness's workers generate their own cases; the
parent regenerates the few it writes as reproducers).

Two families of mutations:

- **raw**: bit flips, byte/int32 overwrites with boundary values, truncation, extension,
  chunk deletion/duplication/insertion, a broken root offset or file identifier. Most of
  them are aimed at the flatbuffer *structure* (the bytes outside the constant-data
  vectors of the ``buffers`` table), where a flip is more than a changed weight.
- **structured**: the file is unpacked with the generated object API
  (``schema_generated.ModelT``), a field is changed, and it is packed again: tensor
  shapes, types, buffers, quantization (scale 0/inf/NaN/negative/denormal, huge zero
  points, bad quantized dimension, length mismatches), sparsity, operator
  input/output/intermediate indices (removed, duplicated, -1, out of range, self-aliased),
  operator codes (version, builtin code, custom code), substituted ops (another op with a
  CPU kernel, with its default options), builtin option fields (out-of-range and huge
  values, mismatched union type), IF/WHILE/CALL_ONCE subgraph indices, subgraph
  inputs/outputs, operator/tensor/subgraph/buffer list structure, signature defs,
  metadata and the schema version.

Every mutated model is at most ``len(seed) + MAX_GROWTH`` bytes.
"""

from __future__ import annotations

import fnmatch
import math
import pathlib
import random
import re
import struct
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import flatbuffers
import numpy as np

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(REPO_ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "tests"))  # model_helpers
MODELS_DIR = REPO_ROOT / "tests" / "data" / "models"

#: A mutated model is at most this many bytes larger than its seed.
MAX_GROWTH = 64 * 1024
#: Seeds above this size are picked less often (they take ~1 s per case).
LARGE_SEED_BYTES = 512 * 1024
LARGE_SEED_WEIGHT = 0.25
#: Probability that a case uses structured (object API) mutations rather than raw bytes.
STRUCTURED_PROBABILITY = 0.75


# -- the seed corpus ------------------------------------------------------------------------


@dataclass
class Seed:
    name: str  #: "converter/pad_float32.tflite", "real/...", "gen/while_counting"
    data: bytes
    weight: float
    _structure: list[tuple[int, int]] | None = field(default=None, repr=False)

    def structure_ranges(self) -> list[tuple[int, int]]:
        """Byte ranges of the file that are not constant data (the flatbuffer tables,
        vtables, vectors of indices, strings): where a raw mutation changes structure."""
        if self._structure is None:
            self._structure = _structure_ranges(self.data)
        return self._structure


def generated_models() -> dict[str, bytes]:
    """Small control-flow models (IF, WHILE, CALL_ONCE, variables), written with the
    project's ModelBuilder: the control-flow models of tests/model_helpers.py (which
    tests/cpu/test_control_flow.py runs against LiteRT) and a few of its own."""
    from model_helpers import (
        call_once_empty_model,
        counting_loop_model,
        if_model,
        read_then_assign_model,
        reshape_subgraph,
        unary_subgraph,
        while_with_if_model,
    )
    from schema.builder import ModelBuilder
    from schema.enums import BuiltinOperator as Op

    def two_signatures() -> bytes:
        """Two entry points (subgraph 0 and 1), each with a signature def."""
        builder = ModelBuilder()
        main = builder.subgraph()
        x = main.add_input("x", [1, 4])
        y = main.add_tensor("y", [1, 4])
        main.add_operator(Op.TANH, [x], [y])
        main.add_output(y)
        builder.add_signature("tanh", main)
        other = unary_subgraph(builder, Op.LOGISTIC, [1, 4])
        builder.add_signature("logistic", other)
        return builder.build()

    return {
        "gen/if_relu_or_clamp": if_model(
            lambda b: unary_subgraph(b, Op.RELU, [2, 3]), lambda b: unary_subgraph(b, Op.RELU_N1_TO_1, [2, 3])
        ),
        "gen/if_reshape_branches": if_model(
            lambda b: reshape_subgraph(b, [2, 3], [3, 2]), lambda b: reshape_subgraph(b, [2, 3], [6, 1]), out_shape=(3, 2)
        ),
        "gen/while_counting": counting_loop_model(),
        "gen/while_growing": counting_loop_model(grow=True),
        "gen/while_nested_if": while_with_if_model(),
        "gen/call_once_variables": read_then_assign_model(),
        "gen/call_once_empty": call_once_empty_model(),
        "gen/two_signatures": two_signatures(),
    }


def load_corpus(models: str | None = None, *, generated: bool = True) -> list[Seed]:
    """Every ``.tflite`` under tests/data/models (named relative to it) and the generated
    control-flow models (``gen/...``), sorted by name; ``models`` is an fnmatch pattern
    (or several, comma-separated) on those names, e.g. ``converter/*``, ``gen/*,*int8*``."""
    seeds: dict[str, bytes] = {}
    for path in sorted(MODELS_DIR.rglob("*.tflite")):
        seeds[path.relative_to(MODELS_DIR).as_posix()] = path.read_bytes()
    if generated:
        seeds.update(generated_models())
    patterns = [p.strip() for p in (models or "*").split(",") if p.strip()]
    chosen = [
        Seed(name, data, LARGE_SEED_WEIGHT if len(data) > LARGE_SEED_BYTES else 1.0)
        for name, data in sorted(seeds.items())
        if any(fnmatch.fnmatch(name, p) for p in patterns)
    ]
    if not chosen:
        raise SystemExit(f"no seed model matches {models!r} (names look like 'converter/pad_float32.tflite', 'gen/while_counting')")
    return chosen


# -- cases ----------------------------------------------------------------------------------


@dataclass
class Case:
    seed: int
    index: int
    seed_name: str
    data: bytes
    mutations: list[str]

    @property
    def case_id(self) -> str:
        return f"{self.seed}:{self.index}"


def case_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"litedelegate-fuzz:{seed}:{index}")


def make_case(corpus: list[Seed], seed: int, index: int) -> Case:
    """The mutated model of case ``index`` of run ``seed`` (deterministic)."""
    rng = case_rng(seed, index)
    source = rng.choices(corpus, weights=[s.weight for s in corpus])[0]
    limit = len(source.data) + MAX_GROWTH
    count = rng.choice((1, 1, 1, 2, 2, 3))
    data, mutations = source.data, []
    if rng.random() < STRUCTURED_PROBABILITY:
        result = structured_mutation(source.data, rng, count)
        if result is not None:
            data, mutations = result
        if rng.random() < 0.1:  # now and then a raw mutation on top
            data, description = raw_mutation(data, rng, None)
            mutations.append(description)
    if not mutations:
        for _ in range(count):
            data, description = raw_mutation(data, rng, source)
            mutations.append(description)
    if len(data) > limit:
        data = data[:limit]
        mutations.append(f"raw: cut to the size bound {limit}")
    return Case(seed, index, source.name, bytes(data), mutations)


# -- raw mutations --------------------------------------------------------------------------

INT32_VALUES = (0, 1, -1, 2, 3, 4, 7, 8, 16, 127, 128, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
                0x7FFFFFFF, -0x80000000, 0x7FFFFFFE, 0x3FFFFFFF, 1 << 20, 1 << 24)


def _structure_ranges(data: bytes) -> list[tuple[int, int]]:
    from schema import schema_generated as fb

    size = len(data)
    try:
        model = fb.Model.GetRootAs(data, 0)
        holes = []
        for i in range(model.BuffersLength()):
            table = model.Buffers(i)._tab
            offset = table.Offset(4)
            if offset:
                start = table.Vector(offset)
                holes.append((start, start + table.VectorLen(offset)))
    except Exception:
        return [(0, size)]
    ranges, position = [], 0
    for start, end in sorted(holes):
        if start > position:
            ranges.append((position, min(start, size)))
        position = max(position, end)
    if position < size:
        ranges.append((position, size))
    return [r for r in ranges if r[1] > r[0]] or [(0, size)]


def _position(rng: random.Random, data: bytes, seed: Seed | None, align: int = 1) -> int:
    """A byte offset: in the structure of the seed (80%) or anywhere."""
    if seed is not None and rng.random() < 0.8:
        ranges = seed.structure_ranges()
        start, end = rng.choices(ranges, weights=[e - s for s, e in ranges])[0]
        position = rng.randrange(start, end)
        if position >= len(data):  # an earlier mutation made the file shorter
            position = rng.randrange(len(data))
    else:
        position = rng.randrange(len(data))
    return position - position % align


def raw_mutation(data: bytes, rng: random.Random, seed: Seed | None) -> tuple[bytes, str]:
    """One raw mutation of ``data``; ``seed`` (when ``data`` is the seed's bytes) aims it."""
    buf = bytearray(data)
    if len(buf) < 16:
        extra = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        return bytes(buf) + extra, f"raw: extend a tiny file by {len(extra)} random bytes"
    kind = rng.choices(
        ("flip", "byte", "int32", "delta", "truncate", "extend", "delete", "duplicate", "insert", "header"),
        weights=(20, 10, 20, 10, 8, 4, 8, 6, 6, 3),
    )[0]
    if kind == "flip":
        flips = rng.choice((1, 1, 2, 4, 8, 16))
        spots = []
        for _ in range(flips):
            position, bit = _position(rng, buf, seed), rng.randrange(8)
            buf[position] ^= 1 << bit
            spots.append(f"{position}.{bit}")
        return bytes(buf), f"raw: flip bit(s) {','.join(spots[:8])}"
    if kind == "byte":
        position = _position(rng, buf, seed)
        value = rng.choice((0, 1, 0x7F, 0x80, 0xFF, 0xFE, rng.randrange(256)))
        buf[position] = value
        return bytes(buf), f"raw: byte {position} = {value:#x}"
    if kind in ("int32", "delta"):
        position = _position(rng, buf, seed, align=4)
        if position + 4 > len(buf):
            position = len(buf) - 4 - (len(buf) - 4) % 4
        old = struct.unpack_from("<i", buf, position)[0]
        if kind == "int32":
            value = rng.choice(INT32_VALUES)
        else:
            value = old + rng.choice((-8, -4, -2, -1, 1, 2, 4, 8, 12, 16, 64, -64))
            value = max(-(1 << 31), min((1 << 31) - 1, value))
        struct.pack_into("<i" if value < (1 << 31) else "<I", buf, position, value)
        return bytes(buf), f"raw: int32 at {position}: {old} -> {value}"
    if kind == "truncate":
        length = rng.choice((rng.randrange(len(buf)), rng.randrange(64), len(buf) - rng.randint(1, 16)))
        return bytes(buf[: max(0, length)]), f"raw: truncate to {max(0, length)} bytes"
    if kind == "extend":
        count = rng.choice((1, 4, 16, 256, 4096))
        fill = rng.choice(("zeros", "random", "ff"))
        extra = bytes(count) if fill == "zeros" else b"\xff" * count if fill == "ff" else bytes(rng.randrange(256) for _ in range(count))
        return bytes(buf) + extra, f"raw: extend by {count} {fill} bytes"
    if kind == "delete":
        position = _position(rng, buf, seed)
        count = rng.choice((1, 2, 4, 8, 16, 64))
        del buf[position : position + count]
        return bytes(buf), f"raw: delete {count} bytes at {position}"
    if kind == "duplicate":
        start = _position(rng, buf, seed)
        count = rng.choice((4, 8, 16, 64, 256))
        chunk = bytes(buf[start : start + count])
        at = _position(rng, buf, seed)
        buf[at:at] = chunk
        return bytes(buf), f"raw: copy {len(chunk)} bytes from {start} to {at}"
    if kind == "insert":
        at = _position(rng, buf, seed)
        count = rng.choice((1, 4, 8, 32))
        buf[at:at] = bytes(rng.randrange(256) for _ in range(count))
        return bytes(buf), f"raw: insert {count} random bytes at {at}"
    # header: the root offset or the file identifier
    if rng.random() < 0.6:
        value = rng.choice((0, 4, 8, len(buf) - 4, len(buf), len(buf) + 4, 0xFFFFFFFF, struct.unpack_from("<I", buf, 0)[0] + 4))
        struct.pack_into("<I", buf, 0, value & 0xFFFFFFFF)
        return bytes(buf), f"raw: root offset = {value & 0xFFFFFFFF}"
    identifier = rng.choice((b"TFL2", b"TFL4", b"\0\0\0\0", b"tfl3"))
    buf[4:8] = identifier
    return bytes(buf), f"raw: file identifier = {identifier!r}"


# -- structured mutations -------------------------------------------------------------------

_SCALAR_RANGES = {
    "Bool": (0, 1), "Int8": (-(1 << 7), (1 << 7) - 1), "Uint8": (0, (1 << 8) - 1),
    "Int16": (-(1 << 15), (1 << 15) - 1), "Uint16": (0, (1 << 16) - 1),
    "Int32": (-(1 << 31), (1 << 31) - 1), "Uint32": (0, (1 << 32) - 1),
    "Int64": (-(1 << 63), (1 << 63) - 1), "Uint64": (0, (1 << 64) - 1),
    "Float32": None, "Float64": None,
}
_FIELD_TYPES: dict[str, dict[str, str]] | None = None


def field_types() -> dict[str, dict[str, str]]:
    """``{"Conv2DOptions": {"padding": "Int8", ...}, ...}``: the scalar fields of every
    table of the generated schema and their flatbuffer types (from the ``XxxAddField``
    functions, whose parameter is named as the object API attribute)."""
    global _FIELD_TYPES
    if _FIELD_TYPES is None:
        from schema import schema_generated as fb

        source = pathlib.Path(fb.__file__).read_text()
        table: dict[str, dict[str, str]] = {}
        pattern = re.compile(r"def (\w+)\(builder, (\w+)\):\s*\n\s*builder\.Prepend(\w+)Slot\(")
        for function, parameter, kind in pattern.findall(source):
            suffix = "Add" + parameter[0].upper() + parameter[1:]
            if function.endswith(suffix) and kind in _SCALAR_RANGES:
                table.setdefault(function[: -len(suffix)], {})[parameter] = kind
        _FIELD_TYPES = table
    return _FIELD_TYPES


def _interesting_scalar(rng: random.Random, kind: str, old: Any) -> Any:
    if kind in ("Float32", "Float64"):
        return rng.choice((0.0, -0.0, -1.0, 1e-45, 1e-30, 1e30, 3.4e38, -3.4e38, math.inf, -math.inf, math.nan, 0.5, 255.0))
    low, high = _SCALAR_RANGES[kind]
    if kind == "Bool":
        return not bool(old)
    candidates = [low, high, 0, 1, -1, 2, 3, 5, 6, 7, 8, 16, 100, 1000, (1 << 20), high - 1, low + 1]
    if isinstance(old, (int, np.integer)) and not isinstance(old, bool):
        candidates += [int(old) + 1, int(old) - 1, int(old) * 2, -int(old)]
    value = rng.choice(candidates)
    return max(low, min(high, value))


def _ints(vector) -> list[int]:
    return [] if vector is None else [int(v) for v in vector]


def _clamp32(value: int) -> int:
    return max(-(1 << 31), min((1 << 31) - 1, int(value)))


class _AlignedBufferT:
    """Packs a BufferT with its data aligned to 16 bytes (as the converter and
    ``schema.builder`` do) and its ``offset``/``size`` fields."""

    @staticmethod
    def pack(buffer, builder):
        from schema import schema_generated as fb

        data_offset = None
        if buffer.data is not None and len(buffer.data):
            payload = np.ascontiguousarray(buffer.data, dtype=np.uint8).tobytes()
            builder.StartVector(1, len(payload), 16)
            builder.head -= len(payload)
            builder.Bytes[builder.head : builder.head + len(payload)] = payload
            builder.vectorNumElems = len(payload)
            data_offset = builder.EndVector()
        fb.BufferStart(builder)
        if data_offset is not None:
            fb.BufferAddData(builder, data_offset)
        if buffer.offset:
            fb.BufferAddOffset(builder, buffer.offset)
        if buffer.size:
            fb.BufferAddSize(builder, buffer.size)
        return fb.BufferEnd(builder)


def pack_model(model) -> bytes:
    from schema import schema_generated as fb

    for buffer in model.buffers or ():
        if type(buffer) is fb.BufferT:
            buffer.Pack = (lambda b: (lambda builder: _AlignedBufferT.pack(b, builder)))(buffer)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


class _Mutator:
    """Structured mutations of one unpacked ModelT; each returns a description or None
    when it does not apply to this model."""

    def __init__(self, model, rng: random.Random) -> None:
        self.model, self.rng = model, rng

    # helpers
    def subgraphs(self):
        return [(i, s) for i, s in enumerate(self.model.subgraphs or [])]

    def pick_subgraph(self, need: str | None = None):
        choices = [(i, s) for i, s in self.subgraphs() if need is None or getattr(s, need)]
        return self.rng.choice(choices) if choices else (None, None)

    def pick_tensor(self):
        s_index, graph = self.pick_subgraph("tensors")
        if graph is None:
            return None, None, None
        t_index = self.rng.randrange(len(graph.tensors))
        return s_index, t_index, graph.tensors[t_index]

    def pick_operator(self):
        s_index, graph = self.pick_subgraph("operators")
        if graph is None:
            return None, None, None
        o_index = self.rng.randrange(len(graph.operators))
        return s_index, o_index, graph.operators[o_index]

    def op_name(self, operator) -> str:
        from schema.enums import builtin_operator_name

        codes = self.model.operatorCodes or []
        if operator.opcodeIndex is None or operator.opcodeIndex >= len(codes):
            return "?"
        code = codes[operator.opcodeIndex]
        builtin = max(int(code.builtinCode or 0), int(code.deprecatedBuiltinCode or 0))
        try:
            return builtin_operator_name(builtin)
        except Exception:
            return str(builtin)

    def index_value(self, count: int, current: int | None = None) -> int:
        rng = self.rng
        return rng.choice((
            -1, -2, count, count + 1, count + 100, (1 << 31) - 1, -(1 << 31), 0,
            rng.randrange(max(count, 1)), rng.randrange(max(count, 1)),
            (current if current is not None else 0) + 1,
        ))

    def mutate_index_list(self, values: list[int], count: int, self_alias: list[int] | None = None) -> tuple[list[int], str]:
        rng = self.rng
        actions = ["remove", "duplicate", "minus_one", "out_of_range", "random", "swap", "append", "empty", "alias"]
        action = rng.choice(actions)
        values = list(values)
        if not values and action not in ("append", "alias"):
            action = "append"
        if action == "remove":
            position = rng.randrange(len(values))
            del values[position]
            return values, f"remove [{position}]"
        if action == "duplicate":
            position = rng.randrange(len(values))
            values.insert(position, values[position])
            return values, f"duplicate [{position}]"
        if action == "minus_one":
            position = rng.randrange(len(values))
            values[position] = -1
            return values, f"[{position}] = -1"
        if action == "out_of_range":
            position = rng.randrange(len(values))
            values[position] = self.index_value(count, values[position])
            return values, f"[{position}] = {values[position]}"
        if action == "random":
            position = rng.randrange(len(values))
            values[position] = rng.randrange(max(count, 1))
            return values, f"[{position}] = {values[position]} (another tensor)"
        if action == "swap" and len(values) > 1:
            a, b = rng.sample(range(len(values)), 2)
            values[a], values[b] = values[b], values[a]
            return values, f"swap [{a}] and [{b}]"
        if action == "empty":
            return [], "empty"
        if action == "alias" and self_alias:
            if values:
                position = rng.randrange(len(values))
                values[position] = rng.choice(self_alias)
                return values, f"[{position}] = {values[position]} (self-alias)"
            return [rng.choice(self_alias)], "self-alias"
        values.append(rng.randrange(max(count, 1)) if rng.random() < 0.7 else self.index_value(count))
        return values, f"append {values[-1]}"

    # -- tensors
    def tensor_shape(self):
        rng = self.rng
        s, t, tensor = self.pick_tensor()
        if tensor is None:
            return None
        attribute = "shape" if rng.random() < 0.8 else "shapeSignature"
        shape = _ints(getattr(tensor, attribute))
        action = rng.choice(("dim", "dim", "dim", "add", "remove", "scalar", "none", "rank", "swap", "scale"))
        if action == "dim" and shape:
            axis = rng.randrange(len(shape))
            shape[axis] = rng.choice((0, -1, 1, 2, 3, 5, 64, 255, 4096, 65536, (1 << 31) - 1, -(1 << 31), -2, shape[axis] + 1, shape[axis] * 2))
            what = f"dim {axis} = {shape[axis]}"
        elif action == "add":
            at = rng.randrange(len(shape) + 1)
            shape.insert(at, rng.choice((1, 1, 2, 3, 0, -1)))
            what = f"insert dim {shape[at]} at {at}"
        elif action == "remove" and shape:
            at = rng.randrange(len(shape))
            del shape[at]
            what = f"remove dim {at}"
        elif action == "scalar":
            shape = []
            what = "[] (scalar)"
        elif action == "none":
            setattr(tensor, attribute, None)
            return f"subgraph {s} tensor {t}: {attribute} unset"
        elif action == "rank":
            shape = [1] * rng.choice((5, 6, 7, 8, 17))
            what = f"rank {len(shape)} of ones"
        elif action == "swap" and len(shape) > 1:
            a, b = rng.sample(range(len(shape)), 2)
            shape[a], shape[b] = shape[b], shape[a]
            what = f"swap dims {a}, {b}"
        else:
            shape = [_clamp32(d * rng.choice((2, 3, 16, 1000))) for d in shape] or [rng.choice((0, 7, 1 << 20))]
            what = "scale dims"
        setattr(tensor, attribute, [_clamp32(d) for d in shape])
        return f"subgraph {s} tensor {t}: {attribute} {what} -> {getattr(tensor, attribute)}"

    def tensor_type(self):
        s, t, tensor = self.pick_tensor()
        if tensor is None:
            return None
        old = tensor.type
        tensor.type = self.rng.choice(list(range(0, 23)) + [-1, 23, 64, 127, -128])
        return f"subgraph {s} tensor {t}: type {old} -> {tensor.type}"

    def tensor_buffer(self):
        rng = self.rng
        s, t, tensor = self.pick_tensor()
        if tensor is None:
            return None
        count = len(self.model.buffers or [])
        old = tensor.buffer
        with_data = [i for i, b in enumerate(self.model.buffers or []) if b.data is not None and len(b.data)]
        choice = rng.choice(("zero", "data", "data", "oob", "max", "random"))
        if choice == "zero":
            tensor.buffer = 0
        elif choice == "data" and with_data:
            tensor.buffer = rng.choice(with_data)
        elif choice == "oob":
            tensor.buffer = count + rng.choice((0, 1, 100))
        elif choice == "max":
            tensor.buffer = (1 << 32) - 1
        else:
            tensor.buffer = rng.randrange(max(count, 1))
        return f"subgraph {s} tensor {t}: buffer {old} -> {tensor.buffer}"

    def tensor_flags(self):
        rng = self.rng
        s, t, tensor = self.pick_tensor()
        if tensor is None:
            return None
        choice = rng.choice(("variable", "rank", "name", "name"))
        if choice == "variable":
            tensor.isVariable = not tensor.isVariable
            return f"subgraph {s} tensor {t}: isVariable = {tensor.isVariable}"
        if choice == "rank":
            tensor.hasRank = not tensor.hasRank
            return f"subgraph {s} tensor {t}: hasRank = {tensor.hasRank}"
        tensor.name = rng.choice((None, "", "x" * 300, "\u00e9\u4e2d", "same"))
        return f"subgraph {s} tensor {t}: name = {tensor.name!r:.20}"

    def quantization(self):
        from schema import schema_generated as fb

        rng = self.rng
        s, t, tensor = self.pick_tensor()
        if tensor is None:
            return None
        if tensor.quantization is None or rng.random() < 0.1:
            tensor.quantization = fb.QuantizationParametersT()
            tensor.quantization.scale = [rng.choice((0.5, 0.1, 1.0 / 255))]
            tensor.quantization.zeroPoint = [rng.choice((0, -128, 128))]
            if rng.random() < 0.5:
                return f"subgraph {s} tensor {t}: new quantization scale {tensor.quantization.scale} zp {tensor.quantization.zeroPoint}"
        q = tensor.quantization
        scales = [float(v) for v in (q.scale if q.scale is not None else [])]
        zeros = _ints(q.zeroPoint)
        choice = rng.choice(("scale", "scale", "scale", "zero", "zero", "dimension", "lengths", "minmax", "drop", "details"))
        if choice == "scale":
            value = rng.choice((0.0, -0.0, math.inf, -math.inf, math.nan, -1.0, 1e-45, 1e-38, 1e38, 3.4e38, 65536.0, 1e-10))
            if scales and rng.random() < 0.7:
                position = rng.randrange(len(scales))
                scales[position] = value
            else:
                scales = [value] * max(1, len(scales))
            q.scale = scales
            return f"subgraph {s} tensor {t}: scale -> {value}"
        if choice == "zero":
            value = rng.choice((1 << 40, -(1 << 40), (1 << 63) - 1, -(1 << 63), 128, -129, 256, 32768, -32769, 1 << 31, 255))
            if zeros and rng.random() < 0.7:
                zeros[rng.randrange(len(zeros))] = value
            else:
                zeros = [value] * max(1, len(zeros))
            q.zeroPoint = zeros
            return f"subgraph {s} tensor {t}: zero point -> {value}"
        if choice == "dimension":
            q.quantizedDimension = rng.choice((-1, 1, 2, 3, 4, 7, (1 << 31) - 1, -(1 << 31)))
            return f"subgraph {s} tensor {t}: quantized dimension -> {q.quantizedDimension}"
        if choice == "lengths":
            which = rng.choice(("scale", "zero"))
            if which == "scale":
                q.scale = scales + [0.5] * rng.choice((1, 2, 7)) if rng.random() < 0.5 else scales[:-1]
                return f"subgraph {s} tensor {t}: {len(q.scale)} scales, {len(zeros)} zero points"
            q.zeroPoint = zeros + [0] * rng.choice((1, 2, 7)) if rng.random() < 0.5 else zeros[:-1]
            return f"subgraph {s} tensor {t}: {len(scales)} scales, {len(q.zeroPoint)} zero points"
        if choice == "minmax":
            q.min = [rng.choice((0.0, math.nan, -math.inf, 1.0))]
            q.max = [rng.choice((0.0, math.nan, math.inf, -1.0))]
            return f"subgraph {s} tensor {t}: min {q.min} max {q.max}"
        if choice == "details":
            q.detailsType = rng.choice((1, 2, 3, 200))
            q.details = None
            return f"subgraph {s} tensor {t}: quantization detailsType {q.detailsType} without details"
        tensor.quantization = None
        return f"subgraph {s} tensor {t}: quantization removed"

    def sparsity(self):
        from schema import schema_generated as fb

        rng = self.rng
        constants = [
            (s, t, tensor) for s, graph in self.subgraphs() for t, tensor in enumerate(graph.tensors or [])
            if tensor.buffer and tensor.buffer < len(self.model.buffers or []) and self.model.buffers[tensor.buffer].data is not None
        ]
        if not constants:
            return None
        s, t, tensor = rng.choice(constants)
        rank = len(_ints(tensor.shape))
        sparsity = tensor.sparsity or fb.SparsityParametersT()
        sparsity.traversalOrder = rng.choice((list(range(rank)), list(range(rank))[::-1], [0, 0], [], [rank + 1]))
        sparsity.blockMap = rng.choice(([], [0], [rank], [-1]))
        dims = []
        for _ in range(rng.choice((rank, rank + 1, max(rank - 1, 0), 0))):
            dim = fb.DimensionMetadataT()
            dim.format = rng.choice((0, 0, 1, 2))
            dim.denseSize = rng.choice((0, 1, 2, 3, 1 << 30, -1))
            if dim.format == 1:
                dim.arraySegmentsType = rng.choice((1, 2, 3))
                dim.arrayIndicesType = rng.choice((1, 2, 3))
                segments = {1: fb.Int32VectorT, 2: fb.Uint16VectorT, 3: fb.Uint8VectorT}
                dim.arraySegments = segments[dim.arraySegmentsType]()
                dim.arraySegments.values = rng.choice(([0, 1], [0, 5, 2], [3], []))
                dim.arrayIndices = segments[dim.arrayIndicesType]()
                dim.arrayIndices.values = rng.choice(([0], [0, 200], [1, 0], []))
            dims.append(dim)
        sparsity.dimMetadata = dims
        tensor.sparsity = sparsity
        return f"subgraph {s} tensor {t}: sparsity traversal {sparsity.traversalOrder} block map {sparsity.blockMap} {len(dims)} dims"

    # -- operators
    def operator_io(self):
        rng = self.rng
        s, o, operator = self.pick_operator()
        if operator is None:
            return None
        graph = self.model.subgraphs[s]
        count = len(graph.tensors or [])
        which = rng.choices(("inputs", "outputs", "intermediates", "mutatingVariableInputs"), weights=(60, 30, 5, 5))[0]
        values = _ints(getattr(operator, which))
        if which == "mutatingVariableInputs":
            operator.mutatingVariableInputs = [rng.random() < 0.5 for _ in range(rng.choice((0, 1, len(_ints(operator.inputs)) + 1)))]
            return f"subgraph {s} op {o} ({self.op_name(operator)}): mutatingVariableInputs {operator.mutatingVariableInputs}"
        alias = _ints(operator.outputs) if which == "inputs" else _ints(operator.inputs)
        values, what = self.mutate_index_list(values, count, alias)
        setattr(operator, which, [_clamp32(v) for v in values])
        return f"subgraph {s} op {o} ({self.op_name(operator)}): {which} {what} -> {values[:8]}"

    def operator_opcode(self):
        s, o, operator = self.pick_operator()
        if operator is None:
            return None
        count = len(self.model.operatorCodes or [])
        old = operator.opcodeIndex
        operator.opcodeIndex = self.rng.choice((count, count + 5, (1 << 32) - 1, self.rng.randrange(max(count, 1))))
        return f"subgraph {s} op {o}: opcodeIndex {old} -> {operator.opcodeIndex}"

    def opcode(self):
        rng = self.rng
        codes = self.model.operatorCodes or []
        if not codes:
            return None
        c = rng.randrange(len(codes))
        code = codes[c]
        choice = rng.choice(("version", "version", "version", "builtin", "deprecated", "custom"))
        if choice == "version":
            old = code.version
            code.version = rng.choice((0, -1, 1, 2, 3, 4, 5, 6, 7, 8, 12, 100, (1 << 31) - 1, -(1 << 31), (old or 1) + 1, (old or 1) - 1))
            return f"operator code {c}: version {old} -> {code.version}"
        if choice == "builtin":
            old = code.builtinCode
            code.builtinCode = rng.choice((rng.randrange(0, 210), -1, 127, 1000, (1 << 31) - 1))
            code.deprecatedBuiltinCode = min(max(code.builtinCode, 0), 127) if rng.random() < 0.5 else code.deprecatedBuiltinCode
            return f"operator code {c}: builtinCode {old} -> {code.builtinCode} (deprecated {code.deprecatedBuiltinCode})"
        if choice == "deprecated":
            code.deprecatedBuiltinCode = rng.choice((0, 32, 127, -1, -128, rng.randrange(127)))
            return f"operator code {c}: deprecatedBuiltinCode -> {code.deprecatedBuiltinCode}"
        code.customCode = rng.choice((None, "", "Convolution2DTransposeBias", "MaxPoolingWithArgmax2D", "FlexAddV2", "x" * 200))
        return f"operator code {c}: customCode -> {code.customCode!r:.30}"

    def substitute_op(self):
        """Another op (one that has a CPU kernel) on the same node, with its default options."""
        from backends.cpu.kernel import KERNELS, builtin_op_resolver
        from schema.enums import builtin_operator_name
        from schema.option_parsers import builtin_options_of_params
        from schema import schema_generated as fb

        rng = self.rng
        s, o, operator = self.pick_operator()
        if operator is None:
            return None
        builtin_op_resolver()  # imports the kernel modules, which fills KERNELS
        entry = rng.choice(sorted(KERNELS, key=lambda e: (e.op, e.min_version, e.max_version)))
        version = rng.randint(entry.min_version, entry.max_version)
        code = fb.OperatorCodeT()
        code.builtinCode = entry.op
        code.deprecatedBuiltinCode = min(entry.op, 127)
        code.version = version
        self.model.operatorCodes = list(self.model.operatorCodes or []) + [code]
        old = self.op_name(operator)
        operator.opcodeIndex = len(self.model.operatorCodes) - 1
        if rng.random() < 0.8:
            operator.builtinOptionsType, operator.builtinOptions = builtin_options_of_params(entry.op, None)
        return f"subgraph {s} op {o}: {old} -> {builtin_operator_name(entry.op)} v{version}"

    def options(self):
        from schema import schema_generated as fb

        rng = self.rng
        candidates = [
            (s, o, op) for s, graph in self.subgraphs() for o, op in enumerate(graph.operators or [])
        ]
        if not candidates:
            return None
        with_options = [c for c in candidates if c[2].builtinOptions is not None]
        choice = rng.choices(("field", "type", "drop", "custom"), weights=(75, 10, 8, 7))[0]
        if choice == "field" and with_options:
            s, o, operator = rng.choice(with_options)
            options = operator.builtinOptions
            fields = field_types().get(type(options).__name__[:-1], {})
            if fields:
                name = rng.choice(sorted(fields))
                old = getattr(options, name, None)
                value = _interesting_scalar(rng, fields[name], old)
                setattr(options, name, value)
                return f"subgraph {s} op {o} ({self.op_name(operator)}): {type(options).__name__[:-1]}.{name} {old} -> {value}"
            vectors = [k for k, v in vars(options).items() if isinstance(v, (list, np.ndarray))]
            if vectors:
                name = rng.choice(sorted(vectors))
                values = _ints(getattr(options, name))
                values, what = self.mutate_index_list(values, 8)
                setattr(options, name, [_clamp32(v) for v in values])
                return f"subgraph {s} op {o} ({self.op_name(operator)}): {type(options).__name__[:-1]}.{name} {what}"
            choice = "type"
        s, o, operator = rng.choice(candidates)
        if choice == "type":
            old = operator.builtinOptionsType
            operator.builtinOptionsType = rng.choice((rng.randrange(1, 127), 0, 200, 255))
            if operator.builtinOptions is None:
                operator.builtinOptions = fb.Conv2DOptionsT()
            return f"subgraph {s} op {o} ({self.op_name(operator)}): builtinOptionsType {old} -> {operator.builtinOptionsType} (options table unchanged)"
        if choice == "drop":
            operator.builtinOptionsType, operator.builtinOptions = 0, None
            return f"subgraph {s} op {o} ({self.op_name(operator)}): builtin options removed"
        data = _ints(operator.customOptions)
        action = rng.choice(("random", "truncate", "flip"))
        if action == "random" or not data:
            data = [rng.randrange(256) for _ in range(rng.choice((1, 3, 8, 32)))]
        elif action == "truncate":
            data = data[: rng.randrange(len(data))]
        else:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        operator.customOptions = data
        operator.customOptionsFormat = rng.choice((0, 0, 1, -1))
        return f"subgraph {s} op {o} ({self.op_name(operator)}): customOptions {action} ({len(data)} bytes)"

    def control_flow(self):
        rng = self.rng
        sites = []
        for s, graph in self.subgraphs():
            for o, operator in enumerate(graph.operators or []):
                options = operator.builtinOptions
                if options is None:
                    continue
                for name in sorted(vars(options)):
                    if "ubgraph" in name:
                        sites.append((s, o, operator, name))
        if not sites:
            return None
        s, o, operator, name = rng.choice(sites)
        count = len(self.model.subgraphs)
        old = getattr(operator.builtinOptions, name)
        value = rng.choice((0, s, count, count + 1, -1, (1 << 31) - 1, -(1 << 31), rng.randrange(count), rng.randrange(count)))
        if rng.random() < 0.2:  # both indices of IF / WHILE the same
            others = [n for n in sorted(vars(operator.builtinOptions)) if "ubgraph" in n and n != name]
            if others:
                value = getattr(operator.builtinOptions, others[0])
        setattr(operator.builtinOptions, name, value)
        return f"subgraph {s} op {o} ({self.op_name(operator)}): {name} {old} -> {value}"

    def subgraph_io(self):
        rng = self.rng
        s, graph = self.pick_subgraph()
        if graph is None:
            return None
        which = rng.choice(("inputs", "outputs"))
        values, what = self.mutate_index_list(_ints(getattr(graph, which)), len(graph.tensors or []))
        setattr(graph, which, [_clamp32(v) for v in values])
        return f"subgraph {s}: {which} {what} -> {values[:8]}"

    def structure(self):
        rng = self.rng
        model = self.model
        choice = rng.choice((
            "remove_op", "remove_op", "duplicate_op", "swap_ops", "remove_tensor", "remove_subgraph",
            "duplicate_subgraph", "swap_subgraphs", "remove_buffer", "remove_opcode", "no_subgraphs", "no_buffers",
        ))
        if choice in ("remove_op", "duplicate_op", "swap_ops"):
            s, graph = self.pick_subgraph("operators")
            if graph is None:
                return None
            o = rng.randrange(len(graph.operators))
            if choice == "remove_op":
                del graph.operators[o]
                return f"subgraph {s}: remove op {o}"
            if choice == "duplicate_op":
                graph.operators.insert(o, graph.operators[o])
                return f"subgraph {s}: duplicate op {o}"
            if len(graph.operators) < 2:
                return None
            a, b = rng.sample(range(len(graph.operators)), 2)
            graph.operators[a], graph.operators[b] = graph.operators[b], graph.operators[a]
            return f"subgraph {s}: swap ops {a} and {b}"
        if choice == "remove_tensor":
            s, graph = self.pick_subgraph("tensors")
            if graph is None:
                return None
            t = rng.randrange(len(graph.tensors))
            del graph.tensors[t]
            return f"subgraph {s}: remove tensor {t} (later indices shift)"
        if choice in ("remove_subgraph", "duplicate_subgraph", "swap_subgraphs"):
            count = len(model.subgraphs or [])
            if count == 0:
                return None
            k = rng.randrange(count)
            if choice == "remove_subgraph":
                del model.subgraphs[k]
                return f"remove subgraph {k}"
            if choice == "duplicate_subgraph":
                model.subgraphs.append(model.subgraphs[k])
                return f"duplicate subgraph {k} at the end"
            if count < 2:
                return None
            a, b = rng.sample(range(count), 2)
            model.subgraphs[a], model.subgraphs[b] = model.subgraphs[b], model.subgraphs[a]
            return f"swap subgraphs {a} and {b}"
        if choice == "remove_buffer" and model.buffers:
            b = rng.randrange(len(model.buffers))
            del model.buffers[b]
            return f"remove buffer {b} (later indices shift)"
        if choice == "remove_opcode" and model.operatorCodes:
            c = rng.randrange(len(model.operatorCodes))
            del model.operatorCodes[c]
            return f"remove operator code {c} (later indices shift)"
        if choice == "no_subgraphs":
            model.subgraphs = rng.choice(([], None))
            return "no subgraphs"
        if choice == "no_buffers":
            model.buffers = rng.choice(([], None))
            return "no buffers"
        return None

    def buffer_data(self):
        rng = self.rng
        buffers = self.model.buffers or []
        with_data = [i for i, b in enumerate(buffers) if b.data is not None and len(b.data)]
        if not buffers:
            return None
        b = rng.choice(with_data) if with_data and rng.random() < 0.8 else rng.randrange(len(buffers))
        buffer = buffers[b]
        data = np.array(buffer.data if buffer.data is not None else [], dtype=np.uint8)
        choice = rng.choice(("truncate", "truncate", "extend", "random", "special", "none", "offset"))
        if choice == "truncate" and data.size:
            buffer.data = data[: rng.randrange(data.size)]
            return f"buffer {b}: data truncated {data.size} -> {buffer.data.size} bytes"
        if choice == "extend":
            extra = rng.choice((1, 3, 4, 16, 1024))
            buffer.data = np.concatenate([data, np.full(extra, rng.randrange(256), np.uint8)])
            return f"buffer {b}: data extended {data.size} -> {buffer.data.size} bytes"
        if choice == "random" and data.size:
            generator = np.random.default_rng(rng.randrange(1 << 30))
            buffer.data = generator.integers(0, 256, data.size, dtype=np.uint8)
            return f"buffer {b}: {data.size} random bytes"
        if choice == "special" and data.size >= 4:
            pattern = rng.choice((b"\xff\xff\xff\x7f", b"\x00\x00\x80\x7f", b"\x00\x00\xc0\x7f", b"\x00\x00\x80\xff", b"\x00\x00\x00\x80", b"\xff\xff\xff\xff"))
            repeated = np.frombuffer(pattern * (data.size // 4 + 1), np.uint8)[: data.size]
            buffer.data = repeated.copy()
            return f"buffer {b}: filled with {pattern.hex()} (int32 max / inf / nan / -inf / min / -1)"
        if choice == "offset":
            buffer.offset = rng.choice((1, 8, 1 << 20, (1 << 64) - 1))
            buffer.size = rng.choice((0, 1, 16, 1 << 40))
            return f"buffer {b}: offset {buffer.offset} size {buffer.size}"
        buffer.data = None
        return f"buffer {b}: data removed"

    def signatures(self):
        from schema import schema_generated as fb

        rng = self.rng
        model = self.model
        signatures = model.signatureDefs or []
        choice = rng.choice(("subgraph", "tensor", "tensor", "remove_entry", "duplicate_name", "key", "add", "drop_all"))
        if choice == "add" or not signatures:
            signature = fb.SignatureDefT()
            signature.signatureKey = rng.choice(("serving_default", "extra", ""))
            signature.subgraphIndex = rng.choice((0, 1, len(model.subgraphs or []), -1))
            entry = fb.TensorMapT()
            entry.name, entry.tensorIndex = "x", rng.choice((0, 1, 1000, (1 << 32) - 1))
            signature.inputs = [entry]
            signature.outputs = []
            model.signatureDefs = list(signatures) + [signature]
            return f"add signature {signature.signatureKey!r} on subgraph {signature.subgraphIndex} input tensor {entry.tensorIndex}"
        k = rng.randrange(len(signatures))
        signature = signatures[k]
        if choice == "subgraph":
            old = signature.subgraphIndex
            signature.subgraphIndex = rng.choice((-1, 1, 2, len(model.subgraphs or []), (1 << 31) - 1))
            return f"signature {k}: subgraphIndex {old} -> {signature.subgraphIndex}"
        maps = [m for m in (signature.inputs or []) + (signature.outputs or [])]
        if choice == "tensor" and maps:
            entry = rng.choice(maps)
            old = entry.tensorIndex
            entry.tensorIndex = rng.choice((old + 1, 0, 1000, (1 << 32) - 1, (1 << 31)))
            return f"signature {k}: tensor map {entry.name!r} {old} -> {entry.tensorIndex}"
        if choice == "remove_entry" and maps:
            which = "inputs" if signature.inputs and rng.random() < 0.5 else "outputs"
            entries = list(getattr(signature, which) or [])
            if entries:
                del entries[rng.randrange(len(entries))]
                setattr(signature, which, entries)
                return f"signature {k}: remove one of its {which}"
        if choice == "duplicate_name" and maps:
            entry = fb.TensorMapT()
            entry.name, entry.tensorIndex = maps[0].name, maps[-1].tensorIndex
            signature.inputs = list(signature.inputs or []) + [entry]
            return f"signature {k}: duplicate input name {entry.name!r}"
        if choice == "key":
            signature.signatureKey = rng.choice((None, "", signatures[0].signatureKey))
            return f"signature {k}: key -> {signature.signatureKey!r}"
        model.signatureDefs = None
        return "remove all signature defs"

    def model_fields(self):
        from schema import schema_generated as fb

        rng = self.rng
        model = self.model
        choice = rng.choice(("version", "metadata_buffer", "metadata_value", "metadata_buffer_list", "description"))
        if choice == "version":
            model.version = rng.choice((0, 1, 2, 4, (1 << 32) - 1))
            return f"schema version -> {model.version}"
        metadata = model.metadata or []
        if choice == "metadata_buffer" and metadata:
            entry = rng.choice(metadata)
            entry.buffer = rng.choice((len(model.buffers or []), (1 << 32) - 1, 0))
            return f"metadata {entry.name!r}: buffer -> {entry.buffer}"
        if choice == "metadata_value":
            entry = next((m for m in metadata if m.name == "min_runtime_version"), None)
            if entry is None:
                entry = fb.MetadataT()
                entry.name = "min_runtime_version"
                model.metadata = list(metadata) + [entry]
            buffer = fb.BufferT()
            buffer.data = np.frombuffer(rng.choice((b"99.0.0\0", b"\xff\xfe", b"", b"1.2.3.4.5.6" * 10)), np.uint8).copy()
            model.buffers = list(model.buffers or []) + [buffer]
            entry.buffer = len(model.buffers) - 1
            return f"metadata min_runtime_version -> {bytes(buffer.data)!r:.30}"
        if choice == "metadata_buffer_list":
            model.metadataBuffer = [rng.choice((0, 1000, -1))]
            return f"metadataBuffer -> {model.metadataBuffer}"
        model.description = rng.choice((None, "", "\u00ff" * 50))
        return "description changed"

    def generic_scalar(self):
        """Any scalar field of any table reachable from the model."""
        rng = self.rng
        tables = field_types()
        sites = []
        stack = [self.model]
        seen = set()
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            fields = tables.get(type(obj).__name__[:-1])
            if fields:
                sites.extend((obj, name, kind) for name, kind in sorted(fields.items()))
            for value in vars(obj).values():
                if isinstance(value, list):
                    stack.extend(v for v in value if hasattr(v, "__dict__") and type(v).__name__.endswith("T"))
                elif hasattr(value, "__dict__") and type(value).__name__.endswith("T"):
                    stack.append(value)
        if not sites:
            return None
        obj, name, kind = rng.choice(sites)
        old = getattr(obj, name, None)
        value = _interesting_scalar(rng, kind, old)
        setattr(obj, name, value)
        return f"{type(obj).__name__[:-1]}.{name} {old} -> {value}"


#: (mutation, weight)
STRUCTURED_MUTATIONS: list[tuple[str, int]] = [
    ("tensor_shape", 14), ("tensor_type", 7), ("tensor_buffer", 5), ("tensor_flags", 3),
    ("quantization", 12), ("sparsity", 2), ("operator_io", 14), ("operator_opcode", 3),
    ("opcode", 7), ("substitute_op", 10), ("options", 12), ("control_flow", 8),
    ("subgraph_io", 5), ("structure", 5), ("buffer_data", 6), ("signatures", 4),
    ("model_fields", 2), ("generic_scalar", 6),
]


def structured_mutation(data: bytes, rng: random.Random, count: int) -> tuple[bytes, list[str]] | None:
    """``count`` structured mutations of the model in ``data``; None when the seed does not
    unpack or no mutation could be packed (the caller falls back to a raw mutation)."""
    from schema import schema_generated as fb

    for _attempt in range(6):
        try:
            model = fb.ModelT.InitFromPackedBuf(data, 0)
        except Exception:
            return None
        mutator = _Mutator(model, rng)
        names, weights = zip(*STRUCTURED_MUTATIONS)
        descriptions = []
        for _ in range(count * 4):
            if len(descriptions) >= count:
                break
            name = rng.choices(names, weights=weights)[0]
            description = getattr(mutator, name)()
            if description:
                descriptions.append(f"{name}: {description}")
        if not descriptions:
            continue
        try:
            packed = pack_model(model)
        except Exception:
            continue  # a value the field cannot hold: try other mutations
        return packed, descriptions
    return None


__all__ = [
    "Case", "Seed", "STRUCTURED_MUTATIONS", "case_rng", "field_types", "generated_models", "load_corpus",
    "make_case", "pack_model", "raw_mutation", "structured_mutation",
]


def _check() -> None:  # pragma: no cover - a quick manual check: python tests/fuzz/mutate.py
    import collections
    import sys
    import time

    sys.path.insert(0, str(REPO_ROOT))
    corpus = load_corpus()
    start = time.perf_counter()
    kinds: Callable = collections.Counter
    counter = kinds()
    for index in range(300):
        case = make_case(corpus, 0, index)
        counter.update(m.split(":")[0] for m in case.mutations)
        assert case.data == make_case(corpus, 0, index).data
    print(f"{300 / (time.perf_counter() - start) / 2:.0f} cases/s (generation)", dict(counter))


if __name__ == "__main__":  # pragma: no cover
    _check()
