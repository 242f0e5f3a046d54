"""`hopsim config show|schema`: every hardware number with its unit, meaning and source."""

from __future__ import annotations

import argparse
import json

from hopsim.cli import missing_command
from hopsim.config import GPUS, GpuConfig, load_gpu
from hopsim.config.power import load_power
from hopsim.fingerprint import model_fingerprint

EXAMPLE = """examples:
  hopsim config show h100_sxm            # table: field, value, unit, source kind, meaning
  hopsim config show h100_sxm --json     # the same as JSON (value, unit, meaning, source)
  hopsim config show h100_sxm --assumed  # only timing numbers not measured yet
  hopsim config schema                   # JSON schema of the config models
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="show the GPU configuration with units and sources",
                       description=__doc__, epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    csub = p.add_subparsers(dest="config_command", metavar="{show,schema}", parser_class=type(p))
    show = csub.add_parser("show", help="every field with value, unit, meaning and source", epilog=EXAMPLE,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("gpu", nargs="?", default="h100_sxm", choices=sorted(GPUS), help="GPU config name")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument("--assumed", action="store_true", help="only fields whose source is 'assumed'")
    show.add_argument("--uncalibrated", action="store_true",
                      help="ignore h100_sxm_calibrated.json and h100_sxm_power_calibrated.json")
    show.set_defaults(func=_show)
    schema = csub.add_parser("schema", help="JSON schema of the GPU config", epilog=EXAMPLE,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    schema.set_defaults(func=_schema)
    p.set_defaults(func=lambda a: missing_command(p))


def _rows(cfg: GpuConfig, only_assumed: bool, calibrated: bool = True):
    groups = {"spec": cfg.spec, "timing": cfg.timing, "power": load_power(cfg.name, calibrated=calibrated)}
    for group, params in groups.items():
        for name, prm in params.params().items():
            if only_assumed and prm.kind != "assumed":
                continue
            yield group, name, prm


def _show(args) -> int:
    cfg = load_gpu(args.gpu, calibrated=not args.uncalibrated)
    rows = list(_rows(cfg, args.assumed, not args.uncalibrated))
    fp = model_fingerprint()
    if args.json:
        out: dict = {"name": cfg.name, "model_fingerprint": fp}
        for group, name, prm in rows:
            out.setdefault(group, {})[name] = prm.model_dump()
        print(json.dumps(out, indent=1))
        return 0
    print(f"GPU config {cfg.name}  (source kinds: spec, ptx, measured, literature, derived, assumed)")
    print(f"model fingerprint (SHA-256 of config + calibrations + timing/power sources): {fp}")
    w = max(len(n) for _, n, _ in rows) if rows else 10
    for group, name, prm in rows:
        val = f"{prm.value:g}"
        print(f"  {group:6s} {name:<{w}s} {val:>14s} {prm.unit:<16s} {prm.kind:<10s} {prm.meaning}")
        print(f"  {'':6s} {'':<{w}s} {'':>14s} {'':<16s} {'':<10s}   source: {prm.source}")
    return 0


def _schema(args) -> int:
    print(json.dumps(GpuConfig.model_json_schema(), indent=1))
    return 0
