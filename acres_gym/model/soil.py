"""Wong's pneumatic tyre on deformable soil: Bekker pressure-sinkage, compaction and Janosi-Hanamoto shear.

Scalar, pure, allocation-free ``@njit(cache=True)`` functions; everything SI (N, Pa, m, rad). They run
unchanged from Python and with ``NUMBA_DISABLE_JIT=1``. Formulas are those of Wong, *Theory of Ground
Vehicles* (2008), ch. 2, as summarised in ``reference/vehicle_and_soil.md`` §2.1.

Symbols: W normal load on the tyre, N; b tyre width (the smaller side of the contact), m; D = 2 r tyre
diameter, m; n, k_c (N/m^(n+1)), k_phi (N/m^(n+2)) Bekker's sinkage exponent and moduli; c cohesion, Pa;
phi internal friction angle, rad; K Janosi-Hanamoto shear deformation modulus, m; i slip (driving > 0).
k_eq = k_c / b + k_phi is the pressure-sinkage modulus of a plate of width b: p = k_eq z^n.

The tyre (``tyre_on_soil``) runs in one of Wong's two modes:

* rigid mode, p_i + p_c > p_gcr: the soil is too weak to flatten the tyre, which sinks like a rigid
  wheel of diameter D (Bekker's closed forms); its contact is the front arc from the soil surface down
  to the sinkage z, of horizontal length l = sqrt(z (D - z)) (the chord from the entry point to the
  lowest point; no rebound behind the lowest point);
* elastic mode, p_i + p_c <= p_gcr: the tyre flattens and presses the soil with the ground pressure
  p_g = p_i + p_c (inflation plus carcass-stiffness pressure); sinkage and compaction resistance follow
  from p_g alone. Geometry (this model's): the contact is the same front arc down to the elastic sinkage
  z_e, which carries the load a rigid wheel carries at that sinkage (Bekker's relation solved for W,
  ``rigid_wheel_load``), followed by a flat patch at depth z_e carrying the rest of the load at p_g:
  l_flat = (W - W_arc) / (p_g b), l = sqrt(z_e (D - z_e)) + l_flat. At p_g = p_gcr the elastic sinkage
  equals the rigid one, the arc carries all the load and l_flat = 0, so sinkage, contact length,
  compaction resistance and thrust are continuous across the mode switch (a pure flat patch
  W / (p_g b) would jump by 3 / (3 - n) there).

Shear: Janosi-Hanamoto's law integrated over a patch of uniform pressure and length l with the shear
displacement growing as j = i x from the front of the patch:
F = F_max [1 - K / (i l) (1 - exp(-i l / K))], F_max = A c + W tan(phi), A = b l. The tread's own shear
compliance (``tyre_shear_compliance_m``, a Janosi K of the tread and carcass) acts in series with the
soil's: the shear displacements add, which this model approximates by K_eff = K_soil + K_tread.

Lugs (this model's estimate): the soil trapped between the lugs moves with the tyre, so besides the
contact area A the trapped soil also shears along the two side faces of the patch, of area
2 h_lug l on the void share (1 - s_lug) of the length (the side-shear effect of grousered tracks in
Bekker's theory). Only cohesion acts on those vertical faces (their normal stress is not modelled):
F_max = c (A + 2 (1 - s_lug) h_lug l) + W tan(phi). It is monotone in the lug height and adds nothing on
a smooth tyre (h_lug = 0), a solid tread (s_lug = 1) or cohesionless sand.

Carcass hysteresis (this model's estimate, not Wong's): R_h = hysteresis (delta / h_section) W with the
tyre deflection delta = W / k_t in rigid mode (the hard-ground deflection, an upper bound for a tyre
that stays round) and delta = max(W / k_t, r - sqrt(r^2 - (l_flat / 2)^2)) in elastic mode (at least
the hard-ground deflection, and at least the geometric flattening of the flat patch), capped at the
section height. It is continuous across the mode switch.

Bekker's rigid-wheel forms assume modest sinkage (roughly z < D / 6); beyond it they are extrapolated.
The contact geometry caps the sinkage at the radius.
"""

import math

from numba import njit

