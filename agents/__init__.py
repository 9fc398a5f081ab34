"""Controllers for the acres_gym environments.

- ``agents.baselines``: the vehicle's ULC with pure-pursuit steering, a PID on the pedals;
- ``agents.sb3_models``: PPO / SAC from a training config, trained models as ``policy(obs)``;
- ``agents.evaluate``: seeded evaluation and baseline-against-learned comparison
  (``python -m agents.evaluate``);
- ``agents.watch``: a policy driving in the pygame window, or its frames as PNG files
  (``python -m agents.watch``).
"""
