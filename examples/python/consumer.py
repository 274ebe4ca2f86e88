"""A Python consumer that takes any Arrow producer: a ferry stream, a
pyarrow Table, a Polars DataFrame, a nanoarrow stream. Run: python consumer.py"""
import ferry


def total(source, column: str) -> int:
    """Sums an integer column over every batch of any stream producer, reading
    device batches on the host after waiting on their events (to_host)."""
    result = 0
    with ferry.device_stream(source) as stream:
        for batch in stream:
            with batch, batch.to_host() as host:
                result += sum(row[column] for row in host.to_pylist() if row[column] is not None)
    return result


if __name__ == "__main__":
    import pyarrow as pa

    import producer

    print("ferry stream on sim:", total(producer.make_stream(), "n"))  # 0 + 1 + ... + 11 = 66
    table = pa.table({"n": [1, 2, None, 4]})
    print("pyarrow table:", total(table, "n"))  # 7
    try:
        import polars as pl
        print("polars frame:", total(pl.DataFrame({"n": [10, 20]}), "n"))  # 30
    except ImportError:
        print("polars frame: (polars not installed)")
