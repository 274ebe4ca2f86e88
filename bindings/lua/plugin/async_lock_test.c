/* A test of the Lua plugin's async checker (bindings/lua/test.sh runs it):
 * the checker must not hold the plugin's Lua lock while it waits for its
 * producer. The order that would deadlock a Lua -> Lua pair is made
 * certain here: the checker is started and seen waiting for the schema
 * first, then the producer (the same plugin, whose eager export reads the
 * Lua stream under that lock) is started on this thread. Were the lock
 * held, the export would block forever: alarm() turns that into a failure.
 *   lferry_plugin_async_test PLUGIN.so [CASE]
 * Exit 0 with "ok: ..." on stdout, else 1 (or SIGALRM) with the reason. */
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ferry/ferry.h"
#include "ferry/ferry_it.h"

typedef int (*waits_fn)(void);

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN.so [CASE]\n", argv[0]);
    return 2;
  }
  const char* spec = argc > 2 ? argv[2] : "int32:window=2:batches=5";
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!plugin) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  ferry_it_check_async_fn check_async = (ferry_it_check_async_fn)dlsym(plugin, "ferry_it_check_async");
  ferry_it_export_async_fn export_async = (ferry_it_export_async_fn)dlsym(plugin, "ferry_it_export_async");
  ferry_it_async_result_fn result = (ferry_it_async_result_fn)dlsym(plugin, "ferry_it_async_result");
  ferry_it_last_error_fn last_error = (ferry_it_last_error_fn)dlsym(plugin, "ferry_it_last_error");
  waits_fn waits = (waits_fn)dlsym(plugin, "ferry_it_lua_checker_waits");
  if (!check_async || !export_async || !result || !last_error || !waits) {
    fprintf(stderr, "%s lacks the async entry points or the checker_waits hook\n", argv[1]);
    return 1;
  }
  alarm(60); /* a deadlock ends the test instead of hanging it */
  struct ArrowAsyncDeviceStreamHandler* handler = ferry_async_handler_new();
  void* ticket = NULL;
  int rc = check_async(spec, handler, &ticket);
  if (rc != 0) {
    fprintf(stderr, "ferry_it_check_async(%s): %d: %s\n", spec, rc, last_error());
    return 1;
  }
  /* The checker's thread runs the Lua checker, which asks for the schema
   * and waits: no producer has it yet. */
  while (waits() == 0) sched_yield();
  rc = export_async(spec, handler); /* needs the Lua lock the checker must have let go */
  if (rc != 0) {
    fprintf(stderr, "ferry_it_export_async(%s): %d: %s\n", spec, rc, last_error());
    return 1;
  }
  rc = result(ticket, 30000);
  if (rc != 0) {
    fprintf(stderr, "ferry_it_async_result(%s): %d: %s\n", spec, rc, last_error());
    return 1;
  }
  ferry_async_handler_free(handler); /* released by the producer: the verdict is in */
  printf("ok: Lua -> Lua async %s with the checker waiting first\n", spec);
  return 0;
}
