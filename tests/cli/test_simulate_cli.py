"""`hopsim simulate gemm|FILE.ptx` and the CLI-wide rules: --help with an example on every
command, unknown flags named by their command, bad input -> one line + exit 2, no traceback."""

from __future__ import annotations

import json
import pathlib
import re

import numpy as np
import pytest

from hopsim import gemm_sim
from hopsim.cli import build_parser, main
from tests.cli.one_line import one_error_line

DOC_IR = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ir.md"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _doc_kernel() -> str:
    """The GEMM mainloop of docs/ir.md (so the documented example is what this test runs)."""
    m = re.search(r"```ptx\n(.*?)```", DOC_IR.read_text(), re.S)
    assert m, "docs/ir.md lost its ```ptx example"
    return m.group(1)


def _launch_args(k_tiles: int = 4) -> list[str]:
    k = 64 * k_tiles
    return ["--param", f"num_k_tiles={k_tiles}",
            "--buffer", f"A=random:f16:64x{k}:1", "--buffer", f"B=random:f16:128x{k}:2",
            "--buffer", "D_ptr=zeros:f32:64x128",
            "--tensor-map", "tmapA=A:64x64:128B", "--tensor-map", "tmapB=B:64x128:128B"]


# ----------------------------------------------------------------------------- --help everywhere


def _commands(parser, prefix=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,)
                yield from _commands(sub, prefix + (name,))


@pytest.mark.parametrize("cmd", [()] + list(_commands(build_parser())) + [("simulate", "gemm"),
                                                                           ("simulate", "k.ptx")])
def test_every_command_help_has_an_example(cmd, capsys):
    try:
        code = main(list(cmd) + ["--help"])  # `simulate` prints its own help and returns
    except SystemExit as ex:                  # argparse exits after --help
        code = ex.code
    assert code == 0
    out = capsys.readouterr().out
    assert "example" in out.lower() and "hopsim " in out


@pytest.mark.parametrize("argv, names", [
    (["sweep", "--bogus"], "hopsim sweep"),
    (["config", "show", "h100_sxm", "--bogus"], "hopsim config show"),
    (["simulate", "gemm", "--bogus"], "hopsim simulate gemm"),
])
def test_unknown_flag_is_named_by_its_command(argv, names, capsys):
    with pytest.raises(SystemExit) as ex:
        main(argv)
    assert ex.value.code == 2
    line = one_error_line(capsys)
    assert line.startswith(names) and "--bogus" in line and f"'{names} --help'" in line


# ----------------------------------------------------------------------------- simulate gemm


def test_gemm_single_point_json_and_pictures(tmp_path, capsys):
    plot, trace = tmp_path / "t.png", tmp_path / "t.json"
    assert main(["simulate", "gemm", "--m", "256", "--n", "256", "--k", "512", "--stages", "3",
                 "--json", "--plot", str(plot), "--trace", str(trace)]) == 0
    out = json.loads(capsys.readouterr().out)
    p = out["params"]
    assert (p["m"], p["n"], p["k"], p["stages"]) == (256, 256, 512, 3)
    # time = cycles at the SMs' clock (tensor_sm_clock_ratio x the reported clock); TFLOP/s = 2 M N K / time
    assert out["time_ms"] == pytest.approx(out["cycles"] / (out["sm_clock_mhz"] * 1e3))
    assert out["tflops"] == pytest.approx(2 * 256 * 256 * 512 / (out["time_ms"] * 1e-3) / 1e12)
    assert plot.read_bytes()[:8] == PNG_MAGIC
    tr = json.loads(trace.read_text())
    names = {e["args"]["name"] for e in tr["traceEvents"] if e["ph"] == "M"}
    assert {"SM0.TMA", "SM0.tensor"} <= names and any("warp" in n for n in names)
    assert any(e["ph"] == "X" and e["dur"] > 0 for e in tr["traceEvents"])


