package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** The base of the tests against Arrow Java: a fresh allocator per test and,
 *  after it, every byte given back to the allocator and every Java export
 *  released. */
abstract class ArrowAllocatorTest {
  protected BufferAllocator allocator;

  @BeforeEach
  void allocator() {
    allocator = new RootAllocator();
  }

  @AfterEach
  void nothingLeaked() {
    assertEquals(0, allocator.getAllocatedMemory(), "Arrow Java memory all returned");
    allocator.close();
    assertEquals(0, ArrayExporter.liveExports(), "every Java export released");
  }
}
