/* One handoff and its assertions (see handoff.h). */
#include "handoff.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "allocations.h"
#include "case_spec.h"
#include "ferry/ferry.h"
#include "release_watch.h"
#include "stream_watch.h"

const struct it_case_entry* it_handoff_tamper_entry(int stream) {
  static const struct it_case_entry tamper[2] = {{IT_TAMPER_ARRAY_CASE, "", 0},
                                                 {IT_TAMPER_STREAM_CASE, "", 0}};
  return &tamper[stream ? 1 : 0];
}

const char* it_handoff_entry_label(const struct it_case_entry* entry, int tamper) {
  return tamper                  ? "tamper "
         : entry->reject_word[0] ? "reject "
         : entry->on_new_thread  ? "thread "
                                 : "";
}

int it_handoff_init(char* message, size_t size) {
  if (it_allocations_init(message, size) != 0) return -1;
  if (!ferry_sim_is_strict()) {
    snprintf(message, size,
             "the sim device is not in strict mode (FERRY_SIM_STRICT=0?): the sync-event "
             "assertions would prove nothing");
    return -1;
  }
  return 0;
}

int it_failf(char* message, size_t size, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, size, fmt, args);
  va_end(args);
  return 0;
}

/* Everything that must come back to where it was after a handoff. */
static void take_baseline(const struct it_runtime_set* all, struct it_allocations* b) {
  it_allocations_take(b, (const struct it_plugin* const*)all->loaded, all->n);
}

/* The keys of `entry` the host asserts on; a "reject" entry is not parsed
 * (the producer must refuse it). 0, or -1 with the parser's message. */
static int parse_entry(const struct it_case_entry* entry, struct it_case* out, char* message,
                       size_t size) {
  memset(out, 0, sizeof *out);
  if (entry->reject_word[0] != '\0') return 0;
  struct FerryError error;
  ferry_error_init(&error);
  if (it_case_parse(entry->spec, out, &error) != FERRY_OK) {
    snprintf(message, size, "%s", error.message);
    return -1;
  }
  return 0;
}

/* The end of every handoff: the release watch of its group and the
 * allocation ledger. Returns 1 when both are clean, else 0 with the problem
 * in `message`. */
static int finish(const struct it_runtime_set* all, int group,
                  const struct it_allocations* before, struct it_handoff_stats* stats,
                  char* message, size_t size) {
  char why[1200];
  stats->structs_tracked += it_watch_count(group);
  if (it_watch_verify_text(group, why, sizeof why) != 0) {
    return it_failf(message, size, "release: %s", why);
  }
  if (it_allocations_expect(before, (const struct it_plugin* const*)all->loaded, all->n, why,
                            sizeof why) != 0) {
    return it_failf(message, size, "leak: %s before the handoff", why);
  }
  return 1;
}

/* The start of every handoff: `entry` parsed into `info`, a new release-watch
 * group and the allocation baseline. 1, or 0 with the problem in `message`. */
static int begin(const struct it_runtime_set* all, const struct it_case_entry* entry,
                 struct it_case* info, int* group, struct it_allocations* before,
                 char* message, size_t size) {
  char why[1200];
  if (parse_entry(entry, info, why, sizeof why) != 0) {
    return it_failf(message, size, "bad case: %s", why);
  }
  *group = it_watch_new_group();
  take_baseline(all, before);
  return 1;
}

/* Judges the producer's export result `rc`. An entry that asks for a failed
 * export (a "reject" entry, whose message names its word, or fail=export)
 * must get non-zero, a message saying why, and nothing left live; any other
 * entry must get 0. Returns -1 when the handoff goes on (the export succeeded
 * as it should), else its verdict (1 or 0). */
static int judge_export(const struct it_runtime_set* all,
                        const struct it_plugin* producer,
                        const struct it_case_entry* entry, const struct it_case* info,
                        int rc, int left_live, int group,
                        const struct it_allocations* before,
                        struct it_handoff_stats* stats, char* message, size_t size) {
  const char* want = entry->reject_word;
  if (want[0] == '\0' && info->fail != IT_FAIL_EXPORT) {
    if (rc == 0) return -1;
    return it_failf(message, size, "producer export failed with %s: %s",
                    ferry_errno_name(rc), it_plugin_error(producer));
  }
  if (want[0] == '\0') want = "injected failure at export";
  const char* got = it_plugin_error(producer);
  if (rc == 0) {
    return it_failf(message, size, "export succeeded, expected a failure with \"%s\"",
                    want);
  }
  if (strstr(got, want) == NULL) {
    return it_failf(message, size,
                    "export failed with %s \"%s\", expected a message with \"%s\"",
                    ferry_errno_name(rc), got, want);
  }
  if (left_live) {
    return it_failf(message, size, "export failed with %s but left its out-struct live",
                    ferry_errno_name(rc));
  }
  return finish(all, group, before, stats, message, size);
}

