/* Fork isolation for the ferry tool: foreign code runs in a child process
 * that reports through a pipe; the parent turns crashes, hangs and early
 * exits into findings, so a broken producer can never take the tool down. */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/* Write end of the report pipe in the child; -1 in the parent. */
static int g_report_fd = -1;
static int64_t g_child_findings;

/* ---- child side -------------------------------------------------------------- */

/* Writes all of `data` (unbuffered, so a crash right after loses nothing). */
static void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    size -= (size_t)n;
  }
}

/* Copies `text` into `out` with tabs and newlines made spaces, so a field
 * never breaks the line protocol. */
static void sanitize(const char* text, char* out, size_t out_size) {
  size_t i = 0;
  for (; text != NULL && text[i] != '\0' && i + 1 < out_size; i++) {
    char c = text[i];
    out[i] = (c == '\t' || c == '\n' || c == '\r') ? ' ' : c;
  }
  out[i] = '\0';
}

/* Sends one record: KIND, then tab-separated fields, then a newline. */
static void send_record(const char* kind, const char* a, const char* b, const char* c) {
  char line[4096];
  char fa[1024], fb[1024], fc[1900];
  sanitize(a, fa, sizeof fa);
  sanitize(b, fb, sizeof fb);
  sanitize(c, fc, sizeof fc);
  int n;
  if (b == NULL) {
    n = snprintf(line, sizeof line, "%s\t%s\n", kind, fa);
  } else {
    n = snprintf(line, sizeof line, "%s\t%s\t%s\t%s\n", kind, fa, fb, fc);
  }
  if (n < 0) return;
  if ((size_t)n >= sizeof line) {
    n = (int)sizeof line - 1;
    line[n - 1] = '\n';
  }
  if (g_report_fd >= 0) {
    write_all(g_report_fd, line, (size_t)n);
  } else {
    /* Not isolated (never the case for foreign code): print directly. */
    fputs(line, stdout);
  }
}

void tool_fail(const char* rule, const char* where, const char* fmt, ...) {
  char what[1900];
  va_list args;
  va_start(args, fmt);
  vsnprintf(what, sizeof what, fmt, args);
  va_end(args);
  g_child_findings++;
  send_record("FAIL", rule, where, what);
}

/* tool_ok, tool_out, tool_stage and tool_usage_error (tool.h): each formats
 * its text printf-style and sends it as one record of its kind. */
#define TOOL_RECORD_FUNCTION(name, kind)     \
  void name(const char* fmt, ...) {          \
    char text[1900];                         \
    va_list args;                            \
    va_start(args, fmt);                     \
    vsnprintf(text, sizeof text, fmt, args); \
    va_end(args);                            \
    send_record(kind, text, NULL, NULL);     \
  }
TOOL_RECORD_FUNCTION(tool_ok, "OK")
TOOL_RECORD_FUNCTION(tool_out, "OUT")
TOOL_RECORD_FUNCTION(tool_stage, "STAGE")
TOOL_RECORD_FUNCTION(tool_usage_error, "USAGE")

int64_t tool_child_findings(void) { return g_child_findings; }

int tool_split_target(const char* target, char* lib, size_t lib_size, char* symbol,
                      size_t symbol_size) {
  const char* colon = strrchr(target, ':');
  if (colon == NULL || colon == target || colon[1] == '\0') return -1;
  size_t lib_length = (size_t)(colon - target);
  if (lib_length + 1 > lib_size || strlen(colon + 1) + 1 > symbol_size) return -1;
  memcpy(lib, target, lib_length);
  lib[lib_length] = '\0';
  strcpy(symbol, colon + 1);
  return 0;
}

void* tool_load_symbol(const char* lib, const char* symbol, void** handle_out) {
  tool_stage("loading %s", lib);
  /* A bare name would be searched in the system paths; a path is meant. */
  char path[4096];
  if (strchr(lib, '/') == NULL) {
    snprintf(path, sizeof path, "./%s", lib);
  } else {
    snprintf(path, sizeof path, "%s", lib);
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    tool_usage_error("cannot load %s: %s", lib, dlerror());
    return NULL;
  }
  dlerror();
  void* fn = dlsym(handle, symbol);
  if (fn == NULL) {
    const char* why = dlerror();
    tool_usage_error("%s has no symbol \"%s\"%s%s", lib, symbol, why ? ": " : "",
                     why ? why : "");
    return NULL;
  }
  if (handle_out != NULL) *handle_out = handle;
  return fn;
}

/* ---- parent side ------------------------------------------------------------- */

static const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
  }
}

