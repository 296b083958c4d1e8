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

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from delegate_sdk.delegate import Delegate

__all__ = [
    "DEFAULT_TOLERANCES",
    "DiffReport",
    "FLOAT16_COMPUTE_TOLERANCES",
    "NodeDiff",
    "OutputDiff",
    "QuantizedReference",
    "RESCALING_SCHEMES",
    "Tolerance",
    "assert_matches_cpu",
    "check_delegate",
    "diff",
    "quantized_reference",
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


def _differences(got: np.ndarray, expected: np.ndarray, tolerance: Tolerance) -> tuple[np.ndarray, np.ndarray]:
    """``(|got - expected|, the allowed difference)`` per element of two numeric arrays of
    one shape and dtype: integers (and booleans) in whole steps, floats and complex in
    float64, where two NaNs, or two equal infinities, differ by 0 and any other NaN by inf."""
    if expected.dtype.kind not in "fc":
        diff = np.abs(got.astype(np.int64) - expected.astype(np.int64)) if expected.dtype.kind != "b" else (got != expected).astype(np.int64)
        return diff, np.full(diff.shape, tolerance.atol)
    got64 = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    exp64 = expected.astype(got64.dtype)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # inf - inf, NaN: handled here
        both_nan = np.isnan(got64) & np.isnan(exp64)
        same_inf = np.isinf(exp64) & (got64 == exp64)
        diff = np.where(both_nan | same_inf, 0.0, np.abs(got64 - exp64))
        diff = np.where(np.isnan(diff), np.inf, diff)
    return diff, tolerance.bound(np.abs(exp64) if exp64.dtype.kind == "c" else exp64)


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
    diff, bound = _differences(got, expected, tolerance)
    bad = diff > bound
    if not bad.any():
        return None
    if expected.dtype.kind not in "fc":
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
        return (f"{where}: {int(bad.sum())} of {got.size} element(s) differ ({tolerance}); the largest difference, "
                f"{int(diff[index])}, at {index}: got {got[index]}, CPU {expected[index]}")
    with np.errstate(over="ignore", invalid="ignore"):
        excess = np.where(bad, diff / np.maximum(bound, np.finfo(np.float64).tiny), 0.0)
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape))
    nan_only = int((np.isnan(got) & ~np.isnan(expected)).sum())
    finite = np.abs(expected[np.isfinite(expected)])
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
    intermediates: bool = False,
    localize: bool = True,
) -> Any:
    """Run ``model`` on the CPU alone and with the delegate(s), ``invokes`` times with new
    input values each time; the outputs must agree at every invoke.

    When they do not (and one delegate is applied, and ``localize`` is left on: the search
    runs each delegated node alone, which takes a while on a large model), the message also
    names the first node,
    in execution order, whose delegated result differs from the CPU's on the same inputs
    (each delegated node run alone, as :func:`diff` does). With ``intermediates``, every
    delegated node is checked that way even when the outputs agree: int8 outputs of real
    models often saturate or are dequantized, and hide a kernel off by one step.

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
        if problems:
            where_first = _localization(model, make_delegates, values, tolerances, rtol, atol, delegated) if localize else ""
            raise AssertionError("the delegated outputs differ from the CPU's:\n" + "\n".join(problems) + where_first)
    if intermediates:
        values = _random_inputs(cpu, seed) if inputs is None else [np.asarray(x) for x in inputs]
        found = _localization(model, make_delegates, values, tolerances, rtol, atol, delegated)
        assert not found, "the delegated outputs agree with the CPU's, but a node does not:" + found
    return delegated


def _localization(model: bytes, make_delegates: Callable[[], Any], values: Sequence[np.ndarray],
                  tolerances: Mapping[str, Tolerance], rtol: float | None, atol: float | None, delegated: Any) -> str:
    """``"\nfirst node that differs ...: ..."``, or "" (nothing found, or several delegates)."""
    probe = make_delegates()
    if isinstance(probe, (list, tuple)):
        if len(probe) != 1:
            return ""
        make = lambda: make_delegates()[0]  # noqa: E731
    else:
        make = make_delegates
    taken = [p.node for p in delegated.node_placements() if p.delegated and p.subgraph == 0]
    report = DiffReport(delegated.delegation_reports[-1].delegate, "cpu", 1, [], 0.0, 0.0, len(taken))
    _localize(report, model, make, taken, values, tolerances, rtol, atol)
    if report.first_divergent is None:
        return ""
    return f"\nfirst node that differs from the CPU given the same inputs: {report.first_divergent}"


def check_delegate(
    make_delegate: Callable[[], Delegate],
    *,
    run: bool = True,
    strict: bool = False,
    tolerances: Mapping[str, Tolerance] | None = None,
    invokes: int = 2,
    dtype: str | None = None,
):
    """Test every cap ``make_delegate()`` declares, in one call.

    ``delegate_sdk.testing.assert_declared_caps`` first (a dry run per version recipe:
    each declared version is taken or left by the predicate only, the version above each
    cap and any version outside a declared set is refused with the SDK's reason); then,
    with ``run``, every recipe model the delegate takes and the CPU runs is run with and
    without it (:func:`assert_matches_cpu`). Returns the ``CapReport``; raises
    ``AssertionError`` listing every failure. With ``dtype`` (``"int8"``, ``"uint8"``,
    ``"int16"``...) every model is of that type (``delegate_sdk.testing.typed_recipes``):
    an int8-only delegate proves each int8 version it declares, on the kit's bit-exact
    int8 models where there is one (hundreds of outputs, realistic scales: a rescale off
    by one step shows).
    """
    from backends.cpu import builtin_op_resolver
    from delegate_sdk.testing import assert_declared_caps, single_op_model

    report = assert_declared_caps(make_delegate, strict=strict, dtype=dtype)
    if not run:
        return report
    resolver = builtin_op_resolver()
    failures = []
    for row in report.rows:
        if row.outcome != "taken" or resolver.find_op(row.op, row.version) is None:
            continue
        try:
            model = single_op_model(row.op, row.version, dtype)
            assert_matches_cpu(model, make_delegate, tolerances=tolerances, invokes=invokes)
            row.ran = True
        except AssertionError as error:
            failures.append(f"{row.label} ({row.description}): {error}")
    assert not failures, "the delegate's outputs differ from the CPU's on recipe models:\n" + "\n".join(failures)
    return report


# -- diff: where a delegate's numbers leave the reference ------------------------------------------


@dataclass
class OutputDiff:
    """How one output of the delegated model differs from the reference's (the worst invoke)."""

    index: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    max_abs: float  #: the largest |delegate - reference|
    max_rel: float  #: max_abs over the reference's largest magnitude (0 when both are 0)
    max_steps: int | None  #: integer outputs: the largest difference in quantized steps
    mismatched: int  #: elements beyond the tolerance (in the worst invoke)
    size: int
    tolerance: str
    within: bool
    problem: str = ""  #: the comparison's message when not within the tolerance

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "max_abs": self.max_abs, "max_rel": self.max_rel, "max_steps": self.max_steps,
                "mismatched": self.mismatched, "size": self.size, "tolerance": self.tolerance, "within": self.within}


