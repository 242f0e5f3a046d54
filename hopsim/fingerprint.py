"""The model fingerprint (issue 14 item 4): one SHA-256 over everything that decides a prediction.

    from hopsim.fingerprint import model_fingerprint
    model_fingerprint()        # 64 hex digits; `hopsim config show` prints it, every
                               # `validate compare` report stores it

Hashed, in sorted path order (path and bytes of each file): the config (hopsim/config/*.py and
its calibrated JSONs: timing and power), the timing-relevant sources (hopsim/timing,
hopsim/functional, hopsim/power, hopsim/gemm_setup.py, hopsim/gemm_sim.py, isa/, kernels/ Python
sources). A frozen model is one fingerprint: a held-out comparison names the model it tested.
"""

from __future__ import annotations

import hashlib
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL_PATHS = ("hopsim/config", "hopsim/timing", "hopsim/functional", "hopsim/power",
               "hopsim/gemm_setup.py", "hopsim/gemm_sim.py", "isa", "kernels")


def model_files(root: pathlib.Path = ROOT) -> dict[str, bytes]:
    """{relative path: bytes} of every file the fingerprint covers."""
    out = {}
    for sub in MODEL_PATHS:
        p = root / sub
        files = [p] if p.is_file() else sorted(list(p.rglob("*.py")) + list(p.rglob("*.json")))
        for f in files:
            if "__pycache__" not in f.parts:
                out[f.relative_to(root).as_posix()] = f.read_bytes()
    return out


def digest(files: dict[str, bytes]) -> str:
    """SHA-256 over (path, length, bytes) of each file in sorted path order."""
    h = hashlib.sha256()
    for path in sorted(files):
        data = files[path]
        h.update(path.encode() + b"\0" + str(len(data)).encode() + b"\0")
        h.update(data)
    return h.hexdigest()


def model_fingerprint(root: pathlib.Path = ROOT) -> str:
    return digest(model_files(root))
