/* Case lists and the keys the host reads (see case_list.h). */
#include "case_list.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_count(const char* text, int64_t* out) {
  if (text[0] == '\0') return -1;
  for (const char* p = text; *p; p++) {
    if (!isdigit((unsigned char)*p)) return -1;
  }
  errno = 0;
  long long v = strtoll(text, NULL, 10);
  if (errno != 0) return -1;
  *out = v;
  return 0;
}

int it_case_info_parse(const char* spec, struct it_case_info* out, char* message,
                       size_t size) {
  memset(out, 0, sizeof *out);
  snprintf(out->device, sizeof out->device, "cpu");
  out->batches = 3;
  char copy[512];
  if (snprintf(copy, sizeof copy, "%s", spec) >= (int)sizeof copy) {
    snprintf(message, size, "case too long");
    return -1;
  }
  char* save = NULL;
  char* part = strtok_r(copy, ":", &save);
  if (part == NULL) {
    snprintf(message, size, "empty case");
    return -1;
  }
  snprintf(out->type, sizeof out->type, "%s", part);
  while ((part = strtok_r(NULL, ":", &save)) != NULL) {
    char* eq = strchr(part, '=');
    if (eq == NULL) continue; /* malformed: the plugins report it */
    *eq = '\0';
    const char* key = part;
    const char* value = eq + 1;
    if (strcmp(key, "device") == 0) {
      snprintf(out->device, sizeof out->device, "%s", value);
    } else if (strcmp(key, "batches") == 0) {
      if (parse_count(value, &out->batches) != 0) {
        snprintf(message, size, "batches=%s is not a count", value);
        return -1;
      }
    } else if (strcmp(key, "fail") == 0) {
      if (strcmp(value, "export") == 0) {
        out->fail = IT_FAIL_EXPORT;
      } else if (strcmp(value, "get_schema") == 0) {
        out->fail = IT_FAIL_GET_SCHEMA;
      } else if (strncmp(value, "get_next@", 9) == 0 &&
                 parse_count(value + 9, &out->fail_at) == 0 && out->fail_at >= 1) {
        out->fail = IT_FAIL_GET_NEXT;
      } else {
        snprintf(message, size, "unknown failure injection fail=%s", value);
        return -1;
      }
    }
  }
  return 0;
}

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