# Friction of tyre rubber on firm dry earth that the lugs do not penetrate: a dry unpaved (dirt) road, 0.50-0.60
# (bohnenkamp.by tyre friction table, as configs/surfaces.json's packed_dirt), the middle.
RUBBER_ON_FIRM_SOIL_MU = 0.55
SMALL_SHEAR_ARG = 1e-4  # below this i l / K the Janosi factor uses its Taylor series (no 0/0)
MIN_SHEAR_MODULUS_M = 1e-6  # floor on K_eff, m: K = 0 would be a rigid-plastic soil (infinite slope at i = 0)


@njit(cache=True)
def _between(dry, wet, wetness, geometric):
    if geometric and dry > 0.0 and wet > 0.0:
        return dry * (wet / dry) ** wetness
    return dry + wetness * (wet - dry)


@njit(cache=True)
def soil_at_wetness(row, wetness):
    """The soil of surface-table ``row`` at a cell's ``wetness`` (0..1): (n, k_c, k_phi, c, phi deg, K).

    Wetness 0 is the soil's own set (its measurement, Wong's Table 2.3 at that moisture content), 1 its wet
    set (the same soil measured at a higher moisture content, ``soil_wet_*``; the own set when the library has
    none). Between them the moisture content is taken linear in wetness and each parameter interpolated: n, phi
    and K linearly; k_c, k_phi and c, which change by up to two orders of magnitude between the two
    measurements, geometrically (linear in their logarithm). At wetness 0 the own set, exactly."""
    if wetness <= 0.0:
        return (row.soil_n, row.soil_kc, row.soil_kphi, row.soil_cohesion_pa, row.soil_friction_deg,
                row.soil_shear_modulus_m)
    w = min(wetness, 1.0)
    return (_between(row.soil_n, row.soil_wet_n, w, False),
            _between(row.soil_kc, row.soil_wet_kc, w, True),
            _between(row.soil_kphi, row.soil_wet_kphi, w, True),
            _between(row.soil_cohesion_pa, row.soil_wet_cohesion_pa, w, True),
            _between(row.soil_friction_deg, row.soil_wet_friction_deg, w, False),
            _between(row.soil_shear_modulus_m, row.soil_wet_shear_modulus_m, w, False))


@njit(cache=True)
def pressure_sinkage_modulus(kc, kphi, width_m):
    """Bekker's modulus of a plate of width b: k_eq = k_c / b + k_phi, N/m^(n+2) (p = k_eq z^n)."""
    return kc / width_m + kphi


@njit(cache=True)
def critical_ground_pressure(load_n, width_m, diameter_m, n, kc, kphi):
    """Wong's critical ground pressure of the equivalent rigid wheel, Pa.

    p_gcr = (k_c / b + k_phi)^(1 / (2n + 1)) [3 W / ((3 - n) b sqrt(D))]^(2n / (2n + 1)),
    the pressure under the lowest point of a rigid wheel of diameter D carrying W (k_eq z0^n with z0
    from ``rigid_sinkage``). A tyre with p_i + p_c > p_gcr stays round (rigid mode).
    """
    if load_n <= 0.0:
        return 0.0
    k_eq = pressure_sinkage_modulus(kc, kphi, width_m)
    e = 2.0 * n + 1.0
    base = 3.0 * load_n / ((3.0 - n) * width_m * math.sqrt(diameter_m))
    return k_eq ** (1.0 / e) * base ** (2.0 * n / e)


@njit(cache=True)
def rigid_sinkage(load_n, width_m, diameter_m, n, kc, kphi):
    """Bekker's sinkage of a rigid wheel, m.

    z0 = [3 W / ((3 - n)(k_c + b k_phi) sqrt(D))]^(2 / (2n + 1)).
    """
    if load_n <= 0.0:
        return 0.0
    base = 3.0 * load_n / ((3.0 - n) * (kc + width_m * kphi) * math.sqrt(diameter_m))
    return base ** (2.0 / (2.0 * n + 1.0))


