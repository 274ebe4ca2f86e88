/* Hostile producers for spec/hostile_spec.lua (a test helper, never part of
 * the module or the rock): arrays and streams that lie about themselves in
 * one way each, built from raw structs (not ferry's helpers), chosen by name.
 * Plain C functions for LuaJIT's FFI, and, built with LFERRY_HOSTILE_LUA54,
 * the same functions as a Lua 5.4 module (`lferry_hostile54`).
 *
 * Every array (schema or device array) is one malloc'd block of nodes,
 * buffers and pointer tables, freed by its root's release; children only mark
 * themselves released. lferry_hostile_live() counts roots built and not yet
 * released, lferry_hostile_double_releases() roots released twice, so a test
 * can see that the consumer released everything exactly once. */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"

#define HOSTILE_EXPORT __attribute__((visibility("default")))

static atomic_long live_roots;
static atomic_long double_releases;

HOSTILE_EXPORT int64_t lferry_hostile_live(void) { return atomic_load(&live_roots); }
HOSTILE_EXPORT int64_t lferry_hostile_double_releases(void) {
  return atomic_load(&double_releases);
}

/* ---- one block per tree ------------------------------------------------------ */

#define MAX_NODES 4

struct block {
  struct ArrowSchema schemas[MAX_NODES];
  struct ArrowSchema* schema_children[MAX_NODES][2];
  struct ArrowArray arrays[MAX_NODES];
  struct ArrowArray* array_children[MAX_NODES][2];
  const void* buffers[MAX_NODES][3];
  int32_t offsets[8];
  int32_t values[8];
  uint8_t validity[8];
  char data[16];
  uint8_t bits[64];          /* the 64-byte buffer of "bool_huge" */
  int64_t large_offsets[4];  /* the offsets of "large_utf8_huge" */
  int released; /* root released: a second release is counted */
  void* device_memory;     /* sim memory of the "sim_too_short" case */
  struct FerryDevice* device;
};

static void child_schema_release(struct ArrowSchema* s) { s->release = NULL; }
static void child_array_release(struct ArrowArray* a) { a->release = NULL; }

static void root_schema_release(struct ArrowSchema* s) {
  struct block* b = (struct block*)s->private_data;
  s->release = NULL;
  if (b->released++) {
    atomic_fetch_add(&double_releases, 1);
    return;
  }
  free(b);
  atomic_fetch_sub(&live_roots, 1);
}

static void root_array_release(struct ArrowArray* a) {
  struct block* b = (struct block*)a->private_data;
  a->release = NULL;
  if (b->released++) {
    atomic_fetch_add(&double_releases, 1);
    return;
  }
  if (b->device_memory) ferry_device_deallocate(b->device, b->device_memory, NULL);
  free(b);
  atomic_fetch_sub(&live_roots, 1);
}

static struct block* new_block(void) {
  struct block* b = (struct block*)calloc(1, sizeof(struct block));
  if (b) atomic_fetch_add(&live_roots, 1);
  return b;
}

/* Schema node i of `b`: format, name, nullable, n_children (children are
 * nodes 1.. by default). */
static struct ArrowSchema* schema_node(struct block* b, int i, const char* format, const char* name,
                                       int64_t n_children) {
  struct ArrowSchema* s = &b->schemas[i];
  s->format = format;
  s->name = name;
  s->flags = ARROW_FLAG_NULLABLE;
  s->n_children = n_children;
  s->children = n_children ? b->schema_children[i] : NULL;
  for (int64_t c = 0; c < n_children && c < 2; c++) b->schema_children[i][c] = &b->schemas[i + 1 + c];
  s->release = i == 0 ? root_schema_release : child_schema_release;
  s->private_data = b;
  return s;
}

static struct ArrowArray* array_node(struct block* b, int i, int64_t length, int64_t null_count,
                                     int64_t offset, int64_t n_buffers, int64_t n_children) {
  struct ArrowArray* a = &b->arrays[i];
  a->length = length;
  a->null_count = null_count;
  a->offset = offset;
  a->n_buffers = n_buffers;
  a->buffers = b->buffers[i];
  a->n_children = n_children;
  a->children = n_children ? b->array_children[i] : NULL;
  for (int64_t c = 0; c < n_children && c < 2; c++) b->array_children[i][c] = &b->arrays[i + 1 + c];
  a->release = i == 0 ? root_array_release : child_array_release;
  a->private_data = b;
  return a;
}

/* ---- the catalogue ------------------------------------------------------------ */

/* Fills `schema` and `array` (one block each) with the hostile case `name`;
 * returns 0, EINVAL for an unknown name, ENOMEM. `length` overrides the
 * length of the int32 cases when >= 0 (for stream batches). */
