package ferryarrow

// arrow-go's cdata exports a struct or sparse union array that has an
// offset (a slice) with that offset *and* with children already sliced by
// it (Struct.Field and union Field return sliced arrays), so a consumer,
// which applies the parent's offset to the children as the specification
// says, applies it twice: ferry's validator refuses such arrays (a child
// shorter than its parent's offset + length) and a lenient consumer reads
// the wrong rows. rebase repairs the exported C structs in place before
// ferry takes them: each such child is moved back onto the parent's offset
// (it starts that many elements earlier and is that much longer, which are
// rows of the same buffers), so the export stays zero-copy.

/*
#cgo CFLAGS: -I${SRCDIR}/../ferry/include -std=gnu11 -O2
#include <stddef.h>
#include <string.h>
#include "ferry/arrow_c_device_abi.h"

// Whether a node of this format has children that arrow-go slices by the
// node's offset: struct and sparse union.
static int ferryarrow_slices_children(const char* format) {
  return format != NULL && (strcmp(format, "+s") == 0 || strncmp(format, "+us:", 4) == 0);
}

// Repairs the tree under `a` (described by `s`), whose offset as arrow-go
// exported it is `exported_offset`: each child of a struct or sparse union
// was exported as its data sliced at that offset, so it is moved back by it
// (its null count, which counted the slice, becomes unknown). Children are
// visited with their own offsets as exported (before the repair), which is
// what arrow-go sliced their children by. Depth is bounded by the schema's.
static void ferryarrow_rebase(const struct ArrowSchema* s, struct ArrowArray* a,
                              int64_t exported_offset, int depth) {
  if (s == NULL || a == NULL || depth > 64) return;
  int slices = ferryarrow_slices_children(s->format);
  for (int64_t i = 0; i < a->n_children && i < s->n_children; i++) {
    struct ArrowArray* child = a->children[i];
    if (child == NULL) continue;
    int64_t child_exported = child->offset;
    if (slices && exported_offset > 0 && child->offset >= exported_offset) {
      child->offset -= exported_offset;
      child->length += exported_offset;
      child->null_count = -1;
    }
    ferryarrow_rebase(s->children[i], child, child_exported, depth + 1);
  }
  if (a->dictionary != NULL && s->dictionary != NULL) {
    ferryarrow_rebase(s->dictionary, a->dictionary, a->dictionary->offset, depth + 1);
  }
}

static void ferryarrow_rebase_root(void* schema, void* array) {
  struct ArrowArray* a = (struct ArrowArray*)array;
  ferryarrow_rebase((const struct ArrowSchema*)schema, a, a->offset, 0);
}
*/
import "C"

import "unsafe"

// rebase repairs what arrow-go's cdata exported into the C structs at
// array (an ArrowArray, or the ArrowDeviceArray that begins with one) and
// schema, both live; see the comment at the top of this file.
func rebase(array, schema unsafe.Pointer) {
	C.ferryarrow_rebase_root(schema, array)
}
