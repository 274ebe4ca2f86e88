"""ferry's exceptions: every failure of the C library arrives as a FerryError
carrying the errno code and the library's message."""
from __future__ import annotations

import errno as _errno

from . import _native

# ClosedError (a ValueError): the object was closed (released, moved or
# handed on), here or by another thread, before the call could use it.
# Raised by the C half, hence defined there.
ClosedError = _native.ClosedError


class FerryError(Exception):
    """A ferry operation failed.

    Attributes:
        code: the errno code the C library returned (errno.EINVAL, ...).
        name: its symbolic name ("EINVAL").
        message: the library's message, naming what is wrong.
    """

    def __init__(self, code: int, message: str) -> None:
        self.code = int(code)
        self.name = _errno.errorcode.get(self.code, f"E{self.code}")
        self.message = message
        super().__init__(f"[{self.name}] {message}")


class InvalidArgumentError(FerryError, ValueError):
    """EINVAL: bad input (a malformed array, a released struct, a bad case)."""


class OutOfMemoryError(FerryError, MemoryError):
    """ENOMEM: host or device memory ran out."""


class DeviceUnavailableError(FerryError):
    """ENODEV / ENOTSUP: the device or its backend cannot be used here."""


class DeviceIOError(FerryError):
    """EIO: a device, a driver or a producer failed."""


class ExportError(FerryError, BufferError):
    """The data cannot be exported through a protocol (DLPack, PyCapsules):
    a BufferError, as the array API standard asks, that keeps the errno code."""


_BY_CODE = {
    _errno.EINVAL: InvalidArgumentError,
    _errno.ENOMEM: OutOfMemoryError,
    _errno.ENODEV: DeviceUnavailableError,
    _errno.ENOTSUP: DeviceUnavailableError,
    _errno.EIO: DeviceIOError,
}


def from_code(code: int, message: str, buffer: int | bool = False) -> FerryError:
    """The exception for an errno code; `buffer` gives the ExportError flavour."""
    if buffer:
        return ExportError(code, message)
    return _BY_CODE.get(int(code), FerryError)(code, message)
