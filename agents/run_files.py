"""The files of a training run: where they are, how they are written so that an interrupt never leaves half a
checkpoint, and how they are read so that a missing or damaged file is a one-line error.

A run directory (``train.py``, ``acres-train``)::

    runs/<run>/config.yaml                the resolved training config
    runs/<run>/model.zip                  the model (stable-baselines3 format)
    runs/<run>/vecnormalize.pkl           the observation normaliser (when the run normalises)
    runs/<run>/state.pkl                  the rest of the training state (``--resume``); SAC: state.replay_buffer.pkl
    runs/<run>/run_files.json             which checkpoint those files are, with their sizes and SHA-256
    runs/<run>/checkpoints/step_<steps>/  a complete checkpoint: the same files (config.yaml included)

**Writing.** A checkpoint is written whole into ``checkpoints/.step_<steps>.partial/`` (every file, then its
``run_files.json``) and renamed to ``step_<steps>`` when complete: a directory rename is atomic, so at any
moment of an interrupt ``checkpoints/`` holds the previous complete checkpoints and no half one (the hidden
partial directory is removed on the way out, ``clear_leftovers`` after an interrupt, or the next save after a
kill). Older checkpoints are removed
(renamed aside, then deleted) only after a newer one is complete, keeping the newest ``keep``. The run's own
files are the newest checkpoint's, put in place one by one (hard links, else copies) between two writes of
``run_files.json``: the first says the files are being replaced, the last lists them with their SHA-256. A run
directory whose ``run_files.json`` says ``complete: false`` was interrupted while its files were replaced; the
loaders refuse it and name its complete checkpoint. Every change to the file system goes through
``_write``, ``_rename``, ``_link`` and ``_remove`` (the tests interrupt each one in turn).

**Reading.** ``locate`` finds the files of a model path (a run's ``model.zip``, a checkpoint directory or its
``model.zip``, or an older run's ``checkpoints/model_<steps>_steps.zip``); ``read_config``,
``load_normalizer``, ``load_model`` and ``load_state`` read them. A missing file the run's config asks for (the
normaliser of ``normalize_observations: true``), a file that differs from its SHA-256 in ``run_files.json``, a
non-YAML config, a pickle that is truncated or holds another object, a model whose zip or ``policy.pth`` is
broken: each raises ``RunFileError`` with one line naming the file.

**Trust.** Run files are code: unpickling ``vecnormalize.pkl`` or ``state.pkl`` and loading ``model.zip`` can run
whatever their author put there, like any pickle. Load only runs and exported policies you trust. The user's
runs are the directory ``$ACRES_GYM_RUNS`` when set, else ``./runs`` (where ``train.py`` writes by default);
loading from anywhere else (the installed package's own files aside) logs a one-line warning
(``logging``, logger ``acres_gym``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import re
import shutil
import warnings
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

RUNS_ENV = "ACRES_GYM_RUNS"
CHECKPOINTS = "checkpoints"
MANIFEST = "run_files.json"
MANIFEST_FORMAT = 1
MODEL, NORMALIZER, STATE, CONFIG = "model.zip", "vecnormalize.pkl", "state.pkl", "config.yaml"
REPLAY_BUFFER = "state.replay_buffer.pkl"
SAVED = (MODEL, NORMALIZER, STATE, REPLAY_BUFFER)  # the files a save writes and the manifest lists
SIZE_ONLY = (REPLAY_BUFFER,)  # SAC's replay buffer (up to gigabytes, and never read to act): its size, no SHA-256
STEP_DIR = re.compile(r"step_(\d+)")
LEGACY_CHECKPOINT = re.compile(r"model_(\d+)_steps\.zip")  # the flat checkpoint names of older runs

log = logging.getLogger("acres_gym")


class RunFileError(ValueError):
    """A run file that is missing, damaged or inconsistent (printed as one line, exit status 2)."""


class MissingModel(RunFileError, FileNotFoundError):
    """No model at the path given."""


# --- the file-system steps of a save (each one a point an interrupt may fall on) ---------------------------

def _fsync(path: Path) -> None:
    """Flush a file, or a directory's entries, to disk (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write(path: Path, writer: Callable[[Path], None]) -> None:
    """Write one file of a save with ``writer(path)`` and flush it."""
    writer(path)
    _fsync(path)


def _rename(src: Path, dst: Path) -> None:
    """Rename a file or directory (atomic on one file system; replaces an existing file)."""
    os.replace(src, dst)
    _fsync(dst.parent)


