"""The per-opcode microbenchmarks' op table and the CUDA source generated from it
(validation/cuda/micro_ops.cu; `python3 -m validation.micro_ops --gen` rewrites it, a test checks
the committed file equals `gen_source()`).

Each op is one PTX step on a per-thread state register (`%0`, in/out). The generated kernels:

    lat_<op>(iters, c1, c2, mode, gbuf, out, sink)   1 warp: one dependent chain, LAT_UNROLL steps
                                                     per asm block, `iters` blocks between two clock64
    thr_<op>(iters, c1, c2, mode, gbuf, out, sink)   W warps (block = 32 W): THR_CHAINS independent
                                                     chains per thread, THR_UNROLL steps of each per
                                                     asm block (chains interleaved), `iters` blocks

Every warp's lane 0 writes out[4 (32 b + w) + 0..3] (CTA b) = clock64 before, clock64 after, %globaltimer before,
after (after a __syncthreads, so all warps start together). Each whole chain is inside one
`asm volatile` block so neither NVVM nor ptxas may drop or merge steps across blocks; ops that an
optimiser could fold (max/min with the same operand, vote of a vote) alternate operands or negate
the predicate so that no two consecutive steps simplify; the SASS of every timed loop is checked
by tests/validation/test_micro_ops.py (cuobjdump of the compiled .cu: one op per step, nothing folded).

Memory ops: `mode` 0 = distinct addresses (each lane and chain its own 4-byte word: conflict-free
shared banks, one 128-B line per warp and chain in global), 1 = the same word for every lane,
chain and warp. Shared ops use a 32 KB static buffer; global ops use `gbuf` (>= 32 KB, L2-resident).
Standard library only.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

LAT_UNROLL = 32
THR_CHAINS = 8
THR_UNROLL = 4


@dataclass(frozen=True)
class Op:
    """One benchmarked opcode form: `step` is the PTX of one step on state `%0` (register class
    `reg`: r = b32, f = f32); `%1`, `%2` are the constants c1, c2 (same class); `%A` is the chain's
    address register; `%P` the chain's scratch register of type `scratch` (".pred", ".b16"),
    set from the state by `enter` and written back by `leave` around the block. `alt` (optional)
    is the step used on odd steps (so that no two consecutive steps fold). `latency`: False for
    ops without a result (red)."""

    name: str
    reg: str
    step: str
    c1: float | int = 0
    c2: float | int = 0
    space: str = ""          # "", "shared" or "global"
    alt: str = ""
    scratch: str = ""
    enter: str = ""
    leave: str = ""
    latency: bool = True
    lane_c1: bool = False    # c1 becomes (lane + c1) & 31 in each lane
    sass: tuple[str, ...] = ()  # SASS opcodes (a|b: either) the timed loop holds one of per step (tested)
    note: str = ""


def _vote(kind: str) -> Op:
    return Op(f"vote_{kind}", "r", f"vote.sync.{kind}.pred %P, !%P, -1;", scratch=".pred",
              enter="setp.ne.u32 %P, %0, 0;", leave="selp.u32 %0, 1, 0, %P;", sass=("VOTE",),
              note=f"vote.sync.{kind}.pred chained through its predicate (source negated)")


OPS: tuple[Op, ...] = (
    Op("iadd_xor", "r", "add.u32 %0, %0, %1;", alt="xor.b32 %0, %0, %2;", c1=3, c2=0x5A5A5A5A,
       sass=("VIADD|IADD3|LOP3.LUT",), note="integer ALU baseline: add.u32 and xor.b32 alternate (a pure add chain folds)"),
    Op("shfl_bfly", "r", "shfl.sync.bfly.b32 %0, %0, 1, 31, -1;", sass=("SHFL.BFLY",)),
    Op("shfl_idx", "r", "shfl.sync.idx.b32 %0, %0, %1, 31, -1;", c1=5, lane_c1=True, sass=("SHFL.IDX",),
       note="source lane (lane + 5) & 31 from a register (a uniform source lane folds)"),
    Op("shfl_up", "r", "shfl.sync.up.b32 %0, %0, 1, 0, -1;", sass=("SHFL.UP",)),
    Op("shfl_down", "r", "shfl.sync.down.b32 %0, %0, 1, 31, -1;", sass=("SHFL.DOWN",)),
    Op("ex2_ftz", "f", "ex2.approx.ftz.f32 %0, %0;", sass=("MUFU.EX2",)),
    Op("ex2", "f", "ex2.approx.f32 %0, %0;", sass=("MUFU.EX2",),
       note="without .ftz ptxas adds subnormal scaling around MUFU.EX2 (see the SASS counts)"),
    Op("rcp_ftz", "f", "add.ftz.f32 %0, %0, %1;\nrcp.approx.ftz.f32 %0, %0;", c1=0.25, sass=("FADD.FTZ", "MUFU.RCP"),
       note="a step is add.ftz + rcp.approx.ftz: rcp(rcp(x)) and rcp(-rcp(x)) fold, so each rcp's input is x + 0.25"),
    Op("rcp", "f", "rcp.approx.f32 %0, %0;", sass=("MUFU.RCP",)),
    Op("max_f32", "f", "max.f32 %0, %0, %1;", alt="max.f32 %0, %0, %2;", c1=0.25, c2=0.5, sass=("FMNMX",)),
    Op("min_f32", "f", "min.f32 %0, %0, %1;", alt="min.f32 %0, %0, %2;", c1=0.75, c2=0.5, sass=("FMNMX",)),
    Op("fma_f32", "f", "fma.rn.f32 %0, %0, %1, %2;", c1=0.999, c2=0.001, sass=("FFMA",)),
    Op("fma_f16x2", "r", "fma.rn.f16x2 %0, %0, %1, %2;", c1=0x3BFF3BFF, c2=0x14001400, sass=("HFMA2",),
       note="c1 = 0.9995 x 2, c2 = 0.001 x 2 (f16 bits)"),
    Op("fma_bf16x2", "r", "fma.rn.bf16x2 %0, %0, %1, %2;", c1=0x3F7F3F7F, c2=0x3A833A83, sass=("HFMA2",),
       note="c1 = 0.996 x 2, c2 = 0.001 x 2 (bf16 bits)"),
    Op("cvt_f16x2_f32", "r", "cvt.rn.f16x2.f32 %0, %0, %1;", c1=0x3F000000, sass=("F2FP",),
       note="packs (state as f32, c1 = 0.5) into f16x2; the result is the next step's f32 input"),
    Op("cvt_bf16x2_f32", "r", "cvt.rn.bf16x2.f32 %0, %0, %1;", c1=0x3F000000, sass=("F2FP",)),
    Op("cvt_f16_f32_pair", "f", "cvt.rn.f16.f32 %P, %0;\ncvt.f32.f16 %0, %P;", scratch=".b16",
       sass=("HADD2.F32",), note="a step is the round trip f32 -> f16 -> f32 (two cvt: F2FP.F16.F32.PACK_AB + "
       "HADD2.F32; in thr_ ptxas packs two chains' f32 -> f16 into one F2FP)"),
    Op("cvt_bf16_f32_pair", "f", "cvt.rn.bf16.f32 %P, %0;\ncvt.f32.bf16 %0, %P;", scratch=".b16",
       sass=("F2F.BF16.F32",), note="a step is the round trip f32 -> bf16 -> f32 (two cvt: F2F.BF16.F32 + a shift)"),
    _vote("any"),
    _vote("all"),
    Op("vote_ballot", "r", "setp.ne.u32 %P, %0, 0;\nvote.sync.ballot.b32 %0, %P, -1;", scratch=".pred", sass=("VOTE",), note="a step is setp + vote.ballot (the ballot needs a predicate)"),
    Op("redux_add", "r", "redux.sync.add.u32 %0, %0, -1;", sass=("REDUX",)),
    Op("redux_min", "r", "redux.sync.min.u32 %0, %0, -1;", sass=("REDUX",)),
    Op("redux_max", "r", "redux.sync.max.u32 %0, %0, -1;", sass=("REDUX",)),
    Op("atom_shared_add_u32", "r", "atom.shared.add.u32 %0, [%A], %0;", space="shared", sass=("ATOMS",)),
    Op("atom_shared_add_f32", "f", "atom.shared.add.f32 %0, [%A], %0;", space="shared", sass=("ATOMS",),
       note="sm_90 has no native shared f32 add: ptxas emits a CAS loop (see the SASS counts)"),
    Op("red_shared_add_u32", "r", "red.shared.add.u32 [%A], %0;", space="shared", latency=False, sass=("ATOMS",)),
    Op("atom_global_add_u32", "r", "atom.global.add.u32 %0, [%A], %0;", space="global", sass=("ATOMG",)),
    Op("atom_global_add_f32", "f", "atom.global.add.f32 %0, [%A], %0;", space="global", sass=("ATOMG",)),
    Op("red_global_add_u32", "r", "red.global.add.u32 [%A], %0;", space="global", latency=False, sass=("REDG",)),
    Op("red_global_add_f32", "f", "red.global.add.f32 [%A], %0;", space="global", latency=False, sass=("REDG",)),
)
_PLACE = re.compile(r"%([012AP])(?![0-9])")
BY_NAME = {op.name: op for op in OPS}
SHARED_WORDS = 8192  # 32 KB static shared buffer of the shared-memory ops
GLOBAL_WORDS = 1 << 20  # 4 MB global buffer (L2-resident): distinct words for 132 CTAs x 32 warps x 8 chains


def _bits(op: Op, v) -> int:
    """A constant as the 32-bit pattern the kernel receives (floats for "f" ops, ints as is)."""
    if op.reg == "f":
        return struct.unpack("<I", struct.pack("<f", float(v)))[0]
    return int(v) & 0xFFFFFFFF


def const_bits(op: Op) -> tuple[int, int]:
    """(c1, c2) as the kernel's uint32 arguments."""
    return _bits(op, op.c1), _bits(op, op.c2)


