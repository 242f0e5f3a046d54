"""Power and clock measurement on the GPU machine (issue 13): the NVML sampler, its statistics,
and the power microbenchmarks. No simpy, no hopsim imports (the GPU machine has neither)."""
