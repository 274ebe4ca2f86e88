"""Thread safety (issue 20, items 5-7; docs/bindings.md, section 4): 8 threads
reading, closing and iterating one array and one stream at once.

The stress runs in a child interpreter started with MALLOC_PERTURB_ (glibc
fills freed memory with a pattern, so a read after free sees garbage or
crashes instead of passing by luck) and a tiny switch interval (the GIL
changes hands between almost every bytecode). The child checks every value
it reads; a crash, a wrong value, a second release or a producer call after
release fails the test. Synchronization is by barriers and events, never
sleeps.
"""
import os
import subprocess
import sys
import textwrap
import threading

import pytest

import ferry
from ferry import DeviceArrayStream, Schema

HERE = os.path.dirname(os.path.abspath(__file__))

_ARRAY_STRESS = textwrap.dedent("""
    import sys, threading
    sys.path.insert(0, sys.argv[1])
    import conftest  # the environment the tests use (CUDA emulation)
    import ferry, pyarrow as pa
    sys.setswitchinterval(1e-6)
    ROUNDS = int(sys.argv[2])
    values = list(range(40)) + [None] + [7] * 23
    nested = pa.array([{"a": i, "b": [str(i)] * (i % 3)} for i in range(20)])
    refs, exports = ferry._native.live_refs(), ferry.live_exports()
    failures = []

    counts = {"read": 0, "closed": 0}

    def reader(arr, expect, start, kind, progress):
        start.wait()
        for n in range(30):
            if n == 3:
                progress.set()  # the closer starts once reads are under way
            counts["read"] += 1
            try:
                if kind == 0:
                    got = arr.to_pylist()
                elif kind == 1:
                    got = [arr.format, len(arr), arr.null_count, arr.offset]
                    expect_now = [expect[0], expect[1], expect[2], 0]
                    if got != expect_now:
                        failures.append(("fields", got, expect_now))
                    continue
                elif kind == 2:
                    got = None
                    if arr.n_children:
                        child = arr.child(0)
                        got = child.to_pylist()
                        if got != expect[4]:
                            failures.append(("child", got, expect[4]))
                    arr.buffer_size(0)
                    repr(arr)
                    arr.is_valid()
                    continue
                else:
                    with ferry.device_array(pa.array(arr)) as again:
                        got = again.to_pylist()
            except ferry.ClosedError:
                counts["closed"] += 1
                return  # closed by the closer thread: the named error
            if got != expect[3]:
                failures.append(("values", kind, got, expect[3]))

    for round in range(ROUNDS):
        if round % 2:
            arr = ferry.array(values, "int64")
            expect = ("l", len(values), 1, values, None)
        else:
            arr = ferry.device_array(nested)
            expect = ("+s", 20, 0, nested.to_pylist(), nested.field(0).to_pylist())
        start = threading.Barrier(8)
        progress = threading.Event()
        threads = [threading.Thread(target=reader, args=(arr, expect, start, k % 4, progress))
                   for k in range(7)]

        def closer():
            start.wait()
            progress.wait(60)
            arr.close()
            arr.close()  # idempotent

        threads.append(threading.Thread(target=closer))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        del arr
    import gc
    gc.collect()
    if (ferry._native.live_refs(), ferry.live_exports()) != (refs, exports):
        failures.append(("leak or double release", ferry._native.live_refs(), refs,
                         ferry.live_exports(), exports))
    if counts["closed"] == 0:
        failures.append("close never met a reader: the test tests nothing")
    print("reads:", counts, "failures:", failures[:5])
    sys.exit(1 if failures else 0)
""")

_STREAM_STRESS = textwrap.dedent("""
    import sys, threading
    sys.path.insert(0, sys.argv[1])
    import conftest
    import ferry
    from ferry import DeviceArrayStream, Schema
    sys.setswitchinterval(1e-6)
    ROUNDS = int(sys.argv[2])
    N = 40
    refs, exports = ferry._native.live_refs(), ferry.live_exports()
    failures = []

    class Stats:
        released = 0

    class Producer:
        # Counts what the consumer's calls do to it: two calls at once, a
        # call after release (its stats outlive it), a second release.
        def __init__(self, stats):
            self.stats = stats
            self.lock = threading.Lock()
            self.inside = 0
            self.k = 0

        def __iter__(self):
            return self

        def __next__(self):
            with self.lock:
                self.inside += 1
                if self.inside != 1:
                    failures.append("two get_next at once")
                if self.stats.released:
                    failures.append("get_next after release")
            try:
                if self.k == N:
                    raise StopIteration
                self.k += 1
                return ferry.array([self.k] * 5, "int32")
            finally:
                with self.lock:
                    self.inside -= 1

        def __del__(self):  # the stream's release drops the last reference
            self.stats.released += 1

    for round in range(ROUNDS):
        stats = Stats()
        stream = DeviceArrayStream.from_batches(Schema.from_format("i"), Producer(stats))
        seen = []
        seen_lock = threading.Lock()
        start = threading.Barrier(8)
        half = threading.Event()

        def take(batch):
            values = batch.to_pylist()
            batch.close()
            if values != [values[0]] * 5:
                failures.append(("torn batch", values))
            with seen_lock:
                seen.append(values[0])
                if len(seen) >= N // 2:
                    half.set()

        def iterate():
            start.wait()
            try:
                for batch in stream:
                    take(batch)
            except ferry.ClosedError:
                pass

        def next_loop():
            start.wait()
            try:
                while True:
                    batch = stream.next()
                    if batch is None:
                        break
                    take(batch)
            except ferry.ClosedError:
                pass

        def schema_reader():
            start.wait()
            try:
                for _ in range(20):
                    if stream.schema.format != "i":
                        failures.append("schema")
            except ferry.ClosedError:
                pass

        def closer():
            start.wait()
            if round % 2:
                half.wait(60)
            stream.close()
            stream.close()

        targets = [iterate] * 3 + [next_loop] * 3 + [schema_reader, closer]
        threads = [threading.Thread(target=t) for t in targets]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
            if t.is_alive():
                failures.append("a thread hangs")
        if len(seen) != len(set(seen)):
            failures.append(("a batch delivered twice", sorted(seen)))
        del stream
        import gc
        gc.collect()
        if stats.released != 1:
            failures.append(("releases", stats.released))
    import gc
    gc.collect()
    if (ferry._native.live_refs(), ferry.live_exports()) != (refs, exports):
        failures.append(("leak or double release", ferry._native.live_refs(), refs,
                         ferry.live_exports(), exports))
    print("failures:", failures[:5])
    sys.exit(1 if failures else 0)
""")


