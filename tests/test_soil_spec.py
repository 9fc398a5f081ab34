"""The soil spec (acres_gym.terrain.soil_spec): one format and one set of limits for every owner of a soil."""

import json
import shutil

import numpy as np
import pytest

from acres_gym.envs.randomization import Randomizer
from acres_gym.paths import config_path
from acres_gym.terrain import SURFACE_DTYPE, default_surfaces, load_surface_table, make_surface_table
from acres_gym.terrain.soil_random import DEFAULT_SCALE, check_draws, draw_soil, load_soils, soils_path
from acres_gym.terrain.soil_spec import SOIL_BY_KEY, SOIL_FIELDS, SOIL_KEYS, SOIL_SPEC, check_soil

VEHICLE = "polaris_ranger_crew_xp1000"
# heavy_clay's friction angle, 34 deg, doubled: outside [0, 60] deg
TOO_STEEP = r"friction_angle \(soil_friction_deg\) = 68 deg is outside the allowed range \[0, 60\] deg"


def test_the_spec_names_surface_table_fields_and_the_library_units():
    assert set(SOIL_FIELDS) <= set(SURFACE_DTYPE.names)
    assert SOIL_KEYS == ("n", "kc", "kphi", "cohesion", "friction_angle", "shear_modulus")
    data = json.loads(soils_path().read_text(encoding="utf-8"))["soils"]
    for name, entry in data.items():
        for p in SOIL_SPEC:
            assert entry[p.key]["unit"] == p.unit, (name, p.key)
            assert p.lo <= p.hi and p.units[p.unit] == p.to_si


def test_every_shipped_soil_lies_within_the_limits():
    library = load_soils()
    table = default_surfaces()
    soils = table.records[table.records.is_soil == 1]
    assert len(soils) == len(library)
    for row in soils:
        for p in SOIL_SPEC:
            assert p.lo <= row[p.field] <= p.hi, (p.key, row[p.field])
    for name, soil in library.items():
        check_soil(soil, name)


def test_every_drawn_soil_lies_within_the_limits():
    library = load_soils()
    check_draws()  # every soil at both ends of every default range
    for name, soil in library.items():
        for p in SOIL_SPEC:
            lo, hi = DEFAULT_SCALE.get(p.key, (1.0, 1.0))
            assert p.lo <= soil[p.field] * lo and soil[p.field] * hi <= p.hi, (name, p.key)
    rng = np.random.default_rng(5)
    for _ in range(100):
        drawn = draw_soil(rng, soils=library)
        for p in SOIL_SPEC:
            assert p.lo <= drawn[p.field] <= p.hi, (drawn["name"], p.key)


def _library_with(tmp_path, monkeypatch, key, value):
    library = json.loads(soils_path().read_text(encoding="utf-8"))
    library["soils"]["heavy_clay"][key]["value"] = value
    path = tmp_path / "soils.json"
    path.write_text(json.dumps(library), encoding="utf-8")
    shutil.copy(config_path("surfaces.json"), tmp_path / "surfaces.json")
    monkeypatch.setenv("ACRES_GYM_CONFIG_DIR", str(tmp_path))
    return path


def test_a_value_outside_is_refused_the_same_way_at_every_entry_point(tmp_path, monkeypatch):
    clay = json.loads(soils_path().read_text(encoding="utf-8"))["soils"]["heavy_clay"]
    steep = {**{k: clay[k] for k in SOIL_KEYS}, "friction_angle": {"value": 68, "unit": "deg", "source": "t"}}
    # the surface table (soils added to it, and configs/soils.json)
    with pytest.raises(ValueError, match="soil 'steep': " + TOO_STEEP):
        make_surface_table({"steep": steep})
    # the soil library's draw (a scale range that leaves the limits)
    with pytest.raises(ValueError, match="soil 'heavy_clay' after scaling .*: " + TOO_STEEP):
        draw_soil(np.random.default_rng(0), names="heavy_clay", scale={"friction_angle": (2.0, 2.0)})
    with pytest.raises(ValueError, match="soil 'heavy_clay' scaled by 2..2: " + TOO_STEEP):
        check_draws("heavy_clay", {"friction_angle": (2.0, 2.0)})
    # the environments' randomisation: refused when built, not at a reset
    config = {"terrain": {"surface": "soil"}, "patches": None,
              "soil": {"names": ["heavy_clay"], "scale": {"friction_angle": [2.0, 2.0]}}}
    with pytest.raises(ValueError, match="randomization.soil: soil 'heavy_clay' scaled by 2..2: " + TOO_STEEP):
        Randomizer(config, 1, VEHICLE, None)
    # a range whose upper end leaves the limits is refused although some draws would lie within
    config["soil"]["scale"] = {"friction_angle": [1.0, 2.0]}
    with pytest.raises(ValueError, match=r"randomization.soil: .*friction_angle \(soil_friction_deg\) = 68 deg"):
        Randomizer(config, 1, VEHICLE, None)
    # the library file itself, read by the surface table and by the soil library
    path = _library_with(tmp_path, monkeypatch, "friction_angle", 68)
    with pytest.raises(ValueError, match="soil 'heavy_clay': " + TOO_STEEP):
        load_surface_table(soils_path=path)
    with pytest.raises(ValueError, match="soils.heavy_clay: " + TOO_STEEP):
        load_soils()


@pytest.mark.parametrize("key", SOIL_KEYS)
def test_each_limit_is_refused_naming_the_key_and_the_range(key, tmp_path, monkeypatch):
    p = SOIL_BY_KEY[key]
    above = p.hi / p.to_si * 2.0  # in the library's unit
    path = _library_with(tmp_path, monkeypatch, key, above)
    expected = rf"soils.heavy_clay: {key} \({p.field}\) = .* is outside the allowed range \[{p.lo:g}, {p.hi:g}\]"
    with pytest.raises(ValueError, match=expected.replace("+", r"\+")):
        load_soils()
    with pytest.raises(ValueError, match=rf"soil 'heavy_clay': {key} \({p.field}\) = .* is outside"):
        load_surface_table(soils_path=path)


def test_a_soil_must_bear_a_load():
    soil = dict(load_soils()["heavy_clay"], soil_kc=0.0, soil_kphi=0.0)
    with pytest.raises(ValueError, match="here: kc \\+ kphi must be > 0"):
        check_soil(soil, "here")
