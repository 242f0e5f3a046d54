"""Measure shared-memory wavefronts and bank conflicts of single warp instructions on the H100.

    python3 -m validation.bank_truth run --out DIR          # on the GPU machine (wraps ncu)
    python3 -m validation.bank_truth child --cubin C --patterns P --manifest M   # what ncu runs
    python3 -m validation.bank_truth parse FILE.csv          # anywhere: test the CSV parser

`run` compiles validation/cuda/bank_probe.cu (nvcc, else NVRTC `-arch=sm_90a`), then profiles itself
in chunks under

    ncu --clock-control none --csv --page raw --metrics <list> -k regex:bank_probe \
        python3 -m validation.bank_truth child ...

(one launch of one warp per pattern; each kernel executes exactly one shared-memory instruction),
parses the CSV (==PROF== lines, units row, thousands separators), checks that every launch
executed exactly one instruction of the expected class, and writes
`DIR/bank_conflicts__h100_ncu.json` through `validation.provenance.write_record` after every chunk
(so a run cut short keeps what it measured). Patterns come from validation/bank_patterns.py in
priority order; chunks are sized from the measured time per launch to stay inside `--budget-s`.

Runs on the GPU machine: stdlib + numpy + cupy (inside functions) only.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

from validation import bank_patterns
from validation.provenance import device_provenance, write_record

REPO = pathlib.Path(__file__).resolve().parents[1]
SRC = REPO / "validation" / "cuda" / "bank_probe.cu"
SMEM_BYTES = 232448

WAVEFRONT_METRIC = {
    "ld": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "st": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "ldsm": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "stsm": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_stsm.sum",
}
INST_METRIC = {
    "ld": "smsp__sass_inst_executed_op_shared_ld.sum",
    "st": "smsp__sass_inst_executed_op_shared_st.sum",
    "ldsm": "smsp__sass_inst_executed_op_ldsm.sum",
    "stsm": "smsp__sass_inst_executed_op_shared_stsm.sum",
}
CONFLICT_METRIC = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
EXTRA_METRICS = [
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_stsm.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared.sum",
]
CORE_METRICS = list(WAVEFRONT_METRIC.values()) + list(INST_METRIC.values()) + [CONFLICT_METRIC]


def op_class(op: str) -> str:
    if op.startswith("ldmatrix"):
        return "ldsm"
    if op.startswith("stmatrix"):
        return "stsm"
    return "ld" if op.startswith("ld.") else "st"


def kernel_name(op: str) -> str:
    """`ld.shared.v2.b32` -> `bank_probe_ld_v2_b32`, `ldmatrix.x4.trans` -> `bank_probe_ldmatrix_x4_trans`."""
    return "bank_probe_" + op.replace("shared.", "").replace(".", "_")


# ------------------------------------------------------------------------------------ CSV parsing
def _num(s: str):
    s = s.strip().strip('"')
    if s in ("", "n/a", "N/A", "nan"):
        return None
    t = s.replace(",", "")
    try:
        v = float(t)
    except ValueError:
        return s
    return int(v) if v.is_integer() else v


def parse_ncu_csv(text: str) -> list[dict]:
    """Rows of `ncu --csv --page raw` output mixed with program output and ==PROF== lines.

    Returns one dict per profiled kernel: {"ID": int, "Kernel Name": str, <metric>: number, ...};
    the units row (second row of the table) is skipped; "3,264" -> 3264.
    """
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    out = []
    for r in rows[1:]:
        if len(r) != len(header):
            continue
        if r[0].strip() == "" or not r[0].strip().replace(",", "").isdigit():
            continue  # the units row ("", "", ..., "inst") or a repeated header
        d = {}
        for h, v in zip(header, r):
            d[h] = v if h in ("Kernel Name", "Process Name", "Host Name", "Device Name", "Context", "Stream",
                             "Block Size", "Grid Size", "Section Name") else _num(v)
        out.append(d)
    return out


# ------------------------------------------------------------------------------------ compile
def compile_cubin(out_dir: pathlib.Path) -> pathlib.Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    cubin = out_dir / "bank_probe.cubin"
    nvcc = shutil.which("nvcc")
    if nvcc:
        try:
            subprocess.run([nvcc, "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-o",
                            str(cubin), str(SRC)], check=True)
            return cubin
        except Exception as exc:  # noqa: BLE001
            print(f"[bank_truth] nvcc failed ({exc}); the child compiles with NVRTC", flush=True)
    return pathlib.Path("nvrtc")


def load_module(cubin: str):
    """cupy module from a cubin, or compiled by NVRTC (-arch=sm_90a) when cubin == 'nvrtc'."""
    import cupy  # noqa: PLC0415

    if cubin == "nvrtc":
        src = SRC.read_text().replace("#include <cstdint>", "typedef unsigned int uint32_t;")
        return cupy.RawModule(code=src, options=("-arch=sm_90a", "-std=c++17"))
    return cupy.RawModule(path=cubin)


# ------------------------------------------------------------------------------------ child (under ncu)
def child(cubin: str, patterns_file: str, manifest: str) -> int:
    import cupy  # noqa: PLC0415

    pats = [json.loads(ln) for ln in pathlib.Path(patterns_file).read_text().splitlines() if ln.strip()]
    mod = load_module(cubin)
    fns = {}
    sink = cupy.zeros(32 * 4, dtype=cupy.uint32)
    base = cupy.zeros(1, dtype=cupy.uint32)
    done = []
    for p in pats:
        name = kernel_name(p["op"])
        if name not in fns:
            f = mod.get_function(name)
            f.max_dynamic_shared_size_bytes = SMEM_BYTES
            fns[name] = f
        a = np.array([-1 if x is None else int(x) for x in p["addrs"]], dtype=np.int64)
        dev = cupy.asarray(a)
        cupy.cuda.Device().synchronize()
        fns[name]((1,), (32,), (dev, sink, base), shared_mem=SMEM_BYTES)
        cupy.cuda.Device().synchronize()
        done.append({"name": p["name"], "kernel": name, "smem_base": int(base.get()[0])})
    pathlib.Path(manifest).write_text(json.dumps(done))
    print(f"bank_truth child: launched {len(done)}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------ run (wrapper)
def query_metrics(ncu: str) -> set[str] | None:
    try:
        out = subprocess.run([ncu, "--query-metrics", "--chip", "gh100"], capture_output=True, text=True,
                             timeout=60).stdout
    except Exception:
        return None
    names = set()
    for ln in out.splitlines():
        tok = ln.strip().split(" ")[0] if ln.strip() else ""
        if "__" in tok:
            names.add(tok)
    return names or None


def pick_metrics(available: set[str] | None) -> tuple[list[str], list[str]]:
    want = CORE_METRICS + EXTRA_METRICS
    if available is None:
        return CORE_METRICS, []
    keep = [m for m in want if m.rsplit(".", 1)[0] in available]
    missing = [m for m in want if m not in keep]
    if len(available) < 100:  # the query looks broken: keep the core names (seen on gh100) regardless
        keep += [m for m in CORE_METRICS if m not in keep]
    return keep, missing


def summarise(p: dict, row: dict, metrics: list[str]) -> dict:
    cls = op_class(p["op"])
    meas = {m: row.get(m) for m in metrics}
    inst = {k: row.get(v) for k, v in INST_METRIC.items()}
    ok = inst.get(cls) == 1 and all((v in (0, None)) for k, v in inst.items() if k != cls)
    return {
        "name": p["name"], "op": p["op"], "addrs": p["addrs"], "tier": p.get("tier", 0),
        "wavefronts": row.get(WAVEFRONT_METRIC[cls]),
        "bank_conflicts": row.get(CONFLICT_METRIC),
        "one_instruction": ok,
        "measured": meas,
    }


def run(out: pathlib.Path, budget_s: float, max_tier: int, first_chunk: int, name: str = "h100_ncu") -> int:
    t0 = time.time()
    sys.path.insert(0, str(REPO))

    out.mkdir(parents=True, exist_ok=True)
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    cubin = compile_cubin(out / "build")
    if shutil.which("cuobjdump") and cubin.exists():
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True).stdout
        (out / "bank_probe.sass").write_text(sass)
    metrics, missing = pick_metrics(query_metrics(ncu))
    print(f"[bank_truth] metrics {len(metrics)}; not on gh100: {missing}", flush=True)
    prov = device_provenance()
    pats = bank_patterns.patterns(max_tier)
    results: list[dict] = []
    log: list[dict] = []
    i = 0
    per_launch = None
    overhead = 12.0
    max_chunk = 150
    chunk_no = 0
    flags_opt = True
    while i < len(pats):
        left = budget_s - (time.time() - t0)
        if per_launch is None:
            n = first_chunk
        else:
            n = min(max_chunk, int((left - overhead) / per_launch))
        if n < 5:
            print(f"[bank_truth] budget: stopping with {len(pats) - i} patterns unmeasured", flush=True)
            break
        chunk = pats[i:i + n]
        pfile = out / f"chunk{chunk_no}.jsonl"
        mfile = out / f"chunk{chunk_no}.manifest.json"
        pfile.write_text("".join(json.dumps(p) + "\n" for p in chunk))
        cmd = [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--metrics", ",".join(metrics),
               "-k", "regex:bank_probe", sys.executable, "-m", "validation.bank_truth", "child",
               "--cubin", str(cubin), "--patterns", str(pfile), "--manifest", str(mfile)]
        tc = time.time()
        try:
            cp = subprocess.run(cmd, capture_output=True, text=True, cwd=str(REPO),
                                timeout=max(30.0, left - 5.0))
            text, err, rc = cp.stdout, cp.stderr, cp.returncode
        except subprocess.TimeoutExpired as exc:
            text = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err, rc = "timeout", 124
        dt = time.time() - tc
        (out / f"chunk{chunk_no}.csv").write_text(text)
        (out / f"chunk{chunk_no}.stderr.txt").write_text(err[-20000:] if err else "")
        rows = parse_ncu_csv(text)
        rows.sort(key=lambda r: r.get("ID", 0))
        manifest = json.loads(mfile.read_text()) if mfile.exists() else []
        log.append({"chunk": chunk_no, "n": len(chunk), "rows": len(rows), "launched": len(manifest), "rc": rc,
                    "seconds": round(dt, 2)})
        print(f"[bank_truth] chunk {chunk_no}: {len(chunk)} patterns, {len(rows)} rows, rc={rc}, {dt:.1f}s",
              flush=True)
        if not rows and chunk_no == 0 and flags_opt:
            metrics, flags_opt = [m for m in metrics if m in CORE_METRICS], False  # retry: core list only
            print("[bank_truth] no rows: retrying with the core metric list", flush=True)
            continue
        if len(rows) != len(chunk):
            print(f"[bank_truth] WARNING rows {len(rows)} != patterns {len(chunk)}; stderr tail:\n{err[-3000:]}",
                  flush=True)
        for p, r in zip(chunk, rows):
            s = summarise(p, r, metrics)
            if r.get("Kernel Name") and kernel_name(p["op"]) not in str(r.get("Kernel Name")):
                s["kernel_mismatch"] = r.get("Kernel Name")
            results.append(s)
        smem_base = manifest[0]["smem_base"] if manifest else None
        if rows:  # time per launch, the fixed start-up (python + cupy + ncu) taken as `overhead`
            per_launch = max(dt - overhead, 2.0) / max(len(chunk), 1)
        if not rows:
            break
        i += len(chunk)
        chunk_no += 1
        payload = {
            "patterns": results,
            "metrics": metrics,
            "metrics_not_on_chip": missing,
            "smem_base": smem_base,
            "method": ("one block of 32 threads per pattern; kernel bank_probe_<op> executes exactly one "
                       "shared-memory instruction (inline PTX) at dynamic-smem base + addrs[lane]; ncu "
                       "--clock-control none --csv --page raw; wavefronts = smsp__sass_l1tex_data_pipe_lsu_"
                       "wavefronts_mem_shared_op_<class>.sum; bank_conflicts = " + CONFLICT_METRIC),
            "chunks": log,
            "n_patterns_total": len(pats),
        }
        write_record("bank_conflicts", name, payload, prov, out_dir=out)
    print(f"[bank_truth] measured {len(results)}/{len(pats)} patterns in {time.time() - t0:.0f}s -> {out}",
          flush=True)
    bad = [r["name"] for r in results if not r["one_instruction"]]
    if bad:
        print(f"[bank_truth] WARNING launches without exactly one instruction: {bad[:20]}", flush=True)
    return 0 if results else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m validation.bank_truth", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="compile, profile under ncu, write the record")
    r.add_argument("--out", required=True)
    r.add_argument("--budget-s", type=float, default=float(os.environ.get("BANK_TRUTH_BUDGET_S", 250)))
    r.add_argument("--max-tier", type=int, default=2)
    r.add_argument("--name", default="h100_ncu", help="record name: DIR/bank_conflicts__NAME.json")
    r.add_argument("--first-chunk", type=int, default=40)
    c = sub.add_parser("child", help="launch one warp per pattern (run under ncu)")
    c.add_argument("--cubin", required=True)
    c.add_argument("--patterns", required=True)
    c.add_argument("--manifest", required=True)
    p = sub.add_parser("parse", help="parse an ncu CSV file and print the rows as JSON")
    p.add_argument("file")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        return run(pathlib.Path(a.out), a.budget_s, a.max_tier, a.first_chunk, a.name)
    if a.cmd == "child":
        return child(a.cubin, a.patterns, a.manifest)
    print(json.dumps(parse_ncu_csv(pathlib.Path(a.file).read_text()), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
