"""The TMA copy family's IR kernel (kernels/membound/tmacopy.py).

Laws: the simulated output equals the input bit for bit (through simulated shared memory, the
TMA unit swizzling on load and unswizzling on store) for every swizzle, both dtypes, 1..3 stages,
one CTA per tile and persistent CTAs with uneven tile counts; the shared-memory image of a loaded
box is the row-major box with the 16-byte chunk c of 128-byte line r moved to c ^ (r mod 2^b)
(PTX ISA tensor-copy swizzle modes, b = 0/1/2/3 for none/32B/64B/128B), computed here from that
rule and not from the model; bad parameters are InputErrors naming the field (the TMA rules of
cuTensorMapEncodeTiled); the magic-number division is exact over its whole range's extremes.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hopsim.cli.tmacopy_cmd import read_output, setup, simulate_tmacopy
from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.runner import run_cta
from hopsim.timing.runner import simulate
from isa.errors import InputError
from kernels.membound.tmacopy import REGS_PER_THREAD, TmaCopyParams, build_tmacopy, div_magic

SWIZZLES = ("none", "32B", "64B", "128B")
SPAN = {"none": 256, "32B": 32, "64B": 64, "128B": 128}
BITS = {"none": 0, "32B": 1, "64B": 2, "128B": 3}


def _widest(dtype: str, swizzle: str) -> int:
    """Box columns filling the swizzle span (capped at 64 columns for the unswizzled case)."""
    return min(64, SPAN[swizzle] // (2 if dtype == "f16" else 4))


CASES = [TmaCopyParams(rows=48, cols=2 * _widest(dt, sw), dtype=dt, box_rows=8, box_cols=_widest(dt, sw),
                       swizzle=sw, stages=st, ctas=ctas)
         for dt, sw, (st, ctas) in itertools.product(("f16", "f32"), SWIZZLES, ((1, None), (3, 5), (2, 1)))]


@pytest.mark.parametrize("p", CASES, ids=[p.name for p in CASES])
def test_output_equals_input(p):
    res, gm, a = simulate_tmacopy(p, values=True, mhz=1755)
    assert p.tiles == 12 and res.cycles > 0
    assert np.array_equal(read_output(gm, p).view(np.uint8), a.view(np.uint8))


def test_narrow_box_in_a_wide_swizzle_and_uneven_persistent_grid():
    """An inner box narrower than the 128B span (pitch = the span) and 7 CTAs over 20 tiles."""
    p = TmaCopyParams(rows=40, cols=80, dtype="f16", box_rows=8, box_cols=16, swizzle="128B", stages=2, ctas=7)
    _, gm, a = simulate_tmacopy(p, values=True, mhz=1755)
    assert np.array_equal(read_output(gm, p).view(np.uint8), a.view(np.uint8))


def _swizzled_image(tile: np.ndarray, base: int, pitch: int, bits: int) -> dict[int, int]:
    """{physical smem byte address: byte} of a row-major box at absolute address `base` under the
    TMA swizzle with `bits` XOR bits (address bits [7, 7+b) into [4, 4+b))."""
    raw = tile.view(np.uint8).reshape(tile.shape[0], -1)
    out = {}
    for r, c in itertools.product(range(raw.shape[0]), range(raw.shape[1])):
        lin = base + r * pitch + c
        out[lin ^ (((lin >> 7) & ((1 << bits) - 1)) << 4)] = int(raw[r, c])
    return out


@pytest.mark.parametrize("sw, dt", list(itertools.product(SWIZZLES, ("f16", "f32"))))
def test_smem_image_is_swizzled_as_the_mode_says(sw, dt):
    """One CTA, one tile, one stage: after the copy the stage holds the loaded box."""
    bc = _widest(dt, sw)
    p = TmaCopyParams(rows=16, cols=bc, dtype=dt, box_rows=16, box_cols=bc, swizzle=sw, stages=1)
    kernel, grid, block = build_tmacopy(p)
    gm, params, a = setup(p, values=True)
    ex = CTAExecutor(kernel, Launch(grid=grid, block=block, params=params), gm, 0, values=True)
    run_cta(ex)
    base = kernel.shared_layout()["smem"]
    assert base % 1024 == 0
    pitch = max(bc * p.esize, SPAN[sw] if sw != "none" else 0)
    image = _swizzled_image(a, base, pitch, BITS[sw])
    smem = np.asarray(ex.smem).view(np.uint8)
    addrs = np.fromiter(image, dtype=np.int64)
    assert np.array_equal(smem[addrs], np.fromiter(image.values(), dtype=np.uint8))
    if sw != "none":  # the law distinguishes: the plain row-major image is not what is there
        plain = base + np.arange(a.nbytes)
        assert not np.array_equal(smem[plain], a.view(np.uint8).ravel())
    assert np.array_equal(read_output(gm, p).view(np.uint8), a.view(np.uint8))


@pytest.mark.parametrize("kw, field", [
    ({"box_rows": 257}, "box_rows"),
    ({"box_cols": 0}, "box_cols"),
    ({"dtype": "f16", "box_cols": 12}, "box_cols"),            # 24 B: not a multiple of 16
    ({"dtype": "f16", "swizzle": "64B", "box_cols": 64}, "box_cols"),   # 128 B > the 64B span
    ({"dtype": "f32", "swizzle": "32B", "box_cols": 16}, "box_cols"),
    ({"swizzle": "16B"}, "swizzle"),
    ({"dtype": "bf16"}, "dtype"),
    ({"rows": 100, "box_rows": 64}, "rows x cols"),
    ({"stages": 0}, "stages"),
    ({"stages": 9}, "stages"),
    ({"box_rows": 256, "box_cols": 64, "stages": 8}, "stages"),  # 8 x 32 KB > 227 KB
    ({"ctas": 0}, "ctas"),
    ({"ctas": (1 << 24) + 1}, "ctas"),
    ({"rows": 1 << 17, "cols": 8, "box_rows": 1, "box_cols": 8, "swizzle": "none"}, "rows"),  # gridDim.y
])
def test_bad_parameters_name_the_field(kw, field):
    with pytest.raises(InputError) as e:
        TmaCopyParams(**kw)
    assert field in str(e.value)


@pytest.mark.parametrize("d", [3, 5, 7, 12, 100, 1000, 4095, 65537])
def test_div_magic_exact(d):
    n_max = 1 << 31
    m, s = div_magic(d, n_max)
    ns = np.array([0, 1, d - 1, d, d + 1, n_max - 1, n_max - 2, n_max - d, (n_max - 1) // d * d,
                   (n_max - 1) // d * d - 1], dtype=np.uint64)
    assert np.array_equal((ns * np.uint64(m)) >> np.uint64(32 + s), ns // np.uint64(d))
    rng = np.random.default_rng(d)
    ns = rng.integers(0, n_max, 100000, dtype=np.uint64)
    assert np.array_equal((ns * np.uint64(m)) >> np.uint64(32 + s), ns // np.uint64(d))


@pytest.mark.parametrize("ctas", [None, 20])
def test_memo_equals_detailed(ctas):
    """The CTA memo (alike CTAs simulated once) gives the cycles of simulating every CTA."""
    p = TmaCopyParams(rows=512, cols=1024, dtype="f16", box_rows=32, box_cols=64, swizzle="128B", stages=2, ctas=ctas)
    kernel, grid, block = build_tmacopy(p)
    out = []
    for memo in (False, True):
        gm, params, _ = setup(p, values=False)
        r = simulate(kernel, Launch(grid=grid, block=block, params=params), values=False, gmem=gm, checks=False,
                     regs_per_thread=REGS_PER_THREAD, memory="partitioned", memo=memo)
        out.append((r.cycles, r.bytes_hbm, r.extra.get("bytes_hbm_written")))
    assert out[0] == out[1] and out[0][1] == p.rows * p.cols * 2
