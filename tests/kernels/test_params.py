"""Laws of GemmParams: valid knobs build, invalid ones are rejected with the field and the reason,
derived sizes follow from the tile, and cuda_defines() matches the macros of gemm_sm90.cu."""

from __future__ import annotations

import pathlib
import re

import pytest

from isa.errors import InputError
from kernels.params import SMEM_PER_CTA_MAX_BYTES, SMEM_PER_SM_BYTES, GemmParams

CU = pathlib.Path(__file__).resolve().parents[2] / "kernels" / "cuda" / "gemm_sm90.cu"


def test_default_is_valid():
    p = GemmParams()
    assert p.threads == 128 and p.grid == (4096 // 128) ** 2


@pytest.mark.parametrize("field,value,words", [
    ("dtype", "f32", "f16, bf16"),
    ("layout", "nt", "tn, nn"),
    ("bm", 96, "64, 128, 256"),
    ("bn", 32, "64, 128, 256"),
    ("bk", 32, "64"),
    ("m", 1000, "multiple of the tile"),
    ("k", 100, "multiple of the tile"),
    ("swizzle", "16B", "32B, 64B, 128B"),
    ("box_rows", 12, "8-row swizzle atom"),
    ("box_rows", 512, "256"),
    ("variant", "pingpong", "single, ws"),
    ("ctas_per_sm", 2, "'auto' or 1"),
    ("epilogue", "tma", "direct, stmatrix"),
    ("raster", "snake", "row, grouped"),
    ("stages", 0, "1..8"),
    ("stages", 9, "1..8"),
])
def test_rejects_with_field_and_reason(field, value, words):
    with pytest.raises(InputError) as e:
        GemmParams(**{field: value})
    assert e.value.field == field
    assert words in str(e.value)


@pytest.mark.parametrize("field,value", [
    ("stages", "4"), ("stages", 2.0), ("m", "256"), ("bm", 128.0), ("consumers", True), ("box_rows", None),
])
def test_integer_knobs_must_be_integers(field, value):
    """A Python caller gets InputError naming the knob (never a TypeError from a comparison)."""
    with pytest.raises(InputError) as e:
        GemmParams(**{field: value})
    assert e.value.field == field and "an integer" in str(e.value)


def test_issue_spellings_mean_the_same_configuration():
    # issue 4 names the variant "warp-specialized"; the command line passes "1" for ctas_per_sm
    assert GemmParams(variant="warp-specialized") == GemmParams(variant="ws")
    assert GemmParams(ctas_per_sm="1") == GemmParams(ctas_per_sm=1)
    assert GemmParams(variant="warp-specialized").tag == GemmParams(variant="ws").tag


def test_accumulator_remedies_named_only_where_they_fit():
    # 256x256 f32 in 2 consumer warpgroups is still 2 x m64n256 = 256 registers: ws alone does not fit
    with pytest.raises(InputError) as e:
        GemmParams(bm=256, bn=256, variant="ws", consumers=2)
    assert "consumers 2" not in str(e.value) and "f16 accumulators" in str(e.value)
    with pytest.raises(InputError) as e:  # bf16: no f16 accumulators either, only a smaller tile
        GemmParams(bm=256, bn=256, variant="ws", consumers=2, dtype="bf16")
    assert "f16 accumulators" not in str(e.value) and "smaller tile" in str(e.value)
    with pytest.raises(InputError) as e:  # 128x256 single: 2 consumers (128 regs) or f16 (128 regs) both fit
        GemmParams(bm=128, bn=256)
    assert "consumers 2" in str(e.value) and "f16 accumulators" in str(e.value)
    GemmParams(bm=128, bn=256, variant="ws", consumers=2, stages=3)
    GemmParams(bm=128, bn=256, accum="f16", stages=3)


def test_f16_accumulator_needs_f16_inputs():
    GemmParams(dtype="f16", accum="f16")
    with pytest.raises(InputError, match="only for f16 inputs"):
        GemmParams(dtype="bf16", accum="f16")


def test_consumers_rules():
    with pytest.raises(InputError, match="single"):
        GemmParams(variant="single", consumers=2)
    with pytest.raises(InputError, match=">= 128"):
        GemmParams(variant="ws", consumers=2, bm=64, bn=64)
    GemmParams(variant="ws", consumers=2, bm=128, bn=256)


def test_accumulator_register_budget():
    # 128x256 in one warpgroup = 2 x m64n256 f32 = 256 registers/thread: rejected, says why
    with pytest.raises(InputError, match="256"):
        GemmParams(bm=128, bn=256, variant="single")
    assert GemmParams(bm=128, bn=256, variant="ws", consumers=2).acc_regs == 256 // 2
    assert GemmParams(bm=256, bn=64, variant="single").acc_regs == 4 * 64 // 2  # 4 m64 rows
    assert GemmParams(bm=128, bn=256, variant="single", accum="f16", stages=3).acc_regs == 2 * 256 // 4


def test_stages_limited_by_smem_with_reason():
    p = GemmParams(bm=128, bn=256, variant="ws", consumers=2, stages=4, epilogue="stmatrix")
    assert p.smem_footprint_bytes <= SMEM_PER_CTA_MAX_BYTES
    with pytest.raises(InputError) as e:
        p.replace(stages=5)
    assert e.value.field == "stages" and "227 KB" in str(e.value) and "<= 4" in str(e.value)


def test_stage_bytes_is_tx_count():
    for bm in (64, 128, 256):
        for bn in (64, 128):
            p = GemmParams(bm=bm, bn=bn, stages=1, accum="f16")
            assert p.stage_bytes == (bm + bn) * 64 * 2  # A tile + B tile, 2 B per element


@pytest.mark.parametrize("layout", ["tn", "nn"])
@pytest.mark.parametrize("sw,width", [("32B", 16), ("64B", 32), ("128B", 64)])
@pytest.mark.parametrize("rows", [8, 64, 128, 256])
def test_boxes_cover_stage_exactly(layout, sw, width, rows):
    p = GemmParams(layout=layout, swizzle=sw, box_rows=rows, bm=128, bn=128)
    assert p.box_width == width
    box_bytes_a = p.box_width * p.box_rows_a * 2
    box_bytes_b = p.box_width * p.box_rows_b * 2
    n_a = p.bm * p.bk * 2 // box_bytes_a
    n_b = p.bn * p.bk * 2 // box_bytes_b
    assert p.boxes_per_stage == n_a + n_b
    assert n_a * box_bytes_a + n_b * box_bytes_b == p.stage_bytes
    assert p.box_rows_a <= 256 and p.box_rows_b <= 256


def test_box_rows_clamped_to_tile():
    p = GemmParams(bm=64, bn=128, box_rows=256, layout="nn")
    assert (p.box_rows_a, p.box_rows_b) == (64, 64)  # B (nn) stage has bk = 64 rows of K
    p = GemmParams(bm=64, bn=128, box_rows=256, layout="tn")
    assert (p.box_rows_a, p.box_rows_b) == (64, 128)


def test_force_one_cta_per_sm():
    p = GemmParams(stages=1)
    assert p.smem_limited_ctas_per_sm >= 2
    q = p.replace(ctas_per_sm=1)
    assert q.smem_limited_ctas_per_sm == 1
    assert q.dynamic_smem_bytes + 2048 <= SMEM_PER_CTA_MAX_BYTES


def test_cuda_defines_match_macros_in_source():
    src = CU.read_text()
    macros = set(re.findall(r"#ifndef (GEMM_\w+)", src))
    # GEMM_PROFILE and GEMM_NO_MMA are not kernel knobs: validation/cycle_profile.py adds them (a
    # 4th argument receives per-CTA clock64 spans; the diagnostic build without wgmma.mma_async);
    # nor are the GEMM_DIAG_* timing-only switches of validation/micro_single_loop.py (off by
    # default, each removes one piece of the k-tile loop); every knob of GemmParams is a macro and
    # vice versa
    diag = {m for m in macros if m.startswith("GEMM_DIAG_")}
    assert diag == {"GEMM_DIAG_NO_TMA", "GEMM_DIAG_NO_FULL_WAIT", "GEMM_DIAG_NO_WAIT_GROUP",
                    "GEMM_DIAG_NO_FENCE"}
    assert set(GemmParams().cuda_defines()) == macros - {"GEMM_PROFILE", "GEMM_NO_MMA"} - diag


def test_round_trip_and_tag_unique():
    ps = [GemmParams(stages=s, box_rows=r) for s in (1, 2, 3) for r in (8, 64)]
    assert all(GemmParams.from_dict(p.to_dict()) == p for p in ps)
    assert len({p.tag for p in ps}) == len(ps)
    with pytest.raises(InputError):
        GemmParams.from_dict({"stagez": 3})


def test_sweeps_are_valid_and_large_enough():
    from validation.gemm_runs import SWEEPS

    for name, fn in SWEEPS.items():
        ps = fn()
        assert len(ps) == len(set(ps)), name
    assert len(SWEEPS["validation"]()) >= 60


def test_later_fields_leave_earlier_records_alone():
    """tma_issuer was added after the H100 records: at its default it is not in to_dict(), so the
    params and tags of the records stay valid; `elect` is named in the tag."""
    p = GemmParams()
    assert "tma_issuer" not in p.to_dict()
    assert GemmParams.from_dict(p.to_dict()) == p
    e = p.replace(tma_issuer="elect")
    assert e.to_dict()["tma_issuer"] == "elect" and GemmParams.from_dict(e.to_dict()) == e
    assert "_elect_" in e.tag and e.tag != p.tag
    assert e.cuda_defines()["GEMM_ELECT"] == 1 and p.cuda_defines()["GEMM_ELECT"] == 0
    with pytest.raises(InputError, match="tma_issuer"):
        GemmParams(tma_issuer="thread")