def _run_stress(script, rounds):
    env = dict(os.environ, MALLOC_PERTURB_="165", PYTHONFAULTHANDLER="1")
    result = subprocess.run([sys.executable, "-c", script, HERE, str(rounds)], capture_output=True,
                            text=True, env=env, timeout=600)
    assert result.returncode == 0, (result.returncode, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


def test_eight_threads_read_and_close_one_array():
    """6 readers (to_pylist, fields, child views, buffer sizes, repr, a
    pyarrow round trip) and one closer (twice) on one array: every read
    finishes with the right value or raises ClosedError; nothing leaks or is
    released twice."""
    _run_stress(_ARRAY_STRESS, int(os.environ.get("FERRY_PY_STRESS_ROUNDS", "300")))


def test_eight_threads_iterate_read_and_close_one_stream():
    """3 iterating, 3 calling next(), one reading the schema and one closing
    one stream: the producer never sees two calls at once or a call after
    release, is released exactly once, and each batch reaches one thread."""
    _run_stress(_STREAM_STRESS, int(os.environ.get("FERRY_PY_STRESS_ROUNDS", "300")))


def test_close_waits_for_a_get_next_in_flight():
    """close() from another thread while get_next is inside the producer
    waits for it; the reader gets its batch, the producer is released once
    afterwards, and later reads raise ClosedError."""
    inside, proceed = threading.Event(), threading.Event()
    events = []

    def batches():
        try:
            inside.set()
            assert proceed.wait(60)
            events.append("get_next returns")
            yield ferry.array([1, 2], "int32")
        finally:
            events.append("released")

    stream = DeviceArrayStream.from_batches(Schema.from_format("i"), batches())
    stream.schema
    got = []
    reader = threading.Thread(target=lambda: got.append(stream.next()))
    reader.start()
    assert inside.wait(60)
    closer = threading.Thread(target=stream.close)
    closer.start()
    closer.join(0.2)  # not a synchronization: only lets a wrong close() run early
    assert closer.is_alive() and "released" not in events  # close waits
    proceed.set()
    reader.join(60)
    closer.join(60)
    assert events == ["get_next returns", "released"]
    assert got[0].to_pylist() == [1, 2]
    got[0].close()
    with pytest.raises(ferry.ClosedError):
        stream.next()
    with pytest.raises(ValueError, match="closed"):  # ClosedError is a ValueError
        list(stream)


def test_a_producer_reading_its_own_consumer_is_refused():
    """A call into the stream from the thread already inside it would wait
    for itself: EDEADLK instead of a hang."""
    import errno
    holder = {}

    def batches():
        with pytest.raises(ferry.FerryError) as caught:
            holder["stream"].next()
        holder["code"] = caught.value.code
        yield ferry.array([1], "int8")

    stream = holder["stream"] = DeviceArrayStream.from_batches(Schema.from_format("c"), batches())
    batch = stream.next()
    assert holder["code"] == errno.EDEADLK and batch.to_pylist() == [1]
    batch.close()
    stream.close()
    holder.clear()


def test_a_reader_that_starts_after_close_gets_closed_error():
    arr = ferry.array([1, 2, 3], "int32")
    schema = arr.schema
    arr.close()
    for read in (arr.to_pylist, lambda: arr.format, arr.is_valid, lambda: arr.buffer(1),
                 lambda: arr.buffer_size(1), lambda: arr.sync_event, lambda: arr.offset):
        with pytest.raises(ferry.ClosedError):
            read()
    assert schema.format == "i"  # the schema object holds its own reference
    schema.close()
    with pytest.raises(ferry.ClosedError):
        schema.format
