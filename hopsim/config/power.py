"""The H100 SXM power model's parameters (typed, sourced, like `h100_sxm.py`'s timing).

Board power at SM clock f (MHz) running a launch with event rates r_i (events/s):

    P(f) = floor_w + v(f)^2 * [ (idle_clock_w + active_base_w * sm_fraction
                                 + l2_active_w * [any L2 -> SM bytes]) * f / f_max
                                + sum_core e_i * r_i ] + sum_dram e_j * r_j
           (core events include the TMA tensor loads' L2 requests and bytes: e_tma_request_pj, e_tma_byte_pj)
           + l2_fed_sq_w * (r_l2d / 1e12)^2 * [any tensor FLOPs]
    v(f) = voltage_intercept + (1 - voltage_intercept) * f / f_max     (core voltage / its value at f_max)

Core events (SM, tensor pipe, L2/crossbar, on the voltage-scaled rail): tensor FLOPs by
dtype/accumulator, bytes delivered from L2 into shared memory (TMA), LSU shared-memory wavefronts
(ld, st), issued warp instructions; plus a step `l2_active_w` while any L2 -> SM traffic flows (a
static term that scales with f v(f)^2 like the clock power). DRAM events (memory rail, fixed
memory clock): bytes read from / written to HBM. The last term (r_l2d = the L2's distinct bytes/s:
the read bytes the timing model charges against l2_bytes_per_s after the sharing merge, a tile
read by several SMs together once, plus the stored bytes) is the
super-linear excess of TMA-fed tensor work: the TMA+wgmma pipe (power/light_pipe2*) drew up to
+133 W more than the sum of parts at the cap, growing with the chip's L2 -> SM byte rate (33 SMs
at GEMM-like 4.3 TFLOP/s per SM draw none); the wgmma-only burners (no L2 traffic) show none. Each energy is fitted from the power microbenchmark records
(validation/records/h100/power/, `hopsim/validate/calibrate_power.py`); the defaults below are
`assumed` placeholders that `h100_sxm_power_calibrated.json` replaces field by field.

Two limits decide the sustained clock: the board power limit (`power_limit_w`) and a tensor-pipe
throughput cap (`tensor_cap_*`): with zero operands a 100%-duty wgmma burner is held at 1725-1830 MHz
with reason SW power cap at only 262-310 W, so some limiter other than the 700 W board average binds
at full tensor duty (its nature, e.g. a peak-current/EDP or per-rail limit, is not observable from
NVML); it is modelled as the tensor FLOP rate at which those points settled.

The clock NVML reports is not the clock a tensor kernel's SMs run at: in sustained GEMM loops the
SMs' own clock (clock64 against %globaltimer) is `tensor_sm_clock_ratio` x NVML's (about 0.93;
validation/records/h100/microbench__clock_truth.json: at a reported 1980 MHz the SMs run at
1805-1885 MHz, and under the cap 5-13% below the reported clock). Power is fitted and limited at
the reported clock (the burners' NVML clocks); a wgmma kernel's cycles are timed at ratio x it.

The supported SM clocks (nvidia-smi -q -d SUPPORTED_CLOCKS at memory 2619 MHz) are
`clock_min_mhz`..`clock_max_mhz` in `clock_step_mhz` steps.
"""

from __future__ import annotations

import json
import pathlib

from hopsim.config.base import P, Param, ParamGroup
from isa.errors import InputError

_HERE = pathlib.Path(__file__).resolve().parent
_A = "assumed: until hopsim/validate/calibrate_power.py fits it from validation/records/h100/power/"

#: The tensor-core variants the power records measured: (dtype, accumulator) -> field suffix.
TENSOR_VARIANTS = {("f16", "f32"): "f16f32", ("bf16", "f32"): "bf16f32", ("f16", "f16"): "f16f16"}


