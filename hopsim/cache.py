"""Where hopsim keeps its caches: one directory, `$HOPSIM_CACHE` (default `~/.cache/hopsim`).

    compare/<model fingerprint>.json   `hopsim validate compare`'s simulated rows
    matplotlib/                        matplotlib's config and font cache (MPLCONFIGDIR), unless
                                       the user set MPLCONFIGDIR

Nothing else is cached; outputs go only where a command's flags say.
"""

from __future__ import annotations

import os
import pathlib


def cache_dir() -> pathlib.Path:
    """`$HOPSIM_CACHE`, else `~/.cache/hopsim` (not created here)."""
    env = os.environ.get("HOPSIM_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "hopsim"


def use_for_matplotlib() -> None:
    """Point matplotlib's config/cache directory (MPLCONFIGDIR) into the hopsim cache unless the
    user chose one; call before importing matplotlib."""
    os.environ.setdefault("MPLCONFIGDIR", str(cache_dir() / "matplotlib"))
