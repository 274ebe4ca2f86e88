package io.github.ferryarrow.ferry.it;

import io.github.ferryarrow.ferry.Device;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.FieldSpec;
import io.github.ferryarrow.ferry.HostBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds the array of a case and exports it: the Java producer of the
 * cross-language tests. The values are written into host memory that ferry
 * allocates ({@link HostBuffer}: outside the Java heap and not counted against
 * -XX:MaxDirectMemorySize, so a 100-million-element array needs no direct
 * buffer memory); a CPU case exports that memory itself, a device case uses it
 * as staging (pinned host memory of the GPU where there is some) for the copies
 * to the device. Logical element i sits in physical slot i + offset of the
 * top-level array; slots before the offset hold zeros (unspecified by cases.md).
 */
final class CaseProducer {
  private CaseProducer() {}

  /** The field of a case (names and nesting as cases.md says). */
  static FieldSpec field(Case c) {
    FieldSpec top = FieldSpec.of(c.type.format, c.type.word);
    switch (c.type) {
      case LIST_INT32:
        return top.withChildren(FieldSpec.of("i", "item"));
      case STRUCT_INT32_UTF8:
        return top.withChildren(FieldSpec.of("i", "a"), FieldSpec.of("u", "b"));
      case DICT_INT32_UTF8:
        return top.withDictionary(FieldSpec.of("u", null));
      default:
        return top;
    }
  }

  /** One array of the case in host memory, before it becomes an ExportedBatch. */
  static final class Node {
    final long length;
    long nullCount;
    long offset;
    HostBuffer[] buffers = new HostBuffer[0];
    Node[] children = new Node[0];
    Node dictionary;

    Node(long length) {
      this.length = length;
    }

    Node nullCount(long n) {
      nullCount = n;
      return this;
    }

    Node offset(long o) {
      offset = o;
      return this;
    }

    Node buffers(HostBuffer... b) {
      buffers = b;
      return this;
    }

    /** Frees the host memory of this node and its children and dictionary. */
    void free() {
      for (HostBuffer b : buffers) {
        if (b != null) b.close();
      }
      for (Node child : children) child.free();
      if (dictionary != null) dictionary.free();
    }

    Node children(Node... c) {
      children = c;
      return this;
    }

    Node dictionary(Node d) {
      dictionary = d;
      return this;
    }
  }

  /** The batch of a case with {@code seed} (streams use seed + b), on the case's device. */
  static ExportedBatch batch(Case c, long seed) {
    if (c.deviceType == DeviceType.CPU) {
      Node host = hostBatch(c, seed, Device.cpu());
      return onCpu(host);
    }
    Device device = Device.resolve(c.deviceType, c.deviceId());
    return toDevice(hostBatch(c, seed, device), device);
  }

  /** The export takes the host memory over: the consumer's release frees it. */
  private static ExportedBatch onCpu(Node n) {
    ExportedBatch b = ExportedBatch.of(n.length).nullCount(n.nullCount).offset(n.offset)
        .ownedBuffers(n.buffers);
    ExportedBatch[] children = new ExportedBatch[n.children.length];
    for (int i = 0; i < children.length; i++) children[i] = onCpu(n.children[i]);
    b.children(children);
    if (n.dictionary != null) b.dictionary(onCpu(n.dictionary));
    return b;
  }

  /** The values of a case in host memory (staging memory for {@code device}). */
  private static Node hostBatch(Case c, long seed, Device device) {
    List<HostBuffer> made = new ArrayList<>();
    Staging staging = size -> {
      HostBuffer b = HostBuffer.stagingFor(device, Math.max(1, size)).zero();
      made.add(b);
      return b;
    };
    try {
      return hostBatch(c, seed, staging);
    } catch (RuntimeException | Error e) {
      for (HostBuffer b : made) b.close();
      throw e;
    }
  }

  /** Makes zeroed host memory of a size. */
  interface Staging {
    HostBuffer of(long size);
  }

  private static Node hostBatch(Case c, long seed, Staging staging) {
    long slots = c.length + c.offset;
    int n = Math.toIntExact(slots);
    HostBuffer validity = c.nulls > 0 ? validity(c, n, staging) : null;
    Node b = new Node(c.length).nullCount(c.nullCount()).offset(c.offset);
    switch (c.type) {
      case BOOL: {
        HostBuffer bits = bitmap(n, staging);
        ByteBuffer values = view(bits);
        for (long i = 0; i < c.length; i++) {
          if (Values.bool(seed, i)) setBit(values, i + c.offset);
        }
        return b.buffers(validity, bits);
      }
      case UTF8:
      case BINARY: {
        HostBuffer[] strings = strings(n, c.offset, i -> Values.text(seed, i), staging);
        return b.buffers(validity, strings[0], strings[1]);
      }
      case LIST_INT32: {
        HostBuffer offsetsMemory = staging.of(4L * (n + 1));
        ByteBuffer offsets = view(offsetsMemory);
        int total = 0;
        for (int s = 0; s < n; s++) {
          offsets.putInt(4 * s, total);
          if (s >= c.offset) total += Values.listSize(seed, s - c.offset);
        }
        offsets.putInt(4 * n, total);
        Node child = new Node(total).buffers(null,
            int32s(total, 0, j -> (int) Values.u(seed, j), staging));
        return b.buffers(validity, offsetsMemory).children(child);
      }
      case STRUCT_INT32_UTF8: {
        long seedB = (seed + 1) & 0xFFFFFFFFL;
        Node a = new Node(n).buffers(null,
            int32s(n, c.offset, i -> (int) Values.u(seed, i), staging));
        HostBuffer[] strings = strings(n, c.offset, i -> Values.text(seedB, i), staging);
        Node bb = new Node(n).buffers(null, strings[0], strings[1]);
        return b.buffers(validity).children(a, bb);
      }
      case DICT_INT32_UTF8: {
        HostBuffer[] words = strings(7, 0, i -> "d" + i, staging);
        Node dictionary = new Node(7).buffers(null, words[0], words[1]);
        return b.buffers(validity, int32s(n, c.offset, i -> Values.dictIndex(seed, i), staging))
            .dictionary(dictionary);
      }
      default:
        return b.buffers(validity, fixedWidth(c, seed, n, staging));
    }
  }

