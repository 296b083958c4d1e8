"""``GpuDelegate``: runs the nodes its kernels support, at their versions, on a CUDA device.

>>> interpreter.modify_graph_with_delegate(GpuDelegate())            # a real GPU (device 0)
>>> interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))  # host emulation, by name

Every partition becomes one delegate node with a device plan: constants uploaded once at
prepare (in the layout each op wants), inputs uploaded and outputs downloaded once per
invoke, every tensor inside the partition kept on the device. On a CUDA device the ops run
on the delegate's own stream with CuPy's memory pool, and repeated invokes replay a
captured CUDA graph when CuPy can capture the partition.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from backends.gpu.device import Device, open_device
from backends.gpu.ops import gpu_op_classes, gpu_support_table
from backends.gpu.ops.base import GpuOp
from delegate_sdk.delegate import DelegateKernel, DelegateParams, SimpleDelegate
from delegate_sdk.node import Node

PRECISIONS = {"float32": np.float32, "float16": np.float16}


class GpuDelegate(SimpleDelegate):
    """The CuPy GPU delegate.

    Args:
      device: CUDA device id, or ``"host"`` to emulate the device with numpy (asked for by
        name; without it, a machine with no usable GPU raises ``GpuUnavailableError``).
      precision: ``"float32"``, or ``"float16"`` (float16 storage, float32 accumulation).
      max_delegated_partitions, min_nodes_per_partition, excluded_ops, version_caps: as
        ``SimpleDelegate``; ``version_caps={BuiltinOperator.DEPTHWISE_CONV_2D: 1}`` behaves
        like a delegate that predates dilation.
      cuda_graphs: replay a captured CUDA graph for repeated invokes (real devices only).
    """

    name = "GpuDelegate"
    supports_dynamic_tensors = False

    def __init__(
        self,
        device: int | str = 0,
        precision: str = "float32",
        *,
        max_delegated_partitions: int = 0,
        min_nodes_per_partition: int = 1,
        excluded_ops: Sequence[int] = (),
        version_caps: Mapping[int, int] | None = None,
        cuda_graphs: bool = True,
    ) -> None:
        super().__init__(
            max_delegated_partitions=max_delegated_partitions,
            min_nodes_per_partition=min_nodes_per_partition,
            version_caps=version_caps,
            excluded_ops=excluded_ops,
        )
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
        self.precision = precision
        self.storage = np.dtype(PRECISIONS[precision])
        self.device: Device = open_device(device)
        self.cuda_graphs = cuda_graphs and not self.device.is_host
        self.op_classes = gpu_op_classes()
        self.support_table = gpu_support_table()
        self.kernels: list[GpuPartitionKernel] = []

    @property
    def transfers(self):
        """Host<->device traffic so far (uploads, downloads, bytes)."""
        return self.device.transfers

    def node_rejection_reason(self, context, node: Node, registration) -> str | None:
        op_class = self.op_classes[registration.builtin_code]
        return op_class.rejection_reason(node, registration.builtin_code, registration.version, context.tensors)

    kernel_class = None  # built per delegate below, so each kernel knows its delegate

    def kernel_registration(self):
        delegate = self

        class _Kernel(GpuPartitionKernel):
            def init(self, context, params):
                super().init(context, params)
                delegate.kernels.append(self)

        self.kernel_class = _Kernel
        return super().kernel_registration()

    def __repr__(self) -> str:
        return f"GpuDelegate(device={self.device.name!r}, precision={self.precision!r})"


class GpuPartitionKernel(DelegateKernel):
    """One GPU partition: its ops, its device-resident constants, its plan."""

    def init(self, context, params: DelegateParams) -> None:
        self.params = params
        self.delegate: GpuDelegate = params.delegate
        self.device = self.delegate.device
        self.inner = [context.get_node_and_registration(i) for i in params.nodes_to_replace]
        self.graph = None
        self.invokes = 0

    def prepare(self, context, node: Node) -> None:
        # Shapes: the CPU kernels' prepare propagates them (and folds constant nodes).
        for inner, registration in self.inner:
            if registration.prepare is not None:
                registration.prepare(context, inner)
        tensors = context.tensors
        self.constants: dict[int, Any] = {}
        self.steps: list[tuple[GpuOp, Node]] = []
        for inner, registration in self.inner:
            outputs = [tensors[t] for t in inner.outputs]
            if outputs and all(t.is_constant for t in outputs):
                for tensor in outputs:  # folded at prepare: a constant like any other
                    self.constants[tensor.index] = self._upload_constant(tensor)
                continue
            op_class = self.delegate.op_classes[registration.builtin_code]
            op = op_class(self.device, inner, registration.builtin_code, registration.version, tensors, self.delegate.storage)
            op.prepare()
            self.steps.append((op, inner))
            for t in inner.inputs:
                if t >= 0 and tensors[t].is_constant and t not in self.constants:
                    self.constants[t] = self._upload_constant(tensors[t])
        self.runtime_inputs = [t for t in node.inputs if not tensors[t].is_constant]
        self.graph = None
        self.invokes = 0

    def _upload_constant(self, tensor) -> Any:
        """Float constants in the storage dtype; integer ones (paddings, axes) as they are."""
        dtype = self.delegate.storage if tensor.data.dtype.kind == "f" else None
        return self.device.upload(tensor.data, dtype=dtype)

    def eval(self, context, node: Node) -> None:
        tensors = context.tensors
        if self.graph is not None:
            self._replay(tensors)
            return
        values = dict(self.constants)
        for t in self.runtime_inputs:
            values[t] = self.device.upload(tensors[t].data, dtype=self.delegate.storage)
        self._run_ops(values)
        for t in node.outputs:
            self.device.download(values[t], tensors[t].data)
        self.device.synchronize()
        self.invokes += 1
        if self.delegate.cuda_graphs and self.invokes == 2:
            self._capture(values)

    def _run_ops(self, values: dict[int, Any]) -> None:
        for op, inner in self.steps:
            results = op.run([values[t] if t >= 0 else None for t in inner.inputs])
            values.update(zip(inner.outputs, results))

    # -- CUDA graphs (real devices only) -------------------------------------------------------
    def _capture(self, values: dict[int, Any]) -> None:
        """Capture the partition's ops on the delegate's stream, reading fixed input buffers."""
        stream = self.device.stream
        self.graph_inputs = {t: values[t] for t in self.runtime_inputs}
        captured = dict(values)
        try:
            with self.device.cuda_device:
                stream.begin_capture()
                try:
                    with stream:
                        self._run_ops(captured)
                finally:
                    graph = stream.end_capture()
        except Exception as error:  # some ops cannot be captured (host syncs): stay eager
            warnings.warn(f"GpuDelegate: CUDA graph capture failed, running eagerly ({error})", RuntimeWarning)
            self.delegate.cuda_graphs = False
            return
        self.graph = graph
        self.graph_outputs = {t: captured[t] for t in self.params.output_tensors}

    def _replay(self, tensors) -> None:
        for t, buffer in self.graph_inputs.items():
            self.device.transfers.uploads += 1
            self.device.transfers.upload_bytes += tensors[t].data.nbytes
            with self.device.cuda_device:
                buffer.set(np.ascontiguousarray(tensors[t].data, dtype=buffer.dtype), stream=self.device.stream)
        with self.device.cuda_device:
            self.graph.launch(stream=self.device.stream)
        for t, value in self.graph_outputs.items():
            self.device.download(value, tensors[t].data)
        self.device.synchronize()
