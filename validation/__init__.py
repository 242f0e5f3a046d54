"""Hardware validation: the only package that imports cupy (lazily, on a GPU machine).

Runs kernels and microbenchmarks on an sm90 GPU, records every result with provenance under
`validation/records/h100/`, calibrates the timing config from microbenchmarks and compares
simulation with hardware on held-out kernels.
"""