def _link(src: Path, dst: Path) -> None:
    """``dst`` as a hard link to ``src`` (no copy of a large file), or a copy where links are not possible."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
        _fsync(dst)


def _remove(path: Path) -> None:
    """Delete a file or a directory tree."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# --- writing ------------------------------------------------------------------------------------------------

def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _json_writer(data: Mapping) -> Callable[[Path], None]:
    return lambda path: path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def _write_replacing(path: Path, writer: Callable[[Path], None]) -> None:
    """Write a file under a temporary name and rename it over ``path``: readers see the old or the new one."""
    tmp = path.with_name(f".{path.name}.partial")
    _write(tmp, writer)
    _rename(tmp, path)


def _clear_leftovers(folder: Path) -> None:
    """Hidden partial or half-removed directories and files left by an interrupted save."""
    for path in folder.glob(".*"):
        if path.name.endswith((".partial", ".removing", ".replaced")):
            _remove(path)


def clear_leftovers(run_dir: Path) -> None:
    """What an interrupted save left in a run directory and its checkpoints (never a complete checkpoint or a
    file of the run: only the hidden partial, replaced and half-removed names of this module)."""
    for folder in (Path(run_dir), Path(run_dir) / CHECKPOINTS):
        if folder.is_dir():
            _clear_leftovers(folder)


def checkpoint_steps(path: Path) -> int | None:
    """The steps of a complete checkpoint directory ``step_<steps>``, else None."""
    m = STEP_DIR.fullmatch(path.name)
    return int(m.group(1)) if m and path.is_dir() else None


def checkpoints(run_dir: Path) -> list[Path]:
    """The run's complete checkpoints, oldest first."""
    folder = Path(run_dir) / CHECKPOINTS
    if not folder.is_dir():
        return []
    found = [(checkpoint_steps(p), p) for p in folder.iterdir()]
    return [p for steps, p in sorted((s, p) for s, p in found if s is not None)]


def write_checkpoint(run_dir: Path, steps: int, writers: Mapping[str, Callable[[Path], None]], keep: int) -> Path:
    """Write a complete checkpoint ``<run_dir>/checkpoints/step_<steps>/`` atomically (see the module
    docstring): ``writers`` maps each file name to the function that writes it; the checkpoint's
    ``run_files.json`` is written last. Then only the newest ``keep`` checkpoints stay."""
    folder = Path(run_dir) / CHECKPOINTS
    folder.mkdir(parents=True, exist_ok=True)
    _clear_leftovers(folder)
    final = folder / f"step_{steps}"
    partial = folder / f".step_{steps}.partial"
    replaced = folder / f".step_{steps}.replaced"
    partial.mkdir()
    try:
        for name, writer in writers.items():
            _write(partial / name, writer)
        saved = [name for name in SAVED if (partial / name).is_file()]
        _write(partial / MANIFEST, _json_writer({
            "format": MANIFEST_FORMAT, "complete": True, "steps": int(steps),
            "files": {name: sha256(partial / name) for name in saved if name not in SIZE_ONLY},
            "bytes": {name: (partial / name).stat().st_size for name in saved}}))
        if final.exists():  # a run resumed from an earlier checkpoint passes this step again
            _rename(final, replaced)
        _rename(partial, final)
    except BaseException:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
        if replaced.exists() and not final.exists():
            os.replace(replaced, final)
        raise
    if replaced.exists():
        _remove(replaced)
    retain(run_dir, keep)
    return final


