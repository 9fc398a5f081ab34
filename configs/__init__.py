"""The configuration files shipped with acres_gym (vehicles, surfaces, soils, tasks, training, replay).

Installed as the package ``acres_gym.configs``; ``acres_gym.paths.config_dir()`` finds it.
"""
