"""Sourced parameters: every hardware number carries a type, a unit, a meaning and a source.

    Param(value=132, unit="SMs", meaning="streaming multiprocessors enabled", source="spec: ...")

`source` starts with one of the kinds in `SOURCE_KINDS`:
- ``spec``      a datasheet / programming-guide fact,
- ``ptx``       the PTX ISA,
- ``measured``  measured on the validation H100 by the named microbenchmark record,
- ``literature`` a published microbenchmark on another Hopper part (named),
- ``derived``   arithmetic on other sourced numbers (shown),
- ``assumed``   not yet measured: a placeholder the validation suite must replace.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

SOURCE_KINDS = ("spec", "ptx", "measured", "literature", "derived", "assumed")


class Param(BaseModel):
    """One hardware number with its unit, one-line meaning and source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: float
    unit: str
    meaning: str
    source: str

    @field_validator("source")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        kind = v.split(":", 1)[0].strip()
        if kind not in SOURCE_KINDS:
            raise ValueError(f"source must start with one of {SOURCE_KINDS} followed by ':', got {v!r}")
        return v

    @property
    def kind(self) -> str:
        return self.source.split(":", 1)[0].strip()

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)


def P(value: float, unit: str, meaning: str, source: str) -> Param:
    """Shorthand constructor used by the GPU modules."""
    return Param(value=value, unit=unit, meaning=meaning, source=source)


class ParamGroup(BaseModel):
    """A frozen group of `Param` fields; `values()` gives plain numbers for hot paths."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def values(self) -> dict[str, float]:
        return {k: float(getattr(self, k).value) for k in type(self).model_fields}

    def params(self) -> dict[str, Param]:
        return {k: getattr(self, k) for k in type(self).model_fields}

    def with_values(self, updates: dict[str, Any]) -> "ParamGroup":
        """A copy with some params replaced (each update a Param or a dict of its fields)."""
        data = self.params()
        for k, v in updates.items():
            if k not in data:
                raise KeyError(f"{type(self).__name__} has no field {k!r}; valid: {sorted(data)}")
            data[k] = v if isinstance(v, Param) else Param(**v)
        return type(self)(**data)
