package io.github.ferryarrow.ferry.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import io.github.ferryarrow.ferry.FerryException;
import io.github.ferryarrow.ferry.ArrayExporter;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.NativeStructs;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The Java test plugin's entry points, Java producer against Java checker through C structs. */
class PluginTest {
  @AfterEach
  void everythingReturned() {
    assertEquals(0, Plugin.liveAllocations(), "every Java export released");
  }

  private static void roundTripArray(String spec) {
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      assertEquals(0, Plugin.exportArray(spec, schema, array), Plugin.lastError());
      assertEquals(1, Plugin.liveAllocations());
      assertEquals(0, Plugin.checkArray(spec, schema, array), spec + ": " + Plugin.lastError());
      assertTrue(FerryNative.ferry_device_array_is_released(array), "checker released it");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
      "uint64", "float32", "float64", "bool", "utf8", "binary", "list_int32",
      "struct_int32_utf8", "dict_int32_utf8"})
  void everyTypeRoundTripsWithNullsAndOffset(String type) {
    roundTripArray(type);
    roundTripArray(type + ":length=0");
    roundTripArray(type + ":length=37:nulls=3:seed=4294967295:offset=5");
    roundTripArray(type + ":length=20:nulls=1:device=sim");
    roundTripArray(type + ":length=19:nulls=4:offset=3:device=sim:batches=2");
  }

  /** An int32 case exported with a validity bitmap (nulls=0 allows one: pyarrow
   *  keeps it on slices), whose bit {@code cleared} is 0 unless it is -1. */
  private static int checkWithBitmap(int cleared) {
    Case c = Case.parse("int32:length=10");
    ByteBuffer validity = ByteBuffer.allocateDirect(2);
    validity.put(0, (byte) 0xFF).put(1, (byte) 0xFF);
    if (cleared >= 0) validity.put(cleared / 8, (byte) ~(1 << (cleared % 8)));
    ByteBuffer values = ByteBuffer.allocateDirect(40).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < 10; i++) values.putInt(4 * i, (int) Values.u(c.seed, i));
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      ArrayExporter.export(CaseProducer.field(c), ExportedBatch.of(10).buffers(validity, values),
          array, schema);
      return Plugin.checkArray("int32:length=10", schema, array);
    }
  }

  @Test
  void withNullsZeroAValidityBitmapOfOnesIsAccepted() {
    assertEquals(0, checkWithBitmap(-1), Plugin.lastError());
    assertEquals(FerryException.EINVAL, checkWithBitmap(3), "a null where none is expected");
    assertTrue(Plugin.lastError().contains("element 3") && Plugin.lastError().contains("null"),
        Plugin.lastError());
  }

  @Test
  void valuesFollowTheFormula() {
    // u(0) with seed 1 is 2654435761 = 0x9E3779B1; int32 reads it as two's complement.
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      assertEquals(0, Plugin.exportArray("int32:length=3", schema, array));
      long buffer = FerryNative.ferry_array_buffer(FerryNative.ferry_device_array_array(array), 1);
      ByteBuffer v = FerryNative.ferry_jni_new_direct_buffer(buffer, 12).order(ByteOrder.LITTLE_ENDIAN);
      assertEquals(0x9E3779B1, v.getInt(0));
      assertEquals((int) (0x9E3779B1L + 40503), v.getInt(4));
    }
  }

  @Test
  void aCheckerCatchesAWrongValue() {
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      assertEquals(0, Plugin.exportArray("int32:seed=7", schema, array));
      int rc = Plugin.checkArray("int32:seed=8", schema, array);
      assertEquals(FerryException.EINVAL, rc);
      assertTrue(Plugin.lastError().contains("element 0"), Plugin.lastError());
      assertTrue(FerryNative.ferry_device_array_is_released(array), "released on failure too");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"int33", "int32:length=-1", "int32:length=x", "int32:color=red",
      "int32:device=tpu", "int32:fail=sometimes", "int32:length", "int32:seed=4294967296",
      "int32:nulls=1:nulls=2", "int32:fail=get_next@0"})
  void badCaseStringsAreEinvalNamingTheProblem(String spec) {
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      assertEquals(FerryException.EINVAL, Plugin.exportArray(spec, schema, array));
      assertTrue(Plugin.lastError().contains(spec), Plugin.lastError());
      assertTrue(FerryNative.ferry_schema_is_released(schema));
      assertTrue(FerryNative.ferry_device_array_is_released(array));
    }
  }

  @Test
  void injectedExportFailure() {
    long stream = FerryNative.ferry_array_stream_new();
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      assertEquals(FerryException.EIO, Plugin.exportArray("utf8:fail=export", schema, array));
      assertEquals("injected failure at export", Plugin.lastError());
      assertEquals(FerryException.EIO, Plugin.exportStream("utf8:fail=export", stream));
      assertTrue(FerryNative.ferry_array_stream_is_released(stream));
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"int32", "utf8:batches=0", "list_int32:batches=5:nulls=2:offset=1",
      "dict_int32_utf8:device=sim:batches=2", "int64:fail=get_next@2", "bool:fail=get_next@4",
      "binary:fail=get_schema", "float64:fail=get_next@9", "struct_int32_utf8:device=sim:fail=get_next@1"})
  void streamsRoundTrip(String spec) {
    long stream = FerryNative.ferry_array_stream_new();
    try {
      assertEquals(0, Plugin.exportStream(spec, stream), Plugin.lastError());
      assertEquals(0, Plugin.checkStream(spec, stream), spec + ": " + Plugin.lastError());
      assertTrue(FerryNative.ferry_array_stream_is_released(stream));
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }

  @Test
  void aStreamCheckerNoticesAMissingInjectedFailure() {
    long stream = FerryNative.ferry_array_stream_new();
    try {
      assertEquals(0, Plugin.exportStream("int32", stream));
      assertEquals(FerryException.EINVAL, Plugin.checkStream("int32:fail=get_next@2", stream));
      assertTrue(Plugin.lastError().contains("succeeded"), Plugin.lastError());
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }
}
