"""Pretrained policies shipped with the package, driven through the lean vehicle runtime.

Each shipped policy is the exported (``acres_gym.agents.export``) policy of an id's shipped training config
(``configs/train/``), kept as package data in ``configs/pretrained/<slug>/`` (``policy.onnx`` and
``manifest.json``; the slug is the id's name in snake case, ``ranger_speed_tracking_v3``). Its manifest's
``trained`` entry records the id, the training config, its steps and seed.

``python -m acres_gym.agents.evaluate --env <id> --model pretrained`` and ``python -m acres_gym.agents.watch
--env <id> --policy pretrained`` run the id's shipped policy through ``acres_gym.vehicle.deploy.PolicyRuntime``
(``RuntimePolicy``: one runtime per vehicle, fed the vehicle's DBW reports and the host inputs the way a
vehicle's node would feed them), not through the training libraries.

``python -m acres_gym.agents.pretrained runs/<run>/model.zip --config <train config name>`` exports a run into
the package's folder (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from acres_gym.paths import config_path

PRETRAINED = "pretrained"  # the --model / --policy value naming the shipped policy of --env
PRETRAINED_SUBDIR = "pretrained"


def slug(env_id: str) -> str:
    """The folder name of an id's policy: ``acres_gym/RangerSpeedTracking-v3`` -> ``ranger_speed_tracking_v3``."""
    name = env_id.split("/")[-1].replace("-", "_")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def shipped_ids() -> list[str]:
    """The ids that have a shipped policy (from the manifests in ``configs/pretrained/``), sorted."""
    folder = config_path(PRETRAINED_SUBDIR)
    if not folder.is_dir():
        return []
    return sorted(json.loads(p.read_text(encoding="utf-8"))["trained"]["env_id"]
                  for p in folder.glob("*/manifest.json"))


def pretrained_dir(env_id: str) -> Path:
    """The folder of ``env_id``'s shipped policy; a ``ValueError`` naming the ids that have one otherwise."""
    folder = config_path(PRETRAINED_SUBDIR, slug(env_id))
    if not (folder / "manifest.json").is_file():
        ids = shipped_ids()
        raise ValueError(f"--env {env_id!r}: no pretrained policy ships for this id; ids with one: "
                         + (", ".join(ids) if ids else "none"))
    return folder


def vehicle_reports(batch, i: int) -> dict[str, dict[str, Any]]:
    """Vehicle ``i``'s DBW report messages, as the vehicle publishes them (``acres_gym.dbw.reports``)."""
    from acres_gym.dbw.reports import dbw_reports

    return {m: {k: v[i] for k, v in fields.items()} for m, fields in
            dbw_reports(batch.sim.params, batch.sim.state).items()}


def host_inputs(batch, i: int) -> dict[str, Any]:
    """Vehicle ``i``'s non-report observation items, as the node hosting the runtime gets them from its IMU,
    planner and map (the navigation task's goal and local map)."""
    f = batch.frame
    t = f.task
    inputs = {"yaw_rate": f.yaw_rate_rad_s[i], "roll_pitch": [f.roll_rad[i], f.pitch_rad[i]],
              "target_speed": t.target_speed[i], "lateral_error": t.lateral_error_m[i],
              "heading_error": t.heading_error_rad[i], "path_points": t.path_points[i].ravel()}
    if t.goal is not None:
        inputs.update(goal=t.goal[i], local_map=t.local_map[i])
    return inputs


class RuntimePolicy:
    """An exported policy driving every vehicle of a native vector env through its own ``PolicyRuntime``:
    reports and host inputs in, the runtime's action out (the env turns it into the same DBW commands the
    runtime sends; ``tests/test_export.py`` checks that). A vehicle whose episode ended gets a zero action on
    the step that resets it (the env ignores it) and starts its next drive with a fresh runtime state."""

    def __init__(self, venv, policy_dir: str | Path) -> None:
        from acres_gym.vehicle.deploy import PolicyRuntime

        self.venv = venv.unwrapped
        self.batch = self.venv._batch
        self.runtimes = [PolicyRuntime(policy_dir) for _ in range(self.venv.num_envs)]
        self.action_dim = self.runtimes[0].action_dim

    def reset(self, rows) -> None:
        for i in np.flatnonzero(rows):
            self.runtimes[int(i)].reset()

    def __call__(self, _obs) -> np.ndarray:
        actions = np.zeros((len(self.runtimes), self.action_dim), dtype=np.float32)
        resetting = getattr(self.venv, "_autoreset", np.zeros(len(self.runtimes), dtype=bool))
        for i, runtime in enumerate(self.runtimes):
            if not resetting[i]:
                runtime.step(vehicle_reports(self.batch, i), host_inputs(self.batch, i))
                actions[i] = runtime.last_action
        return actions


def pretrained_policy(env_id: str) -> tuple[Callable, str, dict]:
    """``(policy factory, action mode, env config)`` of ``env_id``'s shipped policy, as
    ``acres_gym.agents.sb3_models.load_run_policy`` gives them for a run."""
    folder = pretrained_dir(env_id)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return ((lambda venv: RuntimePolicy(venv, folder)), manifest["action"]["mode"],
            dict(manifest["trained"].get("env_config") or {}))


def ship(model_zip: str | Path, config_name: str, out_root: str | Path | None = None) -> Path:
    """Export a ``train.py`` run as the shipped policy of its id (``out_root/<slug>/``, default the
    package's ``configs/pretrained``), recording the training config by name in the manifest."""
    import yaml

    from acres_gym.agents.export import export

    model_zip = Path(model_zip)
    run_config = yaml.safe_load((model_zip.parent / "config.yaml").read_text(encoding="utf-8"))
    root = Path(out_root) if out_root is not None else config_path(PRETRAINED_SUBDIR)
    out = root / slug(run_config["env_id"])
    manifest = export(model_zip, out)
    backend = run_config.get("backend", "sb3")  # runs from before the key trained with SB3's learner
    manifest["trained"].update(model=f"python train.py --config {config_name} --seed {run_config.get('seed')} "
                                     f"--backend {backend}", config=config_name, backend=backend,
                               env_config=run_config.get("env_config") or {})
    report = model_zip.parent / "report.json"
    if report.is_file():
        figures = json.loads(report.read_text(encoding="utf-8"))
        manifest["trained"].update(steps=figures.get("trained_steps"), baseline=figures.get("baseline"),
                                   first_beats_baseline=figures.get("first_beats_baseline"))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="runs/<run>/model.zip of a train.py run")
    parser.add_argument("--config", required=True, help="the training config's name (configs/train/<name>.yaml)")
    parser.add_argument("--out", default=None, help="the folder of policy folders (default: the package's)")
    args = parser.parse_args(argv)
    try:
        out = ship(args.model, args.config, args.out)
    except (ValueError, FileNotFoundError) as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
