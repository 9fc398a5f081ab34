"""The soil library (``configs/soils.json``) and per-episode soil randomisation.

``load_soils`` reads the library and converts it to SI in the surface-table field names
(``SURFACE_DTYPE``: ``soil_n``, ``soil_kc`` N/m^(n+1), ``soil_kphi`` N/m^(n+2), ``soil_cohesion_pa``,
``soil_friction_deg``, ``soil_shear_modulus_m``). ``draw_soil`` picks one soil and scales its parameters
by factors drawn uniformly within relative ranges. Plain numpy, called once per episode, never per tick.

The library is ``soils.json`` of the configuration directory (``acres_gym.paths``: the packaged configs,
or ``$ACRES_GYM_CONFIG_DIR`` when that environment variable is set).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from acres_gym.paths import CONFIG_DIR_ENV, config_path

# library key -> (surface-table field, unit expected in the JSON, factor to SI)
SOIL_KEYS: dict[str, tuple[str, str, float]] = {
    "n": ("soil_n", "1", 1.0),
    "kc": ("soil_kc", "kN/m^(n+1)", 1e3),
    "kphi": ("soil_kphi", "kN/m^(n+2)", 1e3),
    "cohesion": ("soil_cohesion_pa", "kPa", 1e3),
    "friction_angle": ("soil_friction_deg", "deg", 1.0),
    "shear_modulus": ("soil_shear_modulus_m", "m", 1.0),
}

# Allowed SI ranges, checked on load and after scaling (lo, hi inclusive; n < 3 for Bekker's rigid wheel).
SOIL_LIMITS: dict[str, tuple[float, float]] = {
    "soil_n": (1e-3, 2.99),
    "soil_kc": (0.0, 1e9),
    "soil_kphi": (1e-3, 1e10),
    "soil_cohesion_pa": (0.0, 1e6),
    "soil_friction_deg": (0.0, 60.0),
    "soil_shear_modulus_m": (1e-4, 1.0),
}

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
    for key, (field, unit, to_si) in SOIL_KEYS.items():
        leaf = entry.get(key)
        if not isinstance(leaf, Mapping) or "value" not in leaf:
            raise ValueError(f"{path}: soils.{name}.{key} is missing or not {{value, unit, source}}")
        if leaf.get("unit") != unit:
            raise ValueError(f"{path}: soils.{name}.{key}.unit is {leaf.get('unit')!r}, expected {unit!r}")
        value = leaf["value"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{path}: soils.{name}.{key}.value must be a number, got {value!r}")
        si[field] = float(value) * to_si
    _check_limits(si, f"{path}: soils.{name}")
    return si


def _check_limits(si: Mapping[str, float], where: str) -> None:
    for field, (lo, hi) in SOIL_LIMITS.items():
        value = si[field]
        if not (math.isfinite(value) and lo <= value <= hi):
            raise ValueError(f"{where}: {field} = {value!r} is outside the allowed range [{lo}, {hi}]")


def load_soils() -> dict[str, dict[str, float]]:
    """Read the soil library: ``{name: {soil_n, soil_kc, soil_kphi, soil_cohesion_pa, soil_friction_deg,
    soil_shear_modulus_m}}`` in SI (N, Pa, deg, m), in file order. Malformed entries raise ValueError."""
    path = soils_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"soil library not found: {path} (set {CONFIG_DIR_ENV} to its directory)") from None
    soils = data.get("soils") if isinstance(data, Mapping) else None
    if not isinstance(soils, Mapping) or not soils:
        raise ValueError(f"{path}: expected a non-empty object under 'soils'")
    return {name: _soil_to_si(name, entry, path) for name, entry in soils.items()}


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
    Unknown names or keys, bad ranges, and scaled values outside ``SOIL_LIMITS`` raise ValueError.
    """
    library = load_soils() if soils is None else soils
    allowed = list(library)
    if names is None:
        chosen = allowed
    else:
        chosen = [names] if isinstance(names, str) else list(names)
        if not chosen:
            raise ValueError(f"names is empty; allowed soils: {', '.join(allowed)}")
        unknown = [name for name in chosen if name not in library]
        if unknown:
            listed = ", ".join(map(repr, unknown))
            raise ValueError(f"unknown soil(s) {listed}; allowed: {', '.join(allowed)}")
    ranges = _check_scale(DEFAULT_SCALE if scale is None else scale)

    name = chosen[int(rng.integers(len(chosen)))]
    soil = {field: float(library[name][field]) for field, _, _ in SOIL_KEYS.values()}
    for key, (field, _, _) in SOIL_KEYS.items():
        if key in ranges:
            lo, hi = ranges[key]
            soil[field] *= float(rng.uniform(lo, hi))
    _check_limits(soil, f"soil {name!r} after scaling by {ranges}")
    return {"name": name, **soil}
