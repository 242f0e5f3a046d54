"""`python3 -m validation.cycle_profile --set worst17`: heldout17's worst configurations (published
error at the SMs' clock of 20% or more), each on the chip and as one CTA on one SM, listed from the
published report without a GPU."""

from __future__ import annotations

import json

from validation import cycle_profile


def test_worst17_pairs_each_bad_configuration_with_its_one_sm_version():
    rows = json.loads(cycle_profile.HELDOUT17_REPORT.read_text())["rows"]
    bad = [r for r in rows if abs(r.get("err_time_sm_clock") or 0.0) >= cycle_profile.WORST_ERR]
    ps = cycle_profile.worst17_configurations()
    tags = [p.tag for p in ps]
    assert len(tags) == len(set(tags))
    chip = {r["tag"] for r in bad}
    assert chip <= set(tags)  # every bad configuration as it ran
    one_sm = [p for p in ps if p.tag not in chip]
    assert len(one_sm) == len({(p.bm, p.bn) + tuple(sorted(p.to_dict().items())) for p in one_sm})
    assert all(p.m == p.bm and p.n == p.bn and p.k == 4096 and p.grid == 1 for p in one_sm)
    # a one-SM version keeps every other knob of a bad configuration
    knobs = {json.dumps({k: v for k, v in r["params"].items() if k not in ("m", "n", "k")}, sort_keys=True)
             for r in bad}
    assert all(json.dumps({k: v for k, v in p.to_dict().items() if k not in ("m", "n", "k")}, sort_keys=True)
               in knobs for p in one_sm)


def test_list_prints_the_set(capsys):
    assert cycle_profile.main(["--set", "worst17", "--list"]) == 0
    out = capsys.readouterr()
    assert len(out.out.split()) == len(cycle_profile.worst17_configurations())


def test_the_worst17_folder_holds_only_heldout17_configurations_and_their_one_sm_versions():
    """The folder that test_heldout17_set lets hold heldout17's tags holds nothing else."""
    folder = cycle_profile.RECORDS / "worst17"
    tags = {json.loads(p.read_text())["tag"] for p in folder.glob("gemm_cycles__*.json")}
    assert tags == {p.tag for p in cycle_profile.worst17_configurations()}
