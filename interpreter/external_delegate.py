"""TensorFlow Lite external delegates: ``load_delegate`` and ``Delegate`` (LiteRT's API).

``load_delegate(library, options=None)`` loads a shared library that exports TFLite's
external-delegate interface (``tensorflow/lite/delegates/external/external_delegate_interface.h``)::

    TfLiteDelegate* tflite_plugin_create_delegate(const char* const* options_keys,
        const char* const* options_values, size_t num_options, void (*report_error)(const char*));
    void tflite_plugin_destroy_delegate(TfLiteDelegate* delegate);

and returns a :class:`Delegate`, which ``Interpreter(experimental_delegates=[d])`` and
``interpreter.modify_graph_with_delegate(d)`` apply like any delegate. Applying it calls
the plugin's ``TfLiteDelegate::Prepare`` with a ``TfLiteContext`` that this module
implements, through ctypes, over the litedelegate subgraph: the C delegate walks the
execution plan (``GetExecutionPlan``, ``GetNodeAndRegistration``: builtin code, version,
inputs/outputs and ``builtin_data`` of each node), reads ``context->tensors`` (type,
shape, quantization and data pointers into litedelegate's arena), and calls
``ReplaceNodeSubsetsWithDelegateKernels``, which becomes the subgraph's own
``replace_node_subsets_with_delegate_kernels``: the same partitioning and the same
delegation report as Python delegates. The delegate nodes run the plugin's kernel
(``init``/``prepare``/``invoke``/``free`` of the ``TfLiteRegistration`` it passed), with
the tensor data pointers refreshed whenever litedelegate re-plans its arena.

The ABI is TFLite's C ABI as ai-edge-litert 2.3 builds it (``tflite/core/c/common.h``):
the ctypes declarations below are the single place that states it, each field named as
in C. Implemented ``TfLiteContext`` members: ``tensors_size``, ``tensors``,
``GetExecutionPlan``, ``GetNodeAndRegistration``, ``ReplaceNodeSubsetsWithDelegateKernels``,
``PreviewDelegatePartitioning``, ``ResizeTensor``, ``ReportError``, ``GetTensor`` (which
LiteRT leaves NULL), ``AcquireSubgraphContext`` / ``ReleaseSubgraphContext`` and
``recommended_num_threads`` (1). Stubs: ``AddTensors`` and ``GetModelMetadata`` report
an error and return ``kTfLiteError``, ``GetExternalContext`` returns NULL,
``SetExternalContext`` does nothing; the members LiteRT's interpreter leaves NULL
(``AllocatePersistentBuffer``, ``AllocateBufferForEval``, ``RequestScratchBufferInArena``,
``GetScratchBuffer``, ``ResizeTensorExplicit``, ``GetEvalTensor``) are NULL here too.

Failures read as in LiteRT: a ``Prepare`` that returns an error leaves the plan as it was
and ``modify_graph_with_delegate`` (or the constructor) raises ``DelegatePrepareError``,
a ``RuntimeError`` like LiteRT's, whose cause (:class:`ExternalDelegateError`) carries
what the plugin reported; a kernel's failing ``invoke`` raises ``KernelError`` ending in
"Node number N (KERNEL) failed to invoke.". What the plugin reports through
``ReportError`` also goes to the ``litedelegate`` logger (LiteRT prints it to stderr).

Differences from LiteRT, each deliberate:

- A library that cannot be loaded raises :class:`DelegateLoadError`, which is both a
  ``ValueError`` (what ``load_delegate`` documents, with "Failed to load delegate from
  <library>") and an ``OSError`` (what LiteRT 2.x actually raises there, from ctypes).
- ``tflite_plugin_destroy_delegate`` is called exactly once, after the last interpreter
  using the delegate (and the :class:`Delegate` object itself) is gone and every kernel
  the delegate created has been freed: a litedelegate interpreter's subgraphs reference
  each other, so that moment is the garbage collector's pass after the interpreter is
  deleted (``gc.collect()`` forces it), where LiteRT's is the ``del`` itself. It is
  never called with NULL (LiteRT calls it with NULL after a failed creation).
- ``ReportError`` is variadic in C; ctypes callbacks are not. On Linux x86-64 and
  AArch64 the arguments are read from where the calling convention puts them (the
  first 6 integer or pointer arguments and 8 floating-point ones) and the message is
  formatted as printf would; elsewhere, or past those arguments, the format string is
  reported as it is.
- ``builtin_data`` is provided for ADD, SUB, MUL, DIV, CONV_2D, DEPTHWISE_CONV_2D,
  FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D, SOFTMAX, CONCATENATION,
  RESHAPE, SQUEEZE, the reductions (MEAN, SUM, REDUCE_*), LEAKY_RELU, PACK, GATHER,
  SPLIT and STRIDED_SLICE (tests compare them field by field with what LiteRT gives); other
  ops get NULL, so a C delegate must not take those. ``TfLiteTensor.sparsity`` is NULL.
- Delegates using the opaque API (``TfLiteDelegate::opaque_delegate_builder``, with
  ``TfLiteOpaqueContext``) are refused with an error, and plugins that call TFLite's
  own C functions (``TfLiteIntArrayCreate``...) need them from a library of their own.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import re
import sys
import weakref
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_bool,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint64,
    c_void_p,
    sizeof,
)
from typing import Any, Mapping, Sequence

import numpy as np

from delegate_sdk.delegate import NodeDecision
from delegate_sdk.registration import Registration
from delegate_sdk.tensor import Allocation
from interpreter.delegation import DelegateError
from schema.enums import BuiltinOperator, TensorType

logger = logging.getLogger("litedelegate")

__all__ = ["Delegate", "DelegateLoadError", "ExternalDelegateError", "load_delegate"]


class DelegateLoadError(OSError, ValueError):
    """``load_delegate`` could not load the library, find its entry points, or create the
    delegate. A ``ValueError`` (as LiteRT documents) and an ``OSError`` (as LiteRT 2.x
    raises for a library that does not load), so code written for either keeps working."""


class ExternalDelegateError(RuntimeError):
    """The plugin's ``Prepare``, or one of its kernels, returned an error status; the
    message is what it reported through ``ReportError`` (LiteRT raises ``RuntimeError``
    with the same text). From ``Prepare`` it reaches the caller of
    ``modify_graph_with_delegate`` as the cause of a ``DelegatePrepareError`` (the plan is
    restored); from a kernel's invoke, as the cause of a ``KernelError``."""


# =====================================================================================
# The C ABI: tflite/core/c/common.h and c_api_types.h as ai-edge-litert 2.3 builds them.
# Field names are the C names; every pointer is a c_void_p whose target this module
# keeps alive. tests/data/c_delegate/tflite_abi.h declares the same structs in C and
# tests/interpreter_tests/test_external_delegate.py compares every size and offset.
# =====================================================================================

kTfLiteOk = 0
kTfLiteError = 1
kTfLiteNullBufferHandle = -1
kTfLiteNoQuantization = 0
kTfLiteAffineQuantization = 1
kTfLiteDelegateFlagsAllowDynamicTensors = 1
kTfLiteBuiltinDelegate = int(BuiltinOperator.DELEGATE)

# TfLiteAllocationType
kTfLiteMemNone, kTfLiteMmapRo, kTfLiteArenaRw, kTfLiteArenaRwPersistent, kTfLiteDynamic, kTfLitePersistentRo = range(6)


class TfLiteIntArray(Structure):
    """``typedef struct TfLiteIntArray { int size; int data[]; }``: ``data`` follows."""

    _fields_ = [("size", c_int)]  # int size;


class TfLiteQuantizationParams(Structure):
    _fields_ = [
        ("scale", c_float),  # float scale;
        ("zero_point", c_int32),  # int32_t zero_point;
    ]