def retain(run_dir: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` complete checkpoints (each renamed aside first, so that an
    interrupt never leaves a half-removed checkpoint under a checkpoint's name)."""
    for old in checkpoints(run_dir)[:-keep] if keep > 0 else []:
        aside = old.with_name(f".{old.name}.removing")
        _rename(old, aside)
        _remove(aside)


def publish(run_dir: Path, checkpoint: Path) -> None:
    """Make a complete checkpoint's files the run's own (``<run_dir>/model.zip`` ...; see the module docstring)."""
    run_dir = Path(run_dir)
    manifest = json.loads((checkpoint / MANIFEST).read_text(encoding="utf-8"))
    where = os.path.relpath(checkpoint, run_dir)
    _write_replacing(run_dir / MANIFEST, _json_writer({"format": MANIFEST_FORMAT, "complete": False,
                                                       "checkpoint": where}))
    for name in SAVED:
        src, dst = checkpoint / name, run_dir / name
        if src.is_file():
            tmp = run_dir / f".{name}.partial"
            if tmp.exists():
                _remove(tmp)
            _link(src, tmp)
            _rename(tmp, dst)
        elif dst.exists():  # a file of an earlier save the new one does not have
            _remove(dst)
    _write_replacing(run_dir / MANIFEST, _json_writer({**manifest, "checkpoint": where}))


# --- reading ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunFiles:
    """Where the files of one saved model are (see ``locate``)."""

    model: Path
    config: Path
    normalizer: Path
    state: Path
    replay_buffer: Path
    manifest: Path | None  # None for an older run's flat checkpoint names
    run_dir: Path  # the run directory (for a checkpoint, the one holding checkpoints/)


def locate(path: str | Path) -> RunFiles:
    """The files of a saved model: a run's ``model.zip`` (or its directory), a checkpoint
    ``checkpoints/step_<steps>`` (or its ``model.zip``), or an older run's flat checkpoint
    ``checkpoints/model_<steps>_steps.zip`` (with ``model_vecnormalize_<steps>_steps.pkl`` and
    ``model_state_<steps>_steps.pkl`` beside it and the run's ``config.yaml``). Warns once per directory when
    it lies outside the user's runs (``trusted``)."""
    model = Path(path)
    if model.is_dir():
        model = model / MODEL
    if not model.is_file():
        if (model.parent / MANIFEST).is_file():  # a save interrupted before the model was in place says so
            check_complete(RunFiles(model, model.parent / CONFIG, model.parent / NORMALIZER, model.parent / STATE,
                                    model.parent / REPLAY_BUFFER, model.parent / MANIFEST, model.parent))
        raise MissingModel(f"no model at {path} (no such model.zip or checkpoint directory of a train.py run)")
    folder = model.parent
    legacy = LEGACY_CHECKPOINT.fullmatch(model.name)
    if legacy and folder.name == CHECKPOINTS:
        n = legacy.group(1)
        state = folder / f"model_state_{n}_steps.pkl"
        files = RunFiles(model, folder.parent / CONFIG, folder / f"model_vecnormalize_{n}_steps.pkl", state,
                         state.with_suffix(".replay_buffer.pkl"), None, folder.parent)
    else:
        in_checkpoint = folder.parent.name == CHECKPOINTS and STEP_DIR.fullmatch(folder.name)
        files = RunFiles(model, folder / CONFIG, folder / NORMALIZER, folder / STATE, folder / REPLAY_BUFFER,
                         folder / MANIFEST, folder.parent.parent if in_checkpoint else folder)
    warn_if_untrusted(model)
    return files


def runs_dir() -> Path:
    """The user's runs: ``$ACRES_GYM_RUNS`` when set, else ``./runs``."""
    return Path(os.environ.get(RUNS_ENV) or "runs").expanduser()


def trusted(path: Path) -> bool:
    """Whether ``path`` lies in the user's runs (``runs_dir``) or in the installed package itself."""
    import acres_gym

    where = Path(path).resolve()
    return any(where.is_relative_to(root.resolve())
               for root in (runs_dir(), Path(acres_gym.__file__).parent))


_warned: set[Path] = set()


def warn_if_untrusted(path: Path) -> None:
    """One warning line per directory loaded from outside the user's runs (run files are code)."""
    folder = Path(path).resolve().parent
    if folder in _warned or trusted(path):
        return
    _warned.add(folder)
    log.warning("acres_gym: loading %s from outside the runs directory %s (set %s): run files run code when "
                "loaded, load only files you trust", folder, runs_dir().resolve(), RUNS_ENV)


def _first_line(exc: BaseException) -> str:
    """The exception's type and the first sentence of its message (torch's advice to load the file with
    ``weights_only=False``, i.e. to run its code, is not passed on)."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    sentence = text.splitlines()[0].split(". ")[0].rstrip(".")
    return f"{type(exc).__name__}: {sentence[:160]}"


def check_complete(files: RunFiles) -> None:
    """The directory's ``run_files.json`` (when there is one) says its files are complete, and every file it
    lists is there with its SHA-256."""
    if files.manifest is None or not files.manifest.is_file():
        return  # a run saved before run_files.json existed, or one made by hand
    try:
        manifest = json.loads(files.manifest.read_text(encoding="utf-8"))
        complete, listed = manifest["complete"], manifest.get("files", {})
        if not isinstance(listed, dict):
            raise TypeError("files is not a mapping")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise RunFileError(f"{files.manifest}: not a readable run file list ({_first_line(exc)})") from None
    if not complete:
        where = files.manifest.parent / str(manifest.get("checkpoint", CHECKPOINTS))
        raise RunFileError(f"{files.manifest.parent}: its files were being replaced when a save was interrupted; "
                           f"use the complete checkpoint {where}")
    sizes = manifest.get("bytes", {}) if isinstance(manifest.get("bytes"), dict) else {}
    for name in {**listed, **sizes}:
        path = files.manifest.parent / name
        if not path.is_file():
            raise RunFileError(f"{path} is missing (listed in {files.manifest})")
        if name in sizes and path.stat().st_size != sizes[name]:
            raise RunFileError(f"{path} differs from the file saved (its size is not the one in {files.manifest})")
        if name in listed and sha256(path) != listed[name]:
            raise RunFileError(f"{path} differs from the file saved (its SHA-256 is not the one in {files.manifest})")


def read_config(files: RunFiles) -> dict:
    """The run's resolved training config (``config.yaml``): a YAML mapping with ``algo`` and ``env_id``."""
    if not files.config.is_file():
        raise RunFileError(f"{files.config} is missing: a train.py run saves it beside model.zip")
    try:
        config = yaml.safe_load(files.config.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RunFileError(f"{files.config}: not a YAML file ({_first_line(exc)})") from None
    if not isinstance(config, dict):
        raise RunFileError(f"{files.config}: not a training config (a YAML mapping expected, found "
                           f"{type(config).__name__})")
    for key in ("algo", "env_id"):
        if key not in config:
            raise RunFileError(f"{files.config}: key {key!r} is missing (not a train.py run?)")
    return config


def _unpickle(path: Path, what: str) -> Any:
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception as exc:  # a damaged pickle raises almost anything: UnpicklingError, EOFError, ValueError ...
        raise RunFileError(f"{path}: not a readable {what} ({_first_line(exc)})") from None


def load_normalizer(files: RunFiles, config: Mapping, for_training: bool = False):
    """The run's ``VecNormalize`` (its statistics), or None when the run saved none and its config does not
    ask for one. Required when the config says ``normalize_observations: true`` (and, ``for_training``, when
    it says ``normalize_rewards: true``)."""
    from stable_baselines3.common.vec_env import VecNormalize

    wanted = [k for k in ("normalize_observations", "normalize_rewards")
              if config.get(k) and (for_training or k == "normalize_observations")]
    if not files.normalizer.is_file():
        if wanted:
            raise RunFileError(f"{files.normalizer} is missing, and {files.config} says {wanted[0]}: true; "
                               f"without it the policy would see observations it was not trained on")
        return None
    normalizer = _unpickle(files.normalizer, "observation normaliser")
    if not isinstance(normalizer, VecNormalize):
        raise RunFileError(f"{files.normalizer}: holds a {type(normalizer).__name__}, not a VecNormalize "
                           f"(the observation normaliser)")
    return normalizer


def load_model(files: RunFiles, algo: str, algorithm: type | None = None, **kwargs):
    """The stable-baselines3 model of ``algo`` saved in ``model.zip`` (``kwargs`` go to ``load``), as an
    ``algorithm`` (a backend's model class, ``acres_gym.agents.backends.model_class``; default SB3's ``algo``)."""
    from acres_gym.agents.algorithms import algorithm_class

    cls = algorithm_class(algo) if algorithm is None else algorithm
    if not zipfile.is_zipfile(files.model):
        raise RunFileError(f"{files.model}: not a stable-baselines3 model (not a zip file)")
    try:
        with warnings.catch_warnings():  # SB3 warns before it fails on a damaged archive
            warnings.simplefilter("ignore")
            return cls.load(str(files.model), **kwargs)
    except Exception as exc:
        raise RunFileError(f"{files.model}: not a readable {algo.upper()} model ({_first_line(exc)})") from None


def load_state(files: RunFiles, version: int) -> dict | None:
    """The training state of ``save_run_state`` (None when the run has none: an older checkpoint)."""
    if not files.state.is_file():
        return None
    state = _unpickle(files.state, "training state")
    if not isinstance(state, dict) or state.get("version") != version:
        raise RunFileError(f"{files.state}: not a training state of this version of train.py")
    return state


def load_run(path: str | Path) -> tuple[RunFiles, dict]:
    """``locate`` and ``check_complete`` a saved model and read its config: what every loader starts with."""
    files = locate(path)
    check_complete(files)
    return files, read_config(files)
