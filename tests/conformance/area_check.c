/* Area 5: the plugin's checkers. They must accept correct data made by the C
 * reference (and release it), and reject tampered data (and release it). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "areas.h"
#include "release_watch.h"
#include "struct_fill.h"
#include "verify.h"

enum tamper_kind {
  TAMPER_NONE,         /* the data is correct for another case */
  TAMPER_VALUE,        /* flip bit 0 of a non-null value (element >= 1) */
  TAMPER_VALIDITY_ON,  /* a null element becomes valid */
  TAMPER_VALIDITY_OFF, /* a valid element becomes null */
  TAMPER_NULL_COUNT,   /* null_count + 1 */
  TAMPER_LENGTH,       /* length - 1 */
  TAMPER_FORMAT,       /* another format string (through a proxy schema) */
  TAMPER_DEVICE,       /* device_type relabelled */
  TAMPER_LIST_CHILD,   /* flip a bit of a list item */
  TAMPER_STRUCT_A,     /* flip a bit of child "a" */
  TAMPER_STRUCT_B,     /* flip a byte of child "b" */
  TAMPER_DICT_VALUE,   /* "d3" becomes "d2" in the dictionary */
  TAMPER_DICT_INDEX,   /* an index moves to the next dictionary entry */
  TAMPER_CHILD_NULLS,  /* the first child (or the dictionary) claims a null */
  TAMPER_LIST_OFFSET,  /* one inner list offset + 1 (two lists change length) */
  TAMPER_DICT_LENGTH,  /* the dictionary loses its last entry */
  /* Harmless: cases.md leaves these bytes unspecified; checkers must accept. */
  TAMPER_NULL_SLOT,  /* the value bytes of a null element change */
  TAMPER_PRE_OFFSET, /* value and validity of physical slot 0 change (offset > 0) */
};

static const char* apply_tamper(enum tamper_kind kind, const char* format,
                                const struct it_case* c, struct ArrowSchema* schema,
                                struct ArrowDeviceArray* darr, char* done, size_t size);

/* --- accepting correct data --------------------------------------------- */

/* Hands `schema`+`array` (watched) to the plugin's check_array and checks
 * ownership; returns the checker's code. */
static int hand_array(struct test* t, const char* check_case, struct ArrowSchema* schema,
                      struct ArrowDeviceArray* array) {
  int rc = t->suite->ut.check_array(check_case, schema, array);
  if (schema->release != NULL || array->array.release != NULL) {
    test_fail(t,
              "check_array did not take ownership: %s left live (it must release on "
              "success and on failure)",
              schema->release != NULL ? "the schema was" : "the array was");
    ferry_schema_release(schema);
    ferry_device_array_release(array);
  }
  return rc;
}

static int hand_stream(struct test* t, const char* check_case,
                       struct ArrowDeviceArrayStream* stream) {
  int rc = t->suite->ut.check_stream(check_case, stream);
  if (stream->release != NULL) {
    test_fail(t, "check_stream did not take ownership: the stream was left live");
    ferry_array_stream_release(stream);
  }
  return rc;
}

/* A stream that forwards to a C reference stream, watches the release of
 * every schema and batch it hands out (so a checker that never releases them
 * is named precisely), and optionally damages one batch. */
struct stream_proxy {
  struct ArrowDeviceArrayStream inner;
  struct it_case c;
  int64_t calls;
  int64_t schemas;
  int64_t damaged_batch; /* -1: none */
};

static int proxy_get_schema(struct ArrowDeviceArrayStream* self,
                            struct ArrowSchema* out) {
  struct stream_proxy* p = self->private_data;
  int rc = p->inner.get_schema(&p->inner, out);
  if (rc == 0 && out->release != NULL) {
    char where[64];
    snprintf(where, sizeof where, "from get_schema call %lld", (long long)++p->schemas);
    it_watch_schema(out, where);
  }
  return rc;
}

