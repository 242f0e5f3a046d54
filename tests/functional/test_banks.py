"""Laws of the shared-memory bank model (hopsim.functional.banks). Golden values only where the
law is the H100 (those come from the committed ncu records, see tests/validation/test_bank_truth.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hopsim.functional.banks import OPS, SMEM_BYTES, _pair_uniform, wavefronts, wavefronts_batch
from isa.errors import InputError

LDST = [op for op in OPS if op.startswith(("ld.shared", "st.shared"))]
MATRIX = [op for op in OPS if "matrix" in op]


def _w(op):
    return OPS[op].width


def _rand(op, rng, n, span=2048, holes=0.0):
    w = _w(op)
    a = rng.integers(0, span // w, (n, 32)) * w
    if holes and OPS[op].cls in ("ld", "st"):
        a[rng.random((n, 32)) < holes] = -1
    return a


@pytest.mark.parametrize("op", list(OPS))
def test_batch_equals_single(op):
    rng = np.random.default_rng(1)
    a = _rand(op, rng, 300, holes=0.2)
    a[:50, 1::2] = a[:50, 0::2]  # some pair-uniform rows
    wf, bc = wavefronts_batch(op, a)
    for i in range(a.shape[0]):
        r = wavefronts(op, [None if x < 0 else int(x) for x in a[i]])
        assert (r.wavefronts, r.bank_conflicts) == (wf[i], bc[i])


@pytest.mark.parametrize("op", LDST + MATRIX)
def test_permuting_lanes_within_a_group_keeps_the_count(op):
    spec = OPS[op]
    rng = np.random.default_rng(2)
    a = _rand(op, rng, 200, holes=0.1)
    wf, bc = wavefronts_batch(op, a)
    b = a.copy()
    g = spec.group
    for start in range(0, 32, g):
        perm = rng.permutation(g) + start
        b[:, start:start + g] = a[:, perm]
    wf2, bc2 = wavefronts_batch(op, b)
    keep = np.ones(len(a), dtype=bool)
    if spec.cls == "ld" and spec.width >= 8:
        # the H100 merges groups of 64/128-bit loads on lane pairs (n^1 / n^2): the law holds for
        # rows that are pair-uniform in no group, before and after the permutation
        keep = ~(_pair_uniform(a, 2 * g).any(axis=1) | _pair_uniform(b, 2 * g).any(axis=1))
        assert keep.sum() > 100
    assert (wf[keep] == wf2[keep]).all() and (bc[keep] == bc2[keep]).all()


@pytest.mark.parametrize("op", LDST)
def test_broadcast_of_one_word(op):
    # 8/16/32-bit and stores: 1 wavefront per group with an active lane; 64/128-bit loads merge
    # pairs of groups (H100): LDS.64 -> 1, LDS.128 -> 2
    r = wavefronts(op, [256] * 32)
    expect = {"ld.shared.v2.b32": 1, "ld.shared.v4.b32": 2, "st.shared.v2.b32": 2, "st.shared.v4.b32": 4}.get(op, 1)
    assert r.wavefronts == expect and r.bank_conflicts == 0


@pytest.mark.parametrize("op", LDST + MATRIX)
def test_conflicts_are_hardware_wavefronts_minus_groups(op):
    rng = np.random.default_rng(3)
    for row in _rand(op, rng, 100, holes=0.3):
        r = wavefronts(op, [None if x < 0 else int(x) for x in row])
        assert r.bank_conflicts == r.hw_wavefronts - r.groups >= 0
        assert r.wavefronts >= r.groups


@pytest.mark.parametrize("op", LDST)
def test_one_active_lane_is_one_wavefront(op):
    for lane in (0, 7, 31):
        addrs = [None] * 32
        addrs[lane] = 4096
        assert wavefronts(op, addrs).wavefronts == 1


@pytest.mark.parametrize("op", LDST + MATRIX)
def test_conflict_free_contiguous_is_ideal(op):
    w = _w(op)
    r = wavefronts(op, [lane * w for lane in range(32)])
    ideal = max(1, 32 * w // 128) if op in LDST else OPS[op].lanes // 8
    assert r.wavefronts == ideal and r.bank_conflicts == 0


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(LDST + MATRIX), st.integers(0, 2**31 - 1))
def test_shifting_all_lanes_by_a_multiple_of_128_keeps_the_count(op, seed):
    """Moving all lanes by the same multiple of 128 B keeps banks and sharing: same counts."""
    rng = np.random.default_rng(seed)
    a = _rand(op, rng, 1, span=4096)
    b = a + 128 * int(rng.integers(1, 100))
    assert [x.tolist() for x in wavefronts_batch(op, a)] == [x.tolist() for x in wavefronts_batch(op, b)]


def test_ldmatrix_x1_ignores_upper_lanes():
    base = [r * 16 for r in range(8)]
    a = wavefronts("ldmatrix.x1", base + [None] * 24)
    b = wavefronts("ldmatrix.x1", base + [lane * 128 for lane in range(24)])
    assert a == b and a.wavefronts == 1


def test_swizzle_128B_makes_column_walk_conflict_free():
    def sw(x):
        return x ^ (((x >> 7) & 7) << 4)

    assert wavefronts("ld.shared.v4.b32", [lane * 128 for lane in range(32)]).wavefronts == 32
    assert wavefronts("ld.shared.v4.b32", [sw(lane * 128) for lane in range(32)]).wavefronts == 4
    assert wavefronts("ldmatrix.x4", [sw(r * 128 + j * 16) for j in range(4) for r in range(8)]).wavefronts == 4


@pytest.mark.parametrize("bad,field", [
    ({"op": "ld.shared.b64", "addrs": [0] * 32}, "op"),
    ({"op": "ld.shared.b32", "addrs": [0] * 31}, "addrs"),
    ({"op": "ld.shared.b32", "addrs": [2] + [0] * 31}, "addrs[0]"),
    ({"op": "ld.shared.v4.b32", "addrs": [0] * 31 + [8]}, "addrs[31]"),
    ({"op": "ld.shared.b32", "addrs": [0] * 5 + [SMEM_BYTES] + [0] * 26}, "addrs[5]"),
    ({"op": "ld.shared.b32", "addrs": [0] * 5 + [-4] + [0] * 26}, "addrs[5]"),
    ({"op": "ld.shared.b32", "addrs": [0] * 5 + ["x"] + [0] * 26}, "addrs[5]"),
    ({"op": "ldmatrix.x2", "addrs": [0] * 9 + [None] + [0] * 22}, "addrs[9]"),
])
def test_bad_input_names_the_field(bad, field):
    with pytest.raises(InputError) as e:
        wavefronts(bad["op"], bad["addrs"])
    assert e.value.field == field


def test_batch_validation():
    with pytest.raises(InputError):
        wavefronts_batch("ld.shared.b32", np.zeros((3, 31), dtype=np.int64))
    with pytest.raises(InputError) as e:
        wavefronts_batch("ld.shared.v2.b32", np.full((3, 32), 4, dtype=np.int64))
    assert "addrs[0]" in str(e.value)
    with pytest.raises(InputError):
        wavefronts_batch("ld.shared.b32", np.full((2, 32), SMEM_BYTES, dtype=np.int64))
