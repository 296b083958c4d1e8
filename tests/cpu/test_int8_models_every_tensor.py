"""Every tensor of the bundled int8 models, and of the int8 MobileNet the benchmarks build,
equals LiteRT's BUILTIN_REF bit for bit (``experimental_preserve_all_tensors`` on both
sides), over several invokes (the streaming model keeps state in variables between
them). This covers each convolution's bound path (folded, scaled, single window,
general) and its output stage on real layer shapes."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRT
from ai_edge_litert.interpreter import OpResolverType
from gpu_helpers import assert_tensors_equal_litert
from oracle import MODELS_DIR

from interpreter import Interpreter

INT8_REAL_MODELS = sorted((MODELS_DIR / "real").glob("*int8*.tflite"))


def compare_every_tensor(model: bytes, where: str, invokes: int = 3, seed: int = 0) -> None:
    ours = Interpreter(model_content=model, experimental_preserve_all_tensors=True)
    theirs = LiteRT(
        model_content=model,
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    ours.allocate_tensors()
    theirs.allocate_tensors()
    rng = np.random.default_rng(seed)
    for invoke in range(invokes):
        for detail in ours.get_input_details():
            dtype = np.dtype(detail["dtype"])
            if dtype.kind == "f":  # (a float input the model quantizes itself)
                value = rng.uniform(-1, 1, detail["shape"]).astype(dtype)
            else:
                info = np.iinfo(dtype)
                value = rng.integers(info.min, int(info.max) + 1, detail["shape"]).astype(dtype)
            ours.set_tensor(detail["index"], value)
            theirs.set_tensor(detail["index"], value)
        ours.invoke()
        theirs.invoke()
        assert assert_tensors_equal_litert(ours, theirs, f"{where}, invoke {invoke}") > 0


@pytest.mark.parametrize("path", INT8_REAL_MODELS, ids=lambda p: p.stem)
def test_every_tensor_of_a_bundled_int8_model_is_bit_exact(path):
    compare_every_tensor(path.read_bytes(), path.stem)


@pytest.mark.parametrize("linear", [(), (1, 4, 8)], ids=["relu6", "some-linear"])
def test_every_tensor_of_the_benchmarked_int8_mobilenet_is_bit_exact(linear):
    from benchmarks.int8_mobilenet import build_mobilenet

    compare_every_tensor(build_mobilenet(size=48, alpha=0.25, linear=linear), f"mobilenet linear={linear}", invokes=2)
