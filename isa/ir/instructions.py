"""The instructions of the hopsim IR: one frozen dataclass per PTX instruction (the public name;
the declarations live in the `isa.ir.ops` package, one module per family).

Each class is named after its PTX mnemonic in PascalCase (`wgmma.mma_async` -> `WgmmaMmaAsync`),
declares its syntax, operands, verifier rules and timing class as class attributes (see
`isa.ir.ops.base`), validates itself on construction (raising `IRError` that cites the PTX ISA
rule), and offers

    text()      the PTX text, e.g. "@%p0 mbarrier.init.shared::cta.b64 [smem], 1;"
    opcode()    the dotted mnemonic with its modifiers, e.g. "mul.wide.u32"
    operands()  the operand objects in text order
    reads()     registers read (guard predicate and address bases included)
    writes()    registers written

Every instruction takes a keyword-only `guard: Guard | None`. Python ints/floats given where an
operand is expected become `Imm`, tuples of `Reg` become `RegVec`.

Scope (what is modelled): the integer/float ALU subset used by GEMM kernels, ld/st of the
global/shared/param spaces, ldmatrix/stmatrix m8n8.b16, the mbarrier family on `.shared::cta`
`.b64` objects, TMA tensor loads/stores (`.tile` mode, no multicast / cache hints),
`wgmma.mma_async` m64nNk16 with f16/bf16 inputs, `setmaxnreg`, `elect.sync`, `bar.sync`, `bra`,
`exit`.
"""

from isa.ir.ops import *  # noqa: F401,F403
from isa.ir.ops import (  # noqa: F401
    BITS, CMP_BIT, CMP_FLOAT, CMP_SIGNED, CMP_UNSIGNED, CVT_TYPES, FLOAT, FLOAT_RND, HALF, INT, INT_RND,
    MEM_TYPES, MUL_MODES, SINT, UINT, WGMMA_N, _Arith, _Binary, _Load, _Matrix, _Mbar, _Store, setp_cmps,
)
from isa.ir.ops.base import INSTRUCTION_CLASSES, REG_TYPES, TYPE_BITS, Instruction
from isa.ir.operands import Guard, Imm, IRError, Label, Mem, Reg, RegVec, SReg, Sym, as_operand  # noqa: F401

__all__ = ["Instruction", "INSTRUCTION_CLASSES", "TYPE_BITS", "REG_TYPES", "setp_cmps", "WGMMA_N"] + [
    c.__name__ for c in INSTRUCTION_CLASSES.values()
]
