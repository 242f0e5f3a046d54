"""`hopsim desc`: decode/encode/lint through main() (capsys), and one subprocess run."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from hopsim.cli import main
REPO = pathlib.Path(__file__).resolve().parents[2]


def test_decode_table(capsys):
    assert main(["desc", "decode", "0x4000004000010040"]) == 0
    out = capsys.readouterr().out
    assert "1024 B" in out and "128B" in out and "layout type 1" in out


def test_decode_json_keys(capsys):
    assert main(["desc", "decode", "0x4000004000010040", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == {"start_address_bytes": 1024, "lbo_bytes": 16, "sbo_bytes": 1024, "start_address_field": 64,
                   "lbo_field": 1, "sbo_field": 64, "base_offset": 0, "swizzle": "128B"}


def test_encode(capsys):
    assert main(["desc", "encode", "--start-address-bytes", "1024", "--lbo-bytes", "16", "--sbo-bytes", "1024",
                 "--swizzle", "128B"]) == 0
    assert capsys.readouterr().out.strip() == "0x4000004000010040"
    assert main(["desc", "encode", "--start-address-bytes", "0x400", "--sbo-bytes", "128", "--lbo-bytes", "2048",
                 "--base-offset", "0"]) == 0
    assert capsys.readouterr().out.strip() == "0x0000000800800040"  # seed 000, K-major no swizzle


def test_encode_from_fields_equals_encode_from_bytes(capsys):
    """--X-field is the encoded 14-bit value (bytes >> 4): both spellings give the same descriptor."""
    assert main(["desc", "encode", "--start-address-field", "0x40", "--lbo-field", "1", "--sbo-field", "64",
                 "--swizzle", "128B"]) == 0
    assert capsys.readouterr().out.strip() == "0x4000004000010040"  # the example, in bytes 1024/16/1024
    assert main(["desc", "encode", "--start-address-field", "0x40", "--lbo-bytes", "2048", "--sbo-field", "8"]) == 0
    assert capsys.readouterr().out.strip() == "0x0000000800800040"  # seed 000, K-major no swizzle


def test_lint_clean_and_findings(capsys):
    ok = ["desc", "lint", "0x4000004000010040", "--operand", "A", "--major", "K", "--dtype", "f16",
          "--tile", "64x16", "--swizzle", "128B"]
    assert main(ok) == 0
    assert "no findings" in capsys.readouterr().out
    bad = ["desc", "lint", "0xc000000000000040", "--operand", "A", "--major", "K", "--dtype", "bf16",
           "--tile", "64x64", "--swizzle", "128B", "--json"]
    assert main(bad) == 1
    findings = json.loads(capsys.readouterr().out)
    by = {f["field"]: f for f in findings}
    assert "3 is 32B on sm_90" in by["layout_type"]["reason"] and by["sbo"]["expected"] == "1024 B"


@pytest.mark.parametrize("argv,needle", [
    (["desc", "decode", "0xnothex"], "descriptor='0xnothex'"),
    (["desc", "decode", "0x10000000000000000"], "64 bits"),
    (["desc", "decode", "0x4000004000014040"], "reserved bits"),
    (["desc", "encode", "--start-address-bytes", "1000", "--sbo-bytes", "1024"], "start_address_bytes=1000"),
    (["desc", "encode", "--start-address-bytes", "1024", "--sbo-bytes", "262144"], "sbo_bytes=262144"),
    (["desc", "encode", "--start-address-bytes", "1024", "--sbo-bytes", "1024", "--base-offset", "9"], "base_offset=9"),
    (["desc", "encode", "--start-address-bytes", "1024", "--sbo-bytes", "1024", "--swizzle", "256B"], "swizzle='256B'"),
    (["desc", "lint", "0x4000004000010040", "--operand", "C"], "operand='C'"),
    (["desc", "lint", "0x4000004000010040", "--tile", "64by16"], "tile='64by16'"),
    (["desc", "encode", "--start-address-bytes", "ten", "--sbo-bytes", "1024"], "not an integer"),
    (["desc", "encode", "--start-address-field", "16384", "--sbo-bytes", "1024"], "start_address_field=16384"),
    (["desc", "encode", "--start-address-field", "64", "--start-address-bytes", "1024", "--sbo-bytes", "1024"],
     "not allowed with"),
    (["desc", "lint", "0x4000004000010040", "--dtype", "f64"], "dtype='f64'"),
    (["desc", "lint", "0x4000004000010040", "--tile", "64"], "tile='64'"),
    (["desc", "lint", "0x4000004000010040", "--smem-base", "1000"], "smem_base=1000"),
    (["desc", "lint", "0x4000004000010040", "--operand", "A", "--n", "64"], "n=64"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse type errors exit from parse_args (status 2)
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_subprocess_python_m_hopsim():
    r = subprocess.run([sys.executable, "-m", "hopsim", "desc", "decode", "0x4000004000010040", "--json"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["swizzle"] == "128B"
    r = subprocess.run([sys.executable, "-m", "hopsim", "desc", "decode", "0xfoo"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
