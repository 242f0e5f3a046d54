"""The GEMM generator's emitter: a KernelBuilder whose values are named by purpose, plus the
arithmetic every role uses (division by a constant, stage/phase, mbarrier waits and loops).

One register per purpose (`em.u32("kt")` is the same %r register wherever it is asked for), as a
compiler names the values of the .cu; the pools are declared %r (u32), %rd (u64), %p (pred),
%h (b32, packed halves), then the accumulators %acc.
"""

from __future__ import annotations

import numpy as np

from isa.ir import Guard, KernelBuilder, Label, Mem, Reg, RegVec
from kernels.gemm.plan import Plan

KERNEL_NAME = "gemm_sm90"
REG_POOLS = (("u32", "%r"), ("u64", "%rd"), ("pred", "%p"), ("b32", "%h"))


def magic(d: int, max_n: int) -> tuple[int, int]:
    """(m, s) with n // d == (n * m) >> (32 + s) for 0 <= n < max_n (d not a power of two):
    the unsigned division by a constant that ptxas emits (mul.hi.u32 then shr.u32)."""
    for s in range(0, 32):
        m = -(-(1 << (32 + s)) // d)
        if m >= 1 << 32:
            break
        n = np.arange(max(max_n, 1), dtype=np.uint64)
        if np.array_equal((n * np.uint64(m)) >> np.uint64(32 + s), n // np.uint64(d)):
            return m, s
    raise AssertionError(f"no 32-bit magic number for n / {d}, n < {max_n}")  # pragma: no cover


def is_pow2(d: int) -> bool:
    return d & (d - 1) == 0


def log2(d: int) -> int:
    assert is_pow2(d), d
    return d.bit_length() - 1


class Emitter:
    """Builds the kernel of one Plan: `b` is the KernelBuilder, `plan` the constants. Other
    families (kernels/attention/) reuse it with their own plan (it needs `p`, and `S`, `KT` for
    stage_phase) and kernel name."""

    def __init__(self, plan: Plan, name: str = KERNEL_NAME):
        self.plan = plan
        self.p = plan.p
        self.b = KernelBuilder(name)
        self.b.reg_pools(*REG_POOLS)
        self._values: dict[tuple[str, str], Reg] = {}
        self._nlabel = 0

    # ---------------------------------------------------------------- names
    def value(self, type_: str, purpose: str) -> Reg:
        key = (type_, purpose)
        if key not in self._values:
            self._values[key] = self.b.reg(type_)
        return self._values[key]

    def reserve(self, *values: tuple[str, str]) -> None:
        """Name (type, purpose) values now, in this order: the register numbers follow the order
        in which the .cu's values are first named, not the order they are first written."""
        for type_, purpose in values:
            self.value(type_, purpose)

    def u32(self, purpose: str) -> Reg:
        return self.value("u32", purpose)

    def u64(self, purpose: str) -> Reg:
        return self.value("u64", purpose)

    def pred(self, purpose: str) -> Reg:
        return self.value("pred", purpose)

    def b32(self, purpose: str) -> Reg:
        return self.value("b32", purpose)

    def declare_acc(self) -> None:
        """The accumulators: MI fragments of ACC registers (.f32, or .f16x2 pairs)."""
        t = "f32" if self.p.accum == "f32" else "f16x2"
        self._acc = self.b.regs(t, self.plan.MI * self.plan.ACC, "%acc")

    def acc(self, mi: int) -> RegVec:
        """The accumulator fragment of the mi-th m64 row block of this warpgroup."""
        n = self.plan.ACC
        return RegVec(self._acc.regs[mi * n:(mi + 1) * n])

    def label(self, base: str) -> Label:
        """A fresh label BASE_n (n counts every label of the kernel)."""
        self._nlabel += 1
        return self.b.label(f"{base}_{self._nlabel}")

    # ---------------------------------------------------------------- arithmetic
    def div_const(self, q: Reg, n: Reg, d: int, max_n: int) -> None:
        """q = n / d (unsigned, constant d; n < max_n)."""
        b = self.b
        if d == 1:
            b.mov("u32", q, n)
        elif is_pow2(d):
            b.shr("u32", q, n, log2(d))
        else:
            m, s = magic(d, max_n)
            b.mul("u32", q, n, m, mode="hi")
            if s:
                b.shr("u32", q, q, s)

    def mod_const(self, r: Reg, n: Reg, d: int, max_n: int, q: Reg | None = None) -> None:
        """r = n % d; reuses q = n / d when given (else computes it into a scratch register)."""
        b = self.b
        if d == 1:
            b.mov("u32", r, 0)
        elif is_pow2(d):
            b.and_("b32", r, n, d - 1)
        else:
            if q is None:
                q = self.u32("mod_q")
                self.div_const(q, n, d, max_n)
            t = self.u32("mod_t")
            b.mul("u32", t, q, d, mode="lo")
            b.sub("u32", r, n, t)

    def stage_phase(self, s: Reg, ph: Reg, kt: Reg, flip: bool = False) -> None:
        """The pipeline position of k-tile kt: stage s = kt % S, phase ph = (kt / S) & 1 (^ 1
        with flip: a producer's first pass waits on the phase before the barrier's first)."""
        S, max_n = self.plan.S, self.plan.KT + self.plan.S
        q = self.u32("sp_q")
        self.div_const(q, kt, S, max_n)
        self.mod_const(s, kt, S, max_n, q=q)
        self.b.and_("b32", ph, q, 1)
        if flip:
            self.b.xor("b32", ph, ph, 1)

    def bar_addr(self, bar: Reg, s: Reg, which: str) -> None:
        """bar = &which[s] (which: "full_bar" or "empty_bar", 8-byte mbarriers)."""
        self.b.shl("b32", bar, s, 3)
        self.b.add("u32", bar, bar, self.u32(which))

    def wait(self, bar: Reg, parity: Reg) -> None:
        """Spin until the phase of mbarrier [bar] with `parity` completed."""
        p = self.pred("wait")
        top = self.b.place(self.label("WAIT"))
        self.b.mbarrier_try_wait_parity(p, Mem(bar), parity)
        self.b.bra(top, guard=Guard(p, True))

    def loop_back(self, counter: Reg, stop: int, top: Label, after: Label | None = None) -> None:
        """The tail of a counted loop: [after:] counter += 1; if counter < stop goto top."""
        if after is not None:
            self.b.place(after)
        pl = self.pred("loop")
        self.b.add("u32", counter, counter, 1)
        self.b.setp("lt", "u32", pl, counter, stop)
        self.b.bra(top, guard=Guard(pl))

    def stage_addrs(self, s: Reg, sa: Reg, sb: Reg, bar: Reg | None, which: str = "full_bar") -> None:
        """sa, sb = the A and B tiles of stage s (and bar = &which[s])."""
        self.b.mad("u32", sa, s, self.plan.A_STAGE, self.u32("sA"), mode="lo")
        self.b.mad("u32", sb, s, self.plan.B_STAGE, self.u32("sB"), mode="lo")
        if bar is not None:
            self.bar_addr(bar, s, which)
