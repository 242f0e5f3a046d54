"""The instruction declarations of the hopsim IR, one module per family (alu, convert, control,
memory, matrix, mbarrier, bulk, wgmma) on the machinery of `base`.

Importing this package registers every opcode in `INSTRUCTION_CLASSES` (mnemonic -> class) and its
parse entry in `SYNTAX`; `isa.ir.instructions` re-exports all of it under the historical name.
"""

from isa.ir.ops.base import *  # noqa: F401,F403
from isa.ir.ops.base import (  # noqa: F401
    BITS, CMP_BIT, CMP_FLOAT, CMP_SIGNED, CMP_UNSIGNED, CVT_TYPES, FLOAT, FLOAT_RND, HALF, INT, INT_RND,
    MEM_TYPES, SINT, UINT, _fail, _is, _one_of, _regs_of,
)
from isa.ir.ops.alu import MUL_MODES, Add, And, Mad, Max, Min, Mov, Mul, Not, Or, Shl, Shr, Sub, Xor  # noqa: F401
from isa.ir.ops.alu import _Arith, _Binary  # noqa: F401
from isa.ir.ops.convert import Cvt, Selp, Setp, setp_cmps  # noqa: F401
from isa.ir.ops.control import (  # noqa: F401
    BarSync, Bra, ElectSync, Exit, FenceMbarrierInit, FenceProxyAsync, Setmaxnreg,
)
from isa.ir.ops.memory import LdGlobal, LdParam, LdShared, StGlobal, StShared, _Load, _Store  # noqa: F401
from isa.ir.ops.matrix import Ldmatrix, Stmatrix, _Matrix  # noqa: F401
from isa.ir.ops.mbarrier import (  # noqa: F401
    MbarrierArrive, MbarrierArriveExpectTx, MbarrierCompleteTx, MbarrierExpectTx, MbarrierInit, MbarrierInval,
    MbarrierTestWaitParity, MbarrierTryWaitParity, _Mbar,
)
from isa.ir.ops.bulk import (  # noqa: F401
    CpAsyncBulkCommitGroup, CpAsyncBulkTensorLoad, CpAsyncBulkTensorStore, CpAsyncBulkWaitGroup,
)
from isa.ir.ops.wgmma import WGMMA_N, WgmmaCommitGroup, WgmmaFence, WgmmaMmaAsync, WgmmaWaitGroup  # noqa: F401
