"""The two variants of the GEMM family, each one screen: setup, the roles, the epilogue.

    single  setup; warp 0 fills the pipeline; mainloop (with warp 0's refill); epilogue
    ws      setup; warpgroup 0 -> producer (setmaxnreg.dec 40, warp 0 loads every k-tile);
            warpgroups 1.. -> consumers (setmaxnreg.inc 240 with one, 232 with two) ->
            mainloop on rows (cw*MI + mi)*64; epilogue
"""

from __future__ import annotations

from isa.ir import Guard, Kernel
from kernels.gemm import consumer, epilogue, producer, setup
from kernels.gemm.emit import Emitter
from kernels.gemm.plan import Plan
from kernels.params import GemmParams

#: setmaxnreg.inc of a consumer warpgroup: 240 with one consumer, 232 with two (the .cu's values;
#: 40 + 2*232 = 504 <= 512 registers per thread slot of the 3 warpgroups, CUTLASS's split)
CONSUMER_REGS = {1: 240, 2: 232}


def single(em: Emitter) -> None:
    """One warpgroup loads (warp 0, one lane issues) and computes."""
    b = em.b
    issuer = setup.prologue(em)
    producer.fill_pipeline(em, issuer)
    consumer.mainloop(em, None, issuer=issuer)
    epilogue.epilogue(em, None)
    b.place(b.label("DONE"))


def warp_specialized(em: Emitter) -> None:
    """A producer warpgroup and NC consumer warpgroups."""
    b = em.b
    done, consumer_wg = b.label("DONE"), b.label("CONSUMER")
    issuer = setup.prologue(em)
    wg, pc = em.u32("wg"), em.pred("consumer")
    b.shr("u32", wg, em.u32("tid"), 7)
    b.setp("ne", "u32", pc, wg, 0)
    b.bra(consumer_wg, guard=Guard(pc))
    producer.producer_warpgroup(em, issuer, done)
    b.place(consumer_wg)
    b.setmaxnreg("inc", CONSUMER_REGS[em.plan.NC])
    cw = em.u32("cw")
    b.sub("u32", cw, wg, 1)
    consumer.mainloop(em, cw)
    epilogue.epilogue(em, cw)
    b.place(done)


def build_kernel(params: GemmParams, check: bool = True) -> Kernel:
    """The IR kernel of `params` (verified by isa.ir.verify unless check=False)."""
    em = Emitter(Plan(params))
    setup.declare(em)
    em.declare_acc()
    (warp_specialized if em.plan.WS else single)(em)
    em.b.exit()
    return em.b.build(check=check)
