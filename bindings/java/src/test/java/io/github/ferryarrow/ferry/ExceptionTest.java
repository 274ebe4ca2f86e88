package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.NativeStructs;
import org.junit.jupiter.api.Test;

class ExceptionTest {
  @Test
  void unknownDeviceNameIsEinvalNamingTheWord() {
    FerryException e = assertThrows(FerryException.class, () -> DeviceType.fromName("warp9"));
    assertEquals(FerryException.EINVAL, e.code());
    assertEquals("EINVAL", e.codeName());
    assertTrue(e.getMessage().contains("warp9"), e.getMessage());
  }

  @Test
  void missingDeviceCarriesTheCoreCodeAndReason() {
    FerryException e = assertThrows(FerryException.class,
        () -> Device.resolve(DeviceType.SIM, 1000));
    assertTrue(e.code() == FerryException.ENODEV || e.code() == FerryException.EINVAL,
        "code " + e.codeName());
    assertTrue(!e.getMessage().isEmpty());
  }

  @Test
  void badFormatIsRejectedWithAMessage() {
    FerryException e = assertThrows(FerryException.class,
        () -> FerryNative.ferry_format_validate("+zz"));
    assertEquals(FerryException.EINVAL, e.code());
    assertTrue(!e.getMessage().isEmpty());
  }

  @Test
  void movingIntoALiveStructFailsWithoutAFerryErrorMessage() {
    long a = FerryNative.ferry_array_new();
    long b = FerryNative.ferry_array_new();
    try {
      FerryNative.ferry_array_init(a, 1, 0, 0, 0, 0, 0, 0, 0);
      FerryNative.ferry_array_init(b, 2, 0, 0, 0, 0, 0, 0, 0);
      FerryException e = assertThrows(FerryException.class,
          () -> FerryNative.ferry_array_move(a, b));
      assertEquals(FerryException.EINVAL, e.code());
      assertTrue(e.getMessage().contains("ferry_array_move"), e.getMessage());
      assertEquals(2, FerryNative.ferry_array_length(b), "nothing changed");
    } finally {
      FerryNative.ferry_array_free(a);
      FerryNative.ferry_array_free(b);
    }
  }

  @Test
  void importingAReleasedStructIsRefused() {
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      FerryException e = assertThrows(FerryException.class,
          () -> DeviceArray.importFrom(array, schema));
      assertEquals(FerryException.EINVAL, e.code());
    }
  }

  @Test
  void outParameterArraysAreChecked() {
    assertThrows(IllegalArgumentException.class,
        () -> FerryNative.ferry_device_resolve(DeviceType.CPU, -1, new long[0]));
  }
}
