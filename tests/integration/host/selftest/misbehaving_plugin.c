/* A test plugin that misbehaves on purpose, so that the host's self-test
 * can show that every assertion of ferry_it_host fails when it should.
 *
 * It forwards the nine entry points to the real C plugin (the path in
 * FERRY_IT_WRAPPED_PLUGIN) and breaks one rule chosen by FERRY_IT_MISBEHAVE:
 *   double_release   the checker calls the array's release a second time
 *   keep_array       the checker returns 0 without releasing the array
 *   skip_wait        the checker drops the sync event before checking
 *   swap_buffers     the checker releases the array with another buffers list
 *   ignore_data      the checker never reads the buffers (always "fine")
 *   leak_export      every export leaves one allocation counted as live
 *   wrong_message    fail=export reports another message
 *   stop_early       the stream checker releases the stream after one batch
 *   swallow_failure  the stream checker hides the injected get_next failure
 *                    by releasing the stream and claiming success at once
 *   async_hang       ferry_it_export_async returns 0 and never calls the
 *                    handler (the host must report a hung pair, bounded)
 *   async_double_release  the async producer releases the handler twice
 *   async_leak       every async export leaves one allocation counted as live
 *   async_lenient    the async checking consumer's verdict is always 0 (the
 *                    conformance suite's async-strict area must catch it)
 * and behaves in a way the specification allows, which the host must accept:
 *   move_and_hold    its streams give every batch the same private_data (the
 *                    stream's own), and its stream checker reads one batch
 *                    ahead: each batch is moved into a heap box and held there
 *                    while the previous one is checked and released elsewhere
 *                    (a reproducer for the release watch: two live batches
 *                    with one private_data, released at a reused address) */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry/ferry_it.h"
#include "struct_fill.h"

static void* g_wrapped;
static _Atomic int64_t g_extra_live;
static _Thread_local char g_message[512];

static const char* mode(void) {
  const char* m = getenv("FERRY_IT_MISBEHAVE");
  return m == NULL ? "" : m;
}

static int is(const char* name) { return strcmp(mode(), name) == 0; }

static void* wrapped(const char* symbol) {
  if (g_wrapped == NULL) {
    const char* path = getenv("FERRY_IT_WRAPPED_PLUGIN");
    g_wrapped = path == NULL ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (g_wrapped == NULL) {
      fprintf(stderr, "misbehaving_plugin: cannot load FERRY_IT_WRAPPED_PLUGIN\n");
      abort();
    }
  }
  return dlsym(g_wrapped, symbol);
}

FERRY_IT_EXPORT const char* ferry_it_last_error(void) {
  if (g_message[0] != '\0') return g_message;
  return ((ferry_it_last_error_fn)wrapped("ferry_it_last_error"))();
}

FERRY_IT_EXPORT int64_t ferry_it_live_allocations(void) {
  return ((ferry_it_live_allocations_fn)wrapped("ferry_it_live_allocations"))() +
         atomic_load(&g_extra_live);
}

static int exported(int rc, const char* case_spec) {
  g_message[0] = '\0';
  if (rc == 0 && is("leak_export")) atomic_fetch_add(&g_extra_live, 1);
  if (rc != 0 && is("wrong_message") && strstr(case_spec, "fail=export") != NULL) {
    snprintf(g_message, sizeof g_message, "something else went wrong");
  }
  return rc;
}

FERRY_IT_EXPORT int ferry_it_export_array(const char* case_spec, struct ArrowSchema* schema,
                                          struct ArrowDeviceArray* array) {
  int rc = ((ferry_it_export_array_fn)wrapped("ferry_it_export_array"))(case_spec, schema,
                                                                        array);
  return exported(rc, case_spec);
}

/* ---- move_and_hold, producer side: one private_data for every batch ---------- */

/* A batch handed out: the wrapped producer's array, released when the
 * consumer releases the batch built from it (found by its buffers list,
 * which is the batch's and moves with it). */
struct held_batch {
  struct ArrowArray inner;
  struct held_batch* next;
};

/* The private_data of the stream and of every batch it hands out; freed
 * when the stream and every batch are released. */
