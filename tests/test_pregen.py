"""Episodes prepared in the background (``acres_gym.envs.pregen``): the same episodes as drawn at the reset,
whatever was prepared before and in any process, with a bounded number held."""

from __future__ import annotations

import gc
import hashlib
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import acres_gym  # noqa: F401
from acres_gym.envs.pregen import Pregenerator

IDS = ["acres_gym/RangerSpeedTracking-v3", "acres_gym/RangerPathFollowing-v3", "acres_gym/RangerHillClimb-v2",
       "acres_gym/RangerOffroadNavigation-v2"]


def _episode_digest(env) -> str:
    """Digest of the present episode's terrain, vehicle record and observation."""
    b = env.unwrapped._batch
    h = hashlib.sha256()
    for arr in (b.sim.terrain.height_m, b.sim.terrain.surface_id, b.sim.terrain.wetness, b.sim.params,
                b.sim.surface_records):
        h.update(np.ascontiguousarray(arr).tobytes())
    for value in b.observe().values():
        h.update(value.tobytes())
    return h.hexdigest()


def _episodes(env_id: str, pending: int, episodes: int = 3) -> list[str]:
    """Digests of the episodes after ``reset(seed=3)`` and then ``reset()`` without a seed."""
    env = gymnasium.make(env_id)
    env.unwrapped.pregen.max_pending = pending
    env.reset(seed=3)
    digests = [_episode_digest(env)]
    env.action_space.seed(0)
    for _ in range(episodes - 1):
        for _ in range(5):
            env.step(env.action_space.sample())
        env.reset()
        digests.append(_episode_digest(env))
    hits = env.unwrapped.pregen.hits
    env.close()
    return digests, hits


@pytest.mark.parametrize("env_id", IDS)
def test_prepared_episodes_equal_the_ones_drawn_at_the_reset(env_id):
    prepared, hits = _episodes(env_id, pending=4)
    drawn, no_hits = _episodes(env_id, pending=0)
    assert hits == 2 and no_hits == 0
    assert prepared == drawn
    assert len(set(drawn)) == len(drawn)  # the episodes differ


def test_an_explicit_seed_ignores_what_was_prepared_for_another():
    env = gymnasium.make(IDS[1])
    env.reset(seed=3)  # prepares the episode after it
    env.reset(seed=8)  # another seed: drawn now
    assert env.unwrapped.pregen.misses == 2
    fresh = gymnasium.make(IDS[1])
    fresh.unwrapped.pregen.max_pending = 0
    fresh.reset(seed=8)
    assert _episode_digest(env) == _episode_digest(fresh)


def test_episodes_are_the_same_in_another_process():
    here = str(Path(__file__).parent)
    code = (f"import sys; sys.path.insert(0, {here!r}); from test_pregen import _episodes; "
            f"print(_episodes({IDS[2]!r}, pending=0)[0][-1])")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()[-1]
    assert other == _episodes(IDS[2], pending=4)[0][-1]


def test_vector_env_autoreset_episodes_do_not_depend_on_pre_generation():
    def run(pending):
        venv = gymnasium.make_vec(IDS[0], num_envs=3, vectorization_mode="vector_entry_point",
                                  config={"max_episode_s": 1.0})
        venv.unwrapped.pregen.max_pending = pending
        obs, _ = venv.reset(seed=5)
        rng = np.random.default_rng(0)
        out = [obs["vehicle_velocity"].copy()]
        for _ in range(45):  # two autoresets of every vehicle
            obs, reward, *_ = venv.step(rng.uniform(-1, 1, (3, *venv.single_action_space.shape)).astype(np.float32))
            out += [obs["lateral_error"].copy(), obs["wheel_speeds"].copy(), reward.copy()]
        hits = venv.unwrapped.pregen.hits
        venv.close()
        return out, hits

    prepared, hits = run(64)
    drawn, _ = run(0)
    assert hits >= 6
    assert all(np.array_equal(a, b) for a, b in zip(prepared, drawn, strict=True))


