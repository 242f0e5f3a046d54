"""The host side of the GEMM family: tensor maps, the launch, and the IR listing a user can run.

`tensor_maps` encodes A and B as validation/harness.py's gemm_tensor_maps does for the .cu (dims
innermost first; L2 promotion 256B; no interleave; zero OOB fill). `launch_spec` is the same
launch in the `hopsim simulate FILE.ptx --launch launch.yaml` format (docs/ir.md, simulate's
help): grid, block, smem, buffers A/B (random) and C (zeros), tensor maps tma_a/tma_b over them.
`listing` is the IR text with that launch as `// launch: ` comment lines:

    hopsim simulate gemm --m 256 --n 256 --k 256 --emit-ir > gemm.ptx
    sed -n 's|^// launch: ||p' gemm.ptx > launch.yaml
    hopsim simulate gemm.ptx --launch launch.yaml
"""

from __future__ import annotations

import json

from isa.tensormap import TensorMap
from kernels.params import GemmParams

LAUNCH_PREFIX = "// launch: "


def tensor_maps(params: GemmParams, a_addr: int, b_addr: int) -> tuple[TensorMap, TensorMap]:
    """The A (M x K) and B (N x K for tn, K x N for nn) tensor maps, boxes W x box rows."""
    p, w = params, params.box_width
    ta = TensorMap(dtype=p.dtype, global_dims=(p.k, p.m), global_strides_bytes=(p.k * 2,),
                   box_dims=(w, p.box_rows_a), global_address=a_addr, swizzle=p.swizzle,
                   l2_promotion="256B")
    b_dims = (p.k, p.n) if p.layout == "tn" else (p.n, p.k)
    tb = TensorMap(dtype=p.dtype, global_dims=b_dims, global_strides_bytes=(b_dims[0] * 2,),
                   box_dims=(w, p.box_rows_b), global_address=b_addr, swizzle=p.swizzle,
                   l2_promotion="256B")
    return ta, tb


def launch_spec(params: GemmParams, seed: int = 0) -> dict:
    """The launch as a `--launch` YAML mapping (row-major buffers: rows x columns)."""
    p = params
    b_shape = f"{p.n}x{p.k}" if p.layout == "tn" else f"{p.k}x{p.n}"
    return {
        "grid": [p.grid, 1, 1],
        "block": [p.threads, 1, 1],
        "smem": p.dynamic_smem_bytes,
        "buffers": {"A": f"random:{p.dtype}:{p.m}x{p.k}:{seed}",
                    "B": f"random:{p.dtype}:{b_shape}:{seed + 1}",
                    "C": f"zeros:{p.dtype}:{p.m}x{p.n}"},
        "tensor_maps": {"tma_a": f"A:{p.box_width}x{p.box_rows_a}:{p.swizzle}",
                        "tma_b": f"B:{p.box_width}x{p.box_rows_b}:{p.swizzle}"},
    }


def listing(params: GemmParams, text: str, regs_per_thread: int) -> str:
    """The IR text with a header: what it is and its launch (one `// launch: KEY: VALUE` line per
    key, JSON flow style, which is YAML)."""
    head = [f"// {params.tag}: the IR twin of kernels/cuda/gemm_sm90.cu (kernels/gemm/)",
            f"// {params.m}x{params.n}x{params.k} {params.dtype}/{params.accum} {params.layout}, "
            f"tile {params.bm}x{params.bn}x{params.bk}, {params.stages} stages, {params.variant}",
            f"// registers per thread (ptxas, for occupancy): {regs_per_thread}",
            "// run it:  sed -n 's|^// launch: ||p' THIS.ptx > launch.yaml;  "
            "hopsim simulate THIS.ptx --launch launch.yaml"]
    head += [f"{LAUNCH_PREFIX}{k}: {json.dumps(v)}" for k, v in launch_spec(params).items()]
    return "\n".join(head) + "\n" + text