@dataclass
class NodeDiff:
    """The first node whose delegated result differs from the CPU's, given the same inputs."""

    node: int
    op: str
    version: int
    delegate: str
    kernel: str  #: the delegate's kernel choice for the node (its op class), or the kernel class
    input_shapes: list[list[int]]
    output_shapes: list[list[int]]
    outputs: list[OutputDiff]  #: per output of the node

    def __str__(self) -> str:
        worst = max(self.outputs, key=lambda o: (not o.within, o.max_abs))
        steps = f", {worst.max_steps} step(s)" if worst.max_steps is not None else ""
        return (f"node {self.node} {self.op} v{self.version} on {self.delegate} (kernel {self.kernel}), inputs "
                f"{self.input_shapes} -> outputs {self.output_shapes}: output {worst.index} {worst.name!r} differs by "
                f"up to {worst.max_abs:.6g} (relative {worst.max_rel:.3g}{steps}); {worst.mismatched} of {worst.size} "
                f"element(s) beyond {worst.tolerance}")

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "op": self.op, "version": self.version, "delegate": self.delegate,
                "kernel": self.kernel, "input_shapes": self.input_shapes, "output_shapes": self.output_shapes,
                "outputs": [o.to_json() for o in self.outputs]}


@dataclass
class DiffReport:
    """What :func:`diff` found: per output the error and both latencies, and, when an
    output is out of tolerance, the first node (in execution order) whose delegated result
    differs from the CPU's given the same inputs."""

    delegate: str
    reference: str  #: "cpu" or "litert-ref"
    invokes: int
    outputs: list[OutputDiff]
    reference_ms: float  #: median invoke latency of the reference
    delegate_ms: float  #: median invoke latency with the delegate
    delegated_nodes: int
    first_divergent: NodeDiff | None = None
    nodes_checked: int = 0  #: delegated nodes run one at a time while localizing
    note: str = ""  #: what the localization could not say

    @property
    def ok(self) -> bool:
        """Every output within tolerance, and no node found to differ."""
        return all(o.within for o in self.outputs) and self.first_divergent is None

    def __str__(self) -> str:
        lines = [f"{self.delegate} vs {self.reference}: {self.delegated_nodes} node(s) delegated, {self.invokes} invoke(s); "
                 f"latency {self.reference_ms:.3f} ms ({self.reference}) / {self.delegate_ms:.3f} ms ({self.delegate})"]
        for o in self.outputs:
            steps = f", {o.max_steps} step(s)" if o.max_steps is not None else ""
            verdict = "ok" if o.within else f"OUT OF TOLERANCE ({o.mismatched} of {o.size})"
            lines.append(f"  output {o.index} {o.name!r} {o.dtype}{list(o.shape)}: max |diff| {o.max_abs:.6g}, relative "
                         f"{o.max_rel:.3g}{steps} [{o.tolerance}] {verdict}")
        if self.first_divergent is not None:
            lines.append(f"  first divergent node ({self.nodes_checked} delegated node(s) run alone): {self.first_divergent}")
        if self.note:
            lines.append(f"  {self.note}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"delegate": self.delegate, "reference": self.reference, "invokes": self.invokes, "ok": self.ok,
                "latency_ms": {"reference": self.reference_ms, "delegate": self.delegate_ms},
                "delegated_nodes": self.delegated_nodes, "outputs": [o.to_json() for o in self.outputs],
                "first_divergent_node": self.first_divergent.to_json() if self.first_divergent else None,
                "nodes_checked": self.nodes_checked, "note": self.note}