def test_pregenerator_holds_at_most_max_pending_and_matches_seeds():
    built = []

    def build(slot, seed):
        built.append((slot, seed))
        return slot * 1000 + seed

    pre = Pregenerator(build, max_pending=2)
    for slot in range(5):
        pre.submit(slot, 7)
    assert pre.pending == 2
    assert pre.take(0, 8) is None  # another seed: dropped
    assert pre.take(1, 7) == 1007
    assert pre.take(4, 7) is None  # never held
    assert pre.pending == 0
    pre.submit(3, 1)
    pre.submit(3, 2)  # replaces the slot's first
    assert pre.pending == 1 and pre.take(3, 2) == 3002
    pre.close()
    with pytest.raises(ValueError, match="max_pending"):
        Pregenerator(build, max_pending=-1)


def test_an_env_with_prepared_episodes_pickles():
    env = gymnasium.make(IDS[0])
    env.reset(seed=1)
    copy = pickle.loads(pickle.dumps(env.unwrapped))
    assert copy.pregen.pending == 0
    copy.reset()
    env.close()


def _pregen_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "acres-gym-pregen"]


def test_the_worker_is_a_daemon_thread_that_ends_with_close_or_collection():
    before = set(_pregen_threads())
    gate = threading.Event()
    pre = Pregenerator(lambda slot, seed: gate.wait(5.0) and seed)
    pre.submit(0, 1)
    (worker,) = set(_pregen_threads()) - before
    assert worker.daemon  # the process exits without waiting for queued episodes
    gate.set()
    assert pre.take(0, 1) == 1
    pre.close()
    worker.join(5.0)
    assert not worker.is_alive()
    pre.submit(0, 2)  # a new worker after close
    (second,) = set(_pregen_threads()) - before
    assert pre.take(0, 2) == 2
    del pre
    gc.collect()
    second.join(5.0)
    assert not second.is_alive()


def test_close_works_while_the_interpreter_shuts_down(monkeypatch):
    """An environment collected at interpreter shutdown closes its pre-generator after the module's globals
    (``os`` among them) are set to None: the close must not need them."""
    from acres_gym.envs import pregen

    pre = Pregenerator(lambda slot, seed: seed)
    pre.submit(0, 1)
    assert pre.take(0, 1) == 1
    pre.submit(0, 2)
    monkeypatch.setattr(pregen, "os", None)
    pre.close()  # raised AttributeError: 'NoneType' object has no attribute 'getpid'
    assert pre.pending == 0


def _no_draw_queued() -> bool:
    """Waits (up to 10 s) until no draw of any worker (other tests' environments included) is queued or running."""
    import time

    from acres_gym.envs.pregen import _FastSwitching

    for _ in range(2000):
        if _FastSwitching.running == 0:
            return True
        time.sleep(0.005)
    return False


def test_a_draw_runs_with_the_short_switch_interval_and_puts_the_default_back():
    """While the worker draws, the interpreter switches threads every SWITCH_INTERVAL_S (so a stepping loop
    cannot starve the draw); afterwards the interval is the caller's again."""
    from acres_gym.envs.pregen import SWITCH_INTERVAL_S, Pregenerator

    assert _no_draw_queued()
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.004)
    try:
        seen = []
        pregen = Pregenerator(lambda slot, seed: seen.append(sys.getswitchinterval()) or (slot, seed))
        pregen.submit(0, 11)
        assert pregen.take(0, 11) == (0, 11)
        pregen.close()
        assert seen == [pytest.approx(SWITCH_INTERVAL_S, rel=1e-6)]
        assert _no_draw_queued()
        assert sys.getswitchinterval() == 0.004
    finally:
        sys.setswitchinterval(old)


def test_the_short_interval_holds_from_the_submit_and_cancelled_draws_give_it_back():
    """The interval is short as soon as a draw is queued (the worker then wakes to it within the interval), and
    a queued draw that a new submit replaces still counts out, so the caller's interval comes back."""
    from acres_gym.envs.pregen import SWITCH_INTERVAL_S, Pregenerator

    assert _no_draw_queued()
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.004)
    release = threading.Event()
    try:
        pregen = Pregenerator(lambda slot, seed: release.wait(10.0) and (slot, seed))
        pregen.submit(0, 1)
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S, rel=1e-6)
        pregen.submit(1, 2)  # queued behind the first
        pregen.submit(1, 3)  # replaces it: the queued draw is cancelled
        release.set()
        assert pregen.take(0, 1) == (0, 1)
        assert pregen.take(1, 3) == (1, 3)
        pregen.close()
        assert _no_draw_queued()
        assert sys.getswitchinterval() == 0.004
    finally:
        release.set()
        sys.setswitchinterval(old)


