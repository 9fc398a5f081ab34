"""RangerHillClimb-v2 draws only climbable hills: by the model's own trafficability
(``acres_gym.envs.tasks.trafficability.grade_limit``, L range, AWD), every surface under the episode's line
of travel climbs the episode's grade with a margin, for the vehicle as loaded, at the wetness of its patch;
and on the hardest of those episodes full throttle in L, and the ULC baseline, do climb."""

from __future__ import annotations

import functools

import gymnasium
import numpy as np
import pytest

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.constants import DRIVE_ALL_WHEEL, GEAR_LOW
from acres_gym.envs.randomization import live_surface_records
from acres_gym.envs.tasks.trafficability import grade_limit

HILL = "acres_gym/RangerHillClimb-v2"
EPISODES = 200
# the episode's grade is at most this share of the climbable grade of every surface on its line: the rest
# is left for the roughness (its local slopes add up to about 1.3 % over 3 m) and for the ULC, which
# launches with about 80 % of the full-throttle torque
CLIMB_MARGIN = 0.8
LINE_X_M = (-105.0, 105.0)  # spawn at x = -100 m; 30 s at the profile's 6 m/s top is 180 m further
LINE_HALF_WIDTH_M = 1.0  # the wheel tracks are 0.65 m either side of the line


@functools.cache
def episode_ratios() -> dict[int, float]:
    """Reset seed -> its grade / the least climbable grade (L, AWD) of the surfaces under its line."""
    env = gymnasium.make(HILL).unwrapped
    batch = env._batch
    ratios = {}
    for seed in range(EPISODES):
        _obs, info = env.reset(seed=seed)  # writes the episode's soil row into the surface table
        draw = batch.prepare(0, info["episode_seed"]).draw  # the same draw again, with its terrain
        records = live_surface_records(batch.sim)
        t = draw.terrain
        xs = np.arange(t.height_m.shape[1]) * t.cell_m + t.origin_x_m
        ys = np.arange(t.height_m.shape[0]) * t.cell_m + t.origin_y_m
        cols = (xs >= LINE_X_M[0]) & (xs <= LINE_X_M[1])
        rows = np.abs(ys) <= LINE_HALF_WIDTH_M
        surfaces = t.surface_id[np.ix_(rows, cols)].ravel()
        wetness = t.wetness[np.ix_(rows, cols)].ravel()
        params = draw.params[0]
        least = min(grade_limit(params, records[int(s)], float(w), GEAR_LOW, DRIVE_ALL_WHEEL, False)
                    for s, w in set(zip(surfaces.tolist(), wetness.tolist(), strict=True)))
        ratios[seed] = draw.summary["grade_pct"] / 100.0 / least
    env.close()
    return ratios


def test_every_drawn_hill_climbs_in_low_range_with_a_margin():
    ratios = episode_ratios()
    worst = max(ratios, key=ratios.get)
    assert ratios[worst] <= CLIMB_MARGIN, (f"episode seed {worst}: its grade is {ratios[worst]:.2f} of the "
                                           f"climbable grade in L / AWD (at most {CLIMB_MARGIN} allowed)")


def _hardest(k: int) -> list[int]:
    ratios = episode_ratios()
    return sorted(ratios, key=ratios.get)[-k:]


@pytest.mark.slow
def test_full_throttle_in_low_range_climbs_the_hardest_hills():
    env = gymnasium.make(HILL)
    for seed in _hardest(3):
        env.reset(seed=seed)
        x0 = float(env.unwrapped.sim.state.position_m[0, 0])
        for _ in range(200):  # 10 s: the range request shifts to L at rest, then full throttle
            _obs, _r, terminated, _truncated, info = env.step(np.array([1.0, -1.0], np.float32))
            assert not terminated, f"episode seed {seed}: ended early ({info})"
        state = env.unwrapped.sim.state
        assert int(state.gear[0]) == GEAR_LOW
        climbed = float(state.position_m[0, 0]) - x0
        assert climbed > 20.0, f"episode seed {seed}: {climbed:.1f} m in 10 s"
    env.close()


@pytest.mark.slow
def test_the_ulc_baseline_climbs_the_hardest_hills():
    from acres_gym.agents.evaluate import baseline_entry, evaluate

    factory, mode = baseline_entry("ulc_pure_pursuit")
    for seed in _hardest(3):
        row = evaluate(factory, HILL, episodes=1, seed=seed, action_mode=mode)["per_episode"][0]
        assert row["failed"] == 0.0 and row["early_end"] == 0.0, f"episode seed {seed}: {row}"
