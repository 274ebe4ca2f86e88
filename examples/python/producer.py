"""A Python producer: a stream of record batches on the sim device, each
carrying the event of the copies that filled it; any consumer of Arrow's
PyCapsule interface can read it. Run: python producer.py"""
import struct

import ferry
from ferry import DeviceArray, DeviceArrayStream, Schema

DEVICE = ferry.device("sim:0")
STREAM = DEVICE.create_stream()  # the producer's work queue on the device
SCHEMA = Schema.from_format("+s", "batch", children=[Schema.from_format("l", "n")])


def batch(start: int, count: int) -> DeviceArray:
    """A struct<n: int64> batch whose values are copied to the device on
    STREAM; the batch exports the event recorded after the copies."""
    values = DEVICE.allocate(8 * count)
    values.copy_from_host(struct.pack(f"<{count}q", *range(start, start + count)), stream=STREAM)
    column = DeviceArray.from_buffers(Schema.from_format("l", "n"), count, [None, values], device=DEVICE)
    return DeviceArray.from_buffers(SCHEMA, count, [None], children=[column], device=DEVICE, stream=STREAM)


def make_stream(n_batches: int = 3, rows: int = 4) -> DeviceArrayStream:
    """The stream (batches are made lazily, when the consumer pulls)."""
    return DeviceArrayStream.from_batches(SCHEMA, (batch(i * rows, rows) for i in range(n_batches)),
                                          device=DEVICE)


if __name__ == "__main__":
    stream = make_stream()
    capsule = stream.__arrow_c_device_stream__()  # what a consumer library would call
    with ferry.device_stream(capsule) as received:  # here ferry itself is the consumer
        for b in received:
            with b, b.to_host() as host:
                print(b.device, "event" if b.sync_event else "ready", [row["n"] for row in host.to_pylist()])
