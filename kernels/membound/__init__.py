"""Memory-bound portfolio kernels in the IR (issue 15 item 3): vector add and copy of f32.

    build_membound(MemParams(family="vecadd", vec=4, grid_stride=False, n=...)) -> (Kernel, grid, block)

The CUDA twins are vecadd.cu and copy.cu of the GPU side (issue 15; its portfolio list launches them):
one thread per element (vec=1) or per float4 (vec=4), 256 threads per CTA;

    plain:        i = (ctaid.x * ntid.x + tid.x) * vec;  if (i < n) c[i:i+vec] = a[i:i+vec] (+ b[...])
    grid-stride:  for (i = (ctaid.x * ntid.x + tid.x) * vec; i < n; i += nctaid.x * ntid.x * vec) ...

The plain form guards its loads and stores per lane (a partial last CTA); the grid-stride loop
branches per warp (written when hopsim's branches had to be warp-uniform; hopsim/functional/simt.py
now models divergent ones), so its n is a multiple of 32 x vec.
Imports only isa (the kernels layer).
"""

from __future__ import annotations

from dataclasses import dataclass

from isa.errors import InputError
from isa.ir import parse

FAMILIES = ("vecadd", "copy")
THREADS = 256
MAX_N = 1 << 30
"""Most elements (4 GiB per buffer, the portfolio's largest size)."""
REGS_PER_THREAD = 32
"""Registers per thread for occupancy (the `.reg` declarations overcount these kernels): assumed
at most 32, what ptxas gives such element-wise kernels (8 CTAs of 256 threads per SM), until the
twins' SASS is committed."""


@dataclass(frozen=True)
class MemParams:
    """One memory-bound launch: family, elements n (f32), vector width, plain or grid-stride
    (then `ctas` CTAs), threads per CTA."""

    family: str = "vecadd"
    n: int = 8448 * THREADS * 4
    vec: int = 4
    grid_stride: bool = False
    ctas: int | None = None
    threads: int = THREADS

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise InputError("family", self.family, " or ".join(FAMILIES))
        if self.vec not in (1, 2, 4):
            raise InputError("vec", self.vec, "1, 2 or 4 (f32 elements per thread access: 4 = float4)")
        if not (32 <= self.threads <= 1024 and self.threads % 32 == 0):
            raise InputError("threads", self.threads, "a multiple of 32 in 32..1024")
        step = 32 * self.vec if self.grid_stride else self.vec
        if not (isinstance(self.n, int) and 0 < self.n <= MAX_N and self.n % step == 0):
            raise InputError("n", self.n, f"elements, a positive multiple of {step} (at most 2^30 = {MAX_N})"
                             + (" (grid-stride: 32 x vec, the loop branches per warp)" if self.grid_stride else ""))
        if self.ctas is not None and not (1 <= self.ctas <= 2**31 - 1):
            raise InputError("ctas", self.ctas, "1..2^31-1")

    @property
    def grid(self) -> int:
        """CTAs: plain, enough for n; grid-stride, `ctas` (default: as plain, at most 132 x 8)."""
        need = -(-self.n // (self.threads * self.vec))
        if not self.grid_stride:
            return need
        return self.ctas if self.ctas is not None else min(need, 132 * 8)

    @property
    def buffers(self) -> tuple:
        return ("a", "b", "c") if self.family == "vecadd" else ("a", "c")

    @property
    def bytes_moved(self) -> int:
        """Bytes the kernel must read and write (the roofline numerator)."""
        return 4 * self.n * len(self.buffers)

    @property
    def name(self) -> str:
        return f"{self.family}_f32_v{self.vec}{'_gs' if self.grid_stride else ''}"


def _vreg(base: int, vec: int) -> str:
    regs = [f"%f{base + i}" for i in range(vec)]
    return regs[0] if vec == 1 else "{" + ", ".join(regs) + "}"


def _vtype(vec: int) -> str:
    return "f32" if vec == 1 else f"v{vec}.f32"


def _body(p: MemParams) -> str:
    """The loads, the add and the store of one access at byte offset %rd2 (guarded by %p0)."""
    v, vt = p.vec, _vtype(p.vec)
    g = "@%p0 " if not p.grid_stride else ""
    lines = ["    add.u64 %rd6, %rd3, %rd2;", "    add.u64 %rd8, %rd5, %rd2;",
             f"    {g}ld.global.{vt} {_vreg(0, v)}, [%rd6];"]
    if p.family == "vecadd":
        lines += ["    add.u64 %rd7, %rd4, %rd2;", f"    {g}ld.global.{vt} {_vreg(4, v)}, [%rd7];"]
        lines += [f"    add.f32 %f{8 + i}, %f{i}, %f{4 + i};" for i in range(v)]
        lines.append(f"    {g}st.global.{vt} [%rd8], {_vreg(8, v)};")
    else:
        lines.append(f"    {g}st.global.{vt} [%rd8], {_vreg(0, v)};")
    return "\n".join(lines)


def kernel_text(p: MemParams) -> str:
    """The IR of `p` (docs/ir.md)."""
    params = ".param .u64 " + ", ".join(p.buffers) + ", n"
    head = f"""
.kernel {p.name}
{params}
.reg .u32 %r<8>
.reg .u64 %rd<16>
.reg .f32 %f<12>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mad.lo.u32 %r3, %r1, %r2, %r0;
    mul.wide.u32 %rd0, %r3, {p.vec};
    ld.param.u64 %rd1, [n];
    ld.param.u64 %rd3, [a];
    ld.param.u64 %rd5, [c];
"""
    if p.family == "vecadd":
        head += "    ld.param.u64 %rd4, [b];\n"
    if not p.grid_stride:
        return head + f"""    setp.lt.u64 %p0, %rd0, %rd1;
    shl.b64 %rd2, %rd0, 2;
{_body(p)}
    exit;
"""
    return head + f"""    mov.u32 %r4, %nctaid.x;
    mul.lo.u32 %r5, %r4, %r2;
    mul.wide.u32 %rd9, %r5, {p.vec};
    setp.ge.u64 %p1, %rd0, %rd1;
    @%p1 bra DONE;
LOOP:
    shl.b64 %rd2, %rd0, 2;
{_body(p)}
    add.u64 %rd0, %rd0, %rd9;
    setp.lt.u64 %p1, %rd0, %rd1;
    @%p1 bra LOOP;
DONE:
    exit;
"""


def build_membound(p: MemParams):
    """(Kernel, grid, block) of `p`."""
    return parse(kernel_text(p)), p.grid, p.threads
