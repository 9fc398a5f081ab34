"""The package works when installed, not only in the repository.

Builds the wheel, installs it (without its dependencies, which come from the test's own environment) into a
fresh virtual environment, and from a directory outside the repository — one that holds a user's own
``envs/`` and ``agents/`` packages — makes and steps every registered environment, runs ``acres-validate``
and ``acres-replay`` on the example log that ships with the package, and trains with ``acres-train`` on a
config named from the package.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python of a fresh venv holding only the built wheel, its bin folder, a work dir outside the repo)."""
    root = tmp_path_factory.mktemp("install")
    dist = root / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(REPO)],
                   check=True, capture_output=True, cwd=REPO)
    (wheel,) = dist.glob("acres_gym-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # The dependencies (numpy, numba, gymnasium, ...) from this test's environment, as a plain path entry:
    # its .pth files (the repository's editable install) are not executed there.
    Path(site, "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True)
    work = root / "elsewhere"
    for name in ("envs", "agents"):  # a user's project with folders of these generic names
        (work / name).mkdir(parents=True)
        (work / name / "__init__.py").write_text("MINE = True\n")
    return wheel, python, venv / "bin", work


def _run(args, work, **kwargs):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ACRES_GYM_CONFIG_DIR")}
    env["PYTHONWARNINGS"] = "ignore"
    return subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=900, **kwargs)


def test_the_wheel_claims_no_generic_top_level_names(installed):
    wheel = installed[0]
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"acres_gym"}
    for required in ("acres_gym/envs/tasks/environments.py", "acres_gym/agents/baselines.py",
                     "acres_gym/configs/vehicles/polaris_ranger_crew_xp1000.json",
                     "acres_gym/configs/tasks/speed_tracking.yaml", "acres_gym/configs/soils.json",
                     "acres_gym/configs/surfaces.json", "acres_gym/configs/replay/example_commands.csv"):
        assert required in names, required


def test_every_registered_env_makes_and_steps_outside_the_repository(installed):
    _, python, _, work = installed
    code = f"""
import gymnasium, acres_gym, acres_gym.envs, envs, agents
assert envs.MINE and agents.MINE                      # the user's own packages are untouched
assert '{REPO}' not in acres_gym.__file__ and '{REPO}' not in acres_gym.envs.__file__
ids = sorted(i for i in gymnasium.registry if i.startswith('acres_gym/'))
assert ids, 'no acres_gym ids registered'
for env_id in ids:
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    for _ in range(3):
        env.step(env.action_space.sample())
    env.close()
print('ok', len(ids))
"""
    result = _run([str(python), "-c", code], work)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok")


def test_validate_and_replay_run_from_the_installed_package(installed):
    _, python, bin_dir, work = installed
    result = _run([str(bin_dir / "acres-validate")], work)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = re.search(r"(\d+) of (\d+) checks pass", result.stdout)
    assert summary, result.stdout[-2000:]
    passed, total = int(summary[1]), int(summary[2])
    assert passed == total > 30 and " nan " not in result.stdout.lower(), result.stdout[-3000:]
    example = _run([str(python), "-c", "from acres_gym.paths import config_path; "
                    "print(config_path('replay', 'example_commands.csv'))"], work).stdout.strip()
    assert example and Path(example).is_file() and str(REPO) not in example
    out = work / "drive.csv"
    result = _run([str(bin_dir / "acres-replay"), example, "--out", str(out)], work)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = out.read_text().splitlines()
    assert len(rows) > 10 and rows[0].startswith("time_s")


def test_acres_train_runs_from_the_installed_package(installed):
    _, python, bin_dir, work = installed
    for command in ([str(bin_dir / "acres-train")], [str(python), "-m", "acres_gym.train"]):
        result = _run([*command, "--help"], work)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "--config" in result.stdout and "--resume" in result.stdout and "--total-steps" in result.stdout
    # a config by name from the package (there is no configs/ folder here), into the user's runs/
    result = _run([str(bin_dir / "acres-train"), "--config", "smoke", "--total-steps", "256", "--set",
                   "baseline=null", "--set", "eval_every_steps=0", "--set", "env_config.max_episode_s=3"], work)
    assert result.returncode == 0, result.stderr[-3000:]
    run = work / "runs" / "smoke_seed0"
    assert (run / "model.zip").is_file() and (run / "checkpoints" / "step_256" / "model.zip").is_file()
    assert "trained PPO" in result.stdout
    result = _run([str(bin_dir / "acres-train"), "--config", "no_such_config"], work)
    assert result.returncode == 2 and result.stderr.strip().startswith("acres-train: error: ")


def test_packaged_examples_run_by_name_from_the_installed_package(installed):
    """``acres-replay --example NAME`` and ``--list-examples`` from the wheel, in a directory outside the
    repository (where ``configs/replay/...`` paths find nothing)."""
    _, _, bin_dir, work = installed
    listing = _run([str(bin_dir / "acres-replay"), "--list-examples"], work)
    assert listing.returncode == 0, listing.stderr[-3000:]
    names = [line.split()[0] for line in listing.stdout.splitlines()]
    assert "example_commands" in names and "example_drive" in names, listing.stdout
    out = work / "example.csv"
    result = _run([str(bin_dir / "acres-replay"), "--example", "example_commands", "--out", str(out),
                   "--out-hz", "20"], work)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = out.read_text().splitlines()
    assert rows[0].startswith("time_s,") and len(rows) == 1 + 20 * 25 + 1  # 0 to 25 s (last message 24 s, + 1 s)
    help_text = _run([str(bin_dir / "acres-calibrate"), "--help"], work)
    assert help_text.returncode == 0 and "acres-calibrate identifiability" in help_text.stdout
