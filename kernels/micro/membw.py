"""The memory-bound mechanism microbenchmarks of validation/cuda/micro_membw.cu as IR kernels
(issue 15; plan and records: validation/membw_plan.py, validation/records/h100/membw/).

mb_chain(vec, layout, trips, passes): every warp walks a row of `trips` vectors of `vec` bytes per
lane with ONE ld.global per trip whose value is folded (x = x * 3 + fold) before the next trip's
load, `passes` passes over the same row; lane 0 stores the clock64 cycles of pass p at
times[warp_global * (passes + 1) + p]. layout "warp": each warp its own row (lane l: vectors l,
l + 32, ...); "cta": each CTA one row (thread t: vectors t, t + ntid, ...).
mb_stream(vec, unroll): grid-stride read, each thread `unroll` independent loads (i, i + S, ...,
S = grid threads) before folding them, then a tail loop of single loads, `rounds` passes over n
vectors.
mb_copy(vec, unroll): grid-stride copy, `unroll` loads then `unroll` stores of the same indices.

Not expressible: the `.cg` / `.ca` cache operators (the IR's ld.global has none; hopsim has no L1
for global data, every load is an L2 access, as `.cg`), the smid and %globaltimer stamps (the
timed IR has no nanosecond clock), and the sink store of the folded values (one store per thread
at the end; left out). Imports only isa (the kernels layer).
"""

from __future__ import annotations

from isa.ir.parser import parse

VECS = {4: ("u32", 1), 8: ("v2.u32", 2), 16: ("v4.u32", 4)}


def _load(vec: int, addr: str, base: int) -> tuple[str, str]:
    """(the load of `vec` bytes at [addr] into %r<base>.., the folds of its words into %r<base>)."""
    t, k = VECS[vec]
    regs = [f"%r{base + i}" for i in range(k)]
    dst = regs[0] if k == 1 else "{" + ", ".join(regs) + "}"
    folds = [f"    xor.b32 {regs[0]}, {regs[0]}, {r};" for r in regs[1:]]
    return f"    ld.global.{t} {dst}, [{addr}];", "\n".join(folds)


def mb_chain(vec: int, layout: str, trips: int, passes: int):
    """The chain kernel (params buf, times: u64)."""
    if vec not in VECS or layout not in ("warp", "cta"):
        raise ValueError(f"vec {vec} (4/8/16), layout {layout!r} (warp/cta)")
    ld, fold = _load(vec, "%rd5", 20)
    if layout == "warp":  # element wg * 32 * trips + lane, step 32
        elem = f"    mul.lo.u32 %r7, %r6, {32 * trips};\n    add.u32 %r7, %r7, %r4;\n    mov.u32 %r8, 32;"
    else:  # element ctaid * ntid * trips + tid, step ntid
        elem = f"    mul.lo.u32 %r7, %r1, %r2;\n    mul.lo.u32 %r7, %r7, {trips};\n    add.u32 %r7, %r7, %r0;\n    mov.u32 %r8, %r2;"
    return parse(f"""
.kernel mb_chain_v{vec}_{layout}
.param .u64 buf, times
.reg .u32 %r<32>
.reg .u64 %rd<16>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    shr.u32 %r3, %r0, 5;
    and.b32 %r4, %r0, 31;
    shr.u32 %r5, %r2, 5;
    mad.lo.u32 %r6, %r1, %r5, %r3;
{elem}
    ld.param.u64 %rd0, [buf];
    mul.wide.u32 %rd1, %r7, {vec};
    add.u64 %rd2, %rd0, %rd1;
    mul.wide.u32 %rd3, %r8, {vec};
    ld.param.u64 %rd9, [times];
    mul.lo.u32 %r9, %r6, {8 * (passes + 1)};
    cvt.u64.u32 %rd10, %r9;
    add.u64 %rd9, %rd9, %rd10;
    setp.eq.u32 %p0, %r4, 0;
    mov.u32 %r10, 0;
    mov.u32 %r11, 0;
PASS:
    mov.u64 %rd4, %clock64;
    mov.u64 %rd5, %rd2;
    mov.u32 %r12, 0;
TRIP:
{ld}
{fold}
    mad.lo.u32 %r10, %r10, 3, %r20;
    add.u64 %rd5, %rd5, %rd3;
    add.u32 %r12, %r12, 1;
    setp.lt.u32 %p1, %r12, {trips};
@%p1 bra TRIP;
    mov.u64 %rd6, %clock64;
    sub.s64 %rd7, %rd6, %rd4;
@%p0 st.global.u64 [%rd9], %rd7;
    add.u64 %rd9, %rd9, 8;
    add.u32 %r11, %r11, 1;
    setp.lt.u32 %p2, %r11, {passes};
@%p2 bra PASS;
    exit;
""")