/* A consumer that refused a correct handoff with `rc`, saying `said`; the
 * release watch and the ledger are still checked and named with it. */
static int consumer_refused(const struct it_runtime_set* all, int group,
                            const struct it_allocations* before,
                            struct it_handoff_stats* stats, int rc, const char* said,
                            char* message, size_t size) {
  char why[1200];
  if (finish(all, group, before, stats, why, sizeof why) == 0) {
    return it_failf(message, size, "consumer check failed with %s: %s; and %s",
                    ferry_errno_name(rc), said, why);
  }
  return it_failf(message, size, "consumer check failed with %s: %s",
                  ferry_errno_name(rc), said);
}

static int handoff_array(const struct it_runtime_set* all, const struct it_plugin* producer,
                     const struct it_plugin* consumer, const struct it_case_entry* entry,
                     int tamper, struct it_handoff_stats* stats, char* message, size_t size) {
  struct it_case info;
  int group;
  struct it_allocations before;
  if (!begin(all, entry, &info, &group, &before, message, size)) return 0;
  char why[1200];

  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray exported = {0};
  int rc = producer->export_array(entry->spec, &schema, &exported);
  int left_live = schema.release != NULL || exported.array.release != NULL;
  int verdict = judge_export(all, producer, entry, &info, rc, left_live, group, &before,
                             stats, message, size);
  if (verdict >= 0) return verdict;
  if (schema.release == NULL || exported.array.release == NULL) {
    ferry_schema_release(&schema);
    ferry_device_array_release(&exported);
    return it_failf(message, size, "producer export returned 0 but a released %s",
                    schema.release == NULL ? "schema" : "array");
  }
  ArrowDeviceType want_type = info.device_type;
  if (exported.device_type != want_type) {
    ferry_schema_release(&schema);
    ferry_device_array_release(&exported);
    return it_failf(message, size,
                    "producer exported device type %d (%s), the case says %s",
                    (int)exported.device_type,
                    ferry_device_type_name(exported.device_type), info.device_name);
  }

  /* The host's own struct: the producer's, moved bitwise. */
  struct ArrowDeviceArray handed = {0};
  if (ferry_device_array_move(&exported, &handed) != 0) {
    ferry_schema_release(&schema);
    ferry_device_array_release(&exported);
    return it_failf(message, size,
                    "ferry_device_array_move refused the producer's array");
  }
  if (it_watch_schema(&schema, "schema") != 0 ||
      it_watch_array(&handed.array, "array") != 0) {
    ferry_schema_release(&schema);
    ferry_device_array_release(&handed);
    return it_failf(message, size, "the release watch has no memory left");
  }
  if (handed.device_type == ARROW_DEVICE_EXT_DEV) {
    /* Witness only: the host never waits on the event itself. */
    int pending = it_sim_pending(&handed);
    if (pending == 1) stats->sim_pending++;
    if (pending == 0) stats->sim_ready++;
  }
  if (tamper) {
    if (it_tamper_int32(&handed) != 0) {
      ferry_schema_release(&schema);
      ferry_device_array_release(&handed);
      return it_failf(message, size,
                      "tamper: the export has no int32 CPU element to flip");
    }
    stats->tampered++;
  }

  rc = consumer->check_array(entry->spec, &schema, &handed);
  if (tamper) {
    const char* said = it_plugin_error(consumer);
    if (rc == 0) {
      /* Still verify release and leaks, but the verdict is already wrong. */
      finish(all, group, &before, stats, why, sizeof why);
      return it_failf(
          message, size,
          "consumer accepted an array whose first value the host had changed in "
          "the producer's memory: it did not read the producer's buffers");
    }
    if (said[0] == '\0' || strcmp(said, "(no message)") == 0) {
      return it_failf(message, size,
                      "consumer rejected the tampered array without a message");
    }
  } else if (rc != 0) {
    char consumer_said[512];
    snprintf(consumer_said, sizeof consumer_said, "%s", it_plugin_error(consumer));
    return consumer_refused(all, group, &before, stats, rc, consumer_said, message, size);
  }
  if (schema.release != NULL || handed.array.release != NULL) {
    /* Released here so that the next handoff starts clean. */
    ferry_schema_release(&schema);
    ferry_device_array_release(&handed);
    return it_failf(message, size,
                    "the consumer returned with the host's %s still live (it must take "
                    "ownership)",
                    schema.release != NULL ? "schema" : "array");
  }
  return finish(all, group, &before, stats, message, size);
}