static int build(const char* name, struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct block* sb = new_block();
  struct block* ab = new_block();
  if (!sb || !ab) {
    if (sb) root_schema_release(&(struct ArrowSchema){.private_data = sb});
    if (ab) root_array_release(&(struct ArrowArray){.private_data = ab});
    return ENOMEM;
  }
  memset(array, 0, sizeof(*array));
  array->device_type = ARROW_DEVICE_CPU;
  array->device_id = -1;
  for (int i = 0; i < 8; i++) ab->values[i] = 10 * (i + 1);
  memset(ab->validity, 0xff, sizeof(ab->validity));
  /* utf8 ["ab", "", "cde"] unless a case changes it */
  int32_t offsets[4] = {0, 2, 2, 5};
  memcpy(ab->offsets, offsets, sizeof(offsets));
  memcpy(ab->data, "abcde", 5);
  struct ArrowArray* a;

  if (strcmp(name, "good_int32") == 0 || strcmp(name, "n_buffers") == 0 ||
      strcmp(name, "null_values") == 0 || strcmp(name, "negative_length") == 0 ||
      strcmp(name, "offset_overflow") == 0 || strcmp(name, "reserved") == 0 ||
      strcmp(name, "sync_event_cpu") == 0 || strcmp(name, "null_count_lie") == 0) {
    schema_node(sb, 0, "i", "x", 0);
    a = array_node(ab, 0, 4, 0, 0, 2, 0);
    ab->buffers[0][1] = ab->values;
    if (strcmp(name, "n_buffers") == 0) a->n_buffers = 1;
    if (strcmp(name, "null_values") == 0) ab->buffers[0][1] = NULL;
    if (strcmp(name, "negative_length") == 0) a->length = -1;
    if (strcmp(name, "offset_overflow") == 0) a->offset = INT64_MAX - 1;
    if (strcmp(name, "reserved") == 0) array->reserved[0] = 7;
    if (strcmp(name, "sync_event_cpu") == 0) array->sync_event = ab->values;
    if (strcmp(name, "null_count_lie") == 0) {
      a->null_count = 9; /* more nulls than elements */
      ab->buffers[0][0] = ab->validity;
    }
  } else if (strcmp(name, "bad_format") == 0) {
    schema_node(sb, 0, "q", "x", 0);
    a = array_node(ab, 0, 4, 0, 0, 2, 0);
    ab->buffers[0][1] = ab->values;
  } else if (strcmp(name, "decreasing_offsets") == 0 || strcmp(name, "negative_offset") == 0 ||
             strcmp(name, "bad_utf8") == 0 || strcmp(name, "good_utf8") == 0) {
    schema_node(sb, 0, "u", "s", 0);
    a = array_node(ab, 0, 3, 0, 0, 3, 0);
    ab->buffers[0][1] = ab->offsets;
    ab->buffers[0][2] = ab->data;
    if (strcmp(name, "decreasing_offsets") == 0) ab->offsets[2] = 1; /* 0, 2, 1, 5 */
    if (strcmp(name, "negative_offset") == 0) ab->offsets[1] = -3;
    if (strcmp(name, "bad_utf8") == 0) ab->data[0] = (char)0xff;
  } else if (strcmp(name, "list_past_child") == 0) {
    schema_node(sb, 0, "+l", "l", 1);
    schema_node(sb, 1, "i", "item", 0);
    a = array_node(ab, 0, 2, 0, 0, 2, 1);
    int32_t list_offsets[3] = {0, 2, 9}; /* the child has 4 elements */
    memcpy(ab->offsets, list_offsets, sizeof(list_offsets));
    ab->buffers[0][1] = ab->offsets;
    array_node(ab, 1, 4, 0, 0, 2, 0);
    ab->buffers[1][1] = ab->values;
  } else if (strcmp(name, "self_cycle") == 0 || strcmp(name, "shared_children") == 0 ||
             strcmp(name, "null_child") == 0 || strcmp(name, "released_child") == 0 ||
             strcmp(name, "child_count") == 0) {
    schema_node(sb, 0, "+s", "s", 2);
    schema_node(sb, 1, "i", "a", 0);
    schema_node(sb, 2, "i", "b", 0);
    a = array_node(ab, 0, 4, 0, 0, 1, 2);
    array_node(ab, 1, 4, 0, 0, 2, 0);
    ab->buffers[1][1] = ab->values;
    array_node(ab, 2, 4, 0, 0, 2, 0);
    ab->buffers[2][1] = ab->values;
    if (strcmp(name, "self_cycle") == 0) {
      /* child 0 becomes a struct whose only child is itself (a cycle that
       * survives the root being moved) */
      struct ArrowArray* loop = &ab->arrays[1];
      loop->n_buffers = 1;
      loop->n_children = 1;
      loop->children = ab->array_children[1];
      ab->array_children[1][0] = loop;
      schema_node(sb, 1, "+s", "a", 1);
      sb->schema_children[1][0] = &sb->schemas[3];
      schema_node(sb, 3, "i", "c", 0);
    }
    if (strcmp(name, "shared_children") == 0) ab->array_children[0][1] = &ab->arrays[1];
    if (strcmp(name, "null_child") == 0) ab->array_children[0][1] = NULL;
    if (strcmp(name, "released_child") == 0) ab->arrays[2].release = NULL;
    if (strcmp(name, "child_count") == 0) a->n_children = 1;
  } else if (strcmp(name, "dictionary_missing") == 0 || strcmp(name, "dictionary_index") == 0) {
    schema_node(sb, 0, "i", "d", 0);
    sb->schemas[0].dictionary = schema_node(sb, 1, "u", NULL, 0);
    a = array_node(ab, 0, 2, 0, 0, 2, 0);
    ab->values[0] = 1;
    ab->values[1] = 7; /* the dictionary has 3 values */
    ab->buffers[0][1] = ab->values;
    if (strcmp(name, "dictionary_index") == 0) {
      a->dictionary = array_node(ab, 1, 3, 0, 0, 3, 0);
      ab->buffers[1][1] = ab->offsets;
      ab->buffers[1][2] = ab->data;
    }
  } else if (strcmp(name, "bool_huge") == 0) {
    /* bool of length 2^62 over 64 bytes: passes validation (CPU buffers
     * carry no size), a reader must refuse it (issue 20, item 4). */
    schema_node(sb, 0, "b", "flag", 0);
    a = array_node(ab, 0, INT64_C(1) << 62, 0, 0, 2, 0);
    memset(ab->bits, 0x55, sizeof(ab->bits));
    ab->buffers[0][1] = ab->bits;
  } else if (strcmp(name, "int64_huge") == 0) {
    /* int64 of length 2^46 over 32 bytes: 2^49 bytes by its declaration,
     * more than a process can address, though its bitmap would fit. */
    schema_node(sb, 0, "l", "x", 0);
    a = array_node(ab, 0, INT64_C(1) << 46, 0, 0, 2, 0);
    ab->buffers[0][1] = ab->values;
  } else if (strcmp(name, "large_utf8_huge") == 0) {
    /* large_utf8 ["ab", <2^60 bytes>] over 5 bytes of data */
    schema_node(sb, 0, "U", "s", 0);
    a = array_node(ab, 0, 2, 0, 0, 3, 0);
    ab->large_offsets[0] = 0;
    ab->large_offsets[1] = 2;
    ab->large_offsets[2] = INT64_C(1) << 60;
    ab->buffers[0][1] = ab->large_offsets;
    ab->buffers[0][2] = ab->data;
  } else if (strcmp(name, "sim_too_short") == 0) {
    /* int32 of length 100 on the sim device over 8 bytes: the sim backend
     * knows allocation sizes (what no consumer of CPU memory can check). */
    schema_node(sb, 0, "i", "x", 0);
    a = array_node(ab, 0, 100, 0, 0, 2, 0);
    if (ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &ab->device, NULL) != 0 ||
        ferry_device_allocate(ab->device, 8, &ab->device_memory, NULL) != 0) {
      ab->device_memory = NULL;
    }
    ab->buffers[0][1] = ab->device_memory;
    array->device_type = ARROW_DEVICE_EXT_DEV;
    array->device_id = 0;
  } else {
    root_schema_release(&(struct ArrowSchema){.private_data = sb});
    root_array_release(&(struct ArrowArray){.private_data = ab});
    return EINVAL;
  }
  *schema = sb->schemas[0];
  array->array = *a;
  /* The roots were copied out; their children keep pointing into the blocks. */
  return 0;
}