struct shared_stream {
  struct ArrowDeviceArrayStream inner;
  pthread_mutex_t lock;
  int64_t refs;
  struct held_batch* live;
};

static void shared_unref(struct shared_stream* s) {
  pthread_mutex_lock(&s->lock);
  int64_t refs = --s->refs;
  pthread_mutex_unlock(&s->lock);
  if (refs > 0) return;
  pthread_mutex_destroy(&s->lock);
  free(s);
  atomic_fetch_sub(&g_extra_live, 1);
}

static void shared_batch_release(struct ArrowArray* array) {
  struct shared_stream* s = (struct shared_stream*)array->private_data;
  struct held_batch* found = NULL;
  pthread_mutex_lock(&s->lock);
  for (struct held_batch** link = &s->live; *link != NULL; link = &(*link)->next) {
    if ((*link)->inner.buffers == array->buffers) {
      found = *link;
      *link = found->next;
      break;
    }
  }
  pthread_mutex_unlock(&s->lock);
  array->release = NULL;
  if (found == NULL) return; /* not a batch of this stream: the host reports the leak */
  found->inner.release(&found->inner);
  free(found);
  shared_unref(s);
}

static int shared_get_schema(struct ArrowDeviceArrayStream* self, struct ArrowSchema* out) {
  struct shared_stream* s = (struct shared_stream*)self->private_data;
  return s->inner.get_schema(&s->inner, out);
}

static const char* shared_get_last_error(struct ArrowDeviceArrayStream* self) {
  struct shared_stream* s = (struct shared_stream*)self->private_data;
  return s->inner.get_last_error(&s->inner);
}

static int shared_get_next(struct ArrowDeviceArrayStream* self, struct ArrowDeviceArray* out) {
  struct shared_stream* s = (struct shared_stream*)self->private_data;
  int rc = s->inner.get_next(&s->inner, out);
  if (rc != 0 || out->array.release == NULL) return rc;
  struct held_batch* held = (struct held_batch*)malloc(sizeof *held);
  if (held == NULL) {
    ferry_device_array_release(out);
    return ENOMEM;
  }
  held->inner = out->array;
  pthread_mutex_lock(&s->lock);
  held->next = s->live;
  s->live = held;
  s->refs++;
  pthread_mutex_unlock(&s->lock);
  out->array.private_data = s;
  out->array.release = shared_batch_release;
  return 0;
}

static void shared_stream_release(struct ArrowDeviceArrayStream* self) {
  struct shared_stream* s = (struct shared_stream*)self->private_data;
  s->inner.release(&s->inner);
  self->release = NULL;
  shared_unref(s);
}

/* Puts the wrapped producer's live stream `out` behind a shared_stream. */
static int share_private_data(struct ArrowDeviceArrayStream* out) {
  struct shared_stream* s = (struct shared_stream*)calloc(1, sizeof *s);
  if (s == NULL) {
    ferry_array_stream_release(out);
    return ENOMEM;
  }
  atomic_fetch_add(&g_extra_live, 1); /* counted like the plugin's own allocations */
  pthread_mutex_init(&s->lock, NULL);
  s->refs = 1;
  s->inner = *out;
  it_fill_stream(out, out->device_type, shared_get_schema, shared_get_next,
                 shared_get_last_error, shared_stream_release, s);
  return 0;
}

FERRY_IT_EXPORT int ferry_it_export_stream(const char* case_spec,
                                           struct ArrowDeviceArrayStream* out) {
  int rc = ((ferry_it_export_stream_fn)wrapped("ferry_it_export_stream"))(case_spec, out);
  if (rc == 0 && is("move_and_hold")) rc = share_private_data(out);
  return exported(rc, case_spec);
}

