"""The simulator against the H100: calibration and comparison from hardware records (no GPU).

`calibrate` derives timing fields from the microbenchmark records; `micro_sim` replays each
microbenchmark on the timing units; `compare` holds the statistics (MAPE, Spearman, sweep shapes)
and `report` writes report.md and its plots; `run_compare` simulates every recorded GEMM
configuration (`hopsim validate compare`). The records are read with validation.provenance; the
GPU-side code that writes them lives in validation/ (no simulator imports there).
"""
