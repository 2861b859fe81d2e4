"""kernels/, shaders/ and scenes/ are found from a checkout and from an installed wheel."""
import pytest

from galaxyview import resources
from galaxyview.errors import GalaxyviewError


def test_checkout_folders_are_found():
    assert (resources.kernels_dir() / "nbody_walk.cu").is_file()
    assert (resources.shaders_dir() / "particles.vert").is_file()
    assert (resources.scenes_dir() / "antennae.toml").is_file()


def test_installed_layout_is_found(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "galaxyview"
    (pkg / "_data" / "scenes").mkdir(parents=True)
    monkeypatch.setattr(resources, "_PACKAGE", pkg)
    assert resources.scenes_dir() == pkg / "_data" / "scenes"
    with pytest.raises(GalaxyviewError, match="'shaders' folder is missing.*reinstall"):
        resources.shaders_dir()


def test_setup_copies_every_data_folder_into_the_wheel():
    import ast
    from pathlib import Path

    tree = ast.parse((Path(resources.__file__).parents[1] / "setup.py").read_text())
    names = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", "") == "DATA_DIRS")
    assert {elt.value for elt in names.elts} == {"kernels", "shaders", "scenes"}


def test_sdist_carries_every_data_folder():
    """The wheel built from the sdist (python -m build) has them only if the sdist does."""
    from pathlib import Path

    root = Path(resources.__file__).parents[1]
    lines = {line.split("#")[0].strip() for line in (root / "MANIFEST.in").read_text().splitlines()}
    assert {"graft kernels", "graft shaders", "graft scenes"} <= lines
