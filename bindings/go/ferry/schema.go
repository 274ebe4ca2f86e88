package ferry

/*
// Go strings are passed for the duration of the call only, and the helper
// never calls back into Go.
#cgo noescape ferrygo_schema_fill
#cgo nocallback ferrygo_schema_fill
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/abi"
)

// Schema is an ArrowSchema in C memory. An owned Schema (from ImportSchema,
// Field.Export or a stream) must be released with Release; a borrowed one
// (a child, a dictionary, the schema attached to a stream batch) lives as long
// as its owner and its Release does nothing.
type Schema struct {
	c     *C.struct_ArrowSchema
	owned bool
	// embedded: held in a DeviceArray's own slot, under the array's guard
	// (never tracked itself).
	embedded bool
	guard    leakGuard // owned schemas only (see guard.go)
	leak     int64     // the core's leak-report token (ImportSchema's), 0 when untracked
}

// newOwnedSchema wraps a C-allocated schema that the Go object now owns; the
// safety net releases it if the user forgets, and reports the leak.
func newOwnedSchema(c *C.struct_ArrowSchema) *Schema {
	return newTrackedSchema(c, 0)
}

// newTrackedSchema is newOwnedSchema holding the leak-report token leak.
func newTrackedSchema(c *C.struct_ArrowSchema, leak int64) *Schema {
	s := &Schema{c: c, owned: true, leak: leak}
	track(s)
	return s
}

type schemaMemory struct {
	c    *C.struct_ArrowSchema
	leak int64
}

func (s *Schema) guardState() *leakGuard { return &s.guard }

func (s *Schema) addCleanup() runtime.Cleanup {
	return runtime.AddCleanup(s, func(m schemaMemory) {
		reportLeak("Schema")
		leakUntrack(m.leak)
		C.ferry_schema_free(m.c)
	}, schemaMemory{s.c, s.leak})
}

// ImportSchema takes ownership of the live ArrowSchema at ptr (moving it out
// and leaving ptr released); the caller releases the result.
func ImportSchema(ptr unsafe.Pointer) (*Schema, error) {
	return importSchema(ptr, leakReportOn)
}

// importSchema is ImportSchema, registered with the leak report when
// leakTracked (not for a schema an array takes along: the array's line
// covers it).
func importSchema(ptr unsafe.Pointer, leakTracked bool) (*Schema, error) {
	src := (*C.struct_ArrowSchema)(ptr)
	if src == nil || abiSchema(src).Release == nil {
		return nil, errorf(syscall.EINVAL, "ImportSchema: NULL or released schema")
	}
	c := newSchemaStruct()
	if c == nil {
		return nil, errorf(syscall.ENOMEM, "ImportSchema: out of memory")
	}
	// Moved in Go (both structs are C memory; a move is a copy that marks
	// the source released), without a cgo call.
	*abiSchema(c) = *abiSchema(src)
	abiSchema(src).Release = nil
	var leak int64
	if leakTracked {
		leak = leakTrack(fmt.Sprintf("Schema from ImportSchema never released (format %q)", cString((*C.char)(abiSchema(c).Format), maxFormat)))
	}
	return newTrackedSchema(c, leak), nil
}

// Release releases an owned schema (calling its release callback) and frees
// it; harmless when called twice and on borrowed schemas.
func (s *Schema) Release() {
	if s == nil || !s.owned || s.c == nil {
		return
	}
	s.guard.disarm()
	leakUntrack(s.leak)
	s.leak = 0
	if abiSchema(s.c).Release != nil { // moved out (ExportTo) needs no call
		C.ferry_schema_release(s.c)
	}
	recycleSchema(s.c)
	s.c = nil
}

// spareSchema holds one released ArrowSchema struct (C memory) for the next
// import, as spareArray does for arrays: a consumer that imports and
// releases schemas one after another allocates and frees nothing.
var spareSchema atomic.Pointer[C.struct_ArrowSchema]

// newSchemaStruct returns a released ArrowSchema struct in C memory (nil
// when out of memory).
func newSchemaStruct() *C.struct_ArrowSchema {
	if c := spareSchema.Swap(nil); c != nil {
		return c
	}
	return C.ferry_schema_new()
}

// recycleSchema keeps the released struct c as the spare.
func recycleSchema(c *C.struct_ArrowSchema) {
	if old := spareSchema.Swap(c); old != nil {
		C.ferry_schema_free(old)
	}
}

// ExportTo moves an owned schema into the released ArrowSchema at dst (a
// consumer's struct); s is left released.
func (s *Schema) ExportTo(dst unsafe.Pointer) error {
	if s == nil || s.c == nil || !s.owned {
		return errorf(syscall.EINVAL, "Schema.ExportTo: schema is released or borrowed")
	}
	if dst == nil {
		return errorf(syscall.EINVAL, "Schema.ExportTo: NULL destination")
	}
	// Moved in Go (both structs are C memory), without a cgo call.
	out := (*C.struct_ArrowSchema)(dst)
	if abiSchema(out).Release != nil {
		return errorf(syscall.EINVAL, "Schema.ExportTo: destination is not released")
	}
	*abiSchema(out) = *abiSchema(s.c)
	abiSchema(s.c).Release = nil
	s.Release()
	return nil
}

// Ptr returns the address of the ArrowSchema (valid while s is live), for
// passing to other C code or to arrow-go's cdata.
func (s *Schema) Ptr() unsafe.Pointer { return unsafe.Pointer(s.c) }

// IsReleased reports whether the schema is gone (released, moved or nil).
func (s *Schema) IsReleased() bool {
	return s == nil || s.c == nil || abiSchema(s.c).Release == nil
}

// fields reads the schema's fields from C memory without a cgo call; a
// schema without its struct reads as all zero (as the core's accessors
// answer for NULL).
func (s *Schema) fields() *abi.ArrowSchema {
	if s.c == nil {
		return &noSchema
	}
	return abiSchema(s.c)
}

var noSchema abi.ArrowSchema // read only

func (s *Schema) Format() string     { return C.GoString((*C.char)(s.fields().Format)) }
func (s *Schema) Name() string       { return C.GoString((*C.char)(s.fields().Name)) }
func (s *Schema) Flags() SchemaFlags { return SchemaFlags(s.fields().Flags) }
func (s *Schema) NumChildren() int   { return int(s.fields().NChildren) }

// Child returns child i, borrowed from s, or nil when i is out of range.
func (s *Schema) Child(i int) *Schema {
	c := schemaChild(s.c, int64(i))
	if c == nil {
		return nil
	}
	return &Schema{c: c}
}

// Dictionary returns the dictionary's schema, borrowed, or nil.
func (s *Schema) Dictionary() *Schema {
	c := (*C.struct_ArrowSchema)(s.fields().Dictionary)
	if c == nil {
		return nil
	}
	return &Schema{c: c}
}

// KeyValue is one metadata pair.
type KeyValue struct{ Key, Value string }

// Metadata decodes the schema's metadata; EINVAL when it is malformed.
func (s *Schema) Metadata() ([]KeyValue, error) {
	n := int64(C.ferry_schema_metadata_count(s.c))
	if n < 0 {
		return nil, errorf(syscall.EINVAL, "schema %q: malformed metadata", s.Name())
	}
	out := make([]KeyValue, 0, n)
	for i := int64(0); i < n; i++ {
		var kl, vl C.int32_t
		k := C.ferry_schema_metadata_key(s.c, C.int64_t(i), &kl)
		v := C.ferry_schema_metadata_value(s.c, C.int64_t(i), &vl)
		out = append(out, KeyValue{C.GoStringN(k, C.int(kl)), C.GoStringN(v, C.int(vl))})
	}
	return out, nil
}

// Field describes the schema as a Field (every string copied into Go), the
// form Field.Export takes back: with Export it makes an independent copy
// (Clone). The schema is validated first, so a malformed one (a bad format,
// a cycle) is an EINVAL naming the problem rather than a walk that never
// ends.
func (s *Schema) Field() (Field, error) {
	if s.IsReleased() {
		return Field{}, errorf(syscall.EINVAL, "Schema.Field: the schema is released")
	}
	if err := s.Validate(); err != nil {
		return Field{}, err
	}
	return s.describe()
}

func (s *Schema) describe() (Field, error) {
	f := Field{Format: s.Format(), Name: s.Name(), Flags: s.Flags()}
	md, err := s.Metadata()
	if err != nil {
		return Field{}, err
	}
	if len(md) > 0 {
		f.Metadata = md
	}
	for i := 0; i < s.NumChildren(); i++ {
		c, err := s.Child(i).describe()
		if err != nil {
			return Field{}, err
		}
		f.Children = append(f.Children, c)
	}
	if d := s.Dictionary(); d != nil {
		df, err := d.describe()
		if err != nil {
			return Field{}, err
		}
		f.Dictionary = &df
	}
	return f, nil
}

// Clone returns an owned, independent copy of the schema (owned or
// borrowed), made by the core from its Field description.
func (s *Schema) Clone() (*Schema, error) {
	f, err := s.Field()
	if err != nil {
		return nil, err
	}
	return f.Export()
}

// Validate checks the schema (format strings, children, dictionary).
func (s *Schema) Validate() error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_validate_schema(s.c, nil, nil, e) })
}

// Field describes a schema to export: a format string of the C data
// interface, a name, flags, metadata, children and a dictionary.
type Field struct {
	Format     string
	Name       string
	Flags      SchemaFlags
	Metadata   []KeyValue
	Children   []Field
	Dictionary *Field
}

// Export builds an owned ArrowSchema for f through the core (every string
// copied); the caller releases it.
func (f *Field) Export() (*Schema, error) {
	c := newSchemaStruct()
	if c == nil {
		return nil, errorf(syscall.ENOMEM, "Field.Export: out of memory")
	}
	if err := f.fill(c); err != nil {
		C.ferry_schema_release(c)
		recycleSchema(c)
		return nil, err
	}
	return newOwnedSchema(c), nil
}

// fill initialises the released schema c from f; on failure c may be
// partially filled and the caller releases it.
func (f *Field) fill(c *C.struct_ArrowSchema) error {
	// One call validates the format (refused here, naming the field, rather
	// than left for a consumer to discover) and initialises the node.
	nameLen := C.int64_t(-1)
	if f.Name != "" {
		nameLen = C.int64_t(len(f.Name))
	}
	var outcome C.struct_ferrygo_outcome
	if C.ferrygo_schema_fill(c, goChars(f.Format), C.int64_t(len(f.Format)), goChars(f.Name), nameLen,
		C.int64_t(f.Flags), C.int64_t(len(f.Children)), &outcome) != 0 {
		err := outcomeError(&outcome)
		if outcome.format_bad != 0 {
			err.Message = fmt.Sprintf("field %q: %s", f.Name, err.Message)
		}
		return err
	}
	for _, kv := range f.Metadata {
		k, v := C.CString(kv.Key), C.CString(kv.Value)
		err := call(func(e *C.struct_FerryError) C.int { return C.ferry_schema_add_metadata(c, k, v, e) })
		C.free(unsafe.Pointer(k))
		C.free(unsafe.Pointer(v))
		if err != nil {
			return err
		}
	}
	for i := range f.Children {
		if err := f.Children[i].fill(C.ferry_schema_child(c, C.int64_t(i))); err != nil {
			return err
		}
	}
	if f.Dictionary != nil {
		var dict *C.struct_ArrowSchema
		err := call(func(e *C.struct_FerryError) C.int { return C.ferry_schema_allocate_dictionary(c, &dict, e) })
		if err != nil {
			return err
		}
		return f.Dictionary.fill(dict)
	}
	return nil
}

// goChars points C at a Go string's bytes for the duration of one call (no
// NUL terminator: pass the length too); nil for "".
func goChars(s string) *C.char { return (*C.char)(unsafe.Pointer(unsafe.StringData(s))) }
