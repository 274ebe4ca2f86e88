/* The distinct nodes of a walk (see node_table.h). */
#include "node_table.h"

#include <stdlib.h>
#include <string.h>

static const void* key_at(const struct FerryNodeTable* table, int32_t index) {
  return ferry__node_table_key(table, index);
}

/* Fibonacci hashing of the address into a table of 2^bits slots. */
static uint32_t slot_of(const void* key, int32_t n_slots) {
  uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
  return (uint32_t)(h >> 32) & (uint32_t)(n_slots - 1);
}

void ferry__node_table_free_heap(struct FerryNodeTable* table) {
  if (table->elements != table->inline_elements) free(table->elements);
  if (table->slots != table->inline_slots) free(table->slots);
  table->elements = table->inline_elements;
  table->slots = NULL;
}

int32_t ferry__node_table_find_hashed(const struct FerryNodeTable* table,
                                      const void* key) {
  uint32_t mask = (uint32_t)table->n_slots - 1;
  for (uint32_t s = slot_of(key, table->n_slots);; s = (s + 1) & mask) {
    int32_t entry = table->slots[s];
    if (entry == 0) return -1;
    if (key_at(table, entry - 1) == key) return entry - 1;
  }
}

static void hash_insert(struct FerryNodeTable* table, int32_t index) {
  uint32_t mask = (uint32_t)table->n_slots - 1;
  uint32_t s = slot_of(key_at(table, index), table->n_slots);
  while (table->slots[s] != 0) s = (s + 1) & mask;
  table->slots[s] = index + 1;
}

/* (Re)builds the hash with at least twice as many slots as `capacity`. */
static int rehash(struct FerryNodeTable* table, int32_t capacity) {
  int32_t n_slots = 64;
  while (n_slots < 2 * capacity) {
    if (n_slots > INT32_MAX / 2) return -1;
    n_slots *= 2;
  }
  int32_t* slots = table->inline_slots;
  if (n_slots > table->inline_n_slots) {
    slots = (int32_t*)malloc((size_t)n_slots * sizeof(int32_t));
    if (slots == NULL) return -1;
  }
  if (table->slots != NULL && table->slots != table->inline_slots) free(table->slots);
  memset(slots, 0, (size_t)n_slots * sizeof(int32_t));
  table->slots = slots;
  table->n_slots = n_slots;
  for (int32_t i = 0; i < table->count; i++) hash_insert(table, i);
  return 0;
}

static int grow(struct FerryNodeTable* table) {
  if (table->capacity > INT32_MAX / 4) return -1;
  int32_t capacity = table->capacity < 32 ? 64 : table->capacity * 2;
  unsigned char* grown;
  if (table->elements == table->inline_elements) {
    grown = (unsigned char*)malloc((size_t)capacity * table->element_size);
    if (grown != NULL) {
      memcpy(grown, table->elements, (size_t)table->count * table->element_size);
    }
  } else {
    grown = (unsigned char*)realloc(table->elements,
                                    (size_t)capacity * table->element_size);
  }
  if (grown == NULL) return -1;
  table->elements = grown;
  table->capacity = capacity;
  return 0;
}

int32_t ferry__node_table_add_slow(struct FerryNodeTable* table, const void* key) {
  if (table->count == table->capacity && grow(table) != 0) return -1;
  int32_t index = table->count;
  memcpy(ferry__node_table_at(table, index), &key, sizeof key);
  table->count++;
  if (table->slots != NULL && 2 * table->count <= table->n_slots) {
    hash_insert(table, index);
  } else if (table->count > FERRY_NODE_TABLE_LINEAR) {
    if (rehash(table, table->capacity) != 0) {
      table->count--;
      return -1;
    }
  }
  return index;
}
