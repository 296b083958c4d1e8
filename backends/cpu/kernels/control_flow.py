"""IF, WHILE, CALL_ONCE, STABLEHLO_CASE, STABLEHLO_COMPOSITE: run other subgraphs of the model.

A subgraph is reached with ``self.context.get_subgraph(index)``, a handle whose
``run(arrays) -> arrays`` copies the values in, resizes and re-allocates the
subgraph when the shapes changed, invokes it and returns copies of its outputs.

At prepare, as TFLite does, the called subgraphs are resized to the node's input
shapes and allocated, which tells whether the node's outputs have static shapes
(then they are arena tensors) or must be dynamic: an IF whose branches produce
different shapes, a WHILE whose body changes its loop variables' shapes, or any
called subgraph that holds a dynamic tensor.

None of these kernels is folded: the called subgraphs may have side effects
(resource variables), and CALL_ONCE runs once per interpreter.

STABLEHLO_CASE (``kernels/stablehlo_case.cc``) is an IF of any number of branches: an int32
index (one element) picks the branch, and an index out of range picks the last one.
LiteRT also requires every subgraph of the model besides the main one to take the node's
numbers of inputs and outputs, and all their outputs to be of one type; here only the
branches are checked, each output against the node's. STABLEHLO_COMPOSITE
(``stablehlo_composite.cc``) runs its decomposition subgraph on its inputs (its name,
version and attributes say what the composite is; the decomposition is what it computes).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import BuiltinOperator, TensorType

#: Key of the set of init subgraphs CALL_ONCE has run, in ``context.resources``.
CALL_ONCE_DONE = "call_once.initialized_subgraphs"
#: Key of the set of subgraphs (by ``id``) that a node is preparing, in ``context.resources``.
PREPARING = "control_flow.subgraphs_being_prepared"


class _CallsSubgraphs(CpuKernel):
    """Shared helpers: fetch a subgraph, prepare it for given input shapes."""

    blas_work = 0  # (the subgraphs it runs limit their own invokes)

    foldable = False

    def subgraph(self, index: int, role: str):
        subgraph = self.context.get_subgraph(index)
        if subgraph is self.context:
            raise self.unsupported(f"the {role} subgraph {index} is the subgraph the node is in (recursion)")
        return subgraph

    def check_counts(self, subgraph, role: str, num_inputs: int, num_outputs: int) -> None:
        if len(subgraph.inputs) != num_inputs or len(subgraph.outputs) != num_outputs:
            raise self.unsupported(
                f"the {role} subgraph {subgraph.index} has {len(subgraph.inputs)} inputs and "
                f"{len(subgraph.outputs)} outputs; this node needs {num_inputs} and {num_outputs}"
            )

    def prepare_subgraph(self, subgraph, role: str, tensors: Sequence[RuntimeTensor]) -> bool:
        """Resize ``subgraph``'s inputs to ``tensors``' shapes and allocate it
        (TFLite's ResizeInputTensor + AllocateTensors). Returns False when the
        subgraph cannot be planned ahead (its outputs must then be treated as dynamic)."""
        for position, (index, tensor) in enumerate(zip(subgraph.inputs, tensors)):
            target = subgraph.tensors[index]
            if target.type != tensor.type:
                raise self.unsupported(
                    f"input {position} of the {role} subgraph {subgraph.index} has type {target.type_name}, "
                    f"the node passes {tensor.type_name} ({tensor.name!r})"
                )
        # SubgraphHandle only promises run(); the interpreter's subgraphs can also be
        # allocated ahead. Without that, shapes are only known by running (run() resizes).
        allocate = getattr(subgraph, "allocate_tensors", None)
        if allocate is None:
            return False
        for index, tensor in zip(subgraph.inputs, tensors):
            target = subgraph.tensors[index]
            if target.shape != tuple(tensor.shape):
                target.resize(tensor.shape)
                subgraph.allocated = False  # (TFLite's ResizeInputTensor: plan the arena again)
        # A subgraph whose preparation is under way, reached again: subgraphs that call each
        # other (a node of subgraph 1 calling subgraph 0, which calls subgraph 1...).
        preparing = self.context.resources.setdefault(PREPARING, set())
        if id(subgraph) in preparing:
            raise self.unsupported(
                f"the {role} subgraph {subgraph.index} is being prepared already: subgraphs that call each other "
                "(recursion)"
            )
        preparing.add(id(subgraph))
        try:
            allocate()
        finally:
            preparing.discard(id(subgraph))
        return not any(t.is_dynamic for t in subgraph.tensors)

    def check_output_types(self, subgraph, role: str) -> None:
        """The subgraph's outputs have the types of the node's outputs."""
        for position, (index, output) in enumerate(zip(subgraph.outputs, self.outputs)):
            result = subgraph.tensors[index]
            if result.type != output.type:
                raise self.unsupported(
                    f"output {position} of the {role} subgraph {subgraph.index} has type {result.type_name}, "
                    f"the node's output {output.name!r} is {output.type_name}"
                )

    @staticmethod
    def output_shapes(subgraph) -> list[tuple[int, ...]]:
        return [subgraph.tensors[t].shape for t in subgraph.outputs]

    def set_output_shapes(self, shapes: Sequence[tuple[int, ...]] | None) -> None:
        """Static shapes, or None: every output is dynamic."""
        self.dynamic = shapes is None
        for i, output in enumerate(self.outputs):
            if shapes is None:
                output.set_dynamic()
            else:
                output.resize(shapes[i])

    def write_outputs(self, values: Sequence[np.ndarray]) -> None:
        for output, value in zip(self.outputs, values):
            if self.dynamic:
                output.set_data(np.array(value, dtype=output.dtype, copy=True))
            else:
                output.data[...] = value


# v1: the only version
@register(BuiltinOperator.IF, 1, 1)
class If(_CallsSubgraphs):
    """IF v1: run the then or else subgraph on inputs[1:], chosen by a bool scalar inputs[0]."""

    def prepare(self) -> None:
        if not self.inputs:
            raise self.unsupported("needs a condition input")
        cond = self.inputs[0]
        self.require_types(cond, TensorType.BOOL, role="condition")
        if cond.num_elements != 1:
            raise self.unsupported(f"the condition {cond.name!r} has shape {list(cond.shape)}; it must hold one value")
        args = self.inputs[1:]
        if any(t is None for t in args):
            raise self.unsupported("an omitted (-1) input cannot be passed to a branch subgraph")
        self.then_branch = self.subgraph(self.params.then_subgraph_index, "then")
        self.else_branch = self.subgraph(self.params.else_subgraph_index, "else")
        static = True
        for branch, role in ((self.then_branch, "then"), (self.else_branch, "else")):
            self.check_counts(branch, role, len(args), len(self.outputs))
            self.check_output_types(branch, role)
            static &= self.prepare_subgraph(branch, role, args)  # both, as TFLite
        then_shapes = self.output_shapes(self.then_branch)
        static = static and then_shapes == self.output_shapes(self.else_branch)
        self.set_output_shapes(then_shapes if static else None)

    def invoke(self) -> None:
        taken = self.then_branch if self.inputs[0].data.reshape(-1)[0] else self.else_branch
        self.write_outputs(taken.run([t.data for t in self.inputs[1:]]))


# v1: the only version
@register(BuiltinOperator.WHILE, 1, 1)
class While(_CallsSubgraphs):
    """WHILE v1: loop variables = inputs; while cond(vars): vars = body(vars); outputs = vars."""

    def prepare(self) -> None:
        if len(self.outputs) != len(self.inputs):
            raise self.unsupported(f"has {len(self.inputs)} inputs but {len(self.outputs)} outputs; they must match")
        if any(t is None for t in self.inputs):
            raise self.unsupported("an omitted (-1) input cannot be a loop variable")
        if self.params.cond_subgraph_index == self.params.body_subgraph_index:
            raise self.unsupported("the cond and body subgraphs are the same subgraph")
        self.cond = self.subgraph(self.params.cond_subgraph_index, "cond")
        self.body = self.subgraph(self.params.body_subgraph_index, "body")
        count = len(self.inputs)
        self.check_counts(self.cond, "cond", count, 1)
        self.check_counts(self.body, "body", count, count)
        for i, (tensor, output) in enumerate(zip(self.inputs, self.outputs)):
            if tensor.type != output.type:
                raise self.unsupported(f"loop variable {i} is {tensor.type_name} but output {i} is {output.type_name}")
        self.check_output_types(self.body, "body")
        if self.prepare_subgraph(self.cond, "cond", self.inputs):
            self.check_condition_tensor(self.cond.tensors[self.cond.outputs[0]])
        static = self.prepare_subgraph(self.body, "body", self.inputs)
        # A body that maps a fixed shape to another one (say, pads it) changes the
        # shape on every iteration: dynamic, as in TFLite.
        static = static and self.output_shapes(self.body) == [t.shape for t in self.inputs]
        self.set_output_shapes([t.shape for t in self.inputs] if static else None)

    def check_condition_tensor(self, tensor) -> None:
        if tensor.type != TensorType.BOOL or tensor.shape not in ((), (1,)):
            raise self.unsupported(
                f"the cond subgraph {self.cond.index} must output one bool (shape [] or [1]); "
                f"it outputs {tensor.type_name}{list(tensor.shape)}"
            )

    def keep_going(self, values: list[np.ndarray]) -> bool:
        (result,) = self.cond.run(values)
        if result.dtype != np.bool_ or result.shape not in ((), (1,)):
            raise ValueError(f"the cond subgraph {self.cond.index} returned {result.dtype}{list(result.shape)}, not one bool")
        return bool(result.reshape(-1)[0])

    def invoke(self) -> None:
        values = [t.data for t in self.inputs]
        limit = getattr(self.context, "max_while_iterations", None)
        iterations = 0
        while self.keep_going(values):
            if limit is not None and iterations >= limit:
                raise ValueError(
                    f"the loop ran {limit} iterations without its condition turning false: the interpreter's "
                    "experimental_max_while_iterations (raise it if the model needs more)"
                )
            values = self.body.run(values)
            iterations += 1
        self.write_outputs(values)


# v1: the only version
@register(BuiltinOperator.CALL_ONCE, 1, 1)
class CallOnce(_CallsSubgraphs):
    """CALL_ONCE v1: run an init subgraph (no inputs/outputs) once per interpreter."""

    def prepare(self) -> None:
        if self.inputs or self.outputs:
            raise self.unsupported(f"takes no inputs or outputs, has {len(self.inputs)} and {len(self.outputs)}")
        self.index = self.params.init_subgraph_index
        if self.index in self.done:
            return
        self.check_counts(self.subgraph(self.index, "init"), "init", 0, 0)

    @property
    def done(self) -> set[int]:
        return self.context.resources.setdefault(CALL_ONCE_DONE, set())

    def invoke(self) -> None:
        if self.index in self.done:
            return
        self.context.get_subgraph(self.index).run([])
        self.done.add(self.index)


# v1: the only version
@register(BuiltinOperator.STABLEHLO_CASE, 1, 1)
class StablehloCase(_CallsSubgraphs):
    """STABLEHLO_CASE v1: run branch ``index`` (the last when out of range) on inputs[1:]."""

    def prepare(self) -> None:
        if not self.inputs:
            raise self.unsupported("needs an index input")
        index = self.inputs[0]
        self.require_types(index, TensorType.INT32, role="index")
        if index.num_elements != 1:
            raise self.unsupported(f"the index {index.name!r} has shape {list(index.shape)}; it must hold one value")
        args = self.inputs[1:]
        if any(t is None for t in args):
            raise self.unsupported("an omitted (-1) input cannot be passed to a branch subgraph")
        indices = self.params.branch_subgraph_indices
        if not indices:
            raise self.unsupported("branch_subgraph_indices is empty: it needs at least one branch")
        self.branches = [self.subgraph(index, f"branch {k}") for k, index in enumerate(indices)]
        static = True
        for k, branch in enumerate(self.branches):
            role = f"branch {k}"
            self.check_counts(branch, role, len(args), len(self.outputs))
            self.check_output_types(branch, role)
            static &= self.prepare_subgraph(branch, role, args)  # all of them, as TFLite
        shapes = [self.output_shapes(branch) for branch in self.branches]
        static = static and all(found == shapes[0] for found in shapes)
        self.set_output_shapes(shapes[0] if static else None)

    def invoke(self) -> None:
        chosen = int(self.inputs[0].data.reshape(-1)[0])
        if not 0 <= chosen < len(self.branches):
            chosen = len(self.branches) - 1
        self.write_outputs(self.branches[chosen].run([t.data for t in self.inputs[1:]]))


# v1: the only version
@register(BuiltinOperator.STABLEHLO_COMPOSITE, 1, 1)
class StablehloComposite(_CallsSubgraphs):
    """STABLEHLO_COMPOSITE v1: outputs = decomposition subgraph(inputs)."""

    def prepare(self) -> None:
        if not self.inputs:
            raise self.unsupported("takes at least one input (LiteRT requires it)")
        if any(t is None for t in self.inputs):
            raise self.unsupported("an omitted (-1) input cannot be passed to the decomposition subgraph")
        self.decomposition = self.subgraph(self.params.decomposition_subgraph_index, "decomposition")
        self.check_counts(self.decomposition, "decomposition", len(self.inputs), len(self.outputs))
        self.check_output_types(self.decomposition, "decomposition")
        static = self.prepare_subgraph(self.decomposition, "decomposition", self.inputs)
        self.set_output_shapes(self.output_shapes(self.decomposition) if static else None)

    def invoke(self) -> None:
        self.write_outputs(self.decomposition.run([t.data for t in self.inputs]))
