"""The bank model matches every pattern measured on the H100 (committed ncu records), exactly.

Records: validation/records/h100/bank_conflicts__h100_ncu*.json, written by
`python3 -m validation.bank_truth run` (one warp per pattern under ncu). `wavefronts` is the SASS
counter smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{ld,st,ldsm,stsm}.sum,
`bank_conflicts` is l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum.
"""

from __future__ import annotations

from hopsim.functional.banks import wavefronts
from validation.bank_patterns import patterns
from validation.bank_truth import parse_ncu_csv
from validation.provenance import load_records

RECORDS = load_records("bank_conflicts")
MEASURED = [(r["name"], p) for r in RECORDS for p in r["patterns"]]


def test_records_exist_and_cover_the_issue():
    assert RECORDS, "no bank_conflicts record committed"
    names = {p["name"] for _, p in MEASURED}
    assert len(names) >= 80
    ops = {p["op"] for _, p in MEASURED}
    assert len(ops) == 22  # every op of the trace format
    for must in ("ld128_col_walk_sw128B", "ldmatrix_x4_trans_pitch128_swnone", "epi_stmatrix_x4_warp0_i0",
                 "epi_copyout_ld128_warp0_i0", "ld128_pair_uniform_xor1", "ld64_pair_uniform_xor2"):
        assert must in names


def test_every_launch_ran_exactly_one_instruction():
    bad = [p["name"] for _, p in MEASURED if not p["one_instruction"]]
    assert not bad


def test_model_and_counters_match_h100():
    """Every measured row (all records, each checked): the model's (wavefronts, bank conflicts)
    equal the SASS counters, and the hardware l1tex wavefronts equal the model's too: per op for
    loads, and the total, which is one higher in every probe launch (a constant of the launch,
    not of the instruction). One pass over the rows; the failures are listed by record and name."""
    bad = []
    for rec, p in MEASURED:
        r = wavefronts(p["op"], p["addrs"])
        m = p["measured"]
        if (r.wavefronts, r.bank_conflicts) != (p["wavefronts"], p["bank_conflicts"]):
            bad.append(f"{rec}:{p['name']}: model {(r.wavefronts, r.bank_conflicts)} != "
                       f"measured {(p['wavefronts'], p['bank_conflicts'])}")
        if m["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] != r.hw_wavefronts + 1:
            bad.append(f"{rec}:{p['name']}: l1tex total {m['l1tex__data_pipe_lsu_wavefronts_mem_shared.sum']} "
                       f"!= hw wavefronts {r.hw_wavefronts} + 1")
        if p["op"].startswith("ld.") and m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] != r.hw_wavefronts:
            bad.append(f"{rec}:{p['name']}: l1tex ld {m['l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum']} "
                       f"!= hw wavefronts {r.hw_wavefronts}")
    assert len(MEASURED) >= 1140  # every committed measurement is checked (1140 at 93f1903)
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:40])


def test_runs_agree_with_each_other():
    seen: dict[str, tuple] = {}
    for _, p in MEASURED:
        v = (p["wavefronts"], p["bank_conflicts"])
        assert seen.setdefault(p["name"], v) == v, p["name"]


def test_pattern_generator_matches_the_record():
    gen = {p["name"]: p for p in patterns()}
    for _, p in MEASURED:
        assert gen[p["name"]]["addrs"] == p["addrs"] and gen[p["name"]]["op"] == p["op"]


def test_h100_surprises_as_measured():
    """What the H100 showed that the documented group model (docs/hopper-facts.md §3.3) does not predict."""
    m = {p["name"]: p for _, p in MEASURED}
    # LDS.64 / LDS.128 with thread-pair-uniform addresses: groups merge (the sm70 note holds on sm90)
    assert m["ld64_broadcast"]["wavefronts"] == 1  # plain model: 2
    assert m["ld128_broadcast"]["wavefronts"] == 2  # plain model: 4
    assert m["ld128_pair_uniform_xor1"]["wavefronts"] == 2 and m["ld128_pair_uniform_xor2"]["wavefronts"] == 2
    assert m["ld128_pair_uniform_xor4"]["wavefronts"] == 4  # n^4 pairs do not merge
    # stores never merge
    assert m["st64_broadcast"]["wavefronts"] == 2 and m["st128_broadcast"]["wavefronts"] == 4
    # SASS and hardware counters disagree when a merged group still conflicts:
    two = m["ld64_two_words_same_bank"]  # lanes alternate 0 / 128: n^2-uniform
    assert two["wavefronts"] == 4 and two["bank_conflicts"] == 1
    assert two["measured"]["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 2


def test_ncu_csv_parser():
    text = "\n".join([
        "==PROF== Connected to process 1 (/usr/bin/python3)",
        '==PROF== Profiling "bank_probe_ld_b32" - 0: 0%....50%....100% - 3 passes',
        "some program output",
        '"ID","Process ID","Kernel Name","l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum","x.sum"',
        '"","","","","inst"',
        '"0","1","bank_probe_ld_b32","3,264","1"',
        '"1","1","bank_probe_st_b32","0","n/a"',
        "==PROF== Disconnected from process 1",
    ])
    rows = parse_ncu_csv(text)
    assert [r["ID"] for r in rows] == [0, 1]
    assert rows[0]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] == 3264
    assert rows[1]["x.sum"] is None and rows[1]["Kernel Name"] == "bank_probe_st_b32"
