"""Train PPO or SAC on an acres_gym task, then compare the trained policy with a classical baseline.

    python train.py --config configs/train/ppo_speed_tracking.yaml [--total-steps N] [--seed S] [--out DIR]
                    [--set env_config.randomization.terrain.grade_pct=[0,15] --set algo_kwargs.gamma=0.99 ...]
                    [--resume runs/<run>/model.zip | runs/<run>/checkpoints/step_<steps>]
                    [--backend sb3|lean] [--overwrite] [--verbose]

The repository's entry point. The training itself is ``acres_gym.agents.train_cli.main`` (read it top to
bottom: the config, the run directory, the environment, the model, training, the saved run, the final
evaluation and the report), the function an installed package runs as ``acres-train`` and
``python -m acres_gym.train``: the three commands take the same options and do the same.
"""

from acres_gym.agents.train_cli import (  # noqa: F401  (the names tests and scripts use from train.py)
    DEFAULTS,
    RunError,
    load_train_config,
    main,
    make_env,
    make_normalizer,
    prepare_run_dir,
    resume_files,
)

if __name__ == "__main__":
    main(prog="train.py")
