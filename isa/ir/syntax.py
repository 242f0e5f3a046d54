"""What a parse hook of an instruction declaration sees: the parse-time operand shapes (`TensorRef`,
`Pair`, `Sink`, `POp`), the error type `IRSyntaxError` and `ParseCtx` (modifiers left after the
opcode prefix, the parsed operands, and helpers that check kinds and raise positioned errors).
"""

from __future__ import annotations

from dataclasses import dataclass

from isa.ir.operands import Guard, Imm, IRError, Label, Mem, Reg, RegVec, SReg, Sym

__all__ = ["IRSyntaxError", "TensorRef", "Pair", "Sink", "SINK", "POp", "ParseCtx", "kind_name"]


class IRSyntaxError(IRError):
    """A syntax error, unknown instruction or illegal operand in IR text, with its position."""

    def __init__(self, line: int, col: int, msg: str, filename: str = "<string>"):
        self.line, self.col, self.msg, self.filename = line, col, msg, filename
        super().__init__(f"{filename}:{line}:{col}: {msg}")


@dataclass(frozen=True)
class TensorRef:
    """`[tmap, {c0, c1}]` while parsing."""
    tmap: Sym | Reg
    coords: tuple


@dataclass(frozen=True)
class Pair:
    """`lane|pred` of elect.sync while parsing (lane None for `_`)."""
    lane: Reg | None
    pred: Reg


class Sink:
    """`_` while parsing."""


SINK = Sink()


@dataclass(frozen=True)
class POp:
    """A parsed operand and where it starts."""
    v: object
    line: int
    col: int


_KIND_NAMES = {Reg: "a register", Imm: "an immediate", SReg: "a special register", Sym: "a symbol",
               Mem: "a memory operand [..]", RegVec: "a register vector {..}", TensorRef: "[tmap, {coords}]",
               Pair: "lane|pred", Sink: "'_'", Label: "a label", Guard: "a negated predicate !%p"}


def kind_name(v) -> str:
    """How an error message names the kind of a parsed operand."""
    return _KIND_NAMES.get(type(v), type(v).__name__)


class ParseCtx:
    """What an opcode builder sees: the modifiers after its prefix and the operands."""

    def __init__(self, p, head, mods: list[str], ops: list[POp]):
        self.p, self.head, self.mods, self.ops = p, head, list(mods), ops
        self.name = head.text

    def err(self, msg: str, op: POp | None = None) -> IRSyntaxError:
        if op is not None:
            return self.p.err(op.line, op.col, msg)
        return self.p.err(self.head, msg)

    # modifiers
    def take(self, *options: str) -> str | None:
        """Remove and return the first modifier among options (or None)."""
        for m in self.mods:
            if m in options:
                self.mods.remove(m)
                return m
        return None

    def need(self, options, what: str) -> str:
        m = self.take(*options)
        if m is None:
            raise self.err(f"{self.name}: missing {what}; expected one of "
                           + ", ".join("." + o for o in options))
        return m

    def type(self, options, what: str = "type") -> str:
        return self.need(options, what)

    def done(self) -> None:
        if self.mods:
            raise self.err(f"unexpected modifier '.{self.mods[0]}' in '{self.name}'")

    # operands
    def count(self, *allowed: int) -> None:
        if len(self.ops) not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise self.err(f"{self.name.split('.')[0]}: expected {want} operands, got {len(self.ops)}")

    def get(self, i: int, kinds: tuple, what: str):
        op = self.ops[i]
        if not isinstance(op.v, kinds):
            raise self.err(f"operand {i + 1} of {self.name.split('.')[0]}: expected {what}, got {kind_name(op.v)}", op)
        return op.v

    def reg(self, i: int, what: str = "a register"):
        return self.get(i, (Reg,), what)

    def val(self, i: int, what: str = "a register or an immediate"):
        return self.get(i, (Reg, Imm), what)

    def mem(self, i: int, what: str = "a memory operand [addr]"):
        return self.get(i, (Mem,), what)

    def vec(self, i: int, what: str = "a register vector {..}"):
        return self.get(i, (RegVec,), what)

    def reg_or_vec(self, i: int, what: str = "a register or a register vector {..}"):
        return self.get(i, (Reg, RegVec), what)

    def opt_reg(self, i: int, what: str = "a register or '_'"):
        v = self.get(i, (Reg, Sink), what)
        return None if isinstance(v, Sink) else v

    def int_imm(self, i: int, what: str = "an integer constant") -> int:
        v = self.get(i, (Imm,), what)
        if not isinstance(v.value, int):
            raise self.err(f"operand {i + 1} of {self.name.split('.')[0]}: expected {what}", self.ops[i])
        return v.value
