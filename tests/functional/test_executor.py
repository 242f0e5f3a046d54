"""The executor: instruction semantics equal numpy, Effects describe what happened, blocking and
events follow docs/dev/EXECUTOR_API.md."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional.effect import Effect, Kind, alu_effect, rendezvous_effect
from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory

from _func_helpers import kernel, run

HEAD = """
.kernel t
.param .u64 X, Y, OUT
.shared .align 1024 .b8 smem[8192]
.reg .u32 %r<16>
.reg .s32 %s<4>
.reg .u64 %rd<8>
.reg .f32 %f<8>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    cvt.u64.u32 %rd0, %r0;
    shl.b64 %rd0, %rd0, 2;
    ld.param.u64 %rd1, [X];
    add.u64 %rd1, %rd1, %rd0;
    ld.param.u64 %rd2, [Y];
    add.u64 %rd2, %rd2, %rd0;
    ld.param.u64 %rd3, [OUT];
    add.u64 %rd3, %rd3, %rd0;
    ld.global.u32 %r1, [%rd1];
    ld.global.u32 %r2, [%rd2];
"""


def _alu(body: str, x, y, dtype=np.uint32):
    g = GlobalMemory()
    ax, ay = g.alloc("X", x), g.alloc("Y", y)
    ao = g.alloc("OUT", 4 * len(x))
    run(HEAD + body + "\n    st.global.u32 [%rd3], %r3;\n    exit;\n", block=len(x), gmem=g,
        params={"X": ax, "Y": ay, "OUT": ao})
    return g.view("OUT", dtype)


U = np.uint32


@pytest.fixture
def xy(rng):
    x = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(U)
    y = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(U)
    y[:4] = [0, 1, 31, 32]
    return x, y


@pytest.mark.parametrize("op,ref", [
    ("add.u32 %r3, %r1, %r2;", lambda x, y: x + y),
    ("sub.u32 %r3, %r1, %r2;", lambda x, y: x - y),
    ("mul.lo.u32 %r3, %r1, %r2;", lambda x, y: x * y),
    ("mul.hi.u32 %r3, %r1, %r2;", lambda x, y: ((x.astype(np.uint64) * y) >> 32).astype(U)),
    ("mad.lo.u32 %r3, %r1, %r2, %r1;", lambda x, y: x * y + x),
    ("and.b32 %r3, %r1, %r2;", lambda x, y: x & y),
    ("or.b32 %r3, %r1, %r2;", lambda x, y: x | y),
    ("xor.b32 %r3, %r1, %r2;", lambda x, y: x ^ y),
    ("min.u32 %r3, %r1, %r2;", np.minimum),
    ("max.s32 %r3, %r1, %r2;", lambda x, y: np.maximum(x.view(np.int32), y.view(np.int32)).view(U)),
    ("and.b32 %r4, %r2, 63;\n    shl.b32 %r3, %r1, %r4;",
     lambda x, y: np.where((y & 63) >= 32, 0, x.astype(np.uint64) << (y & 63) % 64).astype(U)),
    ("and.b32 %r4, %r2, 63;\n    shr.u32 %r3, %r1, %r4;", lambda x, y: np.where((y & 63) >= 32, 0, x >> ((y & 63) % 32)).astype(U)),
    ("and.b32 %r4, %r2, 63;\n    shr.s32 %r3, %r1, %r4;",
     lambda x, y: (x.view(np.int32).astype(np.int64) >> np.minimum(y & 63, 63)).astype(np.int32).view(U)),
    ("setp.lo.u32 %p0, %r1, %r2;\n    selp.u32 %r3, 7, 9, %p0;", lambda x, y: np.where(x < y, 7, 9).astype(U)),
    ("setp.lt.s32 %p0, %r1, %r2;\n    selp.u32 %r3, 7, 9, %p0;",
     lambda x, y: np.where(x.view(np.int32) < y.view(np.int32), 7, 9).astype(U)),
    ("not.b32 %r3, %r1;", lambda x, y: ~x),
])
def test_integer_alu_equals_numpy(op, ref, xy):
    x, y = xy
    got = _alu(op, x, y)
    assert np.array_equal(got, ref(x, y).astype(U))


def test_float_alu_equals_numpy(rng):
    x = rng.standard_normal(64).astype(np.float32)
    y = rng.standard_normal(64).astype(np.float32)
    body = """
    mov.b32 %f1, %r1;
    mov.b32 %f2, %r2;
    mul.f32 %f3, %f1, %f2;
    add.f32 %f3, %f3, %f1;
    mov.b32 %r3, %f3;"""
    got = _alu(body, x.view(U), y.view(U), np.float32)
    assert np.array_equal(got, (x * y + x).astype(np.float32))


def test_mul_wide_and_cvt(xy):
    x, y = xy
    body = """
    mul.wide.u32 %rd4, %r1, %r2;
    shr.u64 %rd4, %rd4, 16;
    cvt.u32.u64 %r3, %rd4;"""
    got = _alu(body, x, y)
    assert np.array_equal(got, ((x.astype(np.uint64) * y) >> 16).astype(U))


def test_cvt_f16x2_packs_and_rounds(rng):
    x = rng.standard_normal(64).astype(np.float32)
    y = rng.standard_normal(64).astype(np.float32)
    body = """
    mov.b32 %f1, %r1;
    mov.b32 %f2, %r2;
    cvt.rn.f16x2.f32 %r3, %f1, %f2;"""
    got = _alu(body, x.view(U), y.view(U))
    lo = (got & 0xFFFF).astype(np.uint16).view(np.float16)
    hi = (got >> 16).astype(np.uint16).view(np.float16)
    assert np.array_equal(hi, x.astype(np.float16)) and np.array_equal(lo, y.astype(np.float16))


def test_guard_masks_lanes(xy):
    x, y = xy
    body = """
    mov.u32 %r3, 5;
    setp.lt.u32 %p1, %r0, 10;