@njit(cache=True)
def rigid_wheel_load(sinkage_m, width_m, diameter_m, n, kc, kphi):
    """Load a rigid wheel carries at sinkage z0 (``rigid_sinkage`` solved for W), N.

    W = (3 - n) / 3 (k_c + b k_phi) sqrt(D) z0^((2n + 1) / 2).
    """
    if sinkage_m <= 0.0:
        return 0.0
    return (3.0 - n) / 3.0 * (kc + width_m * kphi) * math.sqrt(diameter_m) * sinkage_m ** (n + 0.5)


@njit(cache=True)
def rigid_compaction_resistance(load_n, width_m, diameter_m, n, kc, kphi):
    """Bekker's compaction (motion) resistance of a rigid wheel, N.

    R_c = (3 W / sqrt(D))^((2n + 2) / (2n + 1))
          / [(3 - n)^((2n + 2) / (2n + 1)) (n + 1) (k_c + b k_phi)^(1 / (2n + 1))],
    equal to b k_eq z0^(n + 1) / (n + 1): the work of pressing a rut of depth z0 per unit travel.
    """
    if load_n <= 0.0:
        return 0.0
    e = 2.0 * n + 1.0
    a = (2.0 * n + 2.0) / e
    num = (3.0 * load_n / math.sqrt(diameter_m)) ** a
    den = (3.0 - n) ** a * (n + 1.0) * (kc + width_m * kphi) ** (1.0 / e)
    return num / den


@njit(cache=True)
def elastic_sinkage(ground_pressure_pa, width_m, n, kc, kphi):
    """Wong's sinkage of a flattened (elastic-mode) tyre, m: z0 = [p_g / (k_c / b + k_phi)]^(1 / n)."""
    if ground_pressure_pa <= 0.0:
        return 0.0
    return (ground_pressure_pa / pressure_sinkage_modulus(kc, kphi, width_m)) ** (1.0 / n)


@njit(cache=True)
def elastic_compaction_resistance(ground_pressure_pa, width_m, n, kc, kphi):
    """Wong's compaction resistance of a flattened (elastic-mode) tyre, N.

    R_c = b p_g^((n + 1) / n) / [(n + 1) (k_c / b + k_phi)^(1 / n)], evaluated as the equal
    b p_g z0 / (n + 1) with z0 from ``elastic_sinkage`` (no overflow for small n).
    """
    z0 = elastic_sinkage(ground_pressure_pa, width_m, n, kc, kphi)
    return width_m * ground_pressure_pa * z0 / (n + 1.0)


@njit(cache=True)
def arc_contact_length(sinkage_m, radius_m):
    """Horizontal length of the front arc of a wheel of radius r sunk by z, m: l = sqrt(z (2r - z)).

    The chord from the soil entry point to the lowest point; the sinkage is capped at r (l = r).
    """
    z = min(max(sinkage_m, 0.0), radius_m)
    return math.sqrt(z * (2.0 * radius_m - z))


