/* async_bench: the per-batch cost of an async device stream against the
 * synchronous device stream carrying the same batches, C producer to C
 * consumer in one process (issue 22).
 *
 *   sync   ferry_array_stream_init's get_next, pulled by the consumer
 *   async, one thread  the same stream pushed by ferry_async_export_stream_run
 *          into a consumer that works inside its on_next_task (the protocol's
 *          own cost: tasks, request, extract, no thread handoff)
 *   async  the same stream pushed by ferry_async_export_stream (a producer
 *          thread) into a FerryAsyncConsumer read with ferry_async_consumer_next
 *          (a thread handoff per batch), windows 1, 4 and 64
 *
 * Both sides do the same work per batch: the producer fills an int32 array
 * of 1,024 values over a buffer it keeps (zero-copy, no allocation of data),
 * the consumer validates it at DEFAULT against the stream's schema (the
 * sync consumer with a prepared schema, as the async consumer does inside
 * next) and releases it. Rounds alternate sync and async; the figure is
 * the median of the per-round ratios.
 *
 * Then the overlap the async interface is for: producer and consumer each
 * spend `work` ns of CPU per batch; pulled synchronously the two costs add,
 * pushed with a window of 4 they overlap (the figure is throughput, batches
 * per second, window 4 against window 1 and against sync).
 *
 *   async_bench [--batches N] [--rounds R]
 *   async_bench --check      a short run of every path: every batch arrives,
 *                            every export is released (ctest runs this) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"
#include "struct_fill.h"

#define VALUES 1024

static int32_t g_values[VALUES];

struct Producer {
  int64_t batches;  /* how many to yield */
  int64_t produced; /* how many yielded so far */
  int64_t work_ns;  /* CPU spent per batch, to model real production */
};

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Spends about `ns` nanoseconds of CPU (the work a producer or consumer
 * does with a batch), without sleeping. */
static void spin(int64_t ns) {
  if (ns <= 0) return;
  double until = now_ns() + (double)ns;
  while (now_ns() < until) {
  }
}

static int get_schema(void* user_data, struct ArrowSchema* out, struct FerryError* error) {
  (void)user_data;
  return ferry_schema_init(out, "i", "values", ARROW_FLAG_NULLABLE, 0, error);
}

static int get_next(void* user_data, struct ArrowDeviceArray* out, struct FerryError* error) {
  struct Producer* p = (struct Producer*)user_data;
  if (p->produced == p->batches) return 0; /* end: out stays released */
  spin(p->work_ns);
  const void* buffers[2] = {NULL, g_values};
  struct ArrowArray array = {0};
  int rc = ferry_array_init(&array, VALUES, 0, 0, 2, buffers, 0, NULL, NULL, error);
  if (rc == FERRY_OK) {
    rc = ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, error);
    if (rc != FERRY_OK) ferry_array_release(&array);
  }
  if (rc == FERRY_OK) p->produced++;
  return rc;
}

static void free_producer(void* user_data) { free(user_data); }

static int make_stream(int64_t batches, int64_t work_ns, struct ArrowDeviceArrayStream* out) {
  struct Producer* p = (struct Producer*)calloc(1, sizeof *p);
  if (p == NULL) return ENOMEM;
  p->batches = batches;
  p->work_ns = work_ns;
  struct FerryError error;
  int rc = ferry_array_stream_init(out, ARROW_DEVICE_CPU, get_schema, get_next, free_producer,
                                   p, &error);
  if (rc != FERRY_OK) {
    fprintf(stderr, "async_bench: stream: %s\n", error.message);
    free(p);
  }
  return rc;
}

/* Pulls every batch synchronously, validating each (prepared, DEFAULT).
 * Returns the batches read, or -1. */
static int64_t run_sync(int64_t batches, int64_t work_ns) {
  struct ArrowDeviceArrayStream stream = {0};
  if (make_stream(batches, work_ns, &stream) != FERRY_OK) return -1;
  struct FerryError error;
  struct ArrowSchema schema = {0};
  struct FerryPreparedSchema* prepared = NULL;
  int64_t read = -1;
  if (ferry_array_stream_get_schema(&stream, &schema, &error) != FERRY_OK ||
      ferry_prepared_schema_create(&schema, NULL, NULL, &prepared, &error) != FERRY_OK) {
    fprintf(stderr, "async_bench: sync schema: %s\n", error.message);
    goto done;
  }
  read = 0;
  for (;;) {
    struct ArrowDeviceArray batch = {0};
    if (ferry_array_stream_get_next(&stream, &batch, &error) != FERRY_OK) {
      fprintf(stderr, "async_bench: sync get_next: %s\n", error.message);
      read = -1;
      break;
    }
    if (ferry_device_array_is_released(&batch)) break;
    if (ferry_validate_prepared(prepared, &batch, FERRY_VALIDATE_DEFAULT, NULL, NULL, &error) !=
        FERRY_OK) {
      fprintf(stderr, "async_bench: sync validate: %s\n", error.message);
      read = -1;
    }
    spin(work_ns);
    ferry_device_array_release(&batch);
    if (read < 0) break;
    read++;
  }
done:
  ferry_prepared_schema_free(prepared);
  if (!ferry_schema_is_released(&schema)) ferry_schema_release(&schema);
  ferry_array_stream_release(&stream);
  return read;
}

