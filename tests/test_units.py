"""The physical constants (model/units.py, their one source) against astropy's."""
import ast
from pathlib import Path

import pytest

import galaxyview
from galaxyview.model import units

const = pytest.importorskip("astropy.constants")  # (astropy is in the test extra)
u = pytest.importorskip("astropy.units")


@pytest.mark.parametrize("name, expect", [
    ("G_SI", lambda: const.G.si.value),
    ("G_CGS", lambda: const.G.cgs.value),
    ("MSUN_KG", lambda: const.M_sun.si.value),
    ("MSUN_G", lambda: const.M_sun.cgs.value),
    ("PC_M", lambda: u.pc.to(u.m)),
    ("KPC_M", lambda: u.kpc.to(u.m)),
    ("KPC_KM", lambda: u.kpc.to(u.km)),
    ("KPC_CM", lambda: u.kpc.to(u.cm)),
    ("YR_S", lambda: u.yr.to(u.s)),
    ("MYR_S", lambda: u.Myr.to(u.s)),
    ("G_KPC_KMS2_PER_MSUN",
     lambda: (const.G * const.M_sun / u.kpc / (u.km / u.s) ** 2).decompose().value),
])
def test_constant_matches_astropy(name, expect):
    assert getattr(units, name) == pytest.approx(expect(), rel=1e-12)


def test_unit_system_velocity_and_time_match_astropy():
    system = units.UnitSystem(length_kpc=2.0, mass_msun=3e10)
    v = (const.G * 3e10 * const.M_sun / (2 * u.kpc)) ** 0.5
    assert system.velocity_kms == pytest.approx(v.to(u.km / u.s).value, rel=1e-12)
    assert system.time_myr == pytest.approx((2 * u.kpc / v).to(u.Myr).value, rel=1e-12)


def test_no_physical_constant_is_defined_outside_units():
    """Modules import the constants; a float literal of one (G, Msun, kpc, yr in any unit,
    given to 4 digits or more) anywhere else in the package is a second source."""
    values = [units.G_SI, units.MSUN_KG, units.PC_M, units.YR_S, units.G_KPC_KMS2_PER_MSUN]
    scaled = [v * 10.0 ** k for v in values for k in range(-12, 13)]
    package = Path(galaxyview.__file__).parent
    found = []
    for path in package.rglob("*.py"):
        if path.name == "units.py" and path.parent.name == "model":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, float) and \
                    _digits(node.value) >= 4 and any(abs(node.value / s - 1) < 1e-3
                                                     for s in scaled):
                found.append(f"{path.relative_to(package)}:{node.lineno}: {node.value!r}")
    assert not found, "physical constants outside model/units.py:\n" + "\n".join(found)


def _digits(value: float) -> int:
    mantissa = f"{value:.15e}".split("e")[0].rstrip("0").replace(".", "").lstrip("-")
    return len(mantissa)
