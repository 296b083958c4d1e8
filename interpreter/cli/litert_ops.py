"""Which (op, version) pairs LiteRT's op resolvers register, found by asking ai-edge-litert.

For every builtin operator and every version up to ``MAX_VERSION``, a one-node model stamped
with that version is handed to ``ai_edge_litert.interpreter.Interpreter``. Building an
interpreter resolves every node's (op, version) before it reads any node's options, and a
builtin (op, version) no kernel is registered for fails with its own message
(``Didn't find op for builtin opcode 'X' version 'N'``). Any other outcome, success or a
later error about the node's options, means the resolver has a kernel for it. A custom op
no kernel is registered for is left unresolved until ``allocate_tensors``, which then
fails with ``Encountered unresolved custom op: X``: custom ops are allocated too (with an
empty FlexBuffer map as their options, which their ``Init`` reads). The same is asked of
the reference resolver (``BUILTIN_REF``, the oracle of the tests).

``litedelegate ops --compare-litert`` prints the result beside this runtime's ops;
``docs/generate_ops.py --probe-litert`` writes it to ``docs/litert_ops.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator

#: Versions probed per op: above the highest any builtin has today (FULLY_CONNECTED: 14).
MAX_VERSION = 24
#: Versions probed per custom op.
MAX_CUSTOM_VERSION = 4
#: Codes that are not ops.
NOT_OPS = frozenset({"CUSTOM", "DELEGATE", "PLACEHOLDER_FOR_GREATER_OP_CODES"})
#: Custom ops LiteRT's default resolver is known to register (TFLite's ``BuiltinOpResolver``
#: adds them), and MediaPipe's, which it does not: probed by name.
CUSTOM_OPS = (
    "AudioSpectrogram", "Mfcc", "TFLite_Detection_PostProcess",
    "Convolution2DTransposeBias", "MaxPoolingWithArgmax2D", "MaxUnpooling2D",
    "Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks",
)
#: The resolvers asked: the default one (without its default delegates, which change no
#: registration) and the reference kernels.
RESOLVERS = {"builtin": "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "builtin_ref": "BUILTIN_REF"}
NOT_FOUND = ("Didn't find op for builtin opcode", "Didn't find custom op for name", "Encountered unresolved custom op")


class LiteRTUnavailableError(RuntimeError):
    """ai-edge-litert is not installed."""


@dataclass
class LiteRTOps:
    """What LiteRT registers: op name -> resolver (``"builtin"``, ``"builtin_ref"``) -> the
    versions it registers. ``package`` is the ai-edge-litert version asked."""

    package: str
    builtins: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    custom: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def to_json(self) -> dict:
        """``{"package", "max_version_probed", "resolvers", "builtins": {op: {resolver: [v]}}, "custom": ...}``,
        listing only ops some resolver registers."""
        def registered(table):
            return {op: by for op, by in sorted(table.items()) if any(by.values())}

        return {"package": f"ai-edge-litert {self.package}", "max_version_probed": MAX_VERSION,
                "resolvers": dict(RESOLVERS), "builtins": registered(self.builtins), "custom": registered(self.custom)}


def litert_package_version() -> str:
    """The installed ai-edge-litert version; raises ``LiteRTUnavailableError`` without it."""
    import importlib.metadata

    try:
        return importlib.metadata.version("ai-edge-litert")
    except importlib.metadata.PackageNotFoundError:
        raise LiteRTUnavailableError("ai-edge-litert is not installed (pip install ai-edge-litert)") from None


def probe_model(op: int | str, version: int) -> bytes:
    """A model whose one node is builtin ``op`` (or the custom op named ``op``, with an
    empty FlexBuffer map as its options) stamped ``version``, on a float32 vector: enough
    for a resolver to look the op up."""
    from flatbuffers import flexbuffers

    builder = ModelBuilder(description="litedelegate op probe")
    graph = builder.subgraph()
    x = graph.add_input("x", [2])
    y = graph.add_tensor("y", [2])
    options = bytes(flexbuffers.Dumps({})) if isinstance(op, str) else None
    graph.add_operator(op, [x], [y], version=version, custom_options=options)
    graph.add_output(y)
    return builder.build()


def is_registered(model: bytes, resolver: str, custom: bool = False) -> bool:
    """Whether the LiteRT resolver named ``resolver`` (an ``OpResolverType`` name) has a
    kernel for the node of ``model`` (a ``custom`` op's is only looked for at allocation)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    try:
        interpreter = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType[resolver])
        if custom:
            interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as error:
        return not any(text in str(error) for text in NOT_FOUND)
    return True


def probe_litert() -> LiteRTOps:
    """Ask the installed ai-edge-litert which (op, version) pairs its resolvers register
    (every builtin up to ``MAX_VERSION``, the ``CUSTOM_OPS`` up to ``MAX_CUSTOM_VERSION``);
    a few seconds."""
    result = LiteRTOps(litert_package_version())
    for op in BuiltinOperator:
        if op.name not in NOT_OPS:
            result.builtins[op.name] = _registered_versions(op, MAX_VERSION)
            if MAX_VERSION in result.builtins[op.name]["builtin"]:
                raise RuntimeError(f"LiteRT resolves {op.name} version {MAX_VERSION}: raise MAX_VERSION, or its "
                                   f"'not found' message changed from {NOT_FOUND[0]!r}")
    for name in CUSTOM_OPS:
        result.custom[name] = _registered_versions(name, MAX_CUSTOM_VERSION)
    return result


def _registered_versions(op: int | str, max_version: int) -> dict[str, list[int]]:
    models = [probe_model(op, version) for version in range(1, max_version + 1)]
    custom = isinstance(op, str)
    return {key: [v for v, model in enumerate(models, 1) if is_registered(model, resolver, custom)]
            for key, resolver in RESOLVERS.items()}
