/* The `ferry` command-line tool: list devices, inspect and check what a
 * producer exports. Exit codes: 0 clean, 1 findings, 2 usage errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static void print_help(FILE* out) {
  fprintf(
      out,
      "usage: ferry <command> [options]\n"
      "\n"
      "commands:\n"
      "  devices                          list device backends, available or not and "
      "why\n"
      "  inspect LIB.so:SYMBOL            print the schema and device array a producer "
      "exports\n"
      "  inspect --stream LIB.so:SYMBOL   print a stream's schema and every batch\n"
      "  check LIB.so:SYMBOL              check an exported array (structure, device,\n"
      "                                   events, release exactly once)\n"
      "  check --stream LIB.so:SYMBOL     check an exported stream (schema, batches, "
      "end,\n"
      "                                   errors, release)\n"
      "  check --async LIB.so:SYMBOL      check an async producer, int SYMBOL(struct\n"
      "                                   ArrowAsyncDeviceStreamHandler*): six runs as "
      "a\n"
      "                                   demanding consumer (windows 1 and 8, request\n"
      "                                   from inside the callbacks, cancel, a refused\n"
      "                                   task, request(0) and request(-1)); every "
      "broken\n"
      "                                   rule is a finding named async_*; a run waits\n"
      "                                   --timeout seconds (default %d) for the "
      "release\n"
      "  check --plugin LIB.so --case CASE [--stream|--async]\n"
      "                                   check a test plugin's export of CASE "
      "(a plugin\n"
      "                                   exporting the entry points of "
      "ferry/ferry_it.h),\n"
      "                                   including the values (through the C "
      "plugin's checker)\n"
      "  help                             this text\n"
      "  --version                        the tool and library versions\n"
      "\n"
      "options:\n"
      "  --timeout SECONDS   limit for one isolated run (default %d)\n"
      "\n"
      "Producers: int f(struct ArrowSchema*, struct ArrowDeviceArray*), or with "
      "--stream\n"
      "int f(struct ArrowDeviceArrayStream*); they run in a forked child, so a crash or "
      "a\n"
      "hang is reported as a finding (FAIL crash / FAIL timeout), never a tool crash.\n"
      "Output: one line per finding, \"FAIL <rule>: <where>: <what>\", then a summary.\n"
      "Exit status: 0 no findings, 1 findings, 2 usage error (bad arguments, library or\n"
      "symbol not found).\n"
      "Environment: FERRY_IT_C_PLUGIN overrides the C checker plugin's path\n"
      "(default: <tool dir>/../plugins/libferry_it_c.so).\n",
      TOOL_DEFAULT_ASYNC_TIMEOUT_SECONDS, TOOL_DEFAULT_TIMEOUT_SECONDS);
}

static int usage_error(const char* fmt, const char* arg) {
  fprintf(stderr, "ferry: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nrun \"ferry help\" for usage\n");
  return TOOL_EXIT_USAGE;
}

/* Parses a positive number of seconds; -1 when malformed. */
static int parse_seconds(const char* text) {
  char* end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value <= 0 || value > 86400) return -1;
  return (int)value;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    print_help(stderr);
    return TOOL_EXIT_USAGE;
  }
  const char* command = argv[1];
  if (strcmp(command, "--version") == 0 || strcmp(command, "version") == 0) {
    printf("ferry %s (libferry %s, ABI %d)\n", FERRY_VERSION_STRING, ferry_version(),
           (int)ferry_abi_version());
    return TOOL_EXIT_CLEAN;
  }
  if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 ||
      strcmp(command, "-h") == 0) {
    print_help(stdout);
    return TOOL_EXIT_CLEAN;
  }

  int stream = 0;
  int async = 0;
  int timeout_given = 0;
  int timeout_seconds = TOOL_DEFAULT_TIMEOUT_SECONDS;
  const char* plugin = NULL;
  const char* case_spec = NULL;
  const char* target = NULL;
  for (int i = 2; i < argc; i++) {
    const char* arg = argv[i];
    if (strcmp(arg, "--stream") == 0) {
      stream = 1;
    } else if (strcmp(arg, "--async") == 0) {
      async = 1;
    } else if (strcmp(arg, "--timeout") == 0 || strcmp(arg, "--plugin") == 0 ||
               strcmp(arg, "--case") == 0) {
      if (i + 1 >= argc) return usage_error("%s needs a value", arg);
      const char* value = argv[++i];
      if (strcmp(arg, "--timeout") == 0) {
        timeout_seconds = parse_seconds(value);
        timeout_given = 1;
        if (timeout_seconds < 0) {
          return usage_error(
              "--timeout needs a whole number of seconds (1..86400), got \"%s\"", value);
        }
      } else if (strcmp(arg, "--plugin") == 0) {
        plugin = value;
      } else {
        case_spec = value;
      }
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return usage_error("unknown option \"%s\"", arg);
    } else if (target == NULL) {
      target = arg;
    } else {
      return usage_error("unexpected argument \"%s\"", arg);
    }
  }

  if (strcmp(command, "devices") == 0) {
    if (target != NULL || plugin != NULL || case_spec != NULL || stream || async) {
      return usage_error("%s takes no arguments", "devices");
    }
    return tool_cmd_devices();
  }
  if (strcmp(command, "inspect") == 0) {
    if (plugin != NULL || case_spec != NULL) {
      return usage_error("%s does not take --plugin or --case", "inspect");
    }
    if (async) return usage_error("%s does not take --async", "inspect");
    if (target == NULL) return usage_error("%s needs LIB.so:SYMBOL", "inspect");
    return tool_cmd_inspect(target, stream, timeout_seconds);
  }
  if (strcmp(command, "check") == 0) {
    if (async && stream) return usage_error("%s: choose --stream or --async", "check");
    if (plugin != NULL || case_spec != NULL) {
      if (plugin == NULL) return usage_error("%s needs --plugin LIB.so", "--case");
      if (case_spec == NULL) return usage_error("%s needs --case CASE", "--plugin");
      if (target != NULL) {
        return usage_error("unexpected argument \"%s\" with --plugin", target);
      }
      return tool_cmd_check_plugin(plugin, case_spec, stream, async, timeout_seconds);
    }
    if (target == NULL) return usage_error("%s needs LIB.so:SYMBOL", "check");
    if (async) {
      return tool_cmd_check_async(
          target, timeout_given ? timeout_seconds : TOOL_DEFAULT_ASYNC_TIMEOUT_SECONDS);
    }
    return tool_cmd_check(target, stream, timeout_seconds);
  }
  return usage_error("unknown command \"%s\"", command);
}
