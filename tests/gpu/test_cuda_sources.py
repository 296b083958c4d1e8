"""The shipped CUDA sources compile with NVRTC (no device needed) exactly as CuPy's
RawModule compiles them; compile errors name the file and line; the CuPy launcher runs
on a real device (``gpu`` tests)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from backends.gpu.cuda import sources
from backends.gpu.cuda.nvrtc import CudaCompileError, check_all_sources, compile_source, cupy_nvrtc_options
from backends.gpu.cuda.sources import KERNELS, SOURCES, read_source
from backends.gpu.cuda.depthwise import depthwise_launch_config
from schema.enums import ActivationFunctionType as Act
from schema.enums import Padding

ARCHS = ("sm_75", "sm_80", "sm_90")
PACKAGE_DIR = pathlib.Path(sources.__file__).parent


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("source", SOURCES)
def test_shipped_source_compiles_with_nvrtc_without_warnings(source, arch):
    cubin = compile_source(read_source(source), source, arch, warnings_as_errors=True)
    assert cubin[:4] == b"\x7fELF"  # -arch=sm_XY gives a cubin, as CuPy loads it


def test_check_all_sources_covers_every_source_and_arch():
    assert set(check_all_sources(ARCHS)) == {(s, a) for s in SOURCES for a in ARCHS}


def test_every_cu_file_in_the_package_is_listed_as_shipped():
    assert sorted(p.name for p in PACKAGE_DIR.glob("*.cu")) == sorted(SOURCES)


def test_every_kernel_is_an_unmangled_entry_point_of_its_source():
    # get_function(name) on a RawModule finds only extern "C" (unmangled) kernels.
    for source in SOURCES:
        ptx = compile_source(read_source(source), source, "compute_75").decode()
        for kernel in sources.kernels_in(source):
            assert f".entry {kernel}(" in ptx, f"{kernel} is not an unmangled entry of {source}"
    assert {info.source for info in KERNELS.values()} <= set(SOURCES)


def test_compile_options_are_those_cupy_rawmodule_adds():
    options = cupy_nvrtc_options("sm_80")
    for expected in ("--std=c++17", "-ftz=true", "-arch=sm_80", "--device-as-default-execution-space"):
        assert expected in options
    assert options.index("-ftz=true") < options.index("-arch=sm_80") < options.index("--device-as-default-execution-space")
    assert "-arch=compute_80" in cupy_nvrtc_options("compute_80")


def test_infinity_which_nvcc_accepts_is_rejected_with_its_line_number():
    source = read_source("depthwise_conv2d.cu")
    lines = source.splitlines()
    number = lines.index("    DepthwiseSum<float> sum;") + 1  # the INFINITY line goes in before it
    broken = "\n".join(lines[: number - 1] + ["    const float lowest = -INFINITY;"] + lines[number - 1 :])
    with pytest.raises(CudaCompileError) as raised:
        compile_source(broken, "depthwise_conv2d.cu", "sm_80")
    message = str(raised.value)
    assert f"depthwise_conv2d.cu({number}): error" in message
    assert f"line {number}: identifier \"INFINITY\" is undefined" in message
    assert raised.value.diagnostics[0].line == number


def test_syntax_error_is_reported_with_file_name_and_line():
    source = "extern \"C\" __global__ void k(float* x) {\n    x[threadIdx.x] = 1.0f\n}\n"  # missing ';' on line 2
    with pytest.raises(CudaCompileError, match=r"broken\.cu: NVRTC could not compile it for sm_75 \(line [23]:"):
        compile_source(source, "broken.cu", "sm_75")


def test_warnings_fail_the_check_when_asked():
    source = "extern \"C\" __global__ void k(float* x) { int unused = 1; x[0] = 0.0f; }\n"
    compile_source(source, "warns.cu", "sm_75")
    with pytest.raises(CudaCompileError, match="warnings are errors"):
        compile_source(source, "warns.cu", "sm_75", warnings_as_errors=True)


def test_unsupported_arch_is_refused_before_compiling():
    with pytest.raises(ValueError, match="cannot target sm_11"):
        compile_source("", "empty.cu", "sm_11")
    with pytest.raises(ValueError, match="must look like"):
        compile_source("", "empty.cu", "75")


def test_reading_an_unknown_source_names_the_shipped_ones():
    with pytest.raises(ValueError, match="depthwise_conv2d.cu"):
        read_source("missing.cu")


def test_depthwise_launch_config_covers_every_output_element_once():
    grid, block = depthwise_launch_config((2, 7, 5, 6))
    assert block == (256, 1, 1) and grid == (2, 1, 1)  # 420 elements
    assert depthwise_launch_config((1, 16, 16, 1)) == ((1, 1, 1), (256, 1, 1))
    with pytest.raises(ValueError, match="empty"):
        depthwise_launch_config((1, 0, 4, 4))


# -- on a real device --------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
def test_rawmodule_launcher_matches_the_host_shim_on_a_device(cuda_device, storage):
    from backends.gpu.cuda.host import run_depthwise_conv2d_host
    from backends.gpu.cuda.depthwise import DepthwiseConv2DCuda

    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (2, 9, 8, 3)).astype(storage)
    w = rng.uniform(-1, 1, (1, 3, 3, 6)).astype(storage)
    b = rng.uniform(-1, 1, 6).astype(storage)
    device = cuda_device()
    with device.active():
        op = DepthwiseConv2DCuda(
            stride=(2, 1), dilation=(1, 2), padding=Padding.SAME, activation=Act.RELU6, storage=storage,
            xp=device.xp, module=device.module("depthwise_conv2d.cu"),
        )
        got = op(device.upload(x), device.upload(w), device.upload(b)).get()
        no_bias = op(device.upload(x), device.upload(w)).get()
    want = run_depthwise_conv2d_host(x, w, b, (2, 1), (1, 2), Padding.SAME, Act.RELU6, 2)
    tolerance = 1e-5 if storage == np.float32 else 2e-3
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tolerance, atol=tolerance)
    want_no_bias = run_depthwise_conv2d_host(x, w, None, (2, 1), (1, 2), Padding.SAME, Act.RELU6, 2)
    np.testing.assert_allclose(no_bias.astype(np.float32), want_no_bias.astype(np.float32), rtol=tolerance, atol=tolerance)


@pytest.mark.gpu
def test_bias_activation_launcher_matches_the_host_shim_on_a_device(cuda_device):
    from backends.gpu.cuda.host import run_bias_activation_host
    from backends.gpu.cuda.sources import BiasActivationCuda

    rng = np.random.default_rng(1)
    values = rng.uniform(-8, 8, (4, 5, 6, 7)).astype(np.float32)
    bias = rng.uniform(-2, 2, 7).astype(np.float32)
    device = cuda_device()
    with device.active():
        device_values = device.upload(values)
        epilogue = BiasActivationCuda(Act.RELU6, xp=device.xp, module=device.module("bias_activation.cu"))
        epilogue(device_values, device.upload(bias))
        got = device_values.get()
    np.testing.assert_allclose(got, run_bias_activation_host(values, bias, Act.RELU6), rtol=1e-6)
