"""Every launch configuration the CUDA launchers produce: which kernel, with which grid, block
and dynamic shared memory (and its opt-in attribute), for problems chosen to reach each branch
of their launch-config functions. ``test_ptxas_limits.py`` checks each against what ptxas
reports for the kernel (registers x threads, shared memory), so that a kernel edit or a launch
shape that a GPU would refuse fails without a GPU.

Nothing here copies a launch shape: each probe calls a launcher (``backends/gpu/cuda``) with
``xp=numpy`` and a :class:`RecordingModule` for its ``module``, so the launcher runs its own
checks and its own launch-config function, and the module records the launch instead of
running a kernel. The probes of the op families with candidates walk their tables
(``CONV2D_TACTICS``, ``DEPTHWISE_TACTICS``, ``MATMUL_TACTICS``, the int8 FULLY_CONNECTED's:
:func:`walk_table`), every row on every case it applies to, so a row added to a table is
covered without an edit here, and a row's declared launch shape is checked against its launch.

To extend: write a function ``probe_<family>(where)`` that calls launchers built with
``**where(launcher_source)`` and decorate it with :func:`probe`. ``launch_configurations()``
runs every probe. A kernel that no probe launches fails ``test_ptxas_limits.py`` by name.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

#: The probes, in the order they run (see :func:`probe`).
PROBES: list[Callable[[Callable[..., dict]], None]] = []


@dataclass(frozen=True)
class LaunchConfiguration:
    """One launch as a launcher asked for it."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int  # cupy's ``shared_mem=`` of the launch
    max_dynamic_shared_bytes: int  # the kernel's opt-in attribute (``max_dynamic_shared_size_bytes``), 0: none
    probe: str  # the probe that produced it

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


def _dim3(value: Any) -> tuple[int, int, int]:
    dims = (int(value),) if np.ndim(value) == 0 else tuple(int(v) for v in value)
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


class _RecordedKernel:
    """``cupy.RawKernel``'s call and its dynamic-shared-memory attribute, recording."""

    def __init__(self, name: str, module: "RecordingModule") -> None:
        self.name = name
        self.module = module
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, grid: Any, block: Any, args: Any, shared_mem: int = 0, **_: Any) -> None:
        self.module.launches.append(
            LaunchConfiguration(self.name, _dim3(grid), _dim3(block), int(shared_mem), int(self.max_dynamic_shared_size_bytes),
                                self.module.probe)
        )


class RecordingModule:
    """Stands in for ``cupy.RawModule`` (a launcher's ``module=``): ``get_function(name)``
    gives a kernel that records each launch in ``launches``."""

    def __init__(self, launches: list[LaunchConfiguration], probe: str) -> None:
        self.launches = launches
        self.probe = probe
        self._kernels: dict[str, _RecordedKernel] = {}

    def get_function(self, name: str) -> _RecordedKernel:
        return self._kernels.setdefault(name, _RecordedKernel(name, self))


def probe(function: Callable[[Callable[..., dict]], None]) -> Callable[[Callable[..., dict]], None]:
    """Register ``function(where)`` as a probe: it launches through launchers made with
    ``**where(source)`` (``xp=numpy`` and a recording module)."""
    PROBES.append(function)
    return function


def launch_configurations(probes: list[Callable[[Callable[..., dict]], None]] | None = None) -> list[LaunchConfiguration]:
    """Every launch the probes' launchers ask for (``probes``: default :data:`PROBES`)."""
    launches: list[LaunchConfiguration] = []
    for function in PROBES if probes is None else probes:
        modules: dict[str, RecordingModule] = {}

        def where(source: str, _modules=modules, _name=function.__name__) -> dict:
            module = _modules.setdefault(source, RecordingModule(launches, _name))
            return {"xp": np, "module": module}

        function(where)
    return launches


# -- the probes ---------------------------------------------------------------------------------------

F32, F16 = np.float32, np.float16
#: Extents that reach the launch-config functions' branches: 1, a few, around a warp and a
#: block, and many (the configs that size blocks from the problem switch at powers of two).
EXTENTS = (1, 2, 3, 5, 9, 17, 33, 100, 257, 1000)