@%p1 mov.u32 %r3, %r0;"""
    got = _alu(body, x, y)
    assert np.array_equal(got, np.where(np.arange(64) < 10, np.arange(64), 5))


def test_elect_sync_elects_lowest_member(xy):
    x, y = xy
    body = """
    elect.sync %r4|%p1, 0xfffffff0;
    selp.u32 %r3, 1, 0, %p1;
    add.u32 %r3, %r3, %r4;"""
    got = _alu(body, x, y)
    exp = np.where(np.arange(64) % 32 == 4, 1, 0) + 4
    assert np.array_equal(got, exp)


def test_shared_roundtrip_vectors_and_effect():
    src = """
.kernel t
.param .u64 OUT
.shared .align 16 .b8 smem[4096]
.reg .u32 %r<8>
.reg .u64 %rd<4>
    mov.u32 %r0, %tid.x;
    shl.b32 %r1, %r0, 4;
    add.u32 %r2, %r0, 100;
    add.u32 %r3, %r0, 200;
    add.u32 %r4, %r0, 300;
    st.shared.v4.u32 [%r1], {%r0, %r2, %r3, %r4};
    ld.shared.v2.u32 {%r5, %r6}, [%r1+8];
    ld.param.u64 %rd0, [OUT];
    cvt.u64.u32 %rd1, %r0;
    shl.b64 %rd1, %rd1, 3;
    add.u64 %rd0, %rd0, %rd1;
    st.global.v2.u32 [%rd0], {%r5, %r6};
    exit;
