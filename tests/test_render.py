"""The pygame top-down renderer, headless (``SDL_VIDEODRIVER=dummy``)."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"  # before pygame is imported anywhere

import subprocess  # noqa: E402
import sys  # noqa: E402

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import acres_gym  # noqa: E402,F401
from acres_gym.terrain import flat, rough, with_patches  # noqa: E402

CONFIG = {"randomization": {"terrain": {"kind": "rough", "size_m": 160.0, "cell_m": 1.0, "roughness_m": 0.05},
                            "patches": {"surfaces": {"grass": 1, "gravel": 1}, "scale_m": 10.0}},
          "task_options": {"spawn_xy_m": [0.0, 0.0]}}


@pytest.mark.parametrize("env_id", ["acres_gym/RangerSpeedTracking-v3", "acres_gym/RangerPathFollowing-v3"])
def test_rgb_array_frames_have_the_configured_shape_and_follow_the_vehicle(env_id):
    env = gymnasium.make(env_id, render_mode="rgb_array", config={**CONFIG, "render": {"width": 320, "height": 240}})
    env.reset(seed=0)
    first = env.render()
    assert first.shape == (240, 320, 3) and first.dtype == np.uint8
    action = np.array([0.0, 0.6], dtype=np.float32) if "Path" in env_id else np.array([0.6], dtype=np.float32)
    for _ in range(60):
        env.step(action)
    moved = env.render()
    assert moved.shape == first.shape
    assert np.mean(np.abs(moved.astype(int) - first.astype(int))) > 1.0  # the view moved over the terrain
    env.close()


def test_human_mode_opens_a_window_headless():
    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3", render_mode="human", config=CONFIG)
    env.reset(seed=0)  # renders a frame
    env.step(np.zeros(1, dtype=np.float32))
    assert env.render() is None
    # closing the window is noticed on the next frame
    import pygame

    assert not env.unwrapped.window_closed
    pygame.event.post(pygame.event.Event(pygame.QUIT))
    env.step(np.zeros(1, dtype=np.float32))
    assert env.unwrapped.window_closed
    env.close()


def test_vector_env_renders_one_frame_per_vehicle():
    venv = gymnasium.make_vec("acres_gym/RangerSpeedTracking-v3", num_envs=2, vectorization_mode="vector_entry_point",
                              render_mode="rgb_array", config={**CONFIG, "render": {"width": 64, "height": 48}})
    venv.reset(seed=0)
    frames = venv.render()
    assert len(frames) == 2 and all(f.shape == (48, 64, 3) for f in frames)
    assert not np.array_equal(frames[0], frames[1])  # two episodes, two terrains
    venv.step(np.full((2, 1), 0.8, dtype=np.float32))
    venv.render()
    # each vehicle keeps its own static layer (drawn once) and its own trail
    views = venv.unwrapped._render.views
    assert sorted(views) == [0, 1]
    for i, view in views.items():
        assert len(view.trail) == 2
        assert view.trail[-1][1] == pytest.approx(float(venv.unwrapped._batch.frame.axle_x_m[i]))
    w, h = views[0].background.get_size()
    from acres_gym.render import MAX_BACKGROUND_PIXELS

    assert w * h <= MAX_BACKGROUND_PIXELS // 2


def test_renderer_draws_surfaces_and_shading_directly():
    from acres_gym.render import TopDownRenderer, terrain_image

    ground = with_patches(rough(1, 0.2, size_m=60.0, cell_m=1.0), 2, {"grass": 1, "dry_sand": 1}, scale_m=8.0)
    image = terrain_image(ground)
    assert image.shape == (*ground.shape, 3)
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 50  # slope shading varies the colours
    r = TopDownRenderer("rgb_array", width=100, height=80, pixels_per_m=4.0)
    r.set_terrain(flat("dry_asphalt", size_m=60.0))
    a = r.draw(axle_xy=(0.0, 0.0), yaw_rad=0.0, hud=["speed 1.0"])
    b = r.draw(axle_xy=(0.0, 0.0), yaw_rad=np.pi / 2, road_wheel_rad=(0.5, 0.5, 0, 0), hud=["speed 1.0"])
    assert a.shape == (80, 100, 3) and not np.array_equal(a, b)
    with pytest.raises(ValueError, match="render mode"):
        TopDownRenderer("window")


def test_the_physics_does_not_import_the_renderer():
    code = ("import sys; from acres_gym.sim import RangerSim; s = RangerSim(1); s.step(6); "
            "import acres_gym.envs.tasks; e = acres_gym.envs.tasks.RangerSpeedTracking(); e.reset(seed=0); "
            "e.step(e.action_space.sample()); "
            "bad = [m for m in ('pygame', 'acres_gym.render') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hud_names_the_ground_under_the_wheels():
    from acres_gym.envs.ranger_env import RenderHelper

    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3", render_mode="rgb_array",
                         config={"randomization": {"terrain": {"surface": "soil", "roughness_m": 0.0},
                                                   "patches": None, "soil": {"names": ["dry_sand"]}}})
    env.reset(seed=0)
    for _ in range(20):
        env.step(np.zeros(1, dtype=np.float32))
    helper = RenderHelper(env.unwrapped._batch, "rgb_array", {})
    line = helper._ground_line(0, env.unwrapped.sim.state[0])
    # the episode's soil by name (not its table slot), and the tyres sunk into it
    assert line.startswith("dry_sand, sinkage ") and float(line.split()[2]) > 1.0
    helper.close()
    env.close()


# --- the debug view ----------------------------------------------------------------------------------


def test_contour_lines_of_a_plane_are_evenly_spaced_at_the_interval():
    from acres_gym.render import contour_interval, draw_contours
    from acres_gym.terrain import slope

    ground = slope(10.0, size_m=60.0, cell_m=1.0)  # rises 0.1 m per m along +x
    relief = float(np.ptp(ground.height_m))
    interval = contour_interval(ground.height_m)
    assert 8 <= relief / interval <= 25
    ppm = 8.0
    ny, nx = ground.shape
    pixels = np.full((round(nx * ppm), round(ny * ppm), 3), 200, dtype=np.uint8)
    draw_contours(ground, pixels, interval)
    dark = pixels[:, :, 0] < 200
    columns = np.flatnonzero(dark[:, ny * 4])  # one pixel row across the slope
    # lines run north-south: every pixel of a line column is dark
    assert dark[columns].all()
    # one line per crossed multiple of the interval, spaced interval / grade
    assert len(columns) == int(np.floor((ground.height_m.max() - ground.height_m.min()) / interval))
    spacing_px = interval / 0.1 * ppm
    np.testing.assert_allclose(np.diff(columns), spacing_px, atol=1.0)
    # every fifth level is darker
    assert len(np.unique(pixels[columns, ny * 4, 0])) == 2


def test_legend_names_each_surface_present_in_its_own_colour():
    from acres_gym.render import SURFACE_COLOURS, TopDownRenderer, surface_colour

    assert len(set(SURFACE_COLOURS.values())) == len(SURFACE_COLOURS)  # shipped surfaces and soils differ
    assert SURFACE_COLOURS["packed_dirt"] != SURFACE_COLOURS["sandy_loam"]
    # a surface the renderer has never heard of gets a stable colour of its own
    assert surface_colour("no_go_rock", False) == surface_colour("no_go_rock", False)
    assert surface_colour("no_go_rock", False) != surface_colour("no_go_water", False)
    ground = with_patches(flat("grass", size_m=60.0), 2, {"grass": 1, "packed_dirt": 1, "dry_sand": 1},
                          scale_m=8.0)
    r = TopDownRenderer("rgb_array", width=160, height=120)
    r.set_terrain(ground)
    names = [name for name, _ in r.legend_entries]
    present = {ground.surfaces.names[k] for k in np.unique(ground.surface_id)}
    assert set(names) == present and len(present) == 3
    assert len({colour for _, colour in r.legend_entries}) == 3
    r.set_terrain(ground, labels={"dry_sand": "the beach"})
    assert "the beach" in [name for name, _ in r.legend_entries]


def test_trail_keeps_the_last_seconds_and_restarts_with_time():
    from acres_gym.render import TopDownRenderer

    r = TopDownRenderer("rgb_array", width=64, height=48, trail_s=2.0)
    r.set_terrain(flat("dry_asphalt", size_m=60.0))
    for k in range(100):  # 5 s at 20 Hz along +x
        r.draw(axle_xy=(0.1 * k, 0.0), yaw_rad=0.0, time_s=0.05 * k)
    times = [p[0] for p in r.trail]
    assert times[-1] - times[0] == pytest.approx(2.0) and len(times) == 41
    r.draw(axle_xy=(0.0, 0.0), yaw_rad=0.0, time_s=0.0)  # a new episode
    assert len(r.trail) == 1


def test_wheel_slip_colours_and_the_pedal_bars_show_in_their_panels():
    from acres_gym.render import AIR_COLOUR, TopDownRenderer, slip_colour

    assert slip_colour(0.0) == (60, 200, 60)
    assert slip_colour(-0.3) == slip_colour(0.5) == (230, 40, 50)
    assert slip_colour(0.3, in_contact=False) == AIR_COLOUR
    r = TopDownRenderer("rgb_array", width=320, height=240)
    r.set_terrain(flat("dry_asphalt", size_m=60.0))
    common = dict(axle_xy=(0.0, 0.0), yaw_rad=0.0, wheel_slip=[0, 0, 0, 0], wheel_sinkage_m=[0, 0, 0, 0])
    idle = r.draw(**common, throttle_pct=0.0, brake_frac=0.0, steer_frac=0.0)
    pressed = r.draw(**common, throttle_pct=100.0, brake_frac=0.0, steer_frac=0.0)
    changed = np.argwhere(np.any(idle != pressed, axis=2))
    assert len(changed) > 100  # the throttle bar filled
    assert changed[:, 0].min() > 240 / 2 and changed[:, 1].max() < 320 / 3  # only in the bottom-left panel
    slipping = r.draw(**{**common, "wheel_slip": [0.5, 0.5, 0.5, 0.5]}, throttle_pct=0.0, brake_frac=0.0,
                      steer_frac=0.0)
    changed = np.argwhere(np.any(idle != slipping, axis=2))
    assert changed[:, 1].min() > 320 / 3  # wheels on the vehicle (centre) and the wheel panel (bottom right)
    red = np.all(slipping == np.array(slip_colour(0.5), dtype=np.uint8), axis=2)
    assert red[240 // 2:, 2 * 320 // 3:].sum() > 50  # the panel's four slip blocks


def test_a_large_terrain_at_a_fine_scale_is_drawn_from_a_coarser_background():
    from acres_gym.render import MAX_BACKGROUND_PIXELS, TopDownRenderer

    r = TopDownRenderer("rgb_array", width=120, height=90, pixels_per_m=40.0)
    r.set_terrain(rough(1, 0.3, size_m=300.0, cell_m=1.0))
    w, h = r.background.get_size()
    assert w * h <= MAX_BACKGROUND_PIXELS and not r._bg_direct
    frame = r.draw(axle_xy=(0.0, 0.0), yaw_rad=0.0)
    assert frame.shape == (90, 120, 3) and frame.std() > 1.0  # terrain, not the outside colour


# --- human mode without a display, video ---------------------------------------------------------------


def test_display_problem_reads_the_environment():
    from acres_gym.render import display_problem

    assert display_problem({}, "linux") is not None
    assert display_problem({"DISPLAY": ":0"}, "linux") is None
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux") is None
    assert display_problem({"SDL_VIDEODRIVER": "dummy"}, "linux") is None  # off screen on purpose
    assert display_problem({}, "darwin") is None and display_problem({}, "win32") is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the DISPLAY check applies to Linux")
@pytest.mark.parametrize("vector", [False, True])
def test_human_mode_without_a_display_says_what_to_do(monkeypatch, vector):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="render_mode='rgb_array'.*virtual display.*SDL_VIDEODRIVER=dummy"):
        if vector:
            gymnasium.make_vec("acres_gym/RangerSpeedTracking-v3", num_envs=2,
                               vectorization_mode="vector_entry_point", render_mode="human")
        else:
            gymnasium.make("acres_gym/RangerSpeedTracking-v3", render_mode="human")


def test_record_video_writes_one_frame_per_step(tmp_path):
    pytest.importorskip("moviepy")
    import imageio.v3 as iio
    from gymnasium.wrappers import RecordVideo

    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3", render_mode="rgb_array", max_episode_steps=30,
                         config={**CONFIG, "max_episode_s": 1.5, "render": {"width": 160, "height": 128}})
    env = RecordVideo(env, str(tmp_path / "videos"), name_prefix="drive", disable_logger=True)
    env.reset(seed=0)
    first = env.unwrapped.render()
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = env.step(np.array([0.5], dtype=np.float32))
        steps += 1
        done = terminated or truncated
    env.close()
    assert steps == 30
    videos = sorted((tmp_path / "videos").glob("*.mp4"))
    assert len(videos) == 1
    frames = np.stack(list(iio.imiter(videos[0])))
    assert frames.shape == (steps + 1, 128, 160, 3)  # the reset frame and one per step
    assert np.mean(np.abs(frames[0].astype(int) - first.astype(int))) < 10  # lossy, but the same picture


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 display names are a Linux matter")
def test_human_mode_with_an_unreachable_display_says_what_to_do():
    code = ("import gymnasium, acres_gym\n"
            "env = gymnasium.make('acres_gym/RangerSpeedTracking-v3', render_mode='human')\n"
            "try:\n    env.reset(seed=0)\nexcept RuntimeError as e:\n    print('ERROR', e)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SDL_VIDEODRIVER", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = ":98765"  # no such X server
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "ERROR render_mode='human' needs a window, but pygame cannot open a window" in out
    assert "rgb_array" in out and "xvfb-run" in out


def test_no_go_areas_are_tinted_and_named_in_the_legend():
    from acres_gym.render import NO_GO_COLOUR, NO_GO_LABEL, TopDownRenderer, terrain_image

    ground = flat("grass", size_m=40.0, cell_m=1.0)
    ny, nx = ground.shape
    yy, xx = np.mgrid[0:ny, 0:nx]
    disc = ((xx - nx // 2) ** 2 + (yy - ny // 2) ** 2 <= 36).astype(np.uint8)  # a 6 m disc in the middle
    plain_image, tinted = terrain_image(ground), terrain_image(ground, no_go=disc)
    inside, outside = disc.astype(bool), ~disc.astype(bool)
    np.testing.assert_array_equal(tinted[outside], plain_image[outside])
    towards = np.abs(tinted[inside].astype(int) - NO_GO_COLOUR).sum(axis=1)
    assert (towards < np.abs(plain_image[inside].astype(int) - NO_GO_COLOUR).sum(axis=1)).all()
    r = TopDownRenderer("rgb_array", width=160, height=120)
    r.set_terrain(ground, no_go=disc)
    assert (NO_GO_LABEL, NO_GO_COLOUR) in r.legend_entries
    r.set_terrain(ground, no_go=np.zeros_like(disc))  # none on this terrain: not in the legend
    assert NO_GO_LABEL not in [name for name, _ in r.legend_entries]
    with pytest.raises(ValueError, match="no_go has shape"):
        r.set_terrain(ground, no_go=disc[:-1])


def test_the_navigation_view_shows_its_no_go_areas():
    env = gymnasium.make("acres_gym/RangerOffroadNavigation-v2", render_mode="rgb_array").unwrapped
    env.reset(seed=3)
    env.render()
    task = env._batch.task
    legend = [name for name, _ in env._render.renderer.legend_entries]
    from acres_gym.render import NO_GO_LABEL

    assert task.no_go[0].any() and NO_GO_LABEL in legend  # this episode has no-go areas
    env.close()


# --- the navigation view: goal, local map inset, palette ----------------------------------------------------------

# Machado, Oliveira and Fernandes (2009), full severity, on linear sRGB
CVD = {"protan": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
       "deutan": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
       "tritan": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]}


def _lab(linear: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of linear sRGB rows."""
    xyz = linear @ np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                             [0.0193339, 0.1191920, 0.9503041]]).T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1)


