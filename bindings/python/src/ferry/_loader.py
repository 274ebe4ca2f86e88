"""Finds and loads the one libferry of this process.

ferry keeps process-wide state (the device registry, the sim device's events
and streams), so every runtime in a process must use the same copy of the
library. The order, first match wins:

1. a libferry that is already loaded in the process (another runtime's
   plugin, a C host): dlopen("libferry.so.0", RTLD_NOLOAD);
2. $FERRY_LIBRARY, a path to libferry.so;
3. the installed library, found by the dynamic linker ("libferry.so.0":
   LD_LIBRARY_PATH, the ld.so cache, the default directories);
4. the copy bundled in this package (ferry/libferry.so.0).

A library loaded later by another runtime that asks for libferry.so.0 gets
the copy already loaded, whichever it is (the dynamic linker matches the
soname). The choice and its reason are in ferry.library_info().
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import cffi

from . import _cdef, _errors, _native

SONAME = "libferry.so.0"
_HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class LibraryInfo:
    """Which libferry this process uses and why."""

    path: str  #: the file actually loaded
    source: str  #: "already loaded", "FERRY_LIBRARY", "installed" or "bundled"
    version: str  #: ferry_version() of that library


ffi = cffi.FFI()
ffi.cdef(_cdef.CDEF)


def _loaded_path(lib) -> str:
    """The file behind a loaded library, from /proc/self/maps (Linux)."""
    address = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ferry_version")))
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                low, high = (int(x, 16) for x in fields[0].split("-"))
                if low <= address < high and len(fields) >= 6:
                    return fields[5]
    except OSError:
        pass
    return "?"


def _open():
    attempts = []

    def attempt(name, flags, source):
        try:
            lib = ffi.dlopen(name, flags)
        except OSError as exc:
            attempts.append(f"{source} ({name}): {exc}")
            return None
        return lib, source

    found = attempt(SONAME, ffi.RTLD_NOW | ffi.RTLD_NOLOAD, "already loaded")
    explicit = os.environ.get("FERRY_LIBRARY")
    if found is None and explicit:
        found = attempt(explicit, ffi.RTLD_NOW | ffi.RTLD_GLOBAL, "FERRY_LIBRARY")
        if found is None:
            raise ImportError(f"ferry: FERRY_LIBRARY={explicit} cannot be loaded: {attempts[-1]}")
    if found is None:
        found = attempt(SONAME, ffi.RTLD_NOW | ffi.RTLD_GLOBAL, "installed")
    if found is None:
        bundled = os.path.join(_HERE, SONAME)
        if os.path.exists(bundled):
            found = attempt(bundled, ffi.RTLD_NOW | ffi.RTLD_GLOBAL, "bundled")
        else:
            attempts.append(f"bundled ({bundled}): not built into this package")
    if found is None:
        raise ImportError("ferry: no libferry found; tried\n  " + "\n  ".join(attempts))
    return found


lib, _source = _open()
_path = _loaded_path(lib)

_check = ffi.new("struct FerryError*")
if lib.ferry_check_abi_version(_cdef.CONSTANTS["FERRY_ABI_VERSION"], _check) != 0:
    raise ImportError(f"ferry: {_path}: {ffi.string(_check.message).decode()}")

# The C half binds to the very same library (by its path, which is loaded).
_native.load(_path if _path != "?" else SONAME, _errors.from_code)

INFO = LibraryInfo(path=_path, source=_source, version=ffi.string(lib.ferry_version()).decode())
