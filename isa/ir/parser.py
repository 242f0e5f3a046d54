"""Parse IR text (a PTX-like kernel) into a `Kernel`; errors carry line and column.

    k = parse(text, filename="gemm.ptx")

Grammar (one kernel per text; `//` comments; statements may span lines, instructions end in ';'):

    kernel    := '.kernel' NAME decl* item*
    decl      := '.param' '.'TYPE NAME (',' NAME)*
               | '.reg' '.'TYPE REGSPEC (',' REGSPEC)*         REGSPEC := %name | %name<N>
               | '.shared' ['.align' N] '.'bK NAME '[' N ']'
    item      := NAME ':' | [guard] OPCODE [operand (',' operand)*] ';'
    guard     := '@' ['!'] %pred
    operand   := %reg | %sreg | INT | FLOAT | NAME | '_' | '[' base [('+'|'-') INT] ']'
               | '{' reglist '}' | '[' tmap ',' '{' coords '}' ']' | (%reg|'_') '|' %pred
    reglist   := %a0, %a1, ...  with ranges  %a0..%a63  (also  %a0, ..., %a63)

Every error is an `IRSyntaxError` with `.line`, `.col` (1-based) and a message such as
"kernel.ptx:12:5: unknown instruction 'wgmma.mma_asyn'; did you mean 'wgmma.mma_async'?".
"""

from __future__ import annotations

import difflib
import re
import struct
from dataclasses import dataclass

from isa.ir import instructions as I
from isa.ir.operands import (
    SPECIAL_REGISTERS, Guard, Imm, IRError, Label, Mem, Reg, RegVec, SReg, Sym,
)
from isa.ir.program import Kernel, LabelDef, Param, RegDecl, SharedDecl

__all__ = ["parse", "IRSyntaxError", "OPCODES"]


class IRSyntaxError(IRError):
    """A syntax error, unknown instruction or illegal operand in IR text, with its position."""

    def __init__(self, line: int, col: int, msg: str, filename: str = "<string>"):
        self.line, self.col, self.msg, self.filename = line, col, msg, filename
        super().__init__(f"{filename}:{line}:{col}: {msg}")


# ---------------------------------------------------------------------------------------- lexer
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<num>0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+
            |\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)
  | (?P<reg>%[A-Za-z_$][\w$]*(?:\.[A-Za-z_]\w*)?)
  | (?P<dir>\.[A-Za-z_][\w$]*)
  | (?P<word>[A-Za-z_$][\w$]*(?:(?:\.|::)[\w$]+)*)
  | (?P<punct>\.\.\.|\.\.|[\[\]{},;:+\-|@!<>])
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class Tok:
    kind: str     # num reg dir word punct nl eof
    text: str
    line: int
    col: int


def _lex(text: str, filename: str) -> list[Tok]:
    toks: list[Tok] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise IRSyntaxError(line, pos - line_start + 1, f"unexpected character {text[pos]!r}", filename)
        kind, s = m.lastgroup, m.group()
        col = pos - line_start + 1
        if kind == "reg" and "." in s and s not in SPECIAL_REGISTERS:
            raise IRSyntaxError(line, col, f"unknown special register {s!r}; known: "
                                + ", ".join(sorted(SPECIAL_REGISTERS)), filename)
        pos += len(s)
        if kind == "nl":
            toks.append(Tok("nl", s, line, col))
            line, line_start = line + 1, pos
        elif kind == "bcomment":
            for i, ch in enumerate(s):
                if ch == "\n":
                    line, line_start = line + 1, pos - len(s) + i + 1
        elif kind not in ("ws", "comment"):
            toks.append(Tok(kind, s, line, col))
    toks.append(Tok("eof", "", line, pos - line_start + 1))
    return toks


# ---------------------------------------------------------------------------------------- operands
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
               Pair: "lane|pred", Sink: "'_'", Label: "a label"}


