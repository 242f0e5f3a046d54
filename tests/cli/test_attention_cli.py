"""`hopsim simulate attention`: the attention-tile front end (hopsim/cli/attention_cmd.py).

Laws: the default run checks O against numpy within the bound (exit 0, "within the bound") and bit
for bit against the numpy replay of the kernel's roundings; --json
carries the report's fields, the check and the tensor FLOPs 4 m N d; --emit-ir prints a kernel that
parses; bad flags are one line, exit 2."""

from __future__ import annotations

import json

import pytest

from hopsim.cli import main
from isa.ir import parse


def test_check_within_the_bound(capsys):
    assert main(["simulate", "attention", "--seq", "128", "--head-dim", "64", "--clock", "boost",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "check against numpy (float64 reference, bound of kernels/attention/reference.py): within the bound" in out
    assert "bit for bit equal to the numpy replay of the kernel's roundings (0 elements differ)" in out
    assert "not validated" in out


def test_json_has_check_and_flops(capsys):
    assert main(["simulate", "attention", "--seq", "256", "--head-dim", "128", "--kv-block", "128",
                 "--q-tiles", "2", "--variant", "ws", "--out", "f16", "--overlap", "--json", "--clock", "boost", "--no-progress"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["family"] == "attention" and d["ctas"] == 2 and d["variant"] == "ws" and d["out"] == "f16" and d["overlap"] is True and d["timing_validated"] is False
    assert d["check"]["ok"] and d["check"]["elements"] == 2 * 64 * 128 and d["check"]["differ_from_replay"] == 0
    assert d["flops"] == 4 * 128 * 256 * 128 and d["cycles"] > 0 and d["time_ms_boost"] > 0


def test_timing_only_has_no_check(capsys):
    # seq 1024 (was 4096: the same law, a quarter of the K/V blocks to time)
    assert main(["simulate", "attention", "--seq", "1024", "--head-dim", "128", "--kv-block", "128",
                 "--q-tiles", "8", "--timing-only", "--json", "--clock", "boost", "--no-progress"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["check"] is None and d["ctas"] == 8


def test_emit_ir_parses(capsys):
    assert main(["simulate", "attention", "--seq", "128", "--emit-ir"]) == 0
    assert parse(capsys.readouterr().out).name == "attention_tile"


@pytest.mark.parametrize("argv, word", [
    (["--head-dim", "96"], "head_dim=96"),
    (["--seq", "100"], "seq=100"),
    (["--kv-block", "32"], "kv_block=32"),
    (["--stages", "9"], "stages=9"),
    (["--variant", "pingpong"], "variant='pingpong'"),
    (["--out", "bf16"], "out='bf16'"),
    (["--overlap", "--stages", "1"], "stages=1"),
    (["--scale", "-2"], "scale=-2"),
    (["--seq", "65536", "--q-tiles", "64"], "q-tiles x seq/kv-block"),
    (["--plot", "/nonexistent/x.png"], "plot"),
])
def test_bad_input_is_one_line_exit_2(argv, word, capsys):
    assert main(["simulate", "attention", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and word in err[0], err


def test_usage_error_is_one_line_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "attention", "--seq", "abc"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "--seq" in err[0], err


def test_trace_and_plot_are_written(tmp_path, capsys):
    trace, plot = tmp_path / "a.json", tmp_path / "a.png"
    assert main(["simulate", "attention", "--seq", "128", "--variant", "ws", "--trace", str(trace),
                 "--plot", str(plot), "--clock", "boost", "--no-progress"]) == 0
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any("wgmma" in str(e.get("name", "")) for e in events)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
