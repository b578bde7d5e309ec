"""The setuptools side of `pip install .` (pyproject.toml): the extension asyncps._asyncps is
built by the project's own CMake, never by setuptools' compiler driver, so the module a pip user
gets is the one `make` builds and the tests test (same flags, the CPU kernels for every level,
libasyncps linked in statically: one file next to the Python sources of python/asyncps).

Environment: ASYNCPS_CMAKE_ARGS  more CMake arguments (e.g. -DASYNCPS_MPI=mpich)
             CMAKE_BUILD_PARALLEL_LEVEL  jobs (default: the CPUs this process may use)
             ASYNCPS_PIP_BUILD_DIR  setuptools' and CMake's scratch (default: build-pip here)
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
SCRATCH = os.environ.get("ASYNCPS_PIP_BUILD_DIR") or "build-pip"
if SCRATCH != "build-pip":
    Path(SCRATCH).mkdir(parents=True, exist_ok=True)


def project_version() -> str:
    m = re.search(r"project\(asyncps VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if not m:
        sys.exit("asyncps: no `project(asyncps VERSION x.y.z` line in CMakeLists.txt")
    return m.group(1)


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if shutil.which("cmake") is None:
            sys.exit("asyncps: cmake not found (make deps, or apt install cmake)")
        build = Path(self.build_temp).resolve() / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        args = [
            "cmake", "-S", str(ROOT), "-B", str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DASYNCPS_BUILD_PYTHON=ON",
            "-DASYNCPS_BUILD_TESTS=OFF", "-DASYNCPS_BUILD_BENCH=OFF", "-DASYNCPS_BUILD_APPS=OFF",
            "-DASYNCPS_WITH_CUDA=OFF",  # (the module never runs the GPU backend)
        ] + shlex.split(os.environ.get("ASYNCPS_CMAKE_ARGS", ""))
        subprocess.run(args, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(len(os.sched_getaffinity(0)))
        subprocess.run(["cmake", "--build", str(build), "--target", "asyncps_python", "-j", jobs], check=True)
        built = sorted((build / "python" / "asyncps").glob("_asyncps*.so"))
        if not built:
            sys.exit(f"asyncps: CMake built no Python module in {build}/python/asyncps "
                     "(Python headers or pybind11 missing? make deps installs them)")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)


setup(
    version=project_version(),
    packages=["asyncps"],
    package_dir={"asyncps": "python/asyncps"},
    ext_modules=[CMakeExtension("asyncps._asyncps")],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' scratch beside, not inside, the CMake build trees build/ and build-*/
    options={"build": {"build_base": SCRATCH}, "egg_info": {"egg_base": SCRATCH}},
    zip_safe=False,
)
