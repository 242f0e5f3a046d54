"""Static checks of a Kernel: names, operand types, and two protocol rules over every path.

    diags = verify(kernel)          # list[Diagnostic], errors and warnings
    check(kernel)                   # raises VerifyError listing the errors (warnings pass)

Rules (the `rule` field of a Diagnostic):

    duplicate-name          a register, parameter, shared buffer or label declared twice
    undefined-label         `bra X` with no `X:` in the body
    undefined-register      a register that no `.reg` declares
    undefined-symbol        a name that is no `.param`/`.shared`, or of the wrong kind
                            (ld.param of a shared buffer, a TMA tensor map that is no .tmap param, ...)
    operand-type            a register whose declared type does not fit its slot: a float register in
                            an integer op, a 32-bit register as a wgmma descriptor or global address,
                            a non-predicate guard, accumulators of the wrong type for dtype_d, ...
    mbarrier-before-init    an mbarrier op (or a TMA load's complete_tx barrier) reachable on some
                            path from the entry without an mbarrier.init of that barrier before it
    wgmma-without-fence     a wgmma.mma_async reachable on some path without a wgmma.fence since the
                            entry or since the last write of a wgmma accumulator/A register
    missing-exit            (warning) control can run off the end of the body

Rules a single instruction can decide (wgmma N and accumulator count, ldmatrix register count,
setmaxnreg range, vector widths, setp comparisons...) are enforced when the instruction is built.

The path rules are conservative in the safe direction: an mbarrier addressed through a register
counts as initialised once any mbarrier.init happened on every path; a guarded init counts (one
thread initialises, `bar.sync` publishes it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from isa.ir import instructions as I
from isa.ir.operands import Imm, IRError, Mem, Reg, RegVec, SReg, Sym
from isa.ir.uniformity import divergent_guards, divergent_region
from isa.ir.program import Kernel, LabelDef

__all__ = ["Diagnostic", "VerifyError", "verify", "check", "RULES"]

RULES = ("duplicate-name", "undefined-label", "undefined-register", "undefined-symbol", "operand-type",
         "mbarrier-before-init", "wgmma-without-fence", "missing-exit")


@dataclass(frozen=True)
class Diagnostic:
    """One finding: body index, source line (if parsed), instruction text, rule, message."""

    index: int | None
    line: int | None
    text: str
    rule: str
    message: str
    severity: str = "error"

    def format(self, filename: str = "<kernel>") -> str:
        where = f"{filename}:{self.line}" if self.line else (f"{filename}: body[{self.index}]"
                                                             if self.index is not None else filename)
        t = f"  `{self.text}`" if self.text else ""
        return f"{where}: {self.severity} [{self.rule}] {self.message}{t}"

    def __str__(self) -> str:
        return self.format()


class VerifyError(IRError):
    """The kernel has error diagnostics; `.diagnostics` lists them."""

    def __init__(self, diagnostics: list[Diagnostic], filename: str = "<kernel>"):
        self.diagnostics = diagnostics
        self.filename = filename
        super().__init__(f"{len(diagnostics)} IR error(s):\n" + "\n".join(d.format(filename) for d in diagnostics))


# ------------------------------------------------------------------------------------- type fit
INT_REG = ("u16", "u32", "u64", "s16", "s32", "s64", "b16", "b32", "b64")
_FLOAT_OK = {"f32": ("f32", "b32"), "f64": ("f64", "b64"), "f16": ("f16", "b16"), "bf16": ("bf16", "b16"),
             "f16x2": ("f16x2", "b32"), "bf16x2": ("bf16x2", "b32")}


def fits(inst_type: str, reg_type: str, *, wider_ok: bool = False) -> bool:
    """May a register of reg_type hold an operand of inst_type? (PTX ISA, operand type-checking:
    bit-size types take any same-size register; integers take same-size integer/bit registers;
    floats take the same float or bit type.) `wider_ok`: integer ld/st/cvt may use wider registers."""
    if inst_type == "pred" or reg_type == "pred":
        return inst_type == reg_type
    ib, rb = I.TYPE_BITS[inst_type], I.TYPE_BITS[reg_type]
    if inst_type in _FLOAT_OK:
        return reg_type in _FLOAT_OK[inst_type]
    if inst_type[0] == "b":
        return rb == ib or (wider_ok and rb > ib and reg_type in INT_REG)
    # u/s integers
    if reg_type not in INT_REG:
        return False
    return rb == ib or (wider_ok and rb > ib)


def _int_bits(bits: tuple[int, ...]):
    return lambda t: t in INT_REG and I.TYPE_BITS[t] in bits


_PRED = ("a predicate (.pred)", lambda t: t == "pred")
_U32 = ("a 32-bit integer", _int_bits((32,)))
_ADDR = ("a 32/64-bit integer address", _int_bits((32, 64)))
_ADDR64 = ("a 64-bit integer address", _int_bits((64,)))
_DESC = ("a 64-bit descriptor (.b64/.u64)", _int_bits((64,)))
_B32 = ("a 32-bit register (.b32/.u32/.f16x2/...)", lambda t: t != "pred" and I.TYPE_BITS[t] == 32)


def _of_type(type_: str, wider_ok: bool = False):
    return (f"a register fitting .{type_}", lambda t: fits(type_, t, wider_ok=wider_ok))


REG_RULES = {"pred": _PRED, "u32": _U32, "addr": _ADDR, "addr64": _ADDR64, "desc": _DESC, "b32": _B32,
             "state64": ("a 64-bit state register", _int_bits((64,))),
             "acc_f32": ("an .f32 accumulator register (.f32/.b32)", lambda t: t in ("f32", "b32")),
             "acc_f16x2": ("an .f16x2 accumulator register (.f16x2/.b32)", lambda t: t in ("f16x2", "b32"))}
"""Register type rules an instruction declaration names in `typed_registers()` (besides
("of", type, wider_ok): a register fitting .type)."""


def _rule(r) -> tuple:
    if isinstance(r, tuple):
        _, type_, wider_ok = r
        return _of_type(type_, wider_ok)
    return REG_RULES[r]


def _slots(x: I.Instruction) -> list[tuple[object, tuple]]:
    """(operand, (description, predicate on the register type)) for every typed register slot,
    from the declaration's `typed_registers()`."""
    s = [(op, _rule(r)) for op, r in x.typed_registers()]
    if x.guard is not None:
        s.append((x.guard.pred, _PRED))
    return [(op, slot) for op, slot in s if isinstance(op, Reg)]


