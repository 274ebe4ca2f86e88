package ferry

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"syscall"
)

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
	if d == nil {
		return nil, errorf(syscall.EINVAL, "DeviceArray.Validate: the array is released")
	}
	d.rlock()
	defer d.runlock()
	if d.released() {
		return nil, errorf(syscall.EINVAL, "DeviceArray.Validate: the array is released")
	}
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
