from dataclasses import dataclass, field
from typing import Literal

import pytest

from avjudge.config import ConfigError, dump_yaml, load_config, load_yaml


@dataclass
class Inner:
    rate: float = 1.0
    names: list[str] = field(default_factory=list)


@dataclass
class Outer:
    mode: Literal["on", "off", "auto"] = "auto"
    size: tuple[int, int] = (2, 2)
    limit: int | None = None
    flag: bool = False
    inner: Inner = field(default_factory=Inner)


def test_yaml_file_and_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("mode: off\nsize: [4, 6]\ninner:\n  rate: 0.5\n  names: [a, b]\n")
    cfg = load_config(Outer, path, ["inner.rate=2", "limit=7", "flag=true", "mode=on"])
    assert cfg == Outer(mode="on", size=(4, 6), limit=7, flag=True, inner=Inner(rate=2.0, names=["a", "b"]))
    assert load_yaml(dump_yaml(cfg)) == {
        "mode": "on",
        "size": [4, 6],
        "limit": 7,
        "flag": True,
        "inner": {"rate": 2.0, "names": ["a", "b"]},
    }


def test_yaml12_words_stay_strings():
    assert load_yaml("a: off\nb: yes\nc: true\nd: null") == {"a": "off", "b": "yes", "c": True, "d": None}


@pytest.mark.parametrize(
    "override, message",
    [
        (["nope=1"], "unknown key"),
        (["limit=1.5"], "integer"),
        (["mode=maybe"], "not one of"),
        (["size=[1]"], "expected 2 values"),
        (["inner=3"], "mapping"),
        (["flagged"], "key=value"),
        (["inner.rate=nan"], "inner.rate: expected a finite number, got 'nan'"),
        (["inner.rate=.inf"], "inner.rate: expected a finite number"),
        (["inner.rate=-inf"], "inner.rate: expected a finite number"),
    ],
)
def test_bad_values_are_named(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(Outer, None, override)


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(Outer, tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(Outer, bad)