static int proxy_get_next(struct ArrowDeviceArrayStream* self,
                          struct ArrowDeviceArray* out) {
  struct stream_proxy* p = self->private_data;
  int rc = p->inner.get_next(&p->inner, out);
  if (rc == 0 && out->array.release != NULL) {
    int64_t b = p->calls++;
    if (b == p->damaged_batch) {
      ferry_device_array_wait(out, NULL, NULL);
      char done[128];
      struct it_case batch_case = p->c;
      batch_case.seed = p->c.seed + (uint32_t)p->damaged_batch;
      apply_tamper(TAMPER_VALUE, NULL, &batch_case, NULL, out, done, sizeof done);
    }
    char where[64];
    snprintf(where, sizeof where, "(batch %lld from get_next)", (long long)b);
    it_watch_array(&out->array, where);
  }
  return rc;
}

static const char* proxy_get_last_error(struct ArrowDeviceArrayStream* self) {
  struct stream_proxy* p = self->private_data;
  return p->inner.get_last_error(&p->inner);
}

static void proxy_stream_release(struct ArrowDeviceArrayStream* self) {
  struct stream_proxy* p = self->private_data;
  p->inner.release(&p->inner);
  free(p);
  self->release = NULL;
}

/* Replaces `stream` (live) by a proxy that owns it; 0 or ENOMEM (then
 * `stream` is untouched). */
static int proxy_stream(struct ArrowDeviceArrayStream* stream, const struct it_case* c,
                        int64_t damaged_batch) {
  struct stream_proxy* p = calloc(1, sizeof *p);
  if (p == NULL) return ENOMEM;
  p->inner = *stream;
  p->c = *c;
  p->damaged_batch = damaged_batch;
  it_fill_stream(stream, stream->device_type, proxy_get_schema, proxy_get_next,
                 proxy_get_last_error, proxy_stream_release, p);
  return 0;
}

void run_check_array(struct suite* s, const char* case_text) {
  struct test t;
  struct it_allocations before;
  test_start(&t, s, "check", case_text, NULL, NULL, &before);
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  if (export_array_or_end(&t, &s->ref, case_text, &schema, &array) != 0) return;
  int group = watch_export(&schema, &array);
  int rc = hand_array(&t, case_text, &schema, &array);
  if (rc != 0) {
    test_fail(&t, "check_array rejects correct C reference data with %s: %s",
              ferry_errno_name(rc), it_plugin_error(&s->ut));
  }
  test_finish(&t, group, &before, "after check_array");
}

void run_check_stream(struct suite* s, const char* case_text) {
  struct test t;
  struct it_allocations before;
  test_start(&t, s, "check-stream", case_text, NULL, NULL, &before);
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  int rc = s->ref.export_stream(case_text, &stream);
  if (rc != 0) {
    test_fail(&t, "the C reference cannot export it (%s): %s", ferry_errno_name(rc),
              it_plugin_error(&s->ref));
    test_end(&t);
    return;
  }
  struct it_case c;
  if (suite_parse(&t, case_text, &c) != 0 || proxy_stream(&stream, &c, -1) != 0) {
    ferry_array_stream_release(&stream);
    test_end(&t);
    return;
  }
  int group = watch_stream(&stream);
  rc = hand_stream(&t, case_text, &stream);
  if (rc != 0) {
    test_fail(&t, "check_stream rejects a correct C reference stream with %s: %s",
              ferry_errno_name(rc), it_plugin_error(&s->ut));
  }
  test_finish(&t, group, &before, "after check_stream");
}

/* --- tampering ------------------------------------------------------------ */

struct array_tamper {
  const char* export_case;
  const char* check_case; /* NULL: the export_case itself */
  enum tamper_kind kind;
  const char* format; /* TAMPER_FORMAT */
  const char* what;
  int must_accept; /* the change touches unspecified bytes only */
};

