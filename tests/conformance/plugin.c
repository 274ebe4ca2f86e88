/* Loading a test plugin (see plugin.h). */
#include "plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void runtime_from_path(const char* path, char* out, size_t size) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char* prefix = "libferry_it_";
  if (strncmp(base, prefix, strlen(prefix)) == 0) base += strlen(prefix);
  size_t n = strcspn(base, ".");
  if (n >= size) n = size - 1;
  memcpy(out, base, n);
  out[n] = '\0';
}

int conf_plugin_load(struct conf_plugin* p, const char* path, char* why, size_t size) {
  memset(p, 0, sizeof *p);
  snprintf(p->path, sizeof p->path, "%s", path);
  runtime_from_path(path, p->runtime, sizeof p->runtime);
  p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (p->handle == NULL) {
    const char* e = dlerror();
    snprintf(why, size, "dlopen %s: %s", path, e ? e : "?");
    return -1;
  }
#define NEED(field, symbol, type)                                 \
  do {                                                            \
    p->field = (type)dlsym(p->handle, symbol);                    \
    if (p->field == NULL) {                                       \
      snprintf(why, size, "%s does not export %s", path, symbol); \
      return -1;                                                  \
    }                                                             \
  } while (0)
  NEED(export_array, "ferry_it_export_array", ferry_it_export_array_fn);
  NEED(check_array, "ferry_it_check_array", ferry_it_check_array_fn);
  NEED(export_stream, "ferry_it_export_stream", ferry_it_export_stream_fn);
  NEED(check_stream, "ferry_it_check_stream", ferry_it_check_stream_fn);
  NEED(live_allocations, "ferry_it_live_allocations", ferry_it_live_allocations_fn);
  NEED(last_error, "ferry_it_last_error", ferry_it_last_error_fn);
#undef NEED
  return 0;
}

const char* conf_plugin_error(const struct conf_plugin* p) {
  const char* m = p->last_error();
  return m == NULL ? "(NULL)" : m;
}
