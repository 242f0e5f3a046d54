"""The effect record: what one issued instruction does, for the timing layer (docs/dev/EXECUTOR_API.md).

The functional executor fills an `Effect` at issue; the timing layer reads only its fields to cost
the instruction (bank wavefronts from `smem_addrs`, L2/HBM traffic from `gmem_ranges`, tensor time
from `wgmma`) and calls `complete()` of an async op at the modelled completion time. Event keys in
`blocked_on` / `fired` are hashable tuples (see the table in EXECUTOR_API.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from isa.ir.kinds import Kind  # noqa: F401  (the timing classes; declared per opcode in isa.ir)
from isa.ir.ops.base import Instruction


@dataclass(frozen=True, slots=True)
class WgmmaInfo:
    """Shape and types of one wgmma.mma_async (m64nNk16 for f16/bf16)."""

    n: int
    dtype_a: str
    dtype_b: str
    dtype_d: str
    a_from_regs: bool
    m: int = 64
    k: int = 16

    @property
    def operand_bytes(self) -> int:
        """Bytes read from shared memory: B (K x N x 2) plus A (M x K x 2) unless A is in registers."""
        return self.k * self.n * 2 + (0 if self.a_from_regs else self.m * self.k * 2)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


@dataclass(slots=True)
class Effect:
    """What one `CTAExecutor.issue()` did (fields that do not apply stay None / 0 / ())."""

    kind: str
    warp: int
    index: int = -1
    instr: Any = None
    count: int = 1
    lanes: int = 0
    blocked_on: tuple | None = None
    resumed: bool = False
    fired: tuple = ()
    # shared memory
    smem_addrs: np.ndarray | None = None
    smem_access_bytes: int = 0
    smem_bytes: int = 0
    smem_range: tuple[int, int] | None = None
    # global memory
    gmem_ranges: tuple = ()
    gmem_bytes: int = 0
    is_write: bool = False
    tile_key: tuple | None = None
    # mbarrier
    mbarrier: int | None = None
    phase: int | None = None
    tx_bytes: int = 0
    # warpgroup / wgmma / bulk groups
    warpgroup: int | None = None
    wgmma: WgmmaInfo | None = None
    group: int | None = None
    complete: Callable[[], tuple] | None = None
    extra: dict = field(default_factory=dict)
    # register-only runs: the compiled ops executed, in order (the timing layer's per-op classes)
    run: list | None = None

    @property
    def text(self) -> str:
        """PTX text of the instruction (for traces; an IR instruction's, frozen, formatted once)."""
        ins = self.instr
        if ins is None:
            return ""
        got = _TEXTS.get(id(ins))
        if got is not None and got[0] is ins:
            return got[1]
        t = getattr(ins, "text", None)
        out = t() if callable(t) else str(ins)
        if isinstance(ins, Instruction):
            if len(_TEXTS) >= 4096:
                _TEXTS.clear()
            _TEXTS[id(ins)] = (ins, out)
        return out

    @property
    def is_async(self) -> bool:
        return self.complete is not None


def alu_effect(kind: str, warp: int, index: int, instr: Any, count: int, lanes: int, resumed: bool,
               run: list) -> Effect:
    """`Effect(kind=, warp=, index=, instr=, count=, lanes=, resumed=, run=)` (every other field its
    default), built positionally: CTAExecutor.issue makes one per register-only run, and keyword
    matching against Effect's 26 fields costs more than the fields (tests/functional/test_executor.py
    checks the equality)."""
    return Effect(kind, warp, index, instr, count, lanes, None, resumed, (), None, 0, 0, None, (), 0, False,
                  None, None, None, 0, None, None, None, None, {}, run)


def rendezvous_effect(kind: str, warp: int, key: tuple, warpgroup: int) -> Effect:
    """`Effect(kind=, warp=, lanes=32, blocked_on=key, warpgroup=)` (every other field its default),
    built positionally: a warp waiting at its warpgroup's rendezvous (ops_sync.collective), three
    of every four warps of each wgmma (tests/functional/test_executor.py checks the equality)."""
    return Effect(kind, warp, -1, None, 1, 32, key, False, (), None, 0, 0, None, (), 0, False,
                  None, None, None, 0, warpgroup, None, None, None, {}, None)


_TEXTS: dict = {}  # id(instruction) -> (instruction, its text): the entry keeps the frozen instruction alive