def _zeros(shape, dtype=F32) -> np.ndarray:
    return np.zeros(shape, dtype)


class _BlasStandIn:
    """A device's cuBLAS handle (a vendor row's ``blas=``) for the probes: the vendor's GEMM is
    not ours to assemble; the kernel the row launches after it (``gemm_epilogue.cu``) is."""

    def gemm(self, *args: Any, **kwargs: Any) -> None:
        return None


def walk_table(where, table, cases) -> None:
    """Launch every row of a candidates' table (``backends/gpu/tactics.py``) on every case it
    applies to, as ``Tactic.build`` makes it (the row's options, a recording module, a cuBLAS
    stand-in for a vendor row). ``cases``: ``(problem, arguments, call)``, ``call(launcher)``
    launching once. A row that declares its launch shape must launch exactly that (the
    block counts ``test_tactics.py`` reads from the tables are then the launches'), and every
    row must apply to some case: a new row is covered without an edit here."""
    launched = set()
    for problem, arguments, call in cases:
        for tactic in table:
            if tactic.reason(problem) is not None:
                continue
            extra = {"blas": _BlasStandIn()} if tactic.vendor else {}
            launcher = tactic.launcher(**arguments, **tactic.options, **where(tactic.launcher.source), **extra)
            module = where(tactic.launcher.source)["module"]
            before = len(module.launches)
            call(launcher)
            if tactic.launch_shape is not None:
                shapes = [(launch.grid, launch.block) for launch in module.launches[before:]]
                declared = tactic.launch_shape(problem)
                assert shapes == [tuple(tuple(d) for d in declared)], (
                    f"row {tactic.name!r} declares the launch {declared} but launched {shapes} for {problem}"
                )
            launched.add(tactic.name)
    never = [tactic.name for tactic in table if tactic.name not in launched]
    assert not never, f"no case of the probe applies to the rows {never}: add one"


#: The threads an H200 holds at once (132 multiprocessors of 2,048): the problems' fill rule.
RESIDENT_THREADS = 132 * 2048

#: CONV_2D cases: (input shape, output channels, groups, filter size, padding); the 1x1 unpadded
#: one is a single product (the vendor GEMM's), the large ones at batch 1 take the tiles that fill
#: the GPU and are thin (16 and 8 output channels: the narrow tensor-core tiles), the batch of 128
#: the large tiles again.
CONV2D_CASES = (
    ((1, 9, 9, 8), 16, 1, 3, "SAME"), ((2, 40, 40, 12), 96, 3, 3, "SAME"), ((1, 3, 3, 4), 1, 1, 3, "SAME"),
    ((1, 8, 8, 16), 32, 1, 1, "VALID"), ((1, 64, 64, 8), 16, 1, 3, "SAME"), ((1, 48, 48, 16), 8, 1, 3, "SAME"),
    ((1, 32, 32, 24), 64, 1, 3, "SAME"), ((128, 32, 32, 8), 64, 1, 3, "SAME"),
)


