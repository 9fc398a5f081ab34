"""Golden outputs: what the model and the environments produce, bit for bit, for fixed inputs.

A refactor or a speed-up must leave these unchanged. They are:

- ``acres-replay`` of every command log under ``configs/replay`` (between them every steering, pedal and ULC
  mode, gear events accepted and refused, the AWD switch, driver inputs, timeouts and preemption), as the
  SHA-256 of the output CSV (model values at full precision);
- 2,000 control steps of every registered environment with a fixed reset seed and seeded random actions
  (observations, rewards, ``terminated`` / ``truncated`` and the infos, digested step by step, with a digest
  every 100 steps so a difference is located);
- the validation table's measured values.

An intended change of behaviour rewrites the file in its own commit, saying why:
``ACRES_GYM_WRITE_GOLDEN=1 python -m pytest tests/test_golden.py``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.paths import config_path
from acres_gym.tools import replay, validate

GOLDEN = Path(__file__).parent / "golden" / "outputs.json"
WRITE = os.environ.get("ACRES_GYM_WRITE_GOLDEN", "") not in ("", "0")
ENV_STEPS = 2000
CHECKPOINT_EVERY = 100
RESET_SEED = 11
ACTION_SEED = 5

pytestmark = pytest.mark.slow


def _env_ids() -> list[str]:
    return sorted(i for i, spec in gymnasium.registry.items() if i.startswith("acres_gym/") and spec.entry_point)


def _feed(h, value) -> None:
    """Feeds a value (nested dicts, lists, arrays, numbers, strings) into a hash, independent of dict order."""
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            h.update(str(key).encode())
            _feed(h, value[key])
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for item in value:
            _feed(h, item)
        h.update(b"]")
    elif isinstance(value, str):
        h.update(value.encode())
    elif value is None:
        h.update(b"None")
    else:
        array = np.asarray(value)
        if array.dtype == object:
            _feed(h, array.tolist())
        else:
            h.update(str(array.dtype).encode())
            h.update(np.ascontiguousarray(array).tobytes())


def env_digests(env_id: str, steps: int = ENV_STEPS) -> list[str]:
    """Digests after every ``CHECKPOINT_EVERY`` steps of a seeded rollout (the last one covers all)."""
    env = gymnasium.make(env_id)
    env.action_space.seed(ACTION_SEED)
    h = hashlib.sha256()
    obs, info = env.reset(seed=RESET_SEED)
    _feed(h, (obs, info))
    digests = []
    for step in range(1, steps + 1):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        _feed(h, (obs, float(reward), bool(terminated), bool(truncated), info))
        if terminated or truncated:
            obs, info = env.reset()
            _feed(h, (obs, info))
        if step % CHECKPOINT_EVERY == 0:
            digests.append(h.hexdigest()[:16])
    env.close()
    return digests


def replay_digest(log: Path, tmp_path: Path) -> str:
    out = tmp_path / f"{log.stem}.out.csv"
    assert replay.main([str(log), "--out", str(out)]) == 0
    return hashlib.sha256(out.read_bytes()).hexdigest()


def current(tmp_path: Path) -> dict:
    logs = sorted(config_path("replay").glob("*.csv"))
    rows = validate.run(stream=io.StringIO())
    return {
        "replay": {log.name: replay_digest(log, tmp_path) for log in logs},
        "envs": {env_id: env_digests(env_id) for env_id in _env_ids()},
        "validation": {row["name"]: repr(row["measured"]) for row in rows},
    }


def test_outputs_are_bit_identical_to_the_golden_record(tmp_path):
    got = current(tmp_path)
    if WRITE:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert GOLDEN.is_file(), f"{GOLDEN} is missing: record it with ACRES_GYM_WRITE_GOLDEN=1"
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert len(want["replay"]) >= 4 and want["envs"] and want["validation"]
    assert got["replay"] == want["replay"]
    assert sorted(got["envs"]) == sorted(want["envs"]), "the registered ids changed: record the golden outputs"
    for env_id, digests in want["envs"].items():
        first = next((k for k, (a, b) in enumerate(zip(got["envs"][env_id], digests, strict=False)) if a != b), None)
        assert first is None, (f"{env_id}: outputs differ from the golden record within steps "
                               f"{first * CHECKPOINT_EVERY + 1}..{(first + 1) * CHECKPOINT_EVERY}")
    assert got["validation"] == want["validation"]


# numpy's SIMD loops above the x86-64-v2 baseline, and a BLAS kernel other than the one the CPU would pick
PINNED_DISPATCH = {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX2 FMA3 AVX512F AVX512_SKX AVX512_ICL AVX512_SPR",
                   "OPENBLAS_CORETYPE": "Haswell"}
CROSS_STEPS = 400
_CROSS_SCRIPT = f"""
import io, json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import test_golden as g
from acres_gym.tools import validate
rows = validate.run(stream=io.StringIO())
print(json.dumps({{"envs": {{e: g.env_digests(e, {CROSS_STEPS}) for e in g._env_ids()}},
                  "validation": {{r["name"]: repr(r["measured"]) for r in rows}}}}))
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="pins x86-64 numpy and OpenBLAS dispatch")
def test_outputs_do_not_depend_on_the_cpus_simd_or_blas_kernels():
    """Episodes and validation figures are the same with numpy limited to its x86-64-v2 loops and OpenBLAS on
    its Haswell kernels as with what this CPU picks (AVX-512 loops and another BLAS kernel where it has them):
    values that feed an episode go through the C library and plain sums (``acres_gym.libm``), so a seed gives
    the same episode on other machines, and the golden record holds on them."""
    env = {**os.environ, **PINNED_DISPATCH}
    out = subprocess.run([sys.executable, "-c", _CROSS_SCRIPT], env=env, capture_output=True, text=True, check=True)
    pinned = json.loads(out.stdout.strip().splitlines()[-1])
    native = {e: env_digests(e, CROSS_STEPS) for e in _env_ids()}
    assert pinned["envs"] == native
    assert pinned["validation"] == {r["name"]: repr(r["measured"]) for r in validate.run(stream=io.StringIO())}
