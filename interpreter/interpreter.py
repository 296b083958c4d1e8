"""``Interpreter``: the LiteRT-compatible Python API.

Code written for ``ai_edge_litert.interpreter.Interpreter`` runs unchanged with
``from interpreter import Interpreter``.
"""

from __future__ import annotations

import enum

import os
import sys
import warnings
from typing import Any, Sequence

import numpy as np

from delegate_sdk.context import KernelError
from delegate_sdk.op_resolver import OpResolver, resolve_model
from delegate_sdk.tensor import RuntimeTensor
from interpreter.delegation import DelegationReport, NodePlacement, apply_delegate, placements
from interpreter.string_values import holds_unset_strings, is_string_value, strings_for_tensor
from interpreter.subgraph import SharedState, SubgraphRuntime
from schema.enums import TENSOR_TYPE_OF_NUMPY_DTYPE, TensorType, tensor_type_name
from schema.packed import BITS_OF_PACKED_TYPE, check_values
from schema.model import Model


#: The thread count of an Interpreter given no ``num_threads``.
DEFAULT_NUM_THREADS = 1


class Interpreter:
    """Runs a ``.tflite`` model on the CPU kernels and any delegates applied to it.

    Args:
      model_path: path of a ``.tflite`` file.
      model_content: the model's bytes (give one of ``model_path`` / ``model_content``).
      experimental_delegates: delegates applied in order, as ``modify_graph_with_delegate``.
      num_threads: threads of every thread pool the CPU kernels use (numpy's BLAS, and any
        OpenMP pool threadpoolctl finds), for this interpreter's invokes and allocations
        only: set when one starts, put back when it ends, so two interpreters keep their
        own (>= 1). None: one thread (``DEFAULT_NUM_THREADS``), as LiteRT, whose XNNPACK
        delegate runs without a thread pool unless asked for more; a default of every
        core made an invoke 2.8x slower beside one busy process on 2 cores (see the
        README's performance section).
      experimental_preserve_all_tensors: keep every intermediate tensor readable after invoke.
      experimental_max_while_iterations: the most iterations one WHILE node may run in
        one invoke (default: no bound); past it the invoke fails naming the node.
      experimental_arena_limit_bytes: the most memory one subgraph's intermediate tensors
        may take at once (default: half the machine's physical memory); above it
        ``allocate_tensors`` raises ``ArenaLimitError`` naming the largest tensors.
      op_resolver: which kernels run which (op, version); defaults to every CPU kernel.
        Use ``builtin_op_resolver().capped({...})`` or ``.as_of_release(...)`` to behave
        like an older runtime.
      experimental_op_resolver_type: an ``OpResolverType`` as in LiteRT. Every value runs
        the same CPU kernels here (numpy implementations of TFLite's reference kernels,
        so BUILTIN and BUILTIN_REF agree), and none applies a default delegate (LiteRT's
        AUTO/BUILTIN may apply XNNPACK; apply a delegate here with ``experimental_delegates``
        or ``modify_graph_with_delegate``). Anything else is a ValueError, as in LiteRT.
      experimental_disable_delegate_clustering, experimental_default_delegate_latest_features,
      experimental_compress_quantization_zero_points, experimental_disable_delegate_node_fusion,
      experimental_force_delegate_node_profiling: LiteRT's tuning switches for its own
        delegates and memory layout; accepted for compatibility and without effect here.
        Any other keyword is a TypeError (a misspelt option must not pass unnoticed).

    Raises:
      ValueError: no model or both given, a malformed model (``schema.errors.ModelError``),
        or nodes the resolver cannot run (``UnsupportedOperatorError``, which lists them all).
    """

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        model_content: bytes | None = None,
        experimental_delegates: Sequence[Any] | None = None,
        num_threads: int | None = None,
        experimental_op_resolver_type: Any = None,
        experimental_preserve_all_tensors: bool = False,
        op_resolver: OpResolver | None = None,
        experimental_arena_limit_bytes: int | None = None,
        experimental_max_while_iterations: int | None = None,
        experimental_disable_delegate_clustering: bool = False,
        experimental_default_delegate_latest_features: bool = False,
        experimental_compress_quantization_zero_points: bool = False,
        experimental_disable_delegate_node_fusion: bool = False,
        experimental_force_delegate_node_profiling: bool = False,
    ) -> None:
        self.op_resolver_type = _op_resolver_type(experimental_op_resolver_type)
        if num_threads is not None:
            if not isinstance(num_threads, int) or isinstance(num_threads, bool):
                raise ValueError("type of num_threads should be int")
            if num_threads < 1:
                raise ValueError("num_threads should >= 1")
        #: threads of every pool a CPU kernel uses (BLAS), while this interpreter runs
        self.num_threads = DEFAULT_NUM_THREADS if num_threads is None else num_threads
        if model_content is not None and not isinstance(model_content, (bytes, bytearray, memoryview)):
            hint = " (pass array.tobytes())" if isinstance(model_content, np.ndarray) else ""
            raise TypeError(
                f"model_content must be the model's bytes (bytes, bytearray or memoryview), got "
                f"{type(model_content).__name__}{hint}"
            )
        if model_path and not model_content:
            self._model = Model.from_path(model_path)
        elif model_content and not model_path:
            self._model = Model.from_bytes(model_content)
        elif not model_content and not model_path:
            raise ValueError("`model_path` or `model_content` must be specified.")
        else:
            raise ValueError("Can't both provide `model_path` and `model_content`")
        if op_resolver is None:
            from backends.cpu import builtin_op_resolver

            op_resolver = builtin_op_resolver()
        self._op_resolver = op_resolver
        registrations = resolve_model(self._model, op_resolver)
        if experimental_arena_limit_bytes is not None:
            experimental_arena_limit_bytes = _index_argument(experimental_arena_limit_bytes, "experimental_arena_limit_bytes")
            if experimental_arena_limit_bytes < 0:
                raise ValueError("experimental_arena_limit_bytes must not be negative")
        if experimental_max_while_iterations is not None:
            experimental_max_while_iterations = _index_argument(
                experimental_max_while_iterations, "experimental_max_while_iterations"
            )
            if experimental_max_while_iterations < 0:
                raise ValueError("experimental_max_while_iterations must not be negative")
        self._shared = SharedState(
            num_threads=self.num_threads,
            preserve_all_tensors=experimental_preserve_all_tensors,
            arena_limit_bytes=experimental_arena_limit_bytes,
            max_while_iterations=experimental_max_while_iterations,
        )
        self._subgraphs = [
            SubgraphRuntime(self._shared, subgraph, subgraph_registrations)
            for subgraph, subgraph_registrations in zip(self._model.subgraphs, registrations)
        ]
        self._shared.subgraphs = self._subgraphs
        self._main_tensors = self._subgraphs[0].tensors  # (the per-call fast paths read it)
        for subgraph in self._subgraphs:
            subgraph.init_nodes()
        # Folded before the first delegate looks at the graph (not here: folding prepares
        # nodes, which allocate_tensors does anyway, and loading stays cheap).
        self._constants_folded = False
        #: tensor() views: (subgraph, tensor) -> (the buffer, the base array its views are cut from)
        self._held_views: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._delegates: list[Any] = []
        self._reports: list[DelegationReport] = []
        self._before_delegation: list[tuple] | None = None
        self._num_model_nodes = [len(subgraph.operators) for subgraph in self._model.subgraphs]
        for delegate in experimental_delegates or ():
            self.modify_graph_with_delegate(delegate)

    # -- the model ---------------------------------------------------------------------------
    @property
    def model(self) -> Model:
        """The parsed model (read view)."""
        return self._model

    @property
    def _main(self) -> SubgraphRuntime:
        return self._subgraphs[0]

    def num_subgraphs(self) -> int:
        """Number of subgraphs in the model."""
        return len(self._subgraphs)

    # -- allocation and running ------------------------------------------------------------
    def allocate_tensors(self) -> None:
        """Prepare every node (propagating shapes) and allocate the tensors."""
        self._ensure_safe()
        self._main.allocate_tensors()

    def invoke(self) -> None:
        """Run the main subgraph once.

        Raises:
          RuntimeError: tensors are not allocated, a ``tensor()`` view is still held, or a
            kernel failed (the message names the node, op and version).
        """
        self._ensure_safe()
        self._shared.cancel_requested = False
        self._main.invoke()

    def cancel(self) -> None:
        """Stop the invoke in flight (callable from any thread, as TFLite's
        ``Interpreter::Cancel``): it raises ``InvokeCancelledError`` ("Client requested
        cancel during Invoke()") before its next node, or its next WHILE iteration. The
        interpreter stays usable; the outputs of a cancelled invoke are undefined. A
        cancel while no invoke runs is forgotten when the next one starts."""
        self._shared.cancel_requested = True

    def invoke_profiled(self) -> list[dict[str, Any]]:
        """Invoke once and return the time of every plan step of the main subgraph:
        ``[{'index', 'op_name', 'version', 'seconds', 'delegate', 'replaces'}]``."""
        self._ensure_safe()
        self._shared.cancel_requested = False
        profile = []
        for node_index, seconds in self._main.invoke_profiled():
            node, registration = self._main.get_node_and_registration(node_index)
            params = node.delegate_params
            profile.append({
                "index": node_index,
                "op_name": registration.op_name,
                "version": registration.version,
                "seconds": seconds,
                "delegate": registration.name or None,
                "replaces": list(params.nodes_to_replace) if params is not None else [node_index],
            })
        return profile

    def reset_all_variables(self) -> None:
        """Reset every variable tensor of every subgraph to zero (an int8 one to its zero
        point), as LiteRT's ``ResetVariableTensor``; variables start so at their first
        allocation too. Resource variables (VAR_HANDLE) keep their values, as in LiteRT."""
        for subgraph in self._subgraphs:
            subgraph.reset_variables()

    # -- tensors ---------------------------------------------------------------------------
    def _subgraph(self, subgraph_index: int) -> SubgraphRuntime:
        if not 0 <= subgraph_index < len(self._subgraphs):
            raise ValueError(
                f"subgraph_index is out of range: {subgraph_index} for the model, which has "
                f"{len(self._subgraphs)} subgraphs."
            )
        return self._subgraphs[subgraph_index]

    def _tensor(self, tensor_index: int, subgraph_index: int = 0) -> RuntimeTensor:
        subgraph = self._subgraph(subgraph_index)
        tensor_index = _index_argument(tensor_index, "tensor_index")
        if not 0 <= tensor_index < len(subgraph.tensors):
            raise ValueError(
                f"Invalid tensor index {tensor_index} exceeds max tensor index {len(subgraph.tensors)}"
            )
        return subgraph.tensors[tensor_index]

    def _get_tensor_details(self, tensor_index: int, subgraph_index: int) -> dict[str, Any]:
        tensor = self._tensor(tensor_index, subgraph_index)
        quantization = tensor.quantization
        if quantization is not None and quantization.is_quantized:
            scales = quantization.scale.astype(np.float32)
            zero_points = quantization.zero_point.astype(np.int32)
            dimension = int(quantization.quantized_dimension)
        else:
            scales, zero_points, dimension = np.zeros(0, np.float32), np.zeros(0, np.int32), 0
        per_tensor = (float(scales[0]), int(zero_points[0])) if scales.size == 1 else (0.0, 0)
        signature = tensor.shape_signature if tensor.shape_signature is not None else tensor.shape
        return {
            "name": tensor.name,
            "index": int(tensor_index),
            "shape": np.array(tensor.shape, dtype=np.int32),
            "shape_signature": np.array(signature, dtype=np.int32),
            "dtype": _reported_dtype(tensor),
            "quantization": per_tensor,
            "quantization_parameters": {
                "scales": scales,
                "zero_points": zero_points,
                "quantized_dimension": dimension,
                "block_size": 0,
            },
            "sparsity_parameters": _sparsity_details(tensor),
        }

    def get_tensor_details(self, subgraph_index: int = 0) -> list[dict[str, Any]]:
        """Details of every tensor of a subgraph (same keys as LiteRT)."""
        subgraph = self._subgraph(subgraph_index)
        return [self._get_tensor_details(i, subgraph_index) for i in range(len(subgraph.tensors))]

    def get_input_details(self) -> list[dict[str, Any]]:
        """Details of the main subgraph's inputs: name, index, shape, shape_signature,
        dtype, quantization, quantization_parameters, sparsity_parameters."""
        return [self._get_tensor_details(i, 0) for i in self._main.inputs]

    def get_output_details(self) -> list[dict[str, Any]]:
        """Details of the main subgraph's outputs (same keys as the inputs')."""
        return [self._get_tensor_details(i, 0) for i in self._main.outputs]

    def set_tensor(self, tensor_index: int, value: Any, subgraph_index: int = 0) -> None:
        """Copy ``value`` into a tensor (normally an input).

        A STRING tensor (dtype ``numpy.bytes_`` in the details) takes, as in LiteRT, a numpy
        array of dtype ``S`` (bytes), ``U`` (str, stored as UTF-8) or object (bytes or str
        elements), not a list or a bare ``bytes``; a 0-d ``S`` / ``U`` array is stored as its
        raw buffer, padding included (see ``interpreter.string_values``). An INT4 or INT2
        tensor (dtype ``numpy.int8`` in the details) takes int8 values in [-8, 7] or [-2, 1],
        a UINT4 tensor uint8 values in [0, 15], one value an element, as in LiteRT.

        Raises:
          ValueError: the dtype or shape differs from the tensor's (the message names the
            tensor and says what was expected), tensors are not allocated, or a STRING value
            is not an array of bytes / str.
        """
        if subgraph_index == 0 and type(value) is np.ndarray and type(tensor_index) is int:
            # The usual call, checked at the cost of a few comparisons: an array of the
            # tensor's dtype and shape into its buffer (anything else: the checks below).
            tensors = self._main_tensors
            if 0 <= tensor_index < len(tensors):
                data = tensors[tensor_index].data
                if (data is not None and value.dtype == data.dtype and value.shape == data.shape and data.dtype is not _OBJECT
                        and tensors[tensor_index].type not in BITS_OF_PACKED_TYPE):  # (sub-byte values: range checked below)
                    try:
                        data[...] = value  # (a constant's buffer is read-only: the checks below say so)
                        return
                    except ValueError:
                        pass
        tensor = self._tensor(tensor_index, subgraph_index)
        given_value = value
        value = np.asarray(value)
        where = f"tensor {int(tensor_index)}, name: {tensor.name}"
        is_string = tensor.type == TensorType.STRING
        if (is_string and not is_string_value(value)) or (
            not is_string and (tensor.dtype is None or value.dtype != tensor.dtype)
        ):
            given = TensorType.STRING if is_string_value(value) else TENSOR_TYPE_OF_NUMPY_DTYPE.get(value.dtype)
            given_name = tensor_type_name(given) if given is not None else str(value.dtype)
            raise ValueError(
                f"Cannot set tensor: Got value of type {given_name} but expected type "
                f"{tensor.type_name} for {where}"
            )
        if value.ndim != len(tensor.shape):
            raise ValueError(
                f"Cannot set tensor: Dimension mismatch. Got {value.ndim} but expected "
                f"{len(tensor.shape)} for {where}"
            )
        for axis, (got, expected) in enumerate(zip(value.shape, tensor.shape)):
            if got != expected:
                raise ValueError(
                    f"Cannot set tensor: Dimension mismatch. Got {got} but expected {expected} "
                    f"for dimension {axis} of {where} (call resize_tensor_input first to change it)"
                )
        if tensor.is_constant:
            raise ValueError(f"Cannot set tensor: {where} is a constant of the model")
        if tensor.type in BITS_OF_PACKED_TYPE:  # int8 / uint8 values, as in LiteRT, in the type's range
            check_values(value, tensor.type, "input")
        if is_string:
            value = strings_for_tensor(given_value, value)
            if tensor.data is None:  # LiteRT takes strings before allocate_tensors, and keeps them
                tensor.data = np.empty(tensor.shape, dtype=object)
        if tensor.data is None:
            raise ValueError("Tensor data is null. Run allocate_tensors() first")
        tensor.data[...] = value

    def get_tensor(self, tensor_index: int, subgraph_index: int = 0) -> np.ndarray:
        """A copy of a tensor's value (for a STRING tensor, an object array of ``bytes``)."""
        if subgraph_index == 0 and type(tensor_index) is int:
            tensors = self._main_tensors
            if 0 <= tensor_index < len(tensors):
                tensor = tensors[tensor_index]
                data = tensor.data
                if data is not None and data.dtype is not _OBJECT and tensor.type not in _HANDLE_TYPE_VALUES:
                    return data.copy()  # (strings and handles: below)
        tensor = self._tensor(tensor_index, subgraph_index)
        if tensor.data is None or tensor.type in _HANDLE_TYPES:
            raise ValueError(self._null_data_message(tensor_index, subgraph_index))
        if tensor.type == TensorType.STRING and holds_unset_strings(tensor.data):
            raise ValueError(
                f"Tensor data is null: STRING tensor {int(tensor_index)} ({tensor.name!r}) holds no strings yet "
                "(set_tensor writes an input; invoke computes the others)"
            )
        return np.array(tensor.data, copy=True)

    def _null_data_message(self, tensor_index: int, subgraph_index: int = 0) -> str:
        """LiteRT's "Tensor data is null" with the reason that applies."""
        subgraph = self._subgraph(subgraph_index)
        tensor = subgraph.tensors[int(tensor_index)]
        if tensor.type in _HANDLE_TYPES:
            return (
                f"Tensor data is null: tensor {int(tensor_index)} ({tensor.name!r}) is a {tensor.type_name} handle, "
                "which holds no value readable from Python (as in LiteRT)"
            )
        if not subgraph.allocated:
            return "Tensor data is null. Run allocate_tensors() first"
        written = any(int(tensor_index) in node.outputs for node in subgraph.nodes)
        if not written and int(tensor_index) not in subgraph.inputs:
            return (
                f"Tensor data is null: no node of the model writes tensor {int(tensor_index)} ({tensor.name!r}) "
                "and it is not an input, so it never has a value"
            )
        return f"Tensor data is null: tensor {int(tensor_index)} ({tensor.name!r}) has no buffer now (a dynamic tensor not computed yet)"

    def tensor(self, tensor_index: int):
        """A function returning a numpy view of the tensor's current buffer (no copy).

        As in LiteRT, ``invoke`` and ``allocate_tensors`` refuse while such a view is held.
        """
        tensor = self._tensor(tensor_index)
        if tensor.data is None:
            raise ValueError(self._null_data_message(tensor_index))
        key = (0, int(tensor_index))
        held = self._held_views

        def view() -> np.ndarray:
            data = tensor.data
            entry = held.get(key)
            if entry is None or entry[0] is not data:
                if data is None:
                    raise ValueError(self._null_data_message(tensor_index))
                entry = held[key] = (data, _HeldView.base_of(data))
            return entry[1][...]

        return view

    def _safe_to_run(self) -> bool:
        """Whether no numpy view from ``tensor()`` is held (LiteRT's check before
        ``invoke``, ``allocate_tensors`` and ``resize_tensor_input``)."""
        return not (self._held_views and _HeldView.any_held(self._held_views))

    def _ensure_safe(self) -> None:
        if self._held_views and _HeldView.any_held(self._held_views):
            raise RuntimeError(
                "There is at least 1 reference to internal data in the interpreter in the form of a "
                "numpy array or slice. Be sure to only hold the function returned from tensor() if "
                "you are using raw data access."
            )

    def resize_tensor_input(self, input_index: int, tensor_size: Sequence[int], strict: bool = False) -> None:
        """Give an input a new shape; call ``allocate_tensors`` afterwards.

        With ``strict=True`` only dimensions that are -1 in ``shape_signature`` may change.
        """
        self._ensure_safe()
        tensor = self._tensor(input_index)
        if int(input_index) not in self._main.inputs:
            raise RuntimeError(
                f"Attempting to resize a fixed-size tensor: tensor {int(input_index)} ({tensor.name}) is not an input "
                "of the model"
            )
        new_shape = _shape_argument(tensor_size, tensor.name)
        if strict:
            signature = tensor.shape_signature if tensor.shape_signature is not None else tensor.shape
            if len(new_shape) != len(signature):
                raise ValueError(
                    f"ResizeInputTensorStrict only allows mutating unknown dimensions identified by -1: "
                    f"tensor {tensor.name} has rank {len(signature)}, got {list(new_shape)}"
                )
            for axis, (old, new) in enumerate(zip(signature, new_shape)):
                if old != -1 and old != new:
                    raise ValueError(
                        f"Attempting to resize dimension {axis} of tensor {int(input_index)} with value {old} "
                        f"to {new}. ResizeInputTensorStrict only allows mutating unknown dimensions "
                        "identified by -1."
                    )
        if new_shape != tensor.shape:
            tensor.shape = new_shape
            tensor.data = None
            self._main.allocated = False

    # -- signatures ------------------------------------------------------------------------
    def _get_full_signature_list(self) -> dict[str, dict[str, Any]]:
        return {
            signature.key: {"inputs": dict(signature.inputs), "outputs": dict(signature.outputs)}
            for signature in self._model.signature_defs
        }

    def get_signature_list(self) -> dict[str, dict[str, list[str]]]:
        """``{key: {'inputs': [names], 'outputs': [names]}}`` for every signature def."""
        return {
            key: {"inputs": list(value["inputs"]), "outputs": list(value["outputs"])}
            for key, value in self._get_full_signature_list().items()
        }

    def get_signature_runner(self, signature_key: str | None = None) -> "SignatureRunner":
        """A callable running one signature with keyword inputs; returns a dict of outputs."""
        signatures = self.get_signature_list()
        if signature_key is None:
            if len(signatures) != 1:
                raise ValueError(
                    f"SignatureDef signature_key is None and model has {len(signatures)} Signatures. "
                    "None is only allowed when the model has 1 SignatureDef"
                )
            signature_key = next(iter(signatures))
        return SignatureRunner(self, signature_key)

    # -- ops ---------------------------------------------------------------------------------
    def _get_ops_details(self) -> list[dict[str, Any]]:
        """Every node of the main subgraph's plan: index, op_name, version, inputs, outputs,
        operand_types, result_types (LiteRT's keys plus ``version``)."""
        return [self._get_op_details(i) for i in self._main.execution_plan]

    def get_ops_details(self) -> list[dict[str, Any]]:
        """Public alias of ``_get_ops_details``."""
        return self._get_ops_details()

    def _get_op_details(self, op_index: int) -> dict[str, Any]:
        node, registration = self._main.get_node_and_registration(op_index)
        tensors = self._main.tensors
        return {
            "index": int(op_index),
            "op_name": registration.op_name,
            "version": registration.version,
            "inputs": np.array(node.inputs, dtype=np.int32),
            "outputs": np.array(node.outputs, dtype=np.int32),
            "operand_types": [_operand_dtype(tensors[i]) for i in node.inputs if i >= 0 and tensors[i].dtype is not None],
            "result_types": [_operand_dtype(tensors[i]) for i in node.outputs if i >= 0 and tensors[i].dtype is not None],
        }

    # -- delegates ---------------------------------------------------------------------------
    def modify_graph_with_delegate(self, delegate: Any) -> DelegationReport:
        """Let ``delegate`` take the nodes it supports at their versions; returns the report.

        Delegates apply in order: a later one sees the plan the earlier ones left. May be
        called before or after ``allocate_tensors`` (an allocated interpreter is
        re-allocated). If the delegate raises in its ``prepare``, the plan is left exactly
        as it was (allocated if it was) and, as in LiteRT, the call raises.

        Raises:
          DelegatePrepareError: the delegate (or its kernels' init/prepare) raised; a
            ``RuntimeError`` starting "Restored original execution plan after delegate
            application failure", with the report as ``.report``.
          DelegateError: the delegate supports only static shapes and the graph has
            dynamic-sized tensors, is declared wrongly (``DelegateDeclarationError``) or
            asked for a bad replacement (``InvalidReplacementError``).
        """
        self._ensure_safe()
        if not callable(getattr(delegate, "prepare", None)):
            raise TypeError(
                f"{type(delegate).__name__} is not a delegate: a delegate has a prepare(subgraph) method "
                "(a delegate_sdk.Delegate, e.g. backends.gpu.GpuDelegate())"
            )
        was_allocated = self._main.allocated
        if not self._constants_folded:
            self._constants_folded = True
            for subgraph in self._subgraphs:
                subgraph.fold_constants()
        if self._before_delegation is None:
            self._before_delegation = [subgraph.snapshot() for subgraph in self._subgraphs]
        report = apply_delegate(self._subgraphs, self._num_model_nodes, delegate)
        self._reports.append(report)
        if report.error is None:
            self._delegates.append(delegate)
        if was_allocated:
            self._main.allocate_tensors()
        return report

    @property
    def delegation_report(self) -> DelegationReport | None:
        """The report of the last delegate applied (None before any)."""
        return self._reports[-1] if self._reports else None

    @property
    def delegation_reports(self) -> list[DelegationReport]:
        """One report per delegate applied, in order."""
        return list(self._reports)

    def node_placements(self) -> list[NodePlacement]:
        """Where every node of the model runs now (CPU or a delegate), with reasons."""
        return placements(self._subgraphs, self._num_model_nodes)

    def remove_all_delegates(self) -> None:
        """Undo every delegate: the model runs on the CPU kernels alone again."""
        self._ensure_safe()
        if self._before_delegation is None:
            return
        was_allocated = self._main.allocated
        for subgraph, snapshot in zip(self._subgraphs, self._before_delegation):
            subgraph.restore(snapshot)
        self._before_delegation = None
        self._delegates.clear()
        if was_allocated:
            self._main.allocate_tensors()

    def invoke_with_cpu_fallback(self) -> bool:
        """Invoke; if a delegate kernel fails, remove all delegates and invoke on the CPU.

        Like TFLite's ``InvokeWithCPUFallback``: the interpreter stays CPU-only afterwards.
        Returns True when the delegated run succeeded, False when the CPU had to take over
        (a ``RuntimeWarning`` says why).
        """
        try:
            self.invoke()
            return True
        except KernelError as error:
            if not self._delegates:
                raise
            saved = {t: self._main.tensors[t].data.copy() for t in self._main.inputs if self._main.tensors[t].data is not None}
            warnings.warn(
                f"invoke failed with delegation ({error}); removed all delegates and re-ran on the CPU",
                RuntimeWarning,
                stacklevel=2,
            )
            self.remove_all_delegates()
            if not self._main.allocated:
                self._main.allocate_tensors()
            for index, value in saved.items():
                self._main.tensors[index].data[...] = value
            self.invoke()
            return False