def _sub(text: str, op: Op, chains: int, c: int) -> str:
    """One chain's PTX: %0 -> its state, %1/%2 -> the constants, %A -> its address, %P -> scratch."""
    to = {"0": f"%{c}", "1": f"%{chains}", "2": f"%{chains + 1}", "A": f"%{chains + 2 + c}", "P": f"s{c}"}
    return _PLACE.sub(lambda m: to[m.group(1)], text)


def asm_ptx(op: Op, chains: int, unroll: int) -> str:
    """The PTX of one asm block: `unroll` steps of each of `chains` chains, interleaved."""
    lines = []
    if op.scratch:
        lines += ["{"] + [f".reg {op.scratch} s{c};" for c in range(chains)]
        lines += [_sub(op.enter, op, chains, c) for c in range(chains) if op.enter]
    for u in range(unroll):
        for c in range(chains):
            lines.append(_sub(op.alt if (op.alt and u % 2) else op.step, op, chains, c))
    if op.scratch:
        lines += [_sub(op.leave, op, chains, c) for c in range(chains) if op.leave] + ["}"]
    return "\n".join(lines)


def _c_asm(op: Op, chains: int, unroll: int) -> str:
    """The C++ `asm volatile` statement of one block (state x[c], constants k1/k2, addresses)."""
    reg = "f" if op.reg == "f" else "r"
    outs = ", ".join(f'"+{reg}"(x[{c}])' for c in range(chains))
    ins = [f'"{reg}"({"kl" if op.lane_c1 else "k1"})', f'"{reg}"(k2)']
    if op.space == "shared":
        ins += [f'"r"(sa[{c}])' for c in range(chains)]
    elif op.space == "global":
        ins += [f'"l"(ga[{c}])' for c in range(chains)]
    text = "\\n\"\n          \"".join(asm_ptx(op, chains, unroll).split("\n"))
    clob = ' : "memory"' if op.space else ""
    return f'      asm volatile(\n          "{text}\\n"\n          : {outs}\n          : {", ".join(ins)}{clob});\n'


