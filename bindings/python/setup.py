"""Builds ferry's Python package: the C extension ferry._native and, unless
FERRY_BUNDLE_LIBFERRY=0, a bundled copy of libferry compiled from ferry's C
core: $FERRY_SOURCE_DIR when set, else the sdist's own copy (csrc/, which
the sdist command puts there), else the checkout two directories up.

LICENSE and NOTICE (license-files in pyproject.toml) are the repository's,
copied next to this file when building from a checkout (git-ignored there).

The bundled copy is ferry/libferry.so.0 inside the package; ferry/_loader.py
uses it only when no libferry is already loaded in the process, $FERRY_LIBRARY
is unset and no installed libferry.so.0 can be found (see README.md).
Everything else is declared in pyproject.toml.
"""
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
# The sdist's copy of the C core (what sdist below writes into it).
BUNDLED_SOURCES = HERE / "csrc"


def source_dir():
    explicit = os.environ.get("FERRY_SOURCE_DIR")
    candidates = [Path(explicit)] if explicit else [BUNDLED_SOURCES, HERE.parents[1]]
    for candidate in candidates:
        if (candidate / "core" / "include" / "ferry" / "ferry.h").is_file():
            return candidate
    sys.exit(
        "ferry-arrow: cannot find ferry's C sources (core/include/ferry/ferry.h): neither the "
        "sdist's csrc/ nor a checkout around this directory"
        + (f" nor FERRY_SOURCE_DIR={explicit}" if explicit else "")
    )


ROOT = source_dir()
INCLUDE = str(ROOT / "core" / "include")

# pyproject.toml's license-files must exist before setup() reads it.
for name in ("LICENSE", "NOTICE"):
    if not (HERE / name).is_file() and (ROOT / name).is_file():
        shutil.copyfile(ROOT / name, HERE / name)


class SdistWithCore(sdist):
    """sdist that carries the C core setup.py compiles (csrc/core/{include,src}
    and the version script), so the sdist builds alone."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        core = ROOT / "core"
        target = Path(base_dir) / "csrc" / "core"
        for sub in ("include", "src"):
            shutil.copytree(core / sub, target / sub, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.o", "__pycache__"))
        (target / "abi").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(core / "abi" / "ferry.map", target / "abi" / "ferry.map")


class BuildWithLibferry(build_ext):
    """build_ext that first compiles the bundled libferry.so.0."""

    def run(self):
        super().run()
        if os.environ.get("FERRY_BUNDLE_LIBFERRY", "1") != "0":
            self.build_libferry()

    def build_libferry(self):
        sources = sorted(str(p) for p in (ROOT / "core" / "src").glob("*.c"))
        output_dir = os.path.join(self.build_temp, "libferry")
        os.makedirs(output_dir, exist_ok=True)

        def compile_one(source):
            return self.compiler.compile(
                [source],
                output_dir=output_dir,
                include_dirs=[INCLUDE, str(ROOT / "core" / "src")],
                macros=[("_GNU_SOURCE", None)],
                extra_preargs=["-std=c11", "-O2", "-fPIC", "-fvisibility=hidden"],
            )

        # One compiler process per core: the core is some forty files, and
        # this build is what `pip install` of the sdist waits for.
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            objects = [obj for objs in pool.map(compile_one, sources) for obj in objs]
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
            # _native.c is the module; the others, by concern, share _native.h
            # (_exception.c is the test plugin's too).
            sources=["src/ferry/" + name + ".c" for name in (
                "_native", "_native_holders", "_native_arrays", "_native_imports",
                "_native_dlpack", "_native_streams", "_exception")],
            depends=["src/ferry/_native.h", "src/ferry/_exception.h"],
            include_dirs=[INCLUDE],
            define_macros=[("_GNU_SOURCE", None)],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibferry, "sdist": SdistWithCore},
)
