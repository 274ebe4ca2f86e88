package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The binding contract's rule 1: import validates at DEFAULT unless the caller
 *  opts out by name (Validation.NONE); the array comes first, then the schema. */
class ImportValidationTest {
  /** Exports an int32 array declaring one buffer (the layout needs two) into
   *  fresh structs: {array, schema}. */
  private static long[] malformed(AtomicInteger released) {
    long schema = FerryNative.ferry_schema_new();
    long array = FerryNative.ferry_device_array_new();
    ArrayExporter.export(TestData.int32Field("bad"),
        ExportedBatch.of(1).buffers((ByteBuffer) null).onRelease(released::incrementAndGet),
        array, schema);
    return new long[] {array, schema};
  }

  private static void free(long[] structs) {
    FerryNative.ferry_device_array_free(structs[0]);
    FerryNative.ferry_schema_free(structs[1]);
  }

  @Test
  void theDefaultImportValidates() {
    AtomicInteger released = new AtomicInteger();
    long[] s = malformed(released);
    try {
      FerryException e = assertThrows(FerryException.class,
          () -> DeviceArray.importFrom(s[0], s[1]));
      assertEquals(FerryException.EINVAL, e.code());
      assertTrue(e.getMessage().contains("n_buffers"), e.getMessage());
      assertTrue(FerryNative.ferry_device_array_is_released(s[0]), "consumed and released");
      assertEquals(1, released.get());
    } finally {
      free(s);
    }
  }

  @Test
  void validationNoneIsTheNamedOptOut() {
    AtomicInteger released = new AtomicInteger();
    long[] s = malformed(released);
    try (DeviceArray a = DeviceArray.importFrom(s[0], s[1], Validation.NONE)) {
      assertEquals(1, a.bufferCount());
      assertEquals(1, a.findings(Validation.DEFAULT).size(), a.findings(Validation.DEFAULT)
          .toString());
      assertThrows(FerryException.class, () -> a.validate(Validation.DEFAULT));
    } finally {
      free(s);
    }
    assertEquals(1, released.get());
  }

  @Test
  void streamsValidateEachBatchByDefaultAndOptOutByName() {
    List<ExportedBatch> bad = List.of(ExportedBatch.of(1).buffers((ByteBuffer) null));
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        bad.iterator())) {
      assertEquals(FerryException.EINVAL, assertThrows(FerryException.class, s::next).code());
    }
    long stream = FerryNative.ferry_array_stream_new();
    try {
      StreamExporter.export(TestData.int32Field("n"), DeviceType.CPU,
          List.of(ExportedBatch.of(1).buffers((ByteBuffer) null)).iterator(), stream);
      try (DeviceArrayStream s = DeviceArrayStream.importFrom(stream, Validation.NONE);
          DeviceArray batch = s.next()) {
        assertEquals(1, batch.bufferCount());
      }
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }
}
