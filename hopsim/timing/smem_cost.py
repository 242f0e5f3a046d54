"""Cost of a shared-memory warp access in wavefronts, from the functional bank model.

Maps an `Effect` (ld/st.shared, ldmatrix, stmatrix, cp.async's shared write) to the op name of `hopsim.functional.banks`
and its per-lane address array, and returns (wavefronts, ideal wavefronts) for the smem port.
The effect lists the addresses of the executing lanes only; when fewer than 32 lanes execute,
they are placed in the first lanes (the lane positions of inactive lanes are not in the record;
exact for full warps, which is what the kernels use). Results are cached by address pattern:
a kernel's loop re-issues the same few patterns. `ideal_wavefronts`: the fallback without a bank
model (no conflicts).
"""

from __future__ import annotations

import numpy as np

from hopsim.functional import banks
from hopsim.functional.effect import Kind

_WIDTH = {1: "u8", 2: "u16", 4: "b32", 8: "v2.b32", 16: "v4.b32"}
_CACHE: dict = {}
_CACHE_MAX = 65536


def op_name(eff) -> str:
    k = eff.kind
    if k in (Kind.LD_SHARED, Kind.ST_SHARED, Kind.CP_ASYNC):  # cp.async: its smem write, as st.shared
        width = eff.smem_access_bytes
        if width not in _WIDTH:
            width = 16 if width > 16 else 4
        return f"{'ld' if k == Kind.LD_SHARED else 'st'}.shared.{_WIDTH[width]}"
    instr = eff.instr
    num = int(getattr(instr, "num", 0) or 0)
    if not num and eff.smem_addrs is not None:
        num = max(1, min(4, len(eff.smem_addrs) // 8))
    trans = ".trans" if getattr(instr, "trans", False) else ""
    return f"{'ldmatrix' if k == Kind.LDMATRIX else 'stmatrix'}.x{num}{trans}"


def wavefronts_of(eff, _consts=None) -> tuple[int, int]:
    """(wavefronts, ideal wavefronts) of one warp shared-memory instruction."""
    addrs = eff.smem_addrs
    if addrs is None or len(addrs) == 0:
        return 1, 1
    name = op_name(eff)
    a = np.asarray(addrs, dtype=np.int64)
    key = (name, a.tobytes())
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    lanes = np.full(32, -1, dtype=np.int64)
    lanes[: min(32, a.size)] = a[:32]
    wf, conflicts = banks.wavefronts_batch(name, lanes[None, :], validate=False)
    res = (int(wf[0]), int(wf[0] - conflicts[0]))
    if len(_CACHE) < _CACHE_MAX:
        _CACHE[key] = res
    return res


def ideal_wavefronts(eff, c) -> tuple[int, int]:
    """Fallback bank model (no conflicts): ceil(bytes / 128) wavefronts."""
    nbytes = max(1, eff.lanes) * max(1, eff.smem_access_bytes)
    w = max(1, -(-nbytes // (c.banks * c.bank_bytes)))
    return w, w
