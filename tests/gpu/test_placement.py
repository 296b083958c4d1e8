"""``GpuDelegate(placement="auto")``: partitions stay on the CPU where the device does not win.

Most tests inject the costs (``placement_timing``), so the decision is known in advance and
the tests run on host emulation; the outputs are always compared with the CPU path (our
CPU kernels, themselves tested against LiteRT's reference kernels). One test per device
kind runs the measured timing source itself.

The model: ADD -> LOGISTIC -> MUL -> LOGISTIC -> SUB, with LOGISTIC excluded from the
delegate, so "all" makes three one-node partitions: nodes 0, 2 and 4.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate
from backends.gpu.device import emulated_cuda_device
from backends.gpu.placement import (
    ALL_ON_DEVICE,
    CHOSEN,
    CPU_PATH,
    PlacementCache,
    Trial,
    TrialTimes,
)
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B

SHAPE = [2, 8]
CANDIDATES = ((0,), (2,), (4,))
OTHER_CPU_US = 2.0  # the two LOGISTIC nodes, on the CPU in every trial


def three_partition_model() -> bytes:
    builder = ModelBuilder()
    g = builder.subgraph()
    x, y = g.add_input("x", SHAPE), g.add_input("y", SHAPE)
    a, b, c, d, e = (g.add_tensor(name, SHAPE) for name in "abcde")
    g.add_operator(B.ADD, [x, y], [a])
    g.add_operator(B.LOGISTIC, [a], [b])
    g.add_operator(B.MUL, [b, y], [c])
    g.add_operator(B.LOGISTIC, [c], [d])
    g.add_operator(B.SUB, [d, x], [e])
    g.add_output(e)
    return builder.build()


MODEL = three_partition_model()


class TableTiming:
    """Costs from tables, per candidate (by its nodes): the device's and the CPU's. The
    total of a trial is the sum of its parts plus ``extra[on_device nodes]`` (what a real
    device adds or saves end to end: transfers between partitions, caches). Records its trials."""

    def __init__(self, device_us, cpu_us, extra=None) -> None:
        self.device_us, self.cpu_us, self.extra = device_us, cpu_us, extra or {}
        self.trials: list[Trial] = []

    def __call__(self, trial: Trial) -> TrialTimes:
        self.trials.append(trial)
        parts = {c: (self.device_us if c in trial.on_device else self.cpu_us)[c.nodes] for c in trial.candidates}
        on_device = tuple(sorted(c.nodes for c in trial.on_device))
        return TrialTimes(sum(parts.values()) + OTHER_CPU_US + self.extra.get(on_device, 0.0), parts)


def inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, SHAPE).astype(np.float32) for _ in range(2)]


def run(interpreter: Interpreter, values) -> np.ndarray:
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), values):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def auto(timing, cache: PlacementCache | None = None, device="host") -> GpuDelegate:
    return GpuDelegate(device=device, placement="auto", placement_timing=timing, excluded_ops=[B.LOGISTIC],
                       placement_cache=cache if cache is not None else PlacementCache())


def on_device(interpreter: Interpreter) -> list[int]:
    return [p.node for p in interpreter.node_placements() if p.delegated]


def delegate_nodes(interpreter: Interpreter) -> list[tuple[int, ...]]:
    """The partitions in the execution plan, as their nodes."""
    main = interpreter._main
    return [tuple(main.nodes[i].delegate_params.nodes_to_replace) for i in main.execution_plan
            if main.nodes[i].delegate_params is not None]


def assert_equals_the_cpu_path(interpreter: Interpreter) -> None:
    values = inputs(3)
    np.testing.assert_allclose(run(interpreter, values), run(Interpreter(model_content=MODEL), values), rtol=1e-6, atol=1e-6)


# -- the default and the options ----------------------------------------------------------------


def test_the_default_placement_takes_every_supported_partition_without_timing():
    delegate = GpuDelegate(device="host", excluded_ops=[B.LOGISTIC])
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate.placement == "all"
    assert delegate_nodes(interpreter) == list(CANDIDATES)
    assert delegate.placement_decisions == [] and delegate.placement_report() == []


def test_an_unknown_placement_is_a_value_error():
    with pytest.raises(ValueError, match="placement must be one of"):
        GpuDelegate(device="host", placement="fastest")


# -- deciding from given costs ------------------------------------------------------------------


def test_where_the_device_wins_every_partition_goes_to_the_device():
    timing = TableTiming(device_us={n: 3.0 for n in CANDIDATES}, cpu_us={n: 10.0 for n in CANDIDATES})
    delegate = auto(timing)
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate_nodes(interpreter) == list(CANDIDATES)
    decision = delegate.placement_decisions[0]
    assert decision.kept == ALL_ON_DEVICE
    assert len(timing.trials) == 2  # all on the device, and the CPU path: the choice is one of them
    assert_equals_the_cpu_path(interpreter)


def test_where_the_device_does_not_win_the_partitions_stay_on_the_cpu_and_the_report_gives_both_times():
    timing = TableTiming(device_us={n: 41.0 for n in CANDIDATES}, cpu_us={n: 5.0 for n in CANDIDATES})
    delegate = auto(timing)
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate_nodes(interpreter) == [] and on_device(interpreter) == []
    reasons = {p.node: p.rejections for p in interpreter.node_placements()}
    assert reasons[0] == ("ADD v1: kept on the CPU: device 41 µs, CPU 5.0 µs",)
    assert reasons[2] == ("MUL v1: kept on the CPU: device 41 µs, CPU 5.0 µs",)
    assert delegate.placement_decisions[0].kept == CPU_PATH
    assert delegate.placement_report()[0].startswith("placement auto: CPU path kept, end to end CPU path 17 µs")
    assert_equals_the_cpu_path(interpreter)


def test_a_split_decision_re_plans_the_subgraph_and_its_outputs_equal_the_cpu_path():
    timing = TableTiming(device_us={(0,): 3.0, (2,): 41.0, (4,): 3.0}, cpu_us={(0,): 10.0, (2,): 5.0, (4,): 10.0})
    delegate = auto(timing)
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate_nodes(interpreter) == [(0,), (4,)]
    assert on_device(interpreter) == [0, 4]
    main = interpreter._main
    assert [main.registrations[i].op_name for i in main.execution_plan] == ["GpuDelegate", "LOGISTIC", "MUL", "LOGISTIC", "GpuDelegate"]
    decision = delegate.placement_decisions[0]
    assert decision.kept == CHOSEN and set(decision.totals_us) == {CPU_PATH, CHOSEN, ALL_ON_DEVICE}
    assert [sorted(c.nodes for c in t.on_device) for t in timing.trials] == [list(CANDIDATES), [], [(0,), (4,)]]
    assert_equals_the_cpu_path(interpreter)
    assert_equals_the_cpu_path(interpreter)  # (and again: the second invoke replays the captured graphs)


def test_when_the_choice_is_slower_end_to_end_than_all_on_the_device_all_is_kept():
    # Per partition the middle one loses on the device; end to end, splitting costs two
    # extra transfers that the per-partition times do not show.
    timing = TableTiming(device_us={(0,): 3.0, (2,): 6.0, (4,): 3.0}, cpu_us={(0,): 10.0, (2,): 5.0, (4,): 10.0},
                         extra={((0,), (4,)): 20.0})
    delegate = auto(timing)
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate.placement_decisions[0].kept == ALL_ON_DEVICE
    assert delegate_nodes(interpreter) == list(CANDIDATES)
    assert_equals_the_cpu_path(interpreter)


def test_when_the_choice_is_slower_end_to_end_than_the_cpu_path_nothing_is_delegated():
    timing = TableTiming(device_us={(0,): 3.0, (2,): 41.0, (4,): 3.0}, cpu_us={(0,): 10.0, (2,): 5.0, (4,): 10.0},
                         extra={((0,), (4,)): 30.0})
    delegate = auto(timing)
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate.placement_decisions[0].kept == CPU_PATH
    assert delegate_nodes(interpreter) == []
    reasons = {p.node: p.rejections for p in interpreter.node_placements()}
    assert "but end to end the CPU path is fastest" in reasons[0][0]
    assert_equals_the_cpu_path(interpreter)


# -- ties ------------------------------------------------------------------------------------------


def test_a_partition_whose_device_time_equals_its_cpu_time_stays_on_the_cpu_every_time():
    for _ in range(3):
        timing = TableTiming(device_us={(0,): 5.0, (2,): 5.0, (4,): 3.0}, cpu_us={(0,): 5.0, (2,): 9.0, (4,): 5.0})
        delegate = auto(timing)
        interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
        assert delegate_nodes(interpreter) == [(2,), (4,)]


def test_equal_end_to_end_times_keep_the_placement_with_fewer_partitions_on_the_device():
    # All three end to end at 17 µs: the CPU path wins the tie, then the choice, then all.
    timing = TableTiming(device_us={(0,): 3.0, (2,): 9.0, (4,): 3.0}, cpu_us={(0,): 5.0, (2,): 5.0, (4,): 5.0},
                         extra={((0,), (4,)): 4.0})
    delegate = auto(timing)
    Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate.placement_decisions[0].totals_us == {CPU_PATH: 17.0, CHOSEN: 17.0, ALL_ON_DEVICE: 17.0}
    assert delegate.placement_decisions[0].kept == CPU_PATH
    # Without the CPU path in the tie, the choice beats all on the device.
    timing = TableTiming(device_us={(0,): 3.0, (2,): 9.0, (4,): 3.0}, cpu_us={(0,): 5.0, (2,): 5.0, (4,): 5.0},
                         extra={((0,), (2,), (4,)): -1.0, ((0,), (4,)): 3.0})
    delegate = auto(timing)
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate.placement_decisions[0].totals_us == {CPU_PATH: 17.0, CHOSEN: 16.0, ALL_ON_DEVICE: 16.0}
    assert delegate.placement_decisions[0].kept == CHOSEN
    assert delegate_nodes(interpreter) == [(0,), (4,)]


# -- the cache -------------------------------------------------------------------------------------


def test_the_next_load_of_the_same_model_on_the_same_device_does_not_time_again():
    cache = PlacementCache()
    costs = dict(device_us={(0,): 3.0, (2,): 41.0, (4,): 3.0}, cpu_us={(0,): 10.0, (2,): 5.0, (4,): 10.0})
    first, second = TableTiming(**costs), TableTiming(**costs)
    Interpreter(model_content=MODEL, experimental_delegates=[auto(first, cache)])
    delegate = auto(second, cache)
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert len(first.trials) == 3 and second.trials == []
    assert delegate.placement_decisions[0].from_cache
    assert delegate.placement_report()[0].endswith("(cached)")
    assert delegate_nodes(interpreter) == [(0,), (4,)]
    assert_equals_the_cpu_path(interpreter)


def test_a_cache_directory_keeps_the_decision_for_the_next_process(tmp_path):
    costs = dict(device_us={(0,): 3.0, (2,): 41.0, (4,): 3.0}, cpu_us={(0,): 10.0, (2,): 5.0, (4,): 10.0})
    first, second = TableTiming(**costs), TableTiming(**costs)
    Interpreter(model_content=MODEL, experimental_delegates=[auto(first, PlacementCache(tmp_path))])
    assert len(list(tmp_path.glob("*.json"))) == 1
    delegate = auto(second, PlacementCache(tmp_path))  # a new cache object: what the next process has
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert second.trials == [] and delegate_nodes(interpreter) == [(0,), (4,)]


def test_another_model_is_timed_afresh():
    cache = PlacementCache()
    costs = dict(device_us={n: 3.0 for n in CANDIDATES}, cpu_us={n: 10.0 for n in CANDIDATES})
    first, second = TableTiming(**costs), TableTiming(**costs)
    Interpreter(model_content=MODEL, experimental_delegates=[auto(first, cache)])
    builder = ModelBuilder()  # the same graph with other shapes
    g = builder.subgraph()
    x, y = g.add_input("x", [3, 8]), g.add_input("y", [3, 8])
    a, b, c, d, e = (g.add_tensor(name, [3, 8]) for name in "abcde")
    for op, ins, out in ((B.ADD, [x, y], a), (B.LOGISTIC, [a], b), (B.MUL, [b, y], c), (B.LOGISTIC, [c], d), (B.SUB, [d, x], e)):
        g.add_operator(op, ins, [out])
    g.add_output(e)
    Interpreter(model_content=builder.build(), experimental_delegates=[auto(second, cache)])
    assert len(second.trials) == 2


# -- the measured timing source -----------------------------------------------------------------


def test_measured_placement_on_host_emulation_reports_both_times_and_keeps_outputs_equal():
    delegate = GpuDelegate(device="host", placement="auto", excluded_ops=[B.LOGISTIC], placement_cache=PlacementCache())
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    decision = delegate.placement_decisions[0]
    assert decision.unavailable is None
    assert set(decision.device_us) == set(decision.cpu_us) == set(CANDIDATES)
    assert all(t > 0 for t in (*decision.device_us.values(), *decision.cpu_us.values(), *decision.totals_us.values()))
    assert len(delegate.placement_report()) == 1 + len(CANDIDATES)
    assert_equals_the_cpu_path(interpreter)


def test_measured_placement_on_the_emulated_cuda_device_keeps_outputs_equal():
    delegate = GpuDelegate(device=emulated_cuda_device(), placement="auto", excluded_ops=[B.LOGISTIC],
                           placement_cache=PlacementCache())
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[delegate])
    assert delegate.placement_decisions[0].unavailable is None
    assert_equals_the_cpu_path(interpreter)


def test_a_subgraph_the_trial_cannot_copy_is_placed_as_all_and_the_report_says_why():
    from model_helpers import read_then_assign_model

    delegate = GpuDelegate(device="host", placement="auto", placement_cache=PlacementCache())
    Interpreter(model_content=read_then_assign_model(), experimental_delegates=[delegate])
    lines = delegate.placement_report()
    assert lines and all("not timed" in line and "every partition on the device" in line for line in lines)


# -- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["analyze", "bench"])
def test_analyze_and_bench_show_the_placement_decision(tmp_path, capsys, command):
    import json

    from interpreter.cli import main

    path = tmp_path / "model.tflite"
    path.write_bytes(MODEL)
    extra = ["--runs", "2"] if command == "bench" else []
    assert main([command, str(path), "--delegate", "gpu-host", "--placement", "auto", "--json", *extra]) == 0
    lines = json.loads(capsys.readouterr().out)["placement"]
    assert lines[0].startswith("placement auto: ") and len(lines) == 2  # the decision, and the one partition
    assert "device" in lines[1] and "CPU" in lines[1]
    assert main([command, str(path), "--delegate", "gpu-host", "--placement", "auto", *extra]) == 0
    assert "placement auto: " in capsys.readouterr().out


def test_placement_on_a_delegate_that_is_not_the_gpu_delegate_is_a_usage_error(tmp_path, capsys):
    from interpreter.cli import main

    path = tmp_path / "model.tflite"
    path.write_bytes(MODEL)
    assert main(["analyze", str(path), "--delegate", "none", "--placement", "auto"]) == 2


def test_a_damaged_cache_file_is_timed_again(tmp_path):
    costs = dict(device_us={(0,): 3.0, (2,): 41.0, (4,): 3.0}, cpu_us={(0,): 10.0, (2,): 5.0, (4,): 10.0})
    Interpreter(model_content=MODEL, experimental_delegates=[auto(TableTiming(**costs), PlacementCache(tmp_path))])
    (cached,) = tmp_path.glob("*.json")
    cached.write_text('{"candidates": [[0], [2], [4]], "on_device": "nonsense"}')
    timing = TableTiming(**costs)
    interpreter = Interpreter(model_content=MODEL, experimental_delegates=[auto(timing, PlacementCache(tmp_path))])
    assert len(timing.trials) == 3 and delegate_nodes(interpreter) == [(0,), (4,)]