"""
    g = GlobalMemory()
    a = g.alloc("OUT", 32 * 8)
    k = kernel(src)
    ex = CTAExecutor(k, Launch(block=32, params={"OUT": a}), g)
    effs = []
    while not ex.warp_done(0):
        effs.append(ex.issue(0, batch=64))
    st = next(e for e in effs if e.kind == Kind.ST_SHARED)
    assert st.smem_access_bytes == 16 and st.lanes == 32 and st.smem_bytes == 512
    assert np.array_equal(st.smem_addrs, 16 * np.arange(32))
    ld = next(e for e in effs if e.kind == Kind.LD_SHARED)
    assert np.array_equal(ld.smem_addrs, 16 * np.arange(32) + 8) and ld.smem_access_bytes == 8
    sg = next(e for e in effs if e.kind == Kind.ST_GLOBAL)
    assert sg.gmem_bytes == 256 and sg.gmem_ranges == ((a, 256),)
    out = g.view("OUT", np.uint32).reshape(32, 2)
    assert np.array_equal(out[:, 0], np.arange(32) + 200) and np.array_equal(out[:, 1], np.arange(32) + 300)


def _ldmatrix_kernel(trans: bool, num: int = 4):
    t = ".trans" if trans else ""
    regs = ", ".join(f"%r{8 + j}" for j in range(num))
    return f"""
.kernel t
.param .u64 IN, OUT
.shared .align 1024 .b8 smem[2048]
.reg .u32 %r<16>
.reg .u64 %rd<4>
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [IN];
    cvt.u64.u32 %rd1, %r0;
    shl.b64 %rd1, %rd1, 4;
    add.u64 %rd0, %rd0, %rd1;
    ld.global.v4.u32 {{%r1, %r2, %r3, %r4}}, [%rd0];
    shl.b32 %r5, %r0, 4;
    st.shared.v4.u32 [%r5], {{%r1, %r2, %r3, %r4}};
    ldmatrix.sync.aligned.m8n8.x{num}{t}.shared.b16 {{{regs}}}, [%r5];
    ld.param.u64 %rd2, [OUT];
    mul.wide.u32 %rd3, %r0, {4 * num};
    add.u64 %rd2, %rd2, %rd3;
    st.global.v{num}.u32 [%rd2], {{{regs}}};
    exit;
"""


@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_fragment_law(trans, rng):
    """Thread t, register j holds M_j[t/4][2(t%4)], M_j[t/4][2(t%4)+1] (of M_j^T with .trans),
    where lane 8j+r gave the address of row r of matrix j."""
    m = rng.integers(0, 2**16, (4, 8, 8), dtype=np.uint64).astype(np.uint16)  # 32 rows of 16 B
    g = GlobalMemory()
    a_in = g.alloc("IN", m)
    a_out = g.alloc("OUT", 32 * 16)
    run(_ldmatrix_kernel(trans), block=32, gmem=g, params={"IN": a_in, "OUT": a_out})
    out = g.view("OUT", np.uint32).reshape(32, 4)
    for j in range(4):
        mj = m[j].T if trans else m[j]
        for t in range(32):
            r, c = t // 4, 2 * (t % 4)
            assert out[t, j] == int(mj[r, c]) | (int(mj[r, c + 1]) << 16)


@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_inverts_ldmatrix(trans, rng):
    m = rng.integers(0, 2**16, (4, 8, 8), dtype=np.uint64).astype(np.uint16)
    t = ".trans" if trans else ""
    src = _ldmatrix_kernel(trans).replace(
        "    ld.param.u64 %rd2, [OUT];",
        f"    add.u32 %r6, %r5, 1024;\n    stmatrix.sync.aligned.m8n8.x4{t}.shared.b16 [%r6], {{%r8, %r9, %r10, %r11}};\n"
        "    ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [%r6];\n    ld.param.u64 %rd2, [OUT];")
    g = GlobalMemory()
    a_in = g.alloc("IN", m)
    a_out = g.alloc("OUT", 32 * 16)
    run(src, block=32, gmem=g, params={"IN": a_in, "OUT": a_out})
    assert np.array_equal(g.view("OUT", np.uint16).reshape(4, 8, 8), m)


MBAR = """
.kernel t
.param .u64 OUT
.shared .align 8 .b8 smem[64]
.reg .u32 %r<8>
.reg .u64 %rd<4>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    shr.u32 %r1, %r0, 5;
    setp.eq.u32 %p0, %r0, 0;
