"""Warpgroup MMA: wgmma.fence, wgmma.mma_async (m64nNk16, f16/bf16), wgmma.commit_group,
wgmma.wait_group (timing classes WGMMA_FENCE, WGMMA, WGMMA_COMMIT, WGMMA_WAIT)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Reg, RegVec
from isa.ir.ops.base import INT_CONST, VAL, Instruction, Kind, Opnd, Slot, _fail, _is, _one_of
from isa.ir.ops.bulk import check_group_count

_WG_RULE = "PTX ISA, wgmma.mma_async"
WGMMA_N = tuple(range(8, 257, 8))
_SYNC_ALIGNED = (Slot(None, ("sync",)), Slot(None, ("aligned",)))


@dataclass(frozen=True)
class WgmmaFence(Instruction):
    """`wgmma.fence.sync.aligned;` orders register accesses before the following wgmma.mma_async."""

    mnemonic: ClassVar[str] = "wgmma.fence"
    timing_class: ClassVar[str] = Kind.WGMMA_FENCE
    modifiers: ClassVar = _SYNC_ALIGNED
    examples: ClassVar = ("wgmma.fence.sync.aligned;",)


_WG_SHAPE = re.compile(r"^m64n(\d+)k16$")


@dataclass(frozen=True)
class WgmmaMmaAsync(Instruction):
    """`wgmma.mma_async.sync.aligned.m64nNk16.dtype_d.dtype_a.dtype_b d, a, b_desc, scale_d,
    imm_scale_a, imm_scale_b{, imm_trans_a}, imm_trans_b;`

    Legal here (PTX ISA, f16/bf16 dense):
        dtype_a == dtype_b in {f16, bf16};   dtype_d f32, or f16 only with f16 inputs
        N in 8..256 step 8;                  d: N/2 f32 regs (f32) or N/4 f16x2 regs (f16)
        a: a 64-bit smem descriptor, or a RegVec of 4 b32 regs (A from registers: no imm_trans_a)
        scale_d: predicate register or 0/1;  imm_scale_a/b in {1, -1};  imm_trans_a/b in {0, 1}
    """

    mnemonic: ClassVar[str] = "wgmma.mma_async"
    timing_class: ClassVar[str] = Kind.WGMMA
    rule: ClassVar[str] = _WG_RULE
    examples: ClassVar = (
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%f0..%f7}, %rd0, %rd1, 1, 1, 1, 0, 0;",
        "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%r0, %r1}, {%r2, %r3, %r4, %r5}, %rd1, %p0, 1, -1, 1;",
    )
    _writes_fields: ClassVar = ("d",)
    _coerce_fields: ClassVar = ("d", "a", "scale_d")
    shape_n: int
    dtype_d: str
    dtype_a: str
    dtype_b: str
    d: RegVec
    a: Reg | RegVec
    b_desc: Reg
    scale_d: Reg | Imm = Imm(1)
    imm_scale_a: int = 1
    imm_scale_b: int = 1
    imm_trans_a: int = 0
    imm_trans_b: int = 0

    @property
    def a_from_regs(self) -> bool:
        return isinstance(self.a, RegVec)

    @property
    def num_d_regs(self) -> int:
        """Accumulator registers per thread: N/2 (f32) or N/4 (f16, packed f16x2)."""
        return self.shape_n // 2 if self.dtype_d == "f32" else self.shape_n // 4

    def _check(self) -> None:
        self._check_types()
        _is(self, "d", self.d, (RegVec,))
        if len(self.d) != self.num_d_regs:
            what = "N/2 .f32" if self.dtype_d == "f32" else "N/4 .f16x2"
            _fail(self, f"m64n{self.shape_n}k16.{self.dtype_d} needs {self.num_d_regs} accumulator "
                        f"registers ({what}), got {len(self.d)}", _WG_RULE)
        _is(self, "a", self.a, (Reg, RegVec))
        if isinstance(self.a, RegVec) and len(self.a) != 4:
            _fail(self, f"A from registers needs 4 .b32 registers (64x16 .{self.dtype_a} over 128 threads), "
                        f"got {len(self.a)}", _WG_RULE)
        _is(self, "b_desc", self.b_desc, (Reg,))
        _is(self, "scale_d", self.scale_d, VAL)
        if isinstance(self.scale_d, Imm) and self.scale_d.value not in (0, 1):
            _fail(self, f"scale-d {self.scale_d.value} must be a predicate or 0/1", _WG_RULE)
        self._check_imms()

    def _check_types(self) -> None:
        _one_of(self, "dtype_a", self.dtype_a, ("f16", "bf16"), _WG_RULE + " (hopsim models the f16/bf16 forms)")
        if self.dtype_b != self.dtype_a:
            _fail(self, f"dtype_b={self.dtype_b!r} must equal dtype_a={self.dtype_a!r}", _WG_RULE)
        _one_of(self, "dtype_d", self.dtype_d, ("f32", "f16"), _WG_RULE)
        if self.dtype_d == "f16" and self.dtype_a != "f16":
            _fail(self, f"an .f16 accumulator needs .f16 inputs, not .{self.dtype_a} "
                        "(.bf16 accumulates in .f32 only)", _WG_RULE)
        if self.shape_n not in WGMMA_N:
            _fail(self, f"shape m64n{self.shape_n}k16: N must be a multiple of 8 in 8..256 for "
                        f".{self.dtype_a}", _WG_RULE)

    def _check_imms(self) -> None:
        for names, allowed in ((("imm_scale_a", "imm_scale_b"), (1, -1)), (("imm_trans_a", "imm_trans_b"), (0, 1))):
            for name in names:
                v = getattr(self, name)
                if isinstance(v, Imm):
                    object.__setattr__(self, name, v.value)
                _one_of(self, name, getattr(self, name), allowed, _WG_RULE)
        if self.a_from_regs and self.imm_trans_a:
            _fail(self, "imm-trans-a is not allowed when A comes from registers", _WG_RULE)

    def reads(self) -> tuple[Reg, ...]:
        # The accumulator is read too (D = A*B + D) unless scale-d is the constant 0.
        base = super().reads()
        if isinstance(self.scale_d, Imm) and self.scale_d.value == 0:
            return base
        return base + self.d.regs

    def opcode(self) -> str:
        return (f"wgmma.mma_async.sync.aligned.m64n{self.shape_n}k16."
                f"{self.dtype_d}.{self.dtype_a}.{self.dtype_b}")

    def operands(self) -> tuple:
        ops = (self.d, self.a, self.b_desc, self.scale_d, Imm(self.imm_scale_a), Imm(self.imm_scale_b))
        if not self.a_from_regs:
            ops += (Imm(self.imm_trans_a),)
        return ops + (Imm(self.imm_trans_b),)

    @classmethod
    def parse_syntax(cls, c) -> "WgmmaMmaAsync":
        """Irregular: the shape carries N; imm-trans-a is absent when A comes from registers."""
        c.need(("sync",), ".sync")
        c.need(("aligned",), ".aligned")
        shape = next((m for m in c.mods if m.startswith("m")), None)
        mm = _WG_SHAPE.match(shape or "")
        if not mm:
            raise c.err(f"wgmma.mma_async: expected shape .m64nNk16 (f16/bf16), got {shape!r} "
                        "(PTX ISA, wgmma.mma_async shapes)")
        c.mods.remove(shape)
        if len(c.mods) != 3:
            raise c.err("wgmma.mma_async: expected .dtype_d.dtype_a.dtype_b after the shape")
        dd, da, db = c.mods
        c.mods = []
        a = c.reg_or_vec(1, "a 64-bit descriptor register or {4 A registers}")
        n_imm = 3 if isinstance(a, RegVec) else 4
        c.count(4 + n_imm)
        imms = [c.int_imm(4 + k, "an immediate") for k in range(n_imm)]
        if n_imm == 3:
            scale_a, scale_b, trans_a, trans_b = imms[0], imms[1], 0, imms[2]
        else:
            scale_a, scale_b, trans_a, trans_b = imms
        return cls(int(mm.group(1)), dd, da, db, c.vec(0, "the accumulator vector {..}"), a,
                   c.reg(2, "the B descriptor register"), c.val(3, "a predicate or 0/1"),
                   scale_a, scale_b, trans_a, trans_b)

    def typed_registers(self) -> list:
        acc = "acc_f32" if self.dtype_d == "f32" else "acc_f16x2"
        out: list = [(r, acc) for r in self.d]
        out += [(r, "b32") for r in self.a] if isinstance(self.a, RegVec) else [(self.a, "desc")]
        return out + [(self.b_desc, "desc"), (self.scale_d, "pred")]


@dataclass(frozen=True)
class WgmmaCommitGroup(Instruction):
    """`wgmma.commit_group.sync.aligned;` closes the pending wgmma.mma_async ops into a group."""

    mnemonic: ClassVar[str] = "wgmma.commit_group"
    timing_class: ClassVar[str] = Kind.WGMMA_COMMIT
    modifiers: ClassVar = _SYNC_ALIGNED
    examples: ClassVar = ("wgmma.commit_group.sync.aligned;",)


@dataclass(frozen=True)
class WgmmaWaitGroup(Instruction):
    """`wgmma.wait_group.sync.aligned N;` waits until at most N wgmma groups are pending."""

    mnemonic: ClassVar[str] = "wgmma.wait_group"
    timing_class: ClassVar[str] = Kind.WGMMA_WAIT
    modifiers: ClassVar = _SYNC_ALIGNED
    operand_spec: ClassVar = (Opnd("n", INT_CONST),)
    examples: ClassVar = ("wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 1;")
    n: int = 0

    def _check(self) -> None:
        check_group_count(self, "PTX ISA, wgmma.wait_group")
