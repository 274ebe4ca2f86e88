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
#include <string.h>

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
static inline void ferry__node_table_init(struct FerryNodeTable* table,
                                          size_t element_size, void* inline_elements,
                                          int32_t inline_capacity, int32_t* inline_slots,
                                          int32_t inline_n_slots) {
  table->elements = (unsigned char*)inline_elements;
  table->element_size = element_size;
  table->count = 0;
  table->capacity = inline_capacity;
  table->slots = NULL;
  table->n_slots = 0;
  table->inline_elements = (unsigned char*)inline_elements;
  table->inline_slots = inline_slots;
  table->inline_n_slots = inline_n_slots;
}

/* The heap parts of ferry__node_table_free, find and add (node_table.c). */
void ferry__node_table_free_heap(struct FerryNodeTable* table);
int32_t ferry__node_table_find_hashed(const struct FerryNodeTable* table, const void* key);
int32_t ferry__node_table_add_slow(struct FerryNodeTable* table, const void* key);

/* Frees what the table allocated (never the caller's storage). */
static inline void ferry__node_table_free(struct FerryNodeTable* table) {
  if (table->elements != table->inline_elements || table->slots != NULL) {
    ferry__node_table_free_heap(table);
  }
  table->count = 0;
}

static inline void* ferry__node_table_at(const struct FerryNodeTable* table,
                                         int32_t index) {
  return table->elements + (size_t)index * table->element_size;
}

static inline const void* ferry__node_table_key(const struct FerryNodeTable* table,
                                                int32_t index) {
  const void* key;
  memcpy(&key, ferry__node_table_at(table, index), sizeof key);
  return key;
}

/* Index of the element whose key is `key`, or -1. */
static inline int32_t ferry__node_table_find(const struct FerryNodeTable* table,
                                             const void* key) {
  if (table->slots != NULL) return ferry__node_table_find_hashed(table, key);
  for (int32_t i = 0; i < table->count; i++) {
    if (ferry__node_table_key(table, i) == key) return i;
  }
  return -1;
}

/* Appends an element for `key` (which must not be in the table yet) and
 * returns its index; -1 when memory ran out. The element's bytes after the
 * key are left for the caller to fill. */
static inline int32_t ferry__node_table_add(struct FerryNodeTable* table,
                                            const void* key) {
  if (table->count < FERRY_NODE_TABLE_LINEAR && table->count < table->capacity) {
    int32_t index = table->count++;
    memcpy(ferry__node_table_at(table, index), &key, sizeof key);
    return index;
  }
  return ferry__node_table_add_slow(table, key);
}

#endif  // FERRY_SRC_NODE_TABLE_H
