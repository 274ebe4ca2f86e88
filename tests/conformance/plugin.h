/* plugin: loading one test plugin (tests/integration/ferry_it.h) with dlopen. */
#ifndef FERRY_CONFORMANCE_PLUGIN_H
#define FERRY_CONFORMANCE_PLUGIN_H

#include <stddef.h>

#include "../integration/ferry_it.h"

struct conf_plugin {
  char runtime[32]; /* "c", "rust", ... from libferry_it_<runtime>.so */
  char path[1024];
  void* handle;
  ferry_it_export_array_fn export_array;
  ferry_it_check_array_fn check_array;
  ferry_it_export_stream_fn export_stream;
  ferry_it_check_stream_fn check_stream;
  ferry_it_live_allocations_fn live_allocations;
  ferry_it_last_error_fn last_error;
};

/* Loads `path` (RTLD_LOCAL, never unloaded: a Go runtime or a JVM cannot be);
 * 0 on success, else -1 with the reason in `why`. */
int conf_plugin_load(struct conf_plugin* plugin, const char* path, char* why,
                     size_t why_size);
/* The plugin's last error, "(NULL)" when it returns NULL. */
const char* conf_plugin_error(const struct conf_plugin* plugin);

#endif  // FERRY_CONFORMANCE_PLUGIN_H