  private static HostBuffer fixedWidth(Case c, long seed, int n, Staging staging) {
    HostBuffer memory = staging.of((long) c.type.width * n);
    ByteBuffer values = view(memory);
    for (long i = 0; i < c.length; i++) {
      int s = (int) (i + c.offset);
      long u = Values.u(seed, i);
      switch (c.type) {
        case INT8: case UINT8: values.put(s, (byte) u); break;
        case INT16: case UINT16: values.putShort(2 * s, (short) u); break;
        case INT32: case UINT32: values.putInt(4 * s, (int) u); break;
        case INT64: case UINT64: values.putLong(8 * s, Values.wide(seed, i)); break;
        case FLOAT32: values.putFloat(4 * s, Values.float32(seed, i)); break;
        case FLOAT64: values.putDouble(8 * s, Values.float64(seed, i)); break;
        default: throw new IllegalStateException("not fixed-width: " + c.type);
      }
    }
    return memory;
  }

  private static HostBuffer validity(Case c, int slots, Staging staging) {
    HostBuffer memory = bitmap(slots, staging);
    ByteBuffer bits = view(memory);
    for (long s = 0; s < slots; s++) {
      long i = s - c.offset;
      if (i < 0 || !c.isNull(i)) setBit(bits, s);
    }
    return memory;
  }

  interface IntOf {
    int at(long i);
  }

  interface TextOf {
    String at(long i);
  }

  /** n int32 slots; slot s >= skip holds f(s - skip). */
  private static HostBuffer int32s(int n, long skip, IntOf f, Staging staging) {
    HostBuffer memory = staging.of(4L * n);
    ByteBuffer values = view(memory);
    for (int s = (int) skip; s < n; s++) values.putInt(4 * s, f.at(s - skip));
    return memory;
  }

  /** {offsets, data} of n string slots; slot s >= skip holds f(s - skip), others "". */
  private static HostBuffer[] strings(int n, long skip, TextOf f, Staging staging) {
    List<byte[]> values = new ArrayList<>(n);
    long size = 0;
    for (int s = 0; s < n; s++) {
      byte[] v = s < skip ? new byte[0] : f.at(s - skip).getBytes(StandardCharsets.UTF_8);
      values.add(v);
      size += v.length;
    }
    HostBuffer offsetsMemory = staging.of(4L * (n + 1));
    HostBuffer dataMemory = staging.of(size);
    ByteBuffer offsets = view(offsetsMemory);
    ByteBuffer data = view(dataMemory);
    int at = 0;
    for (int s = 0; s < n; s++) {
      offsets.putInt(4 * s, at);
      data.put(at, values.get(s));
      at += values.get(s).length;
    }
    offsets.putInt(4 * n, at);
    return new HostBuffer[] {offsetsMemory, dataMemory};
  }

  private static HostBuffer bitmap(long bits, Staging staging) {
    return staging.of((bits + 7) / 8);
  }

  /** A little-endian view of a whole host buffer (cases.md values are little-endian). */
  private static ByteBuffer view(HostBuffer memory) {
    return memory.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
  }

  private static void setBit(ByteBuffer bits, long i) {
    int at = (int) (i / 8);
    bits.put(at, (byte) (bits.get(at) | (1 << (i % 8))));
  }

  /** Copies every buffer of {@code host} to {@code device} on one stream and returns
   *  the same array over device memory, with an event on that stream. The release
   *  waits for the copies (a consumer may release without waiting on the event),
   *  then frees the device memory, the staging memory and the stream. */
  private static ExportedBatch toDevice(Node host, Device device) {
    long stream;
    try {
      stream = device.createStream();
    } catch (RuntimeException | Error e) {
      host.free();
      throw e;
    }
    List<Long> allocations = new ArrayList<>();
    Runnable free = () -> {
      device.synchronize(stream);
      for (long pointer : allocations) device.deallocate(pointer);
      host.free();
      device.destroyStream(stream);
    };
    try {
      ExportedBatch out = copyTree(host, device, stream, allocations);
      return out.producedOn(device, stream).onRelease(free);
    } catch (RuntimeException | Error e) {
      free.run();
      throw e;
    }
  }

  private static ExportedBatch copyTree(Node host, Device device, long stream,
      List<Long> allocations) {
    long[] addresses = new long[host.buffers.length];
    for (int i = 0; i < host.buffers.length; i++) {
      HostBuffer b = host.buffers[i];
      if (b == null) continue;
      long pointer = device.allocate(b.size());
      allocations.add(pointer);
      Device.memcpy(device, pointer, b.device(), b.address(), b.size(), stream);
      addresses[i] = pointer;
    }
    ExportedBatch out = ExportedBatch.of(host.length).nullCount(host.nullCount)
        .offset(host.offset).bufferAddresses(addresses);
    ExportedBatch[] children = new ExportedBatch[host.children.length];
    for (int i = 0; i < children.length; i++) {
      children[i] = copyTree(host.children[i], device, stream, allocations);
    }
    out.children(children);
    if (host.dictionary != null) out.dictionary(copyTree(host.dictionary, device, stream, allocations));
    return out;
  }
}
