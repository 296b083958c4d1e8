"""Compare litedelegate's MediaPipe attention face-mesh ops with MediaPipe's own C++ kernels.

    python benchmarks/compare_mediapipe.py --mediapipe-python /path/to/venv/bin/python

LiteRT cannot run ``Landmarks2TransformMatrix``, ``TransformTensorBilinear`` and
``TransformLandmarks``; MediaPipe's runtime can. This script runs models through MediaPipe's
``InferenceCalculator`` (its op resolver from ``TfLiteCustomOpResolverCalculator``, plain TFLite
CPU kernels) in another Python, one with ``mediapipe==0.10.14`` (a Python 3.11 venv:
``pip install --no-deps mediapipe==0.10.14 && pip install "numpy<2" "protobuf<5" absl-py attrs
flatbuffers``; its ``cv2`` is not needed: the framework bindings are loaded without
``mediapipe/__init__``), and the same models on litedelegate's CPU path on the very input floats
MediaPipe computed, and prints how far apart the outputs are:

- one-node models of each op, fed from an image tensor (``ImageToTensorCalculator``'s float
  range scales the pixels; a RESHAPE turns them into landmarks): random rotations, scales and
  shifts for TransformTensorBilinear (inside, outside, on the edges), random matrices for
  TransformLandmarks (2-D and 3-D), random options for Landmarks2TransformMatrix;
- the whole ``mediapipe_face_landmark_with_attention.tflite`` on the portrait's face crop.

Measured (mediapipe 0.10.14, this checkout): every one-node case bit for bit (another draw of
the six Landmarks2TransformMatrix cases had one entry an ulp apart, 1e-7 relative: glibc's
cosf/sinf against the correctly rounded values used here); the whole model within 3.5e-7 of each
output's largest magnitude (4.6e-5 px), as close as the plain ``mp_face_landmark`` (4.0e-7),
whose difference is only the builtin kernels' summation order.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]

# -- the MediaPipe side (runs in the mediapipe venv: only numpy and mediapipe there) -------------

WORKER = r'''
import glob, importlib.machinery, importlib.util, pathlib, sys, types
import numpy as np
site = pathlib.Path(next(p for p in sys.path if p.endswith("site-packages")))
for name in ("mediapipe", "mediapipe.python"):  # no mediapipe/__init__: it imports cv2
    package = types.ModuleType(name); package.__path__ = [str(site / name.replace(".", "/"))]; sys.modules[name] = package
so = glob.glob(str(site / "mediapipe/python/_framework_bindings*.so"))[0]
loader = importlib.machinery.ExtensionFileLoader("mediapipe.python._framework_bindings", so)
bindings = importlib.util.module_from_spec(importlib.util.spec_from_file_location(loader.name, so, loader=loader))
loader.exec_module(bindings); sys.modules[loader.name] = bindings
from mediapipe.python import packet_creator, packet_getter
model, image_path, lo, hi, count, out_path = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
image = np.load(image_path); h, w, _ = image.shape
streams = ["input_floats"] + [f"f{i}" for i in range(count)]
config = "input_stream: 'image'\n" + "".join(f"output_stream: '{s}'\n" for s in streams) + f"""
node {{ calculator: 'ImageToTensorCalculator' input_stream: 'IMAGE:image' output_stream: 'TENSORS:input_tensors'
  options {{ [mediapipe.ImageToTensorCalculatorOptions.ext] {{ output_tensor_width: {w} output_tensor_height: {h}
    keep_aspect_ratio: false output_tensor_float_range {{ min: {lo} max: {hi} }} }} }} }}
node {{ calculator: 'TensorsToFloatsCalculator' input_stream: 'TENSORS:input_tensors' output_stream: 'FLOATS:input_floats' }}
node {{ calculator: 'TfLiteCustomOpResolverCalculator' output_side_packet: 'OP_RESOLVER:op_resolver' }}
node {{ calculator: 'InferenceCalculator' input_side_packet: 'OP_RESOLVER:op_resolver' input_stream: 'TENSORS:input_tensors'
  output_stream: 'TENSORS:output_tensors'
  options {{ [mediapipe.InferenceCalculatorOptions.ext] {{ model_path: '{model}' delegate {{ tflite {{}} }} }} }} }}
