"""Draw the documentation's frame of the debug view (docs/debug_view.png) and time the renderer at 640 x 480.

    python docs/render_frame.py [--out docs/debug_view.png] [--frames 300]

Drives acres_gym/RangerPathFollowing-v3 on hilly ground with surface patches by the vehicle's ULC with
pure-pursuit steering for 12 s, saves the frame, then prints the median and 90th percentile wall time
(and the median CPU time of the process, less sensitive to a loaded machine) of
``env.render()`` (the HUD assembled from the environment plus the drawing), of the drawing alone
(``TopDownRenderer.draw``) and of the static layer (``set_terrain``, once per episode).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

import acres_gym  # noqa: E402,F401
from acres_gym.agents.baselines import baseline_action_mode, make_baseline  # noqa: E402

CONFIG = {"action_mode": baseline_action_mode("ulc_pure_pursuit"),
          "randomization": {"terrain": {"roughness_m": 0.8, "hill_wavelength_m": 30.0},
                            "patches": {"surfaces": {"grass": 3, "gravel": 1, "packed_dirt": 1, "soil": 2},
                                        "scale_m": 12.0}}}


def stats(times: list[tuple[float, float]]) -> str:
    wall, cpu = (1e3 * np.asarray(t) for t in zip(*times, strict=True))
    return (f"wall median {np.median(wall):.2f} ms (90th percentile {np.percentile(wall, 90):.2f} ms), "
            f"CPU median {np.median(cpu):.2f} ms")


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    now = clock()
    return now[0] - start[0], now[1] - start[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/debug_view.png")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    import pygame

    venv = gymnasium.make_vec("acres_gym/RangerPathFollowing-v3", num_envs=1, vectorization_mode="vector_entry_point",
                              render_mode="rgb_array", config=CONFIG, autoreset_mode="Disabled")
    policy = make_baseline("ulc_pure_pursuit", venv)
    obs, _ = venv.reset(seed=args.seed)
    venv.render()
    for _ in range(240):  # every step drawn: the trail is made of the frames drawn
        obs, *_ = venv.step(policy(obs))
        venv.render()
    frame = venv.render()[0]
    pygame.image.save(pygame.surfarray.make_surface(np.ascontiguousarray(frame.transpose(1, 0, 2))), args.out)
    print(f"saved {args.out}")

    env_times, draw_times = [], []
    helper = venv.unwrapped._render
    renderer = helper.renderer
    original = renderer.draw

    def timed_draw(*a, **k):
        t = clock()
        out = original(*a, **k)
        draw_times.append(since(t))
        return out

    renderer.draw = timed_draw
    for _ in range(args.frames):
        obs, *_ = venv.step(policy(obs))
        t = clock()
        venv.render()
        env_times.append(since(t))
    terrain = venv.unwrapped.sim.terrain.terrain(0)
    layer_times = []
    for _ in range(5):
        t = clock()
        renderer.set_terrain(terrain)
        layer_times.append(since(t))
    print(f"640 x 480 at {renderer.ppm:g} px/m, {args.frames} frames")
    print(f"env.render():            {stats(env_times)}")
    print(f"TopDownRenderer.draw:    {stats(draw_times)}")
    print(f"set_terrain (300 m map): {stats(layer_times)}")
    venv.close()


if __name__ == "__main__":
    main()