class TfLiteQuantization(Structure):
    _fields_ = [
        ("type", c_int),  # TfLiteQuantizationType type;
        ("params", c_void_p),  # void* params;  (TfLiteAffineQuantization* for kTfLiteAffineQuantization)
    ]


class TfLiteAffineQuantization(Structure):
    _fields_ = [
        ("scale", c_void_p),  # TfLiteFloatArray* scale;  ({int size; float data[];})
        ("zero_point", c_void_p),  # TfLiteIntArray* zero_point;
        ("quantized_dimension", c_int32),  # int32_t quantized_dimension;
    ]


class TfLiteTensor(Structure):
    _fields_ = [
        ("type", c_int),  # TfLiteType type;
        ("data", c_void_p),  # TfLitePtrUnion data;  (a union of pointers)
        ("dims", c_void_p),  # TfLiteIntArray* dims;
        ("params", TfLiteQuantizationParams),  # TfLiteQuantizationParams params;
        ("allocation_type", c_int),  # TfLiteAllocationType allocation_type;
        ("bytes", c_size_t),  # size_t bytes;
        ("allocation", c_void_p),  # const void* allocation;
        ("name", c_void_p),  # const char* name;
        ("delegate", c_void_p),  # struct TfLiteDelegate* delegate;
        ("buffer_handle", c_int),  # TfLiteBufferHandle buffer_handle;
        ("data_is_stale", c_bool),  # bool data_is_stale;
        ("is_variable", c_bool),  # bool is_variable;
        ("quantization", TfLiteQuantization),  # TfLiteQuantization quantization;
        ("sparsity", c_void_p),  # TfLiteSparsity* sparsity;
        ("dims_signature", c_void_p),  # const TfLiteIntArray* dims_signature;
    ]


class TfLiteNode(Structure):
    _fields_ = [
        ("inputs", c_void_p),  # TfLiteIntArray* inputs;
        ("outputs", c_void_p),  # TfLiteIntArray* outputs;
        ("intermediates", c_void_p),  # TfLiteIntArray* intermediates;
        ("temporaries", c_void_p),  # TfLiteIntArray* temporaries;
        ("user_data", c_void_p),  # void* user_data;
        ("builtin_data", c_void_p),  # void* builtin_data;
        ("custom_initial_data", c_void_p),  # const void* custom_initial_data;
        ("custom_initial_data_size", c_int),  # int custom_initial_data_size;
        ("delegate", c_void_p),  # struct TfLiteDelegate* delegate;
        ("might_have_side_effect", c_bool),  # bool might_have_side_effect;
    ]


class TfLiteRegistration(Structure):
    _fields_ = [
        ("init", c_void_p),  # void* (*init)(TfLiteContext* context, const char* buffer, size_t length);
        ("free", c_void_p),  # void (*free)(TfLiteContext* context, void* buffer);
        ("prepare", c_void_p),  # TfLiteStatus (*prepare)(TfLiteContext* context, TfLiteNode* node);
        ("invoke", c_void_p),  # TfLiteStatus (*invoke)(TfLiteContext* context, TfLiteNode* node);
        ("profiling_string", c_void_p),  # const char* (*profiling_string)(const TfLiteContext*, const TfLiteNode*);
        ("builtin_code", c_int32),  # int32_t builtin_code;
        ("custom_name", c_void_p),  # const char* custom_name;
        ("version", c_int),  # int version;
        ("registration_external", c_void_p),  # TfLiteOperator* registration_external;
        ("async_kernel", c_void_p),  # struct TfLiteAsyncKernel* (*async_kernel)(TfLiteContext*, TfLiteNode*);
        ("inplace_operator", c_uint64),  # uint64_t inplace_operator;
    ]


class TfLiteDelegateParams(Structure):
    _fields_ = [
        ("delegate", c_void_p),  # struct TfLiteDelegate* delegate;
        ("nodes_to_replace", c_void_p),  # TfLiteIntArray* nodes_to_replace;
        ("input_tensors", c_void_p),  # TfLiteIntArray* input_tensors;
        ("output_tensors", c_void_p),  # TfLiteIntArray* output_tensors;
    ]