@probe
def probe_conv2d(where):
    from backends.gpu.cuda.conv2d import CONV2D_TACTICS, Conv2DGeometry, Conv2DProblem, Epilogue, conv2d_filter_layout

    cases = []
    for storage, epilogue in itertools.product((F32, F16), (None, Epilogue())):
        for shape, out_channels, groups, size, padding in CONV2D_CASES:
            w = conv2d_filter_layout(_zeros((out_channels, size, size, shape[3] // groups)), groups).astype(storage)
            x, b = _zeros(shape, storage), _zeros(out_channels, storage)
            geometry = Conv2DGeometry.of(shape, w.shape, 1, 1, padding)
            problem = Conv2DProblem(geometry, np.dtype(storage).name, True, epilogue, 90, vendor_gemm=True, allow_tf32=True,
                                    resident_threads=RESIDENT_THREADS)
            arguments = {"padding": padding, "storage": storage, "epilogue": epilogue}
            cases.append((problem, arguments, lambda launcher, x=x, w=w, b=b: launcher(x, w, b)))
    walk_table(where, CONV2D_TACTICS, cases)


@probe
def probe_matmul(where):
    from backends.gpu.cuda.matmul import MATMUL_TACTICS, NO_CLAMP, MatmulProblem, MatmulShape

    cases = []
    for storage in (F32, F16):
        operands = [((m, 8), (8, n)) for m, n in itertools.product(EXTENTS, (1, 70, 300))] + [((3, 20, 8), (3, 8, 30))]
        for a_shape, b_shape in operands:
            a, b = _zeros(a_shape, storage), _zeros(b_shape, storage)
            problem = MatmulProblem(MatmulShape.of(a_shape, b_shape), False, NO_CLAMP, np.dtype(storage).name, 90, True, True)
            cases.append((problem, {"storage": storage}, lambda launcher, a=a, b=b: launcher(a, b)))
    walk_table(where, MATMUL_TACTICS, cases)


@probe
def probe_depthwise(where):
    from backends.gpu.cuda.conv2d import Epilogue
    from backends.gpu.cuda.depthwise import DEPTHWISE_TACTICS, DepthwiseGeometry, DepthwiseProblem

    cases = []
    for storage, epilogue in itertools.product((F32, F16), (None, Epilogue())):
        for shape in ((1, 9, 9, 8), (2, 33, 31, 40), (1, 64, 64, 24), (128, 32, 32, 24)):
            x, w, b = _zeros(shape, storage), _zeros((1, 3, 3, shape[3]), storage), _zeros(shape[3], storage)
            geometry = DepthwiseGeometry.of(shape, w.shape, 1, 1, "SAME")
            problem = DepthwiseProblem(geometry, np.dtype(storage).name, epilogue is not None, epilogue, RESIDENT_THREADS)
            arguments = {"storage": storage, "epilogue": epilogue}
            cases.append((problem, arguments, lambda launcher, x=x, w=w, b=b: launcher(x, w, b)))
    walk_table(where, DEPTHWISE_TACTICS, cases)


@probe
def probe_bias_activation(where):
    from backends.gpu.cuda.sources import BiasActivationCuda

    for storage, size in itertools.product((F32, F16), EXTENTS):
        BiasActivationCuda(storage=storage, **where(BiasActivationCuda.source))(_zeros((size, 3), storage), _zeros(3, storage))


@probe
def probe_elementwise(where):
    from backends.gpu.cuda.elementwise import BINARY_OPS, UNARY_OPS, ElementwiseBinaryCuda, ElementwiseUnaryCuda

    for storage in (F32, F16):
        for op in BINARY_OPS:
            ElementwiseBinaryCuda(op, storage=storage, **where(ElementwiseBinaryCuda.source))(_zeros((2, 3, 4), storage), _zeros(4, storage))
        for op in UNARY_OPS:
            bounds = (0.0, 6.0) if op == "CLAMP" else None
            ElementwiseUnaryCuda(op, bounds=bounds, storage=storage, **where(ElementwiseUnaryCuda.source))(_zeros((1000,), storage))


@probe
def probe_windows(where):
    from backends.gpu.cuda.windows import MeanCuda, Pool2DCuda, ResizeBilinearCuda, ResizeNearestCuda, bilinear_tables

    for storage in (F32, F16):
        x = _zeros((2, 9, 8, 5), storage)
        for is_max in (False, True):
            Pool2DCuda(is_max, (3, 3), 2, "SAME", storage=storage, **where(Pool2DCuda.source))(x)
        for axes in ((1, 2), (3,), (0, 1, 2, 3)):
            MeanCuda(axes, storage, **where(MeanCuda.source))(x)
        tables = bilinear_tables(9, 8, 17, 15, False, True)
        ResizeBilinearCuda(storage, **where(ResizeBilinearCuda.source))(x, *tables)
        rows, cols = np.zeros(17, np.int32), np.zeros(15, np.int32)
        ResizeNearestCuda(storage, **where(ResizeNearestCuda.source))(x, rows, cols)


@probe
def probe_layout(where):
    from backends.gpu.cuda.layout import ConcatenationCuda, GatherAxesCuda, PadCuda

    for storage in (F32, F16):
        x = _zeros((2, 3, 4), storage)
        PadCuda(storage, **where(PadCuda.source))(x, ((1, 0), (0, 2), (3, 1)))
        ConcatenationCuda(1, storage=storage, **where(ConcatenationCuda.source))([x] * 11)
    for dtype in (np.uint8, np.uint16, np.uint32):
        x = _zeros((2, 3, 4), dtype)
        tables = np.zeros(1 + 2 + 5 + 6, np.int32)  # left-padded to 4-D
        GatherAxesCuda(**where(GatherAxesCuda.source))(x, tables, (2, 5, 6))


@probe
def probe_space_batch(where):
    from backends.gpu.cuda.space_batch import SpaceBatchCuda, SpaceBatchGeometry

    for dtype, to_batch in itertools.product((np.int8, np.float16, np.float32), (True, False)):
        if to_batch:
            geometry = SpaceBatchGeometry.space_to_batch((1, 4, 6, 3), (2, 2), ((0, 0), (1, 1)))
        else:
            geometry = SpaceBatchGeometry.batch_to_space((4, 2, 4, 3), (2, 2), ((0, 0), (1, 1)))
        SpaceBatchCuda(geometry, to_batch, **where(SpaceBatchCuda.source))(_zeros(geometry.in_shape, dtype), geometry.out_shape)


@probe
def probe_quantized_convolutions(where):
    from backends.gpu.cuda.conv2d import conv2d_filter_layout
    from backends.gpu.cuda.conv_int8 import Conv2DInt8Cuda, DepthwiseConv2DInt8Cuda, OutputStage

    stage = OutputStage(0, 0, 0, -128, 127)
    for dtype in (np.int8, np.uint8):
        for shape, channels in (((1, 9, 9, 8), 16), ((2, 20, 20, 4), 40)):
            x, bias = _zeros(shape, dtype), np.zeros(channels, np.int32)
            multipliers, shifts = np.ones(channels, np.int32), np.zeros(channels, np.int32)
            w = conv2d_filter_layout(_zeros((channels, 3, 3, shape[3]), dtype), 1)
            Conv2DInt8Cuda((1, 1), (1, 1), "SAME", stage, **where(Conv2DInt8Cuda.source))(x, w, bias, multipliers, shifts)
            dw = _zeros((1, 3, 3, shape[3]), dtype)
            bias, multipliers, shifts = bias[: shape[3]], multipliers[: shape[3]], shifts[: shape[3]]
            DepthwiseConv2DInt8Cuda((1, 1), (1, 1), "SAME", stage, **where(DepthwiseConv2DInt8Cuda.source))(x, dw, bias, multipliers, shifts)


@probe
def probe_quantized_products(where):
    from backends.gpu.cuda.conv_int8 import BatchMatmulInt8Cuda, OutputStage
    from backends.gpu.cuda.cublas import FullyConnectedInt8Problem, fully_connected_int8_tactics

    stage = OutputStage(0, 0, 0, -128, 127)
    cases = []
    for dtype in (np.int8, np.uint8):
        for rows, units in itertools.product(EXTENTS, (1, 2, 10, 33, 1000)):
            x, w, scales = _zeros((rows, 64), dtype), _zeros((64, units), dtype), np.ones(units, np.float64)
            problem = FullyConnectedInt8Problem(rows, 64, units, np.dtype(dtype).name, 0, True, vendor_gemm=True)
            cases.append((problem, {"stage": stage}, lambda launcher, x=x, w=w, scales=scales: launcher(x, w, None, scales)))
    walk_table(where, fully_connected_int8_tactics(), cases)
    for m, n in itertools.product(EXTENTS, (1, 70)):
        BatchMatmulInt8Cuda(stage, 1 << 30, 0, **where(BatchMatmulInt8Cuda.source))(_zeros((2, m, 8), np.int8), _zeros((2, 8, n), np.int8))


@probe
def probe_quantized_windows(where):
    from backends.gpu.cuda.int8_windows import (
        QuantizedMeanCuda, QuantizedMeanParams, QuantizedPool2DCuda, QuantizedSoftmaxCuda, QuantizedSoftmaxParams,
    )

    for dtype in (np.int8, np.uint8):
        for is_max in (False, True):
            QuantizedPool2DCuda(is_max, (3, 3), (2, 2), "SAME", (-128, 127), dtype, **where(QuantizedPool2DCuda.source))(_zeros((2, 9, 8, 5), dtype))
        mean = QuantizedMeanParams(0, 1 << 30, 0, 0, (-128, 127))
        for kept, reduced in itertools.product(EXTENTS, (1, 7, 49, 300)):
            for axes, shape in (((1, 2), (1, reduced, 1, kept)), ((2,), (kept, 1, reduced))):
                out_shape = tuple(d for k, d in enumerate(shape) if k not in axes)
                QuantizedMeanCuda(axes, mean, dtype, **where(QuantizedMeanCuda.source))(_zeros(shape, dtype), out_shape)
        softmax = QuantizedSoftmaxParams(255, 0, -128, 127)
        tables = np.zeros(511, np.int32)
        for out_dtype in (dtype, np.int16):
            for rows, depth in itertools.product(EXTENTS, (1, 2, 10, 300, 5000)):
                QuantizedSoftmaxCuda(softmax, dtype, out_dtype, **where(QuantizedSoftmaxCuda.source))(_zeros((rows, depth), dtype), tables, tables)


@probe
def probe_quantized_elementwise(where):
    from backends.gpu.cuda.int8_elementwise import (
        BINARY_OPS, ChannelLayout, DequantizeCuda, LookupCuda, PairLookupCuda, QuantizeCuda, QuantizedBinaryParams,
    )

    for dtype in (np.int8, np.uint8):
        for op in BINARY_OPS:
            params = QuantizedBinaryParams(op, (0, 0, 0), (1 << 30, 0), (1 << 30, 0), (1 << 30, 0), (-128, 127))
            from backends.gpu.cuda.int8_elementwise import QuantizedBinaryCuda

            QuantizedBinaryCuda(params, dtype, **where(QuantizedBinaryCuda.source))(_zeros((2, 3, 4), dtype), _zeros(4, dtype))
        for storage in (F32, F16):
            layout = ChannelLayout.of((2, 3, 4), 2)
            scales, zero_points = np.ones(4, np.float32), np.zeros(4, np.int32)
            QuantizeCuda(dtype, layout, (-128, 127), **where(QuantizeCuda.source))(_zeros((2, 3, 4), storage), scales, zero_points)
            DequantizeCuda(dtype, storage, layout, **where(DequantizeCuda.source))(_zeros((2, 3, 4), dtype), scales, zero_points)
    table = np.zeros(256, np.uint8)
    LookupCuda(**where(LookupCuda.source))(_zeros((5, 7), np.int8), table)
    PairLookupCuda(**where(PairLookupCuda.source))(_zeros((5, 7), np.int8), _zeros((5, 7), np.int8), np.zeros(65536, np.uint8))


@probe
def probe_quantized_layout(where):
    from backends.gpu.cuda.int8_layout import ByteConcatenationCuda, BytePadCuda

    x = _zeros((2, 3, 4), np.int8)
    BytePadCuda((0, 1, 0), (1, 0, 2), 3, np.int8, **where(BytePadCuda.source))(x)
    ByteConcatenationCuda(1, **where(ByteConcatenationCuda.source))([x] * 11)


@probe
def probe_mediapipe_attention(where):
    from backends.cpu.kernels.mediapipe_attention import LandmarksToTransformMatrixOptions
    from backends.gpu.cuda.mediapipe_attention import (
        LandmarksToTransformMatrixCuda, TransformLandmarksCuda, TransformTensorBilinearCuda,
    )

    options = LandmarksToTransformMatrixOptions((0, 1, 2), 0, 1, 0.0, 16, 16, 1.5, 1.5)
    for storage in (F32, F16):
        LandmarksToTransformMatrixCuda(options, storage, **where(LandmarksToTransformMatrixCuda.source))(
            _zeros((1, 3, 3), storage), np.zeros(3, np.int32))
        TransformTensorBilinearCuda(16, 16, storage, **where(TransformTensorBilinearCuda.source))(
            _zeros((1, 48, 48, 32), storage), _zeros((1, 4, 4), storage))
        TransformLandmarksCuda(storage, **where(TransformLandmarksCuda.source))(_zeros((1, 80, 2), storage), _zeros((1, 4, 4), storage))
