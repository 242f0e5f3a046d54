"""The verifier: one test per rule, each on a minimal kernel, plus a clean kernel."""

from __future__ import annotations

import pytest

from isa.ir import VerifyError, check, parse, verify

HEAD = """.kernel k
.param .u64 ptr
.param .tmap tmapA
.shared .align 128 .b8 smem[1024]
.shared .align 8 .b8 bar[16]
.reg .u32 %r<8>
.reg .u64 %rd<4>
.reg .f32 %f<4>
.reg .pred %p<4>
.reg .f32 %acc<4>
.reg .f16x2 %h<4>
"""


def diags(body: str, rule: str | None = None):
    k = parse(HEAD + body, "k.ptx")
    ds = verify(k)
    return [d for d in ds if rule is None or d.rule == rule]


def only(body: str, rule: str):
    ds = [d for d in diags(body) if d.severity == "error"]
    assert ds and {d.rule for d in ds} == {rule}, [str(d) for d in ds]
    return ds[0]


def test_clean_kernel_has_no_diagnostics():
    assert diags("    mbarrier.init.shared::cta.b64 [bar], 1;\n"
                 "    mbarrier.arrive.shared::cta.b64 _, [bar];\n    exit;\n") == []


def test_undefined_label():
    d = only("    bra NOWHERE;\n    exit;\n", "undefined-label")
    assert d.index == 0 and d.line == HEAD.count("\n") + 1 and d.text == "bra NOWHERE;"
    assert "NOWHERE" in d.message


def test_undefined_register():
    d = only("    add.u32 %r0, %q9, 1;\n    exit;\n", "undefined-register")
    assert "%q9" in d.message and d.text == "add.u32 %r0, %q9, 1;"


@pytest.mark.parametrize("body", [
    "    ld.param.u64 %rd0, [nothere];\n",
    "    ld.param.u64 %rd0, [smem];\n",                                # a shared buffer, not a param
    "    ld.shared.u32 %r0, [ptr];\n",                                  # a param, not shared
    "    ld.global.u32 %r0, [smem];\n",                                 # no global symbols
    "    mbarrier.init.shared::cta.b64 [bar], 1;\n"
    "    cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [smem], [ptr, {0}], [bar];\n",
])
def test_undefined_or_wrong_kind_of_symbol(body):
    only(body + "    exit;\n", "undefined-symbol")


@pytest.mark.parametrize("body, reg", [
    ("    add.u32 %r0, %f1, 1;\n", "%f1"),                                  # float reg in an integer op
    ("    add.f32 %f0, %r1, %f1;\n", "%r1"),                                # int reg in a float op
    ("    wgmma.fence.sync.aligned;\n    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
     "{%acc0..%acc3}, %r0, %rd1, 1, 1, 1, 0, 0;\n", "%r0"),                # 32-bit reg as a descriptor
    ("    wgmma.fence.sync.aligned;\n    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
     "{%acc0..%acc3}, %rd0, %rd1, %r1, 1, 1, 0, 0;\n", "%r1"),             # scale-d not a predicate
    ("    wgmma.fence.sync.aligned;\n    wgmma.mma_async.sync.aligned.m64n16k16.f16.f16.f16 "
     "{%acc0..%acc3}, %rd0, %rd1, 1, 1, 1, 0, 0;\n", "%acc0"),             # f32 regs as an f16 accumulator
    ("@%r0 exit;\n", "%r0"),                                                # guard not a predicate
    ("    ld.global.u32 %r0, [%r1];\n", "%r1"),                             # 32-bit global address
    ("    mul.wide.u32 %r0, %r1, %r2;\n", "%r0"),                           # wide result needs 64 bits
    ("    setp.eq.u32 %r0, %r1, 0;\n", "%r0"),                              # setp writes a predicate
    ("    mbarrier.try_wait.parity.shared::cta.b64 %p0, [bar], %f0;\n", "%f0"),
    ("    ld.shared.v2.f32 {%r0, %r1}, [%r2];\n", "%r0"),
    ("    mov.u32 %r0, %clock64;\n", "%clock64"),
])
def test_operand_type(body, reg):
    pre = "    mbarrier.init.shared::cta.b64 [bar], 1;\n"
    d = only(pre + body + "    exit;\n", "operand-type")
    assert reg in d.message


def test_mbarrier_used_before_init_on_some_path():
    body = """    setp.eq.u32 %p0, %r0, 0;
@%p0 bra SKIP;
    mbarrier.init.shared::cta.b64 [bar], 1;
SKIP:
    mbarrier.arrive.shared::cta.b64 _, [bar];
    exit;
"""
    d = only(body, "mbarrier-before-init")
    assert d.text == "mbarrier.arrive.shared::cta.b64 _, [bar];"


def test_mbarrier_init_of_another_barrier_does_not_count():
    only("    mbarrier.init.shared::cta.b64 [bar], 1;\n"
         "    mbarrier.try_wait.parity.shared::cta.b64 %p0, [bar+8], 0;\n    exit;\n", "mbarrier-before-init")


def test_tma_load_barrier_counts_as_a_use():
    only("    cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
         "[smem], [tmapA, {0}], [bar];\n    exit;\n", "mbarrier-before-init")


def test_mbarrier_init_in_a_loop_prologue_is_fine():
    assert diags("    mbarrier.init.shared::cta.b64 [bar], 1;\nL:\n"
                 "    mbarrier.try_wait.parity.shared::cta.b64 %p0, [bar], 0;\n@!%p0 bra L;\n    exit;\n") == []


WG = "    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%acc0..%acc3}, %rd0, %rd1, 1, 1, 1, 0, 0;\n"


def test_wgmma_without_fence():
    d = only(WG + "    exit;\n", "wgmma-without-fence")
    assert d.index == 0 and "wgmma.fence" in d.message


def test_wgmma_fence_invalidated_by_accumulator_write_in_loop():
    body = "    wgmma.fence.sync.aligned;\nL:\n" + WG + "    mov.f32 %acc0, 0.0;\n    bra L;\n"
    only(body, "wgmma-without-fence")


def test_wgmma_fenced_sequence_is_fine():
    assert diags("    wgmma.fence.sync.aligned;\n" + WG + "    add.u64 %rd0, %rd0, 2;\n" + WG
                 + "    wgmma.commit_group.sync.aligned;\n    wgmma.wait_group.sync.aligned 0;\n    exit;\n") == []


def test_duplicate_names():
    k = parse(".kernel k\n.param .u32 a\n.shared .align 8 .b8 a[8]\n.reg .u32 %r<2>\n.reg .u32 %r1\nL:\nL:\n"
              "    exit;\n")
    rules = sorted(d.rule for d in verify(k))
    assert rules == ["duplicate-name"] * 3


def test_missing_exit_is_a_warning():
    (d,) = diags("    add.u32 %r0, %r0, 1;\n")
    assert (d.rule, d.severity) == ("missing-exit", "warning")
    check(parse(HEAD + "    add.u32 %r0, %r0, 1;\n"))          # warnings do not raise


def test_check_raises_with_every_error_and_position():
    k = parse(HEAD + "    bra X;\n    add.u32 %r0, %f0, 1;\n    exit;\n", "bad.ptx")
    with pytest.raises(VerifyError) as e:
        check(k)
    assert len(e.value.diagnostics) == 2
    line = HEAD.count("\n") + 1
    assert f"bad.ptx:{line}: error [undefined-label]" in str(e.value)
    assert f"bad.ptx:{line + 1}: error [operand-type]" in str(e.value)
