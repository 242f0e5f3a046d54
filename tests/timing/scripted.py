"""A scripted stand-in for `CTAExecutor` (same issue()/Effect/complete() contract,
docs/dev/EXECUTOR_API.md) so the timing engine can be tested without the IR.

Script: per warp a list of ops
    ("alu", n)                      n ALU instructions
    ("tma", nbytes, tile, key, need) TMA load; `key` fires after `need` completions
    ("store", nbytes, tile, key)    TMA store; `key` fires at completion
    ("wgmma", n, key, need)         one m64nNk16 wgmma; `key` fires after `need` completions
    ("arrive", key, need)           `key` fires after `need` arrivals
    ("wait", key)                   block until `key` fired
    ("spin", key)                   test until `key` fired: one test instruction per issue, not
                                    blocking (a spin loop: its issues depend on the timing); with
                                    no clock bound (the zero-time tile-plan capture) it blocks
    ("fire_wait", k1, k2)           fire k1 and block on k2 in the same issue
    ("lds", wavefronts, ideal)      ld.shared costing that many wavefronts
    ("exit",)
"""

from __future__ import annotations

from types import SimpleNamespace

from hopsim.functional.effect import Effect, Kind, WgmmaInfo
from hopsim.functional.errors import Deadlock

KERNEL = SimpleNamespace(name="scripted", static_smem_bytes=0, regs=())
BIG_SMEM_KERNEL = SimpleNamespace(name="scripted", static_smem_bytes=200 * 1024, regs=())  # 1 CTA/SM


class ScriptedExecutor:
    def __init__(self, scripts, cta=0, shared=None):
        self.scripts = scripts
        self.num_warps = len(scripts)
        self.cta_linear = cta
        self.pc = [0] * self.num_warps
        self.left = [None] * self.num_warps  # remaining ALU count of the current op
        self.counts = {}
        self.fired_keys = set()
        self.log = shared if shared is not None else []
        self.now = None  # the SM clock (bind_clock), read by nothing but "spin"

    def bind_clock(self, now) -> None:
        self.now = now

    def _count(self, key, need):
        self.counts[key] = self.counts.get(key, 0) + 1
        if self.counts[key] == need:
            self.fired_keys.add(key)
            return (key,)
        return ()

    def issue(self, w, batch=1):
        op = self.scripts[w][self.pc[w]]
        k = op[0]
        if k == "alu":
            left = self.left[w] if self.left[w] is not None else op[1]
            n = min(left, batch)
            left -= n
            if left == 0:
                self.left[w] = None
                self.pc[w] += 1
            else:
                self.left[w] = left
            return Effect(kind=Kind.ALU, warp=w, count=n)
        if k == "fire_wait":  # like the 4th warp of a collective wait_group: release others, then block
            _, fire, wait = op
            fired = ()
            if fire not in self.fired_keys:
                self.fired_keys.add(fire)
                fired = (fire,)
            if wait not in self.fired_keys:
                return Effect(kind=Kind.WGMMA_WAIT, warp=w, count=0, blocked_on=wait, fired=fired)
            self.pc[w] += 1
            return Effect(kind=Kind.WGMMA_WAIT, warp=w, fired=fired)
        if k == "spin":
            if op[1] not in self.fired_keys:
                if self.now is None:
                    return Effect(kind=Kind.MBAR_WAIT, warp=w, count=0, blocked_on=op[1])
                return Effect(kind=Kind.MBAR_TEST, warp=w)  # not yet: the warp tests again
            self.pc[w] += 1
            return Effect(kind=Kind.MBAR_TEST, warp=w)
        if k == "wait":
            if op[1] not in self.fired_keys:
                return Effect(kind=Kind.MBAR_WAIT, warp=w, count=0, blocked_on=op[1])
            self.pc[w] += 1
            return Effect(kind=Kind.MBAR_WAIT, warp=w)
        self.pc[w] += 1
        if k == "tma":
            _, nbytes, tile, key, need = op
            return Effect(kind=Kind.TMA_LOAD, warp=w, gmem_bytes=nbytes, tile_key=tile, tx_bytes=nbytes,
                          complete=lambda: (self.log.append(("tma", w, tile)), self._count(key, need))[1])
        if k == "store":
            _, nbytes, tile, key = op
            return Effect(kind=Kind.TMA_STORE, warp=w, gmem_bytes=nbytes, tile_key=tile, is_write=True,
                          complete=lambda: self._count(key, 1))
        if k == "wgmma":
            _, n, key, need = op
            return Effect(kind=Kind.WGMMA, warp=w, warpgroup=w // 4,
                          wgmma=WgmmaInfo(n=n, dtype_a="f16", dtype_b="f16", dtype_d="f32", a_from_regs=False),
                          complete=lambda: self._count(key, need))
        if k == "arrive":
            return Effect(kind=Kind.MBAR_ARRIVE, warp=w, fired=self._count(op[1], op[2]))
        if k == "lds":
            return Effect(kind=Kind.LD_SHARED, warp=w, lanes=32, smem_access_bytes=4, extra={"wf": op[1:]})
        if k == "exit":
            return Effect(kind=Kind.EXIT, warp=w)
        raise ValueError(op)

    def describe(self, key):
        return repr(key)

    def deadlock_error(self):
        waiting = [(w, self.scripts[w][self.pc[w]]) for w in range(self.num_warps)
                   if self.pc[w] < len(self.scripts[w]) and self.scripts[w][self.pc[w]][0] == "wait"]
        return Deadlock(f"scripted deadlock: {waiting}", waiters=waiting, warp=waiting[0][0] if waiting else None,
                        cta=self.cta_linear)


def scripted_wavefronts(eff, c):
    return eff.extra["wf"]