FERRY_IT_EXPORT int ferry_it_check_array(const char* case_spec, struct ArrowSchema* schema,
                                         struct ArrowDeviceArray* array) {
  g_message[0] = '\0';
  ferry_it_check_array_fn check = (ferry_it_check_array_fn)wrapped("ferry_it_check_array");
  if (is("keep_array")) {
    ferry_schema_release(schema);
    return 0;
  }
  if (is("ignore_data")) {
    ferry_schema_release(schema);
    ferry_device_array_release(array);
    return 0;
  }
  if (is("skip_wait")) array->sync_event = NULL;
  if (is("double_release")) {
    void (*release)(struct ArrowArray*) = array->array.release;
    struct ArrowDeviceArray moved = *array;
    array->array.release = NULL;
    int rc = check(case_spec, schema, &moved);
    /* `moved` is released now; calling the saved callback again is the bug. */
    if (rc == 0) release(&moved.array);
    return rc;
  }
  if (is("swap_buffers")) {
    /* A consumer that hands back another buffers list than it received. */
    int64_t n = array->array.n_buffers;
    const void** own = (const void**)calloc((size_t)n + 1, sizeof *own);
    if (own == NULL) return ENOMEM;
    if (n > 0) memcpy(own, array->array.buffers, (size_t)n * sizeof *own);
    own[n > 1 ? 1 : 0] = g_message;
    array->array.buffers = own;
    ferry_schema_release(schema);
    ferry_device_array_release(array);
    free(own);
    return 0;
  }
  return check(case_spec, schema, array);
}

/* ---- move_and_hold, consumer side: one batch read ahead, held in a box --------- */

/* The stream the wrapped checker reads: each get_next hands out the batch
 * fetched on the previous call (moved out of its heap box) after fetching
 * the next one into a new box, so two batches are live at once and each is
 * released where the checker keeps it, not where get_next wrote it. */
struct lookahead {
  struct ArrowDeviceArrayStream* source;
  struct ArrowDeviceArray* box; /* the batch read ahead, or NULL */
  int rc;                       /* the result of the call that read ahead */
  int started;
};

static void read_ahead(struct lookahead* l) {
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof batch);
  l->box = NULL;
  l->rc = l->source->get_next(l->source, &batch);
  if (l->rc != 0 || batch.array.release == NULL) return;
  l->box = (struct ArrowDeviceArray*)calloc(1, sizeof *l->box);
  if (l->box == NULL) {
    ferry_device_array_release(&batch);
    l->rc = ENOMEM;
    return;
  }
  ferry_device_array_move(&batch, l->box);
}

static int lookahead_get_next(struct ArrowDeviceArrayStream* self, struct ArrowDeviceArray* out) {
  struct lookahead* l = (struct lookahead*)self->private_data;
  if (!l->started) {
    l->started = 1;
    read_ahead(l);
  }
  struct ArrowDeviceArray* current = l->box;
  if (current == NULL) return l->rc; /* the end (out stays released) or the failure */
  read_ahead(l); /* the next batch, while `current` is still held */
  ferry_device_array_move(current, out);
  free(current);
  return 0;
}

static int lookahead_get_schema(struct ArrowDeviceArrayStream* self, struct ArrowSchema* out) {
  struct lookahead* l = (struct lookahead*)self->private_data;
  return l->source->get_schema(l->source, out);
}

static const char* lookahead_get_last_error(struct ArrowDeviceArrayStream* self) {
  struct lookahead* l = (struct lookahead*)self->private_data;
  return l->source->get_last_error(l->source);
}

static void lookahead_release(struct ArrowDeviceArrayStream* self) {
  struct lookahead* l = (struct lookahead*)self->private_data;
  if (l->box != NULL) {
    ferry_device_array_release(l->box);
    free(l->box);
  }
  ferry_array_stream_release(l->source);
  self->release = NULL;
}

static int check_reading_ahead(ferry_it_check_stream_fn check, const char* case_spec,
                               struct ArrowDeviceArrayStream* stream) {
  struct lookahead l = {stream, NULL, 0, 0};
  struct ArrowDeviceArrayStream proxy;
  it_fill_stream(&proxy, stream->device_type, lookahead_get_schema, lookahead_get_next,
                 lookahead_get_last_error, lookahead_release, &l);
  int rc = check(case_spec, &proxy);
  if (proxy.release != NULL) proxy.release(&proxy);
  return rc;
}