def test_every_surface_colour_is_distinct_with_normal_and_colour_blind_vision():
    from acres_gym.render import GOAL_COLOUR, NO_GO_COLOUR, SURFACE_COLOURS
    from acres_gym.terrain import default_surfaces

    assert set(default_surfaces().names) <= set(SURFACE_COLOURS)  # every shipped surface and soil has its colour
    names = list(SURFACE_COLOURS)
    rgb = np.array([SURFACE_COLOURS[n] for n in names] + [NO_GO_COLOUR, GOAL_COLOUR], dtype=float) / 255.0
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    labels = names + ["no-go", "goal"]
    for vision, matrix in {"normal": np.eye(3), **CVD}.items():
        lab = _lab(np.clip(linear @ np.asarray(matrix).T, 0.0, 1.0))
        d = np.linalg.norm(lab[:, None] - lab[None], axis=-1) + np.eye(len(lab)) * 1e9
        i, j = np.unravel_index(np.argmin(d), d.shape)
        assert d[i, j] >= 12.0, (vision, labels[i], labels[j], d[i, j])  # CIELAB distance


def _renderer(**kwargs):
    from acres_gym.render import TopDownRenderer

    r = TopDownRenderer("rgb_array", width=320, height=240, pixels_per_m=4.0, **kwargs)
    r.set_terrain(flat("grass", size_m=200.0, cell_m=2.0))
    return r


