/* Loading the test plugins (see plugin.h). */
#include "plugin.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ferry/ferry.h"

const struct it_runtime_info it_runtimes[IT_MAX_RUNTIMES] = {
#define FERRY_IT_RUNTIME(name, builder, traits, no_asan_reason) \
  {#name, builder, traits, no_asan_reason},
#include "runtimes.def"
#undef FERRY_IT_RUNTIME
};

const struct it_runtime_info* it_runtime_find(const char* name) {
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    if (strcmp(name, it_runtimes[i].name) == 0) return &it_runtimes[i];
  }
  return NULL;
}

const char* it_runtime_names(void) {
  static char names[256];
  if (names[0] == '\0') {
    size_t used = 0;
    for (int i = 0; i < IT_MAX_RUNTIMES && used < sizeof names; i++) {
      int n = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                       it_runtimes[i].name);
      if (n > 0) used += (size_t)n;
    }
  }
  return names;
}

int it_list_has(const char* list, const char* name) {
  if (list == NULL) return 0;
  size_t n = strlen(name);
  for (const char* p = list; *p != '\0';) {
    size_t word = strcspn(p, ", ");
    if (word == n && strncmp(p, name, n) == 0) return 1;
    p += word;
    p += strspn(p, ", ");
  }
  return 0;
}

/* "rust" from ".../libferry_it_rust.so"; the base name without its suffix
 * for other files. */
static void name_from_path(const char* path, char* out, size_t size) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char* prefix = "libferry_it_";
  if (strncmp(base, prefix, strlen(prefix)) == 0) base += strlen(prefix);
  size_t n = strcspn(base, ".");
  if (n >= size) n = size - 1;
  memcpy(out, base, n);
  out[n] = '\0';
}

static void* need_symbol(struct it_plugin* p, const char* symbol) {
  void* found = dlsym(p->handle, symbol);
  if (found == NULL && p->problem[0] == '\0') {
    snprintf(p->problem, sizeof p->problem, "%s does not export %s", p->path, symbol);
  }
  return found;
}

int it_plugin_load(struct it_plugin* p, const char* name, const char* path) {
  memset(p, 0, sizeof *p);
  if (name != NULL) {
    snprintf(p->name, sizeof p->name, "%s", name);
  } else {
    name_from_path(path, p->name, sizeof p->name);
  }
  p->runtime = it_runtime_find(p->name);
  /* dlopen searches the library path for a bare name: "./" keeps it a file. */
  snprintf(p->path, sizeof p->path, "%s%s", strchr(path, '/') ? "" : "./", path);
  if (access(p->path, R_OK) != 0) {
    snprintf(p->problem, sizeof p->problem, "%s not built", p->path);
    return -1;
  }
  p->present = 1;
  /* RTLD_LOCAL: plugins must not resolve each other's symbols; RTLD_NODELETE
   * documents that none is ever unloaded. */
  p->handle = dlopen(p->path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (p->handle == NULL) {
    const char* why = dlerror();
    snprintf(p->problem, sizeof p->problem, "dlopen failed: %s", why ? why : "?");
    return -1;
  }
  p->export_array = (ferry_it_export_array_fn)need_symbol(p, "ferry_it_export_array");
  p->check_array = (ferry_it_check_array_fn)need_symbol(p, "ferry_it_check_array");
  p->export_stream = (ferry_it_export_stream_fn)need_symbol(p, "ferry_it_export_stream");
  p->check_stream = (ferry_it_check_stream_fn)need_symbol(p, "ferry_it_check_stream");
  p->live_allocations =
      (ferry_it_live_allocations_fn)need_symbol(p, "ferry_it_live_allocations");
  p->last_error = (ferry_it_last_error_fn)need_symbol(p, "ferry_it_last_error");
  if (p->problem[0] != '\0') return -1;
  p->export_async = (ferry_it_export_async_fn)dlsym(p->handle, "ferry_it_export_async");
  p->check_async = (ferry_it_check_async_fn)dlsym(p->handle, "ferry_it_check_async");
  p->async_result = (ferry_it_async_result_fn)dlsym(p->handle, "ferry_it_async_result");
  p->loaded = 1;
  return 0;
}

int it_plugin_has_async(const struct it_plugin* p, const char** missing) {
  const char* first = p->export_async == NULL   ? "ferry_it_export_async"
                      : p->check_async == NULL  ? "ferry_it_check_async"
                      : p->async_result == NULL ? "ferry_it_async_result"
                                                : NULL;
  if (missing != NULL) *missing = first;
  return first == NULL;
}

int it_plugin_load_from_dir(struct it_plugin* p, const char* name, const char* dir) {
  char path[sizeof p->path];
  snprintf(path, sizeof path, "%s/libferry_it_%s.so", dir, name);
  return it_plugin_load(p, name, path);
}

int it_plugin_dir_beside_exe(char* out, size_t size) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  char* slash = strrchr(exe, '/');
  if (slash != NULL) *slash = '\0';
  snprintf(out, size, "%s/../plugins", exe);
  return 0;
}

const char* it_plugin_error(const struct it_plugin* p) {
  const char* m = p->last_error != NULL ? p->last_error() : NULL;
  return m == NULL ? "(no message)" : m;
}

