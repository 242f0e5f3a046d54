"""IR text shared by the microbenchmark twins that stream TMA boxes (tma.py, wgmma.py,
smemport.py, mbarrier.py): the TMA load opcode, the mbarrier try_wait spin (the CUDA kernels'
`mb_wait` / sm90 `mbar_try_wait`, in the register names and forms each twin uses) and the
L2-warming loop that loads every box of a tensor map once before the timed part."""

from __future__ import annotations

LOAD = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
"""The 2-D TMA tile load (shared::cluster <- global, completes on an mbarrier's tx count)."""


def spin_wait(bar: str, parity: str, tag: str, pred: str, *, selp: tuple | None = None,
              clock: tuple | None = None, limit: int = 1 << 31) -> str:
    """`W{tag}: try_wait.parity {pred}, [bar], parity; ... @done bra D{tag}; bra W{tag}; D{tag}:`.

    selp = (reg, pred2): the result goes through `selp`/`setp.ne` into pred2 first (as the CUDA
    `mb_wait` compiles); clock = (t0, t1, dt, over): t0 = clock64 before the loop and, after each
    failed try, `over = clock64 - t0 > limit` leaves the loop (mb_wait's spin bound)."""
    out = f"    mov.u64 {clock[0]}, %clock64;\n" if clock else ""
    out += f"W{tag}:\n    mbarrier.try_wait.parity.shared::cta.b64 {pred}, [{bar}], {parity};\n"
    done = pred
    if selp:
        out += f"    selp.u32 {selp[0]}, 1, 0, {pred};\n    setp.ne.u32 {selp[1]}, {selp[0]}, 0;\n"
        done = selp[1]
    out += f"@{done} bra D{tag};\n"
    if clock:
        t0, t1, dt, over = clock
        out += (f"    mov.u64 {t1}, %clock64;\n    sub.s64 {dt}, {t1}, {t0};\n    setp.gt.s64 {over}, {dt}, {limit};\n"
                f"@{over} bra D{tag};\n")
    return out + f"    bra W{tag};\nD{tag}:\n"


def warm_loop(guard: str, bar: str, nbytes: int, dst: str, row: str, counter: str, step: int, bound: int,
              parity: str, wait: str, before_load: str = "") -> str:
    """`PRE:` loop loading one box per trip (guarded by `guard`) into `dst` at tensor row `row`,
    waiting on `bar` (the `wait` text) and flipping `parity`; `counter` += step while < bound
    (`before_load`: lines computing `row` or `dst` from the counter)."""
    return (f"PRE:\n{guard} mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar}], {nbytes};\n{before_load}"
            f"{guard} {LOAD} [{dst}], [map, {{0, {row}}}], [{bar}];\n{wait}    xor.b32 {parity}, {parity}, 1;\n"
            f"    add.u32 {counter}, {counter}, {step};\n    setp.lt.u32 %p1, {counter}, {bound};\n@%p1 bra PRE;\n")
