"""Named protocol and race errors of the functional machine.

Each error is a `isa.errors.HopsimError` that carries where it happened, so the CLI can print one
line naming the warp, the instruction (index in `Kernel.body` + PTX text), the mbarrier (shared
address) and the phase:

    StageOverwrite: warp 0 (CTA 0) at #17 `cp.async.bulk.tensor.2d...`: TMA write into
    smem [0x0400, 0x0800) still read by wgmma group 3 of warpgroup 0

The classes live here (not in `checks.py`) so that `mbarrier.py` can raise them without importing
the checker. `checks.py` re-exports them.
"""

from __future__ import annotations

from isa.errors import HopsimError


class ProtocolError(HopsimError):
    """A synchronisation-protocol or race violation found while executing a kernel.

    Fields (any may be None when it does not apply): `warp` (CTA-wide warp index), `cta`
    (linear CTA index), `index` (instruction index in `Kernel.body`), `line` (its source line when
    the kernel was parsed from text), `text` (its PTX text),
    `barrier` (shared byte address of the mbarrier), `phase` (phase number, 0-based).
    """

    def __init__(self, detail: str, *, warp=None, cta=None, index=None, text=None, barrier=None, phase=None,
                 line=None):
        self.detail = detail
        self.line = line
        self.warp = warp
        self.cta = cta
        self.index = index
        self.text = text
        self.barrier = barrier
        self.phase = phase
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.warp is not None:
            where.append(f"warp {self.warp}" + (f" (CTA {self.cta})" if self.cta is not None else ""))
        if self.index is not None:
            where.append(f"at #{self.index}" + (f" (line {self.line})" if self.line is not None else "")
                         + (f" `{self.text}`" if self.text else ""))
        loc = " ".join(where)
        bar = ""
        if self.barrier is not None:
            bar = f" [mbarrier smem 0x{self.barrier:x}" + (f", phase {self.phase}" if self.phase is not None else "") + "]"
        return f"{type(self).__name__}: {loc + ': ' if loc else ''}{self.detail}{bar}"

    def located(self, *, warp=None, cta=None, index=None, text=None, barrier=None, phase=None, line=None):
        """Fill in location fields that are still None; returns self (re-formats the message)."""
        for k, v in dict(warp=warp, cta=cta, index=index, text=text, barrier=barrier, phase=phase,
                         line=line).items():
            if getattr(self, k) is None and v is not None:
                setattr(self, k, v)
        self.args = (self._format(),)
        return self


class Deadlock(ProtocolError):
    """Every live warp is blocked and no asynchronous operation is pending that could wake one.

    `waiters` lists (warp, index, text, what) for each blocked warp."""

    def __init__(self, detail: str, *, waiters=(), **kw):
        self.waiters = tuple(waiters)
        super().__init__(detail, **kw)


class TxCountOutOfRange(ProtocolError):
    """An expect-tx / complete-tx moved the mbarrier tx-count out of [-(2^20-1), 2^20-1] (PTX ISA
    §9.7.13.15.1)."""


class ArrivalCountOutOfRange(ProtocolError):
    """mbarrier.init count outside [1, 2^20-1], or more arrivals than pending in a phase
    (PTX ISA §9.7.13.15.1)."""


class BadParity(ProtocolError):
    """A wait names a phase that is neither the current nor the immediately preceding phase
    (PTX ISA §9.7.13.15.16: only those two are valid), or a parity other than 0/1."""


class StageOverwrite(ProtocolError):
    """A TMA (or other) write into shared bytes that an in-flight wgmma group still reads: the stage
    was reused before the wgmma.wait_group that covers the group."""


class ReadBeforeLand(ProtocolError):
    """A shared-memory read (ld.shared, ldmatrix, wgmma operand fetch) of bytes that an in-flight TMA
    load will still write: the reader did not wait for the mbarrier phase of that load."""


class AccumulatorTouched(ProtocolError):
    """wgmma accumulator (or A-fragment) registers read or written between wgmma.mma_async and the
    wgmma.wait_group that covers it (PTX ISA §9.7.15.6: undefined)."""


class WgmmaWithoutFence(ProtocolError):
    """wgmma.mma_async with no wgmma.fence since the warpgroup last wrote its accumulator/A registers
    by an ordinary instruction (or before its first wgmma) (PTX ISA §9.7.15.6.1)."""


class DivergentBranch(ProtocolError):
    """A `bra` whose guard differs between the active lanes of a warp: not modelled (IR_SPEC)."""


class MemberMaskError(ProtocolError):
    """A warp collective (shfl/vote/redux.sync) whose executing lanes differ from its membermask,
    or a shfl.sync that sources a lane outside it (PTX ISA: undefined; hopsim refuses)."""


class DivergentBarrier(ProtocolError):
    """A bar.sync/bar.arrive executed by only some of a warp's active lanes (PTX ISA: a barrier
    instruction must be executed by all threads of a warp, .aligned); never a hang."""


class BarrierCountMismatch(ProtocolError):
    """Threads arriving at one named barrier in one phase with different thread counts, or more
    arrivals than the count (PTX ISA, bar: all participants give the same count)."""


class MbarrierNotInitialised(ProtocolError):
    """An mbarrier operation on shared bytes where no mbarrier.init placed a live barrier."""


class IllegalInstruction(ProtocolError):
    """An instruction the machine cannot execute as given (misaligned address, out-of-range shared
    access, unknown tensor map, unsupported form)."""


__all__ = [
    "ProtocolError",
    "Deadlock",
    "TxCountOutOfRange",
    "ArrivalCountOutOfRange",
    "BadParity",
    "StageOverwrite",
    "ReadBeforeLand",
    "AccumulatorTouched",
    "WgmmaWithoutFence",
    "DivergentBranch",
    "MemberMaskError",
    "DivergentBarrier",
    "BarrierCountMismatch",
    "MbarrierNotInitialised",
    "IllegalInstruction",
]