def _goal_pixels(frame):
    from acres_gym.render import GOAL_COLOUR

    return np.argwhere((frame == np.array(GOAL_COLOUR, dtype=np.uint8)).all(axis=-1))  # (row, column)


def test_the_goal_is_a_circle_on_screen_and_an_arrow_at_the_edge_off_screen():
    r = _renderer()
    assert len(_goal_pixels(r.draw(axle_xy=(0.0, 0.0), yaw_rad=0.0))) == 0  # no goal, no marker
    near = _goal_pixels(r.draw(axle_xy=(0.0, 0.0), yaw_rad=0.0, goal_xy=(10.0, 10.0), goal_radius_m=3.0))
    # the vehicle (centre x + 1.58 m) sits at the middle: the goal is 4 px/m right and up of it
    centre = np.array([120 - 4 * 10.0, 160 + 4 * (10.0 - 1.58)])
    assert len(near) > 30 and np.abs(near.mean(axis=0) - centre).max() < 3.0
    far = _goal_pixels(r.draw(axle_xy=(0.0, 0.0), yaw_rad=0.0, goal_xy=(500.0, 0.0)))
    assert len(far) > 30
    assert far[:, 1].min() > 320 * 0.75 and np.abs(far[:, 0] - 120).max() < 20  # at the right edge, level
    below = _goal_pixels(r.draw(axle_xy=(0.0, 0.0), yaw_rad=0.0, goal_xy=(0.0, -400.0)))
    assert below[:, 0].min() > 240 * 0.65  # at the bottom edge


