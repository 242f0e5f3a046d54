import json

from hopsim.cli import main
from hopsim.config import load_gpu
from hopsim.config.base import SOURCE_KINDS


def test_every_config_number_has_unit_meaning_and_source():
    cfg = load_gpu("h100_sxm")
    for group in (cfg.spec, cfg.timing):
        for name, prm in group.params().items():
            assert prm.unit, name
            assert len(prm.meaning) > 10, name
            assert prm.kind in SOURCE_KINDS, name


def test_config_show_json_lists_every_field(capsys):
    assert main(["config", "show", "h100_sxm", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cfg = load_gpu("h100_sxm")
    assert set(out["spec"]) == set(type(cfg.spec).model_fields)
    assert set(out["timing"]) == set(type(cfg.timing).model_fields)
    assert out["spec"]["num_sms"]["value"] == 132


def test_config_show_table_and_schema(capsys):
    assert main(["config", "show"]) == 0
    assert "num_sms" in capsys.readouterr().out
    assert main(["config", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "properties" in schema


def test_unknown_gpu_is_a_usage_error(capsys):
    try:
        main(["config", "show", "a100"])
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError("expected exit 2")
    assert "invalid choice" in capsys.readouterr().err
