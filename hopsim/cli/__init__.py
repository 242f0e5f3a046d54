"""The `hopsim` command line.

Every subcommand lives in its own module with a `register(subparsers)` function that adds its
parser and sets `func` (called with the parsed namespace, returning an exit status). Errors derived
from `HopsimError` become one line on stderr and exit status 2; argparse usage errors also exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from isa.errors import HopsimError

# Subcommand modules, in the order `hopsim --help` lists them. A module that is not there yet is
# skipped, so the CLI grows one module at a time.
_COMMANDS = [
    "hopsim.cli.simulate_cmd",
    "hopsim.cli.sweep_cmd",
    "hopsim.cli.bank_cmd",
    "hopsim.cli.desc_cmd",
    "hopsim.cli.swizzle_cmd",
    "hopsim.cli.validate_cmd",
    "hopsim.cli.config_cmd",
]


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line plus exit status 2."""

    def error(self, message: str) -> None:  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hopsim",
        description="Cycle-approximate simulator of an NVIDIA Hopper (sm90a) SM and H100.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _COMMANDS:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except HopsimError as exc:
        print(f"hopsim: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("hopsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
