"""Builds ferry's Python package: the C extension ferry._native and, unless
FERRY_BUNDLE_LIBFERRY=0, a bundled copy of libferry compiled from the
repository's core/src (found two directories up, or at $FERRY_SOURCE_DIR).

The bundled copy is ferry/libferry.so.0 inside the package; ferry/_loader.py
uses it only when no libferry is already loaded in the process, $FERRY_LIBRARY
is unset and no installed libferry.so.0 can be found (see README.md).
Everything else is declared in pyproject.toml.
"""
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


def source_dir():
    explicit = os.environ.get("FERRY_SOURCE_DIR")
    candidates = [Path(explicit)] if explicit else [HERE.parents[1]]
    for candidate in candidates:
        if (candidate / "core" / "include" / "ferry" / "ferry.h").is_file():
            return candidate
    sys.exit(
        "ferry-arrow: cannot find ferry's C sources (core/include/ferry/ferry.h); build from a "
        "checkout of the repository (pip install ./bindings/python) or set FERRY_SOURCE_DIR"
    )


ROOT = source_dir()
INCLUDE = str(ROOT / "core" / "include")


class BuildWithLibferry(build_ext):
    """build_ext that first compiles the bundled libferry.so.0."""

    def run(self):
        super().run()
        if os.environ.get("FERRY_BUNDLE_LIBFERRY", "1") != "0":
            self.build_libferry()

    def build_libferry(self):
        sources = sorted(str(p) for p in (ROOT / "core" / "src").glob("*.c"))
        objects = self.compiler.compile(
            sources,
            output_dir=os.path.join(self.build_temp, "libferry"),
            include_dirs=[INCLUDE, str(ROOT / "core" / "src")],
            macros=[("_GNU_SOURCE", None)],
            extra_preargs=["-std=c11", "-O2", "-fPIC", "-fvisibility=hidden"],
        )
        out_dir = os.path.join(self.build_lib, "ferry")
        os.makedirs(out_dir, exist_ok=True)
        version_script = ROOT / "core" / "abi" / "ferry.map"
        self.compiler.link_shared_object(
            objects,
            "libferry.so.0",
            output_dir=out_dir,
            libraries=["pthread", "dl", "m"],
            extra_postargs=[
                "-Wl,-soname,libferry.so.0",
                f"-Wl,--version-script={version_script}",
                "-Wl,--no-undefined",
            ],
        )
        if self.inplace:
            self.copy_file(os.path.join(out_dir, "libferry.so.0"),
                           str(HERE / "src" / "ferry" / "libferry.so.0"))


setup(
    ext_modules=[
        Extension(
            "ferry._native",
            sources=["src/ferry/_native.c"],
            include_dirs=[INCLUDE],
            define_macros=[("_GNU_SOURCE", None)],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibferry},
)
