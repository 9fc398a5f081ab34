"""The first-use notice: acres_gym says on stderr when it compiles its kernels and how long it took
(``acres_gym.runtime.compile_notice``), only for its own kernels, and not at all with ``ACRES_GYM_QUIET=1``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numba
import pytest

from acres_gym.runtime import compile_notice


def _fresh_kernel(module: str):
    """A jitted function of ``module`` that numba has not compiled yet (no cache: each call site is new)."""
    def probe(x):
        return x * 2.0 + 1.0

    probe.__module__ = module
    return numba.njit(cache=False)(probe)


def test_a_compile_of_an_acres_gym_kernel_is_announced_and_timed(capsys, monkeypatch):
    monkeypatch.delenv(compile_notice.QUIET_ENV, raising=False)
    compile_notice.report()  # anything left over from earlier tests
    capsys.readouterr()
    kernel = _fresh_kernel("acres_gym._probe")
    assert kernel(1.0) == 3.0
    err = capsys.readouterr().err
    assert "acres_gym: compiling" in err
    count, seconds = compile_notice.compiled()
    assert count >= 1 and seconds > 0.0
    compile_notice.report()
    assert f"acres_gym: {count} kernel" in capsys.readouterr().err
    assert compile_notice.compiled() == (0, 0.0)
    assert kernel(2.0) == 5.0  # compiled: nothing to say
    compile_notice.report()
    assert capsys.readouterr().err == ""


def test_other_packages_kernels_and_quiet_mode_say_nothing(capsys, monkeypatch):
    compile_notice.report()
    capsys.readouterr()
    assert _fresh_kernel("someone_else")(1.0) == 3.0
    assert compile_notice.compiled() == (0, 0.0)
    monkeypatch.setenv(compile_notice.QUIET_ENV, "1")
    assert _fresh_kernel("acres_gym._quiet_probe")(1.0) == 3.0
    compile_notice.report()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("quiet", ["", "1"])
def test_a_fresh_cache_announces_the_first_reset_and_a_warm_one_does_not(tmp_path, quiet):
    """Numba's cache in an empty directory: the first process compiles the terrain kernels of a draw and says so;
    the second loads them and is silent."""
    script = textwrap.dedent("""
        from acres_gym.runtime import compile_notice
        from acres_gym.terrain import rough
        rough(3, 0.05, size_m=40.0, cell_m=1.0, hill_wavelength_m=10.0, bump_wavelength_m=4.0)
        compile_notice.report()
    """)
    env = {"NUMBA_CACHE_DIR": str(tmp_path), "ACRES_GYM_QUIET": quiet, "PATH": "/usr/bin:/bin"}
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    if quiet:
        assert "acres_gym:" not in first.stderr
    else:
        assert "acres_gym: compiling kernels (first use" in first.stderr
        assert "compiled in" in first.stderr
    assert "acres_gym:" not in second.stderr
