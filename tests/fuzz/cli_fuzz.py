"""A seeded fuzz harness over every `hopsim` command line surface (issue 11, "Bad input").

Each case is an argv plus the input files it needs (kernels, launch and grid YAML, JSON Lines
traces, record directories), drawn from pools of valid, boundary and hostile values and from
mutations of valid kernels and documents. A case runs in-process (`hopsim.cli.main(argv)`, stdout
and stderr captured, in a fresh directory, SIGALRM as the hang check) and must satisfy:

- the exit status is 0, 1 (documented: sweep points failed, lint findings) or 2;
- nothing escapes as an exception (no traceback);
- exit 2 means exactly one error line on stderr (`...error: ...`), IR diagnostics aside;
- no partial output: no temporary file is left, and a run that fails writes no output file;
- no hang: a case ends within `--timeout` seconds.

Full run (>= 10,000 cases; about 5 min on 2 busy cores):

    python3 tests/fuzz/cli_fuzz.py --cases 12000 --seed 1

A fast deterministic slice runs in the default tests (tests/fuzz/test_cli_fuzz.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import pathlib
import random
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO = pathlib.Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hopsim.cli import main  # noqa: E402

# ----------------------------------------------------------------------------- value pools

HUGE = "9" * 5000
LAUGHS = ("a0: &a0 [1,1,1,1,1,1,1,1,1]\n" + "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n"
                                                 for i in range(1, 10)))
INTS_HOSTILE = ["0", "-1", "-5", "2**62", "4611686018427387904", HUGE, "1e5", "0x1e5", "nan", "inf", "",
                " ", "abc", "1.5", "1,2", "1-6", "--", "\u00e9", "0b101", "+3", "1_0", "9" * 30, "-0"]
SIZES_OK = ["64", "128", "256", "512"]
KNOB_POOL = {
    "m": SIZES_OK, "n": SIZES_OK, "k": SIZES_OK + ["64,128"],
    "dtype": ["f16", "bf16", "f32", "F16"], "accum": ["f32", "f16", "f64"], "layout": ["tn", "nn", "nt"],
    "tile": ["128x128x64", "64x64x64", "128x256x64", "256x256x64", "99x64x64", "128x128", "1x2x3x4",
             "9" * 40 + "x64x64"],
    "stages": ["1", "2", "4", "8", "9", "1-3", "0", "1-99999999"],
    "tma-box-rows": ["8", "64", "128", "7", "8,64"], "swizzle": ["32B", "64B", "128B", "16B", "none"],
    "variant": ["single", "ws", "warp-specialized", "x"], "consumers": ["1", "2", "3"],
    "ctas-per-sm": ["auto", "1", "2"], "epilogue": ["direct", "stmatrix", "tma"],
    "raster": ["row", "grouped", "col"], "group-m": ["1", "8", "3"], "tma-issuer": ["lane", "elect", "x"],
    "gpu": ["h100_sxm", "a100", ""],
}
LAYOUTS = ["(64,64):(64,1)", "(128,32):(32,1)", "(8,32):(64,1)", "(99999999,99999999):(1,1)",
           "((2,2),(2,2)):((1,2),(4,8))", "(", "(64,64):(64)", "(" * 10000, "(0,4):(1,1)", "(-1,4):(1,1)",
           "(64,64)", "64:1", "(" + HUGE + ",1):(1,1)", ""]
#: --loop values: the two valid ones, the list that sweeps both, and hostile ones
LOOPS = ["rotated", "same", "x", "", "SAME", HUGE, "rotated,same", "same,x", "1-2", ",", "same,same"]
#: grid.yaml `loop` values (YAML as written): valid scalars and lists, hostile ones
LOOP_YAML = ["rotated", "same", "[rotated, same]", "'rotated,same'", "warm", "''", "3", "null", "{a: 1}",
             "[]", "[same, 3]", "[[same]]", "true", "'" + HUGE + "'"]
CLOCKS = ["sustained", "boost", "1500", "1980", "0", "-5", "nan", "inf", "1e9", HUGE, "x", ""]
PATHS = ["out.png", "out.json", "t.json", "p.png", "", ".", "/proc/x.json", "/sys/x.png", "/dev/null",
         "a" * 300 + ".png", "nodir/x.png", "out.txt", "sub", "x.npy", "s.csv", "r.json", "/", "t.json\x00"]

GOOD_KERNEL = """.kernel copy
.param .u64 X
.param .u32 n
.reg .u32 %r<8>
.reg .u64 %rd<4>
.reg .pred %p<2>
    ld.param.u64 %rd0, [X];
    ld.param.u32 %r1, [n];
    mov.u32 %r0, %tid.x;
    setp.lt.u32 %p0, %r0, %r1;