class H100Power(ParamGroup):
    """Power model of the H100 SXM (board power as the NVML averaged reading reports it)."""

    power_limit_w: Param = P(700, "W", "board power limit the driver holds the NVML averaged power reading to", "spec: H100 SXM5 TDP 700 W")
    floor_w: Param = P(70, "W", "board power idle at the idle SM clock (no kernel, SM clock at its minimum)", _A)
    idle_clock_w: Param = P(50, "W", "extra idle power with the SM clock at f_max (no kernel); scales with f v(f)^2", _A)
    active_base_w: Param = P(0, "W", "extra power while a kernel runs on every SM, beyond its counted events, at f_max; scales with f v(f)^2 and the fraction of SMs used", _A)
    voltage_intercept: Param = P(0.2, "1", "v0 of the relative core voltage v(f) = v0 + (1 - v0) f / f_max", _A)
    e_tensor_f16f32_pj_per_flop: Param = P(1.1, "pJ/FLOP", "tensor-pipe energy per dense FLOP, f16 x f16 -> f32, random operands (incl. the SS operand reads from shared memory)", _A)
    e_tensor_bf16f32_pj_per_flop: Param = P(1.0, "pJ/FLOP", "tensor-pipe energy per dense FLOP, bf16 x bf16 -> f32, random operands", _A)
    e_tensor_f16f16_pj_per_flop: Param = P(1.0, "pJ/FLOP", "tensor-pipe energy per dense FLOP, f16 x f16 -> f16, random operands", _A)
    e_tensor_f16f32_zero_pj_per_flop: Param = P(0.2, "pJ/FLOP", "the same with all-zero operands (no data toggling); reported, not used: the simulator assumes random data", _A)
    e_tensor_bf16f32_zero_pj_per_flop: Param = P(0.2, "pJ/FLOP", "bf16 -> f32 with all-zero operands; reported, not used", _A)
    e_tensor_f16f16_zero_pj_per_flop: Param = P(0.2, "pJ/FLOP", "f16 -> f16 with all-zero operands; reported, not used", _A)
    e_l2_pj_per_byte: Param = P(25, "pJ/B", "core-rail energy per byte moved between L2 and an SM (TMA bulk copy into shared memory incl. the fill; also the L2 leg of HBM reads and of stores)", _A)
    l2_active_w: Param = P(0, "W", "extra power while any L2 -> SM traffic flows (L2/crossbar out of idle), at f_max, whatever the byte rate; scales with f v(f)^2", _A)
    e_dram_read_pj_per_byte: Param = P(115, "pJ/B", "memory-rail energy per byte read from HBM (beyond its L2 leg)", _A)
    e_dram_write_pj_per_byte: Param = P(100, "pJ/B", "memory-rail energy per byte written to HBM (beyond its L2 leg)", _A)
    e_smem_ld_pj_per_wavefront: Param = P(1300, "pJ/wavefront", "LSU shared-memory load wavefront (32 lanes x 4 B), beyond its instruction's issue", _A)
    e_smem_st_pj_per_wavefront: Param = P(1800, "pJ/wavefront", "LSU shared-memory store wavefront, beyond its instruction's issue", _A)
    e_instruction_pj: Param = P(180, "pJ/warp instruction", "one issued warp instruction (FFMA, 32 lanes) incl. register-file traffic", _A)
    e_tma_request_pj: Param = P(0, "pJ/request", "core-rail energy per L2 request of a TMA tensor load (a box row up to 128 B, or each 128-B piece of a wider one), beyond its bytes' energies", _A)
    e_tma_byte_pj: Param = P(0, "pJ/B", "core-rail energy per byte of a TMA tensor load (cp.async.bulk.tensor) beyond e_l2_pj_per_byte (fitted on bulk copies)", _A)
    l2_fed_sq_w: Param = P(0, "W/(TB/s)^2", "extra power of a tensor launch fed from L2 (TMA), per (the L2's distinct byte rate in TB/s: a tile several SMs read together counts once)^2, beyond the per-byte and per-FLOP energies; not voltage-scaled", _A)
    tensor_cap_f16f32_tflops: Param = P(900, "TFLOP/s", "tensor throughput cap, f16 -> f32: the dense rate at which a 100%-duty zero-operand burner settles (clock held, reason SW power cap, far below the board limit)", _A)
    tensor_cap_bf16f32_tflops: Param = P(950, "TFLOP/s", "tensor throughput cap, bf16 -> f32 (as above)", _A)
    tensor_cap_f16f16_tflops: Param = P(940, "TFLOP/s", "tensor throughput cap, f16 -> f16 (as above)", _A)
    governor_reaction_s: Param = P(0.09, "s", "time from load on until the SM clock starts to fall: a single launch shorter than this runs at the boost clock", _A)
    power_reading_lag_s: Param = P(0.5, "s", "50% step response of the NVML averaged power reading (the reading the limit holds); the instant reading answers in ~0.1 s", _A)
    clock_max_mhz: Param = P(1980, "MHz", "highest supported SM clock (boost)", "spec: [BENCH-REPORT] cudaDevAttrClockRate 1980 MHz")
    clock_min_mhz: Param = P(345, "MHz", "lowest supported SM clock", _A)
    clock_step_mhz: Param = P(15, "MHz", "spacing of the supported SM clocks", _A)
    tensor_sm_clock_ratio: Param = P(1.0, "ratio", "clock the SMs count (clock64 / %globaltimer) over the SM clock NVML reports, in a loop of a kernel that uses the tensor cores: a wgmma kernel's cycles run at this ratio x the reported clock", _A)


def tensor_variant(dtype: str, accum: str) -> str:
    """The field suffix of a (dtype, accumulator) pair; InputError for one the records lack."""
    key = (str(dtype), str(accum))
    if key not in TENSOR_VARIANTS:
        raise InputError("dtype/accum", f"{dtype}/{accum}", "one of " + ", ".join(
            f"{d}/{a}" for d, a in TENSOR_VARIANTS) + " (the tensor variants the power records measured)")
    return TENSOR_VARIANTS[key]


POWER_FILES = {"h100_sxm": _HERE / "h100_sxm_power_calibrated.json"}


def load_power(name: str = "h100_sxm", *, calibrated: bool = True) -> H100Power:
    """The power parameters of GPU `name`: defaults overridden by the calibrated JSON."""
    if name not in POWER_FILES:
        raise InputError("gpu", name, f"one of {sorted(POWER_FILES)}")
    params = H100Power()
    path = POWER_FILES[name]
    if calibrated and path.exists():
        data = json.loads(path.read_text())
        params = params.with_values({k: Param(**v) for k, v in data.get("power", {}).items()})
    return params
