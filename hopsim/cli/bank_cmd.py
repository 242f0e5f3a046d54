"""`hopsim bank-conflicts`: shared-memory wavefronts and bank conflicts of warp instructions.

With --trace, reads the warp-access trace (JSON Lines, docs/warp-access-trace.md): one object per
line with `op` and 32 `addrs` (null = inactive lane), optional `name` and any extra fields. Writes
one JSON line per input line: the input fields echoed, plus `wavefronts` (Nsight's SASS wavefront
counter on an H100) and `bank_conflicts` (l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum).
An input line that already has `wavefronts` / `bank_conflicts` (a measured record) keeps them as
`input_wavefronts` / `input_bank_conflicts`, and `--summary` says how many the model reproduces.
With --layout L --access A (hopsim/cli/bank_layout_cmd.py) the addresses are generated from a CuTe
layout, a swizzle and the access's thread layout instead (docs/guide/bank-conflicts.md).
Every line is validated before anything is printed: on bad input, stdout stays empty, one line on
stderr names the line number and the field, exit status 2. With `--summary` a per-op table follows
on stderr (stdout stays JSON Lines).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

import numpy as np

from hopsim import inputs
from hopsim.cli import bank_layout_cmd
from hopsim.functional.banks import OPS, _check_batch, op_spec, to_lane_array, wavefronts_batch
from isa.errors import InputError

COUNT_KEYS = ("wavefronts", "bank_conflicts")
INPUT_PREFIX = "input_"  # an input line's own counts are echoed as input_wavefronts, input_bank_conflicts

EXAMPLE = """examples:
  python3 -m validation.bank_patterns > patterns.jsonl     # the 600+ patterns measured on an H100
  hopsim bank-conflicts --trace patterns.jsonl              # one JSON line per access
  hopsim bank-conflicts --trace patterns.jsonl --summary >/dev/null   # table per op (stderr)
  echo '{"op":"ld.shared.v4.b32","addrs":[0,128,256,384,512,640,768,896,1024,1152,1280,1408,1536,1664,1792,1920,2048,2176,2304,2432,2560,2688,2816,2944,3072,3200,3328,3456,3584,3712,3840,3968]}' \\
      | hopsim bank-conflicts --trace -                     # -> "wavefronts": 32, "bank_conflicts": 28
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bank-conflicts", help="shared-memory wavefronts and bank conflicts per warp access",
                       description=__doc__, epilog=EXAMPLE + bank_layout_cmd.EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", metavar="FILE", help="JSON Lines warp-access trace ('-' = stdin)")
    p.add_argument("--summary", action="store_true",
                   help="after the JSON lines, print a per-op table (accesses, wavefronts, conflicts) to stderr")
    bank_layout_cmd.add_arguments(p)
    p.set_defaults(func=run)


def _read(path: str) -> list[str]:
    if path == "-":
        return sys.stdin.read().splitlines()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except OSError as exc:
        raise InputError("--trace", path, f"a readable JSON Lines file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise InputError("--trace", path, "a UTF-8 text file of JSON objects, one per line") from None


def parse_trace(lines: list[str]) -> list[tuple[int, dict, np.ndarray]]:
    """Validate every line; returns (line number, object, int64 lane addresses). Raises InputError."""
    out = []
    for no, text in enumerate(lines, 1):
        if not text.strip():
            continue
        where = f"line {no}"
        shown = text[:40] + ("..." if len(text) > 40 else "")
        if not inputs.depth_ok(text):
            raise InputError("json", shown, f"JSON nested at most {inputs.NEST_MAX} deep", where=where)
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError("json", shown, f"one JSON object per line ({exc.msg})", where=where) from None
        except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4300 digits
            raise InputError("json", shown, f"one JSON object of plain values per line ({inputs.reason(exc)})",
                             where=where) from None
        if not isinstance(obj, dict):
            raise InputError("json", text[:40], "a JSON object with 'op' and 'addrs'", where=where)
        if "op" not in obj:
            raise InputError("op", None, "required: one of " + ", ".join(OPS), where=where)
        if "addrs" not in obj:
            raise InputError("addrs", None, "required: a list of 32 byte addresses (null = inactive)", where=where)
        spec = op_spec(obj["op"], where)
        lanes = to_lane_array(obj["addrs"], spec, where)
        _check_batch(spec, lanes[None, :], where)
        out.append((no, obj, lanes))
    return out


def run(args) -> int:
    if (args.trace is None) == (args.layout is None):
        raise InputError("--trace/--layout", None, "exactly one: --trace FILE (addresses given) or --layout L "
                         "--access A (addresses generated)")
    if args.layout is not None:
        if args.summary:
            raise InputError("--summary", True, "only with --trace (--layout prints its own table)")
        return bank_layout_cmd.run(args)
    bank_layout_cmd.refuse_layout_flags(args)
    items = parse_trace(_read(args.trace))
    by_op: dict[str, list[int]] = defaultdict(list)
    for i, (_, obj, _) in enumerate(items):
        by_op[obj["op"]].append(i)
    wf = np.zeros(len(items), dtype=np.int64)
    bc = np.zeros(len(items), dtype=np.int64)
    for op, idx in by_op.items():
        a = np.stack([items[i][2] for i in idx])
        w, c = wavefronts_batch(op, a, validate=False)
        wf[idx] = w
        bc[idx] = c
    out = sys.stdout
    for i, (_, obj, _) in enumerate(items):
        rec = {}
        for k, v in obj.items():  # counts already in the input (e.g. a measured record) are kept
            rec[INPUT_PREFIX + k if k in COUNT_KEYS else k] = v
        rec["wavefronts"] = int(wf[i])
        rec["bank_conflicts"] = int(bc[i])
        out.write(json.dumps(rec) + "\n")
    out.flush()
    if args.summary:
        _summary(items, wf, bc, by_op)
    return 0


def _agreement(items, wf, bc) -> tuple[int, int]:
    """(lines that carry both input counts, of those how many the model reproduces exactly)."""
    given = same = 0
    for i, (_, obj, _) in enumerate(items):
        if all(k in obj for k in COUNT_KEYS):
            given += 1
            same += (obj["wavefronts"], obj["bank_conflicts"]) == (int(wf[i]), int(bc[i]))
    return given, same


def _summary(items, wf, bc, by_op) -> None:
    err = sys.stderr
    err.write(f"{'op':20s} {'accesses':>9s} {'wavefronts':>11s} {'conflicts':>10s} {'wf/access':>10s} "
              f"{'conflict-free':>14s}\n")
    for op in sorted(by_op, key=lambda o: list(OPS).index(o)):
        idx = by_op[op]
        w, c = wf[idx], bc[idx]
        err.write(f"{op:20s} {len(idx):9d} {int(w.sum()):11d} {int(c.sum()):10d} {w.mean():10.2f} "
                  f"{int((c == 0).sum()):14d}\n")
    err.write(f"{'total':20s} {len(items):9d} {int(wf.sum()):11d} {int(bc.sum()):10d}\n")
    given, same = _agreement(items, wf, bc)
    if given:
        err.write(f"input counts: {same} of {given} accesses that carry wavefronts and bank_conflicts "
                  "are reproduced exactly\n")
