"""Python as the host of the cross-language matrix.

This pytest process (CPython is the process's own runtime: its interpreter
started first, it owns the main thread and its signal handlers) loads every
runtime's test plugin with the matrix host's harness as a shared library,
build/it/libferry_it_matrix.so (tests/integration/host/matrix_lib.c), so that
nothing about the load order is reimplemented here: the harness loads
core/harness/runtimes.def's runtimes in its order (the JVM started before Go,
the SA_ONSTACK fix-up between them), reads tests/integration/cases.txt and
runs each handoff with tests/integration/host/handoff.c, which asserts
exactly what ferry_it_host asserts (the consumer's verdict, every struct
released exactly once with the producer's buffers, the injected failures,
the tamper and sim witnesses, every runtime's allocations back at baseline).
Python takes part through its own plugin, libferry_it_python.so, which finds
this interpreter running and uses it: ctypes releases the GIL around every
call into the harness, and the plugin takes it back on whichever thread
calls into Python (the cases marked "thread" run on new threads).

Every ordered pair of the loaded runtimes runs, for arrays and for streams.
FERRY_PY_MATRIX_REQUIRE (default: every runtime of runtimes.def) names the
runtimes that must load; one that does not fails test_runtimes_loaded. A
process that loaded the JVM or Go ends with os._exit (conftest.py), as
runtimes.def's QUICK_EXIT asks.
"""
import ctypes
from pathlib import Path
import os
import re

import pytest

from conftest import BUILD, ROOT

MATRIX_LIB = BUILD / "it" / "libferry_it_matrix.so"
CASES_FILE = Path(os.environ.get("FERRY_IT_CASES_FILE", ROOT / "tests" / "integration" / "cases.txt"))
RUNTIMES_DEF = ROOT / "core" / "harness" / "runtimes.def"


def runtimes_of_the_list():
    """The runtime names of runtimes.def, in load order."""
    return re.findall(r"^FERRY_IT_RUNTIME\(([a-z0-9_]+),", RUNTIMES_DEF.read_text(), re.M)


# ferry_it_matrix_<name>: (argtypes or None when ctypes' default does, restype).
MATRIX_SIGNATURES = {
    "open": ([ctypes.c_char_p] * 3, ctypes.c_char_p),
    "load_report": (None, ctypes.c_char_p),
    "runtime_name": ([ctypes.c_int], ctypes.c_char_p),
    "live_allocations": ([ctypes.c_int], ctypes.c_int64),
    "case_label": ([ctypes.c_int] * 2, ctypes.c_char_p),
    "run": ([ctypes.c_int] * 4, ctypes.c_char_p),
    "witness_sim_pending": (None, ctypes.c_int64),
    "witness_tampered": (None, ctypes.c_int64),
}


def open_matrix():
    """The harness library with one session open, or None when not built."""
    if not MATRIX_LIB.exists():
        return None
    lib = ctypes.CDLL(str(MATRIX_LIB))
    for name, (argtypes, restype) in MATRIX_SIGNATURES.items():
        function = getattr(lib, "ferry_it_matrix_" + name)
        if argtypes is not None:
            function.argtypes = argtypes
        function.restype = restype
    problem = lib.ferry_it_matrix_open(str(BUILD / "plugins").encode(), b"",
                                       str(CASES_FILE).encode())
    if problem is not None:
        raise RuntimeError(f"the matrix harness cannot start: {problem.decode()}")
    return lib


MATRIX = open_matrix()
LOADED = [] if MATRIX is None else [MATRIX.ferry_it_matrix_runtime_name(i).decode()
                                    for i in range(MATRIX.ferry_it_matrix_runtime_count())]
PAIRS = [(p, c) for p in range(len(LOADED)) for c in range(len(LOADED))]


def needs_quick_exit():
    """Whether this process loaded a runtime that must not meet exit handlers."""
    return MATRIX is not None and MATRIX.ferry_it_matrix_needs_quick_exit() == 1


def require_matrix():
    if MATRIX is None:
        pytest.fail(f"{MATRIX_LIB} is not built (scripts/build.sh builds it)")


def test_runtimes_loaded():
    """Every required runtime loaded, in runtimes.def's order, with no load failure."""
    require_matrix()
    report = MATRIX.ferry_it_matrix_load_report().decode()
    print(report)
    listed = runtimes_of_the_list()
    required = os.environ.get("FERRY_PY_MATRIX_REQUIRE", " ".join(listed)).replace(",", " ").split()
    missing = [name for name in required if name not in LOADED]
    assert not missing, f"required runtimes not loaded: {missing}\n{report}"
    assert "FAIL load" not in report, report
    assert LOADED == [name for name in listed if name in LOADED], "not loaded in the list's order"
    assert "python" in LOADED, "the Python participant (libferry_it_python.so) is not loaded"


@pytest.mark.parametrize("kind", ["array", "stream"])
@pytest.mark.parametrize("producer,consumer", PAIRS,
                         ids=[f"{LOADED[p]}->{LOADED[c]}" for p, c in PAIRS])
def test_pair(producer, consumer, kind):
    """Every case (and the tamper witness, index -1) from producer to consumer."""
    stream = 1 if kind == "stream" else 0
    failures = []
    for index in range(-1, MATRIX.ferry_it_matrix_case_count()):
        problem = MATRIX.ferry_it_matrix_run(producer, consumer, index, stream)
        if problem is not None:
            label = MATRIX.ferry_it_matrix_case_label(index, stream).decode()
            failures.append(f"{LOADED[producer]}->{LOADED[consumer]} {kind} {label}: "
                            f"{problem.decode()}")
    assert not failures, "\n".join(failures)


def test_witnesses_and_nothing_left_live():
    """Runs last (file order): the strict sim device made consumers wait, the
    tamper runs flipped bytes, and no runtime holds an allocation at the end."""
    require_matrix()
    if not PAIRS:
        pytest.fail("no runtime loaded")
    assert MATRIX.ferry_it_matrix_witness_sim_pending() > 0
    assert MATRIX.ferry_it_matrix_witness_tampered() > 0
    live = {name: MATRIX.ferry_it_matrix_live_allocations(i) for i, name in enumerate(LOADED)}
    assert all(count == 0 for count in live.values()), f"live allocations at the end: {live}"