def test_gemm_summary_reads_like_nsight_sections(capsys):
    assert main(["simulate", "gemm", "--m", "256", "--n", "256", "--k", "256", "--check"]) == 0
    out = capsys.readouterr().out
    for section in ("GPU Speed Of Light Throughput", "Launch Statistics",
                    "Memory Workload Analysis", "Warp State Statistics"):
        assert f"Section: {section}" in out
    for metric in ("Duration", "Elapsed Cycles", "Tensor Throughput", "Shared Bank Conflicts",
                   "Waiting on mbarrier", "Issuing"):
        assert metric in out
    assert "check: relative error" in out and "OK" in out


def test_gemm_sweep_table_and_plot(tmp_path, capsys):
    sp = tmp_path / "s.png"
    assert main(["simulate", "gemm", "--m", "256", "--n", "256", "--k", "256", "--stages", "1-2",
                 "--sweep-plot", str(sp), "--no-progress", "--jobs", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["stages", "time_ms", "speedup"]
    assert [r.split()[0] for r in out[1:3]] == ["1", "2"]
    assert out[1].split()[2] == "1.000"  # speed-up of the first point against itself
    assert sp.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("argv, must_say", [
    (["--stages", "0"], "stages=0 is invalid: 1..8"),
    (["--stages", "8"], "227 KB"),                              # 8 x 32 KB stages do not fit
    (["--tile", "128x128x32"], "BK = 64"),
    (["--m", "-4"], "m="),
    (["--plot", "t.jpg"], ".png"),
    (["--m", "4096", "--n", "4096", "--k", "4096", "--check"], "at most"),
    (["--jobs", "0", "--stages", "1-2"], "jobs=0"),
])
def test_gemm_bad_input_one_line_exit_2(argv, must_say, capsys):
    assert main(["simulate", "gemm"] + argv) == 2
    line = one_error_line(capsys)
    assert line.startswith("hopsim: error:") and must_say in line


@pytest.mark.parametrize("argv, must_say", [
    (["--m", "4096", "--n", "4096", "--k", "4096", "--check"], "at most"),
    (["--m", "256", "--n", "256", "--k", "256", "--mode", "fast", "--check"], "fast mode computes no values"),
])
def test_a_refused_check_or_mode_simulates_nothing(argv, must_say, capsys, monkeypatch):
    """The request is refused before the clock solve times anything (it timed 4096^3 three times
    before saying that --check is limited)."""
    monkeypatch.setattr(gemm_sim, "simulate_gemm", lambda *a, **k: pytest.fail("simulated before refusing"))
    assert main(["simulate", "gemm"] + argv) == 2
    assert must_say in one_error_line(capsys)


# ----------------------------------------------------------------------------- simulate FILE.ptx


def test_ptx_file_runs_and_saves_the_product(tmp_path, capsys):
    src = tmp_path / "mainloop.ptx"
    src.write_text(_doc_kernel())
    d_out = tmp_path / "d.npy"
    assert main(["simulate", str(src), "--json", "--save", f"D_ptr={d_out}",
                 "--plot", str(tmp_path / "k.png")] + _launch_args(4)) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["kernel"] == "gemm_mainloop" and res["cycles"] > 0 and res["ctas"] == 1
    # the documented kernel stores thread t's first accumulator pair at D[16*warp + lane/4,
    # 2*(lane%4) + {0, 1}]; D = A (64 x K) . B (128 x K)^T in f32
    a = np.random.default_rng(1).standard_normal((64, 256)).astype(np.float16)
    b = np.random.default_rng(2).standard_normal((128, 256)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    d = np.load(d_out)
    rows = [16 * w + lane // 4 for w in range(4) for lane in range(32)]
    cols = [2 * (lane % 4) for w in range(4) for lane in range(32)]
    for dc in (0, 1):
        got = d[rows, [c + dc for c in cols]]
        want = ref[rows, [c + dc for c in cols]]
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    assert (tmp_path / "k.png").read_bytes()[:8] == PNG_MAGIC


def test_ptx_launch_yaml(tmp_path, capsys):
    (tmp_path / "k.ptx").write_text(_doc_kernel())
    (tmp_path / "launch.yaml").write_text(
        "grid: 1\nblock: 128\nparams: {num_k_tiles: 2}\n"
        "buffers: {A: 'random:f16:64x128', B: 'random:f16:128x128', D_ptr: 'zeros:f32:64x128'}\n"
        "tensor_maps: {tmapA: 'A:64x64:128B', tmapB: 'B:64x128:128B'}\n")
    assert main(["simulate", str(tmp_path / "k.ptx"), "--launch", str(tmp_path / "launch.yaml")]) == 0
    out = capsys.readouterr().out
    assert "Section: GPU Speed Of Light Throughput" in out and "Static Shared Memory" in out


def _edit(tmp_path, old: str, new: str) -> pathlib.Path:
    text = _doc_kernel()
    assert old in text
    p = tmp_path / "k.ptx"
    p.write_text(text.replace(old, new, 1))
    return p


@pytest.mark.parametrize("old, new, must_say", [
    # a typo: the parser names file, line and column
    ("    mov.u32 %r2, 0; ", "    mvo.u32 %r2, 0; ", r"k\.ptx:\d+:5: unknown instruction 'mvo'"),
    # an undeclared register: the verifier names the line, the rule and the instruction
    ("add.u32 %r2, %r2, 1;", "add.u32 %r2, %r99, 1;", r"k\.ptx:\d+: error \[undefined-register\]"),
    # no producer arrive: every warp waits on the stage's mbarrier -> a named deadlock, no hang
    ("@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r9], 24576;", "",
     r"Deadlock: warp \d .*waits on mbarrier 0x[0-9a-f]+ phase 0"),
])
def test_ptx_bad_kernels_are_one_line_exit_2(tmp_path, capsys, old, new, must_say):
    p = _edit(tmp_path, old, new)
    assert main(["simulate", str(p), "--no-progress"] + _launch_args(2)) == 2
    assert re.search(must_say, one_error_line(capsys))


@pytest.mark.parametrize("extra, must_say", [
    (["--grid", "0"], "grid="),
    (["--buffer", "A=random:f99:3"], "dtype='f99'"),
    (["--param", "num_k_tiles=abc"], "a number for .param .u32"),
    (["--param", "nope=3"], "the kernel's .params"),
    (["--launch", "missing.yaml"], "an existing YAML file"),
    (["--save", "Q=q.npy"], "a buffer name"),
    (["--tensor-map", "tmapA=Z:64x64"], "BUFFER:BOXCOLSxBOXROWS"),
])
def test_ptx_bad_launch_is_one_line_exit_2(tmp_path, capsys, extra, must_say):
    (tmp_path / "k.ptx").write_text(_doc_kernel())
    assert main(["simulate", str(tmp_path / "k.ptx")] + _launch_args(2) + extra) == 2
    assert must_say in one_error_line(capsys)


def test_missing_kernel_file(capsys):
    assert main(["simulate", "no/such/kernel.ptx"]) == 2
    assert "an existing IR kernel file" in one_error_line(capsys)


def test_ptx_loop_same_reads_no_hbm_and_keeps_the_product(tmp_path, capsys):
    """--loop same on an IR file (values run): its A and B tiles are L2-resident at the start (no
    HBM read bytes), not slower, and the saved product is the rotated run's."""
    src = tmp_path / "mainloop.ptx"
    src.write_text(_doc_kernel())
    out = {}
    for loop in ("rotated", "same"):
        assert main(["simulate", str(src), "--json", "--loop", loop, "--save",
                     f"D_ptr={tmp_path / (loop + '.npy')}"] + _launch_args(4)) == 0
        out[loop] = json.loads(capsys.readouterr().out)
    assert out["same"]["extra"]["loop"] == "same" and out["same"]["extra"]["l2_warm"] is True
    assert out["same"]["bytes_hbm"] == 0 < out["rotated"]["bytes_hbm"]
    assert out["same"]["cycles"] <= out["rotated"]["cycles"]
    assert np.array_equal(np.load(tmp_path / "same.npy"), np.load(tmp_path / "rotated.npy"))
    assert main(["simulate", str(src), "--loop", "cold"] + _launch_args(4)) == 2
    assert "loop" in one_error_line(capsys)
