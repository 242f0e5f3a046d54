"""The SASS reader (hopsim/validate/sass.py) on the committed SASS of the CUDA twins
(validation/sass/sass.tar.gz), and the TMA issue costs derived from it (calibrate_sass.py).

Laws, not the model's outputs: what ptxas emits for each construct (the PTX ISA and the tile
arithmetic say how many wgmmas and boxes a k-tile has), and that the derived config fields are
the SASS counts x the fitted class costs, sourced."""

from __future__ import annotations

import json
import math

import pytest

from hopsim.config import load_gpu
from hopsim.gemm_sim import TWIN_TMA_ISSUE, twin_issue_costs
from hopsim.validate.calibrate_sass import class_costs, derive_sass
from hopsim.validate.sass import (GEMM_ISSUE_PAIRS, ISSUE_CLASSES, SASS_TAR, TMA_ISSUE_MODES, SassError, box_cycles,
                                  constructs, copy_loop, gemm_per_box, k_loops, kernel, load_sass, loop_per_box,
                                  micro_classes, micro_issue_counts, parse, window)
from kernels.gemm import estimate_regs
from kernels.params import GemmParams
from validation.provenance import RECORDS_DIR
from validation.sass_dump import BASE, CONFIGS, MICRO


@pytest.fixture(scope="module")
def lib():
    return load_sass()


@pytest.fixture(scope="module")
def tma_issue():
    return json.loads((RECORDS_DIR / "microbench__tma_issue.json").read_text())


def _params(tag: str) -> GemmParams:
    return GemmParams.from_dict({**BASE, **dict(CONFIGS)[tag]})


def test_the_archive_holds_every_configuration_built_by_the_records_compiler(lib, tma_issue):
    for tag, _ in CONFIGS:
        assert f"gemm_{tag}" in lib.files, tag
        assert "error" not in lib.index["kernels"][f"gemm_{tag}"], tag
    for name, _ in MICRO:
        assert name.removesuffix(".cu") in lib.files, name
    # the SASS is what the H100 ran: the same nvcc build as the microbenchmark records
    assert lib.index["tools"]["nvcc"] == tma_issue["provenance"]["nvcc_version"]


def test_parse_reads_guard_opcode_and_branch_target():
    text = """
        Function : k
        /*0000*/                   @!UP1 UTMALDG.2D [UR8], [UR14] ;   /* 0x0 */
        /*0010*/               @P0 BRA.U.ANY 0x0 ;   /* 0x0 */
        /*0020*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8], R24, gsb0 ;
        /*0030*/                   EXIT ;
    """
    ins = parse(text)["k"]
    assert [(i.addr, i.guard, i.op) for i in ins] == [(0, "@!UP1", "UTMALDG.2D"), (16, "@P0", "BRA.U.ANY"),
                                                       (32, "", "HGMMA.64x128x16.F32"), (48, "", "EXIT")]
    assert ins[1].target == 0 and ins[0].target is None and ins[0].is_("UTMALDG")


def test_unknown_names_are_one_line_errors(lib):
    with pytest.raises(SassError, match="valid"):
        kernel(lib, "gemm_nope")
    with pytest.raises(SassError, match="valid"):
        kernel(lib, "micro_tma_issue", "tma_issue_k3_e")
    with pytest.raises(SassError, match="no SASS archive"):
        load_sass(SASS_TAR.with_name("missing.tar.gz"))


@pytest.mark.parametrize("variant", ["single", "ws"])
def test_box_rows_8_issues_16_times_the_boxes_of_box_rows_128(lib, variant):
    few, many = GEMM_ISSUE_PAIRS[(variant, "lane")]
    n128 = constructs(list(copy_loop(kernel(lib, few)).body))["tma_load"]
    n8 = constructs(list(copy_loop(kernel(lib, many)).body))["tma_load"]
    assert n128 == _params(few.removeprefix("gemm_")).boxes_per_stage
    assert n8 == 16 * n128


@pytest.mark.parametrize("variant", ["single", "ws"])
def test_elect_copies_take_the_uniform_path_lane_copies_the_lane_loop(lib, variant):
    lane, elect = (kernel(lib, GEMM_ISSUE_PAIRS[(variant, i)][1]) for i in ("lane", "elect"))
    lbody, ebody = copy_loop(lane).body, copy_loop(elect).body
    # lane: every copy sits in ptxas' loop over the active lanes (ELECT ... BRA.U.ANY)
    assert sum(i.op == "BRA.U.ANY" for i in lbody) == sum(i.is_("UTMALDG") for i in lbody)
    assert sum(i.is_("ELECT") for i in lbody) == sum(i.is_("UTMALDG") for i in lbody)
    # elect: one ELECT in the whole kernel (elect.sync itself), no lane loop around the copies
    assert constructs(elect)["elect"] == 1
    assert not any(i.op == "BRA.U.ANY" for i in ebody)
    per_lane = gemm_per_box(lib, *GEMM_ISSUE_PAIRS[(variant, "lane")])
    per_elect = gemm_per_box(lib, *GEMM_ISSUE_PAIRS[(variant, "elect")])
    assert per_elect["branch"] == 0 and per_lane["branch"] >= 1
    assert per_elect["total"] < per_lane["total"] or variant == "ws"  # ws elect: more R2UR, no branch
    assert per_elect["elect"] == 0 and per_lane["elect"] == 1


