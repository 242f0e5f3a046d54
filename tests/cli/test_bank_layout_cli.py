"""`hopsim bank-conflicts --layout ... --access ...` and `hopsim swizzle show --layout`: output forms,
the emitted trace counted by `--trace -` the same, and bad input -> one line, exit 2, no stdout."""

from __future__ import annotations

import io
import json

import pytest

from hopsim.cli import main

SEED = ["--layout", "(128,32):(32,1)", "--elem-bytes", "2"]


def test_table_and_json(capsys):
    assert main(["bank-conflicts", *SEED, "--swizzle", "Swizzle<3,3,3>", "--access", "ldmatrix.x4,cp.async.16"]) == 0
    out = capsys.readouterr().out
    assert "ldmatrix.x4" in out and "cp.async.16" in out and "Swizzle<3,3,3>" in out
    assert main(["bank-conflicts", *SEED, "--access", "ldmatrix.x4", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    (r,) = got["accesses"]
    # 64-B rows: 8 rows of one matrix fall in 2 of the 8 16-B slots -> 4 wavefronts per matrix
    assert r["worst_wavefronts"] == 4 * 4 and r["worst_ideal"] == 4
    assert r["wavefronts"] == r["instructions"] * 16 and r["bank_conflicts"] == r["instructions"] * 12


def test_emitted_trace_counts_the_same_through_the_trace_path(capsys, monkeypatch):
    args = [*SEED, "--swizzle", "Swizzle<2,3,3>", "--access", "ldmatrix.x4,st.shared.v2"]
    assert main(["bank-conflicts", *args, "--emit-trace"]) == 0
    trace = capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(trace))
    assert main(["bank-conflicts", "--trace", "-"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert main(["bank-conflicts", *args, "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)["accesses"]
    for r in reports:
        mine = [x for x in lines if x["name"].startswith(r["access"] + "#")]
        assert len(mine) == r["instructions"]
        assert sum(x["wavefronts"] for x in mine) == r["wavefronts"]
        assert sum(x["bank_conflicts"] for x in mine) == r["bank_conflicts"]


def test_swizzle_show_layout_banks(capsys):
    assert main(["swizzle", "show", "Swizzle<3,3,3>", "--layout", "(64,64):(64,1)", "--elem-bytes", "2",
                 "--json"]) == 0
    bank = json.loads(capsys.readouterr().out)["bank"]
    assert len(bank) == 8 and len(bank[0]) == 64
    for r in range(8):
        for c in range(64):
            # half offset 64 r + c; Swizzle<3,3,3> XORs r % 8 into the 8-half chunk index c // 8
            byte = 2 * (64 * r + ((c // 8) ^ (r % 8)) * 8 + c % 8)
            assert bank[r][c] == (byte // 4) % 32
    assert main(["swizzle", "show", "128B", "--layout", "(16,64):(64,1)", "--elem-bytes", "2", "--rows", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 4 + 3  # title, legend, header, rule, then the 3 rows
    assert "Swizzle<3,4,3> on bytes" in out


@pytest.mark.parametrize("argv,needle", [
    (["bank-conflicts", "--layout", "(64,64):(64", "--elem-bytes", "2", "--access", "ldmatrix.x4"], "--layout="),
    (["bank-conflicts", "--layout", "(64,64,2):(64,1,4096)", "--elem-bytes", "2", "--access", "ldmatrix.x4"],
     "rank-2"),
    (["bank-conflicts", *SEED, "--access", "ldmatrix.x3"], "--access='ldmatrix.x3'"),
    (["bank-conflicts", *SEED[:2], "--elem-bytes", "3", "--access", "ld.shared.v4"], "--elem-bytes=3"),
    (["bank-conflicts", *SEED[:2], "--access", "ld.shared.v4"], "--elem-bytes=None"),
    (["bank-conflicts", *SEED[:2], "--elem-bytes", "8", "--access", "ld.shared.b32"], "--elem-bytes=8"),
    (["bank-conflicts", "--layout", "(60,60):(60,1)", "--elem-bytes", "2", "--access", "ld.shared.v4"],
     "multiple of 8 elements"),
    (["bank-conflicts", *SEED, "--access", "ld.shared.v4", "--tv", "(3,8):(8,1)"], "--tv="),
    (["bank-conflicts", *SEED, "--access", "ld.shared.v4", "--tv", "(4,8):(1,1)"], "bijection"),
    (["bank-conflicts", *SEED, "--access", "ld.shared.v4", "--tv", "(128,16):(16,1)"], "at most 1024 threads"),
    (["bank-conflicts", *SEED, "--access", "ld.shared.v4", "--tv", "(3,32):(32,1)"], "tiles the tile"),
    (["bank-conflicts", "--layout", "(64,64):(1,64)", "--elem-bytes", "2", "--swizzle", "Swizzle<3,1,3>",
      "--access", "ld.shared.v4"], "contiguous"),
    (["bank-conflicts", "--layout", "(512,512):(512,1)", "--elem-bytes", "2", "--access", "ld.shared.v4"],
     "227 KB"),
    (["bank-conflicts", *SEED, "--access", "ld.shared.v4", "--swizzle", "Swizzle<3,3,1>"], "--swizzle="),
    (["bank-conflicts", *SEED, "--access", "ld.shared.v4", "--swizzle", "96B"], "--swizzle="),
    (["bank-conflicts", *SEED, "--access", "ld.shared.v4", "--base", "8"], "--base=8"),
    (["bank-conflicts", "--trace", "-", "--access", "ld.shared.v4"], "only with --layout"),
    (["bank-conflicts", "--elem-bytes", "2"], "exactly one"),
    (["swizzle", "show", "Swizzle<3,3,3>"], "needs --layout"),
    (["swizzle", "show", "128B", "--elem-bytes", "2"], "only with --layout"),
    (["swizzle", "show", "128B", "--layout", "(8,64):(64,1)"], "--elem-bytes=None"),
])
def test_bad_input_is_one_line_exit_2(capsys, monkeypatch, argv, needle):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and needle in err, err
