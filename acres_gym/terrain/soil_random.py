"""The soil library (``configs/soils.json``) and per-episode soil randomisation.

``load_soils`` reads the library and converts it to SI in the surface-table field names
(``SURFACE_DTYPE``: ``soil_n``, ``soil_kc`` N/m^(n+1), ``soil_kphi`` N/m^(n+2), ``soil_cohesion_pa``,
``soil_friction_deg``, ``soil_shear_modulus_m``). ``draw_soil`` picks one soil and scales its parameters
by factors drawn uniformly within relative ranges. Plain numpy, called once per episode, never per tick.

The library is ``soils.json`` of the configuration directory (``acres_gym.paths``: the packaged configs,
or ``$ACRES_GYM_CONFIG_DIR`` when that environment variable is set). The keys, units and limits of a soil
are those of ``acres_gym.terrain.soil_spec.SOIL_SPEC``; ``check_draws`` says whether a choice of soils and
scale ranges can draw a soil outside them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from acres_gym.paths import CONFIG_DIR_ENV, config_path
from acres_gym.terrain.soil_spec import (
    SOIL_FIELDS,
    SOIL_KEYS,
    SOIL_SPEC,
    SOIL_WET_FIELDS,
    WET_KEY,
    check_soil,
    check_soil_value,
)

# Default relative ranges of draw_soil: the bearing modulus k_phi +-30 %, cohesion +-20 %, friction angle
# +-10 % and the least certain number, the shear modulus K, 0.7x to 1.5x. n and k_c stay as measured.
DEFAULT_SCALE: dict[str, tuple[float, float]] = {
    "kphi": (0.7, 1.3),
    "cohesion": (0.8, 1.2),
    "friction_angle": (0.9, 1.1),
    "shear_modulus": (0.7, 1.5),
}


def soils_path() -> Path:
    """The soil library: ``soils.json`` in the configuration directory (``acres_gym.paths``)."""
    return config_path("soils.json")


def _soil_to_si(name: str, entry: object, path: Path) -> dict[str, float]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{path}: soils.{name} must be an object with keys {sorted(SOIL_KEYS)}")
    si: dict[str, float] = {}
    for p in SOIL_SPEC:
        leaf = entry.get(p.key)
        if not isinstance(leaf, Mapping) or "value" not in leaf:
            raise ValueError(f"{path}: soils.{name}.{p.key} is missing or not {{value, unit, source}}")
        if leaf.get("unit") != p.unit:
            raise ValueError(f"{path}: soils.{name}.{p.key}.unit is {leaf.get('unit')!r}, expected {p.unit!r}")
        value = leaf["value"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{path}: soils.{name}.{p.key}.value must be a number, got {value!r}")
        si[p.field] = float(value) * p.to_si
    check_soil(si, f"{path}: soils.{name}")
    return si


def load_soils() -> dict[str, dict[str, float]]:
    """Read the soil library: ``{name: {soil_n, soil_kc, soil_kphi, soil_cohesion_pa, soil_friction_deg,
    soil_shear_modulus_m, and the wet set soil_wet_n, ...}}`` in SI (N, Pa, deg, m), in file order (the wet
    set is the soil named under ``wet``, or the soil itself). Malformed entries raise ValueError."""
    path = soils_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"soil library not found: {path} (set {CONFIG_DIR_ENV} to its directory)") from None
    soils = data.get("soils") if isinstance(data, Mapping) else None
    if not isinstance(soils, Mapping) or not soils:
        raise ValueError(f"{path}: expected a non-empty object under 'soils'")
    library = {name: _soil_to_si(name, entry, path) for name, entry in soils.items()}
    for name, entry in soils.items():  # the wet set: the named wetter measurement of the soil, or its own
        leaf = entry.get(WET_KEY, {"value": name})
        partner = leaf.get("value") if isinstance(leaf, Mapping) else leaf
        if partner not in library:
            raise ValueError(f"{path}: soils.{name}.{WET_KEY} = {partner!r} is not a soil of the library")
        for dry, wet in zip(SOIL_FIELDS, SOIL_WET_FIELDS, strict=True):
            library[name][wet] = library[partner][dry]
    return library


def _check_scale(scale: Mapping[str, object]) -> dict[str, tuple[float, float]]:
    checked: dict[str, tuple[float, float]] = {}
    for key, bounds in scale.items():
        if key not in SOIL_KEYS:
            raise ValueError(f"unknown soil scale key {key!r}; allowed: {', '.join(SOIL_KEYS)}")
        try:
            lo, hi = (float(b) for b in bounds)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise ValueError(f"scale[{key!r}] must be a pair (lo, hi) of numbers, got {bounds!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 < lo <= hi):
            raise ValueError(f"scale[{key!r}] = ({lo}, {hi}) must satisfy 0 < lo <= hi (finite)")
        checked[key] = (lo, hi)
    return checked


def _chosen(library: Mapping[str, object], names: Iterable[str] | str | None) -> list[str]:
    allowed = list(library)
    if names is None:
        return allowed
    chosen = [names] if isinstance(names, str) else list(names)
    if not chosen:
        raise ValueError(f"names is empty; allowed soils: {', '.join(allowed)}")
    unknown = [name for name in chosen if name not in library]
    if unknown:
        listed = ", ".join(map(repr, unknown))
        raise ValueError(f"unknown soil(s) {listed}; allowed: {', '.join(allowed)}")
    return chosen


def check_draws(
    names: Iterable[str] | str | None = None,
    scale: Mapping[str, tuple[float, float]] | None = None,
    soils: Mapping[str, Mapping[str, float]] | None = None,
) -> None:
    """Raise ``ValueError`` unless every soil ``draw_soil(rng, names, scale, soils)`` can draw lies within the
    limits of ``SOIL_SPEC``, whatever the generator: each soil it picks from, scaled by both ends of every
    range (a drawn factor lies between them). Draws nothing."""
    library = load_soils() if soils is None else soils
    ranges = _check_scale(DEFAULT_SCALE if scale is None else scale)
    for name in _chosen(library, names):
        for p in SOIL_SPEC:
            lo, hi = ranges.get(p.key, (1.0, 1.0))
            base = float(library[name][p.field])
            wet = float(library[name].get("soil_wet_" + p.field[len("soil_"):], base))
            for value in (base * lo, base * hi, wet * lo, wet * hi):
                check_soil_value(p, value, f"soil {name!r} scaled by {lo:g}..{hi:g}")


def draw_soil(
    rng: np.random.Generator,
    names: Iterable[str] | str | None = None,
    scale: Mapping[str, tuple[float, float]] | None = None,
    soils: Mapping[str, Mapping[str, float]] | None = None,
) -> dict:
    """Draw one randomised soil: SI values in the surface-table field names plus ``"name"``.

    The soil is picked uniformly from ``names`` (default: the whole library), then each parameter
    listed in ``scale`` is multiplied by a factor drawn uniformly from its ``(lo, hi)``. ``scale`` keys
    are the library keys (n, kc, kphi, cohesion, friction_angle, shear_modulus); ``None`` means
    ``DEFAULT_SCALE``; a given dict replaces it (unlisted parameters keep factor 1, ``{}`` draws none).
    ``soils`` is an already loaded library (default: ``load_soils()``). Draws happen in a fixed order
    (the soil, then the factors in ``SOIL_KEYS`` order), so one generator state gives one soil.
    Unknown names or keys, bad ranges, and scaled values outside the limits of
    ``acres_gym.terrain.soil_spec.SOIL_SPEC`` raise ValueError.
    """
    library = load_soils() if soils is None else soils
    chosen = _chosen(library, names)
    ranges = _check_scale(DEFAULT_SCALE if scale is None else scale)

    name = chosen[int(rng.integers(len(chosen)))]
    soil = {p.field: float(library[name][p.field]) for p in SOIL_SPEC}
    wet = {w: float(library[name].get(w, library[name][f])) for f, w in zip(SOIL_FIELDS, SOIL_WET_FIELDS,
                                                                              strict=True)}
    for p, w in zip(SOIL_SPEC, SOIL_WET_FIELDS, strict=True):
        if p.key in ranges:
            lo, hi = ranges[p.key]
            factor = float(rng.uniform(lo, hi))
            soil[p.field] *= factor
            wet[w] *= factor  # the wet set moves with the soil
    check_soil(soil, f"soil {name!r} after scaling by {ranges}")
    check_soil(dict(zip(SOIL_FIELDS, (wet[w] for w in SOIL_WET_FIELDS), strict=True)),
               f"soil {name!r} (wet set) after scaling by {ranges}")
    return {"name": name, **soil, **wet}