@!%p0 bra DONE;
    mul.wide.u32 %rd1, %r0, 4;
    add.u64 %rd2, %rd0, %rd1;
    ld.global.f32 %r2, [%rd2];
    st.global.f32 [%rd2], %r2;
DONE:
    exit;
"""
SPIN_KERNEL = ".kernel spin\n.reg .b32 %r<4>\nL:\n  add.s32 %r0, %r0, 1;\n  bra L;\n"
DEAD_KERNEL = (".kernel dead\n.shared .align 8 .b64 full[1]\n.reg .pred %p<2>\n"
               "    mbarrier.init.shared::cta.b64 [full], 2;\n    bar.sync 0;\nW:\n"
               "    mbarrier.try_wait.parity.shared::cta.b64 %p0, [full], 0;\n@!%p0 bra W;\n    exit;\n")
KERNEL_TOKENS = ["%r0", "%rd0", "%p0", "[X]", "0f7FC00000", "0d7FF8000000000000", HUGE, "1e400", "{", "}",
                 "%r<100000000>", "%a0..%a100000000", ".reg", ".param", ".shared", "bra", "@%p0", ";", ",",
                 "exit;", "bar.sync 0;", ".b32", "-", "\u00ff", "[", "]", "DONE:", "add.u32", "2.5", "\n"]


def kernels(rng: random.Random) -> bytes:
    """A kernel file: valid, endless, deadlocked, mutated, or hostile bytes."""
    r = rng.random()
    if r < 0.15:
        return GOOD_KERNEL.encode()
    if r < 0.2:
        return SPIN_KERNEL.encode()
    if r < 0.23:
        return DEAD_KERNEL.encode()
    if r < 0.3:
        return rng.choice([b"", b"\xff\xfe\x00garbage", b".kernel k\n" + b"{" * 100000, b".kernel k\n.reg .b32 %r<100000000>\n",
                           b".kernel k\n.reg .b32 %r<4>\n  mov.u32 %r0, 0f7FC00000;\n  exit;\n",
                           b".kernel k\n" + b"  exit;\n" * 5000, os.urandom(64) if False else bytes(range(256))])
    lines = GOOD_KERNEL.splitlines()
    for _ in range(rng.randint(1, 4)):  # token-level mutations of the valid kernel
        i = rng.randrange(len(lines))
        words = lines[i].split(" ")
        op = rng.random()
        if op < 0.4:
            words[rng.randrange(len(words))] = rng.choice(KERNEL_TOKENS)
        elif op < 0.7:
            words.insert(rng.randrange(len(words) + 1), rng.choice(KERNEL_TOKENS))
        elif len(words) > 1:
            words.pop(rng.randrange(len(words)))
        lines[i] = " ".join(words)
        if rng.random() < 0.1:
            lines.pop(i)
    return ("\n".join(lines) + "\n").encode()


YAML_VALUES = ["1", "-1", "0", HUGE, "[1]", "[1, 2, 3]", "[1, 65536, 65536]", "true", "null", "5", "1.5",
               ".nan", "'128'", "'16,8'", "{a: 1}", "{1: 2}", "[[[[1]]]]", "[" * 200 + "]" * 200, "'x'",
               "{out: 5}", "{D: 5}", "{X: 'zeros:f32:4'}", "{X: 'zeros:f32:200000x100000'}", "{n: true}",
               "{n: 3}", "{n: 0x10}", "{X: 'random:f16:4:" + "9" * 50 + "'}", "{X: x.npy}", "{X: out.npy}",
               "&a [*a]", "!!python/object:os.system 'echo'", "{? [1] : 2}", "2147483648", "'\u00e9'"]
LAUNCH_KEYS = ["grid", "block", "smem", "params", "buffers", "tensor_maps", "save", "bogus", "1"]


def launch_yaml(rng: random.Random) -> bytes:
    if rng.random() < 0.1:
        return rng.choice([b"", b"\xff\xfe", b"[" * 100000, b"a: [", b"- 1\n- 2\n", b"grid: 1\ngrid: 2\n",
                           b"a: &x [1,2]\nb: [*x,*x,*x,*x]\n" * 3, (LAUGHS + "grid: *a9\n").encode(),
                           b"grid: &a [*a]\n"])
    keys = rng.sample(LAUNCH_KEYS, rng.randint(0, 4))
    good = {"buffers": "{X: 'zeros:f32:4'}", "params": "{n: 4}", "grid": "1", "block": "32"}
    doc = {k: (good[k] if k in good and rng.random() < 0.5 else rng.choice(YAML_VALUES)) for k in keys}
    return "\n".join(f"{k}: {v}" for k, v in doc.items()).encode()


def grid_yaml(rng: random.Random) -> bytes:
    if rng.random() < 0.1:
        return rng.choice([b"", b"\xff", b"[" * 100000, b"base: [", b"sweep: 5", b"{1: 2}",
                           b"sweep: {m: '1-100000', n: '1-100000'}", (LAUGHS + "sweep: {m: *a9}\n").encode(), b"base: {m: " + HUGE.encode() + b"}"])
    knobs = rng.sample(list(KNOB_POOL), rng.randint(0, 3))
    sweep = {k: rng.choice(KNOB_POOL[k] + INTS_HOSTILE[:6]) for k in knobs}
    base = {"m": rng.choice(SIZES_OK), "n": rng.choice(SIZES_OK), "k": rng.choice(SIZES_OK)}
    body = "base: {" + ", ".join(f"{k}: '{v}'" for k, v in base.items())
    loop = rng.random()  # the loop key: in base (a single value), in sweep (one or a list), or not
    body += (f", loop: {rng.choice(LOOP_YAML)}" if loop < 0.15 else "") + "}\n"
    items = [f"{k}: '{v}'" for k, v in sweep.items()] + ([f"loop: {rng.choice(LOOP_YAML)}"] if loop > 0.7 else [])
    return (body + "sweep: {" + ", ".join(items) + "}\n").encode()


def trace_jsonl(rng: random.Random) -> bytes:
    ok = '{"op":"ld.shared.v4.b32","addrs":[' + ",".join(str(128 * i) for i in range(32)) + "]}"
    pool = [ok, '{"op":"ld.shared.b32","addrs":[' + HUGE + "]}", "[" * 100000, "{}", "[]", "null", "1e999",
            '{"op": 5, "addrs": []}', '{"op":"ld.shared.b32","addrs":[NaN' + ",0" * 31 + "]}",
            '{"op":"ld.shared.b32","addrs":[-1' + ",0" * 31 + "]}", '{"op":"st.shared.b32","addrs":' +
            "[" + ",".join(["null"] * 32) + "]}", '{"op":"ld.shared.b32","addrs":[1e308' + ",0" * 31 + "]}",
            '{"op":"ld.shared.b32","addrs":[' + ",".join(["4294967296"] * 32) + "]}", "\xff"]
    return "\n".join(rng.choice(pool) for _ in range(rng.randint(0, 4))).encode("utf-8", "surrogateescape")


# ----------------------------------------------------------------------------- case builders


@dataclass
class Case:
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)


def _pick_path(rng: random.Random, good: str) -> str:
    return good if rng.random() < 0.5 else rng.choice(PATHS)


def case_gemm(rng: random.Random) -> Case:
    argv = ["simulate", "gemm", "--m", rng.choice(SIZES_OK[:2]), "--n", rng.choice(SIZES_OK[:2]),
            "--k", rng.choice(SIZES_OK[:2])]
    for flag in rng.sample(list(KNOB_POOL), rng.randint(0, 3)):
        argv += [f"--{flag}", rng.choice(KNOB_POOL[flag] + INTS_HOSTILE if rng.random() < 0.3 else KNOB_POOL[flag])]
    r = rng.random()
    if r < 0.7:  # most cases: some value is hostile, so the run stops before simulating
        argv += [f"--{rng.choice(['m', 'n', 'k', 'stages', 'tile', 'group-m'])}", rng.choice(INTS_HOSTILE)]
    for opt, good in (("--trace", "t.json"), ("--plot", "p.png"), ("--sweep-plot", "s.png")):
        if rng.random() < 0.15:
            argv += [opt, _pick_path(rng, good)]
    if rng.random() < 0.15:
        argv += ["--plot-cycles", rng.choice(["100", "-5", "0", HUGE, "x"])]
    if rng.random() < 0.1:
        argv += ["--mode", rng.choice(["fast", "full", "auto", "x"])]
    if rng.random() < 0.1:
        argv += ["--clock", rng.choice(CLOCKS)]
    if rng.random() < 0.1:
        argv += ["--jobs", rng.choice(["1", "0", "-1", "99999"])]
    if rng.random() < 0.1:
        argv += ["--loop", rng.choice(LOOPS)]
    if rng.random() < 0.05:
        argv += ["--sm-clock", rng.choice(CLOCKS)]
    if rng.random() < 0.1:
        argv.append(rng.choice(["--check", "--json", "--bogus", "--emit-ir"]))
    return Case(argv)


def case_ptx(rng: random.Random) -> Case:
    files = {"k.ptx": kernels(rng)}
    argv = ["simulate", "k.ptx"]
    if rng.random() < 0.4:
        files["l.yaml"] = launch_yaml(rng)
        argv += ["--launch", "l.yaml"]
    else:
        argv += ["--buffer", rng.choice(["X=zeros:f32:32", "X=arange:f32:64", "X=random:f16:8x8",
                                          "X=zeros:f32:200000x100000", "X=x.npy", "X=bad.npy", "X=zeros:q7:4",
                                          "X=random:f32:4:" + HUGE, "X", "=", "X=zeros:f32:0", "X=zeros:f32:" + HUGE])]
        argv += ["--param", rng.choice(["n=32", "n=0", "n=-1", "n=" + HUGE, "n=1e5", "n=4294967296", "n=0x10",
                                         "n=abc", "q=1", "n"])]
    files["x.npy"] = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }" + \
        b" " * 53 + b"\n" + b"\x00" * 16
    files["bad.npy"] = rng.choice([b"", b"\x93NUMPY garbage", os.urandom(0) + b"not npy"])
    for opt, pool in (("--grid", ["1", "2", "1,65536,65536", "2147483647", "2147483648", "0", HUGE, "1,2,3,4", "x"]),
                      ("--block", ["32", "64", "1024", "1025", "32,32,2", "0", "2048", "1,1,65"]),
                      ("--smem", ["0", "1024", "-1", "300000", HUGE]),
                      ("--max-cycles", ["1000", "0", "-1", HUGE, "100000"]),
                      ("--tensor-map", ["T=X:4x4", "T=Q:4x4", "T=X:999x999:128B", "T=X", "T=X:1x1:7B"]),
                      ("--save", ["X=o.npy", "X=", "X=/proc/x.npy", "Y=o.npy", "X=o.txt", "X=" + "a" * 300 + ".npy"]),
                      ("--trace", PATHS), ("--plot", PATHS)):
        if rng.random() < 0.15:
            argv += [opt, rng.choice(pool)]
    if rng.random() < 0.1:
        argv += ["--clock", rng.choice(CLOCKS)]
    if rng.random() < 0.1:
        argv += ["--loop", rng.choice(LOOPS)]
    if "--block" not in argv and rng.random() < 0.8:
        argv += ["--block", "32"]
    if rng.random() < 0.2:
        argv.append(rng.choice(["--timing-only", "--json", "--gpu=a100", "--bogus"]))
    return Case(argv, files)


def case_sweep(rng: random.Random) -> Case:
    files: dict[str, bytes] = {}
    argv = ["sweep", "--executor", "serial", "--no-progress"]
    if rng.random() < 0.4:
        files["g.yaml"] = grid_yaml(rng)
        argv += ["--grid", "g.yaml"]
    else:
        argv += ["--m", rng.choice(SIZES_OK[:2]), "--n", rng.choice(SIZES_OK[:2]), "--k", rng.choice(SIZES_OK[:2])]
    for flag in rng.sample(list(KNOB_POOL), rng.randint(0, 2)):
        argv += [f"--{flag}", rng.choice(KNOB_POOL[flag] + INTS_HOSTILE)]
    if rng.random() < 0.2:
        argv += ["--loop", rng.choice(LOOPS)]
    if rng.random() < 0.8:
        argv.append("--list")
    for opt, pool in (("--out", ["r.csv", "r.json", "", ".", "/proc/r.csv", "x.txt", "nodir/r.csv"]),
                      ("--plot", PATHS), ("--y", ["time_ms", "tflops", "nosuch", ""]),
                      ("--plot-knob", ["stages", "nosuch", ""]), ("--jobs", ["1", "0", "-3"]),
                      ("--dask-timeout", ["1", "0", "-1", "nan", "inf", "1e400"]),
                      ("--fn", ["hopsim.gemm_sim:simulate_point", "nosuch:f", "..x:y", ":", "os:nosuch", "x"]),
                      ("--executor", ["serial", "dask://", "dask://h:1x", "threads"])):
        if rng.random() < 0.1:
            argv += [opt, rng.choice(pool)]
    if rng.random() < 0.05:
        rec = rng.choice([b'{"kind": "gemm", "params": ', b"\xff", b"[]", b'{"kind": 5}', b'{"kind": "gemm", "params": 5}',
                          b"[" * 100000, b'{"kind": "gemm", "params": {}, "time_ms": ' + HUGE.encode() + b"}"])
        files["recs/gemm__x.json"] = rec
        argv += ["--compare-records", "recs"]
    return Case(argv, files)


def case_small(rng: random.Random) -> Case:
    """bank-conflicts, desc, swizzle, config, validate: their options and input files."""
    r = rng.randrange(7)
    if r == 6:
        argv = ["bank-conflicts", "--layout", rng.choice(LAYOUTS), "--elem-bytes", rng.choice(["2", "4", "3", "0", "16", HUGE]),
                "--access", rng.choice(["ldmatrix.x4", "cp.async.16", "ld.shared.v4", "ldmatrix.x4,cp.async.16", "nosuch", ""])]
        for opt, pool in (("--swizzle", ["128B", "Swizzle<3,3,3>", "Swizzle<99,3,3>", "Swizzle<3,4,3", "x", ""]),
                          ("--tv", ["(8,4):(1,8)", "(0,0):(0,0)", "(", "(8,4):(1,8,9)"]),
                          ("--base", ["0", "128", "-1", "1099511627776", HUGE])):
            if rng.random() < 0.3:
                argv += [opt, rng.choice(pool)]
        return Case(argv + rng.choice([[], ["--json"], ["--emit-trace"]]))
    if r == 0:
        return Case(["bank-conflicts", "--trace", rng.choice(["t.jsonl", "t.jsonl", "missing.jsonl", ".", "/dev/null"])]
                    + (["--summary"] if rng.random() < 0.3 else []), {"t.jsonl": trace_jsonl(rng)})
    if r == 1:
        val = rng.choice(["0x4000004000010040", "1e5", "0x1e5", "4000", HUGE, "-1", "0x" + "f" * 17, "", "0x", "1_0",
                          "\u0661\u0662", "0xnothex", str(2**64), str(2**64 - 1)])
        sub = rng.choice(["decode", "lint"])
        argv = ["desc", sub, val]
        if sub == "lint" and rng.random() < 0.5:
            argv += rng.choice([["--tile", rng.choice(["64x16", "99999999x64", "0x0", HUGE, "64"])],
                                ["--n", rng.choice(["64", "0", "-1", HUGE])], ["--dtype", rng.choice(["f16", "q"])],
                                ["--smem-base", rng.choice(["0", "-5", HUGE, "16"])], ["--operand", "B"]])
        return Case(argv + (["--json"] if rng.random() < 0.3 else []))
    if r == 2:
        argv = ["desc", "encode"]
        for name in ("start-address", "lbo", "sbo"):
            if rng.random() < 0.8:
                kind = rng.choice(["bytes", "field"])
                argv += [f"--{name}-{kind}", rng.choice(["0", "16", "1024", "-16", HUGE, "262144", "16383", "x"])]
        if rng.random() < 0.3:
            argv += ["--swizzle", rng.choice(["128B", "none", "7B"])]
        if rng.random() < 0.3:
            argv += ["--base-offset", rng.choice(["0", "7", "8", "-1"])]
        return Case(argv)
    if r == 3:
        argv = ["swizzle", "show", rng.choice(["128B", "64B", "32B", "none", "16B", ""])]
        if rng.random() < 0.5:
            argv += ["--base", rng.choice(["0", "128", "1152", "-128", "5", str(2**100), HUGE, "2**100", "0x80"])]
        if rng.random() < 0.4:
            argv += ["--rows", rng.choice(["1", "8", "1024", "1025", "0", "-1", HUGE])]
        return Case(argv + (["--json"] if rng.random() < 0.3 else []))
    if r == 4:
        return Case(rng.choice([["config", "show"], ["config", "show", "h100_sxm", "--json"], ["config", "show", "x"],
                                ["config", "schema"], ["config"], ["config", "show", "--assumed"], ["--version"], [],
                                ["nosuch"], ["simulate"], ["simulate", "gemm", "--help"]]))
    files = {"recs/a.json": rng.choice([b'{"kind": "gemm", "params": ', b"\xff\xfe", b"[" * 100000, b"[]",
                                         b'{"kind": "microbench", "name": 5}', b'{"kind": "gemm", "params": 7}'])}
    argv = rng.choice([["validate", "calibrate", "--dry-run", "--records", "recs"],
                       ["validate", "calibrate", "--dry-run", "--records", rng.choice(["nodir", ".", "/proc"])],
                       ["validate", "compare", "--only", rng.choice(["0", "-1", HUGE, "x"])],
                       ["validate", "compare", "--jobs", rng.choice(["0", "-1"])],
                       ["validate", "compare", "--records", "recs", "--only", "1", "--out", "rep", "--no-progress"],
                       ["validate", "run", "--what", rng.choice(["gemm", "x"])], ["validate"]])
    return Case(argv, files, ["rep"] if "rep" in argv else [])


BUILDERS = [(case_gemm, 0.25), (case_ptx, 0.3), (case_sweep, 0.2), (case_small, 0.25)]


def make_case(seed: int, i: int) -> Case:
    rng = random.Random(f"{seed}:{i}")
    r, acc = rng.random(), 0.0
    for builder, w in BUILDERS:
        acc += w
        if r < acc:
            return builder(rng)
    return case_small(rng)


# ----------------------------------------------------------------------------- running


class Hang(BaseException):
    """Raised by SIGALRM: the case ran past its time limit (BaseException: nothing swallows it)."""


def _alarm(signum, frame):
    raise Hang()


@dataclass
class Outcome:
    index: int
    argv: list[str]
    code: int | None
    problem: str | None  # None: the case satisfied every rule
    seconds: float


def _error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("  ") and "warning" not in ln]


def run_case(case: Case, index: int = 0, timeout_s: int = 60) -> Outcome:
    """Run one case in a fresh directory; check the rules (see module docstring)."""
    old_cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="hopsim-fuzz-") as tmp:
        os.chdir(tmp)
        for name, data in case.files.items():
            pathlib.Path(name).parent.mkdir(parents=True, exist_ok=True)
            pathlib.Path(name).write_bytes(data)
        for d in case.dirs:
            pathlib.Path(d).mkdir(exist_ok=True)
        before = {str(p) for p in pathlib.Path(".").rglob("*")}
        out, err = io.StringIO(), io.StringIO()
        code, problem = None, None
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(timeout_s)
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(list(case.argv))
                except SystemExit as ex:
                    code = ex.code if isinstance(ex.code, int) else (0 if ex.code is None else 2)
        except Hang:
            problem = f"hang: no result after {timeout_s} s"
        except BaseException as ex:  # noqa: BLE001  (the harness reports what escaped)
            problem = f"traceback: {type(ex).__name__}: {str(ex)[:200]}"
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
            os.chdir(old_cwd)
        seconds = time.perf_counter() - t0
        if problem is None:
            problem = _check(code, err.getvalue(), before, tmp)
    return Outcome(index, case.argv, code, problem, seconds)


def _check(code, err: str, before: set[str], tmp: str) -> str | None:
    if "Traceback" in err:
        return "traceback on stderr: " + err.strip().splitlines()[-1][:200]
    if code not in (0, 1, 2):
        return f"exit status {code} (allowed 0, 1, 2)"
    after = {str(p.relative_to(tmp)) for p in pathlib.Path(tmp).rglob("*")}
    temps = [p for p in after if ".tmp" in pathlib.Path(p).name]
    if temps:
        return f"temporary files left: {temps[:3]}"
    if code == 2:
        lines = _error_lines(err)
        if len(lines) != 1 or "error" not in lines[0]:
            return f"exit 2 with {len(lines)} error lines: {err.strip()[:300]!r}"
        new = sorted(after - before)
        if new:
            return f"exit 2 but outputs were written: {new[:3]}"
    return None


def run_cases(n: int, seed: int, timeout_s: int = 60, start: int = 0, verbose: bool = False) -> list[Outcome]:
    out = []
    for i in range(start, start + n):
        o = run_case(make_case(seed, i), i, timeout_s)
        out.append(o)
        if verbose and (o.problem or (i + 1) % 500 == 0):
            msg = f"#{i} {o.problem} :: {o.argv[:12]}" if o.problem else f"{i + 1} cases"
            print(msg, file=sys.__stderr__, flush=True)
    return out


def summary(outcomes: list[Outcome]) -> dict:
    tb = [o for o in outcomes if o.problem and ("traceback" in o.problem)]
    hangs = [o for o in outcomes if o.problem and o.problem.startswith("hang")]
    other = [o for o in outcomes if o.problem and o not in tb and o not in hangs]
    codes: dict = {}
    for o in outcomes:
        codes[o.code] = codes.get(o.code, 0) + 1
    return {"cases": len(outcomes), "tracebacks": len(tb), "hangs": len(hangs), "other_failures": len(other),
            "exit_codes": {str(k): v for k, v in sorted(codes.items(), key=lambda kv: str(kv[0]))},
            "slowest_s": round(max((o.seconds for o in outcomes), default=0.0), 2),
            "failures": [(o.index, o.problem, o.argv[:16]) for o in tb + hangs + other][:50]}


def cli(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first case index (to rerun one case)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per case before it counts as a hang")
    args = ap.parse_args(argv)
    import json

    t0 = time.perf_counter()
    res = summary(run_cases(args.cases, args.seed, args.timeout, args.start, verbose=True))
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(res, indent=1))
    return 0 if not res["failures"] else 1


if __name__ == "__main__":
    sys.exit(cli())