class InterpreterWithCustomOps(Interpreter):
    """LiteRT's ``InterpreterWithCustomOps``: an Interpreter whose op resolver first gets
    custom ops from ``custom_op_registerers``.

    Each registerer is a callable taking the ``MutableOpResolver`` (it calls
    ``resolver.add_custom(name, registration)`` or ``add_builtin``), or the name of one:
    ``"package.module.function"`` (or ``"package.module:function"``). A name that does
    not resolve is LiteRT's ``ValueError: Looking up symbol '<name>' failed``. LiteRT's
    registerers are C functions taking a pointer to its C++ resolver; here they are Python.
    Every other keyword is the Interpreter's.
    """

    def __init__(self, custom_op_registerers: Sequence[Any] | None = None, **kwargs: Any) -> None:
        resolver = kwargs.pop("op_resolver", None)
        if resolver is None:
            from backends.cpu import builtin_op_resolver

            resolver = builtin_op_resolver()
        for registerer in custom_op_registerers or ():
            _look_up_registerer(registerer)(resolver)
        super().__init__(op_resolver=resolver, **kwargs)


def _look_up_registerer(registerer: Any) -> Any:
    if callable(registerer):
        return registerer
    if not isinstance(registerer, str):
        raise TypeError(f"a custom op registerer is a callable or its name, not {type(registerer).__name__}")
    module_name, _, attribute = registerer.replace(":", ".").rpartition(".")
    try:
        import importlib

        function = getattr(importlib.import_module(module_name), attribute) if module_name else None
    except (ImportError, AttributeError, ValueError) as error:
        raise ValueError(f"Looking up symbol '{registerer}' failed with error '{error}'.") from error
    if not callable(function):
        raise ValueError(
            f"Looking up symbol '{registerer}' failed with error 'not a Python function: give "
            "\"package.module.function\"'."
        )
    return function


