"""`hopsim bank-conflicts`: JSON Lines in, JSON Lines out; bad input -> one line, exit 2, no stdout."""

from __future__ import annotations

import io
import json

import pytest

from hopsim.cli import main

ROW = list(range(0, 128, 4))


def _run(capsys, monkeypatch, text, *extra):
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    rc = main(["bank-conflicts", "--trace", "-", *extra])
    out, err = capsys.readouterr()
    return rc, out, err


def test_echo_and_counts(capsys, monkeypatch):
    lines = [
        {"name": "a", "op": "ld.shared.b32", "addrs": ROW, "extra": [1, 2]},
        {"op": "ld.shared.v4.b32", "addrs": [lane * 128 for lane in range(32)]},
        {"name": "partial", "op": "st.shared.b32", "addrs": [0] + [None] * 31},
    ]
    rc, out, err = _run(capsys, monkeypatch, "\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert rc == 0 and err == ""
    recs = [json.loads(x) for x in out.splitlines()]
    assert len(recs) == 3
    assert recs[0]["extra"] == [1, 2] and recs[0]["name"] == "a"
    assert (recs[0]["wavefronts"], recs[0]["bank_conflicts"]) == (1, 0)
    assert (recs[1]["wavefronts"], recs[1]["bank_conflicts"]) == (32, 28)
    assert recs[2]["wavefronts"] == 1


def test_summary_goes_to_stderr(capsys, monkeypatch):
    rc, out, err = _run(capsys, monkeypatch, json.dumps({"op": "ld.shared.b32", "addrs": ROW}), "--summary")
    assert rc == 0
    assert [json.loads(x)["wavefronts"] for x in out.splitlines()] == [1]
    assert "ld.shared.b32" in err and "total" in err


def test_input_counts_are_kept_and_compared(capsys, monkeypatch):
    """A line that carries its own counts (a measured record) keeps them as input_*; the model's
    counts are the ones under `wavefronts` / `bank_conflicts`."""
    lines = [{"name": "claimed", "op": "ld.shared.b32", "addrs": ROW, "wavefronts": 99, "bank_conflicts": 7},
             {"name": "plain", "op": "ld.shared.b32", "addrs": ROW}]
    rc, out, err = _run(capsys, monkeypatch, "\n".join(json.dumps(x) for x in lines), "--summary")
    assert rc == 0
    rec, plain = (json.loads(x) for x in out.splitlines())
    # 32 consecutive words: one wavefront, no conflict (32 banks of 4 B)
    assert (rec["input_wavefronts"], rec["input_bank_conflicts"]) == (99, 7)
    assert (rec["wavefronts"], rec["bank_conflicts"]) == (1, 0)
    assert "input_wavefronts" not in plain
    assert "0 of 1 accesses" in err


def test_h100_records_through_the_cli(capsys, monkeypatch):
    """Every committed ncu record line fed as a trace: the CLI reproduces all measured counts."""
    from validation.provenance import load_records

    pats = [p for r in load_records("bank_conflicts") for p in r["patterns"]]
    text = "\n".join(json.dumps({k: p[k] for k in ("name", "op", "addrs", "wavefronts", "bank_conflicts")})
                     for p in pats)
    rc, out, err = _run(capsys, monkeypatch, text, "--summary")
    assert rc == 0 and len(pats) >= 600
    assert f"{len(pats)} of {len(pats)} accesses" in err
    for line in out.splitlines():
        r = json.loads(line)
        assert (r["wavefronts"], r["bank_conflicts"]) == (r["input_wavefronts"], r["input_bank_conflicts"]), r["name"]


@pytest.mark.parametrize("second,needle", [
    ("not json", "line 2: json"),
    (json.dumps({"op": "ld.shared.b128", "addrs": ROW}), "line 2: op="),
    (json.dumps({"op": "ld.shared.b32", "addrs": ROW[:31]}), "line 2: addrs="),
    (json.dumps({"op": "ld.shared.b32", "addrs": ROW[:31] + [2]}), "line 2: addrs[31]=2"),
    (json.dumps({"op": "ld.shared.b32", "addrs": ROW[:31] + [232448]}), "line 2: addrs[31]=232448"),
    (json.dumps({"addrs": ROW}), "line 2: op="),
    ("[1, 2]", "line 2: json"),
])
def test_bad_input(capsys, monkeypatch, second, needle):
    text = json.dumps({"op": "ld.shared.b32", "addrs": ROW}) + "\n" + second + "\n"
    rc, out, err = _run(capsys, monkeypatch, text)
    assert rc == 2
    assert out == ""  # nothing printed that could pass for a result
    assert needle in err and len(err.strip().splitlines()) == 1


def test_file_and_missing_file(tmp_path, capsys):
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps({"op": "ldmatrix.x4", "addrs": [r * 128 for r in range(32)]}) + "\n")
    assert main(["bank-conflicts", "--trace", str(f)]) == 0
    assert json.loads(capsys.readouterr().out)["wavefronts"] == 32
    assert main(["bank-conflicts", "--trace", str(tmp_path / "nope.jsonl")]) == 2
    assert "--trace" in capsys.readouterr().err