HOSTILE_EXPORT int lferry_hostile_array(const char* name, struct ArrowSchema* schema_out,
                                        struct ArrowDeviceArray* array_out) {
  return build(name, schema_out, array_out);
}

/* ---- streams: an int32 schema, `good` good batches, then the hostile one ------ */

struct hostile_stream {
  char batch[32];  /* the hostile case of the last batch ("" for none) */
  char schema[32]; /* the case whose schema get_schema returns */
  int good;        /* good batches before it */
  int calls;
};

static int stream_get_schema(void* user_data, struct ArrowSchema* out, struct FerryError* error) {
  struct hostile_stream* s = (struct hostile_stream*)user_data;
  struct ArrowDeviceArray scratch;
  int rc = build(s->schema, out, &scratch);
  if (rc == 0) scratch.array.release(&scratch.array);
  return rc;
}

/* get_next calls made on a stream after it had failed (a consumer must make none). */
static atomic_long calls_after_failure;

HOSTILE_EXPORT int64_t lferry_hostile_calls_after_failure(void) {
  return atomic_load(&calls_after_failure);
}

static int stream_get_next(void* user_data, struct ArrowDeviceArray* out, struct FerryError* error) {
  struct hostile_stream* s = (struct hostile_stream*)user_data;
  int call = s->calls++;
  if (strcmp(s->batch, "fail_then_good") == 0) {
    /* fails once after the good batches, then would go on yielding good
     * ones: a consumer that calls again after the error sees a batch. */
    if (call > s->good) atomic_fetch_add(&calls_after_failure, 1);
    if (call == s->good) {
      if (error) snprintf(error->message, sizeof(error->message), "injected failure at get_next %d", call + 1);
      return EIO;
    }
    struct ArrowSchema scratch;
    int rc = build(s->schema, &scratch, out);
    if (rc == 0) scratch.release(&scratch);
    return rc;
  }
  if (call > s->good || (call == s->good && !s->batch[0])) return 0; /* end: out stays released */
  struct ArrowSchema scratch;
  int rc = build(call < s->good ? s->schema : s->batch, &scratch, out);
  if (rc == 0) scratch.release(&scratch);
  return rc;
}

