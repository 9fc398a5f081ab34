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


@pytest.mark.parametrize("env_id", ["acres_gym/RangerSpeedTracking-v1", "acres_gym/RangerPathFollowing-v1"])
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
    env = gymnasium.make("acres_gym/RangerSpeedTracking-v1", render_mode="human", config=CONFIG)
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
    venv = gymnasium.make_vec("acres_gym/RangerSpeedTracking-v1", num_envs=2, vectorization_mode="vector_entry_point",
                              render_mode="rgb_array", config={**CONFIG, "render": {"width": 64, "height": 48}})
    venv.reset(seed=0)
    frames = venv.render()
    assert len(frames) == 2 and all(f.shape == (48, 64, 3) for f in frames)
    assert not np.array_equal(frames[0], frames[1])  # two episodes, two terrains


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

    env = gymnasium.make("acres_gym/RangerSpeedTracking-v1", render_mode="rgb_array",
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