def _kind(v) -> str:
    return _KIND_NAMES.get(type(v), type(v).__name__)


class _Parser:
    def __init__(self, text: str, filename: str):
        self.filename = filename
        self.toks = _lex(text, filename)
        self.i = 0

    # ----------------------------------------------------------------- token helpers
    def err(self, tok_or_line, col_or_msg, msg=None):
        if msg is None:
            t = tok_or_line
            return IRSyntaxError(t.line, t.col, col_or_msg, self.filename)
        return IRSyntaxError(tok_or_line, col_or_msg, msg, self.filename)

    @property
    def tok(self) -> Tok:
        return self.toks[self.i]

    def next(self) -> Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def skip_nl(self) -> None:
        while self.tok.kind == "nl":
            self.i += 1

    def peek(self, skip_nl: bool = True) -> Tok:
        if skip_nl:
            self.skip_nl()
        return self.tok

    def expect(self, text: str, what: str | None = None) -> Tok:
        t = self.peek()
        if t.text != text:
            got = repr(t.text) if t.kind != "eof" else "end of file"
            raise self.err(t, f"expected {what or repr(text)}, got {got}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Tok:
        t = self.peek()
        if t.kind != kind:
            got = repr(t.text) if t.kind != "eof" else "end of file"
            raise self.err(t, f"expected {what}, got {got}")
        return self.next()

    def end_directive(self) -> None:
        t = self.tok
        if t.text == ";":
            self.next()
            t = self.tok
        if t.kind not in ("nl", "eof"):
            raise self.err(t, f"unexpected {t.text!r} after the directive")

    def int_tok(self, what: str) -> int:
        t = self.expect_kind("num", what)
        try:
            return int(t.text, 0)
        except ValueError:
            raise self.err(t, f"expected {what} (an integer), got {t.text!r}") from None

    # ----------------------------------------------------------------- kernel
    def parse(self) -> Kernel:
        t = self.peek()
        if t.text != ".kernel":
            raise self.err(t, "expected '.kernel NAME' first")
        self.next()
        name = self.expect_kind("word", "the kernel name").text
        self.end_directive()
        params, regs, shared, body, lines = [], [], [], [], []
        while True:
            t = self.peek()
            if t.kind == "eof":
                break
            try:
                if t.text == ".param":
                    params += self.param_decl()
                elif t.text == ".reg":
                    regs += self.reg_decl()
                elif t.text == ".shared":
                    shared.append(self.shared_decl())
                elif t.kind == "dir":
                    raise self.err(t, f"unknown directive {t.text!r}; expected .param, .reg or .shared")
                elif t.kind == "word" and self.toks[self.i + 1].text == ":":
                    self.i += 2
                    body.append(LabelDef(t.text))
                    lines.append(t.line)
                elif t.text == ".kernel":
                    raise self.err(t, "only one .kernel per text")
                else:
                    body.append(self.instruction())
                    lines.append(t.line)
            except IRSyntaxError:
                raise
            except IRError as e:
                raise self.err(t, str(e)) from None
        return Kernel(name, tuple(params), tuple(regs), tuple(shared), tuple(body),
                      lines=tuple(lines), filename=self.filename)

    def type_tok(self, allowed, what: str) -> str:
        t = self.expect_kind("dir", f"a type ({what})")
        ty = t.text[1:]
        if ty not in allowed:
            raise self.err(t, f"type .{ty} is invalid for {what}; allowed: {', '.join(allowed)}")
        return ty

    def param_decl(self) -> list[Param]:
        from isa.ir.program import PARAM_TYPES
        self.next()
        ty = self.type_tok(PARAM_TYPES, ".param")
        out = [Param(self.expect_kind("word", "a parameter name").text, ty)]
        while self.tok.text == ",":
            self.next()
            out.append(Param(self.expect_kind("word", "a parameter name").text, ty))
        self.end_directive()
        return out

    def reg_decl(self) -> list[RegDecl]:
        self.next()
        ty = self.type_tok(I.REG_TYPES, ".reg")
        out = []
        while True:
            name = self.expect_kind("reg", "a register name like %r or %r<16>").text
            count = None
            if self.tok.text == "<":
                self.next()
                count = self.int_tok("a register count")
                self.expect(">")
            out.append(RegDecl(ty, name, count))
            if self.tok.text != ",":
                break
            self.next()
        self.end_directive()
        return out

    def shared_decl(self) -> SharedDecl:
        self.next()
        align = None
        if self.peek().text == ".align":
            self.next()
            align = self.int_tok("an alignment")
        t = self.peek()
        elem = self.type_tok(("b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s32", "f32", "f16"),
                             ".shared")
        size = I.TYPE_BITS[elem] // 8
        name = self.expect_kind("word", "a buffer name").text
        self.expect("[")
        n = self.int_tok("the element count")
        self.expect("]")
        self.end_directive()
        del t
        return SharedDecl(name, align if align is not None else size, n * size)

    # ----------------------------------------------------------------- instruction
    def instruction(self) -> I.Instruction:
        guard = None
        start = self.peek()
        if start.text == "@":
            self.next()
            neg = False
            if self.tok.text == "!":
                self.next()
                neg = True
            pt = self.expect_kind("reg", "a predicate register after '@'")
            guard = Guard(Reg(pt.text), neg)
        head = self.peek()
        if head.kind != "word":
            if head.kind == "eof":
                raise self.err(start, "expected an instruction, got end of file")
            raise self.err(head, f"expected an instruction, got {head.text!r}")
        self.next()
        ops: list[POp] = []
        if self.tok.kind in ("nl", "eof"):
            self.missing_semicolon()
        if self.peek().text != ";":
            while True:
                ops.append(self.operand())
                if self.tok.kind in ("nl", "eof") and self.peek().text not in (",", ";"):
                    self.missing_semicolon()
                t = self.peek()
                if t.text == ";":
                    break
                if t.text != ",":
                    raise self.err(t, f"expected ',' or ';' after an operand, got {t.text!r}")
                self.next()
        self.expect(";")
        builder, mods = _dispatch(head, self)
        try:
            instr = builder(_Ctx(self, head, mods, ops))
        except IRSyntaxError:
            raise
        except IRError as e:
            raise self.err(head, str(e)) from None
        if guard is not None:
            instr = _with_guard(instr, guard)
        return instr

    def missing_semicolon(self):
        t = self.toks[self.i - 1]
        raise self.err(t.line, t.col + len(t.text), "missing ';' at the end of the instruction")

    def operand(self) -> POp:
        t = self.peek()
        if t.text == "[":
            self.next()
            base_t = self.peek()
            base = self.simple_operand(self.next())
            if not isinstance(base, (Reg, Sym)):
                raise self.err(base_t, f"expected a register or a symbol as address, got {base_t.text!r}")
            if self.peek().text == ",":
                self.next()
                self.expect("{", "'{' opening the tensor coordinates")
                coords = self.brace_items()
                self.expect("]")
                return POp(TensorRef(base, tuple(coords)), t.line, t.col)
            off = 0
            if self.peek().text in ("+", "-"):
                sign = -1 if self.next().text == "-" else 1
                if self.peek().text == "-":
                    self.next()
                    sign = -sign
                off = sign * self.int_tok("a byte offset")
            self.expect("]")
            return POp(Mem(base, off), t.line, t.col)
        if t.text == "{":
            self.next()
            items = self.brace_items()
            if not all(isinstance(x, Reg) for x in items):
                return POp(tuple(items), t.line, t.col)
            return POp(RegVec(tuple(items)), t.line, t.col)
        self.next()
        v = self.simple_operand(t)
        if self.tok.text == "|":
            self.next()
            pt = self.expect_kind("reg", "a predicate register after '|'")
            if not isinstance(v, (Reg, Sink)):
                raise self.err(t, "expected a register or '_' before '|'")
            return POp(Pair(None if isinstance(v, Sink) else v, Reg(pt.text)), t.line, t.col)
        return POp(v, t.line, t.col)

    def simple_operand(self, t: Tok):
        if t.kind == "reg":
            return SReg(t.text) if t.text in SPECIAL_REGISTERS else Reg(t.text)
        if t.text == "-":
            n = self.peek()
            if n.kind != "num":
                raise self.err(n, "expected a number after '-'")
            self.next()
            v = _number(n, self)
            return Imm(-v.value)
        if t.kind == "num":
            return _number(t, self)
        if t.kind == "word":
            if t.text == "_":
                return SINK
            if "." in t.text or "::" in t.text:
                raise self.err(t, f"expected an operand, got {t.text!r}")
            return Sym(t.text)
        got = repr(t.text) if t.kind != "eof" else "end of file"
        raise self.err(t, f"expected an operand, got {got}")

    def brace_items(self) -> list:
        items: list = []
        pending_ellipsis = False
        while True:
            t = self.peek()
            if t.text == "}":
                self.next()
                break
            if t.text == "...":
                self.next()
                pending_ellipsis = True
            else:
                self.next()
                v = self.simple_operand(t)
                if self.peek().text == "..":
                    self.next()
                    end = self.simple_operand(self.next())
                    items.extend(_expand(v, end, t, self))
                elif pending_ellipsis:
                    if not items:
                        raise self.err(t, "'...' needs a register before it")
                    items.extend(_expand(items.pop(), v, t, self))
                    pending_ellipsis = False
                else:
                    items.append(v)
            t = self.peek()
            if t.text == ",":
                self.next()
            elif t.text != "}":
                raise self.err(t, f"expected ',' or '}}' in a brace list, got {t.text!r}")
        if pending_ellipsis:
            raise self.err(self.toks[self.i - 1], "'...' needs a register after it")
        if not items:
            raise self.err(self.toks[self.i - 1], "empty brace list")
        return items


def _number(t: Tok, p: _Parser) -> Imm:
    s = t.text
    if s[:2] in ("0f", "0F"):
        return Imm(struct.unpack(">f", bytes.fromhex(s[2:]))[0])
    if s[:2] in ("0d", "0D"):
        return Imm(struct.unpack(">d", bytes.fromhex(s[2:]))[0])
    if s[:2] in ("0x", "0X"):
        return Imm(int(s, 16))
    if any(c in s for c in ".eE"):
        return Imm(float(s))
    return Imm(int(s))


_NUM_SUFFIX = re.compile(r"^(%.*?)(\d+)$")


def _expand(a, b, tok: Tok, p: _Parser) -> list[Reg]:
    if not isinstance(a, Reg) or not isinstance(b, Reg):
        raise p.err(tok, "a register range needs registers on both sides: %a0..%a63")
    ma, mb = _NUM_SUFFIX.match(a.name), _NUM_SUFFIX.match(b.name)
    if not ma or not mb or ma.group(1) != mb.group(1) or int(mb.group(2)) < int(ma.group(2)):
        raise p.err(tok, f"bad register range {a.name}..{b.name}: same prefix, ascending numbers")
    return [Reg(f"{ma.group(1)}{i}") for i in range(int(ma.group(2)), int(mb.group(2)) + 1)]


def _with_guard(instr: I.Instruction, guard: Guard) -> I.Instruction:
    import dataclasses
    return dataclasses.replace(instr, guard=guard)


# ---------------------------------------------------------------------------------------- context
class _Ctx:
    """What an opcode builder sees: the modifiers after its prefix and the operands."""

    def __init__(self, p: _Parser, head: Tok, mods: list[str], ops: list[POp]):
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
            raise self.err(f"operand {i + 1} of {self.name.split('.')[0]}: expected {what}, got {_kind(op.v)}", op)
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


# ---------------------------------------------------------------------------------------- opcodes
_INT_FLOAT = I.INT + I.FLOAT + I.HALF


def _binary(cls, types):
    def build(c: _Ctx):
        ty = c.type(types)
        c.done()
        c.count(3)
        return cls(ty, c.reg(0), c.val(1), c.val(2))
    return build


def _arith(cls):
    def build(c: _Ctx):
        rnd = c.take(*I.FLOAT_RND)
        ty = c.type(_INT_FLOAT)
        c.done()
        c.count(3)
        return cls(ty, c.reg(0), c.val(1), c.val(2), rnd=rnd)
    return build


def _mov(c: _Ctx):
    ty = c.type(("pred",) + I.BITS + I.INT + I.FLOAT)
    c.done()
    c.count(2)
    return I.Mov(ty, c.reg(0), c.get(1, (Reg, Imm, SReg, Sym), "a register, immediate, special register or symbol"))


def _mul(c: _Ctx):
    mode = c.take(*I.MUL_MODES)
    rnd = c.take(*I.FLOAT_RND)
    ty = c.type(_INT_FLOAT)
    c.done()
    c.count(3)
    return I.Mul(ty, c.reg(0), c.val(1), c.val(2), mode=mode, rnd=rnd)


def _mad(c: _Ctx):
    mode = c.take(*I.MUL_MODES)
    rnd = c.take(*I.FLOAT_RND)
    ty = c.type(I.INT + I.FLOAT)
    c.done()
    c.count(4)
    return I.Mad(ty, c.reg(0), c.val(1), c.val(2), c.val(3), mode=mode, rnd=rnd)


def _not(c: _Ctx):
    ty = c.type(("pred",) + I.BITS)
    c.done()
    c.count(2)
    return I.Not(ty, c.reg(0), c.val(1))


def _setp(c: _Ctx):
    cmp = c.need(I.CMP_FLOAT + ("lo", "ls", "hi", "hs"), "comparison")
    ty = c.type(I.INT + I.BITS + I.FLOAT + ("f16", "bf16"))
    c.done()
    c.count(3)
    return I.Setp(cmp, ty, c.reg(0, "a predicate register"), c.val(1), c.val(2))


def _selp(c: _Ctx):
    ty = c.type(I.BITS + I.INT + I.FLOAT)
    c.done()
    c.count(4)
    return I.Selp(ty, c.reg(0), c.val(1), c.val(2), c.reg(3, "a predicate register"))


def _cvt(c: _Ctx):
    rnd = c.take(*(I.FLOAT_RND + I.INT_RND))
    sat = c.take("sat") is not None
    types = [m for m in c.mods]
    if len(types) != 2:
        raise c.err(f"cvt: expected .dtype.stype, got {'.'.join(types) or 'nothing'}")
    c.mods = []
    c.count(2, 3)
    src2 = c.reg(2) if len(c.ops) == 3 else None
    return I.Cvt(types[0], types[1], c.reg(0), c.reg(1), rnd=rnd, sat=sat, src2=src2)


def _elect(c: _Ctx):
    c.done()
    c.count(2)
    pair = c.get(0, (Pair,), "lane|pred (e.g. _|%p0)")
    return I.ElectSync(pair.pred, c.val(1), pair.lane)


def _bar(c: _Ctx):
    c.take("aligned")
    c.done()
    c.count(1, 2)
    return I.BarSync(c.val(0), c.val(1) if len(c.ops) == 2 else None)


def _bra(c: _Ctx):
    uni = c.take("uni") is not None
    c.done()
    c.count(1)
    s = c.get(0, (Sym,), "a label")
    return I.Bra(Label(s.name), uni)


def _exit(c: _Ctx):
    c.done()
    c.count(0)
    return I.Exit()


def _setmaxnreg(c: _Ctx):
    action = c.need(("inc", "dec"), "action")
    for m in ("sync", "aligned", "u32"):
        c.need((m,), f".{m}")
    c.done()
    c.count(1)
    return I.Setmaxnreg(action, c.int_imm(0))


_SPACES = {"global": "global", "shared": "shared", "shared::cta": "shared", "param": "param"}
_LD = {"global": I.LdGlobal, "shared": I.LdShared, "param": I.LdParam}
_ST = {"global": I.StGlobal, "shared": I.StShared}


def _ld(c: _Ctx):
    space = c.need(("global", "shared", "shared::cta", "param"), "state space")
    cls = _LD[_SPACES[space]]
    v = c.take("v2", "v4")
    ty = c.type(I.MEM_TYPES)
    c.done()
    c.count(2)
    dst = c.reg_or_vec(0)
    return cls(ty, dst, c.mem(1), int(v[1]) if v else 1)


def _st(c: _Ctx):
    space = c.need(("global", "shared", "shared::cta"), "state space")
    cls = _ST[_SPACES[space]]
    v = c.take("v2", "v4")
    ty = c.type(I.MEM_TYPES)
    c.done()
    c.count(2)
    return cls(ty, c.mem(0), c.reg_or_vec(1), int(v[1]) if v else 1)


def _matrix(cls, load: bool):
    def build(c: _Ctx):
        c.need(("sync",), ".sync")
        c.need(("aligned",), ".aligned")
        shape = c.need(("m8n8", "m16n16", "m8n16"), "shape")
        num = c.need(("x1", "x2", "x4"), "count .x1/.x2/.x4")
        trans = c.take("trans") is not None
        c.take("shared", "shared::cta")
        ty = c.need(("b16", "b8"), "type")
        c.done()
        c.count(2)
        regs = c.reg_or_vec(0 if load else 1)
        if isinstance(regs, Reg):
            regs = RegVec((regs,))
        addr = c.mem(1 if load else 0)
        return cls(int(num[1]), regs, addr, trans, shape, ty)
    return build


def _fence_proxy(c: _Ctx):
    space = c.take("shared::cta", "shared::cluster", "global")
    if space is None and c.take("shared") is not None:
        space = "shared::cta"
    c.done()
    c.count(0)
    return I.FenceProxyAsync(space)


def _fence_mbar_init(c: _Ctx):
    c.need(("release",), ".release")
    c.need(("cluster",), ".cluster")
    c.done()
    c.count(0)
    return I.FenceMbarrierInit()


def _mbar_mods(c: _Ctx, sems=("release", "relaxed", "acquire")) -> None:
    c.take(*sems)
    c.take("cta", "cluster")
    space = c.take("shared", "shared::cta", "shared::cluster")
    if space in (None, "shared::cluster"):
        raise c.err(f"{c.name}: hopsim models mbarrier objects in .shared::cta; write .shared::cta.b64 "
                    "(PTX ISA, mbarrier: a .b64 object in .shared::cta)")
    if c.take("b64") is None:
        raise c.err(f"{c.name}: the mbarrier object type must be .b64 (PTX ISA, mbarrier: .b64 only)")
    c.done()


def _mbar_init(c: _Ctx):
    _mbar_mods(c)
    c.count(2)
    return I.MbarrierInit(c.mem(0), c.val(1))


def _mbar_arrive(c: _Ctx):
    _mbar_mods(c)
    c.count(2, 3)
    return I.MbarrierArrive(c.mem(1), c.opt_reg(0), c.val(2) if len(c.ops) == 3 else None)


def _mbar_arrive_tx(c: _Ctx):
    _mbar_mods(c)
    c.count(3)
    return I.MbarrierArriveExpectTx(c.mem(1), c.val(2), c.opt_reg(0))


def _mbar_tx(cls):
    def build(c: _Ctx):
        _mbar_mods(c)
        c.count(2)
        return cls(c.mem(0), c.val(1))
    return build


def _mbar_try(c: _Ctx):
    _mbar_mods(c)
    c.count(3, 4)
    hint = c.val(3) if len(c.ops) == 4 else None
    return I.MbarrierTryWaitParity(c.reg(0, "a predicate register"), c.mem(1), c.val(2), hint)


def _mbar_test(c: _Ctx):
    _mbar_mods(c)
    c.count(3)
    return I.MbarrierTestWaitParity(c.reg(0, "a predicate register"), c.mem(1), c.val(2))


def _mbar_inval(c: _Ctx):
    _mbar_mods(c)
    c.count(1)
    return I.MbarrierInval(c.mem(0))


def _tensor(c: _Ctx):
    dim_t = c.need(("1d", "2d", "3d", "4d", "5d"), "dimension .1d...5d")
    dims = int(dim_t[0])
    c.take("tile")
    for bad in ("im2col", "multicast::cluster", "L2::cache_hint", "im2col_no_offs", "tile::gather4"):
        if c.take(bad):
            raise c.err(f"{c.name}: .{bad} is not modelled by hopsim (loads: .tile, no multicast/cache hint)")
    if c.take("mbarrier::complete_tx::bytes"):
        if c.take("shared::cluster", "shared::cta") is None:
            raise c.err(f"{c.name}: a tensor load needs destination .shared::cluster (or .shared::cta)")
        c.need(("global",), "source space .global")
        c.done()
        c.count(3)
        ref = c.get(1, (TensorRef,), "[tensorMap, {coords}]")
        return I.CpAsyncBulkTensorLoad(dims, c.mem(0), ref.tmap, ref.coords, c.mem(2, "the mbarrier [addr]"))
    if c.take("bulk_group"):
        c.need(("global",), "destination space .global")
        c.need(("shared::cta",), "source space .shared::cta")
        c.done()
        c.count(2)
        ref = c.get(0, (TensorRef,), "[tensorMap, {coords}]")
        return I.CpAsyncBulkTensorStore(dims, ref.tmap, ref.coords, c.mem(1))
    raise c.err(f"{c.name}: expected completion .mbarrier::complete_tx::bytes (load) or .bulk_group (store)")


def _bulk_commit(c: _Ctx):
    c.done()
    c.count(0)
    return I.CpAsyncBulkCommitGroup()


def _bulk_wait(c: _Ctx):
    read = c.take("read") is not None
    c.done()
    c.count(1)
    return I.CpAsyncBulkWaitGroup(c.int_imm(0), read)


def _sync_aligned(c: _Ctx) -> None:
    c.need(("sync",), ".sync")
    c.need(("aligned",), ".aligned")


def _simple(cls):
    def build(c: _Ctx):
        _sync_aligned(c)
        c.done()
        c.count(0)
        return cls()
    return build


def _wgmma_wait(c: _Ctx):
    _sync_aligned(c)
    c.done()
    c.count(1)
    return I.WgmmaWaitGroup(c.int_imm(0))


_WG_SHAPE = re.compile(r"^m64n(\d+)k16$")


def _wgmma(c: _Ctx):
    _sync_aligned(c)
    shape = next((m for m in c.mods if m.startswith("m")), None)
    mm = _WG_SHAPE.match(shape or "")
    if not mm:
        raise c.err(f"wgmma.mma_async: expected shape .m64nNk16 (f16/bf16), got {shape!r} "
                    "(PTX ISA, wgmma.mma_async shapes)")
    c.mods.remove(shape)
    if len(c.mods) != 3:
        raise c.err("wgmma.mma_async: expected .dtype_d.dtype_a.dtype_b after the shape")
    dd, da, db = c.mods
    c.mods = []
    a = c.reg_or_vec(1, "a 64-bit descriptor register or {4 A registers}")
    n_imm = 3 if isinstance(a, RegVec) else 4
    c.count(4 + n_imm)
    imms = [c.int_imm(4 + k, "an immediate") for k in range(n_imm)]
    if n_imm == 3:
        scale_a, scale_b, trans_a, trans_b = imms[0], imms[1], 0, imms[2]
    else:
        scale_a, scale_b, trans_a, trans_b = imms
    return I.WgmmaMmaAsync(int(mm.group(1)), dd, da, db, c.vec(0, "the accumulator vector {..}"), a,
                           c.reg(2, "the B descriptor register"), c.val(3, "a predicate or 0/1"),
                           scale_a, scale_b, trans_a, trans_b)


OPCODES: dict[str, object] = {
    "mov": _mov, "add": _arith(I.Add), "sub": _arith(I.Sub), "mul": _mul, "mad": _mad,
    "min": _binary(I.Min, _INT_FLOAT), "max": _binary(I.Max, _INT_FLOAT),
    "shl": _binary(I.Shl, I.BITS), "shr": _binary(I.Shr, I.BITS + I.INT),
    "and": _binary(I.And, ("pred",) + I.BITS), "or": _binary(I.Or, ("pred",) + I.BITS),
    "xor": _binary(I.Xor, ("pred",) + I.BITS), "not": _not,
    "setp": _setp, "selp": _selp, "cvt": _cvt,
    "elect.sync": _elect, "bar.sync": _bar, "barrier.sync": _bar, "bra": _bra, "exit": _exit,
    "setmaxnreg": _setmaxnreg,
    "ld": _ld, "st": _st,
    "ldmatrix": _matrix(I.Ldmatrix, True), "stmatrix": _matrix(I.Stmatrix, False),
    "fence.proxy.async": _fence_proxy, "fence.mbarrier_init": _fence_mbar_init,
    "mbarrier.init": _mbar_init, "mbarrier.arrive": _mbar_arrive,
    "mbarrier.arrive.expect_tx": _mbar_arrive_tx,
    "mbarrier.expect_tx": _mbar_tx(I.MbarrierExpectTx), "mbarrier.complete_tx": _mbar_tx(I.MbarrierCompleteTx),
    "mbarrier.try_wait.parity": _mbar_try, "mbarrier.test_wait.parity": _mbar_test,
    "mbarrier.inval": _mbar_inval,
    "cp.async.bulk.tensor": _tensor, "cp.async.bulk.commit_group": _bulk_commit,
    "cp.async.bulk.wait_group": _bulk_wait,
    "wgmma.fence": _simple(I.WgmmaFence), "wgmma.commit_group": _simple(I.WgmmaCommitGroup),
    "wgmma.wait_group": _wgmma_wait, "wgmma.mma_async": _wgmma,
}
"""Opcode prefix -> builder (the longest dotted prefix of the instruction head wins)."""

_SUGGEST = sorted(set(OPCODES) | {"ld.global", "ld.shared", "ld.param", "st.global", "st.shared"})


def _dispatch(head: Tok, p: _Parser):
    parts = head.text.split(".")
    for n in range(min(len(parts), 4), 0, -1):
        key = ".".join(parts[:n])
        if key in OPCODES:
            return OPCODES[key], parts[n:]
    # unknown: suggest the closest known opcode with as many dotted parts
    best = (0.0, parts[0], None)
    for n in range(1, min(len(parts), 3) + 1):
        cand = ".".join(parts[:n])
        for known in _SUGGEST:
            if known.count(".") + 1 != n:
                continue
            r = difflib.SequenceMatcher(None, cand, known).ratio()
            if r > best[0]:
                best = (r, cand, known)
    ratio, cand, known = best
    msg = f"unknown instruction '{cand if known and ratio >= 0.75 else parts[0]}'"
    if known and ratio >= 0.75:
        msg += f"; did you mean '{known}'?"
    raise p.err(head, msg)


def parse(text: str, filename: str = "<string>") -> Kernel:
    """Parse one kernel from IR text. Raises IRSyntaxError (with .line, .col) on any error."""
    return _Parser(text, filename).parse()