class SignatureRunner:
    """Runs one SignatureDef: ``runner(x=array) -> {'output_name': array}``."""

    def __init__(self, interpreter: Interpreter, signature_key: str) -> None:
        signatures = interpreter._get_full_signature_list()
        if signature_key not in signatures:
            raise ValueError(f'Invalid signature_key provided: "{signature_key}".')
        self._interpreter = interpreter
        self._signature_key = signature_key
        signature = interpreter.model.signature(signature_key)
        self._subgraph_index = signature.subgraph_index
        self._inputs = dict(signature.inputs)
        self._outputs = dict(signature.outputs)

    def __call__(self, **kwargs: Any) -> dict[str, np.ndarray]:
        if len(kwargs) != len(self._inputs):
            raise ValueError(
                "Invalid number of inputs provided for running a SignatureDef, "
                f"expected {len(self._inputs)} vs provided {len(kwargs)}"
            )
        subgraph = self._interpreter._subgraph(self._subgraph_index)
        values = {}
        for name, value in kwargs.items():
            if name not in self._inputs:
                raise ValueError(f"Invalid Input name ({name}) for SignatureDef")
            values[name] = np.asarray(value)
        for name, value in values.items():
            tensor = subgraph.tensors[self._inputs[name]]
            if tuple(value.shape) != tensor.shape:
                tensor.shape = tuple(value.shape)
                subgraph.allocated = False
        if not subgraph.allocated:
            subgraph.allocate_tensors()
        for name, value in values.items():
            self._interpreter.set_tensor(self._inputs[name], value, self._subgraph_index)
        self._interpreter._shared.cancel_requested = False
        subgraph.invoke()
        return {name: self._interpreter.get_tensor(index, self._subgraph_index) for name, index in self._outputs.items()}

    def get_input_details(self) -> dict[str, dict[str, Any]]:
        return {name: self._interpreter._get_tensor_details(i, self._subgraph_index) for name, i in self._inputs.items()}

    def get_output_details(self) -> dict[str, dict[str, Any]]:
        return {name: self._interpreter._get_tensor_details(i, self._subgraph_index) for name, i in self._outputs.items()}