def _until(condition, timeout_s: float = 10.0) -> None:
    """Poll ``condition`` (without blocking on a draw) until it holds."""
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.001)


def test_beside_runs_in_the_side_thread_for_a_caller_and_at_once_in_a_batch_worker():
    """A draw a reset waits for runs its patches in the side thread; a background draw of a batch of several
    vehicles runs them in the worker, at once (the future is done when ``beside`` returns), errors included;
    a single vehicle's worker keeps the side thread."""
    from acres_gym.envs.pregen import beside

    assert beside(lambda: threading.current_thread().name).result().startswith("acres-gym-beside")

    def build(slot, seed):
        part = beside(lambda: threading.current_thread().name)
        failing = beside(lambda: 1 / 0)
        return part.done(), part.result(), failing.done(), type(failing.exception())

    pre = Pregenerator(build, max_pending=1, parts_inline=True)
    pre.submit(0, 1)
    _until(lambda: pre._pending[0][1].done())  # nobody blocks on the draw meanwhile
    done, name, failing_done, error = pre.take(0, 1)
    pre.close()
    assert done and name == "acres-gym-pregen" and failing_done and error is ZeroDivisionError
    pre = Pregenerator(build, max_pending=1)
    pre.submit(0, 1)
    _, name, _, error = pre.take(0, 1)
    pre.close()
    assert name.startswith("acres-gym-beside") and error is ZeroDivisionError
    single = gymnasium.make(IDS[0]).unwrapped
    vector = gymnasium.make_vec(IDS[0], num_envs=2, vectorization_mode="vector_entry_point")
    assert not single.pregen.parts_inline and vector.unwrapped.pregen.parts_inline
    single.close()
    vector.close()


def test_while_a_draw_is_queued_or_runs_a_batch_steps_its_physics_on_the_calling_thread():
    """``drawing()`` is true from a submit until its draw is done; a vector env steps with
    ``RangerSim.step(serial=True)`` meanwhile, and on Numba's threads otherwise."""
    from acres_gym.envs.pregen import drawing

    vector = gymnasium.make_vec(IDS[0], num_envs=16, vectorization_mode="vector_entry_point")
    vector.reset(seed=4)
    vector.unwrapped.pregen.wait()
    sim = vector.unwrapped._batch.sim
    calls = []
    step = sim.step
    sim.step = lambda n_ticks, serial=False: calls.append(serial) or step(n_ticks, serial=serial)
    actions = np.zeros((16, *vector.single_action_space.shape), dtype=np.float32)
    release = threading.Event()
    try:
        assert _no_draw_queued() and not drawing()
        vector.step(actions)
        pregen = Pregenerator(lambda slot, seed: release.wait(10.0) and (slot, seed))
        pregen.submit(0, 1)
        assert drawing()
        vector.step(actions)
        release.set()
        assert pregen.take(0, 1) == (0, 1)
        pregen.close()
        assert not drawing()
        vector.step(actions)
    finally:
        release.set()
        vector.close()
    assert calls == [False, True, False]


def test_a_batch_worker_hands_the_parts_to_the_side_thread_while_a_caller_blocks_on_a_draw():
    """``take`` of a draw in progress (and ``wait``) counts as a blocked caller: the worker's next parts run in
    the side thread, so both cores serve the draws; the count is back to 0 afterwards."""
    from acres_gym.envs import pregen

    def build(slot, seed):
        _until(lambda: pregen._Waiting.count > 0)  # the caller is blocked in take / wait
        return beside_name()

    def beside_name():
        return pregen.beside(lambda: threading.current_thread().name).result()

    pre = Pregenerator(build, max_pending=2, parts_inline=True)
    pre.submit(0, 1)
    assert pre.take(0, 1).startswith("acres-gym-beside")
    pre.submit(1, 2)
    pre.wait()
    assert pre.take(1, 2).startswith("acres-gym-beside")
    pre.close()
    assert pregen._Waiting.count == 0