class TfLiteContext(Structure):
    _fields_ = [
        ("tensors_size", c_size_t),  # size_t tensors_size;
        ("GetExecutionPlan", c_void_p),  # TfLiteStatus (*GetExecutionPlan)(TfLiteContext*, TfLiteIntArray**);
        ("tensors", c_void_p),  # TfLiteTensor* tensors;
        ("impl_", c_void_p),  # void* impl_;
        ("ResizeTensor", c_void_p),  # TfLiteStatus (*ResizeTensor)(TfLiteContext*, TfLiteTensor*, TfLiteIntArray*);
        ("ReportError", c_void_p),  # void (*ReportError)(TfLiteContext*, const char* msg, ...);
        ("AddTensors", c_void_p),  # TfLiteStatus (*AddTensors)(TfLiteContext*, int, int*);
        ("GetNodeAndRegistration", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, int, TfLiteNode**, TfLiteRegistration**);
        ("ReplaceNodeSubsetsWithDelegateKernels", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, TfLiteRegistration,
        #                                                         const TfLiteIntArray*, struct TfLiteDelegate*);
        ("recommended_num_threads", c_int),  # int recommended_num_threads;
        ("GetExternalContext", c_void_p),  # TfLiteExternalContext* (*)(TfLiteContext*, TfLiteExternalContextType);
        ("SetExternalContext", c_void_p),  # void (*)(TfLiteContext*, TfLiteExternalContextType, TfLiteExternalContext*);
        ("allow_fp32_relax_to_fp16", c_bool),  # bool allow_fp32_relax_to_fp16;
        ("profiler", c_void_p),  # void* profiler;
        ("AllocatePersistentBuffer", c_void_p),  # void* (*)(TfLiteContext*, size_t);
        ("AllocateBufferForEval", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, size_t, void**);
        ("RequestScratchBufferInArena", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, size_t, int*);
        ("GetScratchBuffer", c_void_p),  # void* (*)(TfLiteContext*, int);
        ("ResizeTensorExplicit", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, TfLiteTensor*, int, const int*);
        ("PreviewDelegatePartitioning", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, const TfLiteIntArray*,
        #                                               TfLiteDelegateParams**, int*);
        ("GetTensor", c_void_p),  # TfLiteTensor* (*GetTensor)(const TfLiteContext*, int);
        ("GetEvalTensor", c_void_p),  # TfLiteEvalTensor* (*GetEvalTensor)(const TfLiteContext*, int);
        ("GetModelMetadata", c_void_p),  # TfLiteStatus (*)(const TfLiteContext*, const char*, const char**, size_t*);
        ("AcquireSubgraphContext", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, int, TfLiteContext**);
        ("ReleaseSubgraphContext", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, int);
    ]


class TfLiteDelegate(Structure):
    _fields_ = [
        ("data_", c_void_p),  # void* data_;
        ("Prepare", c_void_p),  # TfLiteStatus (*Prepare)(TfLiteContext*, struct TfLiteDelegate*);
        ("CopyFromBufferHandle", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, TfLiteDelegate*, TfLiteBufferHandle,
        #                                        TfLiteTensor*);
        ("CopyToBufferHandle", c_void_p),  # TfLiteStatus (*)(TfLiteContext*, TfLiteDelegate*, TfLiteBufferHandle,
        #                                      TfLiteTensor*);
        ("FreeBufferHandle", c_void_p),  # void (*)(TfLiteContext*, TfLiteDelegate*, TfLiteBufferHandle*);
        ("flags", c_int64),  # int64_t flags;
        ("opaque_delegate_builder", c_void_p),  # struct TfLiteOpaqueDelegateBuilder* opaque_delegate_builder;
    ]


# -- builtin_data (tflite/core/c/builtin_op_data.h) ------------------------------------------


class TfLiteAddParams(Structure):  # also TfLiteSubParams
    _fields_ = [("activation", c_int), ("pot_scale_int16", c_bool)]  # TfLiteFusedActivation; bool


class TfLiteMulParams(Structure):  # also TfLiteDivParams
    _fields_ = [("activation", c_int)]  # TfLiteFusedActivation activation;


class TfLiteConvParams(Structure):
    _fields_ = [
        ("padding", c_int),  # TfLitePadding padding;
        ("stride_width", c_int),  # int stride_width;
        ("stride_height", c_int),  # int stride_height;
        ("activation", c_int),  # TfLiteFusedActivation activation;
        ("dilation_width_factor", c_int),  # int dilation_width_factor;
        ("dilation_height_factor", c_int),  # int dilation_height_factor;
        ("quantized_bias_type", c_int),  # TfLiteType quantized_bias_type;
    ]


class TfLiteDepthwiseConvParams(Structure):
    _fields_ = [
        ("padding", c_int),  # TfLitePadding padding;
        ("stride_width", c_int),  # int stride_width;
        ("stride_height", c_int),  # int stride_height;
        ("depth_multiplier", c_int),  # int depth_multiplier;
        ("activation", c_int),  # TfLiteFusedActivation activation;
        ("dilation_width_factor", c_int),  # int dilation_width_factor;
        ("dilation_height_factor", c_int),  # int dilation_height_factor;
    ]


class TfLitePoolParams(Structure):
    _fields_ = [
        ("padding", c_int),  # TfLitePadding padding;
        ("stride_width", c_int),  # int stride_width;
        ("stride_height", c_int),  # int stride_height;
        ("filter_width", c_int),  # int filter_width;
        ("filter_height", c_int),  # int filter_height;
        ("activation", c_int),  # TfLiteFusedActivation activation;
        ("computed", c_int * 4),  # struct { TfLitePaddingValues padding; } computed;  (set by the kernel's prepare)
    ]


class TfLiteFullyConnectedParams(Structure):
    _fields_ = [
        ("activation", c_int),  # TfLiteFusedActivation activation;
        ("weights_format", c_int),  # TfLiteFullyConnectedWeightsFormat weights_format;
        ("keep_num_dims", c_bool),  # bool keep_num_dims;
        ("asymmetric_quantize_inputs", c_bool),  # bool asymmetric_quantize_inputs;
        ("quantized_bias_type", c_int),  # TfLiteType quantized_bias_type;
    ]


class TfLiteSoftmaxParams(Structure):
    _fields_ = [("beta", c_float)]  # float beta;


class TfLiteConcatenationParams(Structure):
    _fields_ = [("axis", c_int), ("activation", c_int)]  # int axis; TfLiteFusedActivation activation;


class TfLiteReshapeParams(Structure):
    _fields_ = [("shape", c_int32 * 8), ("num_dimensions", c_int)]  # int32_t shape[8]; int num_dimensions;


class TfLiteSqueezeParams(Structure):
    _fields_ = [("squeeze_dims", c_int32 * 8), ("num_squeeze_dims", c_int)]  # int32_t squeeze_dims[8]; int ...;


class TfLiteReducerParams(Structure):
    _fields_ = [("keep_dims", c_bool)]  # bool keep_dims;


class TfLiteLeakyReluParams(Structure):
    _fields_ = [("alpha", c_float)]  # float alpha;


class TfLitePackParams(Structure):
    _fields_ = [("values_count", c_int), ("axis", c_int)]  # int values_count; int axis;


class TfLiteGatherParams(Structure):
    _fields_ = [("axis", c_int), ("batch_dims", c_int)]  # int axis; int batch_dims;


class TfLiteSplitParams(Structure):
    _fields_ = [("num_splits", c_int)]  # int num_splits;


class TfLiteStridedSliceParams(Structure):
    _fields_ = [
        ("begin_mask", c_int),  # int begin_mask;
        ("end_mask", c_int),  # int end_mask;
        ("ellipsis_mask", c_int),  # int ellipsis_mask;
        ("new_axis_mask", c_int),  # int new_axis_mask;
        ("shrink_axis_mask", c_int),  # int shrink_axis_mask;
        ("offset", c_bool),  # bool offset;
    ]


# -- function pointer types -----------------------------------------------------------------

ErrorReporterFn = CFUNCTYPE(None, c_char_p)  # void (*report_error)(const char*)
DelegatePrepareFn = CFUNCTYPE(c_int, c_void_p, c_void_p)  # TfLiteStatus (*)(TfLiteContext*, TfLiteDelegate*)
KernelInitFn = CFUNCTYPE(c_void_p, c_void_p, c_void_p, c_size_t)  # void* (*)(TfLiteContext*, const char*, size_t)
KernelFreeFn = CFUNCTYPE(None, c_void_p, c_void_p)  # void (*)(TfLiteContext*, void*)
KernelStepFn = CFUNCTYPE(c_int, c_void_p, c_void_p)  # TfLiteStatus (*)(TfLiteContext*, TfLiteNode*)
GetExecutionPlanFn = CFUNCTYPE(c_int, c_void_p, POINTER(c_void_p))
ResizeTensorFn = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)
AddTensorsFn = CFUNCTYPE(c_int, c_void_p, c_int, POINTER(c_int))
GetNodeAndRegistrationFn = CFUNCTYPE(c_int, c_void_p, c_int, POINTER(c_void_p), POINTER(c_void_p))
ReplaceNodeSubsetsFn = CFUNCTYPE(c_int, c_void_p, TfLiteRegistration, c_void_p, c_void_p)  # registration by value
GetExternalContextFn = CFUNCTYPE(c_void_p, c_void_p, c_int)
SetExternalContextFn = CFUNCTYPE(None, c_void_p, c_int, c_void_p)
PreviewDelegatePartitioningFn = CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(c_void_p), POINTER(c_int))
GetTensorFn = CFUNCTYPE(c_void_p, c_void_p, c_int)
GetModelMetadataFn = CFUNCTYPE(c_int, c_void_p, c_char_p, POINTER(c_void_p), POINTER(c_size_t))
AcquireSubgraphContextFn = CFUNCTYPE(c_int, c_void_p, c_int, POINTER(c_void_p))
ReleaseSubgraphContextFn = CFUNCTYPE(c_int, c_void_p, c_int)

#: ``ReportError(context, format, ...)`` as a fixed-arity callback: where the calling
#: convention passes variadic arguments like fixed ones (Linux x86-64 and AArch64), six
#: integer slots and eight double slots after the format string receive the first
#: arguments (on x86-64 the fifth and sixth integer ones come from the stack).
_INT_SLOTS, _FLOAT_SLOTS = 6, 8
_VARARGS_READABLE = sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64")
if _VARARGS_READABLE:
    ReportErrorFn = CFUNCTYPE(None, c_void_p, c_char_p, *([c_uint64] * _INT_SLOTS), *([c_double] * _FLOAT_SLOTS))
else:  # pragma: no cover - other platforms: the format string alone
    ReportErrorFn = CFUNCTYPE(None, c_void_p, c_char_p)


# =====================================================================================
# Conversions between litedelegate's runtime objects and the C structs
# =====================================================================================

#: schema TensorType -> TfLiteType (c_api_types.h numbers them differently).
_TFLITE_TYPE = {
    TensorType.FLOAT32: 1, TensorType.INT32: 2, TensorType.UINT8: 3, TensorType.INT64: 4, TensorType.STRING: 5,
    TensorType.BOOL: 6, TensorType.INT16: 7, TensorType.COMPLEX64: 8, TensorType.INT8: 9, TensorType.FLOAT16: 10,
    TensorType.FLOAT64: 11, TensorType.COMPLEX128: 12, TensorType.UINT64: 13, TensorType.RESOURCE: 14,
    TensorType.VARIANT: 15, TensorType.UINT32: 16, TensorType.UINT16: 17, TensorType.INT4: 18,
    TensorType.BFLOAT16: 19, TensorType.INT2: 20, TensorType.UINT4: 21, TensorType.FLOAT8_E4M3FN: 22,
    TensorType.FLOAT8_E5M2: 23,
}

_ALLOCATION_TYPE = {
    Allocation.NONE: kTfLiteArenaRw,  # an activation not allocated yet: TFLite's ArenaRw with data NULL
    Allocation.CONSTANT: kTfLiteMmapRo,
    Allocation.PERSISTENT: kTfLitePersistentRo,
    Allocation.ARENA: kTfLiteArenaRw,
    Allocation.DYNAMIC: kTfLiteDynamic,
    Allocation.VARIABLE: kTfLiteArenaRwPersistent,
}


def tflite_type(tensor_type: int) -> int:
    """The ``TfLiteType`` of a schema ``TensorType`` (0, kTfLiteNoType, when unknown)."""
    return _TFLITE_TYPE.get(tensor_type, 0)


def _padding(padding: int) -> int:  # schema SAME=0, VALID=1 -> kTfLitePaddingSame=1, kTfLitePaddingValid=2
    return int(padding) + 1


def _fixed8(values: Sequence[int] | None) -> tuple[Any, int]:
    values = list(values or ())[:8]
    return (c_int32 * 8)(*values), len(values)


def _reshape(p) -> TfLiteReshapeParams:
    shape, count = _fixed8(p.new_shape)
    return TfLiteReshapeParams(shape, count)


def _squeeze(p) -> TfLiteSqueezeParams:
    dims, count = _fixed8(p.squeeze_dims)
    return TfLiteSqueezeParams(dims, count)


_O = BuiltinOperator
#: op -> builtin_data made from the node's params (what TFLite's ParseOpData gives).
_BUILTIN_DATA = {
    _O.ADD: lambda p: TfLiteAddParams(int(p.fused_activation_function), bool(p.pot_scale_int16)),
    _O.SUB: lambda p: TfLiteAddParams(int(p.fused_activation_function), bool(p.pot_scale_int16)),
    _O.MUL: lambda p: TfLiteMulParams(int(p.fused_activation_function)),
    _O.DIV: lambda p: TfLiteMulParams(int(p.fused_activation_function)),
    _O.CONV_2D: lambda p: TfLiteConvParams(
        _padding(p.padding), p.stride_w, p.stride_h, int(p.fused_activation_function), p.dilation_w_factor,
        p.dilation_h_factor, tflite_type(p.quantized_bias_type)),
    _O.DEPTHWISE_CONV_2D: lambda p: TfLiteDepthwiseConvParams(
        _padding(p.padding), p.stride_w, p.stride_h, p.depth_multiplier, int(p.fused_activation_function),
        p.dilation_w_factor, p.dilation_h_factor),
    _O.FULLY_CONNECTED: lambda p: TfLiteFullyConnectedParams(
        int(p.fused_activation_function), int(p.weights_format), bool(p.keep_num_dims),
        bool(p.asymmetric_quantize_inputs), tflite_type(p.quantized_bias_type)),
    _O.SOFTMAX: lambda p: TfLiteSoftmaxParams(p.beta),
    _O.CONCATENATION: lambda p: TfLiteConcatenationParams(p.axis, int(p.fused_activation_function)),
    _O.RESHAPE: _reshape,
    _O.SQUEEZE: _squeeze,
    _O.LEAKY_RELU: lambda p: TfLiteLeakyReluParams(p.alpha),
    _O.PACK: lambda p: TfLitePackParams(p.values_count, p.axis),
    _O.GATHER: lambda p: TfLiteGatherParams(p.axis, p.batch_dims),
    _O.SPLIT: lambda p: TfLiteSplitParams(p.num_splits),
    _O.STRIDED_SLICE: lambda p: TfLiteStridedSliceParams(
        p.begin_mask, p.end_mask, p.ellipsis_mask, p.new_axis_mask, p.shrink_axis_mask, bool(p.offset)),
}
for _pool in (_O.AVERAGE_POOL_2D, _O.MAX_POOL_2D, _O.L2_POOL_2D):
    _BUILTIN_DATA[_pool] = lambda p: TfLitePoolParams(
        _padding(p.padding), p.stride_w, p.stride_h, p.filter_width, p.filter_height, int(p.fused_activation_function))
for _reducer in (_O.MEAN, _O.SUM, _O.REDUCE_MAX, _O.REDUCE_MIN, _O.REDUCE_PROD, _O.REDUCE_ANY, _O.REDUCE_ALL):
    _BUILTIN_DATA[_reducer] = lambda p: TfLiteReducerParams(bool(p.keep_dims))
del _O, _pool, _reducer

#: The ops whose ``builtin_data`` an external delegate sees (NULL for the others).
BUILTIN_DATA_OPS = frozenset(_BUILTIN_DATA)


def builtin_data(builtin_code: int, params: Any) -> Structure | None:
    """The C ``builtin_data`` struct of a node, or None where it is not provided."""
    make = _BUILTIN_DATA.get(builtin_code)
    return make(params) if make is not None and params is not None else None


def _int_array(values: Sequence[int]):
    """A ``TfLiteIntArray`` holding ``values`` (its own buffer: keep it alive)."""
    values = [int(v) for v in values]
    return (c_int * (len(values) + 1))(len(values), *values)


def _read_int_array(address: int | None) -> list[int]:
    if not address:
        return []
    size = c_int.from_address(address).value
    if size < 0:
        raise ValueError(f"TfLiteIntArray with negative size {size}")
    return list((c_int * size).from_address(address + sizeof(c_int)))


def _float_array(values: Sequence[float]):
    """A ``TfLiteFloatArray`` ({int size; float data[];}) holding ``values``."""

    class FloatArray(Structure):
        _fields_ = [("size", c_int), ("data", c_float * len(values))]

    return FloatArray(len(values), (c_float * len(values))(*values))


def _address(obj: Any) -> int:
    return ctypes.addressof(obj)


def _function_address(function: Any) -> int:
    return ctypes.cast(function, c_void_p).value


try:  # ResizeTensor takes ownership of the new TfLiteIntArray, which TFLite malloc()s
    _libc_free = ctypes.CDLL(None).free
    _libc_free.argtypes, _libc_free.restype = [c_void_p], None
except (OSError, AttributeError, TypeError):  # pragma: no cover - no C library in the process namespace
    _libc_free = None


# -- printf for ReportError -----------------------------------------------------------------

_CONVERSION = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|j|z|t|L|q)?([diouxXeEfFgGaAcspn%])")
_LONG = (b"l", b"ll", b"j", b"z", b"t", b"q")