static const struct array_tamper k_array_tampers[] = {
    {"int32", NULL, TAMPER_VALUE, NULL, "one value bit flipped", 0},
    {"int32:nulls=3:offset=5", NULL, TAMPER_VALUE, NULL,
     "one value bit flipped behind an offset", 0},
    {"int8:nulls=2:offset=13:length=40", NULL, TAMPER_VALUE, NULL,
     "int8 value bit flipped", 0},
    {"uint16:seed=4294967295", NULL, TAMPER_VALUE, NULL, "uint16 value", 0},
    {"int64", NULL, TAMPER_VALUE, NULL, "low word of an int64 (the u(i+1) half)", 0},
    {"uint64:offset=1", NULL, TAMPER_VALUE, NULL, "low word of a uint64", 0},
    {"float32", NULL, TAMPER_VALUE, NULL, "float32 mantissa LSB (bit-exact compare)", 0},
    {"float64:nulls=7", NULL, TAMPER_VALUE, NULL, "float64 mantissa LSB", 0},
    {"bool", NULL, TAMPER_VALUE, NULL, "one bool bit", 0},
    {"bool:offset=5:nulls=3", NULL, TAMPER_VALUE, NULL, "one bool bit behind an offset",
     0},
    {"utf8", NULL, TAMPER_VALUE, NULL, "one utf8 byte", 0},
    {"binary:offset=1:nulls=2", NULL, TAMPER_VALUE, NULL, "one binary byte", 0},
    {"int32:nulls=3", NULL, TAMPER_VALIDITY_ON, NULL, "a null made valid", 0},
    {"int32:nulls=3", NULL, TAMPER_VALIDITY_OFF, NULL, "a valid element made null", 0},
    {"utf8:nulls=2:offset=5", NULL, TAMPER_VALIDITY_ON, NULL,
     "a null made valid behind an offset", 0},
    {"int32:nulls=3", NULL, TAMPER_NULL_COUNT, NULL, "null_count + 1", 0},
    {"int32", NULL, TAMPER_NULL_COUNT, NULL, "null_count 1 without a bitmap", 0},
    {"int32", NULL, TAMPER_LENGTH, NULL, "length - 1", 0},
    {"int32", NULL, TAMPER_FORMAT, "I", "format \"I\" instead of \"i\"", 0},
    {"utf8", NULL, TAMPER_FORMAT, "z", "format \"z\" instead of \"u\"", 0},
    {"list_int32", NULL, TAMPER_FORMAT, "+L", "format \"+L\" instead of \"+l\"", 0},
    {"int32", NULL, TAMPER_DEVICE, NULL, "a CPU array labelled sim", 0},
    {"int32:device=sim", NULL, TAMPER_VALUE, NULL, "one value bit on sim", 0},
    {"utf8:device=sim:nulls=3", NULL, TAMPER_VALIDITY_ON, NULL,
     "a null made valid on sim", 0},
    {"list_int32", NULL, TAMPER_LIST_CHILD, NULL, "one list item bit", 0},
    {"list_int32:offset=5:nulls=3", NULL, TAMPER_LIST_CHILD, NULL,
     "one list item bit behind an offset", 0},
    {"struct_int32_utf8", NULL, TAMPER_STRUCT_A, NULL, "child a bit", 0},
    {"struct_int32_utf8:offset=5:nulls=3", NULL, TAMPER_STRUCT_A, NULL,
     "child a bit at position i + offset", 0},
    {"struct_int32_utf8:offset=5", NULL, TAMPER_STRUCT_B, NULL,
     "child b byte at position i + offset", 0},
    {"dict_int32_utf8", NULL, TAMPER_DICT_VALUE, NULL, "dictionary \"d3\" -> \"d2\"", 0},
    {"dict_int32_utf8:offset=13:nulls=2", NULL, TAMPER_DICT_INDEX, NULL, "one index", 0},
    {"list_int32", NULL, TAMPER_CHILD_NULLS, NULL, "the list child claims a null", 0},
    {"struct_int32_utf8", NULL, TAMPER_CHILD_NULLS, NULL, "struct child a claims a null",
     0},
    {"dict_int32_utf8", NULL, TAMPER_CHILD_NULLS, NULL, "the dictionary claims a null",
     0},
    {"list_int32:seed=7", NULL, TAMPER_LIST_OFFSET, NULL, "one list offset moved", 0},
    {"dict_int32_utf8", NULL, TAMPER_DICT_LENGTH, NULL, "dictionary of 6 entries", 0},
    {"int32:nulls=3:offset=5", NULL, TAMPER_NULL_SLOT, NULL,
     "bytes of a null slot changed (must be accepted)", 1},
    {"float64:nulls=2", NULL, TAMPER_NULL_SLOT, NULL,
     "bytes of a null float64 slot changed (must be accepted)", 1},
    {"dict_int32_utf8:nulls=2", NULL, TAMPER_NULL_SLOT, NULL,
     "index of a null slot changed (must be accepted)", 1},
    {"int32:offset=5:nulls=3", NULL, TAMPER_PRE_OFFSET, NULL,
     "value and validity before the offset changed (must be accepted)", 1},
    {"bool:offset=13", NULL, TAMPER_PRE_OFFSET, NULL,
     "a bool before the offset changed (must be accepted)", 1},
    {"int32:seed=2", "int32", TAMPER_NONE, NULL, "seed 2 handed as seed 1", 0},
    {"int32:seed=0", "int32:seed=4294967295", TAMPER_NONE, NULL,
     "seed 0 handed as 4294967295", 0},
    {"utf8:seed=2", "utf8", TAMPER_NONE, NULL, "utf8 seed 2 handed as seed 1", 0},
    {"struct_int32_utf8:seed=2", "struct_int32_utf8:seed=1", TAMPER_NONE, NULL,
     "struct seed 2 handed as seed 1 (child b seeds 3 vs 2)", 0},
    {"int32:offset=1", "int32", TAMPER_NONE, NULL, "offset 1 handed as offset 0", 0},
    {"int32:length=15", "int32", TAMPER_NONE, NULL, "length 15 handed as 16", 0},
    {"int32:nulls=4", "int32:nulls=3", TAMPER_NONE, NULL, "nulls 4 handed as nulls 3", 0},
    {"int32:nulls=3", "int32", TAMPER_NONE, NULL, "nulls 3 handed as nulls 0", 0},
    {"int64", "int32", TAMPER_NONE, NULL, "int64 handed as int32", 0},
    {"uint32", "int32", TAMPER_NONE, NULL, "uint32 handed as int32", 0},
    {"binary", "utf8", TAMPER_NONE, NULL, "binary handed as utf8", 0},
    {"int32:device=sim", "int32", TAMPER_NONE, NULL, "a sim array handed as cpu", 0},
    {"int32", "int32:device=sim", TAMPER_NONE, NULL, "a cpu array handed as sim", 0},
};

