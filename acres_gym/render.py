"""A pygame top-down debug view: shaded terrain with contour lines, surfaces with a legend, a scale bar,
the vehicle with its wheels, its trail, the reference path or the goal, per-wheel slip and sinkage, the pedal
and steering bars, an inset of the policy's local map and a HUD.

The physics never imports this module; environments import it on the first ``render()``. The view
follows the vehicle, x (east / forward at yaw 0) to the right, y up.

Static layer. ``set_terrain`` (once per episode, about 0.1-0.2 s for a 300 m terrain at 8 px/m) draws the
whole terrain into one background image at the screen's scale (coarser for very large maps, then scaled
per frame): each grid point gets the colour of its surface (``surface_colour``: a fixed colour for the
shipped surfaces and soils, each told apart from the others with normal and colour-blind vision
(``SURFACE_COLOURS``), a colour derived from the name for any other entry of the terrain's surface table),
darkened by wetness and lit by hill shading (light from the north-west, slopes exaggerated 4x), no-go areas
(``set_terrain(..., no_go=mask)``; the navigation task's) tinted ``NO_GO_COLOUR``; that image is scaled up
smoothly and crossed by contour lines (an interval of 0.1-50 m chosen from the terrain's relief, every fifth
line darker; a small jitted kernel). It also prepares the legend: the surfaces present in the terrain and the
contour interval. A frame blits the visible part of that image and draws the dynamic layer on it.

Dynamic layer (``draw``): the reference path and its target point, or a goal (a ``GOAL_COLOUR`` circle, or an
arrow at the frame's edge pointing to it, with its distance, while it is off screen); the trail of the last
``trail_s`` seconds of the frames drawn (their ``time_s``; it restarts when time goes backwards or the terrain
changes); the body and the four wheels, each wheel filled by its slip (green 0, yellow 15 %, red from 30 %,
grey in the air); a scale bar; a wheel panel (bottom right) with each wheel's slip ratio as a coloured block
and its soil sinkage as a bar (full at ``SINKAGE_FULL_M``); throttle and brake bars (0-100 %, brake as a share
of the maximum pressure) and a steering bar (left / right of centre as a share of the lock) (bottom left); an
inset of a ``local_map`` (C, H, W) as the policy sees it (heading up, one channel at a time in cividis, the
vehicle marked; M shows the next channel, 1-9 a channel by number; left, above the pedals); the HUD text
lines (top left, kept in ``hud_lines``) and the legend (top right).

``mode="rgb_array"`` draws off screen and ``draw`` returns a read-only (height, width, 3) uint8 array; it works
without a display (``SDL_VIDEODRIVER=dummy``). ``mode="human"`` opens a window, shows the frame, keeps to
``fps`` and returns None; closing the window sets ``closed`` (the environments' ``window_closed``), so a
viewing loop can stop. Without a display ``mode="human"`` raises ``NoDisplayError``, a ``RuntimeError``
(``display_problem``)
naming the remedies: ``rgb_array``, a virtual display (``xvfb-run``), or ``SDL_VIDEODRIVER=dummy`` to
draw off screen on purpose.

Example::

    r = TopDownRenderer("rgb_array", width=640, height=480, pixels_per_m=8)
    r.set_terrain(sim.terrain.terrain(0))
    frame = r.draw(axle_xy=(0, 0), yaw_rad=0.0, wheelbase_m=3.16, track_front_m=1.32, track_rear_m=1.31,
                   road_wheel_rad=sim.state.road_wheel_angle_rad[0], time_s=float(sim.state.time_s[0]),
                   wheel_slip=sim.state.slip_ratio[0], wheel_sinkage_m=sim.state.sinkage_m[0],
                   throttle_pct=30.0, brake_frac=0.0, steer_frac=0.1, hud=["speed 3.2 m/s"])
"""

from __future__ import annotations

import math
import os
import sys
import zlib
from collections import deque
from collections.abc import Mapping, Sequence

import numba
import numpy as np

