"""The surface table: friction of hard ground and the parameters of deformable soils, one row per surface.

Rows are records of :data:`~acres_gym.terrain.surfaces_dtype.SURFACE_DTYPE`; a surface id is a row
index, and the terrain's surface grid stores ids. Rows come in a fixed order: the hard surfaces of
``configs/surfaces.json`` in file order, then the soils of ``configs/soils.json`` (when that file
exists) in file order, then surfaces a user adds with :func:`make_surface_table`.

Hard-ground friction model (what the tyre kernel evaluates per wheel and tick)
-----------------------------------------------------------------------------
At wetness ``w`` (0 dry .. 1 fully wet, from the terrain cell) the peak friction coefficient is::

    mu(w) = mu_dry + w (mu_wet - mu_dry)

and the water film lowers it further as the contact patch slides at speed ``v_s`` (m/s, >= 0)::

    mu = mu(w) (1 - w film_loss v_s / (v_s + film_speed_mps))

so a dry surface (w = 0) has no speed dependence, and a wet one loses ``film_loss / 2`` of its peak at
``v_s = film_speed_mps`` and tends to ``(1 - w film_loss)`` of it at high sliding speed.
``wet_asphalt`` is asphalt with ``default_wetness = 1`` (its peak is ``mu_wet``), ``wet_grass``
likewise. The tyre's hard-surface slip stiffness is multiplied by ``slip_stiffness_scale`` (loose
surfaces < 1: the tyre needs more slip to reach the peak) and its rolling-resistance coefficient
(given on pavement) by ``rolling_resistance_scale``. :func:`friction_coefficient` is the numpy form
and :func:`acres_gym.terrain.sampling.surface_friction` the jitted one.

Soils (``is_soil = 1``) carry the Bekker / Janosi-Hanamoto parameters in SI units (``soil_kc`` in
N/m^(n+1), ``soil_kphi`` in N/m^(n+2), ``soil_cohesion_pa`` in Pa, ``soil_friction_deg`` in degrees,
``soil_shear_modulus_m`` in m); their ``mu_dry``/``mu_wet`` hold the Mohr-Coulomb ``tan(phi)`` for
reference only: the soil kernel uses the shear law, not the friction fields.

File format
-----------
``configs/surfaces.json``: ``{"_about": ..., "surfaces": {name: {field: leaf, ...}}}`` where a leaf is
``{"value": v, "unit": u, "source": s}`` and the fields are those of :data:`HARD_FIELDS`; an entry may
start from an earlier one with ``"base": "<name>"``. ``configs/soils.json``:
``{"_about": ..., "soils": {name: {"n", "kc", "kphi", "cohesion", "friction_angle", "shear_modulus",
...}}}`` with units kN/m^(n+1), kN/m^(n+2), kPa, deg and m (N, Pa, cm and mm are converted too); other
keys of a soil entry (moisture content, notes) stay in the file. Keys starting with ``_`` are comments.
The soil keys, their units and their allowed ranges are those of ``acres_gym.terrain.soil_spec.SOIL_SPEC``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from acres_gym import paths
from acres_gym.terrain.soil_spec import (
    SOIL_BY_KEY,
    SOIL_FIELDS,
    SOIL_KEYS,
    SOIL_SPEC,
    SOIL_WET_FIELDS,
    WET_KEY,
    check_soil,
    check_soil_value,
)
from acres_gym.terrain.surfaces_dtype import SURFACE_DTYPE

HARD_FIELDS: tuple[str, ...] = (
    "mu_dry", "mu_wet", "film_loss", "film_speed_mps", "slip_stiffness_scale",
    "rolling_resistance_scale", "default_wetness",
)
"""Fields of a hard-surface entry, in the JSON and in the record."""

# field: (unit, low, high, low inclusive, default for entries that omit it or None when required)
_HARD_SPEC: dict[str, tuple[str, float, float, bool, float | None]] = {
    "mu_dry": ("1", 0.0, 3.0, False, None),
    "mu_wet": ("1", 0.0, 3.0, False, None),
    "film_loss": ("1", 0.0, 0.99, True, 0.0),
    "film_speed_mps": ("m/s", 0.0, 1000.0, False, 10.0),
    "slip_stiffness_scale": ("1", 0.0, 10.0, False, 1.0),
    "rolling_resistance_scale": ("1", 0.0, 100.0, False, 1.0),
    "default_wetness": ("1", 0.0, 1.0, True, 0.0),
}

# Hard-surface fields of a soil row when the soil entry does not give them.
_SOIL_HARD_DEFAULTS = {
    "film_loss": 0.0, "film_speed_mps": 10.0, "slip_stiffness_scale": 1.0,
    "rolling_resistance_scale": 1.0, "default_wetness": 0.0,
}


@dataclass(frozen=True, eq=False)
class SurfaceTable:
    """A surface table: the records (one row per surface, id = row index) and the surface names.

    ``records`` is a ``np.recarray`` of ``SURFACE_DTYPE`` that kernels index by surface id;
    ``sources`` maps ``name -> {field: source text}`` for the values read from JSON.
    """

    records: np.recarray
    names: tuple[str, ...]
    sources: Mapping[str, Mapping[str, str]] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def surface_id(self, name: str) -> int:
        """Id (row index) of the surface ``name``; ``ValueError`` listing the known names otherwise."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(
                f"unknown surface {name!r}; known surfaces: {', '.join(self.names)}"
            ) from None

    def surface_ids(self, names) -> np.ndarray:
        """Ids of several surface names, as an int32 array."""
        return np.asarray([self.surface_id(n) for n in names], dtype=np.int32)

    def row(self, name_or_id: str | int) -> np.record:
        """The record of one surface, by name or id."""
        return self.records[self._index(name_or_id)]

    def name(self, surface_id: int) -> str:
        """Name of the surface with id ``surface_id``."""
        return self.names[self._index(surface_id)]

    def _index(self, name_or_id: str | int) -> int:
        if isinstance(name_or_id, str):
            return self.surface_id(name_or_id)
        i = int(name_or_id)
        if not 0 <= i < len(self.names):
            raise ValueError(f"surface id {i} outside 0..{len(self.names) - 1}")
        return i

    def describe(self) -> str:
        """A printable table of the surfaces and their main values."""
        width = max([len(n) for n in self.names] + [4]) + 2
        lines = [f"{'id':>2}  {'name':<{width}}{'kind':<6}{'mu_dry':>7}{'mu_wet':>7}{'film':>6}"
                 f"{'v_film':>7}{'slip':>6}{'rr':>6}{'wet':>5}"]
        for i, (name, r) in enumerate(zip(self.names, self.records, strict=True)):
            kind = "soil" if r.is_soil else "hard"
            lines.append(
                f"{i:>2}  {name:<{width}}{kind:<6}{r.mu_dry:7.2f}{r.mu_wet:7.2f}{r.film_loss:6.2f}"
                f"{r.film_speed_mps:7.1f}{r.slip_stiffness_scale:6.2f}{r.rolling_resistance_scale:6.2f}"
                f"{r.default_wetness:5.2f}"
            )
        return "\n".join(lines)


