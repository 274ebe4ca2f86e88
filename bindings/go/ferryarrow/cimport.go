package ferryarrow

/*
#cgo pkg-config: ferry
#cgo CFLAGS: -I${SRCDIR}/../ferry/include -std=gnu11 -O2
#cgo noescape ferryarrow_validate_take_schema
#include <stdint.h>
#include <string.h>
#include "ferry/ferry.h"

// Validates the plain ArrowArray at `array` (CPU memory) against the schema
// at `schema` at `level` in place, and on success releases the schema (the
// caller has read what it needs from it): one crossing where a validation
// and a release would take two. On failure nothing is touched and the
// finding is not kept (the caller asks again for the message).
static int ferryarrow_validate_take_schema(uintptr_t schema, uintptr_t array, int32_t level) {
  struct ArrowSchema* s = (struct ArrowSchema*)schema;
  if (level != FERRY_VALIDATE_NONE) {
    struct ArrowDeviceArray view;
    memset(&view, 0, sizeof view);
    view.array = *(const struct ArrowArray*)array;
    view.device_type = ARROW_DEVICE_CPU;
    view.device_id = -1;
    struct FerryError error;
    int rc = ferry_validate_device_array(s, &view, level, NULL, NULL, &error);
    if (rc != 0) return rc;
  }
  if (s->release != NULL) s->release(s);
  return 0;
}
*/
import "C"

import (
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// ImportCArray is cdata.ImportCArray with ferry's validation first: it
// takes the plain ArrowArray at array and the ArrowSchema at schema (the C
// data interface, CPU memory; arrow-go's argument order), validates the
// array at ValidateDefault (opts: ValidateFull, which also checks what
// arrow-go trusts: offsets, UTF-8, dictionary indices; ValidateNone) and
// moves it into an arrow.Array; the schema is released. A leaf's type comes
// from a cache of formats (no schema parsing). On a refusal (EINVAL "the
// array fails validation: ...") both structs are untouched and still the
// caller's; on success the array is the caller's to release.
func ImportCArray(array, schema unsafe.Pointer, opts ...Options) (arrow.Field, arrow.Array, error) {
	o, err := options("ImportCArray", opts)
	if err != nil {
		return arrow.Field{}, nil, err
	}
	if array == nil || schema == nil || (*cArray)(array).Release == nil || (*cSchema)(schema).Release == nil {
		return arrow.Field{}, nil, invalid("ImportCArray: NULL or released array or schema")
	}
	v := (*cSchema)(schema)
	if plainLeaf(v) {
		if dt, ok := leafTypes.Load().m[cString(v.Format)]; ok {
			f := arrow.Field{Type: dt, Nullable: v.Flags&int64(ferry.FlagNullable) != 0}
			if v.Name != nil && *(*byte)(v.Name) != 0 {
				f.Name = strings.Clone(cString(v.Name))
			}
			// Validated, and the schema released, in one call.
			if C.ferryarrow_validate_take_schema(C.uintptr_t(uintptr(schema)), C.uintptr_t(uintptr(array)), C.int32_t(o.Validate)) != 0 {
				return arrow.Field{}, nil, ferry.ValidateCArray(array, schema, o.Validate) // the finding, worded
			}
			p, ok, err := planFlat("ImportCArray", dt, (*cArray)(array))
			if err != nil || ok {
				// Past validation the array is taken, whatever comes next
				// (as cdata releases it when its import fails).
				raw := takeRaw()
				*(*cArray)(raw) = *(*cArray)(array) // a move: copy, then mark the source released
				(*cArray)(array).Release = nil
				if err != nil {
					giveRaw(raw) // releases it
					return arrow.Field{}, nil, err
				}
				return f, wrapFlat(dt, raw, nil, p), nil
			}
			var out arrow.Array
			err = contained("ImportCArray", func() (err error) {
				out, err = cdata.ImportCArrayWithType((*cdata.CArrowArray)(array), dt)
				return err
			})
			if err != nil {
				return arrow.Field{}, nil, err
			}
			return f, out, nil
		}
	}
	if err := ferry.ValidateCArray(array, schema, o.Validate); err != nil {
		return arrow.Field{}, nil, err
	}
	key := "" // read before arrow-go releases the schema
	if plainLeaf(v) {
		key = strings.Clone(cString(v.Format))
	}
	var f arrow.Field
	var out arrow.Array
	err = contained("ImportCArray", func() (err error) {
		f, out, err = cdata.ImportCArray((*cdata.CArrowArray)(array), (*cdata.CArrowSchema)(schema))
		return err
	})
	if err == nil && key != "" {
		rememberLeafType(key, f.Type)
	}
	return f, out, err
}