@njit(cache=True)
def tyre_on_soil(load_n, width_m, radius_m, inflation_pa, carcass_pa, tyre_vertical_stiffness_n_m,
                 hysteresis, section_m, n, kc, kphi):
    """Wong's pneumatic tyre on soil: mode, sinkage, contact length and the two rolling resistances.

    Mode: elastic if p_g = p_i + p_c <= p_gcr (``critical_ground_pressure`` with D = 2 r), else rigid.

    * rigid: z = ``rigid_sinkage``, R_c = ``rigid_compaction_resistance``, l = sqrt(z (D - z)),
      tyre deflection delta = W / k_t;
    * elastic: z = ``elastic_sinkage`` (p_g), R_c = ``elastic_compaction_resistance`` (p_g),
      l = sqrt(z (D - z)) + l_flat with l_flat = (W - W_arc(z)) / (p_g b) (capped at D),
      delta = max(W / k_t, r - sqrt(r^2 - (l_flat / 2)^2)).

    Hysteresis resistance R_h = hysteresis min(delta / h_section, 1) W (an estimate of this model).
    The contact area for the shear is A = b l. Returns (sinkage_m, contact_length_m,
    compaction_resistance_n, hysteresis_resistance_n, elastic_mode 0/1); all zero for W <= 0.
    """
    if load_n <= 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0
    diameter_m = 2.0 * radius_m
    ground_pa = inflation_pa + carcass_pa
    deflection_m = load_n / tyre_vertical_stiffness_n_m
    if ground_pa > critical_ground_pressure(load_n, width_m, diameter_m, n, kc, kphi):
        elastic_mode = 0
        sinkage_m = rigid_sinkage(load_n, width_m, diameter_m, n, kc, kphi)
        compaction_n = rigid_compaction_resistance(load_n, width_m, diameter_m, n, kc, kphi)
        contact_m = arc_contact_length(sinkage_m, radius_m)
    else:
        elastic_mode = 1
        sinkage_m = elastic_sinkage(ground_pa, width_m, n, kc, kphi)
        compaction_n = elastic_compaction_resistance(ground_pa, width_m, n, kc, kphi)
        arc_load_n = rigid_wheel_load(sinkage_m, width_m, diameter_m, n, kc, kphi)
        flat_m = min(max(load_n - arc_load_n, 0.0) / (ground_pa * width_m), diameter_m)
        contact_m = arc_contact_length(sinkage_m, radius_m) + flat_m
        half = 0.5 * flat_m
        deflection_m = max(deflection_m, radius_m - math.sqrt(radius_m * radius_m - half * half))
    relative_deflection = min(deflection_m / section_m, 1.0)
    hysteresis_n = hysteresis * relative_deflection * load_n
    return sinkage_m, contact_m, compaction_n, hysteresis_n, elastic_mode


@njit(cache=True)
def effective_shear_modulus(soil_shear_modulus_m, tread_shear_compliance_m):
    """Soil and tread shear compliances in series: K_eff = K_soil + K_tread, m (floored at 1 um)."""
    return max(soil_shear_modulus_m + tread_shear_compliance_m, MIN_SHEAR_MODULUS_M)


@njit(cache=True)
def max_shear_force(load_n, contact_area_m2, contact_length_m, cohesion_pa, friction_rad,
                    lug_area_share, lug_height_m):
    """Plateau of the soil shear force of the patch, N (the soil's friction circle radius).

    F_max = c (A + 2 (1 - s_lug) h_lug l) + W tan(phi): Coulomb-Mohr over the contact area A plus the
    cohesive side shear of the soil trapped between the lugs (module docstring). Zero for W <= 0.
    """
    if load_n <= 0.0 or contact_length_m <= 0.0:
        return 0.0
    side_area_m2 = 2.0 * (1.0 - lug_area_share) * lug_height_m * contact_length_m
    return cohesion_pa * (contact_area_m2 + side_area_m2) + load_n * math.tan(friction_rad)


@njit(cache=True)
def janosi_factor(x):
    """Janosi-Hanamoto patch factor and its derivative for x = |i| l / K >= 0.

    g(x) = 1 - (1 - exp(-x)) / x, g'(x) = (1 - exp(-x) - x exp(-x)) / x^2; for x < 1e-4 the series
    g = x/2 - x^2/6 + x^3/24, g' = 1/2 - x/3 + x^2/8 (no 0/0 at zero slip). g rises from 0 to 1.
    """
    if x < SMALL_SHEAR_ARG:
        return x * (0.5 - x * (1.0 / 6.0 - x / 24.0)), 0.5 - x * (1.0 / 3.0 - x / 8.0)
    e = math.exp(-x)
    one_minus_e = -math.expm1(-x)
    return 1.0 - one_minus_e / x, (one_minus_e - x * e) / (x * x)


@njit(cache=True)
def janosi_thrust(slip, f_max, contact_length_m, shear_modulus_m):
    """Janosi-Hanamoto thrust of a patch of plateau ``f_max`` at slip i, and dF/di, N:
    F = F_max [1 - K / (i l) (1 - exp(-i l / K))], odd in i, i clamped to [-1, 1] (dF/di = 0 outside)."""
    if f_max <= 0.0:
        return 0.0, 0.0
    k = max(shear_modulus_m, MIN_SHEAR_MODULUS_M)
    i = min(max(slip, -1.0), 1.0)
    g, dg = janosi_factor(abs(i) * contact_length_m / k)
    thrust_n = math.copysign(f_max * g, i)
    dthrust_dslip = f_max * dg * contact_length_m / k if abs(slip) <= 1.0 else 0.0
    return thrust_n, dthrust_dslip


