"""Issue 11, "Bad input": each class of the fuzz corpus refused before anything runs, as one line
naming the field, the value and what is allowed, exit 2; outputs all written or none; an endless
kernel ends by default (livelock), a deadlock under --max-cycles is still a deadlock."""

from __future__ import annotations

import pathlib

import pytest

from hopsim import inputs
from hopsim.cli import main
from tests.cli.one_line import one_error_line

SPIN = """.kernel spin
.reg .b32 %r<4>
LOOP:
  add.s32 %r0, %r0, 1;
  bra LOOP;
"""

DEAD = """.kernel dead
.shared .align 8 .b64 full[1]
.reg .pred %p<2>
    mbarrier.init.shared::cta.b64 [full], 2;
    bar.sync 0;
W:
    mbarrier.try_wait.parity.shared::cta.b64 %p0, [full], 0;
@!%p0 bra W;
    exit;
"""

COPY = """.kernel copy
.param .u64 X
.param .u32 n
.reg .u32 %r<4>
.reg .u64 %rd<4>
    ld.param.u64 %rd0, [X];
    exit;
"""


@pytest.fixture
def kdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spin.ptx").write_text(SPIN)
    (tmp_path / "dead.ptx").write_text(DEAD)
    (tmp_path / "copy.ptx").write_text(COPY)
    return tmp_path


LAUNCH_BAD = [
    ("smem: [1]", "launch smem"),
    ("buffers: 5", "launch buffers"),
    ("params: true", "launch params"),
    ("save: {out: 5}", "launch save.out"),
    ("{1: 2, grid: 1}", "string keys"),
    ("grid: " + "[" * 100 + "]" * 100, "nested at most"),
    ("grid: [1, 65536, 65536]", "CUDA's limits"),
    ("block: [2048]", "at most 1024 threads"),
    ("bogus: 1", "keys grid, block"),
    ("params: {n: " + "9" * 5000 + "}", "launch"),
    ("a0: &a0 [1,1,1,1,1,1,1,1,1]\n" + "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n"
                                               for i in range(1, 10)) + "grid: *a9", "aliases"),
    ("grid: &a [*a]", "aliases"),
]


@pytest.mark.parametrize("text, must_say", LAUNCH_BAD)
def test_launch_yaml_values_are_typed(kdir, capsys, text, must_say):
    (kdir / "l.yaml").write_text(text)
    assert main(["simulate", "copy.ptx", "--launch", "l.yaml", "--buffer", "X=zeros:f32:4"]) == 2
    line = one_error_line(capsys)
    assert must_say in line


@pytest.mark.parametrize("argv, must_say", [
    (["--grid", "4611686018427387904"], "grid"),
    (["--grid", "1,65536,65536"], "CUDA's limits"),
    (["--grid", "2147483647"], "at most 1048576 CTAs"),
    (["--block", "1025"], "at most 1024 threads"),
    (["--smem", "300000"], "dynamic shared memory"),
    (["--buffer", "X=zeros:f32:200000x100000"], "memory budget"),
    (["--param", "n=0x1e5g"], "a number for .param .u32"),
    (["--param", "n=4294967296"], "in 0..4294967295"),
    (["--max-cycles", "-1"], "max-cycles"),
    (["--max-cycles", "0"], "max-cycles"),
    (["--plot", ""], "not empty"),
    (["--trace", ""], "not empty"),
    (["--trace", "/proc/x.json"], "not under /proc"),
    (["--trace", "."], "not a directory"),
    (["--trace", "a" * 300 + ".json"], "at most 255 bytes"),
    (["--trace", "nodir/t.json"], "existing, writable directory"),
    (["--trace", "t.json", "--plot", "t.json"], "a file name ending in .png"),
    (["--save", "X=o.npy", "--save", "X=o.npy", "--trace", "o.npy"], "trace"),
])
def test_ptx_flags_are_bounded(kdir, capsys, argv, must_say):
    base = ["simulate", "copy.ptx", "--buffer", "X=zeros:f32:4", "--param", "n=1"]
    assert main(base + argv) == 2
    assert must_say in one_error_line(capsys)
    assert sorted(p.name for p in kdir.iterdir()) == ["copy.ptx", "dead.ptx", "spin.ptx"]