FERRY_IT_EXPORT int ferry_it_check_stream(const char* case_spec,
                                          struct ArrowDeviceArrayStream* stream) {
  g_message[0] = '\0';
  ferry_it_check_stream_fn check = (ferry_it_check_stream_fn)wrapped("ferry_it_check_stream");
  if (is("move_and_hold")) return check_reading_ahead(check, case_spec, stream);
  if (is("stop_early") || is("swallow_failure")) {
    struct ArrowSchema schema;
    struct ArrowDeviceArray batch;
    memset(&schema, 0, sizeof schema);
    memset(&batch, 0, sizeof batch);
    if (stream->get_schema(stream, &schema) == 0) ferry_schema_release(&schema);
    if (is("stop_early") && stream->get_next(stream, &batch) == 0) {
      ferry_device_array_release(&batch);
    }
    stream->release(stream);
    return 0;
  }
  return check(case_spec, stream);
}

/* ---- async: forwarded, or broken as FERRY_IT_MISBEHAVE says ---------------------- */

/* async_double_release: sits between the wrapped producer and the host's
 * handler and releases the host's handler twice. */
struct twice {
  struct ArrowAsyncDeviceStreamHandler outer;
  struct ArrowAsyncDeviceStreamHandler* inner;
};

static struct ArrowAsyncDeviceStreamHandler* twice_inner(
    struct ArrowAsyncDeviceStreamHandler* self) {
  struct twice* t = (struct twice*)self->private_data;
  t->inner->producer = self->producer;
  return t->inner;
}

static int twice_on_schema(struct ArrowAsyncDeviceStreamHandler* self,
                           struct ArrowSchema* schema) {
  struct ArrowAsyncDeviceStreamHandler* inner = twice_inner(self);
  return inner->on_schema(inner, schema);
}

static int twice_on_next_task(struct ArrowAsyncDeviceStreamHandler* self,
                              struct ArrowAsyncTask* task, const char* metadata) {
  struct ArrowAsyncDeviceStreamHandler* inner = twice_inner(self);
  return inner->on_next_task(inner, task, metadata);
}

static void twice_on_error(struct ArrowAsyncDeviceStreamHandler* self, int code,
                           const char* message, const char* metadata) {
  struct ArrowAsyncDeviceStreamHandler* inner = twice_inner(self);
  inner->on_error(inner, code, message, metadata);
}

static void twice_release(struct ArrowAsyncDeviceStreamHandler* self) {
  struct twice* t = (struct twice*)self->private_data;
  struct ArrowAsyncDeviceStreamHandler* inner = twice_inner(self);
  inner->release(inner);
  inner->release(inner); /* the misbehaviour */
  free(t);
}

FERRY_IT_EXPORT int ferry_it_export_async(const char* case_spec,
                                          struct ArrowAsyncDeviceStreamHandler* handler) {
  g_message[0] = '\0';
  ferry_it_export_async_fn export_async =
      (ferry_it_export_async_fn)wrapped("ferry_it_export_async");
  if (is("async_hang")) return 0; /* production "started": nothing ever comes */
  if (is("async_double_release")) {
    struct twice* t = calloc(1, sizeof *t);
    if (t == NULL) abort();
    t->inner = handler;
    it_fill_handler(&t->outer, twice_on_schema, twice_on_next_task, twice_on_error,
                    twice_release, t);
    return export_async(case_spec, &t->outer);
  }
  int rc = export_async(case_spec, handler);
  if (is("async_leak") && rc == 0) atomic_fetch_add(&g_extra_live, 1);
  return rc;
}

FERRY_IT_EXPORT int ferry_it_check_async(
    const char* case_spec, struct ArrowAsyncDeviceStreamHandler* handler_out,
    void** ticket_out) {
  g_message[0] = '\0';
  return ((ferry_it_check_async_fn)wrapped("ferry_it_check_async"))(
      case_spec, handler_out, ticket_out);
}

FERRY_IT_EXPORT int ferry_it_async_result(void* ticket, int64_t timeout_ms) {
  g_message[0] = '\0';
  int rc =
      ((ferry_it_async_result_fn)wrapped("ferry_it_async_result"))(ticket, timeout_ms);
  return is("async_lenient") && rc != ETIMEDOUT ? 0 : rc;
}
