"""The timing classes of the hopsim IR (`Kind`): what kind of work an instruction is for the timing
model (ALU, shared/global memory, mbarrier, TMA, wgmma, ...).

The class is data on each instruction declaration (`Instruction.timing_class`), so adding an
opcode names its timing class where it is declared; hopsim.functional stamps it on the compiled op
and on the `Effect` record, and hopsim.timing dispatches on it.
"""

from __future__ import annotations

__all__ = ["Kind"]


class Kind:
    """The timing classes: values of `Effect.kind` (plain strings, so they print well in traces).

    Every instruction declaration names its class (`Instruction.timing_class`); the functional
    layer stamps it on each compiled op and the timing layer dispatches on it. The per-opcode
    cost inside a class is the timing layer's business."""

    ALU = "alu"                 # register-only: mov/add/.../fma/setp/selp/cvt/elect.sync/vote/redux.sync/ld.param/bra/fences
    MUFU = "mufu"               # register-only on the special-function unit: ex2/rcp (.approx)
    SHFL = "shfl"               # register-only through the warp shuffle unit: shfl.sync
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
    BAR_ARRIVE = "bar_arrive"            # bar.arrive: counts toward a named barrier, never waits
    FENCE = "fence"                      # fence.proxy.async, fence.mbarrier_init
    TMA_LOAD = "tma_load"
    TMA_STORE = "tma_store"
    BULK_COMMIT = "bulk_commit"
    BULK_WAIT = "bulk_wait"
    CP_ASYNC = "cp_async"                # cp.async global -> shared (non-bulk, per thread)
    CP_ASYNC_COMMIT = "cp_async_commit"
    CP_ASYNC_WAIT = "cp_async_wait"      # cp.async.wait_group / wait_all (may block)
    WGMMA_FENCE = "wgmma_fence"
    WGMMA = "wgmma"
    WGMMA_COMMIT = "wgmma_commit"
    WGMMA_WAIT = "wgmma_wait"
    SETMAXNREG = "setmaxnreg"
    EXIT = "exit"

    ASYNC = frozenset({TMA_LOAD, TMA_STORE, WGMMA})
    REGISTER = frozenset({ALU, MUFU, SHFL})  # register-only classes: their fn returns None or a branch target
    COLLECTIVE = frozenset({WGMMA_FENCE, WGMMA, WGMMA_COMMIT, WGMMA_WAIT, SETMAXNREG})
