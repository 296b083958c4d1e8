"""The oracle: ai-edge-litert with its reference kernels (``OpResolverType.BUILTIN_REF``).

``assert_matches_litert(model_bytes, inputs)`` runs a model in both runtimes and
compares every output of the main subgraph.
"""

from __future__ import annotations

import pathlib
from typing import Mapping, Sequence

import numpy as np

from interpreter import Interpreter

MODELS_DIR = pathlib.Path(__file__).parent / "data" / "models"
FLOAT_RTOL = 1e-5
FLOAT_ATOL = 1e-6


def litert_interpreter(model: bytes | str | pathlib.Path):
    """An ai-edge-litert interpreter on the reference kernels."""
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    kwargs = {"model_content": bytes(model)} if isinstance(model, (bytes, bytearray)) else {"model_path": str(model)}
    return LiteRTInterpreter(experimental_op_resolver_type=OpResolverType.BUILTIN_REF, **kwargs)


def run_interpreter(interpreter, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Resize inputs to the given shapes, allocate, set, invoke; outputs in subgraph order."""
    details = interpreter.get_input_details()
    if len(details) != len(inputs):
        raise ValueError(f"model has {len(details)} inputs, {len(inputs)} given")
    for detail, value in zip(details, inputs):
        if tuple(detail["shape"]) != np.shape(value):
            interpreter.resize_tensor_input(detail["index"], list(np.shape(value)))
    interpreter.allocate_tensors()
    for detail, value in zip(details, inputs):
        interpreter.set_tensor(detail["index"], np.asarray(value, dtype=detail["dtype"]))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def run_litert(model, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    return run_interpreter(litert_interpreter(model), inputs)


def run_ours(model, inputs: Sequence[np.ndarray], **interpreter_kwargs) -> list[np.ndarray]:
    kwargs = {"model_content": bytes(model)} if isinstance(model, (bytes, bytearray)) else {"model_path": str(model)}
    return run_interpreter(Interpreter(**kwargs, **interpreter_kwargs), inputs)


def random_inputs(model, seed: int = 0, low: float = -2.0, high: float = 2.0) -> list[np.ndarray]:
    """Random values for every input of the model, in its dtype (ints over their useful range)."""
    rng = np.random.default_rng(seed)
    values = []
    for detail in litert_interpreter(model).get_input_details():
        dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
        if dtype.kind == "f":
            values.append(rng.uniform(low, high, size=shape).astype(dtype))
        elif dtype.kind == "c":
            parts = rng.uniform(low, high, size=(2, *shape))
            values.append((parts[0] + 1j * parts[1]).astype(dtype))
        elif dtype == np.bool_:
            values.append(rng.integers(0, 2, size=shape).astype(np.bool_))
        else:
            info = np.iinfo(dtype)
            values.append(rng.integers(max(info.min, -128), min(info.max, 127) + 1, size=shape).astype(dtype))
    return values


def assert_outputs_equal(
    ours: Sequence[np.ndarray],
    expected: Sequence[np.ndarray],
    rtol: float = FLOAT_RTOL,
    atol: float = FLOAT_ATOL,
) -> None:
    """Float and complex outputs within rtol/atol; integer and boolean outputs bit-exact."""
    assert len(ours) == len(expected), f"{len(ours)} outputs vs {len(expected)} from LiteRT"
    for i, (got, want) in enumerate(zip(ours, expected)):
        assert got.dtype == want.dtype, f"output {i}: dtype {got.dtype} vs LiteRT {want.dtype}"
        assert got.shape == want.shape, f"output {i}: shape {got.shape} vs LiteRT {want.shape}"
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"output {i}")


def assert_matches_litert(
    model,
    inputs: Sequence[np.ndarray] | None = None,
    rtol: float = FLOAT_RTOL,
    atol: float = FLOAT_ATOL,
    seed: int = 0,
) -> list[np.ndarray]:
    """Run ``model`` (bytes or path) in both runtimes and compare; returns our outputs."""
    if inputs is None:
        inputs = random_inputs(model, seed)
    expected = run_litert(model, inputs)
    ours = run_ours(model, inputs)
    assert_outputs_equal(ours, expected, rtol, atol)
    return ours


def assert_invokes_match_litert(
    model,
    invokes: Sequence[Sequence[np.ndarray]],
    rtol: float = FLOAT_RTOL,
    atol: float = FLOAT_ATOL,
    resolver: str = "BUILTIN_REF",
) -> list[list[np.ndarray]]:
    """Allocate once in both runtimes, then invoke once per entry of ``invokes`` (the
    inputs of that invoke) and compare the outputs after each: what a stateful model
    (variable tensors, e.g. an RNN's hidden state) carries from one invoke to the next
    must agree too. ``resolver`` names LiteRT's op resolver (``BUILTIN_REF`` or
    ``BUILTIN``, for ops only its optimized kernels register). Returns our outputs."""
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    kwargs = {"model_content": bytes(model)} if isinstance(model, (bytes, bytearray)) else {"model_path": str(model)}
    theirs = LiteRTInterpreter(experimental_op_resolver_type=getattr(OpResolverType, resolver), **kwargs)
    ours = Interpreter(**kwargs)
    results = []
    for runtime in (theirs, ours):
        runtime.allocate_tensors()
    for step, inputs in enumerate(invokes):
        outputs = []
        for runtime in (theirs, ours):
            for detail, value in zip(runtime.get_input_details(), inputs):
                runtime.set_tensor(detail["index"], np.asarray(value, dtype=detail["dtype"]))
            runtime.invoke()
            outputs.append([runtime.get_tensor(d["index"]) for d in runtime.get_output_details()])
        try:
            assert_outputs_equal(outputs[1], outputs[0], rtol, atol)
        except AssertionError as error:
            raise AssertionError(f"invoke {step}: {error}") from None
        results.append(outputs[1])
    return results


def assert_signature_matches_litert(model, inputs: Mapping[str, np.ndarray], rtol=FLOAT_RTOL, atol=FLOAT_ATOL) -> None:
    """Compare through the signature runner (outputs by name, not by position)."""
    kwargs = {"model_content": bytes(model)} if isinstance(model, (bytes, bytearray)) else {"model_path": str(model)}
    expected = litert_interpreter(model).get_signature_runner()(**inputs)
    ours = Interpreter(**kwargs).get_signature_runner()(**inputs)
    assert sorted(ours) == sorted(expected)
    for name in expected:
        assert_outputs_equal([ours[name]], [expected[name]], rtol, atol)


def first_divergent_node(model, inputs: Sequence[np.ndarray], rtol: float = 0.0, atol: float = 0.0, **interpreter_kwargs):
    """The first node (in plan order) whose outputs differ from LiteRT's, or None.

    Both runtimes keep every intermediate tensor (``experimental_preserve_all_tensors``).
    Returns ``(node_index, op_name, tensor_name, max_abs_difference)``.
    """
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    kwargs = {"model_content": bytes(model)} if isinstance(model, (bytes, bytearray)) else {"model_path": str(model)}
    theirs = LiteRTInterpreter(experimental_op_resolver_type=OpResolverType.BUILTIN_REF, experimental_preserve_all_tensors=True, **kwargs)
    ours = Interpreter(experimental_preserve_all_tensors=True, **kwargs, **interpreter_kwargs)
    run_interpreter(theirs, inputs)
    run_interpreter(ours, inputs)
    for op in ours.get_ops_details():
        for tensor_index in op["outputs"]:
            got, want = ours.get_tensor(int(tensor_index)), theirs.get_tensor(int(tensor_index))
            if got.shape != want.shape or not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol):
                difference = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.shape == want.shape else float("inf")
                name = ours.get_tensor_details()[int(tensor_index)]["name"]
                return op["index"], op["op_name"], name, difference
    return None
