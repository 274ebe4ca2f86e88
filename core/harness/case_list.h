/* Case lists: the cases a host runs, one per line of a case file
 * (tests/integration/cases.txt) or per --case argument. The keys of each
 * case are read with case_spec.h. */
#ifndef FERRY_HARNESS_CASE_LIST_H
#define FERRY_HARNESS_CASE_LIST_H

#include <stddef.h>
#include <stdint.h>

/* One entry of a case list: a case every producer must export and every
 * consumer must check, or (when `reject_word` is not empty) a case string
 * every producer must refuse with a message containing that word. Lines:
 *   CASE               e.g. int32:nulls=3
 *   reject WORD CASE   e.g. reject lenght int32:lenght=3
 *   thread CASE        the whole handoff on a new thread, one the runtimes
 *                      have never seen (they must attach it themselves) */
struct it_case_entry {
  char spec[512];
  char reject_word[64];
  int on_new_thread;
};

struct it_case_list {
  struct it_case_entry* entries;
  int64_t n;
  int64_t capacity;
};

/* Appends one line of the list syntax above; blank lines and lines
 * starting with '#' are ignored. 0, or -1 with a
 * reason in `message`. */
int it_case_list_add_line(struct it_case_list* list, const char* line, char* message,
                          size_t size);

/* Appends every line of `path`; 0, or -1 with a reason in `message`. */
int it_case_list_add_file(struct it_case_list* list, const char* path, char* message,
                          size_t size);

void it_case_list_free(struct it_case_list* list);

#endif  // FERRY_HARNESS_CASE_LIST_H
