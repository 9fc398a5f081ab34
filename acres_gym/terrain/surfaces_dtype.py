"""Record dtype of one row of the surface table (hard surfaces and soils alike).

Surface ids are row indices of the table; the terrain's surface grid stores them.
"""

import numpy as np

SURFACE_DTYPE = np.dtype([
    ("is_soil", np.int64),                # 0 hard ground (tanh friction), 1 deformable soil (Wong)
    # hard ground
    ("mu_dry", np.float64),               # peak friction coefficient, dry
    ("mu_wet", np.float64),               # peak friction coefficient, fully wet (wetness 1)
    ("film_loss", np.float64),            # friction share lost to the water film at high sliding speed, wetness 1
    ("film_speed_mps", np.float64),       # sliding speed at which half of film_loss is reached, m/s
    ("slip_stiffness_scale", np.float64), # multiplier on the tyre's hard-surface slip stiffness
    ("rolling_resistance_scale", np.float64),  # multiplier on the tyre's rolling-resistance coefficient
    ("default_wetness", np.float64),      # wetness a terrain cell of this surface gets by default, 0..1
    # soil (Bekker / Janosi-Hanamoto), SI
    ("soil_n", np.float64),               # sinkage exponent n
    ("soil_kc", np.float64),              # cohesive modulus k_c, N/m^(n+1)
    ("soil_kphi", np.float64),            # frictional modulus k_phi, N/m^(n+2)
    ("soil_cohesion_pa", np.float64),     # cohesion c, Pa
    ("soil_friction_deg", np.float64),    # internal friction angle phi, deg
    ("soil_shear_modulus_m", np.float64), # Janosi-Hanamoto shear deformation modulus K, m
    # the same soil at a higher moisture content (wetness 1; the dry set at wetness 0; equal to it when the
    # library has no wet measurement of the soil), SI as above
    ("soil_wet_n", np.float64),
    ("soil_wet_kc", np.float64),
    ("soil_wet_kphi", np.float64),
    ("soil_wet_cohesion_pa", np.float64),
    ("soil_wet_friction_deg", np.float64),
    ("soil_wet_shear_modulus_m", np.float64),
])
# One dtype object for the tables the kernels receive (numba looks array types up by their dtype object).
SURFACE_RECORD_DTYPE = np.dtype((np.record, SURFACE_DTYPE))
