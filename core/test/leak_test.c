/* The leak report (FERRY_LEAK_REPORT): this binary re-runs itself as a child
 * that exports and tracks objects and exits, with and without the variable,
 * and checks what the child printed to stderr at exit. */
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ferry/ferry.h"
#include "ferry_test.h"

extern char** environ;

/* ---- The child: what it leaves live at exit ------------------------------ */

static int child_leaky(void) {
  struct FerryError error;
  /* A schema and an array on sim device 2, never released, and one of each
   * released (which must not be reported). */
  struct ArrowSchema schema = {0}, released_schema = {0};
  if (ferry_schema_init(&schema, "u", "leaked_column", 0, 0, &error) != FERRY_OK) return 2;
  if (ferry_schema_init(&released_schema, "i", "gone", 0, 0, &error) != FERRY_OK) return 2;
  ferry_schema_release(&released_schema);
  static const int32_t values[3] = {1, 2, 3};
  const void* buffers[2] = {NULL, values};
  struct ArrowArray array = {0};
  if (ferry_array_init(&array, 3, 0, 0, 2, buffers, 0, NULL, NULL, &error) != FERRY_OK)
    return 2;
  struct ArrowDeviceArray device_array;
  memset(&device_array, 0, sizeof(device_array));
  if (ferry_device_array_init(&device_array, &array, ARROW_DEVICE_EXT_DEV, 2, NULL, NULL,
                              NULL, &error) != FERRY_OK)
    return 2;
  for (int i = 0; i < 100; i++) {
    struct ArrowArray gone = {0};
    if (ferry_array_init(&gone, 7, 0, 0, 2, buffers, 0, NULL, NULL, &error) != FERRY_OK)
      return 2;
    ferry_array_release(&gone);
  }
  int64_t token = ferry_leak_track("python", "DeviceArray of length 3 (never closed)");
  int64_t closed = ferry_leak_track("go", "closed batch");
  ferry_leak_untrack(closed);
  ferry_leak_untrack(0);
  /* The exit code tells the parent whether tracking was on. */
  return token > 0 ? 10 : 11;
}

static int child_clean(void) {
  struct FerryError error;
  struct ArrowSchema schema = {0};
  if (ferry_schema_init(&schema, "i", NULL, 0, 0, &error) != FERRY_OK) return 2;
  int64_t token = ferry_leak_track("lua", "closed table");
  ferry_schema_release(&schema);
  ferry_leak_untrack(token);
  return token > 0 ? 10 : 11;
}

/* Eight threads export, release, track and untrack at once; each leaves one
 * array and one tracked object live. */
static void* thread_body(void* arg) {
  (void)arg;
  static const int32_t values[2] = {1, 2};
  const void* buffers[2] = {NULL, values};
  struct ArrowArray kept = {0};
  if (ferry_array_init(&kept, 2, 0, 0, 2, buffers, 0, NULL, NULL, NULL) != FERRY_OK)
    return (void*)1;
  for (int i = 0; i < 200; i++) {
    struct ArrowArray gone = {0};
    if (ferry_array_init(&gone, 5, 0, 0, 2, buffers, 0, NULL, NULL, NULL) != FERRY_OK)
      return (void*)1;
    int64_t token = ferry_leak_track("java", "closed vector");
    ferry_array_release(&gone);
    ferry_leak_untrack(token);
  }
  ferry_leak_track("java", "open vector");
  return NULL; /* `kept` leaks on purpose */
}

static int child_threads(void) {
  pthread_t threads[8];
  for (int i = 0; i < 8; i++) {
    if (pthread_create(&threads[i], NULL, thread_body, NULL) != 0) return 2;
  }
  int failed = 0;
  for (int i = 0; i < 8; i++) {
    void* result = NULL;
    pthread_join(threads[i], &result);
    failed |= result != NULL;
  }
  return failed ? 2 : 10;
}

/* The report printed on demand (a Go program's exit skips destructors):
 * once, so the unload prints nothing more. */
static int child_report_now(void) {
  struct ArrowSchema schema = {0};
  if (ferry_schema_init(&schema, "i", "early", 0, 0, NULL) != FERRY_OK) return 2;
  int64_t named = ferry_leak_report();
  if (ferry_leak_report() != 0) return 3; /* already printed */
  return named == 1 ? 10 : named == 0 ? 11 : 4;
}

/* ---- The parent ------------------------------------------------------------ */

/* Runs this binary with `mode` and FERRY_LEAK_REPORT=`value` (unset when
 * NULL); returns the exit status and stderr (in `out`). */
