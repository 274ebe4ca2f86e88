/* Loading the test plugins (see plugins.h). */
#include "plugins.h"

#include "ferry/ferry.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char* const it_runtime_load_order[IT_MAX_RUNTIMES] = {"c", "rust", "lua", "java",
                                                            "go"};

int it_runtime_name_known(const char* name) {
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    if (strcmp(name, it_runtime_load_order[i]) == 0) return 1;
  }
  return 0;
}

static void* need_symbol(struct it_runtime* rt, const char* symbol) {
  void* p = dlsym(rt->handle, symbol);
  if (p == NULL && rt->problem[0] == '\0') {
    snprintf(rt->problem, sizeof rt->problem, "%s does not export %s", rt->path, symbol);
  }
  return p;
}

int it_runtime_load(struct it_runtime* rt, const char* name, const char* plugin_dir) {
  char path[sizeof rt->path];
  snprintf(path, sizeof path, "%s/libferry_it_%s.so", plugin_dir, name);
  return it_runtime_load_path(rt, name, path);
}

int it_runtime_load_path(struct it_runtime* rt, const char* name, const char* path) {
  memset(rt, 0, sizeof *rt);
  rt->name = name;
  snprintf(rt->path, sizeof rt->path, "%s", path);
  if (access(rt->path, R_OK) != 0) {
    snprintf(rt->problem, sizeof rt->problem, "%s not built", rt->path);
    return -1;
  }
  rt->present = 1;
  /* RTLD_LOCAL: plugins must not resolve each other's symbols; RTLD_NODELETE
   * documents that none is ever unloaded. */
  rt->handle = dlopen(rt->path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (rt->handle == NULL) {
    const char* why = dlerror();
    snprintf(rt->problem, sizeof rt->problem, "dlopen failed: %s", why ? why : "?");
    return -1;
  }
  rt->export_array = (ferry_it_export_array_fn)need_symbol(rt, "ferry_it_export_array");
  rt->check_array = (ferry_it_check_array_fn)need_symbol(rt, "ferry_it_check_array");
  rt->export_stream = (ferry_it_export_stream_fn)need_symbol(rt, "ferry_it_export_stream");
  rt->check_stream = (ferry_it_check_stream_fn)need_symbol(rt, "ferry_it_check_stream");
  rt->live_allocations =
      (ferry_it_live_allocations_fn)need_symbol(rt, "ferry_it_live_allocations");
  rt->last_error = (ferry_it_last_error_fn)need_symbol(rt, "ferry_it_last_error");
  if (rt->problem[0] != '\0') return -1;
  rt->loaded = 1;
  return 0;
}

int it_signal_add_onstack(void) {
  int changed = 0;
  for (int sig = 1; sig < NSIG; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction current;
    if (sigaction(sig, NULL, &current) != 0) continue;
    int is_siginfo = (current.sa_flags & SA_SIGINFO) != 0;
    void* handler = is_siginfo ? (void*)current.sa_sigaction : (void*)current.sa_handler;
    if (handler == (void*)SIG_DFL || handler == (void*)SIG_IGN) continue;
    if (current.sa_flags & SA_ONSTACK) continue;
    current.sa_flags |= SA_ONSTACK;
    if (sigaction(sig, &current, NULL) == 0) changed++;
  }
  return changed;
}

const char* it_runtime_error(const struct it_runtime* rt) {
  const char* m = rt->last_error != NULL ? rt->last_error() : NULL;
  return m == NULL ? "(no message)" : m;
}

int it_runtime_start_jvm(struct it_runtime* java, char* message, size_t size) {
  (void)java->live_allocations();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int rc = java->export_array("int8:length=0", &schema, &array);
  if (rc != 0) {
    snprintf(message, size, "the Java plugin could not export a first array: %s: %s",
             ferry_errno_name(rc), it_runtime_error(java));
    return -1;
  }
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
  return 0;
}