_OBJECT = np.dtype(object)

#: Tensor types that are handles, not values: LiteRT reports their dtype as object and
#: has no data to return for them.
_HANDLE_TYPES = (TensorType.RESOURCE, TensorType.VARIANT)
_HANDLE_TYPE_VALUES = frozenset(int(t) for t in _HANDLE_TYPES)


def _reported_dtype(tensor: RuntimeTensor) -> type | None:
    """The dtype LiteRT's details give a tensor: ``numpy.bytes_`` for STRING (whose values
    ``get_tensor`` returns as an object array of bytes), object for handles."""
    if tensor.type == TensorType.STRING:
        return np.bytes_
    if tensor.type in _HANDLE_TYPES:
        return np.object_
    return tensor.dtype.type if tensor.dtype is not None else None


def _operand_dtype(tensor: RuntimeTensor) -> type:
    """The type ``get_ops_details`` lists for an operand: ``numpy.bytes_`` for STRING, as
    LiteRT, else the numpy type of the values."""
    return np.bytes_ if tensor.type == TensorType.STRING else tensor.dtype.type


class OpResolverType(enum.Enum):
    """LiteRT's ``ai_edge_litert.interpreter.OpResolverType``: which kernels to run. Here
    every value selects the CPU kernels (TFLite's reference semantics) with no default
    delegate."""

    AUTO = 0
    BUILTIN = 1
    BUILTIN_REF = 2
    BUILTIN_WITHOUT_DEFAULT_DELEGATES = 3


