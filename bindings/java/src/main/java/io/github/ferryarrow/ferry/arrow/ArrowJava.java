package io.github.ferryarrow.ferry.arrow;

import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.DeviceArrayStream;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.Validation;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * ferry and Arrow Java ({@code org.apache.arrow:arrow-c-data} and
 * {@code arrow-vector}, which the application brings: they are optional
 * dependencies of ferry-arrow), both ways, through the Arrow C data interface:
 * vectors without copying, and streams as {@link ArrowReader}s.
 *
 * <p>Arrow Java trusts what it imports (offsets, UTF-8, dictionary indices), so
 * everything going from ferry to Arrow Java is validated ({@link Validation#FULL})
 * first; a finding is a FerryException(EINVAL) "the array fails validation: ..."
 * and Arrow Java never sees the data. Device memory is brought to the host
 * ({@link DeviceArray#toHost()}) on the way, since Arrow Java reads the CPU only.
 */
public final class ArrowJava {
  private ArrowJava() {}

  /** {@link #toVector(DeviceArray, BufferAllocator, CDataDictionaryProvider)} for
   *  arrays without dictionaries. */
  public static FieldVector toVector(DeviceArray array, BufferAllocator allocator) {
    return toVector(array, allocator, null);
  }

  /**
   * Moves {@code array} into a new Arrow Java vector allocated from
   * {@code allocator}, without copying host memory (a device array is brought to
   * the host first). The array is consumed when this returns; on a failure it is
   * still open if it was on the CPU (and closed otherwise). Dictionaries are loaded
   * into {@code dictionaries} (needed for dictionary-encoded arrays).
   */
  public static FieldVector toVector(DeviceArray array, BufferAllocator allocator,
      CDataDictionaryProvider dictionaries) {
    DeviceArray host = array.deviceType() == DeviceType.CPU ? array : array.toHost();
    try (ArrowSchema schema = ArrowSchema.allocateNew(allocator);
        ArrowArray out = ArrowArray.allocateNew(allocator)) {
      try {
        host.exportArrowC(out.memoryAddress(), schema.memoryAddress());
      } catch (RuntimeException | Error e) {
        if (host != array) host.close();
        throw e;
      }
      try {
        // false: the structs stay ours (closed by try-with-resources), so that a
        // failed import can still release what it did not take.
        return Data.importVector(allocator, out, schema, dictionaries, false);
      } finally {
        releaseIfLive(out);
        releaseIfLive(schema);
      }
    }
  }

  /** {@link #fromVector(FieldVector, BufferAllocator, DictionaryProvider)} for
   *  vectors without dictionaries. */
  public static DeviceArray fromVector(FieldVector vector, BufferAllocator allocator) {
    return fromVector(vector, allocator, null);
  }

  /**
   * Exports {@code vector} (its current contents) as a ferry DeviceArray on the
   * CPU, without copying: the vector's buffers are retained until the array is
   * released, so the vector itself may be closed at once. The array is validated
   * as {@link DeviceArray#importFrom(long, long)} does.
   */
  public static DeviceArray fromVector(FieldVector vector, BufferAllocator allocator,
      DictionaryProvider dictionaries) {
    try (ArrowSchema schema = ArrowSchema.allocateNew(allocator);
        ArrowArray array = ArrowArray.allocateNew(allocator)) {
      Data.exportVector(allocator, vector, dictionaries, array, schema);
      try {
        return DeviceArray.importArrowC(array.memoryAddress(), schema.memoryAddress());
      } finally {
        releaseIfLive(array);
        releaseIfLive(schema);
      }
    }
  }

  /**
   * Moves {@code stream} into an Arrow Java {@link ArrowReader} (the stream is
   * closed; batches already taken from it stay valid). Every batch is validated
   * (FULL), waited on and, when the host cannot read its device, brought to the
   * CPU as the reader loads it; a finding fails {@code loadNextBatch} with an
   * IOException carrying the validator's message. Arrow readers carry record
   * batches: a stream of other arrays (int32, utf8, ...) is read as record batches
   * of one column, the stream's field.
   */
  public static ArrowReader toReader(DeviceArrayStream stream, BufferAllocator allocator) {
    ArrowArrayStream out = ArrowArrayStream.allocateNew(allocator);
    try {
      stream.exportToArrowStream(out.memoryAddress());
      return Data.importArrayStream(allocator, out); // moves the stream, frees `out`
    } catch (RuntimeException | Error e) {
      if (out.snapshot().release != 0) out.release();
      out.close();
      throw e;
    }
  }

  /**
   * Turns an Arrow Java {@link ArrowReader} into a ferry stream of the CPU, to
   * hand to any consumer (its {@code exportTo}) or read in Java; each batch is a
   * record batch (a struct array), without copying. The stream owns the reader
   * from now on and closes it when the stream is released: do not close it
   * yourself. Batches are validated at {@link Validation#DEFAULT} when read through
   * the returned stream.
   */
  public static DeviceArrayStream fromReader(ArrowReader reader, BufferAllocator allocator) {
    try (ArrowArrayStream out = ArrowArrayStream.allocateNew(allocator)) {
      Data.exportArrayStream(allocator, reader, out);
      try {
        return DeviceArrayStream.importArrowStream(out.memoryAddress(), Validation.DEFAULT);
      } finally {
        if (out.snapshot().release != 0) out.release();
      }
    }
  }

  private static void releaseIfLive(ArrowArray array) {
    if (array.snapshot().release != 0) array.release();
  }

  private static void releaseIfLive(ArrowSchema schema) {
    if (schema.snapshot().release != 0) schema.release();
  }
}