/* The stream assertions on what crossed, given the consumer's verdict. */
static int check_stream_observed(const struct it_case* info,
                                 const struct it_stream_observed* seen, char* message,
                                 size_t size) {
  if (seen->track_failures > 0)
    return it_failf(message, size, "the release watch has no memory left");
  if (info->fail == IT_FAIL_GET_SCHEMA) {
    if (seen->get_schema_calls == 0) {
      return it_failf(message, size,
                      "fail=get_schema: the consumer never called get_schema");
    }
    if (seen->get_schema_failure_code != EIO) {
      return it_failf(message, size,
                      "fail=get_schema: get_schema returned %s, expected EIO",
                      ferry_errno_name(seen->get_schema_failure_code));
    }
    if (strstr(seen->failure_message, "injected failure at get_schema") == NULL) {
      return it_failf(message, size, "fail=get_schema: get_last_error said \"%s\"",
                      seen->failure_message);
    }
    return 1;
  }
  if (seen->get_schema_failure_code != 0) {
    return it_failf(message, size, "get_schema failed with %s: %s",
                    ferry_errno_name(seen->get_schema_failure_code),
                    seen->failure_message);
  }
  if (it_case_failing_get_next(info) > 0) {
    char want[64];
    snprintf(want, sizeof want, "injected failure at get_next %lld", (long long)info->fail_at);
    if (seen->first_failure_call != info->fail_at) {
      return it_failf(message, size, "fail=get_next@%lld: %s", (long long)info->fail_at,
                      seen->first_failure_call == 0 ? "no get_next call failed"
                                                    : "a different get_next call failed");
    }
    if (seen->first_failure_code != EIO) {
      return it_failf(
          message, size, "fail=get_next@%lld: get_next returned %s, expected EIO",
          (long long)info->fail_at, ferry_errno_name(seen->first_failure_code));
    }
    if (strstr(seen->failure_message, want) == NULL) {
      return it_failf(message, size, "fail=get_next@%lld: get_last_error said \"%s\"",
                      (long long)info->fail_at, seen->failure_message);
    }
    if (seen->batches != info->fail_at - 1) {
      return it_failf(message, size,
                      "fail=get_next@%lld: %lld batches crossed before it, "
                      "expected %lld",
                      (long long)info->fail_at, (long long)seen->batches,
                      (long long)(info->fail_at - 1));
    }
    return 1;
  }
  if (seen->first_failure_call != 0) {
    return it_failf(message, size, "get_next call %lld failed with %s: %s",
                    (long long)seen->first_failure_call,
                    ferry_errno_name(seen->first_failure_code), seen->failure_message);
  }
  if (seen->batches != info->batches) {
    return it_failf(message, size, "%lld batches crossed, the case has %lld",
                    (long long)seen->batches, (long long)info->batches);
  }
  if (seen->end_seen == 0) {
    return it_failf(message, size, "the consumer stopped before the end of the stream");
  }
  return 1;
}

