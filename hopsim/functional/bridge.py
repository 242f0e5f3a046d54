"""The executor's view of the layouts modules (TMA box copy, tensor maps, WGMMA operand fetch).

The layouts helper owns `hopsim.functional.tma`, `hopsim.functional.layouts`, `isa.tensormap`,
`isa.descriptor`; this module adapts their API to the few calls the executor makes, so the executor
does not depend on their exact signatures:

    box_bytes(tmap) -> int                          bytes one box writes to shared memory
    global_ranges(gmem, tmap, coords) -> ((addr, nbytes), ...)   global rows the box touches
    tma_load(gmem, tmap, coords, smem, dst)         box -> smem[dst:] (swizzled, OOB filled)
    tma_store(gmem, tmap, coords, smem, src)        smem[src:] -> global (in-bounds elements)
    operand_chunks(desc, which, rows, dtype, trans) -> sorted unique 16-B chunk indices read
    fetch_operand(smem, desc, which, rows, dtype, trans) -> uint16[rows, 16] element bits
        which "A": rows = M = 64 (A[m, k]); which "B": rows = N (B^T[n, k])
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from hopsim.functional.errors import IllegalInstruction


def _missing(what: str):
    raise IllegalInstruction(f"{what}: the layouts module it needs is not available yet")
