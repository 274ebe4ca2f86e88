/* Case lists and what the host needs to know about one case.
 *
 * The host does not generate or check values (the plugins do, from the case
 * string alone); it only reads the keys that change what it must assert:
 * the injected failure, the number of batches and the device. */
#ifndef FERRY_IT_HOST_CASE_LIST_H
#define FERRY_IT_HOST_CASE_LIST_H

#include <stddef.h>
#include <stdint.h>

enum it_fail_kind { IT_FAIL_NONE, IT_FAIL_EXPORT, IT_FAIL_GET_SCHEMA, IT_FAIL_GET_NEXT };

struct it_case_info {
  char type[32];
  char device[16];      /* "cpu" when not given */
  int64_t batches;      /* 3 when not given */
  enum it_fail_kind fail;
  int64_t fail_at;      /* N of fail=get_next@N */
};

/* Reads the keys above from `spec` (unknown keys are the plugins' business).
 * Returns 0, or -1 with a reason in `message` when a key the host needs is
 * malformed. */
int it_case_info_parse(const char* spec, struct it_case_info* out, char* message,
                       size_t size);

/* One entry of a case list: a case every producer must export and every
 * consumer must check, or (when `reject_word` is not empty) a case string
 * every producer must refuse with a message containing that word. */
struct it_case_entry {
  char spec[512];
  char reject_word[64];
};

struct it_case_list {
  struct it_case_entry* entries;
  int64_t n;
  int64_t capacity;
};

/* Appends one line of the list syntax: "CASE" or "reject WORD CASE";
 * blank lines and lines starting with '#' are ignored. 0, or -1 with a
 * reason in `message`. */
int it_case_list_add_line(struct it_case_list* list, const char* line, char* message,
                          size_t size);

/* Appends every line of `path`; 0, or -1 with a reason in `message`. */
int it_case_list_add_file(struct it_case_list* list, const char* path, char* message,
                          size_t size);

void it_case_list_free(struct it_case_list* list);

#endif  // FERRY_IT_HOST_CASE_LIST_H