@%p0 mbarrier.init.shared::cta.b64 [smem], 1;
    bar.sync 0;
    setp.eq.u32 %p1, %r1, 1;
@%p1 bra PRODUCER;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [smem], 0;
@!%p2 bra WAIT;
    ld.shared.u32 %r2, [smem+16];
    ld.param.u64 %rd0, [OUT];
    st.global.u32 [%rd0], %r2;
    exit;
PRODUCER:
    mov.u32 %r3, 42;
    st.shared.u32 [smem+16], %r3;
    elect.sync _|%p3, 0xffffffff;
@%p3 mbarrier.arrive.shared::cta.b64 _, [smem];
    exit;
"""


def test_try_wait_blocks_on_phase_event_and_resumes():
    g = GlobalMemory()
    a = g.alloc("OUT", 4)
    k = kernel(MBAR)
    ex = CTAExecutor(k, Launch(block=64, params={"OUT": a}), g)
    # warp 0 runs to its try_wait
    while True:
        e = ex.issue(0, batch=8)
        if e.kind == Kind.BAR_SYNC:
            assert e.blocked_on == ("bar", 0, 0)
            break
    e1 = ex.issue(1, batch=8)
    while e1.kind != Kind.BAR_SYNC:
        e1 = ex.issue(1, batch=8)
    assert e1.blocked_on is None and ("bar", 0, 0) in e1.fired
    assert ex.is_ready(("bar", 0, 0))
    e = ex.issue(0, batch=8)
    while e.kind != Kind.MBAR_WAIT:
        e = ex.issue(0, batch=8)
    assert e.blocked_on == ("mbar", 0, 0) and e.mbarrier == 0 and e.phase == 0
    assert ex.issue(0).blocked_on == ("mbar", 0, 0)  # still blocked: nothing re-executed
    fired = ()
    while not ex.warp_done(1):
        e = ex.issue(1, batch=8)
        if e.kind == Kind.MBAR_ARRIVE:
            assert e.lanes == 1 and e.phase == 0
            fired = e.fired
    assert fired == (("mbar", 0, 0),)
    e = ex.issue(0)
    assert e.kind == Kind.MBAR_WAIT and e.resumed and e.blocked_on is None
    while not ex.warp_done(0):
        ex.issue(0, batch=8)
    assert g.view("OUT", np.uint32)[0] == 42


def test_runner_runs_producer_consumer():
    g = GlobalMemory()
    a = g.alloc("OUT", 4)
    _, st = run(MBAR, block=64, gmem=g, params={"OUT": a})
    assert g.view("OUT", np.uint32)[0] == 42
    assert st.by_kind[Kind.MBAR_WAIT] >= 1


def test_values_false_gives_identical_effects():
    def trace(values):
        g = GlobalMemory()
        a = g.alloc("OUT", 4)
        ex = CTAExecutor(kernel(MBAR), Launch(block=64, params={"OUT": a}), g, values=values)
        out = []
        for w in (0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0):
            if not ex.warp_done(w):
                e = ex.issue(w, batch=4)
                out.append((e.kind, e.warp, e.index, e.count, e.blocked_on, e.fired, e.mbarrier, e.phase))
        return out
    assert trace(True) == trace(False)


# ------------------------------------------------------------------------------ one wgmma, all forms
def _one_mma_text(n, ta, tb, sa, sb, a_regs=False, dtype="f16", dtype_d="f32"):
    acc = n // 2 if dtype_d == "f32" else n // 4
    a_op = "{%a0, %a1, %a2, %a3}" if a_regs else "%rd1"
    trans = f"{tb}" if a_regs else f"{ta}, {tb}"
    load_a = ("    ld.param.u64 %rd5, [AF];\n    mul.wide.u32 %rd6, %r0, 16;\n    add.u64 %rd5, %rd5, %rd6;\n"
              "    ld.global.v4.u32 {%a0, %a1, %a2, %a3}, [%rd5];\n") if a_regs else ""
    if dtype_d == "f32":
        stores = "\n".join(f"    st.global.f32 [%rd3+{4 * i}], %acc{i};" for i in range(acc))
        per_thread = 4 * acc
    else:
        stores = "\n".join(f"    st.global.u32 [%rd3+{4 * i}], %acc{i};" for i in range(acc))
        per_thread = 4 * acc
    acc_t = "f32" if dtype_d == "f32" else "f16x2"
    return f"""