_HEAD = """// GENERATED by `python3 -m validation.micro_ops --gen` from validation/micro_ops_src.py: do not edit.
// Per-opcode latency (lat_*: one warp, one dependent chain) and throughput (thr_*: W warps, %(chains)d
// independent chains per thread) microbenchmarks, sm_90a; named-barrier kernels (bar_*) at the end.
// out[4 (32 b + w) + 0..3] = clock64 before / after, %%globaltimer before / after the timed loop
// (lane 0 of warp w of CTA b).
#include <stdint.h>

__device__ __forceinline__ uint64_t gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(t));
  return t;
}
#define STAMP0 __syncthreads(); const uint64_t g0 = gtimer(); const long long t0 = clock64();
#define STAMP1 const long long t1 = clock64(); const uint64_t g1 = gtimer(); \\
  if ((threadIdx.x & 31) == 0) { const int w = blockIdx.x * 32 + (threadIdx.x >> 5); out[4 * w] = t0; \\
    out[4 * w + 1] = t1; out[4 * w + 2] = (long long)g0; out[4 * w + 3] = (long long)g1; }
"""


def _kernel(op: Op, kind: str) -> str:
    """lat_<op> (1 chain, LAT_UNROLL steps per block) or thr_<op> (THR_CHAINS x THR_UNROLL)."""
    chains, unroll = (1, LAT_UNROLL) if kind == "lat" else (THR_CHAINS, THR_UNROLL)
    ct = "float" if op.reg == "f" else "uint32_t"
    conv = "__uint_as_float" if op.reg == "f" else ""
    lines = [f'extern "C" __global__ void __launch_bounds__(1024, 1)',
             f"    {kind}_{op.name}(int iters, uint32_t c1, uint32_t c2, int mode, uint32_t* __restrict__ gbuf,",
             f"        long long* __restrict__ out, uint32_t* __restrict__ sink) {{",
             f"  const {ct} k1 = {conv}(c1), k2 = {conv}(c2);",
             "  (void)k1; (void)k2;",
             "  const int lane = threadIdx.x & 31;",
             f"  {ct} x[{chains}];"]
    if op.space:
        lines.append("  const int warp = threadIdx.x >> 5;")
    if op.space == "shared":
        lines += [f"  __shared__ uint32_t sbuf[{SHARED_WORDS}];",
                  f"  for (int i = threadIdx.x; i < {SHARED_WORDS}; i += blockDim.x) sbuf[i] = 0;",
                  f"  uint32_t sa[{chains}];"]
    elif op.space == "global":
        lines += [f"  uint32_t* ga[{chains}];"]
    lines.append(f"  for (int c = 0; c < {chains}; ++c) {{")
    if op.reg == "f":
        lines.append("    x[c] = 0.5f + 0.01f * (float)c + 0.001f * (float)lane;")
    else:
        lines.append("    x[c] = 0x3F000000u + 17u * (uint32_t)c + (uint32_t)lane;")
    word = f"mode ? 0 : ((warp * {chains} + c) * 32 + lane) % {SHARED_WORDS}"
    gword = f"mode ? 0 : (((blockIdx.x * 32 + warp) * {chains} + c) * 32 + lane) % {GLOBAL_WORDS}"
    if op.space == "shared":
        lines.append(f"    sa[c] = (uint32_t)__cvta_generic_to_shared(&sbuf[{word}]);")
    elif op.space == "global":
        lines.append(f"    ga[c] = gbuf + ({gword});")
    lines += ["  }"]
    if op.lane_c1:
        lines.append("  const uint32_t kl = (lane + c1) & 31;")
    lines += ["  STAMP0",
              "#pragma unroll 1", "  for (int i = 0; i < iters; ++i) {", _c_asm(op, chains, unroll).rstrip("\n"), "  }",
              "  STAMP1"]
    acc = " ^ ".join(f"{'__float_as_uint' if op.reg == 'f' else ''}(x[{c}])" for c in range(chains))
    lines += [f"  sink[blockIdx.x * blockDim.x + threadIdx.x] = {acc};", "}", ""]
    return "\n".join(lines)