static unsigned char* buffer(struct ArrowArray* a, int i) {
  return (unsigned char*)(uintptr_t)a->buffers[i];
}

static void flip_bit(unsigned char* bytes, int64_t position) {
  bytes[position >> 3] ^= (unsigned char)(1u << (position & 7));
}

/* The first logical element >= 1 that is non-null (and non-empty for
 * utf8, non-empty list for lists) or, with want_null, the first null. */
static int64_t pick_element(const struct it_case* c, int want_null, int need_text,
                            int need_items) {
  for (int64_t i = 1; i < c->length; i++) {
    if (conf_is_null(c->nulls, i) != want_null) continue;
    if (need_text && i % 5 == 0) continue;
    if (need_items && conf_u(c->seed, (uint64_t)i) % 4u == 0) continue;
    return i;
  }
  return -1;
}

/* A schema whose format differs; it owns the original (moved in). */
struct schema_proxy {
  struct ArrowSchema inner;
  char format[8];
};

static void proxy_schema_release(struct ArrowSchema* schema) {
  struct schema_proxy* proxy = schema->private_data;
  proxy->inner.release(&proxy->inner);
  free(proxy);
  schema->release = NULL;
}

static int proxy_schema(struct ArrowSchema* schema, const char* format) {
  struct schema_proxy* proxy = calloc(1, sizeof *proxy);
  if (proxy == NULL) return ENOMEM;
  proxy->inner = *schema;
  snprintf(proxy->format, sizeof proxy->format, "%s", format);
  schema->format = proxy->format;
  schema->private_data = proxy;
  schema->release = proxy_schema_release;
  return 0;
}

/* Applies `kind` to a waited-on export of case `c`; returns a description of
 * what was changed, or NULL when the case gives nothing to tamper with. */
