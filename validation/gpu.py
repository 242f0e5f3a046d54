"""Is there an sm90 GPU here? (CuPy, imported lazily; the only place the CLI asks.)"""

from __future__ import annotations


def gpu_available() -> tuple[bool, str]:
    """(True, device name) when CuPy sees a compute capability 9.x GPU, else (False, why not)."""
    try:
        import cupy  # noqa: PLC0415
    except Exception as exc:  # noqa: BLE001
        return False, f"CuPy is not importable ({type(exc).__name__}); install the 'gpu' extra"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001
        return False, f"no CUDA device ({str(exc).splitlines()[0]})"
    if n < 1:
        return False, "no CUDA device"
    props = cupy.cuda.runtime.getDeviceProperties(0)
    if props["major"] != 9:
        return False, f"device 0 is sm_{props['major']}{props['minor']}, not sm_90"
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return True, name