def _measure(index: int, name: str, got: np.ndarray, expected: np.ndarray, tolerance: Tolerance) -> OutputDiff:
    """The error of one output (``got``) against the reference (``expected``): the same
    differences ``_compare`` judges (two NaNs, or two equal infinities, differ by 0)."""
    problem = _compare(got, expected, tolerance, f"output {index} {name!r}")
    max_abs = max_rel = 0.0
    steps = None
    mismatched = 0
    if got.shape == expected.shape and got.dtype == expected.dtype and expected.size and expected.dtype.kind in "biufc":
        difference, bound = _differences(got, expected, tolerance)
        mismatched = int((difference > bound).sum())
        max_abs = float(difference.max())
        if expected.dtype.kind in "iub":
            steps = int(max_abs)
        magnitude = float(np.max(np.abs(expected[np.isfinite(expected)]))) if np.isfinite(expected).any() else 0.0
        max_rel = max_abs / magnitude if magnitude else (0.0 if max_abs == 0 else float("inf"))
    elif problem:
        mismatched = int(got.size)
    return OutputDiff(index, name, str(expected.dtype), tuple(expected.shape), max_abs, max_rel, steps,
                      mismatched, int(expected.size), str(tolerance), problem is None, problem or "")


def _worse(a: OutputDiff | None, b: OutputDiff) -> OutputDiff:
    if a is None:
        return b
    return b if (not b.within, b.max_abs) > (not a.within, a.max_abs) else a