static const char* apply_tamper(enum tamper_kind kind, const char* format,
                                const struct it_case* c, struct ArrowSchema* schema,
                                struct ArrowDeviceArray* darr, char* done, size_t size) {
  struct ArrowArray* a = &darr->array;
  int64_t off = c->offset;
  enum conf_layout layout = conf_type_layout(c->type);
  int64_t e;
  switch (kind) {
    case TAMPER_NONE:
      snprintf(done, size, "nothing changed");
      return done;
    case TAMPER_VALUE:
      e = pick_element(c, 0, layout == LAYOUT_VARBIN, 0);
      if (e < 0) return NULL;
      if (layout == LAYOUT_FIXED) {
        buffer(a, 1)[(e + off) * conf_type_width(c->type)] ^= 1u;
      } else if (layout == LAYOUT_BOOL) {
        flip_bit(buffer(a, 1), e + off);
      } else if (layout == LAYOUT_VARBIN) {
        const int32_t* offsets = a->buffers[1];
        buffer(a, 2)[offsets[e + off]] ^= 1u;
      } else {
        return NULL;
      }
      snprintf(done, size, "element %lld (physical %lld) changed", (long long)e,
               (long long)(e + off));
      return done;
    case TAMPER_VALIDITY_ON:
    case TAMPER_VALIDITY_OFF:
      e = pick_element(c, kind == TAMPER_VALIDITY_ON, 0, 0);
      if (e < 0 || a->buffers[0] == NULL) return NULL;
      flip_bit(buffer(a, 0), e + off);
      snprintf(done, size, "validity bit of element %lld flipped", (long long)e);
      return done;
    case TAMPER_NULL_COUNT:
      a->null_count += 1;
      snprintf(done, size, "null_count %lld", (long long)a->null_count);
      return done;
    case TAMPER_LENGTH:
      a->length -= 1;
      snprintf(done, size, "length %lld", (long long)a->length);
      return done;
    case TAMPER_FORMAT:
      if (proxy_schema(schema, format) != 0) return NULL;
      snprintf(done, size, "format \"%s\"", format);
      return done;
    case TAMPER_DEVICE:
      darr->device_type = ARROW_DEVICE_EXT_DEV;
      darr->device_id = 0;
      snprintf(done, size, "device_type sim");
      return done;
    case TAMPER_LIST_CHILD: {
      e = pick_element(c, 0, 0, 1);
      if (e < 0) return NULL;
      const int32_t* offsets = a->buffers[1];
      int64_t j = offsets[e + off];
      buffer(a->children[0], 1)[j * 4] ^= 1u;
      snprintf(done, size, "item %lld of list %lld changed", (long long)j, (long long)e);
      return done;
    }
    case TAMPER_STRUCT_A:
      e = pick_element(c, 0, 0, 0);
      if (e < 0) return NULL;
      buffer(a->children[0], 1)[(e + off) * 4] ^= 1u;
      snprintf(done, size, "child a at position %lld changed", (long long)(e + off));
      return done;
    case TAMPER_STRUCT_B: {
      e = pick_element(c, 0, 1, 0);
      if (e < 0) return NULL;
      const int32_t* offsets = a->children[1]->buffers[1];
      buffer(a->children[1], 2)[offsets[e + off]] ^= 1u;
      snprintf(done, size, "child b at position %lld changed", (long long)(e + off));
      return done;
    }
    case TAMPER_DICT_VALUE: {
      const int32_t* offsets = a->dictionary->buffers[1];
      buffer(a->dictionary, 2)[offsets[3] + 1] ^= 1u;
      snprintf(done, size, "dictionary entry 3 changed");
      return done;
    }
    case TAMPER_CHILD_NULLS: {
      struct ArrowArray* child = layout == LAYOUT_DICT ? a->dictionary : a->children[0];
      child->null_count = 1;
      snprintf(done, size, "child null_count 1");
      return done;
    }
    case TAMPER_LIST_OFFSET: {
      e = pick_element(c, 0, 0, 0);
      if (e < 0 || e + 1 >= c->length) return NULL;
      int32_t* offsets = (int32_t*)(void*)buffer(a, 1);
      /* Stays monotone only when list e + 1 is not empty. */
      if (offsets[e + off + 2] <= offsets[e + off + 1]) return NULL;
      offsets[e + off + 1] += 1;
      snprintf(done, size, "offsets[%lld] + 1", (long long)(e + off + 1));
      return done;
    }
    case TAMPER_DICT_LENGTH:
      a->dictionary->length -= 1;
      snprintf(done, size, "dictionary length %lld", (long long)a->dictionary->length);
      return done;
    case TAMPER_NULL_SLOT: {
      e = pick_element(c, 1, 0, 0);
      if (e < 0) return NULL;
      int width = layout == LAYOUT_DICT ? 4 : conf_type_width(c->type);
      if (layout != LAYOUT_FIXED && layout != LAYOUT_DICT) return NULL;
      unsigned char* slot = buffer(a, 1) + (e + off) * width;
      if (layout == LAYOUT_DICT) {
        int32_t* index = (int32_t*)(void*)slot;
        *index = (*index + 1) % 7; /* stays a valid index */
      } else {
        for (int k = 0; k < width; k++) slot[k] ^= 0x5Au;
      }
      snprintf(done, size, "null element %lld (physical %lld) changed", (long long)e,
               (long long)(e + off));
      return done;
    }
    case TAMPER_PRE_OFFSET:
      if (off == 0) return NULL;
      if (layout == LAYOUT_FIXED) {
        for (int k = 0; k < conf_type_width(c->type); k++) buffer(a, 1)[k] ^= 0x5Au;
      } else if (layout == LAYOUT_BOOL) {
        flip_bit(buffer(a, 1), 0);
      } else {
        return NULL;
      }
      if (a->buffers[0] != NULL) flip_bit(buffer(a, 0), 0);
      snprintf(done, size, "physical slot 0 changed");
      return done;
    case TAMPER_DICT_INDEX: {
      e = pick_element(c, 0, 0, 0);
      if (e < 0) return NULL;
      int32_t* indices = (int32_t*)(void*)buffer(a, 1);
      indices[e + off] = (indices[e + off] + 1) % 7;
      snprintf(done, size, "index of element %lld changed", (long long)e);
      return done;
    }
  }
  return NULL;
}

