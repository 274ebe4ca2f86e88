package ferry

/*
#cgo noescape ferrygo_validate_cpu
#cgo nocallback ferrygo_validate_cpu
#cgo noescape ferrygo_validate_quiet
#cgo nocallback ferrygo_validate_quiet
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"syscall"
	"unsafe"
)

// ValidateCArray validates the plain ArrowArray at array (the C data
// interface: CPU memory, no device fields), described by the ArrowSchema at
// schema, at level, in place: both stay the caller's (nothing is moved or
// released). It returns nil, or EINVAL "the array fails validation: <the
// first finding>". For a consumer that hands the structs on to another
// library (ferryarrow.ImportCArray) after checking them.
func ValidateCArray(array, schema unsafe.Pointer, level ValidateLevel) error {
	a, s := (*C.struct_ArrowArray)(array), (*C.struct_ArrowSchema)(schema)
	if a == nil || abiArray(a).Release == nil {
		return errorf(syscall.EINVAL, "ValidateCArray: NULL or released array")
	}
	if s == nil || abiSchema(s).Release == nil {
		return errorf(syscall.EINVAL, "ValidateCArray: NULL or released schema")
	}
	if level == ValidateNone {
		return nil
	}
	if level != ValidateDefault && level != ValidateFull {
		return errorf(syscall.EINVAL, "ValidateCArray: unknown validation level %d", level)
	}
	e := getErrorBuffer()
	rc := C.ferrygo_validate_cpu(C.uintptr_t(uintptr(schema)), C.uintptr_t(uintptr(array)), C.int32_t(level), e)
	err := codeError(rc, e)
	putErrorBuffer(e)
	if err != nil {
		return &Error{Code: codeOf(err), Message: "the array fails validation: " + messageOf(err)}
	}
	return nil
}

// Finding is one problem the validator found: Rule is a short stable
// identifier ("format", "n_buffers", "device", "offsets", ...), Where a path
// such as "root.children[1].dictionary", What a sentence.
type Finding struct {
	Rule, Where, What string
}

func (f Finding) String() string { return f.Where + ": " + f.What + " (" + f.Rule + ")" }

// Validate checks the array against its schema at level: ValidateDefault
// checks structure (format, buffer and child counts per layout, dictionary,
// reserved bytes, one device for everything, residency where the backend
// can tell) without reading buffer contents; ValidateFull also reads
// offsets, UTF-8, validity bits, null counts and dictionary indices
// (through the device backend). It returns nil, or an EINVAL error with the
// first finding; Findings lists them all.
func (d *DeviceArray) Validate(level ValidateLevel) error {
	_, err := d.validate(nil, level, false)
	return err
}

// Findings validates as Validate does and returns every finding (empty
// when the array is clean); the error is the first finding's, as Validate
// returns it.
func (d *DeviceArray) Findings(level ValidateLevel) ([]Finding, error) {
	return d.validate(nil, level, true)
}

func (d *DeviceArray) validate(p *PreparedSchema, level ValidateLevel, collect bool) ([]Finding, error) {
	if err := d.acquire("DeviceArray.Validate", true); err != nil {
		return nil, err
	}
	defer d.runlock()
	if level == ValidateNone {
		return []Finding{}, nil
	}
	var s *Schema
	if p == nil {
		if s = d.schemaView(); s == nil {
			return nil, errorf(syscall.EINVAL, "DeviceArray.Validate: no schema attached")
		}
	} else if p.c == nil {
		return nil, errorf(syscall.EINVAL, "PreparedSchema.Validate: the prepared schema is freed")
	}
	var findings []Finding
	var h uintptr
	if collect {
		findings = []Finding{}
		h = handles.put(&findings)
		defer handles.take(h)
	}
	var sc *C.struct_ArrowSchema
	if s != nil {
		sc = s.c
	}
	var pc *C.struct_FerryPreparedSchema
	if p != nil {
		pc = p.c
	}
	err := call(func(e *C.struct_FerryError) C.int {
		return C.ferrygo_validate(pc, sc, d.c, C.int32_t(level), C.uintptr_t(h), e)
	})
	runtime.KeepAlive(p)
	if err == nil && p == nil && d.batchOf == nil && (!collect || len(findings) == 0) {
		d.markValidated(level)
	}
	return findings, err
}

// PreparedSchema is a schema validated once and kept in the form the
// validator works from, for validating many arrays of that schema (a
// stream's batches, a consumer that imports the same type again and again)
// without walking and parsing the schema each time. Immutable: usable from
// many goroutines at once. Free it when done (a cleanup frees a forgotten
// one).
type PreparedSchema struct {
	c       *C.struct_FerryPreparedSchema
	cleanup runtime.Cleanup
}

// Prepare validates the schema (EINVAL with the first finding) and returns
// its prepared form, which keeps copies of what it needs: s may be released
// afterwards.
func (s *Schema) Prepare() (*PreparedSchema, error) {
	if s.IsReleased() {
		return nil, errorf(syscall.EINVAL, "Schema.Prepare: the schema is released")
	}
	var c *C.struct_FerryPreparedSchema
	err := call(func(e *C.struct_FerryError) C.int { return C.ferry_prepared_schema_create(s.c, nil, nil, &c, e) })
	if err != nil {
		return nil, err
	}
	p := &PreparedSchema{c: c}
	p.cleanup = runtime.AddCleanup(p, func(c *C.struct_FerryPreparedSchema) { C.ferry_prepared_schema_free(c) }, c)
	return p, nil
}

// Validate checks a (an array of the prepared schema; a schema attached to
// it is not looked at) at level, as DeviceArray.Validate does.
func (p *PreparedSchema) Validate(a *DeviceArray, level ValidateLevel) error {
	if p == nil {
		return errorf(syscall.EINVAL, "PreparedSchema.Validate: nil prepared schema")
	}
	_, err := a.validate(p, level, false)
	return err
}

// Free frees the prepared schema; harmless twice.
func (p *PreparedSchema) Free() {
	if p == nil || p.c == nil {
		return
	}
	p.cleanup.Stop()
	C.ferry_prepared_schema_free(p.c)
	p.c = nil
}
