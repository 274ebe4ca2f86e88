/* ferry_it_demo: the polyglot pipeline of the README's first command.
 *
 * One process hosts every runtime whose test plugin is built (C always).
 * Part 1: one producer runtime (Go when present) produces a stream of record
 * batches (struct {a: int32, b: utf8}) on the best available device (CUDA or
 * ROCm when `ferry devices` finds one, else ferry's simulated device in strict
 * mode); each batch is handed to the next consumer runtime (Rust, Java,
 * Python, then Lua last), which verifies every row in place and releases it. Part 2: a
 * ring of stream handoffs, each runtime consuming the next one's stream.
 * Part 3: async device streams (push, back-pressure), e.g. Go goroutines
 * pushing to Python, Java to Rust.
 * Every hop prints the buffer addresses at export and those the consumer
 * handed back at release (equal: nothing was copied), that release ran
 * exactly once, and the time the hop took. Exits non-zero when a hop fails.
 *
 *   ferry_it_demo [--rows N] [--plugin-dir DIR] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ferry/ferry.h"
#include "plugin.h"
#include "release_watch.h"
#include "stream_watch.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double ms(int64_t ns) { return (double)ns / 1e6; }

/* The best device: cuda or rocm when their backend probes fine, else sim. */
static const char* best_device(char* why, size_t size) {
  why[0] = '\0';
  size_t used = 0;
  for (int64_t i = 0; i < ferry_backend_count(); i++) {
    const char* name = ferry_backend_name(i);
    if (strcmp(name, "cuda") != 0 && strcmp(name, "rocm") != 0) continue;
    struct FerryError error;
    ferry_error_init(&error);
    if (ferry_backend_probe(i, &error) == 0) return name;
    int w = snprintf(why + used, size - used, "%s%s: %s", used ? "; " : "", name,
                     error.message);
    if (w > 0 && (size_t)w < size - used) used += (size_t)w;
  }
  return "sim";
}

static struct it_runtime_set g_set;

static struct it_plugin* find(const char* name) {
  for (int i = 0; i < g_set.n; i++) {
    if (strcmp(g_set.loaded[i]->name, name) == 0) return g_set.loaded[i];
  }
  return NULL;
}

/* The loaded runtimes in the order of `preference`, then any others. */
static int ordered(const char* const* preference, int n_preference,
                   struct it_plugin* out[IT_MAX_RUNTIMES]) {
  int n = 0;
  for (int i = 0; i < n_preference; i++) {
    struct it_plugin* p = find(preference[i]);
    if (p != NULL) out[n++] = p;
  }
  for (int i = 0; i < g_set.n; i++) {
    int listed = 0;
    for (int k = 0; k < n; k++) listed |= out[k] == g_set.loaded[i];
    if (!listed) out[n++] = g_set.loaded[i];
  }
  return n;
}

static void load_runtimes(const char* plugin_dir) {
  struct it_load_options options;
  memset(&options, 0, sizeof options);
  options.plugin_dir = plugin_dir;
  it_runtime_set_load(&g_set, &options);
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    if (g_set.state[i] == IT_SKIPPED_MISSING || g_set.state[i] == IT_LOAD_FAILED) {
      printf("  DEGRADED: runtime %s is not in the demo: %s\n", g_set.plugins[i].name,
             g_set.plugins[i].problem);
    }
  }
}

/* Prints the two address lists and whether they are the same. */
static int print_addresses(int group, const char* prefix, int verified) {
  char exported[1024], released[1024];
  it_watch_describe_buffers(group, prefix, 0, exported, sizeof exported);
  it_watch_describe_buffers(group, prefix, 1, released, sizeof released);
  char why[768];
  int64_t findings = it_watch_verify_text(group, why, sizeof why);
  int same = strcmp(exported, released) == 0;
  printf("         exported buffers  %s\n", exported);
  printf("         released buffers  %s\n", released);
  if (findings == 0 && same && verified) {
    printf("         same addresses: nothing was copied; every release ran exactly once\n");
    return 1;
  }
  printf("         PROBLEM: %s\n", findings ? why : "the addresses differ");
  return 0;
}

