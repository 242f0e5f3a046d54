"""`hopsim simulate rowsum|softmax`: the row-wise front end (hopsim/cli/rowwise_cmd.py) and the IR
kernels it builds (kernels/rowwise).

Laws: the simulated result equals numpy within the error bounds of kernels/rowwise/reference.py
(f32 summation depth, ex2.approx 2 ulp, rcp.approx 1 ulp: PTX ISA) for both families and both
mappings, including partial CTAs and more warps than a row has chunks; the rowsum equals, bit for
bit, an independent numpy replay of the kernels' summation order (per lane in element order, then
the butterflies); the bound is tight enough to reject a result one part in 2^16 off; --json
carries the sizes, the bytes the kernel must move and the HBM bytes written (y once); bad input is
one line, exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hopsim.cli import main
from hopsim.cli.rowwise_cmd import simulate_rowwise
from kernels.rowwise import RowParams
from kernels.rowwise.reference import sum_depth, within_bounds

SIZES = [  # (mapping, rows, cols): partial CTAs, one and several trips, cta warps without chunks
    ("warp", 11, 128), ("warp", 16, 512), ("cta", 3, 128), ("cta", 5, 1152), ("cta", 2, 4096)]


@pytest.mark.parametrize("family", ["rowsum", "softmax"])
@pytest.mark.parametrize("mapping, rows, cols", SIZES)
def test_result_within_the_stated_bounds(family, mapping, rows, cols):
    p = RowParams(family=family, rows=rows, cols=cols, mapping=mapping)
    res, gm, x = simulate_rowwise(p, values=True, mhz=1980)
    y = gm.view("y", np.float32)
    y = y if family == "rowsum" else y.reshape(rows, cols)
    ok, worst = within_bounds(family, x, y, sum_depth(cols, mapping, p.warps))
    assert ok, worst
    if family == "softmax":   # a perturbation of 2^-16 relative is outside the bound
        assert not within_bounds(family, x, y * np.float32(1 + 2.0 ** -16), sum_depth(cols, mapping, p.warps))[0]


def _bfly_sum(v: np.ndarray) -> np.ndarray:
    """Butterfly over the last axis (32 lanes): lane l adds lane l ^ off, offsets 16..1, in f32."""
    for off in (16, 8, 4, 2, 1):
        v = (v + v[..., np.arange(32) ^ off]).astype(np.float32)
    return v


def _replay_rowsum(x: np.ndarray, mapping: str, warps: int) -> np.ndarray:
    """The kernels' order: thread t sums its float4s (chunk c, lane l: elements 128c + 4l .. +3) in
    trip order and element order from 0.0; bfly per warp; cta: red[w] from lane 0, bfly of red
    (lanes >= W add 0.0)."""
    rows, cols = x.shape
    chunks = x.reshape(rows, cols // 128, 32, 4)
    if mapping == "warp":
        owner = [list(range(cols // 128))]
    else:
        owner = [list(range(w, cols // 128, warps)) for w in range(warps)]
    partial = np.zeros((rows, len(owner)), np.float32)
    for w, cs in enumerate(owner):
        acc = np.zeros((rows, 32), np.float32)
        for c in cs:
            for e in range(4):
                acc = (acc + chunks[:, c, :, e]).astype(np.float32)
        partial[:, w] = _bfly_sum(acc)[:, 0]
    if mapping == "warp":
        return partial[:, 0]
    lanes = np.zeros((rows, 32), np.float32)
    lanes[:, :warps] = partial
    return _bfly_sum(lanes)[:, 0]


@pytest.mark.parametrize("mapping, rows, cols", SIZES)
def test_rowsum_is_the_stated_summation_order_bit_for_bit(mapping, rows, cols):
    p = RowParams(family="rowsum", rows=rows, cols=cols, mapping=mapping)
    _, gm, x = simulate_rowwise(p, values=True, mhz=1980)
    assert np.array_equal(gm.view("y", np.float32), _replay_rowsum(x, mapping, p.warps))


def test_check_flag_and_json(capsys):
    assert main(["simulate", "softmax", "--rows", "16", "--cols", "256", "--mapping", "cta", "--check", "--json",
                 "--clock", "boost", "--no-progress"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["family"] == "softmax" and d["rows"] == 16 and d["cols"] == 256 and d["mapping"] == "cta"
    assert d["check"] is True and d["ctas"] == 16 and d["bytes_moved"] == 8 * 16 * 256
    assert d["extra"]["bytes_hbm_written"] == 4 * 16 * 256 and d["time_ms_boost"] > 0 and d["gb_per_s"] > 0


def test_report_names_the_launch(capsys):
    assert main(["simulate", "rowsum", "--rows", "64", "--cols", "1024", "--clock", "boost", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "rowsum_f32_warp (64 x 1024)" in out and "Achieved Bandwidth" in out


@pytest.mark.parametrize("argv, word", [
    (["softmax", "--cols", "1000"], "cols=1000"),
    (["softmax", "--cols", "65536"], "cols=65536"),
    (["rowsum", "--rows", "0"], "rows=0"),
    (["rowsum", "--rows", str(1 << 20), "--cols", "2048"], "rows="),
    (["softmax", "--mapping", "block"], "mapping='block'"),
    (["softmax", "--mapping", "cta", "--threads", "96"], "threads=96"),
    (["rowsum", "--threads", "48"], "threads=48"),
    (["softmax", "--rows", "2048", "--cols", "1024", "--check"], "--check"),
])
def test_bad_input_is_one_line_exit_2(argv, word, capsys):
    assert main(["simulate", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and (word in err[0] or word.strip("-") in err[0]), err
