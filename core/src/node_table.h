/* The distinct nodes a walk over an Arrow tree has met (private to the core).
 *
 * A producer's tree may be a graph: children and dictionaries shared between
 * parents, or pointing back at an ancestor. Every recursive walk of the core
 * (validation, deep copy) records each node it enters here, so that it enters
 * each node once: its work is linear in the distinct nodes, and a repeated
 * node is found at once (it is a finding: the specification's ownership rules
 * make a shared child unreleasable, since each parent's release frees it).
 *
 * Each element starts with `const void* key` (the node's address); the rest
 * of it belongs to the walk. The first elements live in storage the caller
 * provides (on its stack), so small trees cost no allocation; lookups scan
 * them linearly while they are few and switch to a hash of the keys beyond
 * FERRY_NODE_TABLE_LINEAR nodes. Elements move when the table grows: hold
 * indices, never pointers, across an add. */
#ifndef FERRY_SRC_NODE_TABLE_H
#define FERRY_SRC_NODE_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* Up to this many nodes, finding a key scans them (cheaper than hashing). */
#define FERRY_NODE_TABLE_LINEAR 16

struct FerryNodeTable {
  unsigned char* elements;
  size_t element_size;
  int32_t count;
  int32_t capacity;
  /* Open addressing over `n_slots` (a power of two): element index + 1, 0 for
   * an empty slot. NULL until the table holds more than the linear limit. */
  int32_t* slots;
  int32_t n_slots;
  /* The caller's storage, used until it is full. */
  unsigned char* inline_elements;
  int32_t* inline_slots;
  int32_t inline_n_slots;
};

/* Starts an empty table over `inline_capacity` elements of `element_size`
 * bytes at `inline_elements`, and `inline_n_slots` hash slots (a power of
 * two, at least twice inline_capacity) at `inline_slots`; none of that
 * storage needs to be initialised. */
void ferry__node_table_init(struct FerryNodeTable* table, size_t element_size,
                            void* inline_elements, int32_t inline_capacity,
                            int32_t* inline_slots, int32_t inline_n_slots);

/* Frees what the table allocated (never the caller's storage). */
void ferry__node_table_free(struct FerryNodeTable* table);

/* Index of the element whose key is `key`, or -1. */
int32_t ferry__node_table_find(const struct FerryNodeTable* table, const void* key);

/* Appends an element for `key` (which must not be in the table yet) and
 * returns its index; -1 when memory ran out. The element's bytes after the
 * key are left for the caller to fill. */
int32_t ferry__node_table_add(struct FerryNodeTable* table, const void* key);

static inline void* ferry__node_table_at(const struct FerryNodeTable* table,
                                         int32_t index) {
  return table->elements + (size_t)index * table->element_size;
}

#endif  // FERRY_SRC_NODE_TABLE_H
