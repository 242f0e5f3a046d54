"""Hardware validation, the GPU-machine side: the only package that imports cupy (lazily).

Runs kernels and microbenchmarks on an sm90 GPU and records every result with provenance under
`validation/records/h100/`. It imports isa and kernels only, never the simulator (hopsim) or
SimPy, so it runs on a GPU machine with numpy, cupy and cuda-bindings alone. Calibration and the
simulator-vs-hardware comparison read these records in hopsim/validate/.
"""