_BARRIERS = """
// bar_sync: every warp of the block repeats `bar.sync 1, blockDim.x` (8 per loop iteration).
extern "C" __global__ void __launch_bounds__(1024, 1)
    bar_sync(int iters, long long* __restrict__ out) {
  const uint32_t n = blockDim.x;
  STAMP0
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    asm volatile("bar.sync 1, %0;\\nbar.sync 1, %0;\\nbar.sync 1, %0;\\nbar.sync 1, %0;\\n"
                 "bar.sync 1, %0;\\nbar.sync 1, %0;\\nbar.sync 1, %0;\\nbar.sync 1, %0;\\n" ::"r"(n) : "memory");
  }
  STAMP1
}

// bar_pingpong: group A = warps [0, g), group B = warps [g, 2g) (block = 64 g threads), the
// FlashAttention-3 hand-off on two named barriers of count 64 g:
//   A: bar.arrive 1, n; bar.sync 2, n;     B: bar.sync 1, n; bar.arrive 2, n;
// One iteration is a round trip (A's arrive releases B, B's arrive releases A).
extern "C" __global__ void __launch_bounds__(1024, 1)
    bar_pingpong(int iters, int g, long long* __restrict__ out) {
  const uint32_t n = blockDim.x;
  const bool a = (int)(threadIdx.x >> 5) < g;
  STAMP0
  if (a) {
#pragma unroll 1
    for (int i = 0; i < iters; ++i) asm volatile("bar.arrive 1, %0;\\nbar.sync 2, %0;\\n" ::"r"(n) : "memory");
  } else {
#pragma unroll 1
    for (int i = 0; i < iters; ++i) asm volatile("bar.sync 1, %0;\\nbar.arrive 2, %0;\\n" ::"r"(n) : "memory");
  }
  STAMP1
}
"""


