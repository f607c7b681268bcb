"""Builds the zapgram Python package by driving CMake (see pyproject.toml).

The extension module zapgram._core is the CMake target `zapgram_python`
(python/src/); setuptools only copies it beside the package's .py files.
CMake configures with this interpreter (Python_EXECUTABLE), without the test
and benchmark targets, in build/pip (or in ZAPGRAM_BUILD_DIR when that is
set: an existing, configured CMake build such as build/, where only the
target is brought up to date; scripts/test.sh installs that way). Needs: cmake, ninja, a C++20 compiler and the Debian packages
of scripts/setup.sh (libabsl-dev, libicu-dev, nlohmann-json3-dev,
pybind11-dev, ...).
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        reuse = "ZAPGRAM_BUILD_DIR" in os.environ  # an existing, configured build: only build the target
        build_dir = pathlib.Path(os.environ.get("ZAPGRAM_BUILD_DIR", ROOT / "build" / "pip"))
        if not reuse:
            build_dir.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
                            "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                            "-DZAPGRAM_BUILD_PYTHON=ON", "-DZAPGRAM_BUILD_TESTS=OFF", "-DZAPGRAM_BUILD_BENCH=OFF"],
                           check=True, stdout=subprocess.DEVNULL)
        jobs = os.environ.get("JOBS", "2")
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "zapgram_python", "-j", jobs], check=True)
        built = list((build_dir / "python" / "zapgram").glob("_core*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _core module in {build_dir}/python/zapgram, found {built}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    package_dir={"": "python"},
    packages=["zapgram"],
    ext_modules=[Extension("zapgram._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build/setuptools"}},
)