def _factory(delegate: Any) -> Callable[[], Delegate]:
    if callable(delegate) and not callable(getattr(delegate, "prepare", None)):
        return delegate
    if isinstance(delegate, type):
        return delegate
    return lambda: delegate


def _timed_invoke(interpreter: Any, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
    import time

    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    start = time.perf_counter()
    interpreter.invoke()
    elapsed = time.perf_counter() - start
    return [np.array(interpreter.get_tensor(d["index"])) for d in interpreter.get_output_details()], elapsed


def _litert_reference(model: bytes) -> Any:
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
        from ai_edge_litert.interpreter import OpResolverType
    except ImportError as error:
        raise RuntimeError(
            "the litert-ref reference needs the ai-edge-litert package (pip install ai-edge-litert); "
            "use the cpu reference instead"
        ) from error
    interpreter = LiteRTInterpreter(model_content=bytes(model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    return interpreter


def diff(
    model: bytes,
    delegate: Any,
    *,
    reference: str = "cpu",
    invokes: int = 3,
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = 0,
    tolerances: Mapping[str, Tolerance] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    localize: bool = True,
    check_nodes: bool = False,
) -> DiffReport:
    """Where a delegate's numbers leave the reference.

    Runs ``model`` with the delegate and with the reference (``"cpu"``: this runtime's
    CPU kernels; ``"litert-ref"``: ai-edge-litert's BUILTIN_REF kernels, where installed)
    ``invokes`` times on the same inputs (``inputs``, rolled at each invoke as in
    :func:`assert_matches_cpu`, or random from ``seed``) and reports, per output, the error
    of the worst invoke (absolute, relative to the output's largest magnitude, and in
    quantized steps for integer outputs) against the SDK's per-dtype tolerances
    (``tolerances``, default :data:`DEFAULT_TOLERANCES`; ``rtol``/``atol`` replace the
    float ones, ``atol`` is also the steps allowed on integer outputs), and the median
    invoke latency of both.

    When an output is out of tolerance (and ``localize``), each node the delegate took is
    delegated alone, in execution order, with the rest of the graph on the CPU: the CPU
    computes its inputs, as in the reference run, and its outputs are compared with the
    CPU's on the same inputs of the failing invoke. The first node that differs beyond
    the tolerance is reported (:class:`NodeDiff`: node, op, version, the delegate's kernel
    choice, shapes, error). Nothing of a fused kernel's internals is needed: a delegate
    that refuses to take a node alone (``min_nodes_per_partition``) leaves it unchecked,
    and ``note`` says so.

    With ``check_nodes`` the nodes are checked one by one even when every output is
    within tolerance: int8 models often end in a saturating or dequantizing layer that
    hides a kernel off by one step (the intermediates are compared, not only the outputs).

    ``delegate`` is a delegate, a delegate class, or a function returning one (a new
    delegate is applied to each interpreter when it is a class or function; a delegate
    object is applied again and again).
    """
    if reference not in ("cpu", "litert-ref"):
        raise ValueError(f"reference must be 'cpu' or 'litert-ref', got {reference!r}")
    if invokes < 1:
        raise ValueError(f"invokes must be >= 1, got {invokes}")
    tolerances = DEFAULT_TOLERANCES if tolerances is None else tolerances
    make = _factory(delegate)
    delegated = _interpreter(model, [make()])
    name = delegated.delegation_reports[-1].delegate
    taken = [p.node for p in delegated.node_placements() if p.delegated and p.subgraph == 0]
    ref = _interpreter(model) if reference == "cpu" else _litert_reference(model)
    names = [d["name"] for d in delegated.get_output_details()]
    worst: list[OutputDiff | None] = [None] * len(names)
    times_ref, times_delegate = [], []
    failing_inputs = None
    for k in range(invokes):
        values = _random_inputs(delegated, seed + k) if inputs is None else [np.roll(np.asarray(x), k * 7) for x in inputs]
        expected, t_ref = _timed_invoke(ref, values)
        got, t_delegate = _timed_invoke(delegated, values)
        times_ref.append(t_ref)
        times_delegate.append(t_delegate)
        for i, (g, e) in enumerate(zip(got, expected)):
            measured = _measure(i, names[i], g, e, _tolerance(e.dtype, tolerances, rtol, atol))
            worst[i] = _worse(worst[i], measured)
            if not measured.within and failing_inputs is None:
                failing_inputs = values
    report = DiffReport(name, reference, invokes, [w for w in worst if w is not None],
                        float(np.median(times_ref)) * 1e3, float(np.median(times_delegate)) * 1e3, len(taken))
    if check_nodes and failing_inputs is None:
        failing_inputs = _random_inputs(delegated, seed) if inputs is None else [np.asarray(x) for x in inputs]
    if failing_inputs is not None and (localize or check_nodes):
        _localize(report, model, make, taken, failing_inputs, tolerances, rtol, atol)
    return report


def _localize(report: DiffReport, model: bytes, make: Callable[[], Delegate], taken: Sequence[int],
              values: Sequence[np.ndarray], tolerances: Mapping[str, Tolerance], rtol: float | None,
              atol: float | None) -> None:
    """Delegate each taken node alone, in execution order; the first whose outputs differ
    from the CPU's given the same inputs goes in ``report.first_divergent``."""
    from interpreter import Interpreter
    from interpreter.delegation import delegating_only

    cpu = Interpreter(model_content=model, experimental_preserve_all_tensors=True)
    cpu.allocate_tensors()
    _invoke(cpu, values)
    main = cpu._main
    order = [n for n in main.execution_plan if n in set(taken)]
    skipped = []
    for node_index in order:
        single = Interpreter(model_content=model, experimental_preserve_all_tensors=True)
        with delegating_only({node_index}):
            single.modify_graph_with_delegate(make())
        if not any(p.delegated and p.node == node_index and p.subgraph == 0 for p in single.node_placements()):
            skipped.append(node_index)
            continue
        single.allocate_tensors()
        _invoke(single, values)
        report.nodes_checked += 1
        node = main.nodes[node_index]
        registration = main.registrations[node_index]
        diffs = []
        for position, t in enumerate(node.outputs):
            expected = np.array(cpu.get_tensor(t))
            got = np.array(single.get_tensor(t))
            tensor_name = main.tensors[t].name
            diffs.append(_measure(position, tensor_name, got, expected, _tolerance(expected.dtype, tolerances, rtol, atol)))
        if all(d.within for d in diffs):
            continue
        report.first_divergent = NodeDiff(
            node_index, registration.op_name, registration.version, report.delegate,
            _kernel_choice(single, node_index),
            [list(main.tensors[t].shape) for t in node.inputs if t >= 0],
            [list(main.tensors[t].shape) for t in node.outputs], diffs)
        break
    if report.first_divergent is None and report.outputs and not all(o.within for o in report.outputs):
        report.note = ("no delegated node differs from the CPU when run alone: the difference comes from how the nodes "
                       "run together (partition boundaries, tensors handed between partitions, state across invokes)")
    if skipped:
        report.note = (report.note + "; " if report.note else "") + (
            f"node(s) {skipped} were not taken alone by the delegate and are unchecked")


def _kernel_choice(interpreter: Any, node_index: int) -> str:
    """The delegate's kernel for a node it took: the op class its partition kernel chose
    for that node (``steps``, as the GPU delegate's), else the kernel class."""
    main = interpreter._main
    for plan_node in main.execution_plan:
        params = main.nodes[plan_node].delegate_params
        if params is None or node_index not in params.nodes_to_replace:
            continue
        kernel = main.nodes[plan_node].user_data
        for step in getattr(kernel, "steps", None) or ():
            op, inner = (step[0], step[1]) if isinstance(step, tuple) and len(step) > 1 else (None, None)
            if getattr(inner, "index", None) == node_index:
                if callable(op) and hasattr(op, "__qualname__") and not isinstance(op, type):
                    return op.__qualname__.split(".<locals>")[0]  # a function (made by a factory)
                return type(op).__name__
        return type(kernel).__name__
    return "?"


# -- the integer arithmetic of a node, as the CPU kernel prepared it -------------------------------

#: How each family of integer kernels rescales its accumulator (``QuantizedReference.scheme``).
RESCALING_SCHEMES = {
    "double": "out = clamp(int32(round(double(acc) * real_scale)) + output_zero_point, low, high): LiteRT's reference "
              "FULLY_CONNECTED (uint8, int8, int16 x int8), C's round (halves away from zero), no fixed-point multiply",
    "fixed-point": "out = clamp(MultiplyByQuantizedMultiplier(acc, multiplier, shift) + output_zero_point, low, high): "
                   "a 31-bit multiplier and a power-of-two shift per output channel (CONV_2D, DEPTHWISE_CONV_2D, "
                   "int16 x int16 FULLY_CONNECTED, MUL)",
    "add-sub": "a = M((q1 - z1) << left_shift, m1), b = M((q2 - z2) << left_shift, m2), out = clamp(M(a +- b, mo) + zo): "
               "left_shift 20 for 8-bit (15 for int16), both inputs rescaled to twice the larger input scale "
               "(m1 ~ s1 / (2 max(s1, s2)), m2 ~ s2 / (2 max(s1, s2)), mo ~ 2 max(s1, s2) / (2^left_shift s_out))",
    "power-of-two": "int16 ADD/SUB with power-of-two scales (pot_scale_int16): the input at the smaller scale is "
                    "rounding-shifted right to the output's scale, then added with int16 saturation",
    "other": "see the CPU kernel's module docstring (backends/cpu/kernels/*_quantized.py)",
}


@dataclass
class QuantizedReference:
    """The integer arithmetic of one node, as the CPU kernel prepared it (bit-exact with
    LiteRT's BUILTIN_REF): what a delegate's int8 kernel must reproduce.

    ``scheme`` names the rescaling (a key of :data:`RESCALING_SCHEMES`, whose value is the
    formula): ``"double"`` for FULLY_CONNECTED (``real_scale`` per unit), ``"fixed-point"``
    for CONV_2D, DEPTHWISE_CONV_2D and MUL (``multipliers`` and ``shifts``, a shift > 0
    being a left shift), ``"add-sub"`` for ADD and SUB (``left_shift`` and the three
    ``(multiplier, shift)`` pairs in ``params``: ``m1``, ``m2``, ``mo``). ``low``/``high``
    are the fused activation's clamp in the output's quantized domain. ``reference(*inputs)``
    runs the CPU kernel on the node's non-constant inputs and returns its outputs.
    """

    node: int
    op: str
    version: int
    kernel: str  #: the CPU kernel class
    scheme: str
    input_scales: list[list[float]]  #: per input (per channel where the tensor is), [] when not quantized
    input_zero_points: list[list[int]]
    output_scale: float
    output_zero_point: int
    low: int
    high: int
    real_scale: Any = None  #: "double": the double multiplier(s) of the accumulator
    multipliers: Any = None  #: "fixed-point": the 31-bit multiplier(s)
    shifts: Any = None  #: "fixed-point": the shift(s), > 0 a left shift
    params: dict[str, Any] = field(default_factory=dict)  #: everything else the kernel prepared (left_shift, m1...)
    _run: Callable[..., list[np.ndarray]] | None = None

    @property
    def formula(self) -> str:
        return RESCALING_SCHEMES[self.scheme]

    def reference(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """The CPU kernel's outputs for these values of the node's non-constant inputs."""
        assert self._run is not None
        return self._run(*inputs)


def quantized_reference(model: bytes, node: int) -> QuantizedReference:
    """The prepared integer arithmetic of node ``node`` of ``model``'s main subgraph (see
    :class:`QuantizedReference`), read from the CPU kernel after ``allocate_tensors``.

    Raises:
      ValueError: the node's output is not an integer tensor with a scale (a float or
        hybrid node has no integer rescaling).
    """
    from interpreter import Interpreter

    interpreter = Interpreter(model_content=bytes(model))
    interpreter.allocate_tensors()
    main = interpreter._main
    if node in getattr(main, "_reprepare", ()):  # downstream of a dynamic tensor: prepared at invoke
        _invoke(interpreter, _random_inputs(interpreter, 0))
    the_node, registration = main.nodes[node], main.registrations[node]
    output = main.tensors[the_node.outputs[0]]
    if output.quantization is None or not len(output.quantization.scale) or output.dtype is None or output.dtype.kind not in "iu":
        raise ValueError(f"node {node} ({registration.op_name} v{registration.version}) has no quantized integer output")
    kernel = the_node.user_data
    tensors = [main.tensors[t] if t >= 0 else None for t in the_node.inputs]

    def scales(tensor) -> list[float]:
        q = tensor.quantization if tensor is not None else None
        return [float(s) for s in q.scale] if q is not None and len(q.scale) else []

    def zero_points(tensor) -> list[int]:
        q = tensor.quantization if tensor is not None else None
        return [int(z) for z in q.zero_point] if q is not None and len(q.zero_point) else []

    variable = [t for t in the_node.inputs if t >= 0 and not main.tensors[t].is_constant]

    def run(*values: np.ndarray) -> list[np.ndarray]:
        if len(values) != len(variable):
            raise ValueError(f"node {node} has {len(variable)} non-constant input(s), got {len(values)}")
        for t, value in zip(variable, values):
            main.tensors[t].data[...] = value
        registration.invoke(main, the_node)
        return [np.array(main.tensors[t].data) for t in the_node.outputs]

    reference = QuantizedReference(
        node, registration.op_name, registration.version, type(kernel).__name__, "other",
        [scales(t) for t in tensors], [zero_points(t) for t in tensors],
        float(output.quantization.scale[0]), int(output.quantization.zero_point[0]) if len(output.quantization.zero_point) else 0,
        int(getattr(kernel, "low", np.iinfo(output.dtype).min)), int(getattr(kernel, "high", np.iinfo(output.dtype).max)),
        _run=run)
    conv = getattr(kernel, "quantization", None)
    if hasattr(conv, "multipliers") and hasattr(conv, "shifts"):
        reference.scheme = "fixed-point"
        reference.multipliers, reference.shifts = np.array(conv.multipliers), np.array(conv.shifts)
        reference.low, reference.high = conv.low, conv.high
        reference.params = {"input_zero_point": conv.input_zero_point, "output_zero_point": conv.output_zero_point,
                            "filter_zero_point": getattr(kernel, "filter_zero_point", 0), "int64_accumulator": conv.wide}
    elif hasattr(kernel, "effective_scale"):
        reference.params = {name: getattr(kernel, name) for name in ("in_zp", "w_zp", "out_zp", "acc_is_int32")
                            if hasattr(kernel, name)}
        if getattr(kernel, "use_mbqm", False):
            reference.scheme = "fixed-point"
            reference.params["effective_scale"] = kernel.effective_scale
        else:
            reference.scheme = "double"
            reference.real_scale = kernel.effective_scale
    elif hasattr(kernel, "left_shift"):
        reference.scheme = "power-of-two" if getattr(kernel, "pot_int16", False) else "add-sub"
        reference.params = {"left_shift": kernel.left_shift, "m1": kernel.m1, "m2": kernel.m2, "mo": kernel.mo,
                            "offsets": kernel.offsets}
    elif hasattr(kernel, "multiplier") and hasattr(kernel, "offsets"):
        reference.scheme = "fixed-point"
        reference.multipliers, reference.shifts = kernel.multiplier
        reference.params = {"offsets": kernel.offsets}
    return reference