def _leaf_value(name: str, key: str, leaf) -> tuple[float, str | None, str]:
    """(value, unit or None, source) of a JSON leaf or a bare number."""
    if isinstance(leaf, Mapping):
        if "value" not in leaf:
            raise ValueError(f"surface {name!r}: field {key!r} needs a 'value' (leaf format "
                             f"{{\"value\", \"unit\", \"source\"}})")
        value, unit, source = leaf["value"], leaf.get("unit"), str(leaf.get("source", ""))
    else:
        value, unit, source = leaf, None, ""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"surface {name!r}: field {key!r} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"surface {name!r}: field {key!r} must be finite, got {value}")
    return value, (None if unit is None else str(unit)), source


def _check_range(name: str, key: str, value: float, lo: float, hi: float, lo_inclusive: bool,
                 unit: str) -> None:
    ok = (value >= lo if lo_inclusive else value > lo) and value <= hi
    if not ok:
        bracket = "[" if lo_inclusive else "("
        raise ValueError(f"surface {name!r}: {key} = {value} outside the allowed range "
                         f"{bracket}{lo}, {hi}] {unit}")


def _hard_entry(name: str, entry: Mapping, base: dict[str, float] | None) -> tuple[dict, dict]:
    """Parse a hard-surface entry into (record field values, sources)."""
    values: dict[str, float] = dict(base) if base is not None else {}
    values["is_soil"] = 0.0
    sources: dict[str, str] = {}
    for key, leaf in entry.items():
        if key.startswith("_") or key == "base":
            continue
        if key not in _HARD_SPEC:
            raise ValueError(f"surface {name!r}: unknown field {key!r}; allowed fields: "
                             f"{', '.join(HARD_FIELDS)} (and 'base'; a soil needs {', '.join(SOIL_KEYS)})")
        unit, lo, hi, lo_inc, _ = _HARD_SPEC[key]
        value, given_unit, source = _leaf_value(name, key, leaf)
        if given_unit is not None and given_unit not in (unit, "-", "") and not (
                unit == "1" and given_unit in ("1", "none")):
            raise ValueError(f"surface {name!r}: field {key!r} has unit {given_unit!r}; expected {unit!r}")
        _check_range(name, key, value, lo, hi, lo_inc, unit)
        values[key] = value
        sources[key] = source
    for key, (_unit, _lo, _hi, _inc, default) in _HARD_SPEC.items():
        if key not in values:
            if default is None:
                raise ValueError(f"surface {name!r}: missing field {key!r} (required: mu_dry, mu_wet)")
            values[key] = default
            sources[key] = "default"
    return values, sources