void* it_plugin_symbol(const struct it_plugin* p, const char* symbol) {
  return p->handle == NULL ? NULL : dlsym(p->handle, symbol);
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

/* Makes a runtime start now, on this thread (a VM, before later runtimes
 * load; an embedded interpreter): one cheap export and release. 0, or -1
 * with the reason. */
static int start_runtime(struct it_plugin* p, char* message, size_t size) {
  (void)p->live_allocations();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int rc = p->export_array("int8:length=0", &schema, &array);
  if (rc != 0) {
    snprintf(message, size, "the %s plugin could not export a first array: %s: %s",
             p->name, ferry_errno_name(rc), it_plugin_error(p));
    return -1;
  }
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
  return 0;
}

static int sigsegv_has_onstack(void) {
  struct sigaction segv;
  if (sigaction(SIGSEGV, NULL, &segv) != 0) return 0;
  return segv.sa_handler != SIG_DFL && (segv.sa_flags & SA_ONSTACK) != 0;
}

/* The load order: the list's, or with `onstack_first` the runtimes that
 * need SA_ONSTACK moved before the first VM runtime. */
static void load_order(int onstack_first, int order[IT_MAX_RUNTIMES]) {
  int n = 0;
  int placed[IT_MAX_RUNTIMES] = {0};
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    if (placed[i]) continue;
    if (onstack_first && (it_runtimes[i].traits & IT_RUNTIME_STARTS_VM)) {
      for (int j = i + 1; j < IT_MAX_RUNTIMES; j++) {
        if ((it_runtimes[j].traits & IT_RUNTIME_NEEDS_ONSTACK) && !placed[j]) {
          order[n++] = j;
          placed[j] = 1;
        }
      }
    }
    order[n++] = i;
    placed[i] = 1;
  }
}

void it_runtime_set_load(struct it_runtime_set* set, const struct it_load_options* o) {
  memset(set, 0, sizeof *set);
  set->onstack_fixups = -1;
  set->vm_sigsegv_onstack = -1;
  set->onstack_first = o->onstack_first;
  int order[IT_MAX_RUNTIMES];
  load_order(o->onstack_first, order);
  int vm_started = 0;
  for (int step = 0; step < IT_MAX_RUNTIMES; step++) {
    int i = order[step];
    const struct it_runtime_info* rt = &it_runtimes[i];
    struct it_plugin* p = &set->plugins[i];
    snprintf(p->name, sizeof p->name, "%s", rt->name);
    p->runtime = rt;
    if (o->wanted != NULL && o->wanted[0] != '\0' && !it_list_has(o->wanted, rt->name)) {
      set->state[i] = IT_NOT_WANTED;
      continue;
    }
    if (o->asan && rt->no_asan_reason != NULL) {
      set->state[i] = IT_SKIPPED_ASAN;
      snprintf(p->problem, sizeof p->problem, "%s", rt->no_asan_reason);
      continue;
    }
    if ((rt->traits & IT_RUNTIME_NEEDS_ONSTACK) && vm_started && set->onstack_fixups < 0) {
      /* The VM's handlers lack SA_ONSTACK; Go would refuse to run with them. */
      set->onstack_fixups = it_signal_add_onstack();
    }
    int rc = o->path[i] != NULL && o->path[i][0] != '\0'
                 ? it_plugin_load(p, rt->name, o->path[i])
                 : it_plugin_load_from_dir(p, rt->name, o->plugin_dir);
    if (rc != 0) {
      set->state[i] = p->present ? IT_LOAD_FAILED : IT_SKIPPED_MISSING;
      continue;
    }
    if (rt->traits & (IT_RUNTIME_STARTS_VM | IT_RUNTIME_START_ON_LOAD)) {
      if (start_runtime(p, set->vm_problem, sizeof set->vm_problem) != 0) {
        snprintf(p->problem, sizeof p->problem, "%s", set->vm_problem);
        p->loaded = 0;
        set->state[i] = IT_LOAD_FAILED;
        continue;
      }
    }
    if (rt->traits & IT_RUNTIME_STARTS_VM) {
      vm_started = 1;
      /* The plugin's own duty (a host that loads Go after it may not know). */
      set->vm_sigsegv_onstack = sigsegv_has_onstack();
    }
    set->state[i] = IT_LOADED;
    set->loaded[set->n++] = p;
  }
}

enum it_load_state it_runtime_set_describe(const struct it_runtime_set* set, int index,
                                           char* out, size_t size) {
  const struct it_plugin* p = &set->plugins[index];
  switch (set->state[index]) {
    case IT_NOT_WANTED: snprintf(out, size, "%s", ""); break;
    case IT_SKIPPED_ASAN:
      snprintf(out, size,
               "SKIPPED runtime %s: not loaded under AddressSanitizer (%s); the non-ASan run "
               "covers it",
               p->name, p->problem);
      break;
    case IT_SKIPPED_MISSING: snprintf(out, size, "SKIPPED runtime %s: %s", p->name, p->problem); break;
    case IT_LOAD_FAILED: snprintf(out, size, "FAIL load %s: %s", p->name, p->problem); break;
    case IT_LOADED: snprintf(out, size, "loaded runtime %s: %s", p->name, p->path); break;
  }
  return set->state[index];
}

int it_runtime_set_needs_quick_exit(const struct it_runtime_set* set) {
  for (int i = 0; i < set->n; i++) {
    if (set->loaded[i]->runtime->traits & IT_RUNTIME_QUICK_EXIT) return 1;
  }
  return 0;
}
