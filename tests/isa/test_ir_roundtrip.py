"""Law: parse(to_text(k)) == k, for generated kernels covering every instruction class."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from isa.ir import (
    INSTRUCTION_CLASSES, Guard, Imm, Kernel, LabelDef, Mem, Param, Reg, RegDecl, SharedDecl, SReg, Sym,
    instructions as I, parse, to_text,
)

R32 = [Reg(f"%r{i}") for i in range(8)]
R64 = [Reg(f"%rd{i}") for i in range(4)]
P = [Reg(f"%p{i}") for i in range(4)]
F = [Reg(f"%f{i}") for i in range(8)]
ACC = [Reg(f"%acc{i}") for i in range(128)]
DECLS = (RegDecl("u32", "%r", 8), RegDecl("u64", "%rd", 4), RegDecl("pred", "%p", 4),
         RegDecl("f32", "%f", 8), RegDecl("f32", "%acc", 128), RegDecl("b32", "%x"))
PARAMS = (Param("tmapA", "tmap"), Param("n", "u32"), Param("ptr", "u64"))
SHARED = (SharedDecl("smem", 1024, 4096), SharedDecl("bars", 8, 64))
LABELS = ["L0", "L1", "TOP"]

r32, r64, pred, f32 = (st.sampled_from(x) for x in (R32, R64, P, F))
ints = st.integers(-(2**31), 2**32 - 1)
val32 = st.one_of(r32, ints.map(Imm))
valf = st.one_of(f32, st.floats(allow_nan=False, allow_infinity=False, width=32).map(Imm))
off = st.integers(-64, 4096)
smem_addr = st.one_of(st.builds(Mem, r32, off), st.builds(Mem, st.just(Sym("smem")), off))
mbar = st.one_of(st.builds(Mem, r32, off.map(lambda o: o // 8 * 8)),
                 st.builds(Mem, st.just(Sym("bars")), st.integers(0, 7).map(lambda i: 8 * i)))
guard = st.one_of(st.none(), st.builds(Guard, pred, st.booleans()))


def vec(pool, n):
    return st.integers(0, len(pool) - n).map(lambda i: tuple(pool[i:i + n]))


def wgmma():
    def make(n, dd, da, a_regs, scale_d, sa, sb, ta, tb, d0):
        nd = n // 2 if dd == "f32" else n // 4
        d = tuple(ACC[d0 % (129 - nd): d0 % (129 - nd) + nd])
        a = tuple(R32[:4]) if a_regs else R64[0]
        return I.WgmmaMmaAsync(n, dd, da, da, d, a, R64[1], scale_d, sa, sb, 0 if a_regs else ta, tb)
    return st.builds(make, st.sampled_from(I.WGMMA_N), st.sampled_from(["f32", "f16"]), st.just("f16"),
                     st.booleans(), st.one_of(pred, st.sampled_from([Imm(0), Imm(1)])),
                     st.sampled_from([1, -1]), st.sampled_from([1, -1]), st.sampled_from([0, 1]),
                     st.sampled_from([0, 1]), st.integers(0, 200)) | st.builds(
        lambda n, d0: I.WgmmaMmaAsync(n, "f32", "bf16", "bf16", tuple(ACC[:n // 2]), R64[0], R64[1]),
        st.sampled_from(I.WGMMA_N), st.integers(0, 0))


def tma_load():
    return st.integers(1, 5).flatmap(lambda d: st.builds(
        I.CpAsyncBulkTensorLoad, st.just(d), smem_addr, st.one_of(st.just(Sym("tmapA")), st.just(R64[2])),
        st.tuples(*[val32] * d), mbar))


def tma_store():
    return st.integers(1, 5).flatmap(lambda d: st.builds(
        I.CpAsyncBulkTensorStore, st.just(d), st.just(Sym("tmapA")), st.tuples(*[val32] * d), smem_addr))


def ldst():
    def make(cls, ty, v, i, addr):
        regs = tuple(R32[i:i + v]) if ty != "b64" else tuple(R64[:v])
        data = regs if v > 1 else regs[0]
        return cls(ty, data, addr, v) if cls in (I.LdShared, I.LdGlobal) else cls(ty, addr, data, v)
    sh = st.builds(make, st.sampled_from([I.LdShared, I.StShared]), st.sampled_from(["b32", "u32", "f32", "u8"]),
                   st.sampled_from([1, 2, 4]), st.integers(0, 4), smem_addr)
    gl = st.builds(make, st.sampled_from([I.LdGlobal, I.StGlobal]), st.sampled_from(["b64", "u64"]),
                   st.sampled_from([1, 2]), st.just(0), st.builds(Mem, r64, off))
    return sh | gl


def alu():
    cls = st.sampled_from([I.Add, I.Sub, I.Min, I.Max])
    return st.one_of(
        st.builds(lambda c, d, a, b: c("u32", d, a, b), cls, r32, val32, val32),
        st.builds(lambda c, d, a, b, r: c("f32", d, a, b, rnd=r), st.sampled_from([I.Add, I.Sub]), f32, valf, valf,
                  st.sampled_from([None, "rn", "rz"])),
        st.builds(I.Mul, st.just("u32"), r32, r32, val32, st.sampled_from(["lo", "hi"])),
        st.builds(I.Mul, st.just("u32"), r64, r32, r32, st.just("wide")),
        st.builds(I.Mad, st.just("s32"), r32, r32, val32, val32, st.sampled_from(["lo", "hi"])),
        st.builds(I.Mad, st.just("f32"), f32, f32, f32, valf, rnd=st.sampled_from(I.FLOAT_RND)),
        st.builds(lambda c, d, a, b: c("b32", d, a, b), st.sampled_from([I.Shl, I.Shr, I.And, I.Or, I.Xor]),
                  r32, r32, val32),
        st.builds(I.And, st.just("pred"), pred, pred, pred),
        st.builds(I.Not, st.just("b32"), r32, val32),
        st.builds(I.Setp, st.sampled_from(I.CMP_UNSIGNED), st.just("u32"), pred, r32, val32),
        st.builds(I.Setp, st.sampled_from(I.CMP_FLOAT), st.just("f32"), pred, f32, valf),
        st.builds(I.Selp, st.just("u32"), r32, val32, val32, pred),
        st.builds(I.Mov, st.just("u32"), r32, st.one_of(val32, st.sampled_from([SReg("%tid.x"), SReg("%laneid")]),
                                                      st.just(Sym("smem")))),
        st.builds(I.Mov, st.just("u64"), r64, st.just(SReg("%clock64"))),
        st.builds(I.Cvt, st.just("u64"), st.just("u32"), r64, r32),
        st.builds(I.Cvt, st.just("f32"), st.just("u32"), f32, r32, st.sampled_from(I.FLOAT_RND)),
        st.builds(I.Cvt, st.just("s32"), st.just("f32"), r32, f32, st.sampled_from(I.INT_RND), st.booleans()),
        st.builds(I.Cvt, st.just("f16x2"), st.just("f32"), st.just(Reg("%x")), f32, st.sampled_from(["rn", "rz"]),
                  src2=f32),
    )


def other():
    return st.one_of(
        st.builds(I.ElectSync, pred, st.one_of(st.just(Imm(0xFFFFFFFF)), r32), st.one_of(st.none(), r32)),
        st.builds(I.BarSync, st.sampled_from([Imm(0), Imm(1), R32[0]]), st.sampled_from([None, Imm(128), R32[1]])),
        st.builds(I.Bra, st.sampled_from(LABELS).map(I.Label), st.booleans()),
        st.just(I.Exit()),
        st.builds(I.Setmaxnreg, st.sampled_from(["inc", "dec"]), st.sampled_from(range(24, 257, 8))),
        st.builds(I.LdParam, st.just("u32"), r32, st.just(Mem(Sym("n")))),
        st.sampled_from([1, 2, 4]).flatmap(lambda n: st.builds(I.Ldmatrix, st.just(n), vec(R32, n), smem_addr,
                                                               st.booleans())),
        st.sampled_from([1, 2, 4]).flatmap(lambda n: st.builds(I.Stmatrix, st.just(n), vec(R32, n), smem_addr,
                                                               st.booleans())),
        st.builds(I.FenceProxyAsync, st.sampled_from([None, "shared::cta", "shared::cluster", "global"])),
        st.just(I.FenceMbarrierInit()),
        st.builds(I.MbarrierInit, mbar, st.one_of(r32, st.integers(1, 1024).map(Imm))),
        st.builds(I.MbarrierArrive, mbar, st.one_of(st.none(), r64), st.one_of(st.none(), st.integers(1, 9).map(Imm))),
        st.builds(I.MbarrierArriveExpectTx, mbar, st.one_of(r32, st.integers(0, 2**20 - 1).map(Imm)),
                  st.one_of(st.none(), r64)),
        st.builds(I.MbarrierExpectTx, mbar, st.integers(0, 2**20 - 1).map(Imm)),
        st.builds(I.MbarrierCompleteTx, mbar, st.one_of(r32, st.integers(0, 2**20 - 1).map(Imm))),
        st.builds(I.MbarrierTryWaitParity, pred, mbar, st.one_of(r32, st.sampled_from([Imm(0), Imm(1)])),
                  st.one_of(st.none(), r32, st.integers(0, 10**6).map(Imm))),
        st.builds(I.MbarrierTestWaitParity, pred, mbar, st.one_of(r32, st.sampled_from([Imm(0), Imm(1)]))),
        st.builds(I.MbarrierInval, mbar),
        tma_load(), tma_store(), st.just(I.CpAsyncBulkCommitGroup()),
        st.builds(I.CpAsyncBulkWaitGroup, st.integers(0, 8), st.booleans()),
        st.just(I.WgmmaFence()), st.just(I.WgmmaCommitGroup()), st.builds(I.WgmmaWaitGroup, st.integers(0, 7)),
        wgmma(), declared(),
    )


DECLARED_EXAMPLES = [parse(f".kernel k\n    {t}\n").body[0]
                     for c in INSTRUCTION_CLASSES.values() for t in c.examples]


def declared():
    """The examples every declaration carries (isa.ir.ops): an opcode added without a hand-made
    strategy above is still generated, guarded and round-tripped."""
    return st.sampled_from(DECLARED_EXAMPLES)


def with_guard(instr_st):
    import dataclasses
    return st.builds(lambda x, g: dataclasses.replace(x, guard=g), instr_st, guard)


item = st.one_of(with_guard(alu()), with_guard(other()), with_guard(ldst()),
                 st.sampled_from(LABELS).map(LabelDef))
kernels = st.builds(lambda body: Kernel("k", PARAMS, DECLS, SHARED, tuple(body)), st.lists(item, max_size=25))


@settings(max_examples=300, deadline=None)
@given(kernels)
def test_parse_of_print_is_identity(k):
    assert parse(to_text(k)) == k
    assert parse(to_text(k, abbreviate=False)) == k


@settings(max_examples=200, deadline=None)
@given(with_guard(st.one_of(alu(), other(), ldst())))
def test_instruction_text_round_trips_and_hashes(x):
    k = Kernel("k", PARAMS, DECLS, SHARED, (x,))
    (y,) = parse(to_text(k)).body
    assert y == x and hash(y) == hash(x)
    assert y.text() == x.text()


def test_strategies_cover_every_instruction_class():
    """Coverage by enumeration, not by luck: every declared class has examples, and all of them
    are in declared()'s pool, which the kernel strategy draws from. (The hand-made strategies
    once missed 'Shl' in 1500 random draws.) What the hand-made strategies draw is declared."""
    classes = set(INSTRUCTION_CLASSES.values())
    assert {type(x) for x in DECLARED_EXAMPLES} == classes
    drawn = set()

    @settings(max_examples=200, deadline=None, derandomize=True)
    @given(st.one_of(alu(), other(), ldst()))
    def collect(x):
        drawn.add(type(x))
    collect()
    assert drawn <= classes


def test_hand_made_kernels_round_trip():
    texts = [
        ".kernel empty\n",
        ".kernel k\n.reg .u32 %a, %b\n    add.u32 %a, %b, -5;\n    exit;\n",
        ".kernel k\n.reg .f32 %f<2>\n    mov.f32 %f0, 0f3F800000;\n    add.rn.f32 %f1, %f0, 1.5e-3;\n",
        ".kernel k;\n.reg .u32 %r<4>;\n.shared .align 16 .b32 s[4];\n    st.shared.v4.b32 [s+-16], {%r0, ..., %r3};\n",
        ".kernel k\n.reg .u32 %r<4>\n    ld.shared::cta.v2.u32 {%r0,\n        %r1}, [%r2 + 8];\n",
        ".kernel k\n.reg .f32 %acc<4>\n.reg .b64 %d<2>\n.reg .b32 %a<4>\n"
        "    wgmma.fence.sync.aligned;\n"
        "    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%acc0..%acc3}, {%a0..%a3}, %d1, 0, -1, 1, 1;\n",
        "/* block */ .kernel k\n.reg .pred %p\n@!%p exit; // c\n",
    ]
    for t in texts:
        k = parse(t)
        assert parse(to_text(k)) == k, t