# ------------------------------------------------------------------------------------- the checks
class _Verifier:
    def __init__(self, k: Kernel):
        self.k = k
        self.diags: list[Diagnostic] = []
        self.types = k.reg_types()
        self.labels = k.labels()
        self.params = {p.name: p for p in k.params}
        self.shared = {s.name for s in k.shared}

    def add(self, index, rule, message, severity="error"):
        item = self.k.body[index] if index is not None else None
        text = item.text() if isinstance(item, I.Instruction) else (item.text() if item else "")
        line = self.k.line_of(index) if index is not None else None
        self.diags.append(Diagnostic(index, line, text, rule, message, severity))

    def run(self) -> list[Diagnostic]:
        self.names()
        self.diverged = divergent_region(self.k)  # may run on part of a warp (a divergent branch's paths)
        for i, x in self.k.instructions():
            self.instruction(i, x)
        self.paths()
        self.barrier_counts()
        for i, message in divergent_guards(self.k):
            self.add(i, "divergent-barrier", message, "warning")
        return self.diags

    def barrier_counts(self) -> None:
        """Named barriers with constant ids given different constant thread counts (a warning: PTX
        ISA, bar: all arrivals of one phase give the same count; other phases may differ, so the run
        time raises BarrierCountMismatch where a phase really mixes them)."""
        first: dict[int, tuple[int | None, int]] = {}
        for i, x in self.k.instructions():
            if not isinstance(x, (I.BarSync, I.BarArrive)) or not isinstance(x.barrier, Imm):
                continue
            if x.count is not None and not isinstance(x.count, Imm):
                continue
            count = None if x.count is None else x.count.value
            seen = first.setdefault(x.barrier.value, (count, i))
            if seen[0] != count:
                what = lambda c: "every thread of the CTA" if c is None else f"{c} threads"  # noqa: E731
                self.add(i, "barrier-count", f"barrier {x.barrier.value} is given {what(count)} here and "
                                             f"{what(seen[0])} at line {self.k.line_of(seen[1])}: arrivals of one "
                                             "phase must give the same count (PTX ISA, bar)", "warning")

    def names(self) -> None:
        seen: dict[str, str] = {}
        for d in self.k.regs:
            for n in d.names():
                if n in seen:
                    self.add(None, "duplicate-name", f"register {n} declared twice")
                seen[n] = "reg"
        syms: set[str] = set()
        for n in [p.name for p in self.k.params] + [s.name for s in self.k.shared]:
            if n in syms:
                self.add(None, "duplicate-name", f"symbol {n} declared twice (.param/.shared)")
            syms.add(n)
        labels: set[str] = set()
        for i, item in enumerate(self.k.body):
            if isinstance(item, LabelDef):
                if item.name in labels:
                    self.add(i, "duplicate-name", f"label {item.name} defined twice")
                labels.add(item.name)

    def sym(self, i: int, s: Sym, want: str) -> None:
        """want: 'shared', 'param', 'tmap', 'any'."""
        if s.name in self.shared:
            kind = "shared"
        elif s.name in self.params:
            kind = "tmap" if self.params[s.name].type == "tmap" else "param"
        else:
            self.add(i, "undefined-symbol", f"{s.name} is neither a .param nor a .shared buffer")
            return
        ok = want == "any" or kind == want or (want == "param" and kind == "tmap")
        if not ok:
            need = {"shared": "a .shared buffer", "param": "a .param", "tmap": "a .tmap parameter (tensor map)",
                    }[want]
            self.add(i, "undefined-symbol", f"{s.name} is a {'.' + kind} name here; expected {need}")

    def instruction(self, i: int, x: I.Instruction) -> None:
        if isinstance(x, I.Bra) and x.target.name not in self.labels:
            self.add(i, "undefined-label", f"branch target {x.target.name} is not defined")
        reported: set[str] = set()
        for r in x.reads() + x.writes():
            if r.name not in self.types and r.name not in reported:
                reported.add(r.name)
                self.add(i, "undefined-register", f"register {r.name} is not declared")
        for op, (desc, ok) in _slots(x):
            t = self.types.get(op.name)
            if t is not None and not ok(t):
                self.add(i, "operand-type", f"{op.name} is .{t}; {x.mnemonic} needs {desc} here")
        self.immediates(i, x)
        for rule, message, severity in x.lint():
            if rule == "membermask" and i in self.diverged:
                continue  # inside a path of a divergent branch only some lanes run it: the run time decides
            self.add(i, rule, message, severity)
        if isinstance(x, I.Mov) and isinstance(x.src, SReg) and I.TYPE_BITS[x.type] != x.src.bits:
            self.add(i, "operand-type", f"{x.src.name} is {x.src.bits}-bit; mov.{x.type} needs a "
                                        f"{x.src.bits}-bit type")
        # symbols
        for m, want in self._mem_syms(x):
            if want == "global":
                self.add(i, "undefined-symbol", f"{m.name}: a global address must be a 64-bit register "
                                                "(there are no global symbols)")
            else:
                self.sym(i, m, want)

    def immediates(self, i: int, x: I.Instruction) -> None:
        """An integer-typed instruction takes integer immediates of at most 64 bits: a float
        literal (0f/0d bit pattern, NaN, a decimal point) there has no integer value."""
        ty = getattr(x, "type", None)
        integer = isinstance(ty, str) and ty[:1] in ("u", "s", "b")
        for f in dataclasses.fields(x):
            v = getattr(x, f.name, None)
            for imm in (v if isinstance(v, tuple) else (v,)):
                if not isinstance(imm, Imm):
                    continue
                if integer and imm.is_float:
                    self.add(i, "operand-type", f"immediate {imm.value!r} is a float literal; "
                                                f"{x.mnemonic} (.{ty}) needs an integer immediate")
                elif not imm.is_float and not -(1 << 63) <= imm.value < 1 << 64:
                    self.add(i, "operand-type", f"immediate {imm.value} does not fit in 64 bits")

    def _mem_syms(self, x: I.Instruction):
        """(symbol, space wanted) for each symbol operand, from the declaration's `symbol_uses()`."""
        return x.symbol_uses()

    # --------------------------------------------------------------------------- path rules
    def succ(self, i: int) -> list[int]:
        x = self.k.body[i]
        if isinstance(x, I.Bra):
            t = self.labels.get(x.target.name)
            nxt = [t] if t is not None else []
            return nxt + ([i + 1] if x.guard is not None else [])
        if isinstance(x, I.Exit) and x.guard is None:
            return []
        return [i + 1]

    def paths(self) -> None:
        body = self.k.body
        n = len(body)
        if n == 0:
            return
        acc_regs = set()
        for _, x in self.k.instructions():
            if isinstance(x, I.WgmmaMmaAsync):
                acc_regs.update(r.name for r in x.d)
                if isinstance(x.a, RegVec):
                    acc_regs.update(r.name for r in x.a)
        # state: (frozenset of symbolic barrier keys, any_reg_init, any_init, fenced); must-analysis
        TOP = None
        state: list = [TOP] * (n + 1)
        state[0] = (frozenset(), False, False, False)
        work = [0]
        reported: set[tuple[int, str]] = set()
        while work:
            i = work.pop()
            if i == n:
                continue
            keys, reg_init, any_init, fenced = state[i]
            x = body[i]
            if isinstance(x, I.Instruction):
                for m in self._mbar_uses(x):
                    ok = (any_init if isinstance(m.base, Reg) else
                          ((m.base.name, m.offset) in keys or reg_init))
                    if not ok and (i, "m") not in reported:
                        reported.add((i, "m"))
                        self.add(i, "mbarrier-before-init",
                                 f"the mbarrier {m.text()} may be used before any mbarrier.init of it "
                                 "(on some path from the kernel entry)")
                if isinstance(x, I.MbarrierInit):
                    any_init = True
                    if isinstance(x.addr.base, Reg):
                        reg_init = True
                    else:
                        keys = keys | {(x.addr.base.name, x.addr.offset)}
                if isinstance(x, I.WgmmaFence):
                    fenced = True
                elif isinstance(x, I.WgmmaMmaAsync):
                    if not fenced and (i, "w") not in reported:
                        reported.add((i, "w"))
                        self.add(i, "wgmma-without-fence",
                                 "wgmma.mma_async without a wgmma.fence before it on some path (PTX ISA, "
                                 "wgmma.fence: required before the first wgmma.mma_async and after the "
                                 "accumulator or A registers are written by other instructions)")
                elif any(r.name in acc_regs for r in x.writes()):
                    fenced = False
            out = (keys, reg_init, any_init, fenced)
            for j in self.succ(i):
                old = state[j]
                new = out if old is TOP else (old[0] & out[0], old[1] and out[1], old[2] and out[2],
                                              old[3] and out[3])
                if new != old:
                    state[j] = new
                    work.append(j)
        if state[n] is not TOP:
            self.diags.append(Diagnostic(None, None, "", "missing-exit",
                                         "control can run off the end of the kernel without exit", "warning"))

    @staticmethod
    def _mbar_uses(x: I.Instruction) -> list[Mem]:
        if isinstance(x, I._Mbar) and not isinstance(x, I.MbarrierInit):
            return [x.addr]
        if isinstance(x, I.CpAsyncBulkTensorLoad):
            return [x.mbar]
        return []


def verify(kernel: Kernel) -> list[Diagnostic]:
    """Every diagnostic (errors and warnings) of the kernel, in body order per rule family."""
    return _Verifier(kernel).run()


def check(kernel: Kernel) -> Kernel:
    """Raise VerifyError if `verify` finds an error; return the kernel otherwise."""
    errors = [d for d in verify(kernel) if d.severity == "error"]
    if errors:
        raise VerifyError(errors, kernel.filename)
    return kernel