def _op_resolver_type(value: Any) -> OpResolverType:
    """The OpResolverType for ``value``: None (AUTO), ours, or LiteRT's enum by name."""
    if value is None:
        return OpResolverType.AUTO
    if isinstance(value, OpResolverType):
        return value
    name = getattr(value, "name", None)  # ai_edge_litert's own OpResolverType
    if isinstance(name, str) and name in OpResolverType.__members__ and type(value).__name__ == "OpResolverType":
        return OpResolverType[name]
    raise ValueError(f"Unrecognized passed in op resolver type: {value}")


def _index_argument(value: Any, what: str) -> int:
    """An index argument as an int: Python and numpy integers only (LiteRT's binding takes
    ``int``; a str, a float or a bool is a caller's mistake, not an index)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _shape_argument(tensor_size: Any, name: str) -> tuple[int, ...]:
    """The dimensions of ``resize_tensor_input``: integers (or integral floats), >= 0."""
    try:
        values = np.asarray(tensor_size).reshape(-1)
    except Exception as error:  # ragged lists and the like
        raise ValueError(f"Cannot resize input {name}: {tensor_size!r} is not a list of dimensions") from error
    if values.dtype.kind not in "iuf" or (values.dtype.kind == "f" and not np.all(np.mod(values, 1) == 0)):
        raise ValueError(f"Cannot resize input {name}: the dimensions {tensor_size!r} must be integers")
    shape = tuple(int(d) for d in values)
    if any(d < 0 for d in shape):
        raise ValueError(f"Cannot resize input {name}: negative dimension in {list(shape)}")
    return shape


class _HeldView:
    """The owner of the numpy views handed out by ``tensor()``: one per buffer, with one
    base array made from it (through ``__array_interface__``), from which every view is
    cut. Each view, and every array derived from one (``np.asarray(view)``, slices,
    reshapes), has that base array as its ``base`` (numpy stops collapsing bases at an
    array whose own base is not an array), so the base array's reference count tells
    whether any is alive: as in LiteRT, which counts the references to its array, any
    numpy array sharing the buffer counts."""

    __slots__ = ("_data", "__array_interface__")

    def __init__(self, data: np.ndarray) -> None:
        self._data = data  # the arena stays alive as long as a view does
        self.__array_interface__ = dict(data.__array_interface__)

    @classmethod
    def base_of(cls, data: np.ndarray) -> np.ndarray:
        return np.asarray(cls(data))

    @staticmethod
    def any_held(held: dict) -> bool:
        """Whether a view of any entry's base array is alive (its only other references:
        the entry, and the argument of ``getrefcount``)."""
        getrefcount = sys.getrefcount
        return any(getrefcount(entry[1]) > 2 for entry in held.values())


def _sparsity_details(tensor: RuntimeTensor) -> dict[str, Any]:
    sparsity = tensor.sparsity
    if sparsity is None:
        return {}
    dims = []
    for dim in sparsity.dim_metadata:
        entry: dict[str, Any] = {"format": dim.format}
        if dim.format == 0:
            entry["dense_size"] = dim.dense_size
        else:
            entry["array_segments"] = dim.array_segments
            entry["array_indices"] = dim.array_indices
        dims.append(entry)
    return {"traversal_order": np.array(sparsity.traversal_order, np.int32), "block_map": np.array(sparsity.block_map, np.int32), "dim_metadata": dims}
