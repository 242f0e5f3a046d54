"""Programs in the hopsim IR (the TMA + WGMMA GEMM family) and the same kernels in CUDA C++."""