def test_micro_paths_count_one_copy_per_box_and_differ_as_the_record_says(lib):
    for mode in TMA_ISSUE_MODES:
        by_k = micro_issue_counts(lib, mode)
        assert all(c["tma_load"] == k for k, c in by_k.items()), mode
    cls = {m: micro_classes(lib, m) for m in TMA_ISSUE_MODES}
    assert cls["e"]["branch"] == 0 and all(cls[m]["branch"] == pytest.approx(1) for m in "twc")
    # a per-lane predicate costs R2UR moves of the operands; the compile-time-true one does not
    assert cls["w"]["r2ur"] > 5 and abs(cls["c"]["r2ur"]) < 0.1
    lat = loop_per_box(lib, "micro_tma", "tma_latency")
    assert lat["tma_load"] == 1 and lat["branch"] == 2  # the lane loop + the run-time loop


@pytest.mark.parametrize("tag", [t for t, _ in CONFIGS])
def test_wgmmas_per_k_tile_are_the_tile_arithmetic(lib, tag):
    p = _params(tag)
    loops = [lp for lp in k_loops(kernel(lib, f"gemm_{tag}")) if any(i.is_("HGMMA") for i in lp.body)]
    assert len(loops) == 1
    rows_per_wg = p.bm // (p.consumers if p.variant == "ws" else 1)
    assert constructs(list(loops[0].body))["wgmma"] == rows_per_wg // 64 * (p.bk // 16)


@pytest.mark.parametrize("n", [64, 128, 256])
def test_the_wgmma_queue_micro_issues_one_hgmma_per_wgmma(lib, n):
    """The measured wgmma issue time (wgmma_issue_cycles) is of bare HGMMAs: the timed window holds
    the fence and the L HGMMAs only (L = 1: ptxas also places two descriptor moves there)."""
    for lcount in (1, 2, 4, 8, 16):
        w = [i.op for i in window(kernel(lib, "micro_wgmma_queue", f"wgq_n{n}_l{lcount}_c1_g0"), 0, 1) if i.op != "NOP"]
        assert w.count(f"HGMMA.64x{n}x16.F32") == lcount and w[0] == "WARPGROUP.ARRIVE"
        assert len(w) == lcount + 1 or lcount == 1


@pytest.mark.parametrize("tag", [t for t, kw in CONFIGS if kw["variant"] == "ws" or
                                 (kw.get("bm", 128) == 128 and kw.get("accum") != "f16")])
def test_register_estimate_is_what_ptxas_reported(lib, tag):
    assert estimate_regs(_params(tag)) == lib.index["kernels"][f"gemm_{tag}"]["registers"]


def test_derived_fields_are_sass_counts_times_fitted_class_costs(lib, tma_issue):
    recs = {"tma_issue": tma_issue}
    costs = class_costs(lib, tma_issue)
    got = derive_sass(recs)
    for c in ISSUE_CLASSES:
        assert got[f"sass_{c}_cycles"][0] == pytest.approx(costs[c])
    t = load_gpu().timing
    for (variant, issuer), pair in GEMM_ISSUE_PAIRS.items():
        field = f"gemm_{variant}_{issuer}_tma_issue_cycles"
        value, source = got[field]
        assert value == pytest.approx(box_cycles(gemm_per_box(lib, *pair), costs))
        assert source.startswith("derived: validation/sass/sass.tar.gz") and pair[0] in source
        assert "microbench__tma_issue.json" in source
        # the calibrated config carries it (whole cycles) with its source
        assert t.params()[field].value == round(value)
        assert t.params()[field].source.startswith("derived: validation/sass/")
    for c in ISSUE_CLASSES:
        assert t.params()[f"sass_{c}_cycles"].source.startswith("measured: microbench__tma_issue.json")
        assert math.isfinite(t.params()[f"sass_{c}_cycles"].value)


def test_the_fit_reproduces_the_r8_paths_it_reads(lib, tma_issue):
    costs = class_costs(lib, tma_issue)
    for mode, name in TMA_ISSUE_MODES.items():
        measured = tma_issue["results"][f"R8,{name}"]["per_box_cycles"]
        assert box_cycles(micro_classes(lib, mode), costs) == pytest.approx(measured, rel=0.02), name


@pytest.mark.parametrize("variant,issuer", sorted(TWIN_TMA_ISSUE))
def test_a_gemm_runs_with_its_twins_issue_hold(variant, issuer):
    gpu = load_gpu()
    p = GemmParams(m=512, n=512, k=512, variant=variant, tma_issuer=issuer,
                   consumers=2 if variant == "ws" else 1)
    target, field = TWIN_TMA_ISSUE[(variant, issuer)]
    got = twin_issue_costs(gpu, p)
    assert got.timing.params()[target].value == gpu.timing.params()[field].value
    untouched = {"tma_issue_cycles", "tma_issue_elect_cycles"} - {target}
    for name in untouched:
        assert got.timing.params()[name] == gpu.timing.params()[name]
