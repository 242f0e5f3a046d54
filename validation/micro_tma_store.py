"""TMA stores beside TMA loads on one SM (validation/cuda/micro_tma_store.cu; issue 15, tmacopy).

    python3 -m validation.micro_tma_store --out DIR       # GPU machine: tma_store record (~20 s)

Why: the tmacopy family (TMA load global -> shared, TMA store shared -> global) with persistent
CTAs waits, each tile, for the previous tile's store to have read its stage
(cp.async.bulk.wait_group.read) before refilling it. Whether a store's shared-memory read waits
for the loads the SM issued before it (one in-order queue: their data arrives from HBM ~1000
cycles later) or is served at once decides that loop's speed. One thread of one CTA (grid 1, or
one CTA on every SM) issues, per round, nl TMA loads (f16 boxes {W, R} at pseudo-random row
blocks of a 1 GiB map: HBM misses; or of an 8 MiB map: L2 hits) and ns TMA stores (to an 8 MiB
map) in order 0 (loads first) or 1 (stores first), then times with clock64 the stores' `.read`
(wait_group.read 0), their writes (wait_group 0) and the loads' landing (the mbarrier), from the
round's start. Medians over rounds and CTAs. No hopsim or simpy import (numpy, cupy, stdlib only).
Record: microbench__tma_store.json.
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
SRC = HERE / "cuda" / "micro_tma_store.cu"
COLS = 4096  # f16 elements per row: 8 KB pitch
SWZ = {16: "32B", 32: "64B", 64: "128B"}
BOXES = ((16, 8), (64, 8), (64, 64), (64, 128))  # (W elements, R rows): 256 B .. 16 KiB
# (nl loads, ns stores, order): stores alone; a store after nl loads; a store before them; both
CASES = ((0, 1, 0), (0, 2, 0), (0, 4, 0), (1, 0, 0), (8, 0, 0), (1, 1, 0), (4, 1, 0), (8, 1, 0),
         (8, 1, 1), (8, 4, 0), (8, 4, 1))
ROUNDS, WARM = 48, 4


def case_name(where: str, w: int, r: int, nl: int, ns: int, order: int, grid: int) -> str:
    """Record key of one configuration."""
    return f"{where},w{2 * w}B,r{r},ld{nl},st{ns},{'st_first' if order else 'ld_first'},sms{grid}"


def summarise(t: np.ndarray) -> dict:
    """Medians (SM cycles) over rounds x CTAs of a (CTAs x rounds, 5) array of the kernel's out."""
    med = [float(np.median(t[:, i])) for i in range(4)]
    return {"issue_cycles": med[0], "store_read_cycles": med[1], "store_write_cycles": med[2],
            "load_cycles": med[3], "store_read_p90": float(np.percentile(t[:, 1], 90)),
            "load_p90": float(np.percentile(t[:, 3], 90))}


def run(out: pathlib.Path, reps: int = 3) -> pathlib.Path:
    import cupy as cp

    out.mkdir(parents=True, exist_ok=True)
    cubin = out / "micro_tma_store.cubin"
    nvcc_cubin(SRC, cubin, NVCC_O3)
    fn = cp.RawModule(path=str(cubin)).get_function("tma_store_probe")
    fn.max_dynamic_shared_size_bytes = 220 * 1024
    nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    flag = cp.zeros(1, dtype=cp.int32)
    dst_rows = 1024  # 8 MiB store target
    dst = cp.zeros(dst_rows * COLS, dtype=cp.uint16)
    results = {}
    for where, rows_total in (("HBM", 131072), ("L2", 1024)):
        src = cp.random.randint(0, 2 ** 15, size=rows_total * COLS, dtype=cp.int32).astype(cp.uint16)
        for w, r in BOXES:
            lmap = _as_param(encode_tensor_map("f16", src.data.ptr, [COLS, rows_total], [COLS * 2], [w, r], SWZ[w]))
            smap = _as_param(encode_tensor_map("f16", dst.data.ptr, [COLS, dst_rows], [COLS * 2], [w, r], SWZ[w]))
            box_bytes = 2 * w * r
            ncol, nrow = COLS // w, rows_total // r
            for nl, ns, order in CASES:
                if nl == 0 and where == "L2":
                    continue  # stores alone: the HBM rows have them
                smem = 1024 + (nl + ns) * box_bytes
                for grid in (1, nsm):
                    buf = cp.zeros(5 * grid * ROUNDS, dtype=cp.int64)
                    args = (lmap, smap, np.int32(ncol.bit_length() - 1), np.int32(nrow - 1), np.int32(w),
                            np.int32(r), np.int32(nl), np.int32(ns), np.int32(order), np.int32(ROUNDS),
                            np.int32(WARM), np.int32(dst_rows // r), buf, flag)
                    fn((grid,), (32,), args, shared_mem=smem)  # warm-up launch
                    rows = []
                    for _ in range(reps):
                        fn((grid,), (32,), args, shared_mem=smem)
                        cp.cuda.Device().synchronize()
                        rows.append(cp.asnumpy(buf).reshape(grid * ROUNDS, 5))
                    name = case_name(where, w, r, nl, ns, order, grid)
                    if int(flag.get()[0]):
                        raise RuntimeError(f"tma_store_probe timed out ({name})")
                    res = summarise(np.concatenate(rows))
                    res.update({"box_bytes": box_bytes, "loads": nl, "stores": ns, "order": order, "grid": grid})
                    results[name] = res
                    print(f"{name}: issue {res['issue_cycles']:.0f} read {res['store_read_cycles']:.0f} "
                          f"write {res['store_write_cycles']:.0f} load {res['load_cycles']:.0f}", flush=True)
        del src
    payload = {
        "measures": ["TMA store .read / write completion latency alone and after or before TMA loads in flight"],
        "results": results,
        "method": ("1 thread per CTA (grid 1 or one CTA per SM); per round: nl TMA loads (f16 boxes {W, R}, "
                   "pseudo-random row blocks of a 1 GiB map (HBM) or an 8 MiB one (L2), one mbarrier) and ns TMA "
                   "stores of other smem slots to an 8 MiB map, loads first (order 0) or stores first (order 1), "
                   "one bulk commit; clock64 from the round's start to: issue done, wait_group.read 0, "
                   f"wait_group 0, the loads' mbarrier. {WARM} untimed + {ROUNDS} timed rounds per launch, "
                   f"{reps} launches after a warm-up; medians over rounds x CTAs."),
        "units": {"issue_cycles": "SM cycles", "store_read_cycles": "SM cycles from the round's start",
                  "store_write_cycles": "SM cycles from the round's start", "load_cycles": "SM cycles from the round's start"},
    }
    return write_record("microbench", "tma_store", payload, device_provenance(), out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    args = ap.parse_args(argv)
    print(run(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