def format_printf(fmt: bytes, ints: Sequence[int], doubles: Sequence[float]) -> str:
    """``fmt`` formatted as C's printf would, with integer/pointer arguments taken in order
    from ``ints`` (raw 64-bit register values) and floating-point ones from ``doubles``.
    Past the arguments available, the rest of the format is kept as it is."""
    out: list[str] = []
    position = 0
    slots = {"int": list(ints), "double": list(doubles)}

    def take(kind: str) -> Any:
        if not slots[kind]:
            raise IndexError
        return slots[kind].pop(0)

    for match in _CONVERSION.finditer(fmt):
        out.append(fmt[position:match.start()].decode("utf-8", "replace"))
        position = match.end()
        flags, width, precision, length, conversion = match.groups()
        conversion = conversion.decode()
        if conversion == "%":
            out.append("%")
            continue
        try:
            if width == b"*":
                width = str(_signed(take("int"), 32)).encode()
            if precision == b"*":
                precision = str(_signed(take("int"), 32)).encode()
            spec = "%" + flags.decode() + (width or b"").decode()
            if precision is not None:
                spec += "." + (precision.decode() or "0")
            bits = 64 if length in _LONG else 16 if length == b"h" else 8 if length == b"hh" else 32
            if conversion in "eEfFgG":
                out.append((spec + conversion) % take("double"))
            elif conversion in "aA":
                value = float.hex(take("double"))
                out.append(value.upper() if conversion == "A" else value)
            elif conversion in "di":
                out.append((spec + "d") % _signed(take("int"), bits))
            elif conversion in "ouxX":
                out.append((spec + conversion.replace("u", "d")) % (take("int") & ((1 << bits) - 1)))
            elif conversion == "c":
                out.append(chr(take("int") & 0xFF))
            elif conversion == "s":
                address = take("int")
                if not address:
                    text = "(null)"
                else:
                    limit = int(precision) if precision not in (None, b"", b"*") else None
                    raw = ctypes.string_at(address, limit).split(b"\0", 1)[0] if limit is not None else ctypes.string_at(address)
                    text = raw.decode("utf-8", "replace")
                out.append(("%" + flags.decode() + (width or b"").decode() + "s") % text)
            elif conversion == "p":
                out.append(hex(take("int")))
            # %n writes nothing here
        except IndexError:  # no more arguments known: keep the rest verbatim
            out.append(fmt[match.start():].decode("utf-8", "replace"))
            return "".join(out)
    out.append(fmt[position:].decode("utf-8", "replace"))
    return "".join(out)


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# =====================================================================================
# The TfLiteContext over a litedelegate subgraph
# =====================================================================================

