/* ferry_jni_arrow_stream.c: ferry's device streams <-> plain Arrow C streams
 * (ferry_jni.h), the form Arrow Java's C data module reads and writes
 * (Data.importArrayStream / Data.exportArrayStream). The adapters and their
 * callbacks are the core's (ferry.h, "Adapters"); these wrappers only fix the
 * options Arrow Java needs, so a batch crosses no JNI boundary of its own:
 * Arrow Java's reader calls get_next through its own JNI, and the core's
 * adapter calls the producer.
 */
#include "ferry/ferry.h"
#include "ferry_jni.h"

int ferry_jni_stream_from_arrow(struct ArrowArrayStream* source,
                                struct ArrowDeviceArrayStream* out,
                                struct FerryError* error) {
  /* Batches are validated by the DeviceArrayStream that reads `out`. */
  return ferry_array_stream_from_cpu_stream(source, out, error);
}

int ferry_jni_stream_to_arrow(struct ArrowDeviceArrayStream* source,
                              struct ArrowArrayStream* out, struct FerryError* error) {
  /* FULL: Arrow Java trusts offsets and UTF-8. Arrow Java reads record
   * batches only, and only host memory. */
  return ferry_array_stream_to_cpu_stream(
      source, FERRY_VALIDATE_FULL,
      FERRY_CPU_STREAM_COPY_TO_HOST | FERRY_CPU_STREAM_RECORD_BATCHES, out, error);
}
