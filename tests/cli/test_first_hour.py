"""What a new user meets first (issue 11, "A first hour that flows"): `hopsim --version`, the
launch YAML of docs/ir.md runs as written, random buffers differ by default, `sweep --out` makes
no directories, hopsim's caches (and matplotlib's) go where the README says."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from hopsim.cli import main
from hopsim.cli.launch import make_buffer as _make_buffer

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC_IR = ROOT / "docs" / "ir.md"


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out.strip() == f"hopsim {want}"


def test_documented_launch_yaml_runs_as_written(tmp_path, capsys, monkeypatch):
    text = DOC_IR.read_text()
    kernel = re.search(r"```ptx\n(.*?)```", text, re.S).group(1)
    launch = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    for key in ("grid:", "block:", "smem:", "params:", "buffers:", "tensor_maps:", "save:"):
        assert key in launch, f"docs/ir.md's launch example lacks {key}"
    assert "dynamic" in launch.lower()  # smem: states what it counts
    (tmp_path / "gemm_mainloop.ptx").write_text(kernel)
    (tmp_path / "launch.yaml").write_text(launch)
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "gemm_mainloop.ptx", "--launch", "launch.yaml", "--json"]) == 0
    capsys.readouterr()
    d = np.load(tmp_path / "d.npy")
    assert d.shape == (64, 128) and np.count_nonzero(d) > 0


def test_random_buffers_differ_without_a_seed(tmp_path):
    a, _ = _make_buffer("A", "random:f16:64x128", tmp_path)
    b, _ = _make_buffer("B", "random:f16:128x128", tmp_path)
    assert not np.array_equal(a, b[:64])  # A == B[:64] would make A.B^T symmetric
    a2, _ = _make_buffer("A", "random:f16:64x128", tmp_path)
    assert np.array_equal(a, a2)  # reproducible: the seed comes from the name
    s1, _ = _make_buffer("A", "random:f16:64x128:7", tmp_path)
    s2, _ = _make_buffer("B", "random:f16:64x128:7", tmp_path)
    assert np.array_equal(s1, s2)  # an explicit seed is the seed


@pytest.mark.parametrize("flag,name", [("--out", "rows.csv"), ("--plot", "p.png")])
def test_sweep_outputs_create_no_directory(tmp_path, capsys, flag, name):
    missing = tmp_path / "no_such_dir"
    argv = ["sweep", "--m", "128", "--n", "128", "--k", "64", "--stages", "1,2", "--no-progress",
            "--executor", "serial", flag, str(missing / name)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(missing) in err
    assert not missing.exists()


def test_caches_go_to_hopsim_cache(tmp_path):
    """With HOPSIM_CACHE set, drawing a plot writes matplotlib's config and font cache under it,
    nothing under HOME and nothing in the working directory but the picture."""
    home, cache, work = tmp_path / "home", tmp_path / "cache", tmp_path / "work"
    for d in (home, work):
        d.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME",
                                                            "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), HOPSIM_CACHE=str(cache), PYTHONPATH=str(ROOT))
    code = ("from hopsim.plots import plot_compare; "
            "plot_compare([1, 2], [1.1, 1.9], 'c.png')")
    subprocess.run([sys.executable, "-c", code], cwd=work, env=env, check=True, timeout=120)
    assert sorted(p.name for p in work.iterdir()) == ["c.png"]
    assert list(home.iterdir()) == []
    assert (cache / "matplotlib").is_dir()


def test_sim_vs_hw_plot_is_readable(tmp_path):
    """Compact tick labels (no overlapping 100000/1e+06 strings), units on both axes, the clock
    basis in the title, the worst points named under the axes instead of across them."""
    from PIL import Image

    from hopsim.plots import _compact, plot_compare

    for v, want in ((1e4, "10k"), (2e5, "200k"), (1e6, "1M"), (5e6, "5M"), (0.02, "0.02")):
        assert _compact(v) == want
    png = plot_compare([1e4, 2e5, 3e6], [1.3e4, 2e5, 2e6], tmp_path / "c.png", unit="cycles",
                       labels=["a", "b", "c"], basis="clock basis X")
    title = Image.open(png).info["Title"]
    assert "clock basis X" in title and "MAPE" in title


def test_one_argparse_style_across_commands():
    """Every command and subcommand (and simulate's gemm / FILE.ptx forms) is a hopsim.cli._Parser:
    usage errors are one line + exit 2, help keeps its examples' layout."""
    import argparse

    from hopsim.cli import _Parser, build_parser
    from hopsim.cli.simulate_cmd import gemm_parser, ptx_parser

    def walk(p):
        yield p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    yield from walk(sub)

    parsers = list(walk(build_parser())) + [gemm_parser(), ptx_parser()]
    assert len(parsers) > 10
    for p in parsers:
        assert isinstance(p, _Parser), p.prog
        assert p.formatter_class is argparse.RawDescriptionHelpFormatter, p.prog