struct parent_state {
  char stage[1024];
  char pending[8192];
  size_t pending_length;
  int done;
  struct tool_run_result* result;
};

/* Handles one complete line from the child. */
static void handle_line(struct parent_state* st, char* line) {
  char* fields[4] = {line, NULL, NULL, NULL};
  int n = 1;
  for (char* p = line; *p != '\0' && n < 4; p++) {
    if (*p == '\t') {
      *p = '\0';
      fields[n++] = p + 1;
    }
  }
  const char* kind = fields[0];
  if (strcmp(kind, "FAIL") == 0 && n == 4) {
    printf("FAIL %s: %s: %s\n", fields[1], fields[2], fields[3]);
    st->result->n_findings++;
  } else if (strcmp(kind, "OK") == 0 && n >= 2) {
    printf("OK %s\n", fields[1]);
    st->result->n_ok++;
  } else if (strcmp(kind, "OUT") == 0 && n >= 2) {
    printf("%s\n", fields[1]);
  } else if (strcmp(kind, "STAGE") == 0 && n >= 2) {
    snprintf(st->stage, sizeof st->stage, "%s", fields[1]);
  } else if (strcmp(kind, "USAGE") == 0 && n >= 2) {
    fprintf(stderr, "ferry: %s\n", fields[1]);
    st->result->usage_error = 1;
  } else if (strcmp(kind, "DONE") == 0) {
    st->done = 1;
  }
  fflush(stdout);
}

static void consume(struct parent_state* st, const char* data, size_t size) {
  for (size_t i = 0; i < size; i++) {
    if (data[i] == '\n') {
      st->pending[st->pending_length] = '\0';
      handle_line(st, st->pending);
      st->pending_length = 0;
    } else if (st->pending_length + 1 < sizeof st->pending) {
      st->pending[st->pending_length++] = data[i];
    }
  }
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tool_run_isolated(tool_child_fn fn, void* arg, int timeout_seconds,
                      struct tool_run_result* result) {
  memset(result, 0, sizeof *result);
  int fds[2];
  if (pipe(fds) != 0) {
    fprintf(stderr, "ferry: pipe failed: %s\n", strerror(errno));
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "ferry: fork failed: %s\n", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    /* Own process group, so a timeout also kills anything the producer
     * started. */
    setpgid(0, 0);
    /* Faults in foreign code must end the child with the signal itself, even
     * when a sanitizer installed handlers that would turn them into an exit
     * status, so the parent can name the signal. */
    const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP};
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
      signal(fatal_signals[i], SIG_DFL);
    }
    close(fds[0]);
    g_report_fd = fds[1];
    fn(arg);
    send_record("DONE", "", NULL, NULL);
    fflush(stdout);
    /* _exit: no atexit handlers or leak checkers of the producer's making;
     * leaks are the release checks' business. */
    _exit(0);
  }
  close(fds[1]);
  setpgid(pid, pid);

  struct parent_state st;
  memset(&st, 0, sizeof st);
  st.result = result;
  snprintf(st.stage, sizeof st.stage, "start-up");
  int64_t deadline = now_ms() + (int64_t)timeout_seconds * 1000;
  int timed_out = 0;
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int rc = poll(&pfd, 1, (int)(left > 1000000 ? 1000000 : left));
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (rc == 0) continue;
    char buffer[4096];
    ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; /* EOF: the child has gone (or closed the pipe) */
    consume(&st, buffer, (size_t)n);
  }
  if (timed_out) kill(-pid, SIGKILL);
  close(fds[0]);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    printf("FAIL timeout: root: no answer within %d s during %s (killed)\n",
           timeout_seconds, st.stage);
    result->n_findings++;
  } else if (WIFSIGNALED(status)) {
    printf("FAIL crash: root: producer crashed with %s during %s\n",
           signal_name(WTERMSIG(status)), st.stage);
    result->n_findings++;
  } else if (!st.done && !result->usage_error) {
    /* A sanitizer turns a fault into an exit status; a producer may call
     * exit() itself. Either way the check did not finish. */
    printf("FAIL crash: root: the process ended with exit status %d during %s\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, st.stage);
    result->n_findings++;
  }
  fflush(stdout);
  return 0;
}

int tool_finish(const char* what, const struct tool_run_result* result) {
  if (result->usage_error) return TOOL_EXIT_USAGE;
  if (result->n_findings == 0) {
    printf("%s: OK, no findings\n", what);
    return TOOL_EXIT_CLEAN;
  }
  printf("%s: %lld finding%s\n", what, (long long)result->n_findings,
         result->n_findings == 1 ? "" : "s");
  return TOOL_EXIT_FINDINGS;
}