#: Every live context by the address of its TfLiteContext struct (the callbacks' key).
_CONTEXTS: "weakref.WeakValueDictionary[int, _CContext]" = weakref.WeakValueDictionary()


class _TensorMirror:
    """What a TfLiteTensor struct currently points to (kept alive here)."""

    __slots__ = ("shape", "dims", "data", "copy", "name", "quantization", "signature")

    def __init__(self) -> None:
        self.shape = None
        self.dims = None
        self.data = None
        self.copy = None
        self.name = None
        self.quantization = None
        self.signature = None


class _CContext:
    """One ``TfLiteContext`` over one litedelegate subgraph, for one external delegate.

    Holds its subgraph weakly: the kernels it runs are reachable from the subgraph, and the
    finalizers that free them hold this context, so a strong reference would keep the
    subgraph alive forever."""

    def __init__(self, context: Any, delegate: "_NativeDelegate", name: str) -> None:
        # ``context`` is what the delegate's prepare receives: the subgraph, or the
        # interpreter's checked view of it, which replacements go through while Prepare runs
        # (or a dry run's context over a model file, which is its own subgraph).
        try:
            subgraph = context.get_subgraph(context.index)
        except NotImplementedError:
            subgraph = context
        self._subgraph = weakref.ref(subgraph)
        self.checked: Any = context if context is not subgraph else None
        self.native = delegate
        self.name = name
        count = len(subgraph.tensors)
        self.struct = TfLiteContext()
        self.tensors = (TfLiteTensor * max(count, 1))()
        self.mirrors = [_TensorMirror() for _ in range(count)]
        self.struct.tensors_size = count
        self.struct.tensors = _address(self.tensors)
        self.struct.recommended_num_threads = 1
        for field, callback in _CALLBACKS.items():
            setattr(self.struct, field, _function_address(callback))
        self.address = _address(self.struct)
        _CONTEXTS[self.address] = self
        self.errors: list[str] = []  # ReportError messages not yet consumed
        self.pending: BaseException | None = None  # an exception raised inside a callback
        self.taken: list[int] = []  # nodes replaced by this delegate in this context
        self.nodes: dict[int, tuple] = {}  # node index -> (weakref to Node, TfLiteNode, TfLiteRegistration, keep)
        self.kernel_nodes: dict[int, tuple] = {}  # delegate nodes whose kernel is the plugin's
        self.plans: list[Any] = []  # the last GetExecutionPlan results
        self.preview: list[Any] = []  # the last PreviewDelegatePartitioning result
        self.subcontexts: dict[int, _CContext] = {}
        self.dummy_delegate = TfLiteDelegate()  # node->delegate of other delegates' nodes
        for index in range(count):
            self.sync_tensor(index)

    @property
    def subgraph(self) -> Any:
        subgraph = self._subgraph()
        if subgraph is None:
            raise RuntimeError("the interpreter this TfLiteContext belongs to is gone")
        return subgraph

    # -- tensors ---------------------------------------------------------------------------
    def sync_tensor(self, index: int) -> None:
        """Make ``tensors[index]`` describe the runtime tensor as it is now."""
        tensor = self.subgraph.tensors[index]
        struct, mirror = self.tensors[index], self.mirrors[index]
        if mirror.name is None:  # what never changes
            mirror.name = ctypes.create_string_buffer(tensor.name.encode("utf-8"))
            struct.name = _address(mirror.name)
            struct.type = tflite_type(tensor.type)
            struct.is_variable = bool(tensor.is_variable)
            struct.buffer_handle = kTfLiteNullBufferHandle
            self._set_quantization(tensor, struct, mirror)
            if tensor.shape_signature is not None:
                mirror.signature = _int_array(tensor.shape_signature)
                struct.dims_signature = _address(mirror.signature)
        if mirror.shape != tensor.shape:
            mirror.shape = tensor.shape
            mirror.dims = _int_array(tensor.shape)
            struct.dims = _address(mirror.dims)
            struct.bytes = tensor.nbytes if tensor.dtype is not None and tensor.dtype != np.object_ else 0
        data = tensor.data
        if data is not mirror.data:
            mirror.data, mirror.copy = data, None
            if data is None or data.dtype == np.object_:
                struct.data = None
            else:
                if not data.flags.c_contiguous:  # a read-only view: hand C a contiguous copy
                    mirror.copy = data = np.ascontiguousarray(data)
                struct.data = data.ctypes.data
                struct.bytes = data.nbytes
        struct.allocation_type = _ALLOCATION_TYPE.get(tensor.allocation, kTfLiteArenaRw)

    def sync_all(self) -> None:
        for index in range(len(self.mirrors)):
            self.sync_tensor(index)

    def sync_data(self, indices: Sequence[int]) -> None:
        """Refresh the data pointers of ``indices`` where the runtime's array changed."""
        tensors, mirrors = self.subgraph.tensors, self.mirrors
        for index in indices:
            if tensors[index].data is not mirrors[index].data:
                self.sync_tensor(index)

    @staticmethod
    def _set_quantization(tensor: Any, struct: TfLiteTensor, mirror: _TensorMirror) -> None:
        quantization = tensor.quantization
        if quantization is None or not quantization.is_quantized:
            return
        scales = [float(s) for s in np.asarray(quantization.scale).reshape(-1)]
        zero_points = [int(z) for z in np.asarray(quantization.zero_point).reshape(-1)]
        if len(scales) == 1:
            struct.params.scale, struct.params.zero_point = scales[0], (zero_points or [0])[0]
        scale, zero_point = _float_array(scales), _int_array(zero_points)
        affine = TfLiteAffineQuantization(_address(scale), _address(zero_point), int(quantization.quantized_dimension))
        mirror.quantization = (scale, zero_point, affine)
        struct.quantization.type = kTfLiteAffineQuantization
        struct.quantization.params = _address(affine)

    def tensor_index(self, address: int) -> int:
        offset = address - self.struct.tensors
        index, rest = divmod(offset, sizeof(TfLiteTensor))
        if rest or not 0 <= index < len(self.mirrors):
            raise ValueError(f"{address:#x} is not a tensor of this TfLiteContext")
        return index

    # -- nodes -----------------------------------------------------------------------------
    def node_structs(self, index: int) -> tuple[TfLiteNode, TfLiteRegistration]:
        subgraph = self.subgraph
        if not 0 <= index < len(subgraph.nodes):
            raise IndexError(f"Invalid node index {index}: subgraph {subgraph.index} has {len(subgraph.nodes)} nodes")
        node, registration = subgraph.get_node_and_registration(index)
        for table in (self.kernel_nodes, self.nodes):
            cached = table.get(index)
            if cached is not None and cached[0]() is node:
                return cached[1], cached[2]
        keep: list[Any] = []
        struct = TfLiteNode()
        for field, values in (("inputs", node.inputs), ("outputs", node.outputs),
                              ("intermediates", node.intermediates), ("temporaries", node.temporaries)):
            array = _int_array(values)
            keep.append(array)
            setattr(struct, field, _address(array))
        creg = TfLiteRegistration()
        creg.builtin_code = int(registration.builtin_code)
        creg.version = int(registration.version)
        if node.delegate_params is not None:  # another delegate's node
            creg.builtin_code = kTfLiteBuiltinDelegate
            params = self._delegate_params(node.delegate_params, self._delegate_address(node.delegate), keep)
            struct.builtin_data = _address(params)
            struct.delegate = self._delegate_address(node.delegate)
            name = registration.name
        else:
            data = builtin_data(registration.builtin_code, node.params)
            if data is not None:
                keep.append(data)
                struct.builtin_data = _address(data)
            name = registration.custom_name if registration.builtin_code == BuiltinOperator.CUSTOM else None
        if name:
            text = ctypes.create_string_buffer(name.encode("utf-8"))
            keep.append(text)
            creg.custom_name = _address(text)
        if node.custom_options:
            blob = ctypes.create_string_buffer(bytes(node.custom_options), len(node.custom_options))
            keep.append(blob)
            struct.custom_initial_data = _address(blob)
            struct.custom_initial_data_size = len(node.custom_options)
        self.nodes[index] = (weakref.ref(node), struct, creg, keep)
        return struct, creg

    def _delegate_address(self, delegate: Any) -> int:
        try:
            return int(delegate._get_native_delegate_pointer())
        except Exception:  # a Python delegate (or one that is gone)
            return _address(self.dummy_delegate)

    @staticmethod
    def _delegate_params(params: Any, delegate_address: int, keep: list) -> TfLiteDelegateParams:
        arrays = [_int_array(params.nodes_to_replace), _int_array(params.input_tensors), _int_array(params.output_tensors)]
        struct = TfLiteDelegateParams(delegate_address, *(_address(a) for a in arrays))
        keep.extend([*arrays, struct])
        return struct

    # -- errors ----------------------------------------------------------------------------
    def report(self, message: str) -> None:
        self.errors.append(message)
        logger.warning("%s: %s", self.name, message)

    def take_errors(self) -> str:
        text = "".join(self.errors)
        self.errors.clear()
        return text

    def raise_pending(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            self.errors.clear()
            raise pending


def _callback(prototype: Any, failure: Any = kTfLiteError):
    """A module-level C callback for a TfLiteContext member: finds the context by its
    address; an exception is kept for the caller to raise, and C sees ``failure``."""

    def wrap(function):
        def callback(context_address, *args):
            context = _CONTEXTS.get(context_address)
            if context is None:
                return failure
            try:
                return function(context, *args)
            except BaseException as error:  # noqa: BLE001 - must not unwind through C
                if context.pending is None:
                    context.pending = error
                context.errors.append(f"{type(error).__name__}: {error}")
                return failure

        return prototype(callback)

    return wrap


@_callback(GetExecutionPlanFn)
def _get_execution_plan(context: _CContext, out: Any) -> int:
    plan = _int_array(context.subgraph.execution_plan)
    context.plans = [*context.plans[-3:], plan]  # "future calls invalidate earlier outputs"
    out[0] = _address(plan)
    return kTfLiteOk


@_callback(GetNodeAndRegistrationFn)
def _get_node_and_registration(context: _CContext, index: int, node_out: Any, registration_out: Any) -> int:
    try:
        node, registration = context.node_structs(index)
    except IndexError as error:
        context.report(str(error))
        return kTfLiteError
    node_out[0] = _address(node)
    registration_out[0] = _address(registration)
    return kTfLiteOk


@_callback(ReplaceNodeSubsetsFn)
def _replace_node_subsets(context: _CContext, registration: TfLiteRegistration, nodes: int, delegate: int) -> int:
    node_indices = _read_int_array(nodes)
    spec = _KernelSpec(context, TfLiteRegistration.from_buffer_copy(registration), delegate or 0)
    target = context.checked if context.checked is not None else context.subgraph
    target.replace_node_subsets_with_delegate_kernels(spec.registration(), node_indices, context.native.owner())
    context.raise_pending()  # a failure inside a kernel's init
    context.taken.extend(node_indices)
    return kTfLiteOk


@_callback(PreviewDelegatePartitioningFn)
def _preview_delegate_partitioning(context: _CContext, nodes: int, params_out: Any, count_out: Any) -> int:
    target = context.checked if context.checked is not None else context.subgraph
    subsets = target.preview_delegate_partitioning(_read_int_array(nodes))
    keep: list[Any] = []
    array = (TfLiteDelegateParams * max(len(subsets), 1))()
    for slot, subset in zip(array, subsets):
        arrays = [_int_array(subset.nodes), _int_array(subset.input_tensors), _int_array(subset.output_tensors)]
        keep.extend(arrays)
        slot.delegate = None
        slot.nodes_to_replace, slot.input_tensors, slot.output_tensors = (_address(a) for a in arrays)
    context.preview = [array, keep]
    params_out[0] = _address(array)
    count_out[0] = len(subsets)
    return kTfLiteOk


@_callback(ResizeTensorFn)
def _resize_tensor(context: _CContext, tensor: int, new_size: int) -> int:
    try:
        shape = _read_int_array(new_size)
    finally:
        if new_size and _libc_free is not None:  # the context owns new_size (TfLiteIntArrayFree)
            _libc_free(new_size)
    index = context.tensor_index(tensor)
    context.subgraph.tensors[index].resize(shape)
    context.sync_tensor(index)
    return kTfLiteOk


def _report_error(context_address, fmt, *arguments) -> None:
    context = _CONTEXTS.get(context_address)
    if context is None:
        return
    try:
        ints, doubles = arguments[:_INT_SLOTS], arguments[_INT_SLOTS:]
        context.report(format_printf(fmt or b"", ints, doubles) if arguments else (fmt or b"").decode("utf-8", "replace"))
    except BaseException as error:  # noqa: BLE001
        context.errors.append(f"(ReportError failed: {type(error).__name__}: {error})")


_report_error_callback = ReportErrorFn(_report_error)


@_callback(AddTensorsFn)
def _add_tensors(context: _CContext, count: int, first: Any) -> int:
    context.report("AddTensors is not supported by litedelegate's TfLiteContext")
    return kTfLiteError


@_callback(GetExternalContextFn, failure=None)
def _get_external_context(context: _CContext, kind: int) -> None:
    return None


@_callback(SetExternalContextFn, failure=None)
def _set_external_context(context: _CContext, kind: int, value: int) -> None:
    return None


@_callback(GetTensorFn, failure=None)
def _get_tensor(context: _CContext, index: int) -> int | None:
    if not 0 <= index < len(context.mirrors):
        return None
    return context.struct.tensors + index * sizeof(TfLiteTensor)


@_callback(GetModelMetadataFn)
def _get_model_metadata(context: _CContext, name: bytes, pointer: Any, size: Any) -> int:
    context.report(f"GetModelMetadata({name!r}): model metadata is not available to external delegates in litedelegate")
    return kTfLiteError


@_callback(AcquireSubgraphContextFn)
def _acquire_subgraph_context(context: _CContext, index: int, out: Any) -> int:
    subgraph = context.subgraph.get_subgraph(index)
    if subgraph is context.subgraph:
        out[0] = context.address
        return kTfLiteOk
    other = context.subcontexts.get(index)
    if other is None:
        other = context.subcontexts[index] = _CContext(subgraph, context.native, context.name)
    out[0] = other.address
    return kTfLiteOk


@_callback(ReleaseSubgraphContextFn)
def _release_subgraph_context(context: _CContext, index: int) -> int:
    context.subgraph.get_subgraph(index)  # validates the index
    return kTfLiteOk


_CALLBACKS = {
    "GetExecutionPlan": _get_execution_plan,
    "ResizeTensor": _resize_tensor,
    "ReportError": _report_error_callback,
    "AddTensors": _add_tensors,
    "GetNodeAndRegistration": _get_node_and_registration,
    "ReplaceNodeSubsetsWithDelegateKernels": _replace_node_subsets,
    "GetExternalContext": _get_external_context,
    "SetExternalContext": _set_external_context,
    "PreviewDelegatePartitioning": _preview_delegate_partitioning,
    "GetTensor": _get_tensor,
    "GetModelMetadata": _get_model_metadata,
    "AcquireSubgraphContext": _acquire_subgraph_context,
    "ReleaseSubgraphContext": _release_subgraph_context,
}


# =====================================================================================
# Delegate kernels: the plugin's TfLiteRegistration behind a litedelegate Registration
# =====================================================================================


class _KernelSpec:
    """One ``ReplaceNodeSubsetsWithDelegateKernels`` call: the registration the plugin
    passed, for every delegate node it creates."""

    def __init__(self, context: _CContext, registration: TfLiteRegistration, delegate_address: int) -> None:
        registration.builtin_code = kTfLiteBuiltinDelegate  # as TFLite does
        self.context = context
        self.c_registration = registration
        self.delegate_address = delegate_address or context.native.pointer
        name = ctypes.string_at(registration.custom_name).decode("utf-8", "replace") if registration.custom_name else ""
        self.kernel_name = name or context.name

    def registration(self) -> Registration:
        def init(runtime_context, node):
            return _CKernel(self, node)

        def prepare(runtime_context, node):
            node.user_data.prepare()

        def invoke(runtime_context, node):
            node.user_data.invoke()

        def free(runtime_context, node):
            if isinstance(node.user_data, _CKernel):
                node.user_data.free()

        return Registration(
            builtin_code=kTfLiteBuiltinDelegate, version=1, init=init, prepare=prepare, invoke=invoke, free=free,
            name=self.context.name,
        )


def _free_kernel(context: _CContext, free_address: int | None, node: TfLiteNode, keep: Any, native: "_NativeDelegate") -> None:
    try:
        if free_address:
            KernelFreeFn(free_address)(context.address, node.user_data)
    finally:
        native.release()


class _CKernel:
    """The ``user_data`` of one delegate node whose kernel is the plugin's."""

    def __init__(self, spec: _KernelSpec, node: Any) -> None:
        context = spec.context
        self.context, self.spec, self.index = context, spec, node.index
        self.struct = TfLiteNode()
        keep: list[Any] = []
        for field, values in (("inputs", node.inputs), ("outputs", node.outputs), ("intermediates", ()), ("temporaries", ())):
            array = _int_array(values)
            keep.append(array)
            setattr(self.struct, field, _address(array))
        params = _CContext._delegate_params(node.delegate_params, spec.delegate_address, keep)
        self.struct.builtin_data = _address(params)
        self.struct.delegate = spec.delegate_address
        context.kernel_nodes[node.index] = (weakref.ref(node), self.struct, spec.c_registration, keep)
        subgraph = context.subgraph
        touched = {t for t in (*node.inputs, *node.outputs)}
        for replaced in node.delegate_params.nodes_to_replace:
            inner = subgraph.nodes[replaced]
            touched.update((*inner.inputs, *inner.outputs))
        self.tensors = sorted(t for t in touched if t >= 0)
        registration = spec.c_registration
        self._prepare = KernelStepFn(registration.prepare) if registration.prepare else None
        self._invoke = KernelStepFn(registration.invoke) if registration.invoke else None
        context.native.acquire()
        try:
            if registration.init:  # init gets the TfLiteDelegateParams as its buffer, length 0 (as in TFLite)
                context.sync_all()
                self.struct.user_data = KernelInitFn(registration.init)(context.address, _address(params), 0)
        except BaseException:
            context.native.release()
            raise
        # From here on the kernel is freed (C free, then the delegate released) exactly once:
        # by Registration.free, or when this object is collected.
        self._finalizer = weakref.finalize(self, _free_kernel, context, registration.free, self.struct, keep, context.native)
        context.raise_pending()

    def prepare(self) -> None:
        context = self.context
        context.sync_all()
        if self._prepare is not None:
            status = self._prepare(context.address, _address(self.struct))
            context.raise_pending()
            if status != kTfLiteOk:
                raise ExternalDelegateError(f"{context.take_errors()}Node number {self.index} ({self.spec.kernel_name}) failed to prepare.")

    def invoke(self) -> None:
        context = self.context
        context.sync_data(self.tensors)
        if self._invoke is None:
            return
        status = self._invoke(context.address, _address(self.struct))
        context.raise_pending()
        if status != kTfLiteOk:
            raise ExternalDelegateError(f"{context.take_errors()}Node number {self.index} ({self.spec.kernel_name}) failed to invoke.")

    def free(self) -> None:
        self._finalizer()


# =====================================================================================
# The plugin and the Delegate object
# =====================================================================================


class _NativeDelegate:
    """The plugin's ``TfLiteDelegate*`` and who still needs it: the :class:`Delegate`
    object and every kernel created from it. Destroyed once, when the last one lets go."""

    def __init__(self, library: ctypes.CDLL, destroy: Any, pointer: int, owner: "Delegate") -> None:
        self.library = library
        self._destroy = destroy
        self.pointer = pointer
        self.users = 1  # the Delegate object
        self.destroyed = False
        self.owner = weakref.ref(owner)
        self.reporter: Any = None

    def acquire(self) -> None:
        if self.destroyed:
            raise RuntimeError("the external delegate was destroyed")
        self.users += 1

    def release(self) -> None:
        self.users -= 1
        if self.users == 0 and not self.destroyed:
            self.destroyed = True
            self._destroy(self.pointer)

    def struct(self) -> TfLiteDelegate:
        return TfLiteDelegate.from_address(self.pointer)


_CREATED: Any = object()  # marks the end of creation in the reporter's messages


def _library_name(library: str) -> str:
    """'add_mul' for '/path/libadd_mul.so': the delegate's name in reports."""
    name = os.path.basename(library)
    name = re.split(r"\.(?:so|dylib|dll)\b", name, maxsplit=1)[0]
    return name[3:] if name.startswith("lib") and len(name) > 3 else name or library


class Delegate:
    """A TensorFlow Lite external delegate loaded from a shared library (LiteRT's
    ``ai_edge_litert.interpreter.Delegate``; ``load_delegate`` is the usual way to get one).

    The library exports ``tflite_plugin_create_delegate`` and
    ``tflite_plugin_destroy_delegate``; ``options`` (every key and value converted with
    ``str``) are passed to the first. Apply it with
    ``Interpreter(experimental_delegates=[delegate])`` or
    ``interpreter.modify_graph_with_delegate(delegate)``: its C ``Prepare`` runs on every
    subgraph, against a ``TfLiteContext`` over that subgraph, and the nodes it replaces run
    its kernels. The report names it ``name`` (the library's file name without ``lib`` and
    extension; assign another before applying it if you like) and gives every node it did
    not take the reason "not taken by the external delegate NAME".

    ``_library`` is the loaded library, a ``ctypes.PyDLL`` as in LiteRT: tests call the
    plugin's own exported functions through it.

    The delegate is destroyed (``tflite_plugin_destroy_delegate``, once) when this object
    and every interpreter using it are gone and the kernels it created are freed.

    Raises:
      DelegateLoadError: the library does not load or lacks the entry points (an
        ``OSError`` and a ``ValueError``), or creation returned NULL (the message is what
        the plugin reported).
      RuntimeError: not CPython (as LiteRT).
    """

    def __init__(self, library: str | os.PathLike, options: Mapping[Any, Any] | None = None) -> None:
        if platform.python_implementation() != "CPython":
            raise RuntimeError("Delegates are currently only supported into CPython due to missing immediate reference counting.")
        self._library_path = os.fspath(library)
        self.name = _library_name(self._library_path)
        self.options = {str(k): str(v) for k, v in (options or {}).items()}
        try:
            lib = ctypes.PyDLL(self._library_path)  # as LiteRT: ctypes.pydll.LoadLibrary(library)
        except OSError as error:
            raise DelegateLoadError(str(error)) from error
        self._library = lib
        try:
            create, destroy = lib.tflite_plugin_create_delegate, lib.tflite_plugin_destroy_delegate
        except AttributeError as error:
            raise DelegateLoadError(
                f"{self._library_path} is not a TensorFlow Lite external delegate: it does not export "
                f"tflite_plugin_create_delegate and tflite_plugin_destroy_delegate ({error})"
            ) from error
        create.argtypes = [POINTER(c_char_p), POINTER(c_char_p), c_size_t, ErrorReporterFn]
        create.restype = c_void_p
        destroy.argtypes, destroy.restype = [c_void_p], None
        keys = (c_char_p * len(self.options))(*(k.encode("utf-8") for k in self.options))
        values = (c_char_p * len(self.options))(*(v.encode("utf-8") for v in self.options.values()))
        messages: list[str] = []
        name = self.name  # (the callback must not hold self: the delegate keeps it alive)

        def report(message: bytes | None) -> None:
            text = (message or b"").decode("utf-8", "replace")
            if messages and messages[-1] is _CREATED:  # a plugin that kept the callback, reporting later
                logger.warning("%s: %s", name, text)
            else:
                messages.append(text)

        reporter = ErrorReporterFn(report)
        pointer = create(keys, values, len(self.options), reporter)
        if not pointer:
            raise DelegateLoadError("".join(messages) or f"{self._library_path}: tflite_plugin_create_delegate returned NULL")
        messages.append(_CREATED)
        self._native = _NativeDelegate(lib, destroy, pointer, self)
        self._native.reporter = reporter  # the plugin may keep the callback: it lives as long as the delegate
        self._finalizer = weakref.finalize(self, self._native.release)

    # -- what LiteRT's Delegate has -----------------------------------------------------------
    _library: ctypes.PyDLL
    """The loaded plugin (``ctypes.PyDLL``, as LiteRT's ``ctypes.pydll.LoadLibrary``): call
    the plugin's own exported functions through it (``delegate._library.some_counter()``),
    as LiteRT's interpreter tests do. Calls through it hold the GIL, as in LiteRT.
    It stays set as long as this object lives (the library is never unloaded)."""

    def _get_native_delegate_pointer(self) -> int:
        """The ``TfLiteDelegate*`` (as an int). It is freed with this object: do not keep it."""
        return self._native.pointer

    # -- what litedelegate's interpreter asks of a delegate ------------------------------------
    @property
    def supports_dynamic_tensors(self) -> bool:
        """``kTfLiteDelegateFlagsAllowDynamicTensors`` in the delegate's flags."""
        return bool(self._native.struct().flags & kTfLiteDelegateFlagsAllowDynamicTensors)

    def prepare(self, context: Any) -> None:
        """Run the plugin's ``Prepare`` on one subgraph (``modify_graph_with_delegate`` calls
        this) and record, for every node, whether it took it.

        Raises:
          ExternalDelegateError: ``Prepare`` returned an error (the messages it reported
            come first, as in LiteRT), or the delegate uses the opaque delegate API.
        """
        native = self._native
        if native.destroyed:
            raise ExternalDelegateError(f"{self.name}: the delegate was destroyed")
        struct = native.struct()
        if struct.opaque_delegate_builder:
            raise ExternalDelegateError(
                f"{self.name} uses the opaque delegate API (TfLiteDelegate::opaque_delegate_builder), "
                "which litedelegate does not implement"
            )
        if not struct.Prepare:
            raise ExternalDelegateError(f"{self.name}: the delegate has no Prepare function")
        plan = [
            n for n in context.execution_plan
            if context.get_node_and_registration(n)[1].builtin_code != kTfLiteBuiltinDelegate
        ]
        c_context = _CContext(context, native, self.name)
        try:
            status = DelegatePrepareFn(struct.Prepare)(c_context.address, native.pointer)
        finally:
            c_context.checked = None  # the checked view holds the subgraph: not past Prepare
        pending, c_context.pending = c_context.pending, None
        if pending is not None and isinstance(pending, DelegateError):
            raise pending  # e.g. an InvalidReplacementError: the interpreter's own message
        if status != kTfLiteOk or pending is not None:
            raise ExternalDelegateError(
                c_context.take_errors() or f"{self.name}: Prepare returned {status}"
            ) from pending
        taken = set(c_context.taken)
        for node_index in plan:
            if node_index in taken:
                context.record_decision(NodeDecision(self.name, node_index, True))
            else:
                registration = context.get_node_and_registration(node_index)[1]
                context.record_decision(NodeDecision(
                    self.name, node_index, False,
                    f"{registration.op_name} v{registration.version}: not taken by the external delegate {self.name}",
                ))

    def __repr__(self) -> str:
        state = "destroyed" if self._native.destroyed else f"{self._native.pointer:#x}"
        return f"Delegate({self.name!r} from {self._library_path!r}, options={self.options}, {state})"


def load_delegate(library: str | os.PathLike, options: Mapping[Any, Any] | None = None) -> Delegate:
    """Load a TensorFlow Lite external delegate (LiteRT's ``load_delegate``).

    Args:
      library: path (or name, as ``dlopen`` finds it) of the shared library exporting
        ``tflite_plugin_create_delegate`` / ``tflite_plugin_destroy_delegate``.
      options: passed to ``tflite_plugin_create_delegate`` as strings (``str`` of every key
        and value).

    Returns:
      A :class:`Delegate` for ``Interpreter(experimental_delegates=[...])`` or
      ``modify_graph_with_delegate``.

    Raises:
      DelegateLoadError: "Failed to load delegate from LIBRARY" and why. Both a
        ``ValueError`` (LiteRT's documented error) and an ``OSError`` (what LiteRT 2.x
        raises when the library itself does not load).
    """
    try:
        return Delegate(library, options)
    except ValueError as error:
        raise DelegateLoadError(f"Failed to load delegate from {os.fspath(library)}\n{error}") from error
