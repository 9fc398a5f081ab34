"""Tyre forces with transient slip (relaxation lengths) and the friction circle.

The seed (002, ``PrepareUtvWheel``) asks for "the tanh friction curve with the wet film on hard ground,
lateral slip with relaxation and the friction circle". This module implements it as a transient-slip
(brush deflection) tyre, in both directions, so the tyre is a spring-damper at rest and a braked vehicle
holds on a grade without creep (docs/architecture.md, "Standing still"):

    longitudinal deflection u:  du/dt = (omega r - v_x) - lambda_x u,   lambda_x = max(|v_x|, |omega r|) / sigma_x
    lateral deflection w:       dw/dt = -v_y - lambda_y w,             lambda_y = max(|v_x|, |omega r|) / sigma_y

In steady state u / sigma_x = (omega r - v_x) / max(|v_x|, |omega r|), the seed's slip ratio (``Slip``)
without its 0.2 m/s floor, and w / sigma_y = -v_y / |v_x| = -tan(alpha). The deflections are integrated
exactly over the tick (exponential, stable when sigma / speed is shorter than the tick).

Force demands (linear in the deflections, plus a contact damper that damps the tyre spring at rest):

    f_x = C_kappa N u / sigma_x + c_x du/dt,     f_y = C_alpha N w / sigma_y + c_y dw/dt

and the friction circle saturates their vector: F = f G(|f|) / |f|, with G the surface's curve:
hard ground G(m) = F_max tanh(m / F_max) (F_x = mu N tanh(C_kappa kappa / mu) for pure slip, the tanh
curve of the reference sheet §3.2), soil G(m) = F_max [1 - (1 - e^-x) / x], x = 2 m / F_max (the
Janosi-Hanamoto integral over the patch, ``acres_gym.model.soil``). Both have unit slope at zero, so
C_kappa N is the slip stiffness in both.

Wheel spin is implicit (``acres_gym.model.driveline``): the longitudinal force is linearised in the
end-of-tick spin omega about the tick's start, F_x(omega) = F_x0 + k (omega - omega_0).
"""

import math

from numba import njit

from acres_gym.constants import STANDARD_GRAVITY_MPS2

SHAPE_TANH = 0  # hard ground
SHAPE_JANOSI = 1  # deformable soil
DEFLECTION_LIMIT = 2.5  # spring demand capped at this multiple of F_max (a sliding tyre does not wind up)


@njit(cache=True)
def relaxation(rate_per_s, dt):
    """Exact first-order lag over dt: (decay e^(-rate dt), gain (1 - e^(-rate dt)) / rate)."""
    x = rate_per_s * dt
    if x < 1e-9:
        return 1.0 - x, dt
    decay = math.exp(-x)
    return decay, (1.0 - decay) / rate_per_s


@njit(cache=True)
def saturation(m, f_max, shape):
    """Friction-circle curve: (G(m), G'(m)) for a demand magnitude m >= 0 (see the module docstring)."""
    if f_max <= 0.0:
        return 0.0, 0.0
    if shape == SHAPE_TANH:
        t = math.tanh(m / f_max)
        return f_max * t, 1.0 - t * t
    x = 2.0 * m / f_max
    if x < 1e-3:
        h = x * (0.5 - x * (1.0 / 6.0 - x / 24.0))
        dh = 0.5 - x * (1.0 / 3.0 - x / 8.0)
    else:
        e = math.exp(-x)
        h = 1.0 - (1.0 - e) / x
        dh = (1.0 - e * (1.0 + x)) / (x * x)
    return f_max * h, 2.0 * dh


@njit(cache=True)
def circle(fx, fy, f_max, shape):
    """Saturated forces (Fx, Fy) and dFx/dfx at fixed fy, for demands (fx, fy)."""
    m = math.sqrt(fx * fx + fy * fy)
    if m < 1e-9:
        return fx, fy, 1.0
    g, dg = saturation(m, f_max, shape)
    scale = g / m
    cx2 = fx * fx / (m * m)
    return fx * scale, fy * scale, scale * (1.0 - cx2) + dg * cx2


@njit(cache=True)
def wet_friction(mu_dry, mu_wet, wetness, film_loss, film_speed_mps, sliding_speed_mps):
    """Peak friction on hard ground: mu(w) = mu_dry + w (mu_wet - mu_dry), lowered by the water film with
    sliding speed: mu(w) (1 - w film_loss v_s / (v_s + v_film))."""
    mu = mu_dry + wetness * (mu_wet - mu_dry)
    if film_speed_mps > 0.0 and film_loss > 0.0:
        v = abs(sliding_speed_mps)
        mu *= 1.0 - wetness * film_loss * v / (v + film_speed_mps)
    return max(mu, 0.0)


@njit(cache=True)
def contact_damping(stiffness_n_m, load_n, damping_ratio):
    """Damper of the tyre's transient-slip spring: 2 zeta sqrt(k m) with the corner mass m = N / g."""
    return 2.0 * damping_ratio * math.sqrt(max(stiffness_n_m, 0.0) * max(load_n, 0.0) / STANDARD_GRAVITY_MPS2)