node {{ calculator: 'SplitTensorVectorCalculator' input_stream: 'output_tensors' """ + " ".join(f"output_stream: 't{i}'" for i in range(count)) + """
  options { [mediapipe.SplitVectorCalculatorOptions.ext] { """ + " ".join(f"ranges {{ begin: {i} end: {i + 1} }}" for i in range(count)) + " } } }\n" + "".join(
    f"node {{ calculator: 'TensorsToFloatsCalculator' input_stream: 'TENSORS:t{i}' output_stream: 'FLOATS:f{i}' }}\n" for i in range(count))
graph = bindings.calculator_graph.CalculatorGraph(graph_config=config)
results = {}
for s in streams:
    graph.observe_output_stream(s, lambda stream, packet: results.__setitem__(stream, np.array(packet_getter.get_float_list(packet), np.float32)))
graph.start_run()
frame = packet_creator.create_image_frame(image_format=bindings.image_frame.ImageFormat.SRGB, data=np.ascontiguousarray(image))
graph.add_packet_to_input_stream("image", frame.at(0))
graph.close()
np.savez(out_path, **results)
'''


def run_mediapipe(python: str, model: bytes, image: np.ndarray, value_range: tuple[float, float], outputs: int) -> dict:
    """MediaPipe's outputs (flat float32) and its input tensor's floats (``input_floats``)."""
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        (folder / "model.tflite").write_bytes(model)
        np.save(folder / "image.npy", image)
        (folder / "worker.py").write_text(WORKER)
        subprocess.run([python, str(folder / "worker.py"), str(folder / "model.tflite"), str(folder / "image.npy"),
                        *map(str, value_range), str(outputs), str(folder / "out.npz")], check=True, capture_output=True)
        return dict(np.load(folder / "out.npz"))


# -- our side -------------------------------------------------------------------------------------


def run_ours(model: bytes, x: np.ndarray) -> list[np.ndarray]:
    from interpreter import Interpreter

    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    interpreter.set_tensor(detail["index"], x.reshape(detail["shape"]))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).reshape(-1) for d in interpreter.get_output_details()]


H, W = 12, 13  # the image the one-node models read: 12 x 13 x 3 = 468 values


def one_node_model(kind: str, **kw) -> bytes:
    from schema.builder import ModelBuilder
    from schema.custom_options import flexbuffer_bytes
    from schema.enums import BuiltinOperator
    from schema.params import ReshapeParams

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("image", [1, H, W, 3])
    if kind == "TransformTensorBilinear":
        matrix = graph.add_constant("matrix", kw["matrix"].reshape(1, 4, 4).astype(np.float32))
        y = graph.add_tensor("y", [1, 9, 10, 3])
        graph.add_operator(kind, [x, matrix], [y], version=2, custom_options=flexbuffer_bytes({"output_height": 9, "output_width": 10}))
    else:
        dims = kw.get("dims", 3)
        shape = [1, H * W * 3 // dims, dims]
        landmarks = graph.add_tensor("landmarks", shape)
        graph.add_operator(BuiltinOperator.RESHAPE, [x, graph.add_constant("shape", np.array(shape, np.int32))], [landmarks],
                           ReshapeParams(tuple(shape)))
        if kind == "TransformLandmarks":
            y = graph.add_tensor("y", shape)
            graph.add_operator(kind, [landmarks, graph.add_constant("matrix", kw["matrix"].reshape(1, 4, 4).astype(np.float32))],
                               [y], version=2)
        else:
            y = graph.add_tensor("y", [1, 4, 4])
            graph.add_operator(kind, [landmarks], [y], version=2, custom_options=flexbuffer_bytes(kw["options"]))
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def turn(angle: float, scale: float, tx: float, ty: float) -> np.ndarray:
    c, s = scale * math.cos(angle), scale * math.sin(angle)
    return np.array([[c, -s, 0, tx], [s, c, 0, ty], [0, 0, 1, 0], [0, 0, 0, 1]], np.float32)


def cases(rng: np.random.Generator):
    """(op, model keywords, ImageToTensor's float range)."""
    for _ in range(6):
        matrix = turn(rng.uniform(-3.2, 3.2), rng.uniform(0.3, 1.6), rng.uniform(-3, 14), rng.uniform(-3, 12))
        yield "TransformTensorBilinear", dict(matrix=matrix), (0.0, 1.0)
    yield "TransformTensorBilinear", dict(matrix=np.eye(4)), (-2.0, 2.0)
    for dims in (2, 3):
        yield "TransformLandmarks", dict(matrix=rng.standard_normal((4, 4)), dims=dims), (-50.0, 200.0)
    for k in range(6):
        n = H * W
        options = dict(subset_idxs=rng.integers(0, n, 2 * k + 5).tolist(), left_rotation_idx=int(rng.integers(n)),
                       right_rotation_idx=int(rng.integers(n)), target_rotation_radians=float(rng.uniform(-1, 1)),
                       output_height=int(rng.integers(8, 33)), output_width=int(rng.integers(8, 33)),
                       scale_x=float(rng.uniform(1, 2)), scale_y=float(rng.uniform(1, 2)))
        yield "Landmarks2TransformMatrix", dict(options=options), (0.0, 192.0)


def report(name: str, ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    for i, (a, b) in enumerate(zip(ours, theirs)):
        difference = np.abs(a.astype(np.float64) - b)
        scale = float(np.abs(b).max()) or 1.0
        print(f"{name:34s} output {i}: bit for bit {np.array_equal(a, b)!s:5s}  max |difference| {difference.max():.3g}"
              f"  ({difference.max() / scale:.2g} of the output's scale)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mediapipe-python", required=True, help="a Python with mediapipe==0.10.14 installed")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    rng = np.random.default_rng(0)
    for number, (kind, keywords, value_range) in enumerate(cases(rng)):
        model = one_node_model(kind, **keywords)
        image = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
        theirs = run_mediapipe(args.mediapipe_python, model, image, value_range, 1)
        report(f"{kind} case {number}", run_ours(model, theirs["input_floats"]), [theirs["f0"]])
    from face_mesh import FACE_LANDMARK, FACE_LANDMARK_WITH_ATTENTION, portrait_face_crop

    crop = np.round(portrait_face_crop()[0] * 255).astype(np.uint8)
    for path, outputs in ((FACE_LANDMARK_WITH_ATTENTION, 7), (FACE_LANDMARK, 2)):
        model = path.read_bytes()
        theirs = run_mediapipe(args.mediapipe_python, model, crop, (0.0, 1.0), outputs)
        report(path.stem, run_ours(model, theirs["input_floats"]), [theirs[f"f{i}"] for i in range(outputs)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
