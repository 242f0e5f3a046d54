"""IR twins of the H100 microbenchmarks (validation/cuda/micro_*.cu): same instructions, counts,
grid/CTA shape and clock64 timing points as the CUDA kernels, as far as the IR can say them.
hopsim/validate/micro_ir runs them through `simulate()` and compares with the records.

Each builder returns a parsed `Kernel`; what the IR cannot express is said in its docstring.
"""
