"""Testing helpers that run models: a delegate against the CPU path.

They live in ``interpreter`` because they run an ``Interpreter`` (imports only point
down: ``interpreter`` -> ``backends`` -> ``delegate_sdk`` -> ``schema``); the helpers that
need no interpreter (version recipes, dry runs, the cap checks, ``ReferenceDelegate``)
are in ``delegate_sdk.testing``.

- :func:`assert_matches_cpu` runs a model with and without the delegate(s), several
  invokes, and compares every output with a tolerance per dtype (:data:`DEFAULT_TOLERANCES`:
  float32 outputs allow for another summation order, integers and bools must be equal);
  a failure says which invoke, output and element, and by how much.
- :func:`run_model` runs a model once and returns its outputs and the interpreter.
- :func:`check_delegate` is the one call for a delegate's tests: every version its support
  table declares is taken, the version above each cap is refused with the cap reason
  (``delegate_sdk.testing.assert_declared_caps``), and every recipe model it takes gives
  the CPU's outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from delegate_sdk.delegate import Delegate

__all__ = [
    "DEFAULT_TOLERANCES",
    "FLOAT16_COMPUTE_TOLERANCES",
    "Tolerance",
    "assert_matches_cpu",
    "check_delegate",
    "run_model",
]


@dataclass(frozen=True)
class Tolerance:
    """``|got - cpu| <= rtol * |cpu| + atol + scaled_atol * max|cpu|`` per element (the
    last term is relative to the output's largest magnitude: summation-order differences
    grow with the values summed, not with the element compared). All zero: exact."""

    rtol: float = 0.0
    atol: float = 0.0
    scaled_atol: float = 0.0

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol == 0 and self.scaled_atol == 0

    def bound(self, expected: np.ndarray) -> np.ndarray:
        """The allowed difference at each element (infinities and NaNs count as 0 here)."""
        finite = np.where(np.isfinite(expected), np.abs(expected), 0.0)
        magnitude = float(finite.max()) if finite.size else 0.0
        return self.rtol * finite + self.atol + self.scaled_atol * magnitude

    def __str__(self) -> str:
        if self.exact:
            return "exact"
        return f"rtol={self.rtol:g}, atol={self.atol:g}, scaled_atol={self.scaled_atol:g} (x max|cpu|)"


#: Output dtype -> tolerance. Float32: a correct delegate that sums in another order
#: (blocked matrix products, another convolution algorithm, fused kernels) passes it on
#: every bundled real model (the GPU delegate's float32 path differs from the CPU's by up
#: to ~5e-7 of an output's largest magnitude on the palm detector). Integers: exact.
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-9, atol=1e-12, scaled_atol=1e-10),
    "float32": Tolerance(rtol=1e-4, atol=1e-6, scaled_atol=1e-5),
    "float16": Tolerance(rtol=1e-2, atol=1e-3, scaled_atol=1e-2),
    "complex64": Tolerance(rtol=1e-4, atol=1e-6, scaled_atol=1e-5),
}

#: For a delegate that computes in float16 (stores tensors as halves): float32 outputs get
#: float16's tolerance (``assert_matches_cpu(..., tolerances=FLOAT16_COMPUTE_TOLERANCES)``).
FLOAT16_COMPUTE_TOLERANCES: dict[str, Tolerance] = {
    **DEFAULT_TOLERANCES,
    "float32": Tolerance(rtol=3e-2, atol=1e-3, scaled_atol=5e-3),
}


def _tolerance(dtype: np.dtype, tolerances: Mapping[str, Tolerance], rtol: float | None, atol: float | None) -> Tolerance:
    base = tolerances.get(np.dtype(dtype).name, Tolerance())
    if dtype.kind not in "fc" or (rtol is None and atol is None):
        return base
    return Tolerance(rtol=base.rtol if rtol is None else rtol, atol=base.atol if atol is None else atol,
                     scaled_atol=0.0 if (rtol is not None or atol is not None) else base.scaled_atol)


def _random_inputs(interpreter, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    values = []
    for detail in interpreter.get_input_details():
        dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
        if dtype.kind == "f":
            values.append(rng.uniform(-2, 2, shape).astype(dtype))
        elif dtype.kind == "c":
            values.append((rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(dtype))
        elif dtype == np.bool_:
            values.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype.kind == "O":
            words = np.array([b"ab", b"cd", b"ef", b""], dtype=object)
            values.append(words[rng.integers(0, len(words), shape)].reshape(shape))
        elif dtype.kind == "u":
            values.append(rng.integers(0, 100, shape).astype(dtype))
        else:
            values.append(rng.integers(-100, 100, shape).astype(dtype))
    return values


def _interpreter(model: bytes, delegates: Sequence[Delegate] = ()) -> Any:
    from interpreter import Interpreter

    interpreter = Interpreter(model_content=model)
    for delegate in delegates:
        interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return interpreter


def _invoke(interpreter: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def run_model(model: bytes, inputs: Sequence[np.ndarray], delegates: Sequence[Delegate] = ()) -> tuple[list[np.ndarray], Any]:
    """Outputs of the main subgraph after one invoke, and the interpreter (to read its
    delegation report)."""
    interpreter = _interpreter(model, delegates)
    return _invoke(interpreter, inputs), interpreter


def _compare(got: np.ndarray, expected: np.ndarray, tolerance: Tolerance, where: str) -> str | None:
    """None when ``got`` matches, else what differs, where, and by how much."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"{where}: the delegate gave {got.dtype}{list(got.shape)}, the CPU {expected.dtype}{list(expected.shape)}"
    if got.size == 0:
        return None
    if expected.dtype.kind == "O":
        bad = np.array([g != e for g, e in zip(got.flat, expected.flat)]).reshape(got.shape)
        if not bad.any():
            return None
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        return (f"{where}: {int(bad.sum())} of {got.size} element(s) differ; first at {index}: "
                f"got {got[index]!r}, CPU {expected[index]!r}")
    if expected.dtype.kind not in "fc":
        diff = np.abs(got.astype(np.int64) - expected.astype(np.int64)) if expected.dtype.kind != "b" else (got != expected).astype(np.int64)
        bad = diff > tolerance.atol
        if not bad.any():
            return None
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
        return (f"{where}: {int(bad.sum())} of {got.size} element(s) differ ({tolerance}); the largest difference, "
                f"{int(diff[index])}, at {index}: got {got[index]}, CPU {expected[index]}")
    got64 = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    exp64 = expected.astype(got64.dtype)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # inf - inf, NaN: handled below
        both_nan = np.isnan(got64) & np.isnan(exp64)
        same_inf = np.isinf(exp64) & (got64 == exp64)
        diff = np.where(both_nan | same_inf, 0.0, np.abs(got64 - exp64))
        diff = np.where(np.isnan(diff), np.inf, diff)
        bound = tolerance.bound(np.abs(exp64) if exp64.dtype.kind == "c" else exp64)
        bad = diff > bound
        if not bad.any():
            return None
        excess = np.where(bad, diff / np.maximum(bound, np.finfo(np.float64).tiny), 0.0)
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape))
    nan_only = int((np.isnan(got64) & ~np.isnan(exp64)).sum())
    finite = np.abs(exp64[np.isfinite(exp64)])
    magnitude = float(finite.max()) if finite.size else float("nan")
    text = (f"{where}: {int(bad.sum())} of {got.size} element(s) differ beyond {tolerance}; max|cpu| = {magnitude:.6g}; "
            f"worst at {index}: got {got[index]}, CPU {expected[index]}, |difference| {diff[index]:.3g} "
            f"where {bound[index]:.3g} is allowed")
    if nan_only:
        text += f"; {nan_only} NaN(s) where the CPU has a number"
    return text