def _soil_entry(name: str, entry: Mapping, base: dict[str, float] | None) -> tuple[dict, dict]:
    """Parse a soil entry (soils.json units) into SI record field values and sources."""
    values: dict[str, float] = dict(base) if base is not None else {}
    values["is_soil"] = 1.0
    sources: dict[str, str] = {}
    for p in SOIL_SPEC:
        key, fld = p.key, p.field
        if key not in entry:
            if fld in values:
                continue
            raise ValueError(f"soil {name!r}: missing key {key!r}; a soil needs {', '.join(SOIL_KEYS)}")
        value, unit, source = _leaf_value(name, key, entry[key])
        unit = p.unit if unit is None else unit
        if unit not in p.units:
            raise ValueError(f"soil {name!r}: key {key!r} has unit {unit!r}; allowed units: "
                             f"{', '.join(u for u in p.units if u)}")
        values[fld] = value * p.units[unit]
        check_soil_value(p, values[fld], f"soil {name!r}")
        sources[fld] = source
    check_soil(values, f"soil {name!r}")
    tan_phi = math.tan(math.radians(values["soil_friction_deg"]))
    values["mu_dry"] = values["mu_wet"] = max(tan_phi, 1e-6)
    sources["mu_dry"] = sources["mu_wet"] = "tan(friction_angle), Mohr-Coulomb, for reference"
    for key, default in _SOIL_HARD_DEFAULTS.items():
        if key in entry:
            unit, lo, hi, lo_inc, _ = _HARD_SPEC[key]
            value, _u, source = _leaf_value(name, key, entry[key])
            _check_range(name, key, value, lo, hi, lo_inc, unit)
            values[key], sources[key] = value, source
        elif key not in values:
            values[key], sources[key] = default, "default"
    return values, sources


def _is_soil_entry(entry: Mapping, base_values: dict[str, float] | None) -> bool:
    if base_values is not None and base_values.get("is_soil", 0.0):
        return True
    return any(k in entry for k in SOIL_KEYS)