# Every shipped surface has its own colour, told apart with normal vision and with protan, deutan and tritan
# colour blindness: snow, ice, dry asphalt and grass were fixed, the others picked one at a time, each the
# colour (of a 15-step sRGB grid, CIELAB lightness 30-88, chroma below 55) farthest from those already
# taken and from the overlay colours (no-go, path, trail, goal, outside) in the worst of the four visions
# (CIELAB distance after the Machado, Oliveira and Fernandes 2009 simulation at full severity), then matched
# to the surfaces by closeness to their natural colours; ``tests/test_render.py`` checks the distances.
SURFACE_COLOURS: dict[str, tuple[int, int, int]] = {
    # hard surfaces
    "dry_asphalt": (70, 70, 76),
    "wet_asphalt": (30, 75, 120),
    "gravel": (150, 150, 225),
    "grass": (80, 150, 60),
    "wet_grass": (90, 120, 60),
    "ice": (190, 225, 245),
    "packed_dirt": (150, 75, 15),
    "mud": (105, 60, 30),
    # soils
    "dry_sand": (225, 225, 135),
    "lete_sand": (180, 195, 120),
    "snow": (240, 240, 240),
    "sandy_loam": (195, 150, 195),
    "sandy_loam_wet": (135, 105, 90),
    "clayey_soil": (210, 135, 150),
    "clayey_soil_wet": (135, 90, 180),
    "heavy_clay": (165, 90, 135),
    "lean_clay": (255, 180, 180),
    "upland_sandy_loam": (195, 180, 75),
    "rubicon_sandy_loam": (135, 165, 105),
    "north_gower_clayey_loam": (135, 120, 180),
    "grenville_loam": (0, 135, 225),
    # the wetter measurements of soils measured at two moisture contents (found by a search for the largest
    # CIELAB distance to every other colour of the view, with normal and colour-blind vision)
    "sandy_loam_lll_wet": (70, 52, 40),
    "heavy_clay_wet": (100, 40, 226),
    "lean_clay_wet": (52, 40, 124),
    # the remaining soils Wong measures at two moisture contents (the same search, also kept apart from the
    # outside, path, trail, target and body colours)
    "michigan_sandy_loam": (250, 160, 35),
    "michigan_sandy_loam_wet": (85, 0, 175),
    "hanamoto_sandy_loam": (170, 255, 105),
}
OUTSIDE_COLOUR = (30, 30, 34)
PATH_COLOUR = (250, 220, 40)
TRAIL_COLOUR = (40, 220, 250)
TARGET_COLOUR = (255, 80, 40)
BODY_COLOUR = (200, 30, 30)
AIR_COLOUR = (110, 110, 110)
HUD_TEXT = (255, 255, 255)
PANEL_COLOUR = (0, 0, 0, 150)
NO_GO_COLOUR = (120, 40, 170)  # no-go areas (the navigation task's water and dense vegetation), blended over
NO_GO_ALPHA = 0.65  # the ground under them
NO_GO_LABEL = "no-go area"
GOAL_COLOUR = (255, 40, 255)  # the goal's circle and, when it is off screen, the arrow to it
INSET_BORDER = (255, 255, 255)
CIVIDIS = ((0, 34, 78), (26, 56, 111), (67, 78, 108), (97, 101, 111), (125, 124, 120), (155, 148, 118),
           (188, 174, 108), (222, 201, 88), (254, 232, 56))  # matplotlib's cividis at 0, 1/8, ..., 1
INSET_RANGES = {"height": (-4.0, 4.0), "grade": (-0.6, 0.6), "traction": (-0.2, 1.0), "no_go": (0.0, 1.0),
                "grade_margin": (-0.2, 1.0)}
"""Values of each ``local_map`` channel at the two ends of the inset's colour scale (m, tan, tan, 0 / 1, tan)."""
INSET_CELL_PX = 5  # pixels per map cell in the inset (fewer when the frame is small)
THROTTLE_COLOUR = (60, 200, 80)
BRAKE_COLOUR = (230, 60, 50)
STEER_COLOUR = (80, 160, 255)
SINKAGE_COLOUR = (200, 150, 90)
BODY_REAR_OVERHANG_M = 0.75  # from the rear axle
BODY_FRONT_OVERHANG_M = 0.65  # beyond the front axle
BODY_WIDTH_M = 1.58
TYRE_LENGTH_M = 0.686
TYRE_WIDTH_M = 0.25
RENDER_MODES = ("human", "rgb_array")
TRAIL_S = 10.0  # seconds of trail
SLIP_FULL = 0.3  # slip ratio drawn fully red
SINKAGE_FULL_M = 0.10  # sinkage drawn as a full bar
MAX_BACKGROUND_PIXELS = 8_000_000  # a larger terrain is drawn coarser and scaled per frame
CONTOUR_STEPS_M = (0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 25.0, 50.0)
HEADLESS_DRIVERS = ("dummy", "offscreen")


# --------------------------------------------------------------------------- display check


def display_problem(environ: Mapping[str, str] | None = None, platform: str | None = None) -> str | None:
    """Why ``render_mode="human"`` cannot open a window here, or None when it can (or should try).

    On Linux and the BSDs a window needs ``DISPLAY`` (X11) or ``WAYLAND_DISPLAY``; an explicit
    ``SDL_VIDEODRIVER`` (a real driver, or ``dummy`` / ``offscreen`` to draw off screen on purpose) is
    trusted. Other platforms always have a window system.
    """
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if env.get("SDL_VIDEODRIVER"):
        return None
    if not (platform.startswith("linux") or "bsd" in platform):
        return None
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    return "no display: DISPLAY and WAYLAND_DISPLAY are unset"


class NoDisplayError(RuntimeError):
    """``render_mode="human"`` without a display; the message names the remedies."""


def headless_error(reason: str) -> NoDisplayError:
    """The error of ``render_mode="human"`` without a display, naming the remedies."""
    return NoDisplayError(
        f"render_mode='human' needs a window, but {reason}; use render_mode='rgb_array' (frames as arrays, "
        "e.g. for gymnasium.wrappers.RecordVideo), run under a virtual display (xvfb-run -a python ...), or "
        "set SDL_VIDEODRIVER=dummy to draw off screen on purpose")


def check_display(mode: str | None) -> None:
    """Raise the ``headless_error`` when ``mode`` is ``"human"`` and ``display_problem`` finds no display
    (environments call this at construction, so the error comes before any episode)."""
    if mode == "human":
        reason = display_problem()
        if reason is not None:
            raise headless_error(reason)


# --------------------------------------------------------------------------- the static terrain layer


def surface_colour(name: str, is_soil: bool) -> tuple[int, int, int]:
    """The colour of a surface: ``SURFACE_COLOURS`` for the shipped ones, else a colour derived from the
    name (stable across runs): warm hues for soils, cool ones for hard surfaces."""
    if name in SURFACE_COLOURS:
        return SURFACE_COLOURS[name]
    h = zlib.crc32(name.encode("utf-8"))
    hue = ((h & 0xFF) / 255.0) * (0.10 if is_soil else 0.45) + (0.03 if is_soil else 0.45)
    sat = 0.35 + 0.4 * ((h >> 8) & 0xFF) / 255.0
    val = 0.45 + 0.4 * ((h >> 16) & 0xFF) / 255.0
    import colorsys

    r, g, b = colorsys.hsv_to_rgb(hue, sat, val)
    return (round(255 * r), round(255 * g), round(255 * b))