def assert_matches_cpu(
    model: bytes,
    make_delegates: Callable[[], Sequence[Delegate]] | Callable[[], Delegate],
    inputs: Sequence[np.ndarray] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
    require_delegation: bool = True,
    invokes: int = 3,
    tolerances: Mapping[str, Tolerance] | None = None,
) -> Any:
    """Run ``model`` on the CPU alone and with the delegate(s), ``invokes`` times with new
    input values each time; the outputs must agree at every invoke.

    A delegate's later invokes often take other paths than its first (a CUDA graph
    captured at the second and replayed from the third, cached buffers), so one invoke
    proves little. ``inputs`` are the first invoke's (default: random); invoke ``k``
    uses them rolled by ``k`` places (same values, other positions), or new random ones.
    With ``require_delegation`` (the default) at least one node must have been delegated,
    so the comparison cannot pass vacuously. Returns the delegated interpreter.

    Tolerances are per output dtype (``tolerances``, default :data:`DEFAULT_TOLERANCES`:
    float32 allows another summation order, integer and bool outputs must be equal);
    ``rtol``/``atol`` replace the float ones. A failure names the invoke, the output (index
    and name), how many elements differ, and the worst one: its index, both values, the
    difference and the bound there.
    """
    tolerances = DEFAULT_TOLERANCES if tolerances is None else tolerances
    delegates = make_delegates()
    delegates = list(delegates) if isinstance(delegates, (list, tuple)) else [delegates]
    cpu, delegated = _interpreter(model), _interpreter(model, delegates)
    if require_delegation:
        assert any(p.delegated for p in delegated.node_placements()), (
            "no node was delegated:\n" + "\n".join(str(r) for r in delegated.delegation_reports)
        )
    names = [d["name"] for d in cpu.get_output_details()]
    for k in range(invokes):
        if inputs is None:
            values = _random_inputs(cpu, seed + k)
        else:
            values = [np.roll(np.asarray(x), k * 7) for x in inputs]
        expected, got = _invoke(cpu, values), _invoke(delegated, values)
        problems = []
        for i, (g, e) in enumerate(zip(got, expected)):
            where = f"invoke {k + 1}, output {i} {names[i]!r}"
            problem = _compare(np.asarray(g), np.asarray(e), _tolerance(np.asarray(e).dtype, tolerances, rtol, atol), where)
            if problem:
                problems.append(problem)
        assert not problems, "the delegated outputs differ from the CPU's:\n" + "\n".join(problems)
    return delegated