def gen_source() -> str:
    """The whole validation/cuda/micro_ops.cu."""
    parts = [_HEAD % {"chains": THR_CHAINS}]
    for op in OPS:
        if op.latency:
            parts.append(_kernel(op, "lat"))
        parts.append(_kernel(op, "thr"))
    parts.append(_BARRIERS)
    return "\n".join(parts)


_SASS_INS = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def sass_counts(sass: str) -> dict[str, dict[str, int]]:
    """`cuobjdump -sass` text -> {kernel: {SASS opcode: count}} over the instructions between the
    kernel's first and last clock64 read (CS2R ... SR_CLOCKLO): the timed loop, its loop control
    and its remainder (with `#pragma unroll 1` the loop body appears once)."""
    out = {}
    for part in re.split(r"\n\s*Function : ", sass)[1:]:
        name = part.split("\n", 1)[0].strip()
        lines = [ln for ln in part.splitlines() if _SASS_INS.search(ln)]
        clocks = [i for i, ln in enumerate(lines) if "SR_CLOCKLO" in ln]
        counts: dict[str, int] = {}
        if len(clocks) >= 2:
            for ln in lines[clocks[0] + 1:clocks[-1]]:
                opc = _SASS_INS.search(ln).group(1)
                counts[opc] = counts.get(opc, 0) + 1
        out[name] = dict(sorted(counts.items()))
    return out


def steps_per_block(kind: str) -> int:
    """Steps of one chain per asm block times chains: the steps one loop iteration times."""
    return LAT_UNROLL if kind == "lat" else THR_CHAINS * THR_UNROLL


def missing_sass(op: Op, kind: str, counts: dict[str, int]) -> list[str]:
    """The opcodes of `op.sass` that the timed loop of `<kind>_<op>` holds fewer than one per step
    of (the step was folded or dropped); [] when every step is there."""
    need = steps_per_block(kind)
    bad = []
    for entry in op.sass:
        alts = entry.split("|")
        have = sum(n for k, n in counts.items() if any(k == a or k.startswith(a + ".") for a in alts))
        opc = entry
        if have < need:
            bad.append(f"{opc}: {have} < {need}")
    return bad
