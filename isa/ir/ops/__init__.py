"""The instruction declarations of the hopsim IR, one module per family (alu, atomic, convert, control,
memory, matrix, mbarrier, bulk, cpasync, warp, wgmma) on the machinery of `base`.

Importing this package registers every opcode in `INSTRUCTION_CLASSES` (mnemonic -> class) and its
parse entry in `SYNTAX`, and exports every declared class by name (so a new opcode in a family
module needs no edit here); `isa.ir.instructions` re-exports all of it under the historical name.
"""

from isa.ir.ops.base import *  # noqa: F401,F403
from isa.ir.ops.base import (  # noqa: F401
    BITS, CMP_BIT, CMP_FLOAT, CMP_SIGNED, CMP_UNSIGNED, CVT_TYPES, FLOAT, FLOAT_RND, HALF, INT, INT_RND,
    MEM_TYPES, SINT, UINT, _fail, _is, _one_of, _regs_of,
)
from isa.ir.ops import alu, atomic, bulk, control, convert, cpasync, matrix, mbarrier, memory, warp, wgmma  # noqa: F401
from isa.ir.ops.alu import MUL_MODES, _Arith, _Binary  # noqa: F401
from isa.ir.ops.convert import setp_cmps  # noqa: F401
from isa.ir.ops.memory import _Load, _Store  # noqa: F401
from isa.ir.ops.matrix import _Matrix  # noqa: F401
from isa.ir.ops.mbarrier import _Mbar  # noqa: F401
from isa.ir.ops.wgmma import WGMMA_N  # noqa: F401

globals().update({cls.__name__: cls for cls in INSTRUCTION_CLASSES.values()})  # noqa: F405
