"""Terrain and surfaces: height grids, surface and wetness maps, the surface table, jitted lookups.

- :mod:`~acres_gym.terrain.surfaces`: the surface table (hard-ground friction, soils) and its friction model.
- :mod:`~acres_gym.terrain.grid`: :class:`Terrain` (one grid) and :class:`TerrainStack` (one per vehicle).
- :mod:`~acres_gym.terrain.generate`: terrains from configs, and every constructor by name; the constructors
  live by what they draw: :mod:`~acres_gym.terrain.shapes` (grids, flat, slope, split, grades, polygons,
  wetness), :mod:`~acres_gym.terrain.rough_ground` (fractal rough ground on the noise of
  :mod:`~acres_gym.terrain.noise`), :mod:`~acres_gym.terrain.patches` (surface patches) and
  :mod:`~acres_gym.terrain.files`.
- :mod:`~acres_gym.terrain.soil_spec`, :mod:`~acres_gym.terrain.soil_random`: the soil parameters' spec, the
  soil library and its random draw.
- :mod:`~acres_gym.terrain.sampling`: ``@njit`` height/gradient and surface lookups for the physics tick.
"""

from acres_gym.terrain.generate import (
    MIN_FEATURE_CELLS,
    TERRAIN_KINDS,
    PatchPlan,
    RoughPlan,
    flat,
    from_config,
    from_file,
    graded_height,
    grid_axes,
    patch_maps,
    patch_plan,
    rough,
    rough_grid,
    rough_plan,
    slope,
    split,
    to_file,
    uniform_surface,
    with_grade,
    with_patches,
    with_polygons,
    with_wetness,
)
from acres_gym.terrain.grid import Terrain, TerrainStack
from acres_gym.terrain.sampling import (
    sample_ground_k,
    sample_height,
    sample_height_k,
    sample_surface,
    sample_surface_k,
    surface_friction,
    surface_normal,
)
from acres_gym.terrain.soil_spec import SOIL_KEYS, SOIL_SPEC
from acres_gym.terrain.surfaces import (
    HARD_FIELDS,
    SurfaceTable,
    default_surfaces,
    friction_coefficient,
    load_surface_table,
    make_surface_table,
    surface_id,
    surface_names,
    surface_row,
    surface_table,
)
from acres_gym.terrain.surfaces_dtype import SURFACE_DTYPE

__all__ = [
    "HARD_FIELDS",
    "MIN_FEATURE_CELLS",
    "SOIL_KEYS",
    "SOIL_SPEC",
    "SURFACE_DTYPE",
    "TERRAIN_KINDS",
    "PatchPlan",
    "RoughPlan",
    "SurfaceTable",
    "Terrain",
    "TerrainStack",
    "default_surfaces",
    "flat",
    "friction_coefficient",
    "from_config",
    "from_file",
    "graded_height",
    "grid_axes",
    "load_surface_table",
    "make_surface_table",
    "patch_maps",
    "patch_plan",
    "rough",
    "rough_grid",
    "rough_plan",
    "sample_ground_k",
    "sample_height",
    "sample_height_k",
    "sample_surface",
    "sample_surface_k",
    "slope",
    "split",
    "surface_friction",
    "surface_id",
    "surface_names",
    "surface_normal",
    "surface_row",
    "surface_table",
    "to_file",
    "uniform_surface",
    "with_grade",
    "with_patches",
    "with_polygons",
    "with_wetness",
]
