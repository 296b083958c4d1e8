"""Output formatting (plain and rich), the progress helper, and ``main`` called in-process."""

from __future__ import annotations

import io

import pytest

from interpreter.cli import main
from interpreter.cli.output import Printer, Styled, Table, progress, render_plain


def test_plain_tables_are_aligned_without_trailing_spaces():
    table = Table(["node", "op", "runs on"], right=frozenset({"node"}))
    table.add(0, "DEPTHWISE_CONV_2D v2", Styled("CPU", "red"))
    table.add(12, "ADD v1", None)
    lines = render_plain(table).splitlines()
    assert lines[0] == "node  op                    runs on"
    assert lines[2] == "   0  DEPTHWISE_CONV_2D v2  CPU"
    assert lines[3] == "  12  ADD v1"


def test_rich_tables_when_asked_for():
    pytest.importorskip("rich")
    stream = io.StringIO()
    printer = Printer(stream, rich=True)
    table = Table(["node", "op"], title="subgraph 0")
    table.add(1, Styled("ADD v1", "green"))
    printer.table(table)
    printer.heading("partitions")
    text = stream.getvalue()
    assert "subgraph 0" in text and "ADD v1" in text and "partitions" in text


def test_progress_on_a_pipe_yields_everything_and_draws_nothing():
    stream = io.StringIO()
    assert list(progress(range(4), 4, "runs", stream=stream)) == [0, 1, 2, 3]
    assert stream.getvalue() == ""


def test_main_returns_exit_codes_in_process(capsys):
    assert main(["versions", "--tflite", "1.x"]) == 2
    assert "--tflite takes a release like 1.14.0" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert main([]) == 2
    assert main(["versions", "--runtime", "0.0.1"]) == 3  # the example model needs 0.1.0
    assert main(["versions", "--runtime", "0.1.0"]) == 0
