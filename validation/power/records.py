"""Read the power microbenchmark records (JSON lines written by validation.power.run), anywhere.

Committed under validation/records/h100/power/{wgmma,units,governor}.jsonl (a subfolder, so the
flat `*.json` readers of validation/provenance.py never see them). Each line is one point:
  kind="power", family, name, params, error (None or text), provenance, and for a point that ran:
  rate_per_s / steady_rate_per_s (events per second; `event` names the event), launches, events,
  gpu_s, series (per launch), power_samples_summary (whole window), power_steady_summary (last
  1.5 s), trajectory (raw samples, t_s from the window start); step points add t_on_s, t_off_s
  and lag (10/50/90 % delays of each power reading, of the energy counter's derivative and of
  the SM clock). Older GEMM/microbenchmark records without power fields stay valid: the power
  fields are optional everywhere.
"""

from __future__ import annotations

import json
import pathlib

REQUIRED = ("kind", "family", "name", "params", "error")
POWER_RECORDS_DIR = pathlib.Path(__file__).resolve().parents[1] / "records" / "h100" / "power"


class RecordError(ValueError):
    """A record line that is not a power record (message: file, line, field, what is valid)."""


def load(path: pathlib.Path) -> list[dict]:
    """Every record of one JSONL file; RecordError names the first bad line and field."""
    out = []
    for i, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{path}:{i}: not JSON ({exc.msg}); each line must be one JSON object") from None
        missing = [k for k in REQUIRED if not isinstance(rec, dict) or k not in rec]
        if missing:
            raise RecordError(f"{path}:{i}: missing field {missing[0]!r}; a power record has {', '.join(REQUIRED)}")
        if rec["kind"] != "power":
            raise RecordError(f"{path}:{i}: kind={rec['kind']!r}; valid: 'power'")
        out.append(rec)
    return out


def load_all(records_dir: pathlib.Path | None = None) -> list[dict]:
    """All committed power records (empty when none are committed yet)."""
    d = pathlib.Path(records_dir) if records_dir else POWER_RECORDS_DIR
    return [r for p in sorted(d.glob("*.jsonl")) for r in load(p)]