def test_the_inset_shows_the_local_map_channel_chosen_by_key():
    import pygame

    from acres_gym.render import INSET_BORDER

    r = _renderer()
    rows, cols = 16, 16
    local = np.zeros((2, rows, cols))
    local[0, :8] = 4.0  # height: the far half high
    local[1, :, :8] = 1.0  # no-go: the left half
    kwargs = dict(axle_xy=(0.0, 0.0), yaw_rad=0.0, local_map=local, map_channels=("height", "no_go"),
                  map_vehicle_rc=(12.0, 8.0))
    first = np.array(r.draw(**kwargs))
    box = r.inset_rect
    assert box is not None and box.width == cols * (box.width // cols) and box.right < 320 and box.bottom < 240
    border = first[box.top - 1, box.left - 1: box.right + 1]
    assert (border == np.array(INSET_BORDER, dtype=np.uint8)).all()
    inset = first[box.top:box.bottom, box.left:box.right].astype(int)
    cell = box.width // cols
    # height: the far (top) half bright, the near half darker; left and right alike away from the marker
    assert inset[2 * cell, 2 * cell].sum() > inset[10 * cell, 2 * cell].sum() + 100
    r.handle_key(pygame.K_m)
    second = np.array(r.draw(**kwargs))[box.top:box.bottom, box.left:box.right].astype(int)
    assert second[2 * cell, 2 * cell].sum() > second[2 * cell, 13 * cell].sum() + 100  # no-go: the left half
    r.handle_key(pygame.K_1)
    np.testing.assert_array_equal(np.array(r.draw(**kwargs))[box.top:box.bottom, box.left:box.right], inset)
    assert len(_goal_pixels(first)) == 0


def test_the_navigation_frame_shows_the_goal_the_inset_and_the_tasks_hud():
    env = gymnasium.make("acres_gym/RangerOffroadNavigation-v2", render_mode="rgb_array").unwrapped
    env.reset(seed=3)
    frame = env.render()
    view = env._render.renderer
    assert len(_goal_pixels(frame)) > 30  # the goal's circle, or the arrow to it
    box = view.inset_rect
    c, rows, cols = env._batch.task.map_shape
    assert box is not None and (box.width, box.height) == (cols * (box.width // cols), rows * (box.height // rows))
    assert np.ptp(frame[box.top:box.bottom, box.left:box.right].astype(int)) > 0
    hud = " | ".join(view.hud_lines)
    assert "goal" in hud and " m" in hud and "target" not in hud and "lat " not in hud
    env.close()
    path = gymnasium.make("acres_gym/RangerPathFollowing-v3", render_mode="rgb_array", config=CONFIG).unwrapped
    path.reset(seed=0)
    path.render()
    view = path._render.renderer
    assert view.inset_rect is None and any(line.startswith("target") for line in view.hud_lines)
    path.close()
