"""hopsim: a cycle-approximate simulator of an NVIDIA Hopper (sm90a) SM and of a whole H100.

Layers: `hopsim.functional` (what happens: numpy only), `hopsim.timing` (when: SimPy),
`hopsim.config` (typed, sourced hardware numbers), `hopsim.cli` (the `hopsim` command).
"""

from isa.errors import HopsimError, InputError

__all__ = ["HopsimError", "InputError"]
__version__ = "0.1.0"
