"""Row-wise portfolio kernels in the IR (issue 15 item 3): a row reduction and a row softmax of f32.

    build_rowwise(RowParams(family="softmax", rows=8192, cols=1024, mapping="warp")) -> (Kernel, grid, block)

x is a row-major rows x cols f32 matrix; rowsum writes y[r] = sum_c x[r, c] (rows floats), softmax
writes y[r, :] = softmax(x[r, :]) (rows x cols floats). The CUDA twins are kernels/cuda/rowsum.cu
and softmax.cu (the same algorithm, operation for operation; launch shapes: validation/rowwise.py).

Two mappings, each lane striding over the row with float4 loads (ld.global.v4.f32, one per trip,
no unrolling: `#pragma unroll 1` in the twins):

    warp:  one warp per row; CTAs of `threads` threads hold threads/32 rows; grid = ceil(rows / (threads/32)).
           Lane l reads the float4s l, l+32, l+64, ... of its row; partials combine with five
           shfl.sync.bfly (offsets 16, 8, 4, 2, 1), after which every lane holds the row's value.
    cta:   one CTA per row; grid = rows. Thread t of warp w reads float4 chunks w, w+W, ... (chunk =
           32 float4s, W = threads/32 warps) at lane offset; warp partials (bfly) go to shared memory
           (lane 0 stores red[w]), bar.sync 0, then every warp reads red[0..W-1] (lanes >= W take the
           identity) and bfly-reduces again, so every thread holds the row's value without a second
           barrier. Softmax uses two arrays (red_max, red_sum), so the second combine never
           overwrites what a slower warp still reads of the first.

Softmax (numerically stable, three passes over the row): m = max_c x; s = sum_c ex2((x - m) * L)
with L = log2(e) as f32 (0f3FB8AA3B); r = rcp.approx(s); y = ex2((x - m) * L) * r. Per lane the
sums accumulate in element order (s += v.x; s += v.y; ...), the max with max.f32 in the same order.

Branches stay warp-uniform (hopsim has no divergent branches yet): the trip counts are uniform per
warp (cols a multiple of 4 x 32 = 128; in the cta mapping threads a power of two so a warp's trip
count is a shift), the warp mapping's `row >= rows` exit is per warp. Imports only isa.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa.errors import InputError
from isa.ir import parse

FAMILIES = ("rowsum", "softmax")
MAPPINGS = ("warp", "cta")
THREADS = 256
VEC = 4
"""f32 elements per lane access (float4)."""
CHUNK = 32 * VEC
"""Elements a warp reads per trip (a lane's float4 x 32 lanes); cols must be a multiple."""
MAX_COLS = 32768
MAX_ELEMENTS = 1 << 30
"""Most elements of x (4 GiB, as the memory-bound portfolio's largest buffer)."""
REGS_PER_THREAD = 32
"""Registers per thread for occupancy (the `.reg` declarations overcount): ptxas -O3 for sm_90a
gives the twins 14 (rowsum_cta), 15 (rowsum_warp), 20 (softmax_cta) and 22 (softmax_warp)
(`nvcc -Xptxas -v`, CUDA 13.0); 32 gives the same occupancy (8 CTAs of 256 threads, thread-limited),
as for the memory-bound kernels; the GPU runner records the count (`launch.regs_per_thread`)."""
LOG2E_F32 = "0f3FB8AA3B"
"""log2(e) rounded to f32 (1.44269502...), the constant the twins' `1.44269504088896341f` rounds to."""
NEG_INF_F32 = "0fFF800000"


@dataclass(frozen=True)
class RowParams:
    """One row-wise launch: family, rows, cols (f32 elements per row), mapping, threads per CTA."""

    family: str = "softmax"
    rows: int = 8192
    cols: int = 1024
    mapping: str = "warp"
    threads: int = THREADS

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise InputError("family", self.family, " or ".join(FAMILIES))
        if self.mapping not in MAPPINGS:
            raise InputError("mapping", self.mapping, "warp (one warp per row) or cta (one CTA per row)")
        if self.mapping == "cta":
            ok = self.threads in tuple(32 << i for i in range(6))
            what = "a power of two in 32..1024 (the cta mapping's per-warp trip count is a shift)"
        else:
            ok = isinstance(self.threads, int) and 32 <= self.threads <= 1024 and self.threads % 32 == 0
            what = "a multiple of 32 in 32..1024"
        if not ok:
            raise InputError("threads", self.threads, what)
        if not (isinstance(self.cols, int) and CHUNK <= self.cols <= MAX_COLS and self.cols % CHUNK == 0):
            raise InputError("cols", self.cols, f"a multiple of {CHUNK} in {CHUNK}..{MAX_COLS} (float4 x 32 lanes: "
                             "every lane of a warp makes the same number of trips; divergent branches are not modelled)")
        if not (isinstance(self.rows, int) and self.rows >= 1 and self.rows * self.cols <= MAX_ELEMENTS
                and self.grid_for(self.rows) <= 2**31 - 1):
            raise InputError("rows", self.rows, f"1.. with rows x cols <= 2^30 elements ({MAX_ELEMENTS})")

    @property
    def warps(self) -> int:
        return self.threads // 32

    def grid_for(self, rows: int) -> int:
        return rows if self.mapping == "cta" else -(-rows // (self.threads // 32))

    @property
    def grid(self) -> int:
        """CTAs: one per row (cta) or one per threads/32 rows (warp)."""
        return self.grid_for(self.rows)

    @property
    def out_elements(self) -> int:
        return self.rows if self.family == "rowsum" else self.rows * self.cols

    @property
    def bytes_moved(self) -> int:
        """Bytes the kernel must read and write (the roofline numerator): x once, y once (softmax
        reads its row three times; the second and third reads are not counted)."""
        return 4 * (self.rows * self.cols + self.out_elements)

    @property
    def name(self) -> str:
        return f"{self.family}_f32_{self.mapping}"


# ------------------------------------------------------------------ IR text pieces
_V = "{%f0, %f1, %f2, %f3}"


def _pass(label: str, body: list[str], store: bool = False) -> list[str]:
    """One pass over the thread's float4s: %r10 trips (warp-uniform), from %rd7 (x) [and %rd8 (y)],
    stride %rd6 bytes; `body` sees the float4 in %f0..%f3 (and writes %f4..%f7 when `store`)."""
    out = ["    mov.u32 %r11, %r10;", "    mov.u64 %rd4, %rd7;"]
    if store:
        out.append("    mov.u64 %rd5, %rd8;")
    out += ["    setp.eq.u32 %p1, %r11, 0;", f"    @%p1 bra {label}_END;", f"{label}:",
            f"    ld.global.v4.f32 {_V}, [%rd4];", *body]
    if store:
        out += ["    st.global.v4.f32 [%rd5], {%f4, %f5, %f6, %f7};", "    add.u64 %rd5, %rd5, %rd6;"]
    out += ["    add.u64 %rd4, %rd4, %rd6;", "    sub.u32 %r11, %r11, 1;", "    setp.ne.u32 %p1, %r11, 0;",
            f"    @%p1 bra {label};", f"{label}_END:"]
    return out


def _bfly(op: str, acc: str) -> list[str]:
    """Warp butterfly of `acc` (every lane ends with the warp's value): offsets 16, 8, 4, 2, 1."""
    out = []
    for off in (16, 8, 4, 2, 1):
        out += [f"    shfl.sync.bfly.b32 %f9, {acc}, {off}, 31, 0xffffffff;", f"    {op}.f32 {acc}, {acc}, %f9;"]
    return out


def _combine(p: RowParams, op: str, acc: str, sym: str, ident: str) -> list[str]:
    """The row's value in every lane: bfly; for the cta mapping also red[w] = lane 0's, bar.sync 0,
    acc = red[lane] (lane < W, else the identity), bfly again."""
    out = _bfly(op, acc)
    if p.mapping == "warp":
        return out
    out += [f"    mov.u32 %r12, {sym};", "    shl.b32 %r13, %r2, 2;", "    add.u32 %r13, %r12, %r13;",
            f"    @%p2 st.shared.f32 [%r13], {acc};", "    bar.sync 0;",
            "    shl.b32 %r13, %r3, 2;", "    add.u32 %r13, %r12, %r13;", f"    mov.f32 {acc}, {ident};",
            f"    @%p3 ld.shared.f32 {acc}, [%r13];"]
    return out + _bfly(op, acc)


def _prologue(p: RowParams) -> list[str]:
    """Row, lane, trip count (%r10), stride (%rd6), the thread's first x / y addresses (%rd7, %rd8),
    the row's base in y (%rd1); %p2 = lane 0 (warp) or thread 0 (cta), %p3 = lane < W."""
    out = ["    mov.u32 %r0, %tid.x;", "    mov.u32 %r1, %ctaid.x;", "    shr.u32 %r2, %r0, 5;",
           "    and.b32 %r3, %r0, 31;", "    ld.param.u32 %r7, [rows];", "    ld.param.u32 %r8, [cols];",
           "    shr.u32 %r9, %r8, 7;"]                                   # chunks = cols / 128
    if p.mapping == "warp":
        out += [f"    mad.lo.u32 %r6, %r1, {p.warps}, %r2;", "    setp.ge.u32 %p0, %r6, %r7;", "    @%p0 bra DONE;",
                "    mov.u32 %r10, %r9;", "    mul.wide.u32 %rd3, %r3, 16;", "    mov.u64 %rd6, 512;",
                "    setp.eq.u32 %p2, %r3, 0;"]
    else:
        shift = p.warps.bit_length() - 1
        out += ["    mov.u32 %r6, %r1;", f"    add.u32 %r10, %r9, {p.warps - 1};", "    sub.u32 %r10, %r10, %r2;",
                f"    shr.u32 %r10, %r10, {shift};",                     # trips = (chunks + W-1 - w) / W
                "    mul.wide.u32 %rd3, %r0, 16;", f"    mov.u64 %rd6, {16 * p.threads};",
                "    setp.eq.u32 %p2, %r3, 0;", f"    setp.lt.u32 %p3, %r3, {p.warps};"]
    out += ["    mul.wide.u32 %rd2, %r6, %r8;", "    shl.b64 %rd2, %rd2, 2;",     # row * cols * 4
            "    ld.param.u64 %rd0, [x];", "    add.u64 %rd0, %rd0, %rd2;", "    add.u64 %rd7, %rd0, %rd3;",
            "    ld.param.u64 %rd1, [y];"]
    if p.family == "softmax":
        out += ["    add.u64 %rd1, %rd1, %rd2;", "    add.u64 %rd8, %rd1, %rd3;"]
    else:
        out += ["    mul.wide.u32 %rd9, %r6, 4;", "    add.u64 %rd1, %rd1, %rd9;"]
    return out


def _rowsum(p: RowParams) -> list[str]:
    body = [f"    add.f32 %f8, %f8, %f{i};" for i in range(4)]
    out = ["    mov.f32 %f8, 0f00000000;", *_pass("SUM", body), *_combine(p, "add", "%f8", "red_sum", "0f00000000")]
    guard = "%p2" if p.mapping == "warp" else "%p4"
    if p.mapping == "cta":
        out.append("    setp.eq.u32 %p4, %r0, 0;")
    return out + [f"    @{guard} st.global.f32 [%rd1], %f8;"]


def _exp(dst: int, src: int) -> list[str]:
    """%f{dst} = ex2((%f{src} - m) * L)."""
    return [f"    sub.f32 %f{dst}, %f{src}, %f10;", f"    mul.f32 %f{dst}, %f{dst}, %f12;",
            f"    ex2.approx.f32 %f{dst}, %f{dst};"]


def _softmax(p: RowParams) -> list[str]:
    out = [f"    mov.f32 %f12, {LOG2E_F32};", f"    mov.f32 %f8, {NEG_INF_F32};",
           *_pass("MAX", [f"    max.f32 %f8, %f8, %f{i};" for i in range(4)]),
           *_combine(p, "max", "%f8", "red_max", NEG_INF_F32), "    mov.f32 %f10, %f8;",
           "    mov.f32 %f11, 0f00000000;"]
    body = []
    for i in range(4):
        body += [*_exp(4 + i, i), f"    add.f32 %f11, %f11, %f{4 + i};"]
    out += [*_pass("EXP", body), *_combine(p, "add", "%f11", "red_sum", "0f00000000"),
            "    rcp.approx.f32 %f13, %f11;"]
    body = []
    for i in range(4):
        body += [*_exp(4 + i, i), f"    mul.f32 %f{4 + i}, %f{4 + i}, %f13;"]
    return out + _pass("SCALE", body, store=True)


def kernel_text(p: RowParams) -> str:
    """The IR of `p` (docs/ir.md)."""
    head = [f".kernel {p.name}", ".param .u64 x, y", ".param .u32 rows, cols"]
    if p.mapping == "cta":
        head += [".shared .align 16 .b32 red_max[32]"] if p.family == "softmax" else []
        head += [".shared .align 16 .b32 red_sum[32]"]
    head += [".reg .u32 %r<16>", ".reg .u64 %rd<12>", ".reg .f32 %f<16>", ".reg .pred %p<5>"]
    body = _rowsum(p) if p.family == "rowsum" else _softmax(p)
    return "\n".join([*head, *_prologue(p), *body, "DONE:", "    exit;", ""])


def build_rowwise(p: RowParams):
    """(Kernel, grid, block) of `p`."""
    return parse(kernel_text(p)), p.grid, p.threads


__all__ = ["FAMILIES", "MAPPINGS", "REGS_PER_THREAD", "RowParams", "build_rowwise", "kernel_text"]
