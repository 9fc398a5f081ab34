"""A pygame top-down view: terrain, surfaces, the vehicle with its wheels, the reference path, a HUD.

The physics never imports this module; environments import it on the first ``render()``. The view
follows the vehicle, x (east / forward at yaw 0) to the right, y up. The terrain is drawn once per
episode into a background image: each grid point gets its surface's colour (``SURFACE_COLOURS``; other
soils brown, other hard surfaces grey), darkened by wetness and shaded by the slope (light from the
north-west), and every frame scales the visible part of it.

``mode="rgb_array"`` draws off screen and ``draw`` returns an (height, width, 3) uint8 array; it works
without a display (``SDL_VIDEODRIVER=dummy``). ``mode="human"`` opens a window, shows the frame, keeps to
``fps`` and returns None; closing the window sets ``closed`` (the environments' ``window_closed``), so a
viewing loop can stop.

Example::

    r = TopDownRenderer("rgb_array", width=640, height=480, pixels_per_m=8)
    r.set_terrain(sim.terrain.terrain(0))
    frame = r.draw(axle_xy=(0, 0), yaw_rad=0.0, wheelbase_m=3.16, track_front_m=1.32, track_rear_m=1.31,
                   road_wheel_rad=sim.state.road_wheel_angle_rad[0], hud=["speed 3.2 m/s"])
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

SURFACE_COLOURS: dict[str, tuple[int, int, int]] = {
    "dry_asphalt": (72, 72, 78),
    "wet_asphalt": (52, 54, 64),
    "gravel": (152, 142, 122),
    "grass": (84, 142, 62),
    "wet_grass": (62, 118, 56),
    "ice": (205, 228, 242),
    "packed_dirt": (152, 117, 82),
    "mud": (96, 76, 52),
    "dry_sand": (222, 202, 152),
    "lete_sand": (212, 192, 142),
    "snow": (244, 245, 250),
}
SOIL_COLOUR = (168, 128, 88)
HARD_COLOUR = (128, 128, 128)
OUTSIDE_COLOUR = (30, 30, 34)
PATH_COLOUR = (250, 220, 40)
TARGET_COLOUR = (255, 80, 40)
BODY_COLOUR = (200, 30, 30)
WHEEL_COLOUR = (20, 20, 20)
HUD_TEXT = (255, 255, 255)
BODY_REAR_OVERHANG_M = 0.75  # from the rear axle
BODY_FRONT_OVERHANG_M = 0.65  # beyond the front axle
BODY_WIDTH_M = 1.58
TYRE_LENGTH_M = 0.686
TYRE_WIDTH_M = 0.25
RENDER_MODES = ("human", "rgb_array")


def terrain_image(terrain) -> np.ndarray:
    """An (ny, nx, 3) uint8 image of a terrain (row 0 = the southern edge, y = origin): surface colours,
    darkened by wetness, shaded by slope."""
    names = terrain.surfaces.names
    records = terrain.surfaces.records
    palette = np.empty((len(names), 3))
    for k, name in enumerate(names):
        if name in SURFACE_COLOURS:
            palette[k] = SURFACE_COLOURS[name]
        else:
            palette[k] = SOIL_COLOUR if bool(records.is_soil[k]) else HARD_COLOUR
    colour = palette[terrain.surface_id]
    colour *= (1.0 - 0.3 * terrain.wetness)[..., None]
    gy, gx = np.gradient(terrain.height_m, terrain.cell_m)
    exaggeration = 4.0
    nx, ny = -exaggeration * gx, -exaggeration * gy
    norm = np.sqrt(nx * nx + ny * ny + 1.0)
    light = np.array([-1.0, 1.0, 1.5]) / math.sqrt(1.0 + 1.0 + 2.25)
    lit = (nx * light[0] + ny * light[1] + light[2]) / norm
    shade = np.clip(0.35 + 0.75 * lit, 0.25, 1.25)
    return np.clip(colour * shade[..., None], 0, 255).astype(np.uint8)


class TopDownRenderer:
    """Draws frames of one vehicle (see the module docstring).

    Args:
        mode: ``"human"`` (a window) or ``"rgb_array"`` (arrays).
        width, height: frame size, pixels.
        pixels_per_m: zoom.
        fps: frame rate of the window in ``human`` mode.
        title: window title.
    """

    def __init__(self, mode: str = "rgb_array", width: int = 640, height: int = 480, pixels_per_m: float = 8.0,
                 fps: float = 20.0, title: str = "acres_gym") -> None:
        if mode not in RENDER_MODES:
            raise ValueError(f"render mode {mode!r}; allowed: {', '.join(RENDER_MODES)}")
        for name, value in (("width", width), ("height", height)):
            if isinstance(value, bool) or not isinstance(value, int) or not 16 <= value <= 8192:
                raise ValueError(f"render {name} = {value!r}: expected an integer number of pixels in [16, 8192]")
        if isinstance(pixels_per_m, bool) or not isinstance(pixels_per_m, (int, float)) or \
                not 0.05 <= pixels_per_m <= 500:
            raise ValueError(f"render pixels_per_m = {pixels_per_m!r}: expected a number in [0.05, 500]")
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        import pygame

        self.pygame = pygame
        self.mode = mode
        self.width, self.height = int(width), int(height)
        self.ppm = float(pixels_per_m)
        self.fps = float(fps)
        pygame.font.init()
        self.font = pygame.font.Font(None, max(12, self.height // 28))
        self.window = None
        self.clock = None
        self.closed = False
        if mode == "human":
            pygame.display.init()
            self.window = pygame.display.set_mode((self.width, self.height))
            pygame.display.set_caption(title)
            self.clock = pygame.time.Clock()
        self.canvas = pygame.Surface((self.width, self.height))
        self.background = None
        self._bg_origin = (0.0, 0.0)
        self._bg_cell = 1.0
        self._bg_shape = (0, 0)

    # --- terrain -------------------------------------------------------------------------------------
    def set_terrain(self, terrain) -> None:
        """Prepare the background of a terrain (once per episode)."""
        image = terrain_image(terrain)[::-1]  # north up
        self.background = self.pygame.surfarray.make_surface(np.ascontiguousarray(image.transpose(1, 0, 2)))
        self._bg_origin = (terrain.origin_x_m, terrain.origin_y_m)
        self._bg_cell = terrain.cell_m
        self._bg_shape = terrain.shape

    # --- drawing -------------------------------------------------------------------------------------
    def _to_screen(self, x, y, cx: float, cy: float):
        return (self.width / 2 + (np.asarray(x) - cx) * self.ppm, self.height / 2 - (np.asarray(y) - cy) * self.ppm)

    def _blit_background(self, cx: float, cy: float) -> None:
        pg = self.pygame
        self.canvas.fill(OUTSIDE_COLOUR)
        if self.background is None:
            return
        ny, nx = self._bg_shape
        ox, oy = self._bg_origin
        cell = self._bg_cell
        half_w, half_h = self.width / (2 * self.ppm), self.height / (2 * self.ppm)
        # terrain pixel (column i, row j from the top) covers the cell around grid point (i, ny - 1 - j)
        i0 = max(0, math.floor((cx - half_w - ox) / cell + 0.5))
        i1 = min(nx, math.ceil((cx + half_w - ox) / cell + 0.5))
        j0 = max(0, math.floor((ny - 1) - (cy + half_h - oy) / cell + 0.5))
        j1 = min(ny, math.ceil((ny - 1) - (cy - half_h - oy) / cell + 0.5))
        if i1 <= i0 or j1 <= j0:
            return
        part = self.background.subsurface(pg.Rect(i0, j0, i1 - i0, j1 - j0))
        x_left = ox + (i0 - 0.5) * cell
        y_top = oy + ((ny - 1) - j0 + 0.5) * cell
        sx, sy = self._to_screen(x_left, y_top, cx, cy)
        size = (max(1, round((i1 - i0) * cell * self.ppm)), max(1, round((j1 - j0) * cell * self.ppm)))
        self.canvas.blit(pg.transform.scale(part, size), (round(float(sx)), round(float(sy))))

    def _polygon(self, corners: np.ndarray, cx: float, cy: float, colour) -> None:
        sx, sy = self._to_screen(corners[:, 0], corners[:, 1], cx, cy)
        self.pygame.draw.polygon(self.canvas, colour, list(zip(sx.tolist(), sy.tolist(), strict=True)))

    @staticmethod
    def _box(x: float, y: float, heading: float, length: float, width: float) -> np.ndarray:
        c, s = math.cos(heading), math.sin(heading)
        local = np.array([[0.5 * length, 0.5 * width], [0.5 * length, -0.5 * width],
                          [-0.5 * length, -0.5 * width], [-0.5 * length, 0.5 * width]])
        return np.column_stack([x + c * local[:, 0] - s * local[:, 1], y + s * local[:, 0] + c * local[:, 1]])

    def draw(self, axle_xy: Sequence[float], yaw_rad: float, wheelbase_m: float = 3.16,
             track_front_m: float = 1.32, track_rear_m: float = 1.31, road_wheel_rad: Sequence[float] = (0, 0, 0, 0),
             path_xy: np.ndarray | None = None, target_xy: Sequence[float] | None = None,
             hud: Sequence[str] = ()) -> np.ndarray | None:
        """Draw one frame centred on the vehicle whose rear-axle midpoint is at ``axle_xy`` heading ``yaw_rad``;
        wheels 0 FL, 1 FR, 2 RL, 3 RR turned by ``road_wheel_rad``; ``path_xy`` (M, 2) world points;
        ``target_xy`` a marked point; ``hud`` text lines."""
        pg = self.pygame
        ax, ay = float(axle_xy[0]), float(axle_xy[1])
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        cx, cy = ax + 0.5 * wheelbase_m * c, ay + 0.5 * wheelbase_m * s
        self._blit_background(cx, cy)

        if path_xy is not None and len(path_xy) > 1:
            half = 0.75 * math.hypot(self.width, self.height) / self.ppm
            pts = np.asarray(path_xy, dtype=float)
            near = np.abs(pts[:, 0] - cx) + np.abs(pts[:, 1] - cy) < 2 * half
            if near.sum() > 1:
                idx = np.flatnonzero(near)
                sx, sy = self._to_screen(pts[idx, 0], pts[idx, 1], cx, cy)
                pg.draw.lines(self.canvas, PATH_COLOUR, False, list(zip(sx.tolist(), sy.tolist(), strict=True)),
                              max(1, round(0.15 * self.ppm)))

        length = BODY_REAR_OVERHANG_M + wheelbase_m + BODY_FRONT_OVERHANG_M
        mid = -BODY_REAR_OVERHANG_M + 0.5 * length
        self._polygon(self._box(ax + mid * c, ay + mid * s, yaw_rad, length, BODY_WIDTH_M), cx, cy, BODY_COLOUR)
        wheels = ((wheelbase_m, 0.5 * track_front_m), (wheelbase_m, -0.5 * track_front_m),
                  (0.0, 0.5 * track_rear_m), (0.0, -0.5 * track_rear_m))
        for i, (fx, fy) in enumerate(wheels):
            wx, wy = ax + c * fx - s * fy, ay + s * fx + c * fy
            angle = float(road_wheel_rad[i]) if i < len(road_wheel_rad) else 0.0
            self._polygon(self._box(wx, wy, yaw_rad + angle, TYRE_LENGTH_M, TYRE_WIDTH_M), cx, cy, WHEEL_COLOUR)
        nose_x, nose_y = self._to_screen(ax + (wheelbase_m + BODY_FRONT_OVERHANG_M) * c,
                                         ay + (wheelbase_m + BODY_FRONT_OVERHANG_M) * s, cx, cy)
        pg.draw.circle(self.canvas, (255, 255, 255), (float(nose_x), float(nose_y)), max(2, round(0.15 * self.ppm)))

        if target_xy is not None:
            tx, ty = self._to_screen(float(target_xy[0]), float(target_xy[1]), cx, cy)
            pg.draw.circle(self.canvas, TARGET_COLOUR, (float(tx), float(ty)), max(3, round(0.3 * self.ppm)), 2)

        if hud:
            lines = [self.font.render(str(t), True, HUD_TEXT) for t in hud]
            w = max(line.get_width() for line in lines) + 12
            h = sum(line.get_height() for line in lines) + 10
            box = pg.Surface((w, h), pg.SRCALPHA)
            box.fill((0, 0, 0, 150))
            self.canvas.blit(box, (6, 6))
            y = 11
            for line in lines:
                self.canvas.blit(line, (12, y))
                y += line.get_height()

        if self.mode == "human":
            if pg.event.get(pg.QUIT):
                self.closed = True
            pg.event.pump()
            self.window.blit(self.canvas, (0, 0))
            pg.display.flip()
            self.clock.tick(self.fps)
            return None
        return np.array(pg.surfarray.pixels3d(self.canvas)).transpose(1, 0, 2).copy()

    def close(self) -> None:
        if self.window is not None:
            self.pygame.display.quit()
            self.window = None