static int run_child(const char* mode, const char* value, char* out, size_t out_size) {
  int pipe_fds[2];
  CHECK(pipe(pipe_fds) == 0);
  char* env[64];
  int n = 0;
  static char setting[64];
  for (char** e = environ; *e != NULL && n < 60; e++) {
    if (strncmp(*e, "FERRY_LEAK_REPORT=", 18) == 0) continue;
    if (strncmp(*e, "ASAN_OPTIONS=", 13) == 0) continue;
    env[n++] = *e;
  }
  /* The leaky child leaks on purpose: LeakSanitizer must not fail it. */
  env[n++] = "ASAN_OPTIONS=detect_leaks=0";
  if (value != NULL) {
    snprintf(setting, sizeof(setting), "FERRY_LEAK_REPORT=%s", value);
    env[n++] = setting;
  }
  env[n] = NULL;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  char* argv[] = {"leak_test", (char*)mode, NULL};
  pid_t pid;
  /* This binary: /proc/self/exe, except under valgrind, where that names
   * valgrind's own tool; ctest and scripts/leak_check.sh give the build. */
  static char self[4096];
  const char* build = getenv("FERRY_BUILD_DIR");
  snprintf(self, sizeof(self), "%s/tests/leak_test", build != NULL ? build : "");
  if (build == NULL || access(self, X_OK) != 0) snprintf(self, sizeof(self), "/proc/self/exe");
  int rc = posix_spawn(&pid, self, &actions, NULL, argv, env);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  CHECK_EQ_INT(0, rc);
  size_t used = 0;
  ssize_t got;
  while ((got = read(pipe_fds[0], out + used, out_size - 1 - used)) > 0) used += (size_t)got;
  out[used] = '\0';
  close(pipe_fds[0]);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  return WEXITSTATUS(status);
}

FERRY_TEST(leak_report_names_live_exports_and_tracked_objects) {
  char out[1200];
  CHECK_EQ_INT(10, run_child("--child-leaky", "1", out, sizeof(out)));
  CHECK_CONTAINS(out,
                 "ferry: leak: core: export never released: schema of format \"u\" "
                 "named \"leaked_column\" (0 children)\n");
  CHECK_CONTAINS(out,
                 "ferry: leak: core: export never released: array of length 3 (offset 0, "
                 "2 buffers, 0 children) on ext_dev:2\n");
  CHECK_CONTAINS(out, "ferry: leak: python: DeviceArray of length 3 (never closed)\n");
  CHECK_CONTAINS(out,
                 "ferry: leak report: 2 export(s) never released, 1 tracked object(s) "
                 "never closed\n");
  /* Released and untracked objects are not reported. */
  CHECK(strstr(out, "gone") == NULL);
  CHECK(strstr(out, "length 7") == NULL);
  CHECK(strstr(out, "closed batch") == NULL);
}

FERRY_TEST(leak_report_says_nothing_live_when_clean) {
  char out[1200];
  CHECK_EQ_INT(10, run_child("--child-clean", "yes", out, sizeof(out)));
  CHECK_STR("ferry: leak report: nothing live\n", out);
}

FERRY_TEST(leak_report_is_off_without_the_variable) {
  char out[1200];
  CHECK_EQ_INT(11, run_child("--child-leaky", NULL, out, sizeof(out)));
  CHECK_STR("", out);
  CHECK_EQ_INT(11, run_child("--child-leaky", "0", out, sizeof(out)));
  CHECK_STR("", out);
  CHECK_EQ_INT(11, run_child("--child-leaky", "", out, sizeof(out)));
  CHECK_STR("", out);
}

FERRY_TEST(leak_report_counts_what_eight_threads_leave_live) {
  static char out[8192]; /* 16 report lines: beyond what CHECK_CONTAINS prints */
  CHECK_EQ_INT(10, run_child("--child-threads", "1", out, sizeof(out)));
  CHECK(strstr(out,
               "ferry: leak report: 8 export(s) never released, 8 tracked object(s) "
               "never closed\n") != NULL);
  CHECK(strstr(out, "closed vector") == NULL);
  CHECK(strstr(out, "length 5") == NULL);
  CHECK(strstr(out, "ferry: leak: java: open vector\n") != NULL);
}

FERRY_TEST(leak_report_on_demand_prints_once) {
  char out[1200];
  CHECK_EQ_INT(10, run_child("--child-report-now", "1", out, sizeof(out)));
  CHECK_STR(
      "ferry: leak: core: export never released: schema of format \"i\" named \"early\" "
      "(0 children)\n"
      "ferry: leak report: 1 export(s) never released, 0 tracked object(s) never closed\n",
      out);
  CHECK_EQ_INT(11, run_child("--child-report-now", NULL, out, sizeof(out)));
  CHECK_STR("", out);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--child-leaky") == 0) return child_leaky();
  if (argc > 1 && strcmp(argv[1], "--child-clean") == 0) return child_clean();
  if (argc > 1 && strcmp(argv[1], "--child-threads") == 0) return child_threads();
  if (argc > 1 && strcmp(argv[1], "--child-report-now") == 0) return child_report_now();
  int passed = 0, failed = 0;
  for (int i = 0; i < ferry_test_count; i++) {
    if (argc > 1 && strstr(ferry_test_entries[i].name, argv[1]) == NULL) continue;
    if (ferry_test_run_one(i)) {
      printf("  in test %s\n", ferry_test_entries[i].name);
      failed++;
    } else {
      passed++;
    }
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
