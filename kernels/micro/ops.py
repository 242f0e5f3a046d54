"""The per-opcode microbenchmarks of validation/cuda/micro_ops.cu as IR kernels (issues 14/15):
`lat_<op>` (one warp, one dependent chain) and `thr_<op>` (W warps, 8 independent chains per thread),
each timing its loop with clock64 as the CUDA kernel does and storing out[4 (32 b + w) + 0/1] =
clock64 before / after (lane 0 of warp w of CTA b; the %globaltimer slots stay 0).

Instruction order is the one ptxas schedules (the model issues in order, as the hardware does, but
does not reorder): a step of several instructions (rcp_ftz, vote_ballot, the cvt pairs and packs)
is emitted instruction by instruction across the chains (first instructions of every chain, then
the second ones), and the loop counter's add opens the loop body and its setp follows the first
instruction of every chain (hoisted and spread: their latency hides under the steps; the branch
closes the body). The steps are those of the CUDA op table (validation/micro_ops_src.py, same names, constants,
unroll and chain counts; tests/kernels/test_micro_ops_ir.py checks the names agree) written in the
IR's typed registers. Where the CUDA step reuses one b32 register as f32 (the packing cvt), the IR
needs the same PTX with an f32 view, which ptxas makes free: there the state lives in %f and the
packed result is moved back with `mov.b32` (a register rename in SASS, an ALU issue here: the twin
keeps it, and says so in its note). The vote steps keep their predicate state in %p (the CUDA
block's scratch predicate); setp / selp enter and leave each asm block as in the CUDA kernel.

Kernel parameters: out (u64), gbuf (u64, global ops), iters, c1, c2 (u32 bit patterns), mode (0
distinct words, 1 one word), as the CUDA kernels' arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa.ir.parser import parse

LAT_UNROLL = 32
THR_CHAINS = 8
THR_UNROLL = 4
SHARED_WORDS = 8192
GLOBAL_WORDS = 1 << 20


@dataclass(frozen=True)
class IrOp:
    """One op's IR step: `step` on the chain's state {x} (class `reg`: r = u32, f = f32), constants
    {c1}/{c2} (registers of the same class), the chain's address {a}, scratch {s} (%h b16 or %p
    pred); `alt` on odd steps; `enter`/`leave` around each block (vote: state <-> predicate)."""

    name: str
    reg: str
    step: str
    alt: str = ""
    enter: str = ""
    leave: str = ""
    space: str = ""
    latency: bool = True
    scratch: str = ""        # "h" (b16) or "p" (pred)
    lane_c1: bool = False
    note: str = ""


def _vote(kind: str) -> IrOp:
    return IrOp(f"vote_{kind}", "r", f"vote.sync.{kind}.pred {{s}}, !{{s}}, 0xffffffff;", scratch="p",
                enter="setp.ne.u32 {s}, {x}, 0;", leave="selp.u32 {x}, 1, 0, {s};")


IR_OPS: tuple[IrOp, ...] = (
    IrOp("iadd_xor", "r", "add.u32 {x}, {x}, {c1};", alt="xor.b32 {x}, {x}, {c2};"),
    IrOp("shfl_bfly", "r", "shfl.sync.bfly.b32 {x}, {x}, 1, 31, 0xffffffff;"),
    IrOp("shfl_idx", "r", "shfl.sync.idx.b32 {x}, {x}, {c1}, 31, 0xffffffff;", lane_c1=True),
    IrOp("shfl_up", "r", "shfl.sync.up.b32 {x}, {x}, 1, 0, 0xffffffff;"),
    IrOp("shfl_down", "r", "shfl.sync.down.b32 {x}, {x}, 1, 31, 0xffffffff;"),
    IrOp("ex2_ftz", "f", "ex2.approx.ftz.f32 {x}, {x};"),
    IrOp("ex2", "f", "ex2.approx.f32 {x}, {x};"),
    IrOp("rcp_ftz", "f", "add.f32 {x}, {x}, {c1};\n    rcp.approx.ftz.f32 {x}, {x};",
         note="add.f32 for the CUDA step's add.ftz.f32 (the IR's add has no .ftz; same FP32 pipe)"),
    IrOp("rcp", "f", "rcp.approx.f32 {x}, {x};"),
    IrOp("max_f32", "f", "max.f32 {x}, {x}, {c1};", alt="max.f32 {x}, {x}, {c2};"),
    IrOp("min_f32", "f", "min.f32 {x}, {x}, {c1};", alt="min.f32 {x}, {x}, {c2};"),
    IrOp("fma_f32", "f", "fma.rn.f32 {x}, {x}, {c1}, {c2};"),
    IrOp("fma_f16x2", "r", "fma.rn.f16x2 {x}, {x}, {c1}, {c2};"),
    IrOp("fma_bf16x2", "r", "fma.rn.bf16x2 {x}, {x}, {c1}, {c2};"),
    IrOp("cvt_f16x2_f32", "f", "cvt.rn.f16x2.f32 {t}, {x}, {c1};\n    mov.b32 {x}, {t};",
         note="+ mov.b32 back to the f32 state (free in SASS)"),
    IrOp("cvt_bf16x2_f32", "f", "cvt.rn.bf16x2.f32 {t}, {x}, {c1};\n    mov.b32 {x}, {t};",
         note="+ mov.b32 back to the f32 state (free in SASS)"),
    IrOp("cvt_f16_f32_pair", "f", "cvt.rn.f16.f32 {s}, {x};\n    cvt.f32.f16 {x}, {s};", scratch="h"),
    IrOp("cvt_bf16_f32_pair", "f", "cvt.rn.bf16.f32 {s}, {x};\n    cvt.f32.bf16 {x}, {s};", scratch="h"),
    _vote("any"),
    _vote("all"),
    IrOp("vote_ballot", "r", "setp.ne.u32 {s}, {x}, 0;\n    vote.sync.ballot.b32 {x}, {s}, 0xffffffff;", scratch="p"),
    IrOp("redux_add", "r", "redux.sync.add.u32 {x}, {x}, 0xffffffff;"),
    IrOp("redux_min", "r", "redux.sync.min.u32 {x}, {x}, 0xffffffff;"),
    IrOp("redux_max", "r", "redux.sync.max.u32 {x}, {x}, 0xffffffff;"),
    IrOp("atom_shared_add_u32", "r", "atom.shared.add.u32 {x}, [{a}], {x};", space="shared"),
    IrOp("atom_shared_add_f32", "f", "atom.shared.add.f32 {x}, [{a}], {x};", space="shared"),
    IrOp("red_shared_add_u32", "r", "red.shared.add.u32 [{a}], {x};", space="shared", latency=False),
    IrOp("atom_global_add_u32", "r", "atom.global.add.u32 {x}, [{a}], {x};", space="global"),
    IrOp("atom_global_add_f32", "f", "atom.global.add.f32 {x}, [{a}], {x};", space="global"),
    IrOp("red_global_add_u32", "r", "red.global.add.u32 [{a}], {x};", space="global", latency=False),
    IrOp("red_global_add_f32", "f", "red.global.add.f32 [{a}], {x};", space="global", latency=False),
)
IR_BY_NAME = {op.name: op for op in IR_OPS}


def _regs(op: IrOp, c: int) -> dict[str, str]:
    x = f"%f{c}" if op.reg == "f" else f"%r{16 + c}"
    return {"x": x, "c1": "%r13" if op.lane_c1 else ("%f30" if op.reg == "f" else "%r11"),
            "c2": "%f31" if op.reg == "f" else "%r12", "a": (f"%rd{16 + c}" if op.space == "global" else f"%r{32 + c}"),
            "s": (f"%p{8 + c}" if op.scratch == "p" else f"%h{c}"), "t": f"%r{40 + c}"}


def block(op: IrOp, chains: int, unroll: int, setp: str = "") -> str:
    """One loop iteration: `unroll` steps of each of `chains` chains, interleaved, with the
    block's enter/leave (as one asm block of the CUDA kernel); `setp` (the loop test) after the
    first instruction of every chain (its counter's add opens the body)."""
    lines = [op.enter.format(**_regs(op, c)) for c in range(chains) if op.enter]
    for u in range(unroll):
        steps = [(op.alt if (op.alt and u % 2) else op.step).format(**_regs(op, c)).split("\n") for c in range(chains)]
        for k in range(len(steps[0])):  # a step of several instructions: each one across the chains
            lines += [st[k].strip() for st in steps]
            if setp and u == 0 and k == 0:
                lines.append(setp)
    lines += [op.leave.format(**_regs(op, c)) for c in range(chains) if op.leave]
    return "\n    ".join(lines)


def _setup(op: IrOp, chains: int) -> str:
    """State initial values, constants and per-chain addresses (as the CUDA kernel's)."""
    s = []
    for c in range(chains):
        x = _regs(op, c)["x"]
        if op.reg == "f":  # 0.5 + 0.01 c + 0.001 lane
            s += ["cvt.rn.f32.u32 %f20, %r1;", f"mul.rn.f32 %f20, %f20, {0.001!r};",
                  f"add.rn.f32 {x}, %f20, {0.5 + 0.01 * c!r};"]
        else:
            s += [f"add.u32 {x}, %r1, {0x3F000000 + 17 * c};"]
    if op.reg == "f":
        s += ["mov.b32 %f30, %r11;", "mov.b32 %f31, %r12;"]
    if op.lane_c1:
        s += ["add.u32 %r13, %r1, %r11;", "and.b32 %r13, %r13, 31;"]
    for c in range(chains):
        words = SHARED_WORDS if op.space == "shared" else GLOBAL_WORDS
        base = "%r2" if op.space == "shared" else "%r5"  # warp, or 32 * ctaid + warp
        s += [f"mad.lo.u32 %r6, {base}, {chains}, {c};", "mad.lo.u32 %r6, %r6, 32, %r1;",
              f"and.b32 %r6, %r6, {words - 1};", "selp.u32 %r6, 0, %r6, %p2;"] if op.space else []
        if op.space == "shared":
            s += ["shl.b32 %r6, %r6, 2;", f"add.u32 %r{32 + c}, %r6, %r10;"]
        elif op.space == "global":
            s += [f"mad.wide.u32 %rd{16 + c}, %r6, 4, %rd9;"]
    return "\n    ".join(s)


def ops_kernel(name: str, kind: str, iters: int):
    """`lat_<name>` (kind "lat": launch block 32) or `thr_<name>` (kind "thr": block 32 W, grid 1
    or one CTA per SM) timing `iters` loop iterations. Params: out, gbuf, c1, c2, mode."""
    op = IR_BY_NAME[name]
    chains, unroll = (1, LAT_UNROLL) if kind == "lat" else (THR_CHAINS, THR_UNROLL)
    shared = f".shared .align 4 .b8 sbuf[{4 * SHARED_WORDS}]\n" if op.space == "shared" else ""
    zero = ("    mov.u32 %r10, sbuf;\n    shl.b32 %r6, %r0, 2;\n    add.u32 %r6, %r6, %r10;\n"
            f"    add.u32 %r7, %r10, {4 * SHARED_WORDS};\n"
            "    mov.u32 %r9, 0;\nZERO:\n    st.shared.u32 [%r6], %r9;\n    add.u32 %r6, %r6, %r4;\n"
            "    setp.lt.u32 %p3, %r6, %r7;\n@%p3 bra ZERO;\n") if op.space == "shared" else ""
    return parse(f""".kernel {kind}_{name}
.param .u64 out
.param .u64 gbuf
.param .u32 c1
.param .u32 c2
.param .u32 mode
{shared}.reg .u32 %r<48>
.reg .f32 %f<32>
.reg .b16 %h<8>
.reg .u64 %rd<32>
.reg .pred %p<16>
    mov.u32 %r0, %tid.x;
    and.b32 %r1, %r0, 31;
    shr.u32 %r2, %r0, 5;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    shl.b32 %r4, %r4, 2;
    mad.lo.u32 %r5, %r3, 32, %r2;
    ld.param.u32 %r11, [c1];
    ld.param.u32 %r12, [c2];
    ld.param.u32 %r8, [mode];
    setp.ne.u32 %p2, %r8, 0;
    ld.param.u64 %rd9, [gbuf];
    setp.eq.u32 %p0, %r1, 0;
{zero}    {_setup(op, chains)}
    bar.sync 0;
    mov.u64 %rd1, %clock64;
    mov.u32 %r7, 0;
LOOP:
    add.u32 %r7, %r7, 1;
    {block(op, chains, unroll, f"setp.lt.u32 %p1, %r7, {iters};")}
@%p1 bra LOOP;
    mov.u64 %rd2, %clock64;
    ld.param.u64 %rd8, [out];
    mul.wide.u32 %rd3, %r5, 32;
    add.u64 %rd3, %rd8, %rd3;
@%p0 st.global.u64 [%rd3], %rd1;
@%p0 st.global.u64 [%rd3+8], %rd2;
    exit;
""")
