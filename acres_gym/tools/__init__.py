"""Drivers and scripts built on ``RangerSim``: the replay of DBW command logs (``replay``), the validation table
(``validate`` with the manoeuvres of ``scenarios`` and the DBW rows of ``dbw_validation``), the DBW driver for
controllers and tests (``drive``), the benchmark (``bench``) and the demo drive (``demo``).

Nothing in the simulator's kernel packages (``model``, ``dbw``, ``terrain``) imports from here.
"""
