"""``python -m acres_gym.train``: the training command (``acres-train``) of ``acres_gym.agents.train_cli``.

Only a module path: the simulator library imports nothing from ``acres_gym.agents``, so the training code is
imported when the command runs, not when this module is.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from acres_gym.agents.train_cli import main as train_main

    train_main(argv, prog="python -m acres_gym.train")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
