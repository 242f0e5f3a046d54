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

import dataclasses
import difflib
import re
import struct
from dataclasses import dataclass

from isa.ir import instructions as I
from isa.ir.ops.base import INSTRUCTION_CLASSES, SYNTAX
from isa.ir.operands import SPECIAL_REGISTERS, Guard, Imm, IRError, Mem, Reg, RegVec, SReg, Sym
from isa.ir.program import PARAM_TYPES, REG_COUNT_MAX, Kernel, LabelDef, Param, RegDecl, SharedDecl
from isa.ir.syntax import SINK, IRSyntaxError, Pair, ParseCtx, POp, Sink, TensorRef

__all__ = ["parse", "IRSyntaxError", "OPCODES"]


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
                ct = self.tok
                count = self.int_tok("a register count")
                if not 1 <= count <= REG_COUNT_MAX:
                    raise self.err(ct, f"register count {count} is invalid: 1..{REG_COUNT_MAX}")
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
            instr = builder(ParseCtx(self, head, mods, ops))
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
        if t.text == "!":  # a negated predicate source (vote.sync {!}a): parsed as a Guard
            pt = self.expect_kind("reg", "a predicate register after '!'")
            return POp(Guard(Reg(pt.text), True), t.line, t.col)
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
    if len(s) > 40:
        raise p.err(t, f"number {s[:20]}... has {len(s)} characters; an immediate fits in 64 bits")
    digits = {"0f": 8, "0d": 16}.get(s[:2].lower())
    if digits and not re.fullmatch(rf"[0-9a-fA-F]{{{digits}}}", s[2:]):
        raise p.err(t, f"{s}: {s[:2]} needs exactly {digits} hex digits (the IEEE bit pattern)")
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
    if int(mb.group(2)) - int(ma.group(2)) >= REG_COUNT_MAX:
        raise p.err(tok, f"register range {a.name}..{b.name} is too long: at most {REG_COUNT_MAX} registers")
    return [Reg(f"{ma.group(1)}{i}") for i in range(int(ma.group(2)), int(mb.group(2)) + 1)]


def _with_guard(instr: I.Instruction, guard: Guard) -> I.Instruction:
    return dataclasses.replace(instr, guard=guard)


# ---------------------------------------------------------------------------------------- opcodes
OPCODES = SYNTAX
"""Opcode prefix -> parse hook, built from the instruction declarations (`isa.ir.ops`): the
longest dotted prefix of the instruction head wins."""

_SUGGEST = sorted(set(SYNTAX) | set(INSTRUCTION_CLASSES))


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
