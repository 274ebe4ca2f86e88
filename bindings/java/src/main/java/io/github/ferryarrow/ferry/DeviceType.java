package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/** ArrowDeviceType values (the Arrow C Device Data Interface numbers) and names. */
public final class DeviceType {
  public static final int CPU = FerryNativeConstants.ARROW_DEVICE_CPU;
  public static final int CUDA = FerryNativeConstants.ARROW_DEVICE_CUDA;
  public static final int CUDA_HOST = FerryNativeConstants.ARROW_DEVICE_CUDA_HOST;
  public static final int ROCM = FerryNativeConstants.ARROW_DEVICE_ROCM;
  public static final int ROCM_HOST = FerryNativeConstants.ARROW_DEVICE_ROCM_HOST;
  /** ferry's simulated device. */
  public static final int EXT_DEV = FerryNativeConstants.ARROW_DEVICE_EXT_DEV;
  public static final int SIM = EXT_DEV;

  private DeviceType() {}

  /** "cpu", "cuda", "ext_dev", ... or "unknown". */
  public static String name(int deviceType) {
    return FerryNative.ferry_device_type_name(deviceType);
  }

  /** Parses a device name ("sim" included); FerryException(EINVAL) for unknown words. */
  public static int fromName(String name) {
    int[] out = new int[1];
    FerryNative.ferry_device_type_from_name(name, out);
    return out[0];
  }
}
