package io.github.ferryarrow.ferry.arrow;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import io.github.ferryarrow.ferry.ArrayExporter;
import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.DeviceArrayStream;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.FerryException;
import io.github.ferryarrow.ferry.FieldSpec;
import io.github.ferryarrow.ferry.StreamExporter;
import io.github.ferryarrow.ferry.Validation;
import io.github.ferryarrow.ferry.jni.FerryNative;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * ferry and Arrow Java ({@code org.apache.arrow:arrow-c-data} and
 * {@code arrow-vector}, which the application brings: they are optional
 * dependencies of ferry-arrow), both ways, through the Arrow C data interface:
 * vectors without copying, and streams as {@link ArrowReader}s.
 *
 * <p><b>Validation.</b> Arrow Java trusts what it imports (offsets, UTF-8,
 * dictionary indices), so everything going from ferry to Arrow Java is validated
 * {@link Validation#FULL} first (arrays by {@link #toVector}, every batch by
 * {@link #toReader}'s reader); a finding is a FerryException(EINVAL) "the array
 * fails validation: ..." and Arrow Java never sees the data. Lowering it is an
 * explicit choice: {@link #toVector(DeviceArray, BufferAllocator,
 * CDataDictionaryProvider, Validation)}. What goes from Arrow Java to ferry is
 * validated at {@link Validation#DEFAULT} (structure, counts; a stream's schema
 * prepared once). Device memory is brought to the host ({@link DeviceArray#toHost()})
 * on the way, since Arrow Java reads the CPU only.
 *
 * <p><b>Speed.</b> The common layouts (integers, float32 and float64, dates, times,
 * timestamps, durations, booleans, (large) utf8 and binary, structs of those, at
 * offset 0, without metadata or dictionaries) take a direct bridge: vectors are
 * loaded from the ferry array's buffers, and exports are made from the vector's
 * buffers, without Arrow Java's C data module in between (see {@code Direct}). The
 * rest goes through {@code org.apache.arrow.c.Data}, which then validates FULL.
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
   * the host first), after validating it ({@link Validation#FULL}: a finding is
   * FerryException(EINVAL) "the array fails validation: ..."). The array is
   * consumed when this returns (closed; the vector keeps its memory alive); on a
   * failure it is still open if it was on the CPU (and closed otherwise), except
   * when the allocator refuses the memory once the array was moved out (its limit:
   * Arrow Java's OutOfMemoryException), which releases it. Dictionaries are
   * loaded into {@code dictionaries} (needed for dictionary-encoded arrays).
   */
  public static FieldVector toVector(DeviceArray array, BufferAllocator allocator,
      CDataDictionaryProvider dictionaries) {
    return toVector(array, allocator, dictionaries, Validation.FULL);
  }

  /**
   * {@link #toVector(DeviceArray, BufferAllocator, CDataDictionaryProvider)}
   * validating at {@code validation} instead of FULL: an explicit choice for arrays
   * whose producer is trusted with offsets and UTF-8 (DEFAULT: structure and counts
   * only) or with everything (NONE, as {@link DeviceArray#importFrom(long, long,
   * Validation)}: a lying array can then make Arrow Java read what it points at).
   * Types outside the direct bridge are validated FULL whatever is asked, since
   * Arrow Java's own importer is then used.
   */
  public static FieldVector toVector(DeviceArray array, BufferAllocator allocator,
      CDataDictionaryProvider dictionaries, Validation validation) {
    if (array.deviceType() == DeviceType.CPU) { // a device array is validated on the host
      validateForArrow(array, validation);
    }
    DeviceArray host = array.deviceType() == DeviceType.CPU ? array : array.toHost();
    if (host != array) {
      try {
        validateForArrow(host, validation);
      } catch (RuntimeException | Error e) {
        host.close();
        throw e;
      }
    }
    FieldVector direct = toVectorDirect(host, allocator);
    if (direct != null) return direct;
    try (ArrowSchema schema = ArrowSchema.allocateNew(allocator);
        ArrowArray out = ArrowArray.allocateNew(allocator)) {
      try {
        host.exportArrowC(out.memoryAddress(), schema.memoryAddress()); // validates FULL
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

  /** Validates {@code array} at {@code validation} for Arrow Java; a finding is
   *  FerryException "the array fails validation: ..." (the array unchanged). */
  private static void validateForArrow(DeviceArray array, Validation validation) {
    try {
      array.validate(validation);
    } catch (FerryException e) {
      throw new FerryException(e.code(), "the array fails validation: " + e.getMessage());
    }
  }

  /** The direct bridge of {@link #toVector}: null (nothing done) when the array's
   *  type or layout is not one it covers. */
  private static FieldVector toVectorDirect(DeviceArray host, BufferAllocator allocator) {
    host.await();
    Field field = Direct.field(host.schema().address());
    if (field == null || !Direct.fits(host.address(), field)) return null;
    // Ours from here: a later close() of the caller's object cannot free what the
    // vector reads.
    DeviceArray owned = host.transfer();
    Direct.Holder holder = new Direct.Holder();
    holder.own(owned);
    FieldVector vector = null;
    try {
      vector = field.createVector(allocator);
      Direct.load(vector, owned.address(), holder, allocator);
      return vector;
    } catch (RuntimeException | Error e) {
      if (vector != null) vector.close();
      throw e;
    } finally {
      holder.release(); // the builder's count: the vector's buffers hold the rest
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
   * as {@link DeviceArray#importFrom(long, long)} does (DEFAULT).
   */
  public static DeviceArray fromVector(FieldVector vector, BufferAllocator allocator,
      DictionaryProvider dictionaries) {
    FieldSpec spec = specOf(vector.getField());
    if (spec != null) {
      List<ArrowBuf> retained = new ArrayList<>(3);
      ExportedBatch batch = Direct.batch(vector, retained);
      if (batch != null) {
        batch.onRelease(() -> releaseAll(retained));
        try {
          return ArrayExporter.toDeviceArray(spec, batch);
        } catch (RuntimeException | Error e) {
          // A failed export runs no onRelease action: the references are ours.
          releaseAll(retained);
          throw e;
        }
      }
      releaseAll(retained);
    }
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

  /** The last field converted and its spec: a vector keeps its Field object, so
   *  exporting the same vector (or its batches) again finds it by identity. */
  private static volatile Object[] lastSpec = {null, null};

  /** The direct bridge's FieldSpec of {@code field}, or null when not covered. */
  private static FieldSpec specOf(Field field) {
    Object[] last = lastSpec;
    if (last[0] == field) return (FieldSpec) last[1];
    FieldSpec spec = Direct.spec(field);
    lastSpec = new Object[] {field, spec};
    return spec;
  }

  private static void releaseAll(List<ArrowBuf> buffers) {
    for (ArrowBuf b : buffers) b.getReferenceManager().release();
    buffers.clear();
  }

  /**
   * Moves {@code stream} into an Arrow Java {@link ArrowReader} (the stream is
   * closed; batches already taken from it stay valid). Every batch is validated
   * (at the stream's level against its schema, prepared once, then FULL: Arrow
   * Java trusts offsets and UTF-8), waited on and, when the host cannot read its
   * device, brought to the CPU as the reader loads it; a finding or a producer's
   * error fails {@code loadNextBatch} with an IOException carrying the message
   * ("the array fails validation: ..." for a finding). Arrow readers carry record batches: a stream
   * of other arrays (int32, utf8, ...) is read as record batches of one column,
   * the stream's field.
   */
  public static ArrowReader toReader(DeviceArrayStream stream, BufferAllocator allocator) {
    Field field = Direct.field(stream.schema().address());
    if (field != null) {
      Validation level = stream.validation();
      long raw = FerryNative.ferry_array_stream_new();
      if (raw == 0) throw new OutOfMemoryError("ferry: cannot allocate a stream");
      try {
        stream.exportTo(raw); // ours from here: the caller's object is closed
        return new DirectReader(DeviceArrayStream.importFrom(raw, level), field, allocator);
      } finally {
        FerryNative.ferry_array_stream_free(raw);
      }
    }
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

  /** The reader of {@link #toReader} for streams whose schema the direct bridge
   *  covers: each batch is loaded into the root from its own buffers. */
  private static final class DirectReader extends ArrowReader {
    private final DeviceArrayStream stream;
    private final Field field;
    private final boolean record;
    private final BufferAllocator allocator;

    DirectReader(DeviceArrayStream stream, Field field, BufferAllocator allocator) {
      super(allocator);
      this.stream = stream;
      this.field = field;
      this.record = field.getType() instanceof ArrowType.Struct;
      this.allocator = allocator;
    }

    @Override
    protected Schema readSchema() {
      return new Schema(record ? field.getChildren() : List.of(field));
    }

    @Override
    public boolean loadNextBatch() throws IOException {
      VectorSchemaRoot root = getVectorSchemaRoot(); // reads the schema on first use
      DeviceArray batch;
      try {
        batch = stream.next();
      } catch (RuntimeException e) {
        throw new IOException(e.getMessage(), e);
      }
      if (batch == null) return false;
      try {
        if (!batch.isHostAccessible()) batch = batch.toHost(); // consumes the device batch
      } catch (RuntimeException e) {
        batch.close(); // toHost left it open
        throw new IOException(e.getMessage(), e);
      }
      try {
        batch.await();
        validateForArrow(batch, Validation.FULL); // Arrow Java trusts offsets and UTF-8
        long a = batch.address();
        if (!Direct.fits(a, field) || (record && batch.nullCount() != 0)) {
          loadGeneral(batch, root);
          return true;
        }
        Direct.Holder holder = new Direct.Holder();
        holder.own(batch);
        try {
          if (record) {
            for (int i = 0; i < root.getFieldVectors().size(); i++) {
              Direct.load(root.getVector(i), Direct.child(a, i), holder,
                  allocator);
            }
          } else {
            Direct.load(root.getVector(0), a, holder, allocator);
          }
          root.setRowCount(Math.toIntExact(batch.length()));
        } catch (RuntimeException | Error e) {
          root.clear(); // drops the buffers loaded so far
          throw e;
        } finally {
          holder.release(); // the builder's count: the vectors' buffers hold the rest
        }
        return true;
      } catch (RuntimeException e) {
        batch.close();
        throw new IOException(e.getMessage(), e);
      }
    }

    /** A batch the direct bridge does not take (an offset, top-level nulls):
     *  through Arrow Java's C data module, validated FULL as it requires. */
    private void loadGeneral(DeviceArray batch, VectorSchemaRoot root) {
      try (ArrowSchema schema = ArrowSchema.allocateNew(allocator);
          ArrowArray out = ArrowArray.allocateNew(allocator)) {
        batch.exportArrowC(out.memoryAddress(), schema.memoryAddress());
        releaseIfLive(schema);
        Data.importIntoVectorSchemaRoot(allocator, out, root, null);
      }
    }

    @Override
    public long bytesRead() {
      return 0;
    }

    @Override
    protected void closeReadSource() {
      stream.close();
    }
  }

  /**
   * Turns an Arrow Java {@link ArrowReader} into a ferry stream of the CPU, to
   * hand to any consumer (its {@code exportTo}) or read in Java; each batch is a
   * record batch (a struct array), without copying. The stream owns the reader
   * from now on and closes it when the stream is released: do not close it
   * yourself. Batches are validated at {@link Validation#DEFAULT} when read through
   * the returned stream (a consumer it is exported to validates as it chooses).
   */
  public static DeviceArrayStream fromReader(ArrowReader reader, BufferAllocator allocator) {
    FieldSpec spec = null;
    try {
      Schema schema = reader.getVectorSchemaRoot().getSchema();
      FieldSpec[] children = new FieldSpec[schema.getFields().size()];
      spec = FieldSpec.of("+s", "");
      for (int i = 0; i < children.length && spec != null; i++) {
        children[i] = Direct.spec(schema.getFields().get(i));
        if (children[i] == null) spec = null;
      }
      if (spec != null) spec = spec.withChildren(children);
    } catch (IOException e) {
      spec = null; // the general way reports it
    }
    if (spec != null) {
      return StreamExporter.toStream(spec, DeviceType.CPU, new ReaderBatches(reader));
    }
    try (ArrowArrayStream out = ArrowArrayStream.allocateNew(allocator)) {
      Data.exportArrayStream(allocator, reader, out);
      try {
        return DeviceArrayStream.importArrowStream(out.memoryAddress(), Validation.DEFAULT);
      } finally {
        if (out.snapshot().release != 0) out.release();
      }
    }
  }

  /** The batches of a reader as ExportedBatches over its vectors' buffers (each
   *  retained until the consumer releases the batch); closes the reader when the
   *  stream is released. A batch the direct bridge cannot describe fails the
   *  stream's get_next with EINVAL naming it. */
  private static final class ReaderBatches implements Iterator<ExportedBatch>, AutoCloseable {
    private final ArrowReader reader;
    private boolean loaded;
    private boolean done;

    ReaderBatches(ArrowReader reader) {
      this.reader = reader;
    }

    @Override
    public boolean hasNext() {
      if (!loaded && !done) {
        try {
          loaded = reader.loadNextBatch();
        } catch (IOException e) {
          throw new FerryException(FerryException.EIO, "the ArrowReader failed: "
              + e.getMessage());
        }
        done = !loaded;
      }
      return loaded;
    }

    @Override
    public ExportedBatch next() {
      if (!hasNext()) throw new NoSuchElementException("end of the reader");
      loaded = false;
      VectorSchemaRoot root;
      try {
        root = reader.getVectorSchemaRoot();
      } catch (IOException e) {
        throw new FerryException(FerryException.EIO, "the ArrowReader failed: "
            + e.getMessage());
      }
      List<FieldVector> vectors = root.getFieldVectors();
      List<ArrowBuf> retained = new ArrayList<>(2 * vectors.size() + 1);
      ExportedBatch[] children = new ExportedBatch[vectors.size()];
      for (int i = 0; i < children.length; i++) {
        children[i] = Direct.batch(vectors.get(i), retained);
        if (children[i] == null) {
          releaseAll(retained);
          throw new FerryException(FerryException.EINVAL, "column " + i + " ("
              + vectors.get(i).getField() + ") has no buffers to export");
        }
      }
      return ExportedBatch.of(root.getRowCount()).bufferAddresses(0L).children(children)
          .onRelease(() -> releaseAll(retained));
    }

    @Override
    public void close() throws IOException {
      reader.close();
    }
  }

  private static void releaseIfLive(ArrowArray array) {
    if (array.snapshot().release != 0) array.release();
  }

  private static void releaseIfLive(ArrowSchema schema) {
    if (schema.snapshot().release != 0) schema.release();
  }
}
