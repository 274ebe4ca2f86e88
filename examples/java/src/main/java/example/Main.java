package example;

import io.github.ferryarrow.ferry.ArrayExporter;
import io.github.ferryarrow.ferry.ArrowStructs;
import io.github.ferryarrow.ferry.Device;
import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.DeviceArrayStream;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.Ferry;
import io.github.ferryarrow.ferry.FieldSpec;
import io.github.ferryarrow.ferry.StreamExporter;
import io.github.ferryarrow.ferry.arrow.ArrowJava;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;

/**
 * What a Java program does with ferry: produce an Arrow array from Java memory,
 * consume one, stream batches, hand arrays to Arrow Java and back, and move an
 * array to a device (a GPU when there is one, else ferry's simulated device).
 *
 * <p>Here Java is both producer and consumer, through the C structs that another
 * runtime (C, Rust, Go, Python, Lua) would fill or read: {@link ArrowStructs}
 * holds them.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.out.println("ferry " + Ferry.version());
    produceAndConsume();
    stream();
    arrowJava();
    device();
  }

  /** An int32 array with a null, zero-copy from direct ByteBuffers. */
  static ExportedBatch int32s(int... values) {
    ByteBuffer data = ByteBuffer.allocateDirect(4 * values.length).order(ByteOrder.nativeOrder());
    ByteBuffer validity = ByteBuffer.allocateDirect((values.length + 7) / 8);
    int nulls = 0;
    for (int i = 0; i < values.length; i++) {
      data.putInt(4 * i, values[i]);
      if (values[i] < 0) {
        nulls++; // negative values stand for null here
      } else {
        validity.put(i / 8, (byte) (validity.get(i / 8) | 1 << (i % 8)));
      }
    }
    return ExportedBatch.of(values.length).nullCount(nulls).buffers(validity, data);
  }

  /** "[1, null, 3, 4]" of an int32 array on the host. */
  static String show(DeviceArray a) {
    ByteBuffer validity = a.buffer(0);
    ByteBuffer values = a.buffer(1);
    List<String> out = new ArrayList<>();
    for (int i = 0; i < a.length(); i++) {
      long slot = a.offset() + i;
      boolean valid = validity == null || (validity.get((int) (slot / 8)) >> (slot % 8) & 1) == 1;
      out.add(valid ? Integer.toString(values.getInt((int) (4 * slot))) : "null");
    }
    return out.toString();
  }

  static void produceAndConsume() {
    FieldSpec field = FieldSpec.of("i", "values");
    try (ArrowStructs handoff = ArrowStructs.allocate()) {
      // Producer: fill the consumer's structs; Java's buffers stay alive until
      // the consumer releases the array.
      ArrayExporter.export(field, int32s(1, -1, 3, 4), handoff.array(), handoff.schema());
      // Consumer: take ownership (validated), wait on the producer's event, read.
      try (DeviceArray array = DeviceArray.importFrom(handoff.array(), handoff.schema())) {
        array.await();
        long sum = 0;
        ByteBuffer values = array.buffer(1);
        for (int i = 0; i < array.length(); i++) {
          if (i != 1) sum += values.getInt(4 * i);
        }
        System.out.println("consumer: " + show(array) + ", sum " + sum);
      }
    }
  }

  static void stream() {
    FieldSpec field = FieldSpec.of("u", "words");
    List<ExportedBatch> batches = new ArrayList<>();
    for (String[] words : new String[][] {{"a", "b"}, {"c"}, {"d", "e", "f"}}) {
      batches.add(utf8(words));
    }
    try (ArrowStructs handoff = ArrowStructs.allocate()) {
      StreamExporter.export(field, DeviceType.CPU, batches.iterator(), handoff.stream());
      try (DeviceArrayStream stream = DeviceArrayStream.importFrom(handoff.stream())) {
        int count = 0;
        int rows = 0;
        List<String> seen = new ArrayList<>();
        for (DeviceArray batch : stream) {
          try (batch) {
            count++;
            rows += (int) batch.length();
            ByteBuffer offsets = batch.buffer(1);
            ByteBuffer data = batch.buffer(2);
            for (int i = 0; i < batch.length(); i++) {
              byte[] word = new byte[offsets.getInt(4 * i + 4) - offsets.getInt(4 * i)];
              data.get(offsets.getInt(4 * i), word);
              seen.add(new String(word, StandardCharsets.UTF_8));
            }
          }
        }
        System.out.println("stream: " + count + " batches, " + rows + " rows: "
            + String.join(",", seen));
      }
    }
  }

  static ExportedBatch utf8(String... words) {
    ByteBuffer offsets = ByteBuffer.allocateDirect(4 * (words.length + 1))
        .order(ByteOrder.nativeOrder());
    StringBuilder all = new StringBuilder();
    for (int i = 0; i < words.length; i++) {
      offsets.putInt(4 * i, all.length());
      all.append(words[i]);
    }
    offsets.putInt(4 * words.length, all.length());
    byte[] bytes = all.toString().getBytes(StandardCharsets.UTF_8);
    ByteBuffer data = ByteBuffer.allocateDirect(Math.max(1, bytes.length));
    data.put(bytes).clear();
    return ExportedBatch.of(words.length).buffers(null, offsets, data);
  }

  static void arrowJava() {
    try (BufferAllocator allocator = new RootAllocator()) {
      try (DeviceArray array = ArrayExporter.toDeviceArray(FieldSpec.of("i", "x"),
          int32s(1, -1, 3, 4));
          IntVector vector = (IntVector) ArrowJava.toVector(array, allocator)) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < vector.getValueCount(); i++) {
          out.add(vector.isNull(i) ? "null" : Integer.toString(vector.get(i)));
        }
        System.out.println("arrow: " + out);
        // ... and an Arrow Java vector into ferry, without copying.
        try (DeviceArray back = ArrowJava.fromVector(vector, allocator)) {
          System.out.println("arrow -> ferry: " + show(back));
        }
      }
    }
  }

  /** The first GPU that works (CUDA, then ROCm), else the simulated device. */
  static Device pickDevice() {
    for (Device.Backend b : Device.backends()) {
      if (!b.available()) continue;
      if (b.name().equals("cuda")) return Device.resolve(DeviceType.CUDA, 0);
      if (b.name().equals("rocm")) return Device.resolve(DeviceType.ROCM, 0);
    }
    return Device.sim(0);
  }

  static void device() {
    Device device = pickDevice();
    String name = DeviceType.name(device.type()) + ":" + device.id();
    if (device.type() == DeviceType.SIM) name += " (no GPU: the simulated device)";
    try (DeviceArray host = ArrayExporter.toDeviceArray(FieldSpec.of("i", "x"),
        int32s(1, -1, 3, 4));
        DeviceArray onDevice = host.copyTo(device);
        DeviceArray back = onDevice.toHost()) { // waits on the device's work, then copies
      System.out.println("device: " + name + " -> host " + show(back));
    }
  }
}
