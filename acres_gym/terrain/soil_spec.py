"""The soil format: every soil parameter once, with its ``soils.json`` key, surface-table field, units and limits.

A soil is six Bekker / Janosi-Hanamoto numbers. ``SOIL_SPEC`` declares each of them once, as a ``SoilParam``
(key, field, unit, accepted units, SI unit, allowed SI range, meaning), in the style of ``acres_gym.schema``.
Every owner of the format reads it: the surface table's loader (``terrain/surfaces.py``: ``configs/soils.json``
and soils added with ``make_surface_table``), the soil library and its per-episode draw
(``terrain/soil_random.py``: ``load_soils``, ``draw_soil``) and the environments' randomisation
(``envs/randomization.py``: the episode's soil slot and the ``randomization.soil.scale`` ranges). They check
values with ``check_soil_value`` / ``check_soil``, so a value outside the limits is refused with the same
message wherever it enters: the key, the field, the value and the allowed range.

The limits are inclusive SI bounds. Every soil of ``configs/soils.json`` lies within them, and so does every
soil ``draw_soil`` draws from it with the default scale ranges (``tests/test_soil.py`` checks both). Beyond the
per-parameter ranges a soil needs ``kc + kphi > 0`` (a pressure-sinkage law that bears a load).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class SoilParam:
    key: str  # key of a soil entry in soils.json (and of draw_soil's scale ranges)
    field: str  # surface-table field (``SURFACE_DTYPE``), SI
    unit: str  # the unit of soils.json; bare numbers are read in it
    units: Mapping[str, float]  # accepted units -> factor to SI
    si_unit: str  # the unit of the field
    lo: float  # allowed range of the field, SI, inclusive
    hi: float
    meaning: str

    @property
    def to_si(self) -> float:
        """The factor from ``unit`` to ``si_unit``."""
        return self.units[self.unit]


SOIL_SPEC: tuple[SoilParam, ...] = (
    SoilParam("n", "soil_n", "1", {"1": 1.0, "-": 1.0, "": 1.0}, "1", 1e-3, 2.99,
              "Bekker sinkage exponent n (below 3: the rigid-wheel formulas divide by 3 - n)"),
    SoilParam("kc", "soil_kc", "kN/m^(n+1)", {"kN/m^(n+1)": 1e3, "N/m^(n+1)": 1.0}, "N/m^(n+1)", 0.0, 1e9,
              "Bekker cohesive modulus k_c"),
    SoilParam("kphi", "soil_kphi", "kN/m^(n+2)", {"kN/m^(n+2)": 1e3, "N/m^(n+2)": 1.0}, "N/m^(n+2)", 0.0, 1e10,
              "Bekker frictional modulus k_phi"),
    SoilParam("cohesion", "soil_cohesion_pa", "kPa", {"kPa": 1e3, "Pa": 1.0}, "Pa", 0.0, 1e6,
              "Mohr-Coulomb cohesion c"),
    SoilParam("friction_angle", "soil_friction_deg", "deg", {"deg": 1.0}, "deg", 0.0, 60.0,
              "internal friction angle phi (soils lie well below 60 deg)"),
    SoilParam("shear_modulus", "soil_shear_modulus_m", "m", {"m": 1.0, "cm": 1e-2, "mm": 1e-3}, "m", 1e-4, 1.0,
              "Janosi-Hanamoto shear deformation modulus K"),
)

SOIL_KEYS: tuple[str, ...] = tuple(p.key for p in SOIL_SPEC)
"""Keys every soil entry has, in ``SOIL_SPEC`` order (Bekker n, k_c, k_phi, cohesion c, friction angle phi,
Janosi K)."""
SOIL_FIELDS: tuple[str, ...] = tuple(p.field for p in SOIL_SPEC)
"""The surface-table fields of a soil, in ``SOIL_SPEC`` order."""
SOIL_WET_FIELDS: tuple[str, ...] = tuple("soil_wet_" + f[len("soil_"):] for f in SOIL_FIELDS)
"""The surface-table fields of a soil's wet set (the same soil measured at a higher moisture content, used at
wetness 1; ``SOIL_FIELDS`` order), equal to the dry set for a soil without one."""
WET_KEY = "wet"
"""Key of a soils.json entry naming the library soil that is the same soil at a higher moisture content."""
SOIL_BY_KEY: dict[str, SoilParam] = {p.key: p for p in SOIL_SPEC}
SOIL_BY_FIELD: dict[str, SoilParam] = {p.field: p for p in SOIL_SPEC}


def _unit(p: SoilParam) -> str:
    return "" if p.si_unit == "1" else f" {p.si_unit}"


def _range(p: SoilParam) -> str:
    return f"[{p.lo:g}, {p.hi:g}]{_unit(p)}"


def check_soil_value(p: SoilParam, value_si: float, where: str) -> None:
    """Raise ``ValueError`` unless ``value_si`` (SI) is finite and within ``p``'s limits; the message names
    ``where``, the key and field, the value and the allowed range."""
    if not (math.isfinite(value_si) and p.lo <= value_si <= p.hi):
        raise ValueError(f"{where}: {p.key} ({p.field}) = {value_si:g}{_unit(p)} is outside the allowed "
                         f"range {_range(p)}")


def check_soil(si: Mapping[str, float], where: str) -> None:
    """Raise ``ValueError`` unless the soil ``si`` (surface-table field -> SI value, every ``SOIL_FIELDS``)
    lies within the limits of ``SOIL_SPEC`` and bears a load (``kc + kphi > 0``)."""
    for p in SOIL_SPEC:
        check_soil_value(p, float(si[p.field]), where)
    if not si["soil_kc"] + si["soil_kphi"] > 0.0:
        raise ValueError(f"{where}: kc + kphi must be > 0 (a soil that bears a load), got kc = "
                         f"{si['soil_kc']:g} N/m^(n+1), kphi = {si['soil_kphi']:g} N/m^(n+2)")