static void tamper_array(struct suite* s, const struct array_tamper* tamper) {
  struct test t;
  const char* check_case =
      tamper->check_case != NULL ? tamper->check_case : tamper->export_case;
  char label[700];
  snprintf(label, sizeof label, "%s[%s]", check_case, tamper->what);
  test_begin(&t, s, "tamper", label);
  struct it_case exported, expected;
  if (suite_parse(&t, tamper->export_case, &exported) != 0 ||
      suite_parse(&t, check_case, &expected) != 0) {
    test_end(&t);
    return;
  }
  struct it_allocations before;
  baseline_take(s, &before);
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int rc = s->ref.export_array(tamper->export_case, &schema, &array);
  if (rc != 0) {
    test_fail(&t, "the C reference cannot export %s: %s", tamper->export_case,
              it_plugin_error(&s->ref));
    test_end(&t);
    return;
  }
  /* Tamper only after the producer's copies are complete. */
  struct FerryError error;
  ferry_error_init(&error);
  if (ferry_device_array_wait(&array, NULL, &error) != 0) {
    test_fail(&t, "waiting on the C export failed: %s", ferry_error_message(&error));
  }
  char done[256];
  if (apply_tamper(tamper->kind, tamper->format, &exported, &schema, &array, done,
                   sizeof done) == NULL) {
    test_fail(&t, "suite bug: nothing to tamper with in %s", tamper->export_case);
    ferry_schema_release(&schema);
    ferry_device_array_release(&array);
    test_end(&t);
    return;
  }
  /* The suite's own checker must see the damage, or the tamper proves nothing. */
  char why[1024];
  int own_accepts = verify_schema(&expected, &schema, why, sizeof why) == 0 &&
                    verify_device_array(&expected, expected.seed, &schema, &array, why,
                                        sizeof why) == 0;
  if (own_accepts == !tamper->must_accept) {
    test_fail(&t, "suite bug: its own verifier %s the changed data (%s)%s%s",
              own_accepts ? "accepts" : "rejects", done, own_accepts ? "" : ": ",
              own_accepts ? "" : why);
  }
  int group = watch_export(&schema, &array);
  rc = hand_array(&t, check_case, &schema, &array);
  if (tamper->must_accept) {
    if (rc != 0) {
      test_fail(&t,
                "check_array rejects data that differs only in bytes cases.md leaves "
                "unspecified (%s) with %s: %s",
                done, ferry_errno_name(rc), it_plugin_error(&s->ut));
    }
  } else if (rc == 0) {
    test_fail(&t, "check_array accepted tampered data (%s)", done);
  } else {
    const char* m = s->ut.last_error();
    if (m == NULL || m[0] == '\0')
      test_fail(&t, "check_array rejected it without a message");
    if (s->verbose) printf("  rejected with %s: %s\n", ferry_errno_name(rc), m ? m : "");
  }
  test_finish(&t, group, &before, "after check_array");
}