def _read_json(path: Path, top_key: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(data, Mapping) or not isinstance(data.get(top_key), Mapping):
        raise ValueError(f"{path}: expected an object with a {top_key!r} object inside")
    return data[top_key]


def _wet_name(name: str, leaf) -> str:
    value = leaf.get("value") if isinstance(leaf, Mapping) else leaf
    if not isinstance(value, str):
        raise ValueError(f"soil {name!r}: {WET_KEY!r} must name a soil of the library, got {value!r}")
    return value


def _set_wet_fields(rows: dict[str, dict], wet_of: Mapping[str, str]) -> None:
    """Every soil row's wet set: its ``wet`` soil's parameters, or its own."""
    for name, values in rows.items():
        if not values.get("is_soil"):
            continue
        partner = wet_of.get(name, name)
        if partner not in rows or not rows[partner].get("is_soil"):
            raise ValueError(f"soil {name!r}: {WET_KEY} = {partner!r} is not a soil of the table; soils: "
                             f"{', '.join(n for n, v in rows.items() if v.get('is_soil'))}")
        for dry, wet in zip(SOIL_FIELDS, SOIL_WET_FIELDS, strict=True):
            values[wet] = rows[partner][dry]


def _add_entries(rows: dict[str, dict], sources: dict[str, dict], entries: Mapping, kind: str,
                 origin: str, wet_of: dict[str, str]) -> None:
    """Parse entries into ``rows`` (insertion order = id order). ``kind``: 'hard', 'soil' or 'auto'. A soil's
    ``wet`` (the library soil that is the same soil at a higher moisture content) goes to ``wet_of``."""
    for name, entry in entries.items():
        if name.startswith("_"):
            continue
        if not isinstance(entry, Mapping):
            raise ValueError(f"{origin}: surface {name!r} must be an object of fields")
        base_values = None
        if "base" in entry:
            base = entry["base"]
            if base not in rows:
                raise ValueError(f"{origin}: surface {name!r} has base {base!r}, which is not defined "
                                 f"before it; known: {', '.join(rows)}")
            base_values = dict(rows[base])
        elif name in rows:  # a redefinition updates the existing row in place
            base_values = dict(rows[name])
        soil = kind == "soil" or (kind == "auto" and _is_soil_entry(entry, base_values))
        parse = _soil_entry if soil else _hard_entry
        if soil and WET_KEY in entry:
            wet_of[name] = _wet_name(name, entry[WET_KEY])
        if kind == "soil":
            entry = {k: v for k, v in entry.items() if k in SOIL_BY_KEY or k in _SOIL_HARD_DEFAULTS}
        values, src = parse(f"{name}", entry, base_values)
        if name in rows and kind != "auto":
            raise ValueError(f"{origin}: surface name {name!r} defined twice")
        merged = dict(sources.get(name, {}))
        merged.update(src)
        rows[name] = values
        sources[name] = merged


def load_surface_table(surfaces_path: str | Path | None = None, soils_path: str | Path | None = None,
                       extra: Mapping | None = None) -> SurfaceTable:
    """Build a surface table from JSON files and optional extra entries.

    ``surfaces_path`` defaults to ``configs/surfaces.json``; ``soils_path`` to ``configs/soils.json``
    (skipped when absent). ``extra`` is ``{name: {field: leaf or number}}``: a new name is appended,
    an existing name updates that row (same id); an entry with soil keys is a soil (units of
    soils.json), otherwise a hard surface (``mu_dry`` and ``mu_wet`` required unless it has a ``base``).
    """
    surfaces_path = Path(surfaces_path) if surfaces_path is not None else paths.config_path("surfaces.json")
    rows: dict[str, dict] = {}
    sources: dict[str, dict] = {}
    wet_of: dict[str, str] = {}
    _add_entries(rows, sources, _read_json(surfaces_path, "surfaces"), "hard", str(surfaces_path), wet_of)
    soils_path = Path(soils_path) if soils_path is not None else paths.config_path("soils.json")
    if soils_path.exists():
        _add_entries(rows, sources, _read_json(soils_path, "soils"), "soil", str(soils_path), wet_of)
    if extra:
        if not isinstance(extra, Mapping):
            raise ValueError("extra surfaces must be a dict {name: {field: value}}")
        _add_entries(rows, sources, extra, "auto", "extra surfaces", wet_of)
    _set_wet_fields(rows, wet_of)
    records = np.zeros(len(rows), dtype=SURFACE_DTYPE).view(np.recarray)
    for i, values in enumerate(rows.values()):
        for key, value in values.items():
            records[key][i] = value
    return SurfaceTable(records=records, names=tuple(rows), sources=sources)


def make_surface_table(extra: Mapping | None = None) -> SurfaceTable:
    """The default table (``configs/surfaces.json`` then ``configs/soils.json``) plus ``extra`` entries.

    Example: ``make_surface_table({"rubber_mat": {"mu_dry": 0.9, "mu_wet": 0.6}})`` appends a surface;
    ``{"sand_pit": {"n": 1.1, "kc": 0.99, "kphi": 1528.43, "cohesion": 1.04, "friction_angle": 28,
    "shear_modulus": 0.025}}`` appends a soil. The returned table is a new, writable object.
    """
    return load_surface_table(extra=extra)


@lru_cache(maxsize=1)
def default_surfaces() -> SurfaceTable:
    """The process-wide default :class:`SurfaceTable` (read once; its records are read-only)."""
    table = load_surface_table()
    table.records.flags.writeable = False
    return table


def surface_table() -> np.recarray:
    """The default surface table records (cached, read-only); row index = surface id."""
    return default_surfaces().records


def surface_names() -> tuple[str, ...]:
    """Names of the default table's surfaces in id order (hard surfaces first, then soils)."""
    return default_surfaces().names


def surface_id(name: str) -> int:
    """Id of a surface of the default table; ``ValueError`` listing the known names if unknown."""
    return default_surfaces().surface_id(name)


def surface_row(name: str) -> np.record:
    """The record of one surface of the default table."""
    return default_surfaces().row(name)


def friction_coefficient(surface, wetness, slide_speed_mps=0.0):
    """Hard-ground friction coefficient of a surface (name, id or record), numpy-vectorised.

    ``mu = (mu_dry + w (mu_wet - mu_dry)) (1 - w film_loss |v_s| / (|v_s| + film_speed_mps))`` with
    ``w = wetness`` (0..1) and ``v_s = slide_speed_mps``. The same formula as the jitted
    :func:`acres_gym.terrain.sampling.surface_friction`.
    """
    row = surface if isinstance(surface, np.record) else default_surfaces().row(surface)
    w = np.asarray(wetness, dtype=np.float64)
    v = np.abs(np.asarray(slide_speed_mps, dtype=np.float64))
    mu = row.mu_dry + w * (row.mu_wet - row.mu_dry)
    mu = mu * (1.0 - w * row.film_loss * v / (v + row.film_speed_mps))
    return float(mu) if np.ndim(mu) == 0 else mu