@njit(cache=True)
def gross_thrust(slip, load_n, contact_area_m2, contact_length_m, cohesion_pa, friction_rad,
                 shear_modulus_m, lug_area_share, lug_height_m):
    """Janosi-Hanamoto gross thrust of a patch of uniform pressure at slip i, and dF/di, N.

    F = F_max [1 - K / (i l) (1 - exp(-i l / K))] (``max_shear_force`` for F_max), odd in i (braking
    i < 0 gives -F(|i|)); i is clamped to [-1, 1] and the derivative is 0 outside. ``shear_modulus_m``
    is the effective K (``effective_shear_modulus``). At i -> 0: F ~ F_max l i / (2 K).
    """
    f_max = max_shear_force(load_n, contact_area_m2, contact_length_m, cohesion_pa, friction_rad,
                            lug_area_share, lug_height_m)
    return janosi_thrust(slip, f_max, contact_length_m, shear_modulus_m)


@njit(cache=True)
def tyre_shear_limit(load_n, contact_area_m2, contact_length_m, cohesion_pa, friction_rad, lug_area_share,
                     lug_height_m, sinkage_m):
    """The tyre's shear plateau on soil, N: where the shear plane runs.

    A tyre that sinks by its lug height or more shears the soil trapped between its lugs: the soil's own
    Mohr-Coulomb strength, ``max_shear_force`` (Wong: F_max = A c + W tan(phi)). A tyre that does not sink
    (firm, strong soil: dry clays) cannot shear the soil, whose strength exceeds the rubber's grip: the
    shear plane runs along the rubber-soil interface, and the limit is the rubber's friction on firm earth,
    ``RUBBER_ON_FIRM_SOIL_MU`` x W (cited there). In between, with the lugs engaged over a share
    e = z / h_lug of their height, F = mu W + e (F_soil - mu W); never above F_soil.
    """
    f_soil = max_shear_force(load_n, contact_area_m2, contact_length_m, cohesion_pa, friction_rad,
                             lug_area_share, lug_height_m)
    interface = RUBBER_ON_FIRM_SOIL_MU * load_n
    if f_soil <= interface:
        return f_soil
    engaged = min(max(sinkage_m / lug_height_m, 0.0), 1.0) if lug_height_m > 0.0 else 1.0
    return interface + engaged * (f_soil - interface)


@njit(cache=True)
def drawbar_pull(slip, load_n, width_m, radius_m, inflation_pa, carcass_pa, tyre_vertical_stiffness_n_m,
                 hysteresis, section_m, n, kc, kphi, cohesion_pa, friction_rad, soil_shear_modulus_m,
                 tread_shear_compliance_m, lug_area_share, lug_height_m):
    """Drawbar pull of a tyre rolling forward on soil at slip i, N: DP = F(i) - R_c - R_h (Wong, Theory of
    Ground Vehicles ch. 2: thrust less the compaction and the carcass's resistance).

    ``tyre_on_soil`` for the contact and resistances, A = b l, ``janosi_thrust`` of the plateau
    ``tyre_shear_limit`` with K_eff = K_soil + K_tread: the figure a wheel of the vehicle on fresh soil
    pulls with (``wheel.soil_contact`` applies the resistances at the contact).
    """
    sinkage_m, contact_m, compaction_n, hysteresis_n, _ = tyre_on_soil(
        load_n, width_m, radius_m, inflation_pa, carcass_pa, tyre_vertical_stiffness_n_m,
        hysteresis, section_m, n, kc, kphi)
    k_eff = effective_shear_modulus(soil_shear_modulus_m, tread_shear_compliance_m)
    f_max = tyre_shear_limit(load_n, width_m * contact_m, contact_m, cohesion_pa, friction_rad, lug_area_share,
                             lug_height_m, sinkage_m)
    thrust_n, _ = janosi_thrust(slip, f_max, contact_m, k_eff)
    return thrust_n - compaction_n - hysteresis_n