/* Pushes every batch through the async interface (window `window`); the
 * consumer validates at DEFAULT inside next. Returns the batches read, or
 * -1. */
static int64_t run_async(int64_t batches, int64_t window, int64_t work_ns) {
  struct ArrowDeviceArrayStream stream = {0};
  if (make_stream(batches, work_ns, &stream) != FERRY_OK) return -1;
  struct ArrowAsyncDeviceStreamHandler handler;
  memset(&handler, 0, sizeof handler);
  struct FerryAsyncConsumer* consumer = NULL;
  struct FerryError error;
  if (ferry_async_consumer_create(window, FERRY_VALIDATE_DEFAULT, &handler, &consumer,
                                  &error) != FERRY_OK) {
    fprintf(stderr, "async_bench: consumer: %s\n", error.message);
    ferry_array_stream_release(&stream);
    return -1;
  }
  if (ferry_async_export_stream(&stream, &handler, FERRY_ASYNC_EXPORT_DEFAULT, &error) !=
      FERRY_OK) {
    fprintf(stderr, "async_bench: export: %s\n", error.message);
    ferry_async_consumer_free(consumer);
    return -1;
  }
  int64_t read = 0;
  for (;;) {
    struct ArrowDeviceArray batch = {0};
    if (ferry_async_consumer_next(consumer, &batch, -1, &error) != FERRY_OK) {
      fprintf(stderr, "async_bench: next: %s\n", error.message);
      read = -1;
      break;
    }
    if (ferry_device_array_is_released(&batch)) break;
    spin(work_ns);
    ferry_device_array_release(&batch);
    read++;
  }
  /* The producer's release comes last; wait for it so that nothing of this
   * run is still live when the next one starts. */
  if (ferry_async_consumer_wait_released(consumer, 10000) != FERRY_OK) {
    fprintf(stderr, "async_bench: the producer never released the handler\n");
    read = -1;
  }
  ferry_async_consumer_free(consumer);
  return read;
}

/* A consumer that does its work inside the callbacks, on the producer's
 * thread (ferry_async_export_stream_run on the calling thread): the
 * protocol's own cost, with no thread handoff. */
struct InlineConsumer {
  struct FerryPreparedSchema* prepared;
  int64_t read;
  int failed;
};

static int inline_on_schema(struct ArrowAsyncDeviceStreamHandler* self,
                            struct ArrowSchema* schema) {
  struct InlineConsumer* c = (struct InlineConsumer*)self->private_data;
  int rc = ferry_prepared_schema_create(schema, NULL, NULL, &c->prepared, NULL);
  ferry_schema_release(schema);
  if (rc == FERRY_OK) ferry_async_producer_request(self->producer, 4);
  return rc;
}

static int inline_on_next_task(struct ArrowAsyncDeviceStreamHandler* self,
                               struct ArrowAsyncTask* task, const char* metadata) {
  (void)metadata;
  struct InlineConsumer* c = (struct InlineConsumer*)self->private_data;
  if (task == NULL) return 0; /* the end */
  struct ArrowDeviceArray batch = {0};
  int rc = ferry_async_task_extract_data(task, &batch);
  if (rc == FERRY_OK) {
    rc = ferry_validate_prepared(c->prepared, &batch, FERRY_VALIDATE_DEFAULT, NULL, NULL, NULL);
    ferry_device_array_release(&batch);
  }
  if (rc != FERRY_OK) {
    c->failed = 1;
    return rc;
  }
  c->read++;
  ferry_async_producer_request(self->producer, 1);
  return 0;
}

static void inline_on_error(struct ArrowAsyncDeviceStreamHandler* self, int code,
                            const char* message, const char* metadata) {
  (void)code, (void)metadata;
  struct InlineConsumer* c = (struct InlineConsumer*)self->private_data;
  fprintf(stderr, "async_bench: producer error: %s\n", message ? message : "(null)");
  c->failed = 1;
}

static void inline_release(struct ArrowAsyncDeviceStreamHandler* self) {
  self->release = NULL;
}

