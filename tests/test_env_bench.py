"""The environment benchmark runs to the end and prints every row of its table (no timing checks: figures
depend on the machine)."""

from __future__ import annotations

import re

import numba

from acres_gym.envs import bench

ROWS = ["physics ceiling N = 1", "physics ceiling N = 16", "physics ceiling N = 64", "physics N = 64 on one thread",
        "single env, with resets", "single env, steps only", "vector env N = 16, with resets",
        "vector env N = 16, steps only", "vector env N = 64, with resets", "vector env N = 64, steps only"]


def test_bench_prints_every_figure_against_its_ceiling(capsys):
    threads = numba.get_num_threads()
    try:  # (the command sets the process's thread count: the tests after this one keep theirs)
        bench.main(["--seconds", "0.3", "--rounds", "1", "--threads", "1", "--skip", "resets", "navigation"])
    finally:
        numba.set_num_threads(threads)
    out = capsys.readouterr().out
    for name in ROWS:
        line = next((row for row in out.splitlines() if row.startswith(name)), None)
        assert line is not None, name
        rate, ratio = (float(x) for x in line[len(name):].split())
        assert rate > 0.0 and ratio > 0.0
        if name.startswith("physics ceiling"):
            assert ratio == 1.0
    assert re.search(r"reset back to back, median / p95 +[0-9.]+ / [0-9.]+ ms \(30 resets\)", out)
    assert "Numba threads 1" in out
    assert "kernel the physics ceilings ran at the end (RangerSim.kernel_choice): N = 16 one thread, N = 64 one " \
        "thread" in out  # (one Numba thread: no parallel kernel)


def test_the_physics_ceiling_steps_from_the_environments_states_and_leaves_them_as_they_were(monkeypatch):
    """The ceiling's loop goes back to the vehicles' states every PHYSICS_RESTORE_STEPS calls, so it times
    the physics of the states the environment steps (not of vehicles that drove off their terrain), and the
    environment continues from the states it had."""
    import gymnasium
    import numpy as np

    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3").unwrapped
    env.reset(seed=4)
    for _ in range(5):
        env.step(np.array([0.8], dtype=np.float32))  # pedal: throttle, so the vehicle moves
    sim = env._batch.sim
    before = sim.state_plain.copy(), sim.commands_plain.copy()
    positions = []
    real_step = sim.step

    def step(ticks):
        real_step(ticks)
        positions.append(sim.state_plain["position_m"][0, 0])

    monkeypatch.setattr(sim, "step", step)
    case = bench.PhysicsCase("ceiling", sim, env._batch.ticks_per_step)
    case.run(0.5)
    n = bench.PHYSICS_RESTORE_STEPS
    assert len(positions) > 2 * n
    assert case.vehicle_steps == len(positions)
    assert positions[n] == positions[0] and positions[2 * n] == positions[0]  # back to the start, then stepped
    assert positions[n - 1] != positions[0]
    assert np.array_equal(sim.state_plain, before[0]) and np.array_equal(sim.commands_plain, before[1])
    env.close()