def test_non_utf8_kernel_file(kdir, capsys):
    (kdir / "bad.ptx").write_bytes(b".kernel k\n\xff\xfe exit;\n")
    assert main(["simulate", "bad.ptx"]) == 2
    assert "UTF-8" in one_error_line(capsys)


def test_an_endless_kernel_ends_by_default_as_a_livelock(kdir, capsys):
    assert main(["simulate", "spin.ptx", "--block", "32"]) == 2
    line = one_error_line(capsys)
    assert "livelock" in line and "exceeded 102000 cycles" in line  # one CTA: 100000 + 1000 x 2 x 1


def test_livelock_under_max_cycles_names_the_cap(kdir, capsys):
    assert main(["simulate", "spin.ptx", "--block", "32", "--max-cycles", "5000"]) == 2
    assert "livelock" in (line := one_error_line(capsys)) and "5000" in line


@pytest.mark.parametrize("cap", [[], ["--max-cycles", "100000"]])
def test_deadlock_is_a_deadlock_with_or_without_a_cap(kdir, capsys, cap):
    assert main(["simulate", "dead.ptx", "--block", "64"] + cap) == 2
    assert "Deadlock" in one_error_line(capsys)


def test_outputs_are_all_written_or_none(kdir, capsys, monkeypatch):
    """The second --save fails after the first was written: neither is left behind."""
    import numpy as np

    real = np.save
    calls = []

    def failing_save(fh, arr):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(fh, arr)

    monkeypatch.setattr(np, "save", failing_save)
    with pytest.raises(OSError):
        main(["simulate", "copy.ptx", "--buffer", "X=zeros:f32:4", "--buffer", "Y=zeros:f32:4",
              "--param", "n=1", "--save", "X=x.npy", "--save", "Y=y.npy"])
    assert sorted(p.name for p in kdir.iterdir()) == ["copy.ptx", "dead.ptx", "spin.ptx"]