static int part_pipeline(const char* device, int64_t rows) {
  static const char* const producer_preference[] = {"go", "rust", "java", "python", "lua", "c"};
  static const char* const consumer_preference[] = {"rust", "java", "python", "c", "lua", "go"};
  struct it_plugin* producers[IT_MAX_RUNTIMES];
  ordered(producer_preference, COUNT(producer_preference), producers);
  struct it_plugin* producer = producers[0];
  struct it_plugin* candidates[IT_MAX_RUNTIMES];
  int n_candidates = ordered(consumer_preference, COUNT(consumer_preference), candidates);
  struct it_plugin* consumers[IT_MAX_RUNTIMES];
  int n_consumers = 0;
  for (int i = 0; i < n_candidates; i++) {
    /* C consumes only when it is the sole other runtime; Lua reports last. */
    if (candidates[i] == producer) continue;
    consumers[n_consumers++] = candidates[i];
  }
  if (n_consumers > 1) {
    /* Keep C out when a real foreign consumer exists, with Lua at the end. */
    int kept = 0;
    for (int i = 0; i < n_consumers; i++) {
      if (strcmp(consumers[i]->name, "c") != 0 || n_consumers == 2) consumers[kept++] = consumers[i];
    }
    n_consumers = kept;
  }
  if (n_consumers == 0) consumers[n_consumers++] = producer; /* only C is built */
  char spec[256];
  snprintf(spec, sizeof spec, "struct_int32_utf8:length=%lld:batches=%d:device=%s",
           (long long)rows, n_consumers, device);
  printf("\n== part 1: %s produces %d record batch(es) {a: int32, b: utf8} x %lld rows on %s\n",
         producer->name, n_consumers, (long long)rows, device);
  printf("   case %s\n", spec);

  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  int64_t t0 = now_ns();
  int rc = producer->export_stream(spec, &stream);
  int64_t t1 = now_ns();
  if (rc != 0) {
    printf("FAIL %s could not export the stream: %s\n", producer->name,
           it_plugin_error(producer));
    return 0;
  }
  printf("   %s exported the stream in %.3f ms (device type %s)\n", producer->name,
         ms(t1 - t0), ferry_device_type_name(stream.device_type));
  int ok = 1;
  for (int b = 0; b < n_consumers && ok; b++) {
    struct it_plugin* consumer = consumers[b];
    struct ArrowSchema schema;
    struct ArrowDeviceArray batch;
    memset(&schema, 0, sizeof schema);
    memset(&batch, 0, sizeof batch);
    struct FerryError error;
    ferry_error_init(&error);
    int group = it_watch_new_group();
    t0 = now_ns();
    rc = ferry_array_stream_get_schema(&stream, &schema, &error);
    if (rc == 0) rc = ferry_array_stream_get_next(&stream, &batch, &error);
    t1 = now_ns();
    if (rc != 0 || batch.array.release == NULL) {
      printf("FAIL batch %d: %s\n", b, rc ? error.message : "the stream ended early");
      ferry_schema_release(&schema);
      ok = 0;
      break;
    }
    it_watch_schema(&schema, "schema");
    it_watch_array(&batch.array, "batch");
    int pending = batch.device_type == ARROW_DEVICE_EXT_DEV ? it_sim_pending(&batch) : -1;
    printf("\n   hop %d.1  %-4s -> host  batch %d: %lld rows on %s:%lld in %.3f ms "
           "(the producer computed them)%s\n",
           b + 1, producer->name, b, (long long)batch.array.length,
           ferry_device_type_name(batch.device_type), (long long)batch.device_id, ms(t1 - t0),
           pending == 1 ? "; still pending on the device: the consumer must wait on its event"
                        : "");
    char batch_spec[256];
    snprintf(batch_spec, sizeof batch_spec, "struct_int32_utf8:length=%lld:seed=%d:device=%s",
             (long long)rows, 1 + b, device);
    t0 = now_ns();
    rc = consumer->check_array(batch_spec, &schema, &batch);
    t1 = now_ns();
    if (rc != 0) {
      printf("FAIL %s rejected batch %d: %s\n", consumer->name, b, it_plugin_error(consumer));
      ok = 0;
    } else {
      printf("   hop %d.2  host -> %-4s  verified %lld rows x 2 columns in place against the "
             "formula in %.3f ms%s\n",
             b + 1, consumer->name, (long long)rows, ms(t1 - t0),
             b == n_consumers - 1 ? " (the last consumer reports: all batches correct)" : "");
    }
    if (!print_addresses(group, "batch", rc == 0)) ok = 0;
  }
  ferry_array_stream_release(&stream);
  return ok;
}

static int part_ring(const char* device) {
  static const char* const ring_order[] = {"go", "rust", "java", "python", "lua", "c"};
  struct it_plugin* ring[IT_MAX_RUNTIMES];
  int n = ordered(ring_order, COUNT(ring_order), ring);
  printf("\n== part 2: a ring of stream handoffs (3 batches x 10000 rows on %s each)\n", device);
  int ok = 1;
  for (int i = 0; i < n; i++) {
    struct it_plugin* p = ring[i];
    struct it_plugin* c = ring[(i + 1) % n];
    char spec[256];
    snprintf(spec, sizeof spec, "struct_int32_utf8:length=10000:batches=3:seed=%d:device=%s",
             40 + i, device);
    struct ArrowDeviceArrayStream stream;
    memset(&stream, 0, sizeof stream);
    int group = it_watch_new_group();
    int64_t t0 = now_ns();
    int rc = p->export_stream(spec, &stream);
    if (rc != 0) {
      printf("FAIL %s could not export: %s\n", p->name, it_plugin_error(p));
      ok = 0;
      continue;
    }
    it_watch_stream(&stream, "stream");
    it_stream_watch_begin(&stream, 0);
    rc = c->check_stream(spec, &stream);
    int64_t t1 = now_ns();
    const struct it_stream_observed* seen = it_stream_watch_observed();
    if (rc != 0) {
      printf("FAIL %s -> %s: %s\n", p->name, c->name, it_plugin_error(c));
      ok = 0;
      continue;
    }
    printf("   %-4s -> %-4s  %lld batches, every row verified, %.3f ms per batch "
           "(production + handoff + check)\n",
           p->name, c->name, (long long)seen->batches,
           ms(t1 - t0) / (double)(seen->batches ? seen->batches : 1));
    if (!print_addresses(group, "batch[0]", 1)) ok = 0;
  }
  return ok;
}

