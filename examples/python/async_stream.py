"""An async device stream on asyncio: a producer (an async generator) pushes
batches of the sim device as the consumer asks for them, with at most
`window` batches in flight (back-pressure), and the consumer reads them with
`async for`, woken through the stream's readiness descriptor. Either side
could be another runtime instead: the consumer's handler address is what a
producer in C, Rust, Go, Java or Lua is handed. Run: python async_stream.py"""
import asyncio

import ferry
from ferry import AsyncDeviceStream, Schema

DEVICE = "sim:0"


async def produce(rows: int = 4, batches: int = 3):
    """Batches made only when the consumer has asked for one."""
    for b in range(batches):
        yield ferry.array(range(b * rows, (b + 1) * rows), "int64", device=DEVICE)


async def main() -> None:
    async with AsyncDeviceStream(window=2) as consumer:
        producer = asyncio.create_task(
            ferry.export_async_from(Schema.from_format("l"), produce(), consumer.handler_address,
                                    device=DEVICE))
        async for batch in consumer:  # each batch keeps its sync event
            with batch, batch.to_host() as host:  # to_host waits on the event
                print(batch.device.name, host.to_pylist())
        await producer


if __name__ == "__main__":
    asyncio.run(main())
