"""When it happens: SimPy processes and resources (warps, TMA unit, tensor cores, smem port,
L2/HBM). Never computes a data value; asks the functional layer for effects."""
