"""TMA tensor-map loads by box shape, for the power model (seventh session; `--only tmaw_`).

Why: in heldout18 the power of uncapped GEMMs is under-predicted most where their TMA boxes are
narrow (one 64x64-tile sweep: 32-B swizzle -28%, 64-B -14%, 128-B -2%; 8-row boxes -20..-36%),
while the model charges L2 -> SM traffic per byte only (e_l2_pj_per_byte, fitted on 8 KB bulk
copies, whose requests are whole 128-B lines). These points measure the board power of the TMA
tensor path alone (no tensor work) by box row width (32 / 64 / 128 B: the 32B/64B/128B swizzle
boxes of a GEMM) and box rows (8 / 128), from an L2-resident 8 MiB tensor, on every SM: what a
box row (one L2 request of 32-128 B) costs beyond its bytes.

Kernel: tma_width_stream of validation/cuda/micro_tma_width.cu (microbench__tma_width: one
thread per CTA streams boxes of a 2-D f16 map with an 8 KB row pitch, two rounds of k boxes in
flight, nobody reads the data), one CTA per SM, chained launches of ~40 MB per CTA each for the
point's duration while NVML is sampled (`benches.measured`, validation/power/benches.py). Events per launch
are counted on the host from the launch's shape (bytes, boxes, box rows). Family "light_tmaw"
(light_tmaw.jsonl). cupy and the CUDA driver are imported lazily (GPU machine only).
"""

from __future__ import annotations

import time

import numpy as np

from validation.harness import _as_param, encode_tensor_map
from validation.power import benches, light

STEM = "micro_tma_width"
COLS = 4096                  # elements per row: 8 KB pitch (as validation/micro_tma_width.py)
ROWS_TOTAL = 1024            # 1024 x 4096 f16 = 8 MiB: L2-resident
SWIZZLE = {32: "32B", 64: "64B", 128: "128B"}   # box row bytes -> the swizzle whose box that is
COUNTERS = ("bytes", "boxes", "rows")
PER_CTA_BYTES = 40 << 20     # per launch and CTA: ~1-4 ms launches
POINT_S = light.POINT_S
#: (box row bytes, box rows): the 32/64/128-B rows of the three swizzles, at 8 and 128 rows
POINTS = tuple((wb, r) for wb in (32, 64, 128) for r in (8, 128))


def check(row_bytes: int, rows: int) -> None:
    """ValueError naming the parameter, its value and what is valid."""
    if row_bytes not in SWIZZLE:
        raise ValueError(f"row_bytes: {row_bytes} is not valid; give one of {', '.join(map(str, SWIZZLE))}")
    if rows not in (8, 16, 32, 64, 128, 256):
        raise ValueError(f"rows: {rows} is not valid; give 8, 16, 32, 64, 128 or 256")


def launch_shape(row_bytes: int, rows: int) -> dict:
    """Boxes per round k (two rounds <= 96 KB in flight, as micro_tma_width), rounds per launch,
    and the per-CTA counts of one launch."""
    w = row_bytes // 2
    box = 2 * w * rows
    k = max(1, min(8, (48 * 1024) // box))
    rounds = max(16, PER_CTA_BYTES // (box * k))
    n = rounds * k
    return {"w": w, "box_bytes": box, "k": k, "rounds": rounds, "boxes": n, "bytes": n * box, "rows": n * rows,
            "smem": 1024 + 2 * k * box}


def tmaw_point(row_bytes: int, rows: int, duration_s: float) -> dict:
    """Every SM (one CTA each) streams boxes of `row_bytes` x `rows` for duration_s."""
    import cupy as cp  # noqa: PLC0415

    check(row_bytes, rows)
    n = benches.sm_count()
    sh = launch_shape(row_bytes, rows)
    buf = light._random_f16_buffer(ROWS_TOTAL * COLS * 2)
    tmap = _as_param(encode_tensor_map("f16", buf.data.ptr, [COLS, ROWS_TOTAL], [COLS * 2], [sh["w"], rows],
                                       SWIZZLE[row_bytes]))
    ncol, nrow = COLS // sh["w"], ROWS_TOTAL // rows
    fn = benches.kernel(STEM, "tma_width_stream", sh["smem"])
    times = cp.zeros(4 * n, dtype=cp.int64)
    flag = cp.zeros(1, dtype=cp.int32)
    args = (tmap, np.int32(ncol), np.int32(ncol.bit_length() - 1), np.int32(nrow), np.int32(sh["w"]),
            np.int32(rows), np.int32(sh["rounds"]), np.int32(sh["k"]), times, flag, np.int32(1), np.int32(0))
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    per_launch = [n * sh["bytes"], n * sh["boxes"], n * sh["rows"]]

    def body(ps):
        series = {"t_end_s": [], "gpu_s": [], "events": []}
        t_stop = time.perf_counter() + duration_s
        while time.perf_counter() < t_stop:
            ev0.record()
            fn((n,), (32,), args, shared_mem=sh["smem"])
            ev1.record()
            ev1.synchronize()
            series["gpu_s"].append(cp.cuda.get_elapsed_time(ev0, ev1) / 1e3)
            series["events"].append(list(per_launch))
            series["t_end_s"].append(round(time.perf_counter() - ps.t_start, 5))
        return light._steady_rates(series, COUNTERS)

    res = benches.measured(duration_s, body)
    if int(flag.get()[0]):
        raise RuntimeError(f"tma_width_stream timed out (row_bytes {row_bytes}, rows {rows})")
    res.update(ctas=int(n), event=f"byte landed in shared memory by cp.async.bulk.tensor.2d ({row_bytes}-B x {rows}-row boxes, "
                     f"{SWIZZLE[row_bytes]} swizzle, L2-resident 8 MiB tensor)", launch_shape=sh)
    return res


def point_name(row_bytes: int, rows: int) -> str:
    return f"tmaw_w{row_bytes}_r{rows}"


def plan() -> list[dict]:
    """The tmaw points (family 'light_tmaw'), POINT_S of load each."""
    pts = []
    for wb, r in POINTS:
        check(wb, r)
        pts.append({"family": "light_tmaw", "name": point_name(wb, r), "seconds": POINT_S, "fn": tmaw_point,
                    "kw": {"row_bytes": wb, "rows": r, "duration_s": POINT_S}})
    return pts
