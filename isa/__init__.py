"""The hopsim IR and the hardware data formats it names.

`isa` imports nothing of hopsim: swizzles, WGMMA matrix descriptors, tensor-map (TMA)
parameters, and the PTX-like instruction set with its parser, printer, builder and verifier.
"""
