"""`hopsim simulate gemm ... --emit-ir`: the listing is the kernel the knobs build, runnable as a
file with its launch. Laws: the emitted text parses and verifies to the same Kernel; simulating
the file with its `// launch:` lines is the same program on the same machine as `simulate gemm`
(full mode: the same memory model), so the cycles are equal and C is the product A B^T."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from hopsim.cli import main
from isa.ir import check, parse
from kernels.gemm import build_gemm
from kernels.gemm.host import LAUNCH_PREFIX
from kernels.params import GemmParams

SMALL = ["--m", "128", "--n", "256", "--k", "192", "--stages", "2", "--variant", "ws",
         "--epilogue", "stmatrix"]


def _emit(argv, capsys) -> str:
    assert main(["simulate", "gemm"] + argv + ["--emit-ir"]) == 0
    return capsys.readouterr().out


def test_emitted_text_is_the_kernel_of_the_knobs(capsys):
    text = _emit(SMALL + ["--layout", "nn", "--tma-issuer", "elect"], capsys)
    kernel = parse(text, filename="emitted.ptx")
    check(kernel)  # raises on any verifier error
    p = GemmParams(m=128, n=256, k=192, stages=2, variant="ws", epilogue="stmatrix", layout="nn",
                   tma_issuer="elect")
    assert kernel == build_gemm(p).kernel
    launch = yaml.safe_load("\n".join(line[len(LAUNCH_PREFIX):] for line in text.splitlines()
                                      if line.startswith(LAUNCH_PREFIX)))
    assert launch["grid"] == [p.grid, 1, 1] and launch["block"] == [p.threads, 1, 1]
    assert launch["smem"] == p.dynamic_smem_bytes
    assert launch["buffers"]["B"].startswith("random:f16:192x256")  # nn: B is K x N


def test_simulating_the_emitted_file_is_simulating_the_knobs(tmp_path, capsys):
    text = _emit(SMALL, capsys)
    ptx, spec, c_out = tmp_path / "gemm.ptx", tmp_path / "launch.yaml", tmp_path / "c.npy"
    ptx.write_text(text)
    spec.write_text("\n".join(line[len(LAUNCH_PREFIX):] for line in text.splitlines()
                              if line.startswith(LAUNCH_PREFIX)) + "\n")
    assert main(["simulate", str(ptx), "--launch", str(spec), "--json", "--no-progress",
                 "--save", f"C={c_out}", "--clock", "boost"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert main(["simulate", "gemm"] + SMALL + ["--mode", "full", "--json", "--no-progress",
                                         "--clock", "boost"]) == 0
    from_knobs = json.loads(capsys.readouterr().out)
    assert from_file["clock_mhz"] == from_knobs["clock_mhz"]
    assert from_file["cycles"] == from_knobs["cycles"]
    assert from_file["bytes_hbm"] == from_knobs["bytes_hbm"]
    # the buffers of the launch: A random seed 0 (128 x 192), B seed 1 (256 x 192), C = A B^T;
    # bound: the f16 output rounding (2^-11 relative) with 4x headroom; the f32 sum error of
    # K = 192 products (~1e-5 here) is far below atol
    a = np.random.default_rng(0).standard_normal((128, 192)).astype(np.float16).astype(np.float64)
    b = np.random.default_rng(1).standard_normal((256, 192)).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(np.load(c_out).astype(np.float64), a @ b.T, rtol=2 ** -9, atol=2 ** -9)


@pytest.mark.parametrize("sweep, knob", [(["--stages", "2,3"], "stages"),
                                         (["--tile", "128x128x64,64x64x64"], "tile")])
def test_emit_ir_of_a_sweep_is_one_line_exit_2(sweep, knob, capsys):
    assert main(["simulate", "gemm", "--m", "256", "--n", "256", "--k", "256"] + sweep
                + ["--emit-ir"]) == 2
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if x.strip()]
    assert out == "" and len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("hopsim: error:") and knob in lines[0] and "--emit-ir" in lines[0]
