"""KernelBuilder: what it builds equals what parsing its printed text gives."""

from __future__ import annotations

import pytest

from isa.ir import Guard, IRError, KernelBuilder, Mem, SReg, VerifyError, instructions as I, parse, to_text


def test_builder_round_trip_and_auto_registers():
    b = KernelBuilder("t")
    x = b.param("x_ptr", "u64")
    bar = b.shared("bar", 8, 8)
    tid, i = b.reg("u32"), b.reg("u32")
    rd = b.reg("u64")
    acc = b.regs("f32", 8, "%acc")
    b.mov("u32", tid, SReg("%tid.x"))
    p = b.reg("pred")
    b.elect_sync(p)
    with b.guarded(p):
        b.mbarrier_init(Mem(bar), 1)
    b.bar_sync()
    with b.loop(i, stop=4) as top:
        b.add("u32", tid, tid, 1)
    b.wait_parity(Mem(bar), 0)
    b.ld_param("u64", rd, Mem(x))
    b.st_global("f32", Mem(rd), tuple(acc[:2]))
    b.exit()
    k = b.build()
    assert parse(to_text(k)) == k
    assert (tid.name, i.name, rd.name, p.name) == ("%r0", "%r1", "%rd0", "%p0")
    assert [d.text() for d in k.regs] == [".reg .u32 %r<2>", ".reg .u64 %rd<1>", ".reg .pred %p<3>",
                                          ".reg .f32 %acc<8>"]
    assert k.body[2].guard == Guard(p)                       # emitted inside guarded()
    assert top.name in k.labels()
    bra = [x for _, x in k.instructions() if isinstance(x, I.Bra)]
    assert [x.guard.negate for x in bra] == [False, True]     # loop back-edge, wait retry


def test_one_method_per_instruction_class():
    from isa.ir.builder import _method_name
    for cls in I.INSTRUCTION_CLASSES.values():
        assert callable(getattr(KernelBuilder, _method_name(cls.__name__)))
    assert _method_name("WgmmaMmaAsync") == "wgmma_mma_async" and _method_name("And") == "and_"


def test_build_checks_the_kernel():
    b = KernelBuilder("bad")
    r = b.reg("u32")
    f = b.reg("f32")
    b.add("u32", r, f, 1)
    b.exit()
    with pytest.raises(VerifyError, match="operand-type"):
        b.build()
    assert b.build(check=False).name == "bad"


def test_unplaced_label_and_illegal_instruction():
    b = KernelBuilder("k")
    b.bra(b.label("NEVER"))
    with pytest.raises(IRError, match="never placed"):
        b.build()
    with pytest.raises(IRError, match="multiple of 8"):
        KernelBuilder("k").setmaxnreg("inc", 100)


def test_reg_pools_fix_declaration_order_and_prefixes():
    b = KernelBuilder("t")
    b.reg_pools(("u32", "%r"), ("u64", "%rd"), ("pred", "%p"), ("b32", "%h"))
    p = b.reg("pred")              # allocated first, declared third
    h = b.reg("b32")
    r = b.reg("u32")
    b.mov("u32", r, SReg("%tid.x"))
    b.setp("eq", "u32", p, r, 0)
    b.mov("b32", h, r)
    b.exit()
    k = b.build()
    assert (p.name, h.name, r.name) == ("%p0", "%h0", "%r0")
    # the declared order, and no declaration for the empty u64 pool
    assert [(d.type, d.name, d.count) for d in k.regs] == [("u32", "%r", 1), ("pred", "%p", 1), ("b32", "%h", 1)]
    assert parse(to_text(k)) == k


def test_reg_pools_refused_after_allocation_or_with_a_bad_prefix():
    b = KernelBuilder("t")
    b.reg("u32")
    with pytest.raises(IRError, match="already allocated"):
        b.reg_pools(("u32", "%q"))
    with pytest.raises(IRError, match="prefix"):
        b.reg_pools(("u64", "rd"))
