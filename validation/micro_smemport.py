"""Shared-memory port contention: wgmma SS operand reads, TMA fills and LSU (ld/st.shared.v4,
stmatrix) streams, alone and in pairs (record microbench__smemport).

    python3 -m validation.micro_smemport --out DIR          # GPU machine (H100): DIR/microbench__smemport.json

Why: the timing model counts each client's shared-memory port demand but lets them run at full
rate together. microbench__wgmma_tma measured one warpgroup of wgmma beside one ~43 B/cycle TMA
stream (no slowdown); this benchmark pushes every client to its own peak and measures each
stream's achieved rate alone and beside each other client, on one SM and on every SM.

Method: kernel `smemport` (validation/cuda/micro_smemport.cu), 384 threads, 1 CTA per SM (157 KB of
dynamic shared memory). Roles (a bit mask per configuration): warpgroups 0 and 1 each repeat
[fence; 16 x wgmma m64n256k16 f16->f32 SS (A 64x64 per warpgroup, B 256x64 shared, K-major 128B
swizzle, the k16 slices in turn); commit; wait_group 0]; warp 8 lane 0 streams 16 KB TMA boxes
(128 B x 128 rows, SWIZZLE_128B) of an 8 MB L2-resident f16 tensor into a 6-slot ring (one mbarrier
per slot, slot reuse waits for its fill; nobody reads the data); warps 9-11 repeat 8 independent
conflict-free 512-B warp instructions (ld.shared.v4.u32, st.shared.v4.u32 or stmatrix.x4: 4 wavefronts
each). All roles start at one clock64 t0 and repeat until clock64 - t0 >= WINDOW; each reports its
units and the cycles until its last unit completed (a TMA box: landed on its mbarrier). Per
configuration and scope (1 SM: grid 1; all SMs: grid = SM count), 1 warm-up + REPS launches timed
with CUDA events; per launch the median over CTAs of each stream's rate; the record keeps the median
over launches. Bytes: a wgmma m64n256k16 SS reads A 2 KB + B 8 KB; a TMA box writes 16 KB; an LSU
instruction moves 512 B (4 x 128-B wavefronts).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

import numpy as np

from validation.harness import _as_param, encode_tensor_map
from validation.micro_runner import BUILD, NVCC, nvcc_cubin, rand_f16_bits
from validation.provenance import device_provenance, write_record

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE / "cuda" / "micro_smemport.cu"

#: Role bits of the kernel's `roles` argument (validation/cuda/micro_smemport.cu).
ROLE_BITS = {"wg0": 1, "wg1": 2, "tma": 4, "ld": 8, "st": 16, "stmatrix": 32}
#: Stream names a configuration is written with: wgmma1 = warpgroup 0, wgmma2 = both.
STREAM_ROLES = {"wgmma1": ("wg0",), "wgmma2": ("wg0", "wg1"), "tma": ("tma",), "ld": ("ld",), "st": ("st",),
                "stmatrix": ("stmatrix",)}
LSU_KINDS = ("ld", "st", "stmatrix")
#: The configurations: every stream alone, then the pairs (and one triple) that share the port.
CONFIGS = ("wgmma1", "wgmma2", "tma", "ld", "st", "stmatrix",
           "wgmma2+tma", "wgmma2+ld", "wgmma2+st", "wgmma2+stmatrix", "tma+ld", "tma+st", "tma+stmatrix",
           "wgmma1+tma", "wgmma1+ld", "wgmma2+tma+ld")
#: Bytes per unit of each stream (see the module docstring).
WGMMA_BYTES = 64 * 16 * 2 + 256 * 16 * 2  # A 2 KB + B 8 KB per m64n256k16 SS
BOX_BYTES = 16384
LSU_BYTES = 512
WAVEFRONT_BYTES = 128
#: The kernel's layout (micro_smemport.cu): slots per CTA in `times`, its dynamic shared memory.
SLOTS = 16
SMEM_BYTES = 1024 + 2 * 8192 + 32768 + 6 * BOX_BYTES + 3 * 4096
THREADS = 384
WINDOW = 200_000  # cycles each stream runs (~100 us at 1.98 GHz)
REPS = 5
ROWS = 65536  # 8 MB of 128-B rows: L2-resident


class ConfigError(ValueError):
    """A configuration name that is not a '+'-joined set of known streams with one LSU kind."""


def roles_of(config: str) -> int:
    """The kernel's role mask for a configuration such as 'wgmma2+tma'."""
    streams = config.split("+")
    bad = [s for s in streams if s not in STREAM_ROLES]
    if bad or len(set(streams)) != len(streams):
        raise ConfigError(f"config {config!r}: streams must be distinct, from {sorted(STREAM_ROLES)}")
    if sum(s in LSU_KINDS for s in streams) > 1:
        raise ConfigError(f"config {config!r}: at most one of {LSU_KINDS} (the LSU warps run one kind)")
    if "wgmma1" in streams and "wgmma2" in streams:
        raise ConfigError(f"config {config!r}: wgmma1 and wgmma2 both")
    mask = 0
    for s in streams:
        for r in STREAM_ROLES[s]:
            mask |= ROLE_BITS[r]
    return mask


