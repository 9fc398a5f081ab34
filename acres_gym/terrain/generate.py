"""Terrain constructors: flat ground, slopes, surface splits, fractal rough ground, surface patches,
polygons, files, and terrains from configs (``from_config``). Every constructor returns a
:class:`~acres_gym.terrain.grid.Terrain`.

The constructors live by what they draw: ``shapes`` (grids, flat ground, planes, splits, polygons, wetness),
``rough_ground`` (fractal rough ground, on the gradient noise of ``noise``), ``patches`` (surface patches) and
``files``; they are named here too. Random terrains draw only from the generator seeded by the caller
(``numpy.random.default_rng(seed)``): the same seed gives the same terrain, bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from acres_gym.runtime import allocator, threading_layer  # noqa: F401  (freed terrain memory kept; the fork-safe layer)
from acres_gym.terrain.files import (  # noqa: F401  (named here as before the split)
    FILE_FORMAT,
    from_file,
    to_file,
)
from acres_gym.terrain.grid import Terrain
from acres_gym.terrain.patches import (  # noqa: F401  (named here as before the split)
    PatchPlan,
    patch_maps,
    patch_plan,
    with_patches,
)
from acres_gym.terrain.rough_ground import (  # noqa: F401  (named here as before the split)
    RoughPlan,
    rough,
    rough_grid,
    rough_plan,
)
from acres_gym.terrain.shapes import (  # noqa: F401  (named here as before the split)
    MIN_FEATURE_CELLS,
    _seed,
    flat,
    graded_height,
    grid_axes,
    slope,
    split,
    uniform_surface,
    with_grade,
    with_polygons,
    with_wetness,
)
from acres_gym.terrain.surfaces import SurfaceTable

_GRID_KEYS = ("size_m", "cell_m", "center")
_KIND_KEYS: dict[str, tuple[str, ...]] = {
    "flat": ("surface", "wetness", *_GRID_KEYS),
    "slope": ("percent", "surface", "wetness", *_GRID_KEYS),
    "split": ("x0_m", "surface_before", "surface_after", "wetness_before", "wetness_after", *_GRID_KEYS),
    "rough": ("roughness_m", "surface", "wetness", "hill_wavelength_m", "bump_wavelength_m", "octaves",
              "persistence", "flat_radius_m", "flat_blend_m", "spawn_xy", *_GRID_KEYS),
    "file": ("path",),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "flat": (), "slope": ("percent",), "split": ("x0_m", "surface_before", "surface_after"),
    "rough": ("roughness_m",), "file": ("path",),
}
_COMMON_KEYS = ("kind", "seed", "patches", "polygons", "name", "description")


_PATCH_KEYS = ("surfaces", "scale_m", "wetness_range")
_POLYGON_KEYS = ("xy", "surface", "wetness")


TERRAIN_KINDS: tuple[str, ...] = tuple(_KIND_KEYS)
"""The ``kind`` values :func:`from_config` accepts."""


def _check_keys(where: str, given, allowed) -> None:
    unknown = [k for k in given if not str(k).startswith("_") and k not in allowed]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; allowed keys: {', '.join(allowed)}")


def from_config(config: Mapping, *, seed: int | None = None, table: SurfaceTable | None = None,
                base_dir: str | Path | None = None) -> Terrain:
    """Build a terrain from a config dict (as read from JSON/YAML).

    ``kind`` is one of ``flat``, ``slope``, ``split``, ``rough``, ``file``; the other keys are the
    constructor's arguments of the same names (``center``/``spawn_xy`` as ``[x, y]``, ``size_m`` a
    number or ``[x, y]``). Any kind may add ``patches`` (``{"surfaces": {name: weight} or [names],
    "scale_m": .., "wetness_range": [lo, hi] or null}``, or just ``{name: weight}``) and ``polygons``
    (``[{"xy": [[x, y], ...], "surface": name, "wetness": w}]``), applied in that order. ``seed``
    (default 0) seeds the rough heights and, through ``default_rng([seed, 1])``, the patches; the
    ``seed`` argument overrides the config's, for per-episode randomisation. A relative ``path`` is
    read from ``base_dir`` (default: the working directory). Keys starting with ``_`` are comments.
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"terrain config must be a dict, got {type(config).__name__}")
    kind = config.get("kind")
    if kind not in _KIND_KEYS:
        raise ValueError(f"terrain config: unknown kind {kind!r}; allowed kinds: {', '.join(_KIND_KEYS)}")
    allowed = _COMMON_KEYS + _KIND_KEYS[kind]
    _check_keys(f"terrain config (kind {kind!r})", config, allowed)
    for key in _REQUIRED[kind]:
        if key not in config:
            raise ValueError(f"terrain config (kind {kind!r}): missing key {key!r}")
    seed = _seed("seed", seed if seed is not None else config.get("seed", 0))
    args = {k: config[k] for k in _KIND_KEYS[kind] if k in config}
    for key in ("center", "spawn_xy", "size_m"):
        if isinstance(args.get(key), list):
            args[key] = tuple(args[key])

    if kind == "file":
        path = Path(args["path"])
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        terrain = from_file(path, table=table)
    elif kind == "flat":
        terrain = flat(**args, table=table)
    elif kind == "slope":
        terrain = slope(**args, table=table)
    elif kind == "split":
        terrain = split(**args, table=table)
    else:
        terrain = rough(seed, **args, table=table)

    patches = config.get("patches")
    if patches is not None:
        if not isinstance(patches, Mapping):
            raise ValueError("terrain config: 'patches' must be a dict")
        if "surfaces" in patches:
            _check_keys("terrain config 'patches'", patches, _PATCH_KEYS)
            options = dict(patches)
        else:
            weights = {k: v for k, v in patches.items() if not str(k).startswith("_")}
            unknown = [k for k in weights if k not in terrain.surfaces]
            if unknown:
                raise ValueError(
                    f"terrain config 'patches': unknown key {unknown[0]!r}; give {{surface: weight}} with "
                    f"known surfaces ({', '.join(terrain.surfaces.names)}) or the full form with keys: "
                    f"{', '.join(_PATCH_KEYS)}")
            options = {"surfaces": weights}
        wr = options.get("wetness_range", (0.0, 1.0))
        if wr is not None and (not isinstance(wr, Sequence) or isinstance(wr, str)):
            raise ValueError(
                f"terrain config 'patches': wetness_range must be [low, high] or null, got {wr!r}")
        terrain = with_patches(terrain, np.random.default_rng([seed, 1]), options["surfaces"],
                               scale_m=options.get("scale_m", 20.0),
                               wetness_range=None if wr is None else tuple(wr))

    polygons = config.get("polygons")
    if polygons is not None:
        if not isinstance(polygons, Sequence) or isinstance(polygons, str):
            raise ValueError("terrain config: 'polygons' must be a list of {xy, surface, wetness}")
        items = []
        for n, p in enumerate(polygons):
            if not isinstance(p, Mapping) or "xy" not in p or "surface" not in p:
                raise ValueError(f"terrain config: polygon {n} must be a dict with 'xy' and 'surface' "
                                 f"(and optional 'wetness')")
            _check_keys(f"terrain config polygon {n}", p, _POLYGON_KEYS)
            items.append((p["xy"], p["surface"], p.get("wetness")))
        terrain = with_polygons(terrain, items)
    return terrain
