package io.github.ferryarrow.ferry.arrow;

import java.io.IOException;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * An in-memory ArrowReader of one schema whose batches a {@link Loader} fills
 * into the reader's root: the Arrow Java producers of the tests and of the peer
 * benchmark. Test code: not in the jar.
 */
public final class BatchReader extends ArrowReader {
  /** Fills batch {@code index} (0-based) into {@code root}; false at the end. */
  @FunctionalInterface
  public interface Loader {
    boolean load(VectorSchemaRoot root, int index) throws IOException;
  }

  private final Schema schema;
  private final Loader loader;
  private int loads;

  public BatchReader(BufferAllocator allocator, Schema schema, Loader loader) {
    super(allocator);
    this.schema = schema;
    this.loader = loader;
  }

  @Override
  public boolean loadNextBatch() throws IOException {
    return loader.load(getVectorSchemaRoot(), loads++);
  }

  @Override
  public long bytesRead() {
    return 0;
  }

  @Override
  protected void closeReadSource() {}

  @Override
  protected Schema readSchema() {
    return schema;
  }
}