.kernel one_mma
.param .u64 DA, DB, OUT, AF
.shared .align 1024 .b8 smem[65536]
.reg .u32 %r<4>
.reg .b32 %a<4>
.reg .u64 %rd<8>
.reg .{acc_t} %acc<{acc}>
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd1, [DA];
    ld.param.u64 %rd2, [DB];
{load_a}    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n{n}k16.{dtype_d}.{dtype}.{dtype} {{%acc0..%acc{acc - 1}}}, {a_op}, %rd2, 0, {sa}, {sb}, {trans};
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    ld.param.u64 %rd3, [OUT];
    mul.wide.u32 %rd4, %r0, {per_thread};
    add.u64 %rd3, %rd3, %rd4;
{stores}
    exit;
"""


@pytest.mark.parametrize("n,ta,tb,sa,sb,a_regs,dtype,dtype_d", [
    (64, 0, 0, 1, 1, False, "f16", "f32"),
    (64, 1, 0, 1, 1, False, "f16", "f32"),     # A MN-major (imm-trans-a)
    (32, 0, 1, -1, 1, False, "bf16", "f32"),   # B MN-major, negated A
    (128, 1, 1, 1, -1, False, "f16", "f32"),
    (64, 0, 0, 1, 1, True, "f16", "f32"),      # A from registers
    (64, 0, 1, 1, 1, True, "bf16", "f32"),
    (64, 0, 0, 1, 1, False, "f16", "f16"),     # f16 accumulator
])
def test_single_wgmma_forms_equal_numpy(n, ta, tb, sa, sb, a_regs, dtype, dtype_d, rng):
    from hopsim.functional import wgmma as W
    from hopsim.functional.layouts import store_operand
    from hopsim.functional.runner import run_cta
    from isa.descriptor import MatrixDescriptor

    def desc(start, trans):
        # 128B swizzle, 1024-aligned: K-major SBO = 1024 (8-row groups); MN-major SBO = 1024 (8-k groups)
        return MatrixDescriptor(start, 8192 if trans else 16, 1024, 0, "128B")

    da, db = desc(0, ta), desc(16384, tb)
    a_bits = (rng.standard_normal((64, 16)).astype(np.float16).view(np.uint16) if dtype == "f16"
              else W.f32_to_bf16_bits(rng.standard_normal((64, 16)).astype(np.float32)))
    b_bits = (rng.standard_normal((n, 16)).astype(np.float16).view(np.uint16) if dtype == "f16"
              else W.f32_to_bf16_bits(rng.standard_normal((n, 16)).astype(np.float32)))
    g = GlobalMemory()
    out = g.alloc("OUT", 128 * 4 * (n // 2 if dtype_d == "f32" else n // 4))
    af = g.alloc("AF", np.ascontiguousarray(W.pack_a_registers(a_bits).T).astype(np.uint32))
    k = kernel(_one_mma_text(n, ta, tb, sa, sb, a_regs, dtype, dtype_d))
    ex = CTAExecutor(k, Launch(block=128, params={"DA": da.encode(), "DB": db.encode(), "OUT": out, "AF": af}), g)
    from isa.dtypes import parse_dtype
    st = parse_dtype(dtype).storage  # the storage dtype store_operand writes (f16: float16, bf16: bits)
    store_operand(ex.smem_obj, da, a_bits.view(st), "A", "MN" if ta else "K", dtype)
    store_operand(ex.smem_obj, db, b_bits.view(st), "B", "MN" if tb else "K", dtype, n)
    run_cta(ex)
    regs = g.view("OUT", np.uint32).reshape(128, -1).T.astype(np.uint64)
    d = W.unpack_accumulator(regs, n, dtype_d)
    a = W.to_f32(a_bits, dtype).astype(np.float64)
    b = W.to_f32(b_bits, dtype).astype(np.float64)
    ref = (sa * sb) * (a @ b.T)
    if dtype_d == "f32":
        np.testing.assert_allclose(d, ref.astype(np.float32), rtol=2 ** -23, atol=1e-6)
    else:
        assert np.array_equal(d, ref.astype(np.float16))


def test_tma_global_ranges_equal_the_layouts_module():
    from hopsim.functional import bridge, tma
    from isa.tensormap import TensorMap
    t = TensorMap(dtype="f16", global_dims=(200, 100), global_strides_bytes=(400,), box_dims=(64, 64),
                  global_address=4096, swizzle="128B")
    for coords in [(0, 0), (160, 50), (-32, -8), (64, 90), (300, 0)]:
        assert bridge.global_ranges(None, t, coords) == tma.global_ranges(t, coords)
    full = TensorMap(dtype="f16", global_dims=(64, 100), global_strides_bytes=(128,), box_dims=(64, 32),
                     global_address=0, swizzle="128B")
    assert bridge.global_ranges(None, full, (0, 8)) == tma.global_ranges(full, (0, 8)) == ((1024, 4096),)


def test_tma_global_ranges_2d_fast_path_equals_the_layouts_module_on_an_enumerated_grid():
    # bridge's 2-D path (one run per row, or one run when rows touch) against the element-level
    # plan: every box origin on a grid crossing both edges of both dimensions, rows with a gap,
    # rows that touch, boxes of 1 to 128 rows
    from hopsim.functional import bridge, tma
    from isa.tensormap import TensorMap
    for dims, stride, box in [((200, 100), 400, (64, 64)), ((64, 40), 128, (64, 8)), ((96, 300), 256, (32, 128)),
                              ((8, 5), 16, (8, 1))]:
        t = TensorMap(dtype="f16", global_dims=dims, global_strides_bytes=(stride,), box_dims=box,
                      global_address=8192, swizzle="none")
        for x in range(-box[0], dims[0] + 1, max(1, box[0] // 2)):
            for y in range(-box[1], dims[1] + 1, max(1, box[1] // 2)):
                assert bridge._global_ranges(t, (x, y)) == tma.global_ranges(t, (x, y)), (dims, stride, box, x, y)


# The warp-uniform fast path (Python ints) must agree with the lane-vector path (numpy): run the
# same ops with uniform inputs (from .param: scalar path) and compare with numpy on those values.
UNI_HEAD = """
.kernel t
.param .u64 OUT
.param .u32 XV, YV
.reg .u32 %r<16>
.reg .u64 %rd<8>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    cvt.u64.u32 %rd0, %r0;
    shl.b64 %rd0, %rd0, 2;
    ld.param.u64 %rd3, [OUT];
    add.u64 %rd3, %rd3, %rd0;
    ld.param.u32 %r1, [XV];
    ld.param.u32 %r2, [YV];
