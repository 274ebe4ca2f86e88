/* Case lists (see case_list.h). */
#include "case_list.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char* trim(char* s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

int it_case_list_add_line(struct it_case_list* list, const char* line, char* message,
                          size_t size) {
  char buffer[1024];
  snprintf(buffer, sizeof buffer, "%s", line);
  char* text = trim(buffer);
  if (text[0] == '\0' || text[0] == '#') return 0;
  struct it_case_entry entry;
  memset(&entry, 0, sizeof entry);
  if (strncmp(text, "reject ", 7) == 0) {
    char* rest = trim(text + 7);
    char* space = strpbrk(rest, " \t");
    if (space == NULL) {
      snprintf(message, size, "\"%s\": expected \"reject WORD CASE\"", text);
      return -1;
    }
    *space = '\0';
    snprintf(entry.reject_word, sizeof entry.reject_word, "%s", rest);
    snprintf(entry.spec, sizeof entry.spec, "%s", trim(space + 1));
  } else if (strncmp(text, "thread ", 7) == 0) {
    entry.on_new_thread = 1;
    snprintf(entry.spec, sizeof entry.spec, "%s", trim(text + 7));
  } else {
    if (strpbrk(text, " \t") != NULL) {
      snprintf(message, size, "\"%s\": a case has no spaces", text);
      return -1;
    }
    snprintf(entry.spec, sizeof entry.spec, "%s", text);
  }
  if (list->n == list->capacity) {
    int64_t capacity = list->capacity == 0 ? 64 : list->capacity * 2;
    struct it_case_entry* grown =
        (struct it_case_entry*)realloc(list->entries, (size_t)capacity * sizeof *grown);
    if (grown == NULL) {
      snprintf(message, size, "out of memory");
      return -1;
    }
    list->entries = grown;
    list->capacity = capacity;
  }
  list->entries[list->n++] = entry;
  return 0;
}

int it_case_list_add_file(struct it_case_list* list, const char* path, char* message,
                          size_t size) {
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    snprintf(message, size, "cannot open case file %s: %s", path, strerror(errno));
    return -1;
  }
  char line[1024];
  int64_t number = 0;
  int rc = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    number++;
    char why[512];
    if (it_case_list_add_line(list, line, why, sizeof why) != 0) {
      snprintf(message, size, "%s:%lld: %s", path, (long long)number, why);
      rc = -1;
      break;
    }
  }
  fclose(f);
  return rc;
}

void it_case_list_free(struct it_case_list* list) {
  free(list->entries);
  memset(list, 0, sizeof *list);
}