static void stream_release(void* user_data) {
  free(user_data);
  atomic_fetch_sub(&live_roots, 1);
}

/* A stream whose schema is case `schema` ("good_int32", or a hostile one),
 * yielding `good` batches of that case and then one of case `batch` (or
 * none when `batch` is ""). */
HOSTILE_EXPORT int lferry_hostile_stream(const char* schema, const char* batch, int good,
                                         struct ArrowDeviceArrayStream* out) {
  struct hostile_stream* s = (struct hostile_stream*)calloc(1, sizeof(*s));
  if (!s) return ENOMEM;
  atomic_fetch_add(&live_roots, 1);
  strncpy(s->schema, schema, sizeof(s->schema) - 1);
  strncpy(s->batch, batch, sizeof(s->batch) - 1);
  s->good = good;
  int rc = ferry_array_stream_init(out, ARROW_DEVICE_CPU, stream_get_schema, stream_get_next,
                                   stream_release, s, NULL);
  if (rc != 0) stream_release(s);
  return rc;
}

/* 1 when `fd` is readable within `timeout_ms` (negative: wait as long as it
 * takes), 0 when not, -1 on a poll error: the event loop of the async
 * consumer's tests. */
HOSTILE_EXPORT int lferry_hostile_fd_readable(int fd, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
  int rc;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return -1;
  return rc > 0 && (p.revents & POLLIN) ? 1 : 0;
}

#ifdef LFERRY_HOSTILE_LUA54
#include <lauxlib.h>
#include <lua.h>

/* array(name, schema_ptr, device_array_ptr) -> code */
static int l_array(lua_State* L) {
  const char* name = luaL_checkstring(L, 1);
  void* schema = lua_touserdata(L, 2);
  void* array = lua_touserdata(L, 3);
  luaL_argcheck(L, schema && array, 2, "struct pointers expected");
  lua_pushinteger(L, lferry_hostile_array(name, schema, array));
  return 1;
}

/* stream(schema_case, batch_case, good, stream_ptr) -> code */
static int l_stream(lua_State* L) {
  const char* schema = luaL_checkstring(L, 1);
  const char* batch = luaL_checkstring(L, 2);
  int good = (int)luaL_checkinteger(L, 3);
  void* out = lua_touserdata(L, 4);
  luaL_argcheck(L, out != NULL, 4, "stream pointer expected");
  lua_pushinteger(L, lferry_hostile_stream(schema, batch, good, out));
  return 1;
}

static int l_calls_after_failure(lua_State* L) {
  lua_pushinteger(L, lferry_hostile_calls_after_failure());
  return 1;
}

static int l_fd_readable(lua_State* L) {
  lua_pushinteger(L, lferry_hostile_fd_readable((int)luaL_checkinteger(L, 1),
                                                (int)luaL_checkinteger(L, 2)));
  return 1;
}

static int l_live(lua_State* L) {
  lua_pushinteger(L, lferry_hostile_live());
  return 1;
}

static int l_double_releases(lua_State* L) {
  lua_pushinteger(L, lferry_hostile_double_releases());
  return 1;
}

HOSTILE_EXPORT int luaopen_lferry_hostile54(lua_State* L) {
  static const luaL_Reg functions[] = {{"array", l_array},
                                       {"stream", l_stream},
                                       {"live", l_live},
                                       {"calls_after_failure", l_calls_after_failure},
                                       {"fd_readable", l_fd_readable},
                                       {"double_releases", l_double_releases},
                                       {NULL, NULL}};
  luaL_newlib(L, functions);
  return 1;
}
#endif
