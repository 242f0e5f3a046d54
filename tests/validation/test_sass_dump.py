"""validation/sass_dump.py's configuration list: every entry a valid GemmParams, distinct builds."""

from validation.sass_dump import CONFIGS, gemm_params


def test_every_sass_config_is_valid_and_distinct():
    flags = [tuple(gemm_params(kw).nvcc_flags()) for _, kw in CONFIGS]
    assert len(set(flags)) == len(CONFIGS)
    assert len({t for t, _ in CONFIGS}) == len(CONFIGS)
