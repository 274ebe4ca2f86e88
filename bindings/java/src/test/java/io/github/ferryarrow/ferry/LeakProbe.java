package io.github.ferryarrow.ferry;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Run in a child JVM by LeakReportTest (with FERRY_LEAK_REPORT=1): imports an
 * array and a stream, then closes them ("clean") or keeps them open until exit
 * ("leak"), where the core's leak report names what is still live.
 */
public final class LeakProbe {
  /** Held until exit, so that no safety net releases them first. */
  static final List<AutoCloseable> KEPT = new ArrayList<>();

  private LeakProbe() {}

  public static void main(String[] args) throws Exception {
    boolean leak = args.length > 0 && args[0].equals("leak");
    DeviceArray array = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        TestData.int32Batch(5, new AtomicInteger()));
    DeviceArrayStream stream = StreamExporter.toStream(TestData.int32Field("s"), DeviceType.CPU,
        List.of(TestData.int32Batch(1, new AtomicInteger())).iterator());
    DeviceArray closedEarly = ArrayExporter.toDeviceArray(FieldSpec.of("g", "y"),
        ExportedBatch.of(0).buffers(null, TestData.bytes()));
    closedEarly.close();
    if (leak) {
      KEPT.add(array);
      KEPT.add(stream);
    } else {
      array.close();
      stream.close();
    }
    System.out.println("probe done");
  }
}
