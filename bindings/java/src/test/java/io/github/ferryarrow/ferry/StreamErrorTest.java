package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Iterator;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The binding contract's rule 2: after a stream error the binding never calls the
 *  producer's get_next again, and every later read reports that same error. */
class StreamErrorTest {
  /** Yields a batch, fails on the second call, and would yield batches after. */
  static final class FailsOnceThenYields {
    final AtomicInteger calls = new AtomicInteger();
    final AtomicInteger released = new AtomicInteger();
    final Iterator<ExportedBatch> batches = TestData.endless(call -> {
      calls.set(call);
      if (call == 2) throw new FerryException(FerryException.EIO, "disk on fire");
      return TestData.int32Batch(call, released);
    });
  }

  private static void assertSameError(FerryException e) {
    assertEquals(FerryException.EIO, e.code());
    assertEquals("disk on fire", e.getMessage());
  }

  @Test
  void nextReplaysTheErrorAndNeverCallsTheProducerAgain() {
    FailsOnceThenYields producer = new FailsOnceThenYields();
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        producer.batches)) {
      try (DeviceArray first = s.next()) {
        assertEquals(1, first.length());
      }
      assertSameError(assertThrows(FerryException.class, s::next));
      for (int i = 0; i < 3; i++) {
        assertSameError(assertThrows(FerryException.class, s::next));
        assertSameError(assertThrows(FerryException.class, () -> s.nextOn(0)));
      }
      assertSameError(assertThrows(FerryException.class, () -> s.iterator().hasNext()));
      assertSameError(assertThrows(FerryException.class, s::cursor));
      assertEquals(2, producer.calls.get(), "get_next was not called after the error");
      assertEquals("n", s.schema().name(), "the schema fetched before stays readable");
    }
    assertEquals(1, producer.released.get());
  }

  @Test
  void aCursorReplaysTheErrorToo() {
    FailsOnceThenYields producer = new FailsOnceThenYields();
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        producer.batches); DeviceArrayStream.Cursor cursor = s.cursor()) {
      assertTrue(cursor.advance());
      assertSameError(assertThrows(FerryException.class, cursor::advance));
      assertSameError(assertThrows(FerryException.class, cursor::advance));
      assertSameError(assertThrows(FerryException.class, s::next));
      assertEquals(-1, cursor.length());
      assertEquals(2, producer.calls.get());
    }
  }

  @Test
  void aBatchThatFailsValidationEndsTheStreamWithThatError() {
    // The second batch declares 1 buffer for an int32 array (2 needed).
    AtomicInteger calls = new AtomicInteger();
    Iterator<ExportedBatch> producer = TestData.endless(call -> {
      calls.set(call);
      if (call == 2) return ExportedBatch.of(1).buffers((java.nio.ByteBuffer) null);
      return TestData.int32Batch(1, new AtomicInteger());
    });
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        producer)) {
      s.next().close();
      FerryException first = assertThrows(FerryException.class, s::next);
      assertEquals(FerryException.EINVAL, first.code());
      FerryException again = assertThrows(FerryException.class, s::next);
      assertEquals(first.code(), again.code());
      assertEquals(first.getMessage(), again.getMessage());
      assertEquals(2, calls.get());
    }
  }

  @Test
  void theEndStaysTheEnd() {
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        java.util.List.of(TestData.int32Batch(2, new AtomicInteger())).iterator())) {
      s.next().close();
      for (int i = 0; i < 3; i++) assertNull(s.next());
    }
  }
}