def terrain_palette(terrain, labels: Mapping[str, str] | None = None) -> tuple[np.ndarray, list[str]]:
    """``(palette (S, 3) float, display names)`` of a terrain's surface table; ``labels`` renames table
    entries (e.g. an episode's soil slot to the soil drawn), and the colour follows the display name."""
    labels = labels or {}
    names = terrain.surfaces.names
    records = terrain.surfaces.records
    shown = [labels.get(n, n) for n in names]
    palette = np.array([surface_colour(s, bool(records.is_soil[k])) for k, s in enumerate(shown)], dtype=float)
    return palette, shown


def hill_shade(height_m: np.ndarray, cell_m: float, exaggeration: float = 4.0) -> np.ndarray:
    """Lambertian shade factor (about 0.25-1.25) of a height grid lit from the north-west."""
    gy, gx = np.gradient(height_m, cell_m)
    nx, ny = -exaggeration * gx, -exaggeration * gy
    norm = np.sqrt(nx * nx + ny * ny + 1.0)
    light = np.array([-1.0, 1.0, 1.5]) / math.sqrt(1.0 + 1.0 + 2.25)
    lit = (nx * light[0] + ny * light[1] + light[2]) / norm
    return np.clip(0.35 + 0.75 * lit, 0.25, 1.25)


def contour_interval(height_m: np.ndarray) -> float:
    """A round contour interval (m) giving about 8-25 lines over the terrain's relief."""
    relief = float(np.ptp(height_m))
    for step in CONTOUR_STEPS_M:
        if relief / step <= 25.0:
            return step
    return CONTOUR_STEPS_M[-1]


def terrain_image(terrain, labels: Mapping[str, str] | None = None, no_go: np.ndarray | None = None) -> np.ndarray:
    """An (ny, nx, 3) uint8 image of a terrain, one pixel per grid point (row 0 = the southern edge,
    y = origin): surface colours, darkened by wetness, hill-shaded; grid points where ``no_go`` (same shape,
    nonzero = a no-go area) is set blended towards ``NO_GO_COLOUR``."""
    palette, _ = terrain_palette(terrain, labels)
    colour = palette[terrain.surface_id]
    colour *= (1.0 - 0.3 * terrain.wetness)[..., None]
    colour *= hill_shade(terrain.height_m, terrain.cell_m)[..., None]
    if no_go is not None:
        mask = _no_go_mask(terrain, no_go)
        colour[mask] = (1.0 - NO_GO_ALPHA) * colour[mask] + NO_GO_ALPHA * np.asarray(NO_GO_COLOUR, dtype=float)
    return np.clip(colour, 0, 255).astype(np.uint8)


def _no_go_mask(terrain, no_go) -> np.ndarray:
    mask = np.asarray(no_go) != 0
    if mask.shape != tuple(terrain.shape):
        raise ValueError(f"no_go has shape {mask.shape}; it must match the terrain grid {tuple(terrain.shape)}")
    return mask


def _contour_axes(terrain, width: int, height: int):
    """Grid coordinates of the pixel centres of a (height, width) north-up image of ``terrain`` whose grid
    points each cover their cell: lower indices and fractions along x (columns) and y (rows from the top)."""
    ny, nx = terrain.shape
    gx = -0.5 + (np.arange(width) + 0.5) * (nx / width)
    gy = (ny - 0.5) - (np.arange(height) + 0.5) * (ny / height)
    i0 = np.clip(np.floor(gx).astype(np.int64), 0, nx - 2)
    j0 = np.clip(np.floor(gy).astype(np.int64), 0, ny - 2)
    return i0, np.clip(gx - i0, 0.0, 1.0), j0, np.clip(gy - j0, 0.0, 1.0)


@numba.njit(cache=True)
def _draw_contours(levels, i0, fx, j0, fy, pixels, minor_factor, major_factor):  # pragma: no cover (jitted)
    """Darken ``pixels`` (W, H, 3) where the bilinear ``levels`` (height / interval) cross an integer
    between a pixel and its left or upper neighbour; every fifth level by ``major_factor`` more."""
    width, height = i0.size, j0.size
    previous = np.empty(width, np.int64)
    current = np.empty(width, np.int64)
    for v in range(height):
        j, f = j0[v], fy[v]
        for u in range(width):
            i, g = i0[u], fx[u]
            low = levels[j, i] + (levels[j, i + 1] - levels[j, i]) * g
            high = levels[j + 1, i] + (levels[j + 1, i + 1] - levels[j + 1, i]) * g
            current[u] = np.int64(np.floor(low + (high - low) * f))
        for u in range(width):
            line = -1
            if u > 0 and current[u] != current[u - 1]:
                line = max(current[u], current[u - 1])
            if v > 0 and current[u] != previous[u]:
                line = max(line, max(current[u], previous[u]))
            if line >= 0:
                factor = minor_factor * (major_factor if line % 5 == 0 else 1.0)
                for c in range(3):
                    pixels[u, v, c] = np.uint8(pixels[u, v, c] * factor)
        previous[:] = current


def draw_contours(terrain, pixels: np.ndarray, interval_m: float, minor_factor: float = 0.62,
                  major_factor: float = 0.6) -> None:
    """Draw contour lines every ``interval_m`` into ``pixels`` (W, H, 3) uint8 (``pygame.surfarray`` order),
    a north-up image of the whole ``terrain``: a pixel on a line (the bilinear height crosses a multiple of
    ``interval_m`` between it and its left or upper neighbour) is darkened by ``minor_factor``, and
    every fifth level by ``major_factor`` more."""
    width, height = pixels.shape[:2]
    i0, fx, j0, fy = _contour_axes(terrain, width, height)
    levels = (terrain.height_m - terrain.height_m.min()) / float(interval_m)
    _draw_contours(levels, i0, fx, j0, fy, pixels, minor_factor, major_factor)


