"""Array-namespace (xp) implementations of the ops the GPU delegate supports.

Every module here is imported by :func:`gpu_op_classes`. Each ``GpuOp`` subclass declares
``ops = {op: max_version}`` (or ``{op: frozenset(versions)}`` where versions in between
are not implemented). Several classes may implement one op (the float kernels and the
quantized ones of ADD, say), even at one version: an op's version does not always say
its types (uint8 ADD is version 1, like float ADD). The delegate gives a node to the
first class that claims its version and accepts it (:func:`select_op_class`); the
union of the claims is the delegate's support table. Custom ops (MediaPipe's
``Convolution2DTransposeBias``) are claimed by name in ``custom_ops``, and make the
delegate's custom support table.

Layout: one module per op family, its float and quantized (int8/uint8) classes side by
side, the float one first (the order the delegate tries them in), as
``backends/cpu/kernels`` does:

- bases: ``base.py`` (``GpuOp``, ``TypeReason``, ``FloatOp``, ``TypedOp``, the shared
  tensor checks and the fused-activation helpers), ``quantized_base.py`` (``QuantizedOp``
  and the use of a CPU kernel's own configuration), ``moving_base.py`` (``MovingOp``,
  ``LayoutOp``: the ops that move values without arithmetic);
- element-wise: ``elementwise.py`` (ADD SUB MUL DIV MAXIMUM MINIMUM SQUARED_DIFFERENCE
  POW), ``comparison.py`` (LESS ... NOT_EQUAL, SELECT, LOGICAL_*), ``unary.py`` (ABS EXP
  LOG ...), ``cast.py``, ``activations.py`` (LOGISTIC TANH RELU* LEAKY_RELU HARD_SWISH
  PRELU GELU ELU);
- data movement: ``reshape.py``, ``concat_split.py`` (CONCATENATION PACK UNPACK SPLIT
  SPLIT_V), ``pad.py`` (PAD PADV2 MIRROR_PAD), ``slicing.py`` (SLICE STRIDED_SLICE),
  ``transpose.py``, ``space_depth.py`` (DEPTH_TO_SPACE SPACE_TO_DEPTH SPACE_TO_BATCH_ND
  BATCH_TO_SPACE_ND), ``gather.py`` (GATHER ONE_HOT), ``tile.py``, ``resize.py``;
- windows and rows: ``pool.py`` (AVERAGE_POOL_2D MAX_POOL_2D), ``reduce.py`` (MEAN SUM
  REDUCE_PROD REDUCE_MAX REDUCE_MIN CUMSUM), ``softmax.py``;
- ``quantize.py`` (QUANTIZE, DEQUANTIZE), ``variables.py`` (VAR_HANDLE READ_VARIABLE
  ASSIGN_VARIABLE);
- convolutions and products: ``conv.py`` (CONV_2D, and what the convolutions share:
  the window arithmetic, ``WeightsOp``, ``QuantizedConvOp``), ``depthwise_conv.py``
  (DEPTHWISE_CONV_2D), ``fully_connected.py`` (FULLY_CONNECTED), ``batch_matmul.py``
  (BATCH_MATMUL), ``transpose_conv.py`` (TRANSPOSE_CONV), ``mediapipe_custom.py``
  (``Convolution2DTransposeBias``).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Sequence

from backends.gpu.ops.base import GpuOp, TypeReason


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def claimed_versions(cls: type[GpuOp], op: int | str) -> frozenset[int]:
    """The versions of ``op`` (a builtin code, or a custom op's name) that ``cls`` implements."""
    claim = cls.custom_ops[op] if isinstance(op, str) else cls.ops[op]
    return frozenset(range(1, claim + 1)) if isinstance(claim, int) else frozenset(claim)


def _definition_order(cls: type) -> tuple[str, int, str]:
    """(module, the class's position in its module, name): a module's classes in the order
    it defines them (a class not defined at module level comes after them, by name)."""
    names = list(vars(sys.modules[cls.__module__]))
    position = names.index(cls.__name__) if cls.__name__ in names else len(names)
    return cls.__module__, position, cls.__qualname__


def gpu_op_classes() -> dict[int | str, tuple[type[GpuOp], ...]]:
    """op -> the GpuOp classes that implement it, in a fixed order: by module, then in the
    order the module defines them (each module defines an op's float class before its
    quantized one, and the delegate tries them in that order).
    Builtin ops are keyed by their code (``ops``), custom ops by their name (a class
    claims those with ``custom_ops = {"Convolution2DTransposeBias": 1}``)."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")
    table: dict[int | str, list[type[GpuOp]]] = {}
    for cls in sorted(_subclasses(GpuOp), key=_definition_order):
        for op in (*cls.__dict__.get("ops", {}), *cls.__dict__.get("custom_ops", {})):
            table.setdefault(op, []).append(cls)
    return {op: tuple(classes) for op, classes in table.items()}


def _support_table(custom: bool) -> dict:
    table = {}
    for op, classes in gpu_op_classes().items():
        if isinstance(op, str) != custom:
            continue
        versions = frozenset().union(*(claimed_versions(cls, op) for cls in classes))
        top = max(versions)
        table[op] = top if versions == frozenset(range(1, top + 1)) else versions
    return table


def gpu_support_table() -> dict[int, int | frozenset[int]]:
    """op -> the versions the GPU kernels implement: the highest, when every version up
    to it is implemented, else the set. Builtin ops only (see ``gpu_custom_support_table``)."""
    return _support_table(custom=False)


def gpu_custom_support_table() -> dict[str, int | frozenset[int]]:
    """Custom op name -> the versions the GPU kernels implement, as ``gpu_support_table``."""
    return _support_table(custom=True)


def select_op_class(classes: Sequence[type[GpuOp]], node, op: int | str, version: int, tensors) -> tuple[type[GpuOp] | None, str | None]:
    """The first class that claims ``version`` and accepts the node, or (None, the reasons
    of those that claim it but refuse it). ``op``: a builtin code, or a custom op's name."""
    claiming = [cls for cls in classes if version in claimed_versions(cls, op)]
    reasons = []
    for cls in claiming or classes:  # none claims the version: still say what else is wrong
        reason = cls.rejection_reason(node, op, version, tensors)
        if reason is None and cls in claiming:
            return cls, None
        if reason is not None:
            reasons.append(reason)
    specific = [reason for reason in reasons if not isinstance(reason, TypeReason)]
    if claiming and specific:
        reasons = specific  # a class takes these types: its own reason is the real cause
    if not claiming:
        reasons.insert(0, f"no GPU kernel implements version {version}")
    return None, "; ".join(dict.fromkeys(reasons))
