package io.github.ferryarrow.ferry.it;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import io.github.ferryarrow.ferry.Device;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.FieldSpec;

/**
 * Builds the array of a case in Java memory (direct ByteBuffers) and, for other
 * devices, copies it there: the Java producer of the cross-language tests.
 * Logical element i sits in physical slot i + offset of the top-level array;
 * slots before the offset hold zeros (unspecified by cases.md).
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
    ByteBuffer[] buffers = new ByteBuffer[0];
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

    Node buffers(ByteBuffer... b) {
      buffers = b;
      return this;
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
    Node host = hostBatch(c, seed);
    if (c.deviceType == DeviceType.CPU) return onCpu(host);
    return toDevice(host, Device.resolve(c.deviceType, c.deviceId()));
  }

  private static ExportedBatch onCpu(Node n) {
    ExportedBatch b = ExportedBatch.of(n.length).nullCount(n.nullCount).offset(n.offset)
        .buffers(n.buffers);
    ExportedBatch[] children = new ExportedBatch[n.children.length];
    for (int i = 0; i < children.length; i++) children[i] = onCpu(n.children[i]);
    b.children(children);
    if (n.dictionary != null) b.dictionary(onCpu(n.dictionary));
    return b;
  }

  private static Node hostBatch(Case c, long seed) {
    long slots = c.length + c.offset;
    int n = Math.toIntExact(slots);
    ByteBuffer validity = c.nulls > 0 ? validity(c, n) : null;
    Node b = new Node(c.length).nullCount(c.nullCount()).offset(c.offset);
    switch (c.type) {
      case BOOL: {
        ByteBuffer values = bitmap(n);
        for (long i = 0; i < c.length; i++) {
          if (Values.bool(seed, i)) setBit(values, i + c.offset);
        }
        return b.buffers(validity, values);
      }
      case UTF8:
      case BINARY: {
        ByteBuffer[] strings = strings(n, c.offset, i -> Values.text(seed, i));
        return b.buffers(validity, strings[0], strings[1]);
      }
      case LIST_INT32: {
        ByteBuffer offsets = buffer(4L * (n + 1));
        int total = 0;
        for (int s = 0; s < n; s++) {
          offsets.putInt(4 * s, total);
          if (s >= c.offset) total += Values.listSize(seed, s - c.offset);
        }
        offsets.putInt(4 * n, total);
        Node child = new Node(total).buffers(null, int32s(total, 0, j -> (int) Values.u(seed, j)));
        return b.buffers(validity, offsets).children(child);
      }
      case STRUCT_INT32_UTF8: {
        long seedB = (seed + 1) & 0xFFFFFFFFL;
        Node a = new Node(n).buffers(null,
            int32s(n, c.offset, i -> (int) Values.u(seed, i)));
        ByteBuffer[] strings = strings(n, c.offset, i -> Values.text(seedB, i));
        Node bb = new Node(n).buffers(null, strings[0], strings[1]);
        return b.buffers(validity).children(a, bb);
      }
      case DICT_INT32_UTF8: {
        ByteBuffer[] words = strings(7, 0, i -> "d" + i);
        Node dictionary = new Node(7).buffers(null, words[0], words[1]);
        return b.buffers(validity, int32s(n, c.offset, i -> Values.dictIndex(seed, i)))
            .dictionary(dictionary);
      }
      default:
        return b.buffers(validity, fixedWidth(c, seed, n));
    }
  }

  private static ByteBuffer fixedWidth(Case c, long seed, int n) {
    ByteBuffer values = buffer((long) c.type.width * n);
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
    return values;
  }

  private static ByteBuffer validity(Case c, int slots) {
    ByteBuffer bits = bitmap(slots);
    for (long s = 0; s < slots; s++) {
      long i = s - c.offset;
      if (i < 0 || !c.isNull(i)) setBit(bits, s);
    }
    return bits;
  }

  interface IntOf {
    int at(long i);
  }

  interface TextOf {
    String at(long i);
  }

  /** n int32 slots; slot s >= skip holds f(s - skip). */
  private static ByteBuffer int32s(int n, long skip, IntOf f) {
    ByteBuffer values = buffer(4L * n);
    for (int s = (int) skip; s < n; s++) values.putInt(4 * s, f.at(s - skip));
    return values;
  }

  /** {offsets, data} of n string slots; slot s >= skip holds f(s - skip), others "". */
  private static ByteBuffer[] strings(int n, long skip, TextOf f) {
    List<byte[]> values = new ArrayList<>(n);
    long size = 0;
    for (int s = 0; s < n; s++) {
      byte[] v = s < skip ? new byte[0] : f.at(s - skip).getBytes(StandardCharsets.UTF_8);
      values.add(v);
      size += v.length;
    }
    ByteBuffer offsets = buffer(4L * (n + 1));
    ByteBuffer data = buffer(size);
    int at = 0;
    for (int s = 0; s < n; s++) {
      offsets.putInt(4 * s, at);
      data.put(at, values.get(s));
      at += values.get(s).length;
    }
    offsets.putInt(4 * n, at);
    return new ByteBuffer[] {offsets, data};
  }

  private static ByteBuffer bitmap(long bits) {
    return buffer((bits + 7) / 8);
  }

  private static void setBit(ByteBuffer bits, long i) {
    int at = (int) (i / 8);
    bits.put(at, (byte) (bits.get(at) | (1 << (i % 8))));
  }

  /** A zeroed direct native-order buffer (at least one byte, so it has an address). */
  static ByteBuffer buffer(long size) {
    return ByteBuffer.allocateDirect((int) Math.max(1, size)).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Copies every buffer of {@code host} to {@code device} on one stream and returns
   *  the same array over device memory, with an event on that stream; release
   *  frees the memory and the stream. */
  private static ExportedBatch toDevice(Node host, Device device) {
    long stream = device.createStream();
    List<Long> allocations = new ArrayList<>();
    try {
      ExportedBatch out = copyTree(host, device, stream, allocations);
      return out.producedOn(device, stream).onRelease(() -> {
        for (long pointer : allocations) device.deallocate(pointer);
        device.destroyStream(stream);
      });
    } catch (RuntimeException e) {
      for (long pointer : allocations) device.deallocate(pointer);
      device.destroyStream(stream);
      throw e;
    }
  }

  private static ExportedBatch copyTree(Node host, Device device, long stream,
      List<Long> allocations) {
    long[] addresses = new long[host.buffers.length];
    for (int i = 0; i < host.buffers.length; i++) {
      ByteBuffer b = host.buffers[i];
      if (b == null) continue;
      long pointer = device.allocate(b.capacity());
      allocations.add(pointer);
      device.copyFromHost(b, pointer, stream);
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
    // The queued copies read the host buffers: keep them reachable until release.
    ByteBuffer[] sources = host.buffers;
    return out.onRelease(() -> java.util.Objects.requireNonNull(sources));
  }
}