def _as_format(pg, surface, like):
    """``surface`` copied into a new surface of ``like``'s pixel format (without a display)."""
    out = pg.Surface(surface.get_size(), 0, like)
    out.blit(surface, (0, 0))
    return out


def nice_length(max_m: float) -> float:
    """The largest 1-2-5 length (m) not above ``max_m``."""
    if max_m <= 0:
        return 0.0
    exp = math.floor(math.log10(max_m))
    for mult in (5.0, 2.0, 1.0):
        if mult * 10**exp <= max_m:
            return mult * 10**exp
    return 10**exp


def slip_colour(slip: float, in_contact: bool = True) -> tuple[int, int, int]:
    """Green at no slip, yellow at half of ``SLIP_FULL``, red from ``SLIP_FULL``; grey in the air."""
    if not in_contact or not math.isfinite(slip):
        return AIR_COLOUR
    u = min(1.0, abs(slip) / SLIP_FULL)
    if u < 0.5:
        return (round(60 + 2 * u * 170), 200, 60)
    return (230, round(200 - (u - 0.5) * 2 * 160), 50)


# --------------------------------------------------------------------------- the renderer


class TopDownRenderer:
    """Draws frames of one vehicle on a terrain (module docstring).

    Args:
        mode: ``"human"`` (a window) or ``"rgb_array"`` (arrays).
        width, height: frame size in pixels.
        pixels_per_m: scale of the view.
        fps: frame rate the ``human`` window keeps to.
        trail_s: seconds of trail drawn behind the vehicle.
        max_background_pixels: the static layer's size limit; a terrain that would need more at
            ``pixels_per_m`` is drawn coarser and scaled per frame.
    """

    def __init__(self, mode: str = "rgb_array", width: int = 640, height: int = 480, pixels_per_m: float = 8.0,
                 fps: float = 20.0, title: str = "acres-gym", trail_s: float = TRAIL_S,
                 max_background_pixels: int = MAX_BACKGROUND_PIXELS) -> None:
        if mode not in RENDER_MODES:
            raise ValueError(f"render mode {mode!r}; allowed: {', '.join(RENDER_MODES)}")
        check_display(mode)
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        import pygame

        self.pygame = pygame
        self.mode = mode
        self.width, self.height = int(width), int(height)
        self.ppm = float(pixels_per_m)
        self.fps = float(fps)
        self.trail_s = float(trail_s)
        self.max_background_pixels = int(max_background_pixels)
        pygame.font.init()
        self.font = pygame.font.Font(None, max(12, self.height // 28))
        self.small_font = pygame.font.Font(None, max(11, self.height // 36))
        self.window = None
        self.clock = None
        self.closed = False
        if mode == "human":
            implicit = not os.environ.get("SDL_VIDEODRIVER")
            try:
                pygame.display.init()
                if not pygame.display.get_init():
                    raise pygame.error(pygame.get_error() or "display init failed")
                if implicit and pygame.display.get_driver() in HEADLESS_DRIVERS:
                    pygame.display.quit()
                    raise headless_error(f"pygame found only the {pygame.display.get_driver()!r} video driver")
                self.window = pygame.display.set_mode((self.width, self.height))
            except pygame.error as exc:
                raise headless_error(f"pygame cannot open a window ({exc})") from None
            pygame.display.set_caption(title)
            self.clock = pygame.time.Clock()
        self.canvas = pygame.Surface((self.width, self.height))
        self.background = None
        self._bg_ppm = self.ppm
        self._bg_direct = True
        self._bg_left_top = (0.0, 0.0)  # world x of the left edge, y of the top edge
        self.legend = None
        self.legend_entries: list[tuple[str, tuple[int, int, int]]] = []
        self.contour_interval_m = math.nan
        self.trail: deque[tuple[float, float, float]] = deque()
        self._panels: dict[tuple[int, int], object] = {}
        self._scale_bar = self._make_scale_bar()
        self.inset_channel = 0  # the local_map channel the inset shows (keys: M next, 1-9 by number)
        self.inset_rect = None  # where the last frame drew the inset's map (a pygame.Rect), or None
        self.hud_lines: list[str] = []

    # --- terrain -------------------------------------------------------------------------------------
    def set_terrain(self, terrain, labels: Mapping[str, str] | None = None, no_go: np.ndarray | None = None) -> None:
        """Prepare the static layer of a terrain (once per episode): the background image and the legend.
        ``labels`` renames surface-table entries in the legend (and picks their colour by that name);
        ``no_go`` (the terrain grid's shape, nonzero = a no-go area) tints those areas ``NO_GO_COLOUR`` and
        adds them to the legend."""
        pg = self.pygame
        ny, nx = terrain.shape
        cell = float(terrain.cell_m)
        area_m2 = nx * ny * cell * cell
        bg_ppm = min(self.ppm, math.sqrt(self.max_background_pixels / area_m2))
        self.contour_interval_m = contour_interval(terrain.height_m)
        w, h = max(1, round(nx * cell * bg_ppm)), max(1, round(ny * cell * bg_ppm))
        cells = terrain_image(terrain, labels, no_go)[::-1]  # one pixel per grid point, north up
        small = pg.image.frombuffer(np.ascontiguousarray(cells).tobytes(), (nx, ny), "RGB")
        # in the canvas's pixel format, so the per-frame blit is a plain copy
        self.background = pg.Surface((w, h), 0, self.canvas)
        pg.transform.smoothscale(_as_format(pg, small, self.canvas), (w, h), self.background)
        pixels = pg.surfarray.array3d(self.background)  # (w, h, 3) copy (a pixels3d view would lock it)
        draw_contours(terrain, pixels, self.contour_interval_m)
        pg.surfarray.blit_array(self.background, pixels)
        self._bg_ppm = w / (nx * cell)
        self._bg_direct = abs(w - nx * cell * self.ppm) < 0.5 and abs(h - ny * cell * self.ppm) < 0.5
        self._bg_left_top = (terrain.origin_x_m - 0.5 * cell, terrain.origin_y_m + (ny - 0.5) * cell)
        self.legend = self._make_legend(terrain, labels, no_go is not None and bool(_no_go_mask(terrain, no_go).any()))
        self.trail.clear()

    def _make_legend(self, terrain, labels, no_go: bool = False) -> object:
        pg = self.pygame
        palette, shown = terrain_palette(terrain, labels)
        present = np.flatnonzero(np.bincount(terrain.surface_id.ravel(), minlength=len(shown)))
        entries: dict[str, tuple[int, int, int]] = {}
        for k in present:
            entries.setdefault(shown[k], tuple(int(v) for v in palette[k]))
        lines = [(name, colour) for name, colour in entries.items()]
        if no_go:
            lines.append((NO_GO_LABEL, NO_GO_COLOUR))
        self.legend_entries = lines
        texts = [self.small_font.render(name.replace("_", " "), True, HUD_TEXT) for name, _ in lines]
        texts.append(self.small_font.render(f"contours {self.contour_interval_m:g} m", True, HUD_TEXT))
        row = max(t.get_height() for t in texts) + 2
        swatch = row - 4
        w = max(t.get_width() for t in texts) + swatch + 16
        h = row * len(texts) + 8
        box = pg.Surface((w, h), pg.SRCALPHA)
        box.fill(PANEL_COLOUR)
        y = 4
        for (_, colour), text in zip(lines, texts, strict=False):
            pg.draw.rect(box, colour, (5, y + 1, swatch, swatch))
            pg.draw.rect(box, (0, 0, 0), (5, y + 1, swatch, swatch), 1)
            box.blit(text, (swatch + 10, y + 1))
            y += row
        pg.draw.line(box, (60, 60, 60), (5, y + row // 2), (5 + swatch, y + row // 2), 2)
        box.blit(texts[-1], (swatch + 10, y + 1))
        return box

    def _make_scale_bar(self):
        pg = self.pygame
        length_m = nice_length(0.25 * self.width / self.ppm)
        px = max(1, round(length_m * self.ppm))
        label = self.small_font.render(f"{length_m:g} m", True, HUD_TEXT)
        w, h = px + 12, label.get_height() + 14
        box = pg.Surface((max(w, label.get_width() + 12), h), pg.SRCALPHA)
        box.fill(PANEL_COLOUR)
        y = h - 6
        pg.draw.line(box, HUD_TEXT, (6, y), (6 + px, y), 2)
        for x in (6, 6 + px // 2, 6 + px):
            pg.draw.line(box, HUD_TEXT, (x, y - (5 if x != 6 + px // 2 else 3)), (x, y), 2)
        box.blit(label, (6 + (px - label.get_width()) // 2, 3))
        return box

    # --- drawing -------------------------------------------------------------------------------------
    def _to_screen(self, x, y, cx: float, cy: float):
        return (self.width / 2 + (np.asarray(x) - cx) * self.ppm, self.height / 2 - (np.asarray(y) - cy) * self.ppm)

    def _blit_background(self, cx: float, cy: float) -> None:
        pg = self.pygame
        self.canvas.fill(OUTSIDE_COLOUR)
        if self.background is None:
            return
        left, top = self._bg_left_top
        bw, bh = self.background.get_size()
        if self._bg_direct:
            sx, sy = self._to_screen(left, top, cx, cy)
            self.canvas.blit(self.background, (round(float(sx)), round(float(sy))))
            return
        # a coarser background: scale the visible part
        k = self._bg_ppm
        half_w, half_h = self.width / (2 * self.ppm), self.height / (2 * self.ppm)
        u0 = max(0, math.floor((cx - half_w - left) * k))
        u1 = min(bw, math.ceil((cx + half_w - left) * k) + 1)
        v0 = max(0, math.floor((top - (cy + half_h)) * k))
        v1 = min(bh, math.ceil((top - (cy - half_h)) * k) + 1)
        if u1 <= u0 or v1 <= v0:
            return
        part = self.background.subsurface(pg.Rect(u0, v0, u1 - u0, v1 - v0))
        sx, sy = self._to_screen(left + u0 / k, top - v0 / k, cx, cy)
        size = (max(1, round((u1 - u0) / k * self.ppm)), max(1, round((v1 - v0) / k * self.ppm)))
        self.canvas.blit(pg.transform.scale(part, size), (round(float(sx)), round(float(sy))))

    def _polygon(self, corners: np.ndarray, cx: float, cy: float, colour, outline: int = 0) -> None:
        sx, sy = self._to_screen(corners[:, 0], corners[:, 1], cx, cy)
        points = list(zip(sx.tolist(), sy.tolist(), strict=True))
        self.pygame.draw.polygon(self.canvas, colour, points)
        if outline:
            self.pygame.draw.polygon(self.canvas, (10, 10, 10), points, outline)

    @staticmethod
    def _box(x: float, y: float, heading: float, length: float, width: float) -> np.ndarray:
        c, s = math.cos(heading), math.sin(heading)
        local = np.array([[0.5 * length, 0.5 * width], [0.5 * length, -0.5 * width],
                          [-0.5 * length, -0.5 * width], [-0.5 * length, 0.5 * width]])
        return np.column_stack([x + c * local[:, 0] - s * local[:, 1], y + s * local[:, 0] + c * local[:, 1]])

    def _panel(self, x: int, y: int, w: int, h: int) -> None:
        """A translucent dark box (surfaces cached by size)."""
        box = self._panels.get((w, h))
        if box is None:
            box = self._panels[(w, h)] = self.pygame.Surface((w, h), self.pygame.SRCALPHA)
            box.fill(PANEL_COLOUR)
        self.canvas.blit(box, (x, y))

    def _update_trail(self, time_s: float | None, x: float, y: float) -> None:
        if time_s is None:
            return
        if self.trail and time_s < self.trail[-1][0]:
            self.trail.clear()
        self.trail.append((time_s, x, y))
        while self.trail and self.trail[0][0] < time_s - self.trail_s:
            self.trail.popleft()

    def handle_key(self, key: int) -> None:
        """A key pressed in the window: M shows the inset's next ``local_map`` channel, 1-9 the channel of
        that number."""
        pg = self.pygame
        if key == pg.K_m:
            self.inset_channel += 1
        elif pg.K_1 <= key <= pg.K_9:
            self.inset_channel = key - pg.K_1

    def draw(self, axle_xy: Sequence[float], yaw_rad: float, wheelbase_m: float = 3.16,
             track_front_m: float = 1.32, track_rear_m: float = 1.31, road_wheel_rad: Sequence[float] = (0, 0, 0, 0),
             path_xy: np.ndarray | None = None, target_xy: Sequence[float] | None = None,
             hud: Sequence[str] = (), time_s: float | None = None, wheel_slip: Sequence[float] | None = None,
             wheel_sinkage_m: Sequence[float] | None = None, wheel_in_contact: Sequence[bool] | None = None,
             throttle_pct: float | None = None, brake_frac: float | None = None,
             steer_frac: float | None = None, goal_xy: Sequence[float] | None = None, goal_radius_m: float = 0.0,
             local_map: np.ndarray | None = None, map_channels: Sequence[str] = (),
             map_vehicle_rc: Sequence[float] | None = None) -> np.ndarray | None:
        """Draw one frame centred on the vehicle whose rear-axle midpoint is at ``axle_xy`` heading ``yaw_rad``;
        wheels 0 FL, 1 FR, 2 RL, 3 RR turned by ``road_wheel_rad``; ``path_xy`` (M, 2) world points;
        ``target_xy`` a marked point; ``hud`` text lines; ``time_s`` the simulation time (feeds the trail);
        per wheel ``wheel_slip`` (slip ratio), ``wheel_sinkage_m``, ``wheel_in_contact``; ``throttle_pct``
        (0-100), ``brake_frac`` (0-1 of the maximum pressure), ``steer_frac`` (-1 right lock .. 1 left lock);
        ``goal_xy`` a goal (a ``GOAL_COLOUR`` circle of ``goal_radius_m``, or an arrow at the frame's edge
        pointing to it with its distance when it is off screen); ``local_map`` (C, H, W) the policy's map,
        drawn as an inset (left) in its channel ``inset_channel`` (named by ``map_channels``, scaled by
        ``INSET_RANGES``), the vehicle marked at ``map_vehicle_rc`` (row, column). Panels whose inputs are
        None are left out."""
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

        self._update_trail(time_s, ax, ay)
        if len(self.trail) > 1:
            pts = np.array(self.trail)
            sx, sy = self._to_screen(pts[:, 1], pts[:, 2], cx, cy)
            pg.draw.lines(self.canvas, TRAIL_COLOUR, False, list(zip(sx.tolist(), sy.tolist(), strict=True)),
                          max(2, round(0.12 * self.ppm)))

        length = BODY_REAR_OVERHANG_M + wheelbase_m + BODY_FRONT_OVERHANG_M
        mid = -BODY_REAR_OVERHANG_M + 0.5 * length
        self._polygon(self._box(ax + mid * c, ay + mid * s, yaw_rad, length, BODY_WIDTH_M), cx, cy, BODY_COLOUR)
        wheels = ((wheelbase_m, 0.5 * track_front_m), (wheelbase_m, -0.5 * track_front_m),
                  (0.0, 0.5 * track_rear_m), (0.0, -0.5 * track_rear_m))
        contact = [True] * 4 if wheel_in_contact is None else [bool(v) for v in wheel_in_contact]
        for i, (fx, fy) in enumerate(wheels):
            wx, wy = ax + c * fx - s * fy, ay + s * fx + c * fy
            angle = float(road_wheel_rad[i]) if i < len(road_wheel_rad) else 0.0
            colour = (20, 20, 20) if wheel_slip is None else slip_colour(float(wheel_slip[i]), contact[i])
            self._polygon(self._box(wx, wy, yaw_rad + angle, TYRE_LENGTH_M, TYRE_WIDTH_M), cx, cy, colour,
                          outline=1)
        nose_x, nose_y = self._to_screen(ax + (wheelbase_m + BODY_FRONT_OVERHANG_M) * c,
                                         ay + (wheelbase_m + BODY_FRONT_OVERHANG_M) * s, cx, cy)
        pg.draw.circle(self.canvas, (255, 255, 255), (float(nose_x), float(nose_y)), max(2, round(0.15 * self.ppm)))

        if target_xy is not None:
            tx, ty = self._to_screen(float(target_xy[0]), float(target_xy[1]), cx, cy)
            pg.draw.circle(self.canvas, TARGET_COLOUR, (float(tx), float(ty)), max(3, round(0.3 * self.ppm)), 2)

        self.hud_lines = [str(t) for t in hud]  # what the frame's HUD shows
        if goal_xy is not None:
            self._draw_goal(float(goal_xy[0]), float(goal_xy[1]), float(goal_radius_m), ax, ay, cx, cy)

        self._draw_overlays(hud, wheel_slip, wheel_sinkage_m, contact, throttle_pct, brake_frac, steer_frac)
        self.inset_rect = None
        if local_map is not None:
            pedals = throttle_pct is not None or brake_frac is not None or steer_frac is not None
            bottom = self.height - 6 - (10 * max(6, self.height // 40) + 6 if pedals else 0)
            self._draw_inset(np.asarray(local_map, dtype=float), tuple(map_channels), map_vehicle_rc, bottom)

        if self.mode == "human":
            if pg.event.get(pg.QUIT):
                self.closed = True
            for event in pg.event.get(pg.KEYDOWN):
                self.handle_key(event.key)
            pg.event.pump()
            self.window.blit(self.canvas, (0, 0))
            pg.display.flip()
            self.clock.tick(self.fps)
            return None
        # read-only, backed by the bytes pygame returns (a copy into a fresh array costs more than the frame)
        return np.frombuffer(pg.image.tobytes(self.canvas, "RGB"), dtype=np.uint8).reshape(
            self.height, self.width, 3)

    def _draw_goal(self, gx_m: float, gy_m: float, radius_m: float, ax: float, ay: float, cx: float, cy: float) -> None:
        """The goal's circle when it is on screen, else an arrow at the frame's edge on the line from the
        frame's centre to the goal, labelled with the distance from the rear-axle midpoint."""
        pg = self.pygame
        W, H = self.width, self.height
        sx, sy = (float(v) for v in self._to_screen(gx_m, gy_m, cx, cy))
        r = max(5, round(radius_m * self.ppm))
        if -r < sx < W + r and -r < sy < H + r:
            pg.draw.circle(self.canvas, GOAL_COLOUR, (sx, sy), r, 3)
            pg.draw.line(self.canvas, GOAL_COLOUR, (sx - 6, sy), (sx + 6, sy), 3)
            pg.draw.line(self.canvas, GOAL_COLOUR, (sx, sy - 6), (sx, sy + 6), 3)
            return
        dx, dy = sx - W / 2, sy - H / 2
        norm = math.hypot(dx, dy)
        ux, uy = dx / norm, dy / norm
        edge = 30.0  # px between the arrow's tip and the frame's edge
        t = min((W / 2 - edge) / abs(ux) if ux else math.inf, (H / 2 - edge) / abs(uy) if uy else math.inf)
        tip = (W / 2 + ux * t, H / 2 + uy * t)
        base = (tip[0] - 18 * ux, tip[1] - 18 * uy)
        pg.draw.polygon(self.canvas, GOAL_COLOUR, [tip, (base[0] - 9 * uy, base[1] + 9 * ux),
                                                   (base[0] + 9 * uy, base[1] - 9 * ux)])
        pg.draw.line(self.canvas, GOAL_COLOUR, base, (tip[0] - 36 * ux, tip[1] - 36 * uy), 5)
        text = self.small_font.render(f"goal {math.hypot(gx_m - ax, gy_m - ay):.0f} m", True, GOAL_COLOUR)
        lx = min(max(tip[0] - 44 * ux - text.get_width() / 2, 2), W - text.get_width() - 2)
        ly = min(max(tip[1] - 44 * uy - text.get_height() / 2, 2), H - text.get_height() - 2)
        self._panel(round(lx) - 2, round(ly) - 1, text.get_width() + 4, text.get_height() + 2)
        self.canvas.blit(text, (round(lx), round(ly)))

    def _draw_inset(self, local_map: np.ndarray, channels: tuple[str, ...], vehicle_rc, bottom: int) -> None:
        """The ``inset_channel`` of ``local_map`` (C, rows, cols; row 0 ahead, column 0 left, as the policy
        sees it) in cividis between the channel's ``INSET_RANGES`` (its own range for other channels), with
        a ``INSET_BORDER`` frame, the vehicle as a triangle and a label, bottom-left above the pedal panel."""
        pg = self.pygame
        count, rows, cols = local_map.shape
        k = self.inset_channel % count
        name = channels[k] if k < len(channels) else f"channel {k}"
        values = np.nan_to_num(local_map[k])
        lo, hi = INSET_RANGES.get(name, (float(values.min()), float(values.max())))
        u = np.clip((values - lo) / (hi - lo), 0.0, 1.0) if hi > lo else np.zeros_like(values)
        anchors = np.linspace(0.0, 1.0, len(CIVIDIS))
        table = np.asarray(CIVIDIS, dtype=float)
        rgb = np.stack([np.interp(u, anchors, table[:, c]) for c in range(3)], axis=-1).round().astype(np.uint8)
        px = max(2, min(INSET_CELL_PX, (self.height // 4) // max(rows, cols)))
        image = pg.transform.scale(pg.surfarray.make_surface(np.ascontiguousarray(rgb.transpose(1, 0, 2))),
                                   (cols * px, rows * px))
        label = self.small_font.render(f"local map: {name} ({k + 1}/{count}, M)", True, HUD_TEXT)
        w = max(cols * px, label.get_width()) + 12
        h = rows * px + label.get_height() + 14
        x0, y0 = 6, bottom - h
        self._panel(x0, y0, w, h)
        self.canvas.blit(label, (x0 + 6, y0 + 4))
        rect = pg.Rect(x0 + 6, y0 + label.get_height() + 8, cols * px, rows * px)
        self.canvas.blit(image, rect.topleft)
        pg.draw.rect(self.canvas, INSET_BORDER, rect.inflate(2, 2), 1)
        if vehicle_rc is not None:
            vx, vy = rect.left + float(vehicle_rc[1]) * px, rect.top + float(vehicle_rc[0]) * px
            size = max(3.0, 0.8 * px)
            pg.draw.polygon(self.canvas, BODY_COLOUR, [(vx, vy - 1.5 * size), (vx - size, vy + size),
                                                       (vx + size, vy + size)])
        self.inset_rect = rect

    def _draw_overlays(self, hud, slip, sinkage, contact, throttle_pct, brake_frac, steer_frac) -> None:
        pg = self.pygame
        W, H = self.width, self.height
        if hud:
            lines = [self.font.render(str(t), True, HUD_TEXT) for t in hud]
            w = max(line.get_width() for line in lines) + 12
            h = sum(line.get_height() for line in lines) + 10
            self._panel(6, 6, w, h)
            y = 11
            for line in lines:
                self.canvas.blit(line, (12, y))
                y += line.get_height()
        if self.legend is not None:
            self.canvas.blit(self.legend, (W - self.legend.get_width() - 6, 6))
        bar = self._scale_bar
        self.canvas.blit(bar, ((W - bar.get_width()) // 2, H - bar.get_height() - 6))

        unit = max(6, H // 40)  # panel grid unit, px
        if throttle_pct is not None or brake_frac is not None or steer_frac is not None:
            bar_h = 6 * unit
            pw, ph = 7 * unit, bar_h + 4 * unit
            x0, y0 = 6, H - ph - 6
            self._panel(x0, y0, pw, ph)
            top = y0 + unit // 2
            for k, (label, value, colour) in enumerate((("T", throttle_pct, THROTTLE_COLOUR),
                                                        ("B", None if brake_frac is None else 100.0 * brake_frac,
                                                         BRAKE_COLOUR))):
                bx = x0 + unit + k * 3 * unit
                pg.draw.rect(self.canvas, (70, 70, 70), (bx, top, 2 * unit, bar_h))
                if value is not None and math.isfinite(value):
                    fill = round(bar_h * min(1.0, max(0.0, value / 100.0)))
                    pg.draw.rect(self.canvas, colour, (bx, top + bar_h - fill, 2 * unit, fill))
                text = self.small_font.render(label, True, HUD_TEXT)
                self.canvas.blit(text, (bx + unit - text.get_width() // 2, top + bar_h + 1))
            sy = y0 + ph - 1.5 * unit
            sw = pw - 2 * unit
            sx = x0 + unit
            pg.draw.rect(self.canvas, (70, 70, 70), (sx, sy, sw, unit))
            if steer_frac is not None and math.isfinite(steer_frac):
                f = max(-1.0, min(1.0, float(steer_frac)))
                mid = sx + sw / 2
                end = mid - f * sw / 2  # left lock (+) fills to the left
                pg.draw.rect(self.canvas, STEER_COLOUR, (min(mid, end), sy, max(1, abs(end - mid)), unit))
            pg.draw.line(self.canvas, HUD_TEXT, (sx + sw / 2, sy - 2), (sx + sw / 2, sy + unit + 1), 1)

        if slip is not None or sinkage is not None:
            block_w, block_h, bar_h = 2 * unit, 3 * unit, max(4, (3 * unit) // 4)
            text_h = self.small_font.get_height()
            row_h = block_h + 2 + bar_h + 1 + text_h
            pw, ph = 9 * unit, 2 * row_h + text_h + 14
            x0, y0 = W - pw - 6, H - ph - 6
            self._panel(x0, y0, pw, ph)
            xs = (x0 + unit, x0 + pw - unit - block_w)
            ys = (y0 + 4, y0 + 8 + row_h)
            pg.draw.line(self.canvas, (150, 150, 150), (x0 + pw // 2, ys[0]), (x0 + pw // 2, ys[1] + block_h), 1)
            for i in range(4):
                bx, by = xs[i % 2], ys[i // 2]
                pg.draw.line(self.canvas, (150, 150, 150), (bx + block_w // 2, by + block_h // 2),
                             (x0 + pw // 2, by + block_h // 2), 1)
                if slip is not None:
                    value = float(slip[i])
                    pg.draw.rect(self.canvas, slip_colour(value, contact[i]), (bx, by, block_w, block_h))
                    text = self.small_font.render(f"{round(100 * value):+d}%" if math.isfinite(value) else "nan",
                                                  True, HUD_TEXT)
                    self.canvas.blit(text, (bx + (block_w - text.get_width()) // 2, by + block_h + bar_h + 3))
                if sinkage is not None:
                    depth = float(sinkage[i])
                    frac = min(1.0, max(0.0, depth / SINKAGE_FULL_M)) if math.isfinite(depth) else 0.0
                    pg.draw.rect(self.canvas, (70, 70, 70), (bx, by + block_h + 2, block_w, bar_h))
                    pg.draw.rect(self.canvas, SINKAGE_COLOUR, (bx, by + block_h + 2, round(block_w * frac), bar_h))
            text = self.small_font.render("slip / sinkage", True, HUD_TEXT)
            self.canvas.blit(text, (x0 + (pw - text.get_width()) // 2, y0 + ph - text_h - 3))

    def close(self) -> None:
        if self.window is not None:
            self.pygame.display.quit()
            self.window = None
