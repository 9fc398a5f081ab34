"""Controllers for the acres_gym environments.

- ``acres_gym.agents.baselines``: the vehicle's ULC with pure-pursuit steering, a PID on the pedals;
- ``acres_gym.agents.sb3_models``: PPO / SAC from a training config, trained models as ``policy(obs)``;
- ``acres_gym.agents.backends``: the learners ``train.py --backend`` picks: ``sb3`` (SB3's own PPO and SAC) or
  ``lean`` (``acres_gym.agents.lean_ppo.LeanPPO``: PPO with its rollouts on the native vector env, the same
  run files);
- ``acres_gym.agents.training``: what ``train.py`` runs around ``learn``: progress bar, task metrics,
  periodic evaluation, exact checkpoints, the report and its plots;
- ``acres_gym.agents.evaluate``: seeded evaluation and baseline-against-learned comparison
  (``python -m acres_gym.agents.evaluate``);
- ``acres_gym.agents.export``: a trained run as ONNX with its manifest, for ``acres_gym.vehicle.deploy``
  (``python -m acres_gym.agents.export``);
- ``acres_gym.agents.watch``: a policy driving in the pygame window, or its frames as PNG files
  (``python -m acres_gym.agents.watch``);
- ``acres_gym.agents.rllib``, ``rllib_train``, ``sweep``, ``rllib_bench`` (the ``ray`` extra): every id on RLlib
  with native vector envs in its env runners, PPO training and checkpoints, Tune sweeps with ASHA, sampling
  throughput against stable-baselines3.
"""
