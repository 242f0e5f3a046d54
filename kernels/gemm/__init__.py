"""The TMA + WGMMA GEMM family in the hopsim IR: the same kernel as `kernels/cuda/gemm_sm90.cu`.

    from kernels.params import GemmParams
    from kernels.gemm import build_gemm
    gk = build_gemm(GemmParams(m=256, n=256, k=256))        # GemmKernel (cached per params)
    print(gk.listing)                                       # IR text + its launch

Its operands, global memory and launch (`setup_gemm`, `read_result`, `reference`) live in
hopsim/gemm_setup.py: they build the simulator's GlobalMemory, and kernels/ imports nothing of
the simulator.

The generator writes the kernel with isa.ir.KernelBuilder; the problem size, tile, stages, ...
are compile-time constants as they are macros in the .cu. One module per part, one screen each:

  plan.py       constants, shared-memory layouts (isa.layout: Layout, Swizzle o Layout), the
                TMA boxes of a stage, descriptor fields
  emit.py       the builder with values named by purpose; division by a constant, stage/phase
                (s = kt % S, phase (kt / S) & 1), mbarrier waits, loop tails
  setup.py      declarations, dynamic smem base, raster (row / grouped), barrier init, lanes
  producer.py   load_stage (arrive.expect_tx + boxes), the single prologue fill, the ws producer
  consumer.py   descriptors, mma_stage, the k-loop with release (and the single refill)
  epilogue.py   direct stores, or stmatrix into the swizzled slab + 16-B row stores
  kernel.py     the variants: single and ws (warp-specialized), and build_kernel
  host.py       tensor maps, the launch spec and the listing `simulate gemm --emit-ir` prints

Where the IR differs from the CUDA kernel (it cannot express, or the difference is ptxas'):
  * Branches are warp-uniform in hopsim. The .cu's `if (threadIdx.x == 0)` (barrier init; the
    ws producer loop) becomes the same code run by the whole warp with the lanes predicated
    (`@%p` on the mbarrier/TMA instructions): the warp issues the same instructions, lanes 1-31
    are masked instead of parked at the reconvergence point.
  * `prefetch.tensormap`, `__syncwarp()` (stmatrix epilogue) and the compiler-only
    `fence_operand` have no IR instruction and are left out; a hopsim warp runs in lockstep, so
    the __syncwarp ordering holds anyway.
  * Division by a constant (kt / S, kt % S, CTA rasterisation) is the mul.hi + shr sequence
    ptxas emits (shr/and for powers of two). The grouped raster's division by the run-time group
    size (the last group can be smaller) is two constant divisions + selp instead of ptxas'
    generic integer-division sequence (a few ALU instructions once per CTA).
  * scale-d is the immediate 1 (the .cu passes a predicate set from the constant 1; accumulators
    are zeroed with mov first in both). The C++ loops marked `#pragma unroll` are unrolled here
    too; the k-tile loops stay loops. Register allocation is not modelled: the IR names its
    values itself; `regs_per_thread` (for occupancy) is what ptxas reported for the .cu
    (see `estimate_regs`), not a count of the IR's registers.
  * bf16 results: numpy has no bf16, so hopsim/gemm_setup.py gives bf16 data as float32
    arrays holding exactly the bf16 values (global memory holds the bf16 bit patterns).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from isa.errors import InputError
from isa.ir import Kernel, parse, to_text
from isa.ir.ops.wgmma import WgmmaMmaAsync
from kernels.gemm.emit import KERNEL_NAME, magic as _magic  # noqa: F401  (_magic: tests)
from kernels.gemm.host import launch_spec, listing, tensor_maps  # noqa: F401
from kernels.gemm.kernel import build_kernel
from kernels.params import GemmParams


@dataclass(frozen=True)
class GemmKernel:
    """The IR kernel of one GemmParams and how to launch it."""

    params: GemmParams
    kernel: Kernel            # isa.ir Kernel (parse(text) == kernel)
    text: str                 # IR text (printer form)
    grid: tuple
    block: tuple
    dynamic_smem: int
    regs_per_thread: int

    @property
    def listing(self) -> str:
        """The IR text with its launch as comments (what `simulate gemm --emit-ir` prints)."""
        return listing(self.params, self.text, self.regs_per_thread)


def estimate_regs(p: GemmParams) -> int:
    """Registers per thread ptxas gives the .cu (for occupancy), from `ptxas -v` of the H100 runs
    in validation/records/h100 (`ptxas.registers`):

      ws, 2 consumers   168  = __launch_bounds__(384, 1) cap, 65536/384 rounded down to 8
      ws, 1 consumer    240  = the consumers' setmaxnreg.inc value
      single            154  with 128 accumulator registers (f32 128x128 and 256x64)
                         96  with 64 (f16 accumulators, 128x128)
    Single-warpgroup tiles with fewer accumulators (64x64, 128x64, ...) are not measured; they
    get 96 like the 64-register one (an estimate: ptxas keeps ~32 registers of addresses and
    indices besides the accumulators, and the epilogue temporaries)."""
    if p.variant == "ws":
        return 168 if p.num_consumer_warpgroups == 2 else 240
    return 154 if p.acc_regs >= 128 else 96


@functools.lru_cache(maxsize=256)
def build_gemm(params: GemmParams) -> GemmKernel:
    """The IR kernel of `params` (cached). `kernel` is parsed back from `text` so that its
    source lines (diagnostics) point into the text `--emit-ir` prints."""
    if not isinstance(params, GemmParams):
        raise InputError("params", type(params).__name__, "a kernels.params.GemmParams")
    text = to_text(build_kernel(params))
    kernel = parse(text, filename=f"{params.tag}.ptx")
    return GemmKernel(params=params, kernel=kernel, text=text, grid=(params.grid, 1, 1),
                      block=(params.threads, 1, 1), dynamic_smem=params.dynamic_smem_bytes,
                      regs_per_thread=estimate_regs(params))


def without_mma(kernel: Kernel) -> Kernel:
    """`kernel` without its wgmma.mma_async instructions: the IR of the .cu's diagnostic build
    `-DGEMM_NO_MMA=1` (kernels/cuda/gemm_sm90.cu mma_stage: only the wgmma.mma_async goes; the
    fences, commit/wait groups, TMA issue, mbarrier handshakes and epilogue stay)."""
    return Kernel(name=kernel.name, params=kernel.params, regs=kernel.regs, shared=kernel.shared,
                  body=tuple(x for x in kernel.body if not isinstance(x, WgmmaMmaAsync)))


@functools.lru_cache(maxsize=64)
def build_gemm_nomma(params: GemmParams) -> GemmKernel:
    """The diagnostic twin of the `gemm_cycles_nomma` records (validation/cycle_profile.py --set
    nomma): `build_gemm(params)` without wgmma.mma_async (`without_mma`); C is wrong, as on the
    H100. A microbenchmark of the load pipeline alone, not a kernel knob."""
    gk = build_gemm(params)
    text = to_text(without_mma(gk.kernel))
    kernel = parse(text, filename=f"{params.tag}_nomma.ptx")
    return GemmKernel(params=params, kernel=kernel, text=text, grid=gk.grid, block=gk.block,
                      dynamic_smem=gk.dynamic_smem, regs_per_thread=gk.regs_per_thread)