/* Part 3: async device streams. The producer pushes from its own threads
 * (a goroutine, a Java executor, a Rust or C thread, ferry's thread for a
 * Python or Lua stream) as the consumer requests batches, four at a time;
 * the consumer checks every row and the producer releases the handler last.
 * Each pair is bounded in time: a hung pair fails, it never blocks the demo. */
static int part_async(const char* device) {
  static const char* const pairs[][2] = {{"go", "python"}, {"java", "rust"}, {"rust", "lua"},
                                         {"python", "go"}, {"c", "java"}};
  printf("\n== part 3: async device streams (push with back-pressure: window 4, 6 batches x "
         "10000 rows on %s)\n", device);
  int ok = 1, ran = 0;
  for (int i = 0; i < COUNT(pairs); i++) {
    struct it_plugin* p = find(pairs[i][0]);
    struct it_plugin* c = find(pairs[i][1]);
    if (p == NULL || c == NULL) continue;
    const char* missing = NULL;
    if (!it_plugin_has_async(p, &missing) || !it_plugin_has_async(c, &missing)) {
      printf("   SKIPPED %s -> %s: a plugin lacks %s\n", p->name, c->name, missing);
      continue;
    }
    char spec[256];
    snprintf(spec, sizeof spec,
             "struct_int32_utf8:length=10000:batches=6:window=4:seed=%d:device=%s", 60 + i,
             device);
    struct ArrowAsyncDeviceStreamHandler handler;
    memset(&handler, 0, sizeof handler);
    void* ticket = NULL;
    int64_t live_before = ferry_live_exports();
    int64_t t0 = now_ns();
    int rc = c->check_async(spec, &handler, &ticket);
    if (rc != 0) {
      printf("FAIL %s could not make a consumer: %s\n", c->name, it_plugin_error(c));
      ok = 0;
      continue;
    }
    rc = p->export_async(spec, &handler);
    if (rc != 0) printf("   (%s's export returned %d: %s)\n", p->name, rc, it_plugin_error(p));
    int verdict = c->async_result(ticket, 20000);
    int64_t t1 = now_ns();
    ran++;
    if (verdict != 0) {
      printf("FAIL %s -> %s (async): %s\n", p->name, c->name,
             verdict == ETIMEDOUT ? "no release of the handler within 20 s" : it_plugin_error(c));
      ok = 0;
      continue;
    }
    printf("   %-6s -> %-6s  6 batches pushed and checked, %.3f ms per batch; the producer "
           "released the handler last, %lld exports still live\n",
           p->name, c->name, ms(t1 - t0) / 6.0, (long long)(ferry_live_exports() - live_before));
  }
  if (ran == 0) printf("   no pair of async runtimes is loaded\n");
  return ok;
}

int main(int argc, char** argv) {
  int64_t rows = 200000;
  char plugin_dir[2048];
  const char* build = getenv("FERRY_BUILD_DIR");
  snprintf(plugin_dir, sizeof plugin_dir, "%s/plugins", build ? build : "build");
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--rows") == 0) rows = atoll(argv[i + 1]);
    if (strcmp(argv[i], "--plugin-dir") == 0) {
      snprintf(plugin_dir, sizeof plugin_dir, "%s", argv[i + 1]);
    }
  }
  ferry_sim_set_strict(1);
  printf("ferry %s: zero-copy handoff of Arrow device arrays between runtimes, in one process\n",
         ferry_version());
  printf("   loading runtimes (JVM before Go, SA_ONSTACK fix-up between them):\n");
  load_runtimes(plugin_dir);
  printf("   runtimes in this process:");
  for (int i = 0; i < g_set.n; i++) printf(" %s", g_set.loaded[i]->name);
  printf("\n");
  if (g_set.n == 0) {
    printf("FAIL no plugin is built (run scripts/build.sh)\n");
    return 1;
  }
  char why[2048];
  const char* device = best_device(why, sizeof why);
  printf("   buffer lists below: one address per buffer, \"-\" for an absent one (no "
         "validity bitmap)\n");
  printf("   device: %s%s%s%s\n", device, why[0] ? " (" : "", why,
         why[0] ? "; using ferry's simulated device in strict mode)" : "");
  int64_t start = now_ns();
  int ok = part_pipeline(device, rows);
  ok = part_ring(device) && ok;
  ok = part_async(device) && ok;
  printf("\n%s in %.1f ms\n", ok ? "demo passed: every hop zero-copy, released exactly once"
                                 : "demo FAILED",
         ms(now_ns() - start));
  return ok ? 0 : 1;
}
