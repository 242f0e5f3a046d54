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


class Kind:
    """Values of `Effect.kind` (plain strings, so they print well in traces)."""

    ALU = "alu"                 # register-only: mov/add/.../setp/selp/cvt/elect.sync/ld.param/bra
    LD_SHARED = "ld_shared"
    ST_SHARED = "st_shared"
    LDMATRIX = "ldmatrix"
    STMATRIX = "stmatrix"
    LD_GLOBAL = "ld_global"
    ST_GLOBAL = "st_global"
    MBAR_INIT = "mbar_init"
    MBAR_ARRIVE = "mbar_arrive"          # arrive and arrive.expect_tx
    MBAR_EXPECT_TX = "mbar_expect_tx"
    MBAR_COMPLETE_TX = "mbar_complete_tx"
    MBAR_WAIT = "mbar_wait"              # try_wait.parity (may block)
    MBAR_TEST = "mbar_test"              # test_wait.parity (never blocks)
    MBAR_INVAL = "mbar_inval"
    BAR_SYNC = "bar_sync"
    FENCE = "fence"                      # fence.proxy.async, fence.mbarrier_init
    TMA_LOAD = "tma_load"
    TMA_STORE = "tma_store"
    BULK_COMMIT = "bulk_commit"
    BULK_WAIT = "bulk_wait"
    WGMMA_FENCE = "wgmma_fence"
    WGMMA = "wgmma"
    WGMMA_COMMIT = "wgmma_commit"
    WGMMA_WAIT = "wgmma_wait"
    SETMAXNREG = "setmaxnreg"
    EXIT = "exit"

    ASYNC = frozenset({TMA_LOAD, TMA_STORE, WGMMA})
    COLLECTIVE = frozenset({WGMMA_FENCE, WGMMA, WGMMA_COMMIT, WGMMA_WAIT, SETMAXNREG})


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

    @property
    def text(self) -> str:
        """PTX text of the instruction (for traces)."""
        if self.instr is None:
            return ""
        t = getattr(self.instr, "text", None)
        return t() if callable(t) else str(self.instr)

    @property
    def is_async(self) -> bool:
        return self.complete is not None