struct stream_tamper {
  const char* export_case;
  const char* check_case;
  int64_t damaged_batch; /* -1: none */
  const char* what;
};

static const struct stream_tamper k_stream_tampers[] = {
    {"int32:batches=4", "int32:batches=3", -1, "4 batches handed as 3"},
    {"int32:batches=2", "int32:batches=3", -1, "2 batches handed as 3"},
    {"int32:batches=1", "int32:batches=0", -1, "1 batch handed as 0"},
    {"int32:seed=2", "int32", -1, "seed 2 handed as seed 1"},
    {"int64", "int32", -1, "int64 handed as int32"},
    {"int32:device=sim", "int32", -1, "a sim stream handed as cpu"},
    {"int32", "int32:fail=get_next@2", -1, "the expected get_next failure never comes"},
    {"int32:fail=get_next@2", "int32", -1, "an unexpected get_next failure"},
    {"int32:fail=get_next@3", "int32:fail=get_next@2", -1,
     "the failure comes one call late"},
    {"int32", "int32:fail=get_schema", -1, "the expected get_schema failure never comes"},
    {"int32:fail=get_schema", "int32", -1, "an unexpected get_schema failure"},
    {"int32:nulls=3:batches=3", "int32:nulls=3:batches=3", 1,
     "a value bit flipped in batch 1"},
    {"utf8:batches=3:device=sim", "utf8:batches=3:device=sim", 2,
     "a utf8 byte flipped in the last batch, on sim"},
};

static void tamper_stream(struct suite* s, const struct stream_tamper* tamper) {
  struct test t;
  char label[700];
  snprintf(label, sizeof label, "%s[%s]", tamper->check_case, tamper->what);
  test_begin(&t, s, "tamper-stream", label);
  struct it_case exported;
  if (suite_parse(&t, tamper->export_case, &exported) != 0) {
    test_end(&t);
    return;
  }
  struct it_allocations before;
  baseline_take(s, &before);
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  int rc = s->ref.export_stream(tamper->export_case, &stream);
  if (rc != 0) {
    test_fail(&t, "the C reference cannot export %s: %s", tamper->export_case,
              it_plugin_error(&s->ref));
    test_end(&t);
    return;
  }
  if (proxy_stream(&stream, &exported, tamper->damaged_batch) != 0) {
    ferry_array_stream_release(&stream);
    test_fail(&t, "out of memory");
    test_end(&t);
    return;
  }
  int group = watch_stream(&stream);
  rc = hand_stream(&t, tamper->check_case, &stream);
  if (rc == 0) {
    test_fail(&t, "check_stream accepted it (%s)", tamper->what);
  } else {
    const char* m = s->ut.last_error();
    if (m == NULL || m[0] == '\0')
      test_fail(&t, "check_stream rejected it without a message");
    if (s->verbose) printf("  rejected with %s: %s\n", ferry_errno_name(rc), m ? m : "");
  }
  test_finish(&t, group, &before, "after check_stream");
}

void run_tampering(struct suite* s) {
  for (size_t k = 0; k < sizeof k_array_tampers / sizeof k_array_tampers[0]; k++) {
    tamper_array(s, &k_array_tampers[k]);
  }
  for (size_t k = 0; k < sizeof k_stream_tampers / sizeof k_stream_tampers[0]; k++) {
    tamper_stream(s, &k_stream_tampers[k]);
  }
}