static int handoff_stream(const struct it_runtime_set* all, const struct it_plugin* producer,
                      const struct it_plugin* consumer, const struct it_case_entry* entry,
                      int tamper, struct it_handoff_stats* stats, char* message,
                      size_t size) {
  struct it_case info;
  int group;
  struct it_allocations before;
  if (!begin(all, entry, &info, &group, &before, message, size)) return 0;
  char why[1200];

  struct ArrowDeviceArrayStream exported = {0};
  int rc = producer->export_stream(entry->spec, &exported);
  int left_live = exported.release != NULL;
  int verdict = judge_export(all, producer, entry, &info, rc, left_live, group, &before,
                             stats, message, size);
  if (verdict >= 0) return verdict;
  if (exported.release == NULL) {
    return it_failf(message, size, "producer export returned 0 but a released stream");
  }
  ArrowDeviceType want_type = info.device_type;
  if (exported.device_type != want_type) {
    ferry_array_stream_release(&exported);
    return it_failf(message, size,
                    "producer's stream has device type %d (%s), the case says %s",
                    (int)exported.device_type,
                    ferry_device_type_name(exported.device_type), info.device_name);
  }
  struct ArrowDeviceArrayStream handed = {0};
  if (ferry_array_stream_move(&exported, &handed) != 0) {
    ferry_array_stream_release(&exported);
    return it_failf(message, size,
                    "ferry_array_stream_move refused the producer's stream");
  }
  if (it_watch_stream(&handed, "stream") != 0) {
    ferry_array_stream_release(&handed);
    return it_failf(message, size, "the release watch has no memory left");
  }
  it_stream_watch_begin(&handed, tamper);

  rc = consumer->check_stream(entry->spec, &handed);
  char consumer_said[512];
  snprintf(consumer_said, sizeof consumer_said, "%s", it_plugin_error(consumer));
  const struct it_stream_observed* seen = it_stream_watch_observed();
  stats->sim_pending += seen->sim_pending_batches;
  stats->sim_ready += seen->sim_ready_batches;
  if (tamper) {
    if (seen->tampered_batches != 1) {
      finish(all, group, &before, stats, why, sizeof why);
      return it_failf(message, size,
                      "tamper: batch 0 never crossed (or had no int32 element)");
    }
    stats->tampered++;
    if (rc == 0) {
      finish(all, group, &before, stats, why, sizeof why);
      return it_failf(
          message, size,
          "consumer accepted a stream whose first value the host had changed in the "
          "producer's memory: it did not read the producer's buffers");
    }
    if (consumer_said[0] == '\0' || strcmp(consumer_said, "(no message)") == 0) {
      return it_failf(message, size,
                      "consumer rejected the tampered stream without a message");
    }
  } else {
    if (rc != 0) {
      return consumer_refused(all, group, &before, stats, rc, consumer_said, message,
                              size);
    }
    if (check_stream_observed(&info, seen, why, sizeof why) == 0) {
      char release_why[1200];
      finish(all, group, &before, stats, release_why, sizeof release_why);
      return it_failf(message, size, "consumer returned 0 but %s", why);
    }
  }
  if (handed.release != NULL) {
    ferry_array_stream_release(&handed);
    return it_failf(
        message, size,
        "the consumer returned with the host's stream still live (it must take "
        "ownership)");
  }
  return finish(all, group, &before, stats, message, size);
}

/* ---- a handoff on a new thread ------------------------------------------------- */

struct handoff_job {
  int stream;
  const struct it_runtime_set* all;
  const struct it_plugin* producer;
  const struct it_plugin* consumer;
  const struct it_case_entry* entry;
  int tamper;
  struct it_handoff_stats* stats;
  char* message;
  size_t size;
  int ok;
};

static void* run_job(void* arg) {
  struct handoff_job* j = (struct handoff_job*)arg;
  j->ok = j->stream ? handoff_stream(j->all, j->producer, j->consumer, j->entry, j->tamper,
                                     j->stats, j->message, j->size)
                    : handoff_array(j->all, j->producer, j->consumer, j->entry, j->tamper,
                                    j->stats, j->message, j->size);
  return NULL;
}

/* Runs the handoff here, or on a new thread when the entry asks for one. */
static int run_handoff(struct handoff_job* job) {
  if (!job->entry->on_new_thread) {
    run_job(job);
    return job->ok;
  }
  pthread_t thread;
  int rc = pthread_create(&thread, NULL, run_job, job);
  if (rc != 0)
    return it_failf(job->message, job->size, "pthread_create: %s", strerror(rc));
  pthread_join(thread, NULL);
  return job->ok;
}

int it_handoff_array(const struct it_runtime_set* all, const struct it_plugin* producer,
                     const struct it_plugin* consumer, const struct it_case_entry* entry,
                     int tamper, struct it_handoff_stats* stats, char* message, size_t size) {
  struct handoff_job job = {0, all, producer, consumer, entry, tamper, stats, message, size, 0};
  return run_handoff(&job);
}

int it_handoff_stream(const struct it_runtime_set* all, const struct it_plugin* producer,
                      const struct it_plugin* consumer, const struct it_case_entry* entry,
                      int tamper, struct it_handoff_stats* stats, char* message,
                      size_t size) {
  struct handoff_job job = {1, all, producer, consumer, entry, tamper, stats, message, size, 0};
  return run_handoff(&job);
}
