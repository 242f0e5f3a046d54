"""The numbers README.md and the guides quote from records and reports are the generator's
(hopsim/validate/docs_numbers.py): the committed docs equal its output, and its sources agree
with each other where they overlap."""

from __future__ import annotations

import pathlib

from hopsim.validate import docs_numbers as dn

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_committed_docs_equal_the_generators_output():
    assert dn.stale(ROOT) == [], "run: python3 -m hopsim.validate.docs_numbers"


def test_every_doc_has_its_generated_blocks_and_every_block_is_used():
    used = set()
    for d in dn.DOCS:
        used |= {m.group("name") for m in dn.BLOCK.finditer((ROOT / d).read_text())}
    assert used == set(dn.BLOCKS)


def test_bank_pattern_counts_agree_with_the_report():
    """The report compares every recorded pattern measurement (rows, not distinct patterns)."""
    bp = dn.bank_patterns()
    assert dn.bank_counts()[1] == bp["rows"] == sum(bp["runs"].values())
    assert bp["distinct"] <= bp["rows"]


def test_results_table_counts_every_configuration_of_the_report_once():
    es = dn.cycle_entries()
    by_variant = {}
    for e in es:
        key = e.config["variant"] + str(e.config.get("consumers", 1))
        by_variant[key] = by_variant.get(key, 0) + 1
    assert sum(by_variant.values()) == len(es) == len(dn._compare()["points"])


def test_pipeline_depth_prose_holds_in_the_records():
    """docs/guide/pipeline-depth.md section 4 states shapes (no numbers): check them on the records."""
    t = dn.depth_times()
    single_auto = [t[("single", 1, 128, "auto", s)] for s in dn.DEPTHS]
    single_one = [t[("single", 1, 128, 1, s)] for s in dn.DEPTHS]
    ws = [t[("ws", 1, 128, "auto", s)] for s in dn.DEPTHS]
    assert min(single_auto) == single_auto[2]  # auto: best at 3 stages (the last with 2+ CTAs/SM)
    assert single_auto[3] > single_auto[2]  # one CTA from 4 stages on: a little worse
    assert single_one[0] > 1.5 * single_one[4]  # one CTA per SM: depth helps steeply
    assert min(ws) < min(single_auto) and ws[3] < ws[0]  # ws: depth helps, fastest of the two
    for s in dn.DEPTHS:  # 8-row boxes cost at every depth
        assert t[("single", 1, 8, "auto", s)] > t[("single", 1, 128, "auto", s)]
        assert t[("ws", 1, 8, "auto", s)] > t[("ws", 1, 128, "auto", s)]