def check_delegate(
    make_delegate: Callable[[], Delegate],
    *,
    run: bool = True,
    strict: bool = False,
    tolerances: Mapping[str, Tolerance] | None = None,
    invokes: int = 2,
):
    """Test every cap ``make_delegate()`` declares, in one call.

    ``delegate_sdk.testing.assert_declared_caps`` first (a dry run per version recipe:
    each declared version is taken or left by the predicate only, the version above each
    cap and any version outside a declared set is refused with the SDK's reason); then,
    with ``run``, every recipe model the delegate takes and the CPU runs is run with and
    without it (:func:`assert_matches_cpu`). Returns the ``CapReport``; raises
    ``AssertionError`` listing every failure.
    """
    from backends.cpu import builtin_op_resolver
    from delegate_sdk.testing import assert_declared_caps, single_op_model

    report = assert_declared_caps(make_delegate, strict=strict)
    if not run:
        return report
    resolver = builtin_op_resolver()
    failures = []
    for row in report.rows:
        if row.outcome != "taken" or resolver.find_op(row.op, row.version) is None:
            continue
        try:
            assert_matches_cpu(single_op_model(row.op, row.version), make_delegate, tolerances=tolerances, invokes=invokes)
            row.ran = True
        except AssertionError as error:
            failures.append(f"{row.label} ({row.description}): {error}")
    assert not failures, "the delegate's outputs differ from the CPU's on recipe models:\n" + "\n".join(failures)
    return report
