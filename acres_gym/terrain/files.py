"""Terrain files: a terrain written to and read from an ``.npz`` (``to_file``, ``from_file``; ``FILE_FORMAT``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from acres_gym.terrain.grid import Terrain
from acres_gym.terrain.shapes import (
    _table,
)
from acres_gym.terrain.surfaces import SurfaceTable

FILE_FORMAT = "acres_gym.terrain.npz/1"


def to_file(terrain: Terrain, path: str | Path) -> Path:
    """Save a terrain to ``path`` (compressed ``.npz``; written exactly there) and return the path.

    The file holds the arrays, origin and cell, and the names of the surfaces used, with ids that
    index those names, so the terrain loads correctly into a table of another order.
    """
    path = Path(path)
    used = np.unique(terrain.surface_id)
    local = np.searchsorted(used, terrain.surface_id).astype(np.int32)
    names = np.array([terrain.surfaces.names[i] for i in used], dtype=str)
    with open(path, "wb") as f:
        np.savez_compressed(
            f, format=np.array(FILE_FORMAT), height_m=terrain.height_m, surface_id=local,
            wetness=terrain.wetness, origin_xy_m=np.array([terrain.origin_x_m, terrain.origin_y_m]),
            cell_m=np.array(terrain.cell_m), surface_names=names,
        )
    return path


def from_file(path: str | Path, table: SurfaceTable | None = None) -> Terrain:
    """Load a terrain saved by :func:`to_file`, mapping its surface names to ids of ``table``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"terrain file {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        required = ("height_m", "surface_id", "wetness", "origin_xy_m", "cell_m", "surface_names")
        missing = [k for k in required if k not in data.files]
        if missing:
            raise ValueError(f"{path}: not a terrain file (missing {', '.join(missing)})")
        t = _table(table)
        names = [str(n) for n in data["surface_names"]]
        unknown = [n for n in names if n not in t]
        if unknown:
            raise ValueError(f"{path}: surfaces {unknown} are not in the surface table "
                             f"({', '.join(t.names)}); pass a table that has them")
        remap = np.array([t.surface_id(n) for n in names], dtype=np.int32)
        local = data["surface_id"]
        if local.size and (local.min() < 0 or local.max() >= len(names)):
            raise ValueError(f"{path}: surface ids outside the {len(names)} stored surface names")
        origin = data["origin_xy_m"]
        return Terrain(data["height_m"], remap[local], data["wetness"], float(origin[0]), float(origin[1]),
                       float(data["cell_m"]), table=table)
