"""Declarative record specs: one ``Field`` per field of the state, command and report records.

``acres_gym.schema`` does this for the parameters; here the same for the records the kernels read and
write. A spec is a tuple of ``Field`` (name, dtype, shape, unit, rest value, owning subsystem, what it
means, and for commands and reports the ds_dbw message and message field). From a spec come:

- ``spec_dtype(spec)``: the numpy record dtype (fields in spec order),
- ``make_template(spec)``: one record holding every field's rest value (``rest``); a field whose rest
  value depends on the vehicle's parameters has ``rest=FROM_PARAMS`` and is 0 in the template (the
  reset kernel's parameter pass writes it),
- ``spec_table(spec)``: the spec as rows (name, dtype, shape, unit, rest, owner, message, field, doc)
  for documentation and tests.

Units follow ``schema.py``: SI inside the model, ds_dbw message units in DBW fields; ``"1"`` is a
dimensionless number, ``"bool"`` a flag, ``"enum"`` one of the constants named in ``doc``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FROM_PARAMS = "params"
"""Rest value of a field the reset's parameter pass sets (e.g. the engine at ``idle_rpm``)."""


@dataclass(frozen=True)
class Field:
    name: str
    dtype: type
    shape: tuple = ()
    unit: str = "1"
    rest: float | str = 0.0  # value after reset, or FROM_PARAMS
    owner: str = ""  # the subsystem (module) that writes the field
    doc: str = ""
    message: str | None = None  # ds_dbw message (commands, reports)
    msg_field: str | None = None  # field of that message
    resolution: float = 0.0  # reports: the CAN resolution in ``unit`` (0 = exact)


def spec_dtype(spec: tuple[Field, ...]) -> np.dtype:
    """The record dtype of ``spec``; raises ``TypeError`` on a repeated name."""
    names = [f.name for f in spec]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise TypeError(f"record fields declared twice: {repeated}")
    return np.dtype([(f.name, f.dtype, f.shape) if f.shape else (f.name, f.dtype) for f in spec])


def make_template(spec: tuple[Field, ...], record_dtype: np.dtype) -> np.recarray:
    """One record (shape (1,)) of ``record_dtype`` holding each field's rest value (0 for FROM_PARAMS)."""
    out = np.zeros(1, record_dtype).view(np.recarray)
    for f in spec:
        if f.rest != FROM_PARAMS:
            out[f.name] = f.rest
    return out


def spec_table(spec: tuple[Field, ...]) -> list[tuple]:
    """The spec as rows: (name, dtype name, shape, unit, rest, owner, message, message field, doc)."""
    return [(f.name, np.dtype(f.dtype).name, f.shape, f.unit, f.rest, f.owner, f.message, f.msg_field, f.doc)
            for f in spec]


def structured_view(records: np.ndarray) -> np.ndarray:
    """``records`` (a ``recarray`` or a structured array) as a plain structured ``ndarray`` view of the same memory.

    Field access on it skips ``recarray``'s Python-level attribute lookup, and numba types it on every call at
    about a tenth of a ``recarray``'s cost; ``np.ndarray.view`` is called unbound for the same reason."""
    return np.ndarray.view(records, np.ndarray)