"""

_SCALAR_OPS = [
    ("add.u32 %r3, %r1, %r2;", lambda x, y: x + y),
    ("sub.u32 %r3, %r1, %r2;", lambda x, y: x - y),
    ("mul.lo.u32 %r3, %r1, %r2;", lambda x, y: x * y),
    ("mul.hi.u32 %r3, %r1, %r2;", lambda x, y: ((x.astype(np.uint64) * y) >> 32).astype(U)),
    ("mul.hi.s32 %r3, %r1, %r2;",
     lambda x, y: ((x.view(np.int32).astype(np.int64) * y.view(np.int32)) >> 32).astype(np.int32).view(U)),
    ("mad.lo.u32 %r3, %r1, %r2, %r1;", lambda x, y: x * y + x),
    ("xor.b32 %r3, %r1, %r2;", lambda x, y: x ^ y),
    ("shl.b32 %r3, %r1, 7;", lambda x, y: x << 7),
    ("shr.u32 %r3, %r1, 9;", lambda x, y: x >> 9),
    ("shr.s32 %r3, %r1, 9;", lambda x, y: (x.view(np.int32) >> 9).view(U)),
    ("setp.lt.s32 %p0, %r1, %r2;\n    selp.u32 %r3, 7, 9, %p0;",
     lambda x, y: np.where(x.view(np.int32) < y.view(np.int32), 7, 9).astype(U)),
    ("setp.hi.u32 %p0, %r1, %r2;\n    selp.u32 %r3, 7, 9, %p0;", lambda x, y: np.where(x > y, 7, 9).astype(U)),
    ("mul.wide.s32 %rd4, %r1, %r2;\n    shr.u64 %rd4, %rd4, 20;\n    cvt.u32.u64 %r3, %rd4;",
     lambda x, y: ((x.view(np.int32).astype(np.int64) * y.view(np.int32)).view(np.uint64) >> 20).astype(U)),
    ("cvt.s64.s32 %rd4, %r1;\n    shr.u64 %rd4, %rd4, 33;\n    cvt.u32.u64 %r3, %rd4;",
     lambda x, y: (x.view(np.int32).astype(np.int64).view(np.uint64) >> 33).astype(U)),
]


@pytest.mark.parametrize("op,ref", _SCALAR_OPS)
@pytest.mark.parametrize("x,y", [(0, 0), (1, 31), (0x80000000, 3), (0xFFFFFFFF, 0xFFFFFFFF), (12345, 0x7FFFFFFF)])
def test_uniform_fast_path_equals_numpy(op, ref, x, y):
    g = GlobalMemory()
    ao = g.alloc("OUT", 4 * 32)
    k = kernel(UNI_HEAD + op + "\n    st.global.u32 [%rd3], %r3;\n    exit;\n")
    ex = CTAExecutor(k, Launch(block=32, params={"OUT": ao, "XV": x, "YV": y}), g)
    while not ex.warp_done(0):
        ex.issue(0, batch=64)
    assert ex.warps[0].uni[ex.prog.layout.row("%r3")] is not None  # really took the scalar path
    xs, ys = np.full(32, x, U), np.full(32, y, U)
    assert np.array_equal(g.view("OUT", U), ref(xs, ys).astype(U))


def test_alu_effect_is_the_keyword_effect():
    """alu_effect (the executor's positional constructor of a register-only run's Effect) gives the
    Effect the keyword form gives, every other field at its default."""
    run_ops = [object()]
    got = alu_effect(Kind.ALU, 3, 17, "add.u32", 2, 32, True, run_ops)
    want = Effect(kind=Kind.ALU, warp=3, index=17, instr="add.u32", count=2, lanes=32, resumed=True, run=run_ops)
    assert got == want and got.extra == {} and got.extra is not want.extra


def test_rendezvous_effect_is_the_keyword_effect():
    """rendezvous_effect (a warp waiting at its warpgroup's rendezvous, built positionally) gives the
    Effect the keyword form gives, every other field at its default."""
    key = ("rdv", 1, 7)
    got = rendezvous_effect(Kind.WGMMA, 5, key, 1)
    want = Effect(kind=Kind.WGMMA, warp=5, lanes=32, blocked_on=key, warpgroup=1)
    assert got == want and got.extra == {} and got.extra is not want.extra
