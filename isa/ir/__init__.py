"""The hopsim IR: a PTX-like instruction set for TMA + WGMMA kernels.

    from isa.ir import parse, to_text, KernelBuilder, verify
    k = parse(open("gemm.ptx").read(), filename="gemm.ptx")
    assert parse(to_text(k)) == k

Modules: `operands` (Reg, Imm, SReg, Sym, Mem, Label, RegVec, Guard), `instructions` (one frozen
dataclass per PTX instruction, declared in the `ops` package: one module per family, each opcode's
syntax, operands, verifier rules and timing class as class attributes), `kinds` (the timing
classes), `program` (Kernel and its declarations), `parser` + `syntax`, `printer`, `builder`,
`verify`. The text syntax and every instruction are documented in docs/ir.md.
"""

from isa.ir.operands import (  # noqa: F401
    SPECIAL_REGISTERS, Guard, Imm, IRError, Label, Mem, Reg, RegVec, SReg, Sym,
)
from isa.ir.instructions import *  # noqa: F401,F403
from isa.ir.instructions import INSTRUCTION_CLASSES, REG_TYPES, TYPE_BITS, Instruction  # noqa: F401
from isa.ir.program import PARAM_TYPES, Kernel, LabelDef, Param, RegDecl, SharedDecl  # noqa: F401

try:  # the text front end, builder and verifier (added after the data model)
    from isa.ir.parser import IRSyntaxError, parse  # noqa: F401
    from isa.ir.printer import to_text  # noqa: F401
    from isa.ir.builder import KernelBuilder  # noqa: F401
    from isa.ir.verify import Diagnostic, VerifyError, check, verify  # noqa: F401
except ImportError as _e:  # pragma: no cover - only while those modules are being written
    if "isa.ir." not in str(_e):
        raise
