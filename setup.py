"""Copies kernels/, shaders/ and scenes/ into the wheel as galaxyview/_data/ (see resources.py)."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_DIRS = ("kernels", "shaders", "scenes")


class BuildWithData(build_py):
    def run(self):
        super().run()
        root = Path(__file__).parent
        target = Path(self.build_lib) / "galaxyview" / "_data"
        for name in DATA_DIRS:
            src = root / name
            if src.is_dir():
                shutil.copytree(src, target / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithData})