def _grid_stride(name: str, unroll: int, body_main: str, body_tail: str, params: str, bases: str):
    """A grid-stride loop over n vectors, `rounds` passes: the main loop while i + (U-1) S < n
    (U accesses at i, i + S, ...), then single accesses while i < n (the CUDA kernels' loops)."""
    return parse(f"""
.kernel {name}
.param .u64 {params}, n
.param .u32 rounds
.reg .u32 %r<48>
.reg .u64 %rd<24>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %nctaid.x;
    mad.lo.u32 %r4, %r1, %r2, %r0;
    mul.lo.u32 %r5, %r3, %r2;
    cvt.u64.u32 %rd0, %r4;
    cvt.u64.u32 %rd1, %r5;
    ld.param.u64 %rd2, [n];
    mul.lo.u64 %rd3, %rd1, {unroll - 1};
    mul.lo.u64 %rd4, %rd1, {unroll};
    ld.param.u32 %r6, [rounds];
{bases}
    mov.u32 %r7, 0;
    mov.u32 %r8, 0;
ROUND:
    mov.u64 %rd5, %rd0;
MAIN:
    add.u64 %rd6, %rd5, %rd3;
    setp.ge.u64 %p0, %rd6, %rd2;
@%p0 bra TAIL;
{body_main}
    add.u64 %rd5, %rd5, %rd4;
    bra MAIN;
TAIL:
    setp.ge.u64 %p1, %rd5, %rd2;
@%p1 bra NEXT;
{body_tail}
    add.u64 %rd5, %rd5, %rd1;
    bra TAIL;
NEXT:
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p2, %r7, %r6;
@%p2 bra ROUND;
    exit;
""")


def _addr(dst: str, base: str, idx: str, vec: int) -> str:
    """dst = base + idx * vec (bytes)."""
    return f"    mul.lo.u64 %rd7, {idx}, {vec};\n    add.u64 {dst}, {base}, %rd7;"


def mb_stream(vec: int, unroll: int):
    """The streaming read (params buf, n: u64 vectors; rounds: u32)."""
    main, folds = [], []
    for k in range(unroll):
        main.append(f"    mad.lo.u64 %rd8, %rd1, {k}, %rd5;")
        main.append(f"    mul.lo.u64 %rd7, %rd8, {vec};\n    add.u64 %rd{10 + k}, %rd9, %rd7;")
        ld, fold = _load(vec, f"%rd{10 + k}", 12 + 4 * k)
        main.append(ld)
        folds += [fold, f"    mad.lo.u32 %r8, %r8, 3, %r{12 + 4 * k};"]
    ld, fold = _load(vec, "%rd8", 12)
    tail = f"{_addr('%rd8', '%rd9', '%rd5', vec)}\n{ld}\n{fold}\n    mad.lo.u32 %r8, %r8, 3, %r12;"
    return _grid_stride(f"mb_stream_v{vec}_u{unroll}", unroll, "\n".join(main + folds), tail, "buf",
                        "    ld.param.u64 %rd9, [buf];")


def mb_copy(vec: int, unroll: int):
    """The grid-stride copy (params src, dst, n: u64 vectors; rounds: u32)."""
    t, nw = VECS[vec]
    loads, stores = [], []
    for k in range(unroll):
        loads.append(f"    mad.lo.u64 %rd8, %rd1, {k}, %rd5;\n    mul.lo.u64 %rd7, %rd8, {vec};")
        loads.append(f"    add.u64 %rd{10 + k}, %rd9, %rd7;\n    add.u64 %rd{14 + k}, %rd19, %rd7;")
        ld, _ = _load(vec, f"%rd{10 + k}", 12 + 4 * k)
        loads.append(ld)
        regs = [f"%r{12 + 4 * k + i}" for i in range(nw)]
        src = regs[0] if nw == 1 else "{" + ", ".join(regs) + "}"
        stores.append(f"    st.global.{t} [%rd{14 + k}], {src};")
    ld, _ = _load(vec, "%rd10", 12)
    regs = [f"%r{12 + i}" for i in range(nw)]
    src = regs[0] if nw == 1 else "{" + ", ".join(regs) + "}"
    tail = (f"    mul.lo.u64 %rd7, %rd5, {vec};\n    add.u64 %rd10, %rd9, %rd7;\n    add.u64 %rd14, %rd19, %rd7;\n"
            f"{ld}\n    st.global.{t} [%rd14], {src};")
    return _grid_stride(f"mb_copy_v{vec}_u{unroll}", unroll, "\n".join(loads + stores), tail, "src, dst",
                        "    ld.param.u64 %rd9, [src];\n    ld.param.u64 %rd19, [dst];")