static int64_t run_inline(int64_t batches) {
  struct ArrowDeviceArrayStream stream = {0};
  if (make_stream(batches, 0, &stream) != FERRY_OK) return -1;
  struct InlineConsumer c = {NULL, 0, 0};
  struct ArrowAsyncDeviceStreamHandler handler;
  it_fill_handler(&handler, inline_on_schema, inline_on_next_task, inline_on_error,
                  inline_release, &c);
  struct FerryError error;
  int rc = ferry_async_export_stream_run(&stream, &handler, &error);
  ferry_prepared_schema_free(c.prepared);
  if (rc != FERRY_OK || c.failed || handler.release != NULL) {
    fprintf(stderr, "async_bench: inline run: %s\n", rc != FERRY_OK ? error.message : "failed");
    return -1;
  }
  return c.read;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Every path once on a few batches: all arrive, nothing stays live. */
static int check(void) {
  int failed = 0;
  int64_t live = ferry_live_exports();
  struct {
    const char* name;
    int64_t got;
  } runs[] = {{"sync", run_sync(25, 0)},
              {"async window 1", run_async(25, 1, 0)},
              {"async window 4", run_async(25, 4, 0)},
              {"async window 4, busy sides", run_async(10, 4, 1000)},
              {"async, consumer inside the callbacks", run_inline(25)}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    int64_t expected = i == 3 ? 10 : 25;
    if (runs[i].got != expected) {
      printf("FAILED: %s: %lld batches, expected %lld\n", runs[i].name,
             (long long)runs[i].got, (long long)expected);
      failed++;
    } else {
      printf("ok: %s: %lld batches\n", runs[i].name, (long long)expected);
    }
  }
  if (ferry_live_exports() != live) {
    printf("FAILED: %lld exports still live after the runs\n",
           (long long)(ferry_live_exports() - live));
    failed++;
  } else {
    printf("ok: every export released\n");
  }
  printf("%d passed, %d failed\n", 6 - failed, failed);
  return failed ? 1 : 0;
}

int main(int argc, char** argv) {
  int64_t batches = 20000;
  int rounds = 11;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--check") == 0) return check();
    if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc) {
      batches = atoll(argv[++i]);
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: async_bench [--check] [--batches N] [--rounds R]\n");
      return 2;
    }
  }
  if (rounds < 1 || rounds > 101 || batches < 1) return 2;
  for (int i = 0; i < VALUES; i++) g_values[i] = i;

  /* 1. Per-batch cost, no work on either side. */
  static const int64_t kWindows[] = {1, 4, 64};
  double sync_ns[101], async_ns[3][101], ratio[3][101], inline_ns[101], inline_ratio[101];
  for (int r = 0; r < rounds; r++) {
    double t = now_ns();
    if (run_sync(batches, 0) != batches) return 1;
    sync_ns[r] = (now_ns() - t) / (double)batches;
    t = now_ns();
    if (run_inline(batches) != batches) return 1;
    inline_ns[r] = (now_ns() - t) / (double)batches;
    inline_ratio[r] = inline_ns[r] / sync_ns[r];
    for (int w = 0; w < 3; w++) {
      t = now_ns();
      if (run_async(batches, kWindows[w], 0) != batches) return 1;
      async_ns[w][r] = (now_ns() - t) / (double)batches;
      ratio[w][r] = async_ns[w][r] / sync_ns[r];
    }
  }
  printf("async device stream vs sync device stream, C -> C, int32 x %d per batch, %lld "
         "batches, %d rounds (median of per-round ratios)\n",
         VALUES, (long long)batches, rounds);
  printf("  both sides: zero-copy export, DEFAULT validation (prepared), release\n");
  double sync_median = median(sync_ns, rounds);
  printf("  %-22s %8.0f ns/batch\n", "sync", sync_median);
  double inline_x = median(inline_ratio, rounds);
  printf("  %-22s %8.0f ns/batch  %.2fx sync  (target <= 1.5x: %s)\n", "async, one thread",
         median(inline_ns, rounds), inline_x, inline_x <= 1.5 ? "met" : "NOT met");
  printf("  (one thread: the consumer works inside on_next_task and requests from there;\n"
         "   below, a producer thread feeding a blocking reader: one thread handoff per batch)\n");
  for (int w = 0; w < 3; w++) {
    double ns = median(async_ns[w], rounds);
    double x = median(ratio[w], rounds);
    printf("  async, window %-8lld %8.0f ns/batch  %.2fx sync\n", (long long)kWindows[w], ns, x);
  }

  /* 2. Overlap: each side spends 20 us per batch. */
  int64_t work = 20000, few = 2000;
  double t = now_ns();
  if (run_sync(few, work) != few) return 1;
  double sync_rate = (double)few / ((now_ns() - t) / 1e9);
  t = now_ns();
  if (run_async(few, 1, work) != few) return 1;
  double w1_rate = (double)few / ((now_ns() - t) / 1e9);
  t = now_ns();
  if (run_async(few, 4, work) != few) return 1;
  double w4_rate = (double)few / ((now_ns() - t) / 1e9);
  printf("producer and consumer each busy %lld us per batch (%lld batches):\n",
         (long long)(work / 1000), (long long)few);
  printf("  sync %.0f batches/s, async window 1 %.0f/s, async window 4 %.0f/s "
         "(%.2fx sync: the two sides overlap)\n",
         sync_rate, w1_rate, w4_rate, w4_rate / sync_rate);
  return 0;
}