def test_outputs_are_written_when_all_succeed(kdir, capsys):
    assert main(["simulate", "copy.ptx", "--buffer", "X=arange:f32:4", "--param", "n=1",
                 "--save", "X=x.npy", "--trace", "t.json", "--json"]) == 0
    import numpy as np

    assert np.load(kdir / "x.npy").tolist() == [0.0, 1.0, 2.0, 3.0]
    assert (kdir / "t.json").stat().st_size > 0
    assert not [p for p in kdir.iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize("argv, must_say", [
    (["--m", "4611686018427387904"], "up to 16777216"),
    (["--m", "2**62"], "up to 16777216"),
    (["--m", "1048576", "--n", "1048576", "--k", "64"], "at most 1048576 CTAs"),
    (["--m", "131072", "--n", "131072", "--k", "64", "--mode", "full"], "memory budget"),
    (["--plot-cycles", "-5", "--plot", "x.png"], "plot-cycles"),
    (["--plot", ""], "not empty"),
    (["--trace", "/proc/x.json"], "not under /proc"),
    (["--trace", "t.json", "--plot", "."], "not a directory"),
    (["--m", "1-100000", "--n", "1-100000"], "at most 100000 points"),
])
def test_gemm_sizes_and_outputs_checked_first(kdir, capsys, argv, must_say):
    assert main(["simulate", "gemm"] + argv) == 2
    assert must_say in one_error_line(capsys)
    assert not (kdir / "t.json").exists()


def test_huge_valid_gemm_allocates_no_data_in_timing_only_mode():
    """131072 x 131072 x 64 in the fast mode: A, B, C are reserved address space, not arrays."""
    from hopsim.gemm_setup import setup_gemm
    from kernels.params import GemmParams

    g, launch, a, b = setup_gemm(GemmParams(m=131072, n=131072, k=64), values=False)
    assert g.buffers()["C"][1] == 131072 * 131072 * 2
    assert sum(x.base is None and x.nbytes or 0 for x in g._bufs) == 0  # every buffer is a view
    assert a.strides == (0, 0) and b.strides == (0, 0)


def test_sweep_list_refuses_a_huge_product(capsys):
    assert main(["sweep", "--m", "1-100000", "--n", "1-100000", "--list"]) == 2
    assert "at most 100000 points" in one_error_line(capsys)


def test_sweep_grid_yaml_guarded(tmp_path, capsys):
    g = tmp_path / "g.yaml"
    g.write_text("sweep: " + "[" * 100000 + "]" * 100000)
    assert main(["sweep", "--grid", str(g), "--list"]) == 2
    assert "nested at most" in one_error_line(capsys)


def test_corrupt_record_file_is_named(tmp_path, capsys):
    (tmp_path / "gemm__x.json").write_text('{"kind": "gemm", "params": ')
    assert main(["sweep", "--m", "512", "--n", "512", "--k", "512", "--compare-records", str(tmp_path),
                 "--executor", "serial", "--no-progress"]) == 2
    assert "gemm__x.json" in one_error_line(capsys)


def test_mem_budget_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("HOPSIM_MEM_BUDGET", "512M")
    assert inputs.mem_budget() == 512 << 20
    monkeypatch.setenv("HOPSIM_MEM_BUDGET", "lots")
    with pytest.raises(inputs.InputError):
        inputs.mem_budget()
    monkeypatch.delenv("HOPSIM_MEM_BUDGET")
    assert inputs.mem_budget() == inputs.DEFAULT_MEM_BUDGET


def test_no_temp_file_is_left_when_a_staged_write_fails(tmp_path):
    with pytest.raises(RuntimeError):
        with inputs.Outputs() as outs:
            pathlib.Path(outs.stage(tmp_path / "a.json")).write_text("{}")
            raise RuntimeError("plot failed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("line, must_say", [
    ("mov.u32 %r0, 0f7FC00000;", "needs an integer immediate"),
    ("add.u32 %r0, %r0, 2.5;", "needs an integer immediate"),
    ("add.u32 %r0, %r0, 99999999999999999999999999;", "does not fit in 64 bits"),
    ("mov.u32 %r0, " + "9" * 5000 + ";", "an immediate fits in 64 bits"),
    ("mov.f32 %f0, 0f7FC;", "f7FC"),
])
def test_ir_immediates_are_checked(kdir, capsys, line, must_say):
    (kdir / "i.ptx").write_text(f".kernel k\n.reg .b32 %r<4>\n.reg .f32 %f<4>\n  {line}\n  exit;\n")
    assert main(["simulate", "i.ptx"]) == 2
    out = one_error_line(capsys)
    assert must_say in out and "i.ptx:4" in out


@pytest.mark.parametrize("decl, must_say", [
    (".reg .b32 %r<100000000>", "register count 100000000 is invalid"),
    (".reg .f32 %a<4>\n  wgmma.fence.sync.aligned;\n  mov.b32 %a0, {%a0..%a100000000};", "too long"),
])
def test_ir_register_counts_are_bounded(kdir, capsys, decl, must_say):
    (kdir / "r.ptx").write_text(f".kernel k\n{decl}\n  exit;\n")
    assert main(["simulate", "r.ptx"]) == 2
    assert must_say in one_error_line(capsys)


@pytest.mark.parametrize("argv, must_say", [
    (["desc", "decode", "1e5"], "hex needs the 0x prefix"),
    (["desc", "decode", "4000"], "0x4000004000010040"),  # decimal 4000 is fine, see below
    (["swizzle", "show", "128B", "--base", str(2**100)], "0 .. 2^32-128"),
])
def test_desc_and_swizzle_numbers(capsys, argv, must_say):
    code = main(argv)
    if argv[2] == "4000":
        assert code == 0 and "4000" in capsys.readouterr().out
        return
    assert code == 2 and must_say in one_error_line(capsys)


@pytest.mark.parametrize("text, must_say", [
    ('{"op":"ld.shared.b32","addrs":[' + "9" * 5000 + "]}", "4300 digits"),
    ("[" * 100000, "nested at most"),
])
def test_bank_trace_json_edge_cases(tmp_path, capsys, text, must_say):
    (tmp_path / "t.jsonl").write_text(text + "\n")
    assert main(["bank-conflicts", "--trace", str(tmp_path / "t.jsonl")]) == 2
    assert must_say in one_error_line(capsys)