def cta_rates(slots: list[int], config: str) -> dict:
    """One CTA's achieved rates from its SLOTS `times` entries (units, cycles per slot: 0 wg0,
    1 wg1, 2 tma, 3..5 lsu warps) for `config`: B/cycle per stream, plus cycles per wgmma (the
    SM's, both warpgroups together) and LSU wavefronts per cycle."""
    pairs = [(int(slots[2 * s]), int(slots[2 * s + 1])) for s in range(len(slots) // 2)]
    out: dict = {}
    for stream in config.split("+"):
        if stream.startswith("wgmma"):
            used = pairs[:len(STREAM_ROLES[stream])]
            units, cycles = sum(u for u, _ in used), max(c for _, c in used)
            if units <= 0 or cycles <= 0:
                raise RuntimeError(f"{config}: wgmma slots {used} report no work")
            out["wgmma_cycles_per_op"] = cycles / units
            out["wgmma_bytes_per_cycle"] = units * WGMMA_BYTES / cycles
        elif stream == "tma":
            units, cycles = pairs[2]
            if units <= 0 or cycles <= 0:
                raise RuntimeError(f"{config}: TMA slot {pairs[2]} reports no work")
            out["tma_bytes_per_cycle"] = units * BOX_BYTES / cycles
        else:
            used = pairs[3:6]
            units, cycles = sum(u for u, _ in used), max(c for _, c in used)
            if units <= 0 or cycles <= 0:
                raise RuntimeError(f"{config}: LSU slots {used} report no work")
            out[f"{stream}_bytes_per_cycle"] = units * LSU_BYTES / cycles
            out[f"{stream}_wavefronts_per_cycle"] = units * LSU_BYTES / WAVEFRONT_BYTES / cycles
    return out


def median_rates(rows: list[dict]) -> dict:
    """Key by key median of a list of rate dicts (CTAs of a launch, or launches)."""
    return {k: float(statistics.median(r[k] for r in rows)) for k in rows[0]}


def launch_rates(times: np.ndarray, config: str, ctas: int) -> dict:
    """Per stream, the median over the launch's CTAs, and the slowest CTA's wgmma/TMA/LSU rate."""
    per_cta = [cta_rates(list(times[SLOTS * b:SLOTS * (b + 1)]), config) for b in range(ctas)]
    res = median_rates(per_cta)
    res.update({f"{k}_min_cta": float(min(r[k] for r in per_cta)) for k in per_cta[0] if k.endswith("per_cycle")})
    return res


def slowdowns(by_config: dict, scope: str) -> dict:
    """For each pair's stream: its rate alone / its rate in the pair (1.0 = no contention)."""
    out = {}
    for cfg in CONFIGS:
        if "+" not in cfg or f"{cfg}|{scope}" not in by_config:
            continue
        row = by_config[f"{cfg}|{scope}"]
        for stream in cfg.split("+"):
            alone = by_config.get(f"{stream}|{scope}")
            key = "wgmma_bytes_per_cycle" if stream.startswith("wgmma") else f"{stream}_bytes_per_cycle"
            if alone and key in alone and row.get(key):
                out[f"{cfg}|{stream}"] = alone[key] / row[key]
    return out


#: the `boxes` suite (seventh session, record microbench__smemport_boxes): the TMA stream's 16 KB
#: slots filled by boxes of (f16 elements, rows): the GEMM's box shapes, 32/64/128-B rows (the
#: 32B/64B/128B swizzles) x 8 or 128 rows; (64, 128) is the `smemport` record's one box per slot
BOX_SHAPES = ((64, 128), (16, 8), (16, 128), (32, 8), (32, 128), (64, 8))
BOX_CONFIGS = ("tma", "wgmma2+tma", "wgmma1+tma")
SWIZZLE_OF = {16: "32B", 32: "64B", 64: "128B"}


def box_key(box: tuple[int, int]) -> str:
    return f"w{2 * box[0]}B_r{box[1]}"


def _setup(out: pathlib.Path):
    """(kernel, SM count, source buffer, smem source, flag, serialisation notes) on the GPU machine."""
    import cupy as cp  # noqa: PLC0415  (GPU machine only)

    out.mkdir(parents=True, exist_ok=True)
    BUILD.mkdir(parents=True, exist_ok=True)
    cubin = BUILD / "micro_smemport.cubin"
    serial = nvcc_cubin(SRC, cubin, NVCC)
    fn = cp.RawModule(path=str(cubin)).get_function("smemport")
    fn.max_dynamic_shared_size_bytes = SMEM_BYTES
    nsm = int(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["multiProcessorCount"])
    buf = rand_f16_bits(ROWS * 64, seed=1)
    src = rand_f16_bits((2 * 8192 + 32768) // 2, seed=2)
    return fn, nsm, buf, src, cp.zeros(1, dtype=cp.int32), serial


def _tmap(buf, box: tuple[int, int]):
    return _as_param(encode_tensor_map("f16", buf.data.ptr, [64, ROWS], [128], list(box), SWIZZLE_OF[box[0]]))


def run(out: pathlib.Path, reps: int = REPS, window: int = WINDOW) -> pathlib.Path:
    fn, nsm, buf, src, flag, serial = _setup(out)
    by_config = _measure(fn, nsm, _tmap(buf, (64, 128)), src, flag, CONFIGS, (64, 128), reps, window, "")
    payload = {
        "measures": ["shared-memory port: each client's rate alone and beside another (wgmma SS operand reads, "
                     "TMA fills, ld.shared.v4 / st.shared.v4 / stmatrix wavefronts)"],
        "results": {"by_config": by_config, "slowdown_1sm": slowdowns(by_config, "1sm"),
                    "slowdown_all": slowdowns(by_config, "all"), "sm_count": int(nsm), "window_cycles": window,
                    "ptxas_serialisation_notes": serial},
        "method": __doc__.split("Method: ", 1)[1].strip(),
        "units": UNITS,
    }
    return write_record("microbench", "smemport", payload, device_provenance(), out)


def run_boxes(out: pathlib.Path, reps: int = REPS, window: int = WINDOW) -> pathlib.Path:
    """The `boxes` suite: wgmma2 alone, then per box shape the TMA stream alone and beside one and
    two wgmma warpgroups, on one SM and on every SM."""
    fn, nsm, buf, src, flag, serial = _setup(out)
    by_config = _measure(fn, nsm, _tmap(buf, (64, 128)), src, flag, ("wgmma1", "wgmma2"), (64, 128), reps, window, "")
    slow = {}
    for box in BOX_SHAPES:
        sfx = "|" + box_key(box)
        rows = _measure(fn, nsm, _tmap(buf, box), src, flag, BOX_CONFIGS, box, reps, window, sfx)
        by_config.update(rows)
        for scope in ("1sm", "all"):
            for cfg in ("wgmma2+tma", "wgmma1+tma"):
                row, alone_w, alone_t = (by_config.get(f"{cfg}|{scope}{sfx}"), by_config.get(f"{cfg.split('+')[0]}|{scope}"),
                                         by_config.get(f"tma|{scope}{sfx}"))
                if row and alone_w and alone_t and row.get("wgmma_bytes_per_cycle") and row.get("tma_bytes_per_cycle"):
                    slow[f"{cfg}|{scope}{sfx}|wgmma"] = alone_w["wgmma_bytes_per_cycle"] / row["wgmma_bytes_per_cycle"]
                    slow[f"{cfg}|{scope}{sfx}|tma"] = alone_t["tma_bytes_per_cycle"] / row["tma_bytes_per_cycle"]
    payload = {
        "measures": ["shared-memory port by TMA box shape: wgmma SS operand reads beside TMA fills of 16 KB slots "
                     "made of 32/64/128-B x 8/128-row boxes"],
        "results": {"by_config": by_config, "slowdown": slow, "box_shapes": [box_key(b) for b in BOX_SHAPES],
                    "sm_count": int(nsm), "window_cycles": window, "ptxas_serialisation_notes": serial},
        "method": ("As microbench__smemport (module docstring), the TMA stream's 16 KB ring slots each filled by "
                   "(64 / W) x (128 / R) boxes of W f16 x R rows under the slot's one mbarrier (swizzle = the "
                   "row width); keys cfg|scope|w<row bytes>B_r<rows>; wgmma1/wgmma2 alone once (no TMA)."),
        "units": UNITS,
    }
    return write_record("microbench", "smemport_boxes", payload, device_provenance(), out)


UNITS = {"*_bytes_per_cycle": "B per SM cycle (clock64) of that stream, median over CTAs then launches",
         "*_min_cta": "the slowest CTA's rate (median over launches)",
         "wgmma_cycles_per_op": "SM cycles per wgmma m64n256k16 (all active warpgroups together)",
         "*_wavefronts_per_cycle": "128-B wavefronts per SM cycle",
         "ms_events": "CUDA-event time of one launch (ms)",
         "slowdown_*": "rate alone / rate in the pair for that stream"}


def _measure(fn, nsm: int, tmap, src, flag, configs, box: tuple[int, int], reps: int, window: int,
             suffix: str) -> dict:
    """{cfg|scope<suffix>: rates} for `configs` on one SM and on every SM with the TMA boxes `box`."""
    import cupy as cp  # noqa: PLC0415  (GPU machine only)

    by_config = {}
    for scope, grid in (("1sm", 1), ("all", nsm)):
        for cfg in configs:
            roles = roles_of(cfg)
            launches, ms = [], []
            for r in range(reps + 1):
                times = cp.zeros(SLOTS * grid, dtype=cp.int64)
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                fn((grid,), (THREADS,), (src, tmap, np.int32(ROWS - 1), np.int32(roles), np.int64(window), times,
                                         flag, np.int32(box[0]), np.int32(box[1])), shared_mem=SMEM_BYTES)
                e1.record()
                e1.synchronize()
                if int(flag.get()[0]):
                    raise RuntimeError(f"smemport {cfg} {scope}: a TMA slot wait timed out")
                if r == 0:
                    continue  # warm-up
                ms.append(cp.cuda.get_elapsed_time(e0, e1))
                launches.append(launch_rates(cp.asnumpy(times), cfg, grid))
            row = median_rates(launches)
            row["ms_events"] = float(statistics.median(ms))
            row["ctas"] = grid
            by_config[f"{cfg}|{scope}{suffix}"] = row
            shown = ", ".join(f"{k} {v:.2f}" for k, v in row.items() if k.endswith("per_cycle"))
            print(f"  {cfg:18s} {scope:4s}{suffix}: {shown}  ({row['ms_events']:.3f} ms)", flush=True)
    return by_config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, required=True, help="directory for microbench__smemport.json")
    ap.add_argument("--reps", type=int, default=REPS, help=f"timed launches per configuration (default {REPS})")
    ap.add_argument("--suite", choices=("port", "boxes"), default="port",
                    help="port: microbench__smemport (default); boxes: microbench__smemport_boxes (TMA box shapes)")
    args = ap.parse_args(argv)
    if args.reps < 1:
        print(f"--reps {args.reps}: must be >= 1", file=sys.stderr)
        return 2
    print((run_boxes if args.suite == "boxes" else run)(args.out, reps=args.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
