"""The `hopsim` command line.

Every subcommand lives in its own module with a `register(subparsers)` function that adds its
parser and sets `func` (called with the parsed namespace, returning an exit status). Errors derived
from `HopsimError` become one line on stderr and exit status 2; argparse usage errors also exit 2.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import sys

from hopsim import __version__
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


EXAMPLES = """examples:
  hopsim simulate gemm --m 4096 --n 4096 --k 4096 --stages 1-6 --plot timeline.png
  hopsim simulate kernel.ptx --launch launch.yaml --trace kernel.trace.json
  hopsim sweep --grid grid.yaml --out results.csv --plot stages.png --compare-records
  hopsim bank-conflicts --trace accesses.jsonl --summary
  hopsim bank-conflicts --layout '(128,32):(32,1)' --swizzle 'Swizzle<2,3,3>' --elem-bytes 2 --access ldmatrix.x4
  hopsim desc decode 0x4000004000010040
  hopsim swizzle show 128B
  hopsim validate compare --only 10
  hopsim config show h100_sxm

Each command has its own --help with examples (hopsim simulate gemm --help). Bad input gives one
line on stderr and exit status 2. User guides: docs/guide/*.md."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line plus exit status 2."""

    def error(self, message: str) -> None:  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hopsim",
        description="Cycle-approximate simulator of an NVIDIA Hopper (sm90a) SM and H100.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hopsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _COMMANDS:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        mod.register(sub)
    _name_parsers(parser)
    return parser


def _name_parsers(parser: argparse.ArgumentParser) -> None:
    """Give every (sub)command's namespace its parser, so that an unknown flag is reported by the
    command it was given to (argparse reports leftovers at the top level)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(_parser=sub)
                _name_parsers(sub)


def _error_line(exc: HopsimError) -> str:
    """One line for an error; an IR verification error shows its first diagnostic and lists the
    others on the following lines (each one complete: file:line: rule, message, instruction)."""
    diags = getattr(exc, "diagnostics", None)
    if diags:
        fname = getattr(exc, "filename", None)
        lines = [d.format(fname) if fname else str(d) for d in diags]
        more = f" (and {len(lines) - 1} more IR errors below)" if len(lines) > 1 else ""
        return "\n".join([f"hopsim: error: {lines[0]}{more}"] + [f"  {x}" for x in lines[1:]])
    return f"hopsim: error: {exc}"


def missing_command(parser: argparse.ArgumentParser) -> int:
    """A command without its sub-command: the help on stdout, one error line on stderr, exit 2."""
    parser.print_help()
    print(f"{parser.prog}: error: a command is required (see '{parser.prog} --help')", file=sys.stderr)
    return 2


def _quick_exit_collection() -> None:
    """At interpreter exit (an `atexit` handler, registered by `main`): freeze the heap, so that
    the final garbage collections of the interpreter's shutdown skip it. They would traverse every
    object still alive (a simulation's results, matplotlib's modules) only to find that the process
    is ending: ~0.3 CPU-s after the README's main job (its last, single-core step) against ~0.05 s
    frozen. Objects are still released by their reference counts; only cyclic garbage is left to
    the operating system (outputs are written and closed before: inputs.Outputs)."""
    gc.freeze()


def main(argv: list[str] | None = None) -> int:
    atexit.unregister(_quick_exit_collection)  # once, however often main runs in one process
    atexit.register(_quick_exit_collection)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        sub = getattr(args, "_parser", None) or parser
        sub.error("unrecognized arguments: " + " ".join(extra))
    if not getattr(args, "func", None):
        return missing_command(parser)
    try:
        return int(args.func(args) or 0)
    except HopsimError as exc:
        print(_error_line(exc), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("hopsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
