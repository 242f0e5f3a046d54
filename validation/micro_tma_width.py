"""TMA streaming throughput against box inner width and rows (validation/cuda/micro_tma_width.cu).

    python3 -m validation.micro_tma_width --out DIR                 # GPU machine: tma_width record
    python3 -m validation.micro_tma_width --out DIR --suite share   # GPU machine: tma_share record
    python3 -m validation.micro_tma_width --out DIR --suite stagger # GPU machine: tma_stagger record
    python3 -m validation.micro_tma_width --out DIR --suite gemm    # GPU machine: tma_gemm record

Why: in the GEMM records, 32B and 64B swizzles (box rows of 32 / 64 bytes) are 1.5-3x slower than
128B while wgmma throughput does not depend on the swizzle (microbench__wgmma_swizzle.json). This
measures what the TMA path delivers per SM for each box shape, in the GEMM's access pattern (row
pitch 8 KB = K 4096 f16, boxes walking the column chunks of a row block), from L2 (8 MB tensor)
and from HBM (1 GB tensor), with one SM alone and with all SMs (1 CTA each), two rounds of k
boxes in flight per SM (the issuing loop uses masks and shifts only: integer division in it
cost ~140 cycles per box in a first version and hid the TMA). Results per configuration: bytes per SM cycle, box rows per SM cycle, SM clock.
Record: microbench__tma_width.json. Runs on the GPU machine (numpy, cupy, stdlib only).

Suite `share` (record microbench__tma_share.json): the same stream from the 8 MB L2-resident
tensor, but the CTAs come in groups of g consecutive block indices (one CTA per SM) that read the
SAME box sequence at about the same time, as the ~8-16 CTAs of a GEMM that read one A or B tile
(g = 1 is the `width` suite's pattern). Question: is the all-SM L2 -> SM rate (~30 B/cycle/SM
for 128-B x 128-row boxes, 7.7 TB/s) a limit of L2 bytes served (sharing would not help) or of
something sharing relieves? Each CTA streams ~4 MB per launch (~70 us) so start skew is small.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

import numpy as np

from validation.harness import _as_param, encode_tensor_map
from validation.micro_runner import NVCC_O3, nvcc_cubin
from validation.provenance import device_provenance, write_record

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE / "cuda" / "micro_tma_width.cu"
COLS = 4096  # elements per row: 8 KB pitch, as A or B of a K = 4096 GEMM
SWZ = {16: "32B", 32: "64B", 64: "128B"}


def _compile_kernels(out: pathlib.Path, names: tuple[str, ...]) -> dict:
    """nvcc micro_tma_width.cu (-O3) into `out`; its kernels `names`, each allowed 200 KB of dynamic smem."""
    import cupy as cp

    cubin = out / "micro_tma_width.cubin"
    nvcc_cubin(SRC, cubin, NVCC_O3)
    mod = cp.RawModule(path=str(cubin))
    fns = {name: mod.get_function(name) for name in names}
    for fn in fns.values():
        fn.max_dynamic_shared_size_bytes = 200 * 1024
    return fns


def _compile(out: pathlib.Path):
    """The tma_width_stream kernel (also micro_clock's stream)."""
    return _compile_kernels(out, ("tma_width_stream",))["tma_width_stream"]


def _width_args(tmap, ncol: int, nrow: int, w: int, r: int, rounds: int, k: int, times, flag,
                share: int, lag: int) -> tuple:
    """tma_width_stream's launch arguments (nrow: the row-block count the box sequence wraps at)."""
    return (tmap, np.int32(ncol), np.int32(ncol.bit_length() - 1), np.int32(nrow), np.int32(w),
            np.int32(r), np.int32(rounds), np.int32(k), times, flag, np.int32(share), np.int32(lag))


def _launches(fn, grid: int, args: tuple, smem: int, times, reps: int):
    """One warm-up launch of `fn` (grid CTAs of 32 threads, `smem` dynamic bytes), then `reps`
    timed ones: yields each launch's times as a (grid, 4) array (clock64 start, end, %globaltimer
    start, end per CTA)."""
    import cupy as cp

    fn((grid,), (32,), args, shared_mem=smem)  # warm
    for _ in range(reps):
        fn((grid,), (32,), args, shared_mem=smem)
        cp.cuda.Device().synchronize()
        yield cp.asnumpy(times).reshape(grid, 4)


def _span_and_clock(t: np.ndarray) -> tuple[np.ndarray, float, float]:
    """A launch's clock64 span per CTA, its median over CTAs, and the median SM clock in MHz (SM
    cycles per %globaltimer ns x 1e3)."""
    span = (t[:, 1] - t[:, 0]).astype(float)
    return span, float(np.median(span)), float(np.median(span / np.maximum(t[:, 3] - t[:, 2], 1) * 1e3))


def _check_flag(flag, kernel: str, config: str) -> None:
    """A spin wait hit SPIN_LIMIT in some CTA (the kernel set `flag`): the timings are void."""
    if int(flag.get()[0]):
        raise RuntimeError(f"{kernel} timed out ({config})")


def _median_cycles_and_clock(fn, grid: int, args: tuple, smem: int, times, flag, reps: int,
                             kernel: str, config: str) -> tuple[float, float]:
    """Median over `reps` launches (after a warm-up) of the median CTA span (SM cycles) and of the
    median SM clock (MHz); `kernel` and `config` name the launch if a wait timed out."""
    per, clk = [], []
    for t in _launches(fn, grid, args, smem, times, reps):
        _, cyc, mhz = _span_and_clock(t)
        per.append(cyc)
        clk.append(mhz)
    _check_flag(flag, kernel, config)
    return statistics.median(per), statistics.median(clk)


def _rates(cyc: float, per_cta: int, box_bytes: int, r: int) -> dict:
    """The rate fields every record of this file starts with (per CTA = per SM: one CTA each)."""
    return {"cycles_per_box": cyc / per_cta, "bytes_per_cycle_per_sm": per_cta * box_bytes / cyc,
            "rows_per_cycle_per_sm": per_cta * r / cyc}


def run(out: pathlib.Path) -> pathlib.Path:
    import cupy as cp


    out.mkdir(parents=True, exist_ok=True)
    fn = _compile(out)
    nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    flag = cp.zeros(1, dtype=cp.int32)
    results = {}
    for where, rows_total in (("L2", 1024), ("HBM", 131072)):
        buf = cp.random.randint(0, 2 ** 15, size=rows_total * COLS, dtype=cp.int32).astype(cp.uint16)
        for w in (16, 32, 64):
            for r in (8, 64, 128):
                tmap = _as_param(encode_tensor_map("f16", buf.data.ptr, [COLS, rows_total], [COLS * 2],
                                                   [w, r], SWZ[w]))
                ncol, nrow = COLS // w, rows_total // r
                box_bytes = 2 * w * r
                k = max(1, min(8, (48 * 1024) // box_bytes))  # boxes per round; 2 rounds in flight
                for grid in (1, nsm):
                    rounds = max(16, min(512, int(16e6 / box_bytes / grid / k)))
                    per_cta = rounds * k
                    times = cp.zeros(4 * grid, dtype=cp.int64)
                    args = _width_args(tmap, ncol, nrow, w, r, rounds, k, times, flag, 1, 0)
                    smem = 1024 + 2 * k * box_bytes
                    cyc, mhz = _median_cycles_and_clock(fn, grid, args, smem, times, flag, 3,
                                                        "tma_width_stream", f"{where} {w}x{r}")
                    name = f"{where},w{2 * w}B,r{r},sms{grid}"
                    results[name] = {
                        **_rates(cyc, per_cta, box_bytes, r),
                        "box_bytes": box_bytes, "boxes_per_round": k, "boxes_per_cta": per_cta,
                        "sm_clock_mhz": mhz,
                    }
                    print(f"{name}: {cyc / per_cta:.1f} cyc/box, {per_cta * box_bytes / cyc:.1f} B/cyc/SM, "
                          f"{per_cta * r / cyc:.3f} rows/cyc/SM at {mhz:.0f} MHz", flush=True)
        del buf
    payload = {
        "measures": ["H100Timing TMA per-row (per L2 request) cost vs box inner width"],
        "results": results,
        "method": ("1 thread per CTA streams boxes {W, R} of a 2-D f16 map with 8 KB row pitch in "
                   "rounds of k back-to-back boxes on one mbarrier (2 rounds, <= 96 KB, in flight), "
                   "boxes walking the column chunks of a row block; grid 1 (one SM) or all SMs; clock64 span per CTA, median over CTAs and 3 "
                   "launches after a warm-up; L2: 8 MB tensor (resident after warm-up), HBM: 1 GB."),
        "units": {"cycles_per_box": "SM cycles", "bytes_per_cycle_per_sm": "B per SM cycle",
                  "rows_per_cycle_per_sm": "box rows per SM cycle", "sm_clock_mhz": "MHz"},
    }
    return write_record("microbench", "tma_width", payload, device_provenance(), out)


def _share_configs(nsm: int) -> list[tuple[int, int, int, int]]:
    """(w elements, rows, share group g, grid) of the `share` suite."""
    cfg = [(64, 128, 1, 1)]                                           # (d) one SM alone
    cfg += [(64, 128, g, nsm) for g in (1, 2, 4, 8, 16, 33, nsm)]     # (b) 128-B x 128-row boxes
    cfg += [(64, 128, 1, nsm // 2), (64, 128, 8, nsm // 2)]           # half the SMs: aggregate limit?
    for w, r in ((64, 64), (32, 128), (32, 64)):                      # (c) other box shapes
        cfg += [(w, r, 1, 1)] + [(w, r, g, nsm) for g in (1, 8, nsm)]
    return cfg


def _stagger_configs(nsm: int) -> list[tuple[int, int, int, int, int]]:
    """(w elements, rows, share group g, grid, lag boxes) of the `stagger` suite: request-bound
    narrow boxes (32-B and 64-B rows) and byte-bound wide ones (128-B rows), each alone (g = 1)
    and shared by 8 SMs whose members run 0..128 boxes apart in the sequence."""
    cfg = []
    for w, r in ((16, 64), (32, 64), (64, 128)):
        cfg += [(w, r, 1, nsm, 0)] + [(w, r, 8, nsm, lag) for lag in (0, 1, 2, 4, 8, 32, 128)]
    return cfg


def run_share(out: pathlib.Path, per_cta_bytes: float = 4e6, reps: int = 5, stagger: bool = False) -> pathlib.Path:
    """The `share` suite: L2 -> SM TMA rate when g SMs read the same boxes (see module doc);
    `stagger`: the same with the group's members `lag` boxes apart (record tma_stagger)."""
    import cupy as cp


    out.mkdir(parents=True, exist_ok=True)
    fn = _compile(out)
    nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    flag = cp.zeros(1, dtype=cp.int32)
    rows_total = 1024  # 8 MB: L2-resident after the first launches
    buf = cp.random.randint(0, 2 ** 15, size=rows_total * COLS, dtype=cp.int32).astype(cp.uint16)
    maps: dict[tuple[int, int], object] = {}
    results = {}
    configs = _stagger_configs(nsm) if stagger else [(*c, 0) for c in _share_configs(nsm)]
    for w, r, share, grid, lag in configs:
        if (w, r) not in maps:
            maps[(w, r)] = _as_param(encode_tensor_map("f16", buf.data.ptr, [COLS, rows_total], [COLS * 2],
                                                       [w, r], SWZ[w]))
        ncol, nrow = COLS // w, rows_total // r
        box_bytes = 2 * w * r
        k = max(1, min(8, (48 * 1024) // box_bytes))
        rounds = max(16, int(per_cta_bytes / (k * box_bytes)))
        per_cta = rounds * k
        times = cp.zeros(4 * grid, dtype=cp.int64)
        args = _width_args(maps[(w, r)], ncol, nrow, w, r, rounds, k, times, flag, share, lag)
        smem = 1024 + 2 * k * box_bytes
        per, clk, slow, chip, skew = [], [], [], [], []
        ngrp = -(-grid // share)
        grp = np.arange(grid) // share
        for t in _launches(fn, grid, args, smem, times, reps):
            span, cyc, mhz = _span_and_clock(t)
            per.append(cyc)
            slow.append(float(span.max()))
            clk.append(mhz)
            chip.append(grid * per_cta * box_bytes / max(int(t[:, 3].max() - t[:, 2].min()), 1) / 1e3)
            skew.append(float(np.median([np.ptp(t[grp == i, 2]) for i in range(ngrp)])))
        _check_flag(flag, "tma_width_stream", f"w{2 * w}B r{r} g{share} sms{grid}")
        cyc, mhz = statistics.median(per), statistics.median(clk)
        bpc = per_cta * box_bytes / cyc
        name = f"L2,w{2 * w}B,r{r},g{share},sms{grid}" + (f",lag{lag}" if stagger else "")
        results[name] = {
            **_rates(cyc, per_cta, box_bytes, r),
            "box_bytes": box_bytes,
            "sm_clock_mhz": mhz,
            "share_group": share,
            "lag_boxes": lag,
            "groups": ngrp,
            "boxes_per_round": k,
            "boxes_per_cta": per_cta,
            "bytes_per_cycle_slowest_cta": per_cta * box_bytes / statistics.median(slow),
            "chip_tb_per_s": bpc * grid * mhz * 1e6 / 1e12,
            "chip_tb_per_s_wall": statistics.median(chip),
            "group_start_skew_ns": statistics.median(skew),
        }
        print(f"{name}: {cyc / per_cta:.1f} cyc/box, {bpc:.2f} B/cyc/SM, {per_cta * r / cyc:.3f} rows/cyc/SM, "
              f"chip {bpc * grid * mhz / 1e6:.2f} TB/s (wall {statistics.median(chip):.2f}), "
              f"skew {statistics.median(skew):.0f} ns at {mhz:.0f} MHz", flush=True)
    if stagger:
        payload = {
            "measures": ["L2 -> SM TMA rate when g SMs read the same boxes lag boxes apart in time"],
            "results": results,
            "method": ("as microbench__tma_share.json (1 thread per CTA, 1 CTA per SM, ~4 MB of boxes {W, R} "
                       "of an 8 MB L2-resident f16 map per CTA, 2 rounds of k boxes in flight), but member j "
                       "of each group of g = 8 consecutive CTAs reads the group's box sequence j x lag boxes "
                       "ahead of member 0 (the sequence wraps), so the 8 SMs fetch each box lag x cycles_per_box "
                       "apart instead of together; g = 1 rows: every SM its own boxes. clock64 span per CTA, "
                       "median over CTAs and 5 launches after a warm-up."),
            "units": {"cycles_per_box": "SM cycles", "bytes_per_cycle_per_sm": "B per SM cycle (median CTA)",
                      "rows_per_cycle_per_sm": "box rows per SM cycle", "sm_clock_mhz": "MHz",
                      "lag_boxes": "boxes", "chip_tb_per_s": "TB/s (1e12 B/s)"},
        }
        return write_record("microbench", "tma_stagger", payload, device_provenance(), out)
    payload = {
        "measures": ["L2 -> SM bandwidth of TMA loads shared by g SMs"],
        "results": results,
        "method": ("1 thread per CTA (1 CTA per SM) streams ~4 MB of boxes {W, R} of a 2-D f16 map (8 KB row "
                   "pitch, 8 MB tensor, L2-resident) in rounds of k back-to-back boxes on one mbarrier (2 rounds, "
                   "<= 96 KB, in flight), boxes walking the column chunks of a row block; CTAs in groups of g "
                   "consecutive block indices read the same box sequence (group b / g), so g SMs fetch identical "
                   "boxes at about the same time (g = 1: every SM its own boxes, as microbench__tma_width.json). "
                   "clock64 span per CTA, median over CTAs and 5 launches after a warm-up; chip_tb_per_s = "
                   "B/cycle/SM x SMs x SM clock; chip_tb_per_s_wall = all bytes over the %globaltimer span of "
                   "the launch; group_start_skew_ns = median over groups of the spread of start times."),
        "units": {"cycles_per_box": "SM cycles", "bytes_per_cycle_per_sm": "B per SM cycle (median CTA)",
                  "rows_per_cycle_per_sm": "box rows per SM cycle", "sm_clock_mhz": "MHz",
                  "bytes_per_cycle_slowest_cta": "B per SM cycle", "chip_tb_per_s": "TB/s (1e12 B/s)",
                  "chip_tb_per_s_wall": "TB/s", "group_start_skew_ns": "ns (globaltimer)"},
    }
    return write_record("microbench", "tma_share", payload, device_provenance(), out)


def run_gemm(out: pathlib.Path, per_cta_bytes: float = 4e6, reps: int = 5) -> pathlib.Path:
    """The `gemm` suite (record tma_gemm): the load side of a GEMM mainloop on a 12 x 11 grid of
    one CTA per SM (kernel tma_gemm_stream: each A box read by the 11 CTAs of a grid row, each B
    box by the 12 of a grid column, row raster, no math), box rows 128, 32/64/128-B rows, with and
    without a spin of `delay` cycles after each round; and the `width` stream of distinct boxes
    (every SM its own, tma_width_stream share 1) on the same tensor as the control."""
    import cupy as cp

    out.mkdir(parents=True, exist_ok=True)
    fns = _compile_kernels(out, ("tma_gemm_stream", "tma_width_stream"))
    nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    gm, gn = 12, nsm // 12
    grid = gm * gn
    flag = cp.zeros(1, dtype=cp.int32)
    r = 128
    rows_total = 3072  # 24 MB at 8 KB pitch: L2-resident; A blocks 0..gm-1, B blocks gm..gm+gn-1
    assert (gm + gn) * r <= rows_total
    buf = cp.random.randint(0, 2 ** 15, size=rows_total * COLS, dtype=cp.int32).astype(cp.uint16)
    results = {}
    for w in (16, 32, 64):
        tmap = _as_param(encode_tensor_map("f16", buf.data.ptr, [COLS, rows_total], [COLS * 2], [w, r], SWZ[w]))
        ncol, nrow = COLS // w, rows_total // r
        box_bytes = 2 * w * r
        k = max(2, min(8, (48 * 1024) // box_bytes)) // 2 * 2  # whole k steps (A + B) per round
        rounds = max(16, int(per_cta_bytes / (k * box_bytes)))
        per_cta = rounds * k
        for kind, delay in (("gemm", 0), ("gemm", 1000), ("distinct", 0)):
            times = cp.zeros(4 * grid, dtype=cp.int64)
            if kind == "gemm":
                fn, g = fns["tma_gemm_stream"], grid
                args = (tmap, np.int32(ncol), np.int32(gm), np.int32(gn), np.int32(w), np.int32(r),
                        np.int32(rounds), np.int32(k), times, flag, np.int32(delay))
            else:
                fn, g = fns["tma_width_stream"], grid
                args = _width_args(tmap, ncol, 1 << (nrow.bit_length() - 1), w, r, rounds, k, times, flag, 1, 0)
            smem = 1024 + 2 * k * box_bytes
            cyc, mhz = _median_cycles_and_clock(fn, g, args, smem, times, flag, reps,
                                                "tma gemm stream", f"w{2 * w}B {kind} delay {delay}")
            name = f"L2,w{2 * w}B,r{r},{kind},delay{delay},sms{g}"
            results[name] = {
                **_rates(cyc, per_cta, box_bytes, r),
                "chip_rows_per_cycle": per_cta * r / cyc * g,
                "box_bytes": box_bytes, "boxes_per_round": k, "boxes_per_cta": per_cta,
                "delay_cycles_per_round": delay, "grid": [gm, gn] if kind == "gemm" else [g, 1],
                "sm_clock_mhz": mhz,
            }
            print(f"{name}: {cyc / per_cta:.1f} cyc/box, {per_cta * box_bytes / cyc:.2f} B/cyc/SM, "
                  f"{per_cta * r / cyc:.3f} rows/cyc/SM ({per_cta * r / cyc * g:.1f} chip) at {mhz:.0f} MHz", flush=True)
    payload = {
        "measures": ["L2 -> SM TMA rate of a GEMM mainloop's loads (A boxes shared by a grid row, B by a grid column)"],
        "results": results,
        "method": (f"1 thread per CTA, {grid} CTAs (1 per SM) as a {gm} x {gn} grid in row raster; per k step one "
                   "box {W, 128} of A's row block (grid row) and one of B's (grid column) of a 24 MB L2-resident "
                   "f16 map with 8 KB row pitch, k steps walking the column chunks; rounds of k boxes on one "
                   "mbarrier, 2 rounds in flight, ~4 MB per CTA; delay: a clock64 spin after each round; "
                   "'distinct': tma_width_stream with every SM its own boxes on the same map. clock64 span per "
                   "CTA, median over CTAs and 5 launches after a warm-up."),
        "units": {"cycles_per_box": "SM cycles", "bytes_per_cycle_per_sm": "B per SM cycle (median CTA)",
                  "rows_per_cycle_per_sm": "box rows per SM cycle", "chip_rows_per_cycle": "box rows per SM cycle x SMs",
                  "delay_cycles_per_round": "SM cycles", "sm_clock_mhz": "MHz"},
    }
    return write_record("microbench", "tma_gemm", payload, device_provenance(), out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--suite", choices=("width", "share", "stagger", "gemm"), default="width",
                    help="width: box shapes, L2 and HBM (tma_width record); share: g SMs read the same boxes; "
                         "stagger: the same, the g SMs lag boxes apart (tma_stagger record); "
                         "gemm: a GEMM mainloop's load pattern (tma_gemm record)")
    args = ap.parse_args(argv)
    if args.suite == "gemm":
        print(run_gemm(args.out))
        return 0
    print(run(args.out) if args.suite == "width" else run_share(args.out, stagger=args.suite == "stagger"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
