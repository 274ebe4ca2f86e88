// Package ferryarrow converts between ferry's device arrays and streams (CPU
// memory) and github.com/apache/arrow-go/v18's arrays, records and record
// readers, zero-copy for the buffers, through the Arrow C data interface.
// It is a package of the ferry Go module: a program that does not import it
// does not build arrow-go.
//
//   - ToArrow / ToRecord move a ferry DeviceArray into arrow-go after the
//     core's FULL validation (arrow-go trusts offsets, UTF-8 and dictionary
//     indices): arrow-go then owns it and releases it with its last
//     reference.
//   - FromArrow / FromRecord export arrow-go's data to ferry; the Go memory
//     of its buffers (arrow-go's default allocator) stays pinned until the
//     consumer releases the array, so the export follows the cgo pointer
//     rules (GOEXPERIMENT=cgocheck2 passes).
//   - NewRecordReader reads a ferry stream as an array.RecordReader;
//     ExportRecordReader exports any array.RecordReader as a ferry stream.
package ferryarrow

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

func invalid(format string, args ...any) error {
	return &ferry.Error{Code: syscall.EINVAL, Message: fmt.Sprintf(format, args...)}
}

// contained runs f, turning a panic inside arrow-go (on input it does not
// expect) into an EINVAL error: nothing is printed, nothing unwinds further.
func contained(where string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = invalid("%s: arrow-go failed: %v", where, r)
		}
	}()
	return f()
}

// ToArrowField converts a ferry schema (borrowed) to an arrow-go field.
func ToArrowField(s *ferry.Schema) (arrow.Field, error) {
	c, err := s.Clone() // arrow-go's import releases what it reads
	if err != nil {
		return arrow.Field{}, err
	}
	defer c.Release()
	var f arrow.Field
	err = contained("ToArrowField", func() (err error) {
		f, err = cdata.ImportCArrowField((*cdata.CArrowSchema)(c.Ptr()))
		return err
	})
	return f, err
}

// FromArrowField exports an arrow-go field as an owned ferry schema.
func FromArrowField(f arrow.Field) (*ferry.Schema, error) {
	// arrow-go exports fields as part of a record schema: take its child.
	rec, err := FromArrowSchema(arrow.NewSchema([]arrow.Field{f}, nil))
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return rec.Child(0).Clone()
}

// FromArrowSchema exports an arrow-go record schema as an owned ferry
// schema of format "+s" (one child per field, metadata kept).
func FromArrowSchema(s *arrow.Schema) (*ferry.Schema, error) {
	return exportSchema(func(out *cdata.CArrowSchema) { cdata.ExportArrowSchema(s, out) })
}

// exportSchema lets fill write a C schema and takes it over as a ferry one.
func exportSchema(fill func(out *cdata.CArrowSchema)) (*ferry.Schema, error) {
	raw := ferry.NewRawSchema()
	defer ferry.FreeRawSchema(raw)
	if err := contained("schema export", func() error { fill((*cdata.CArrowSchema)(raw)); return nil }); err != nil {
		return nil, err
	}
	return ferry.ImportSchema(raw)
}

// checkConvertible refuses what arrow-go cannot take: a released array, no
// schema, memory other than the CPU's, or an array the core's FULL
// validation finds fault with (the finding is the error).
func checkConvertible(where string, a *ferry.DeviceArray, p *ferry.PreparedSchema) error {
	if a.IsReleased() {
		return invalid("%s: the array is released", where)
	}
	if p == nil && a.Schema() == nil {
		return invalid("%s: the array has no schema attached", where)
	}
	if t := a.DeviceType(); t != ferry.DeviceCPU {
		if _, err := ferry.ResolveDevice(t, a.DeviceID()); err != nil {
			return err // ENODEV: not a device ferry knows
		}
		return invalid("%s: arrow-go reads CPU memory and the array is on device %s: bring it over with DeviceArray.ToHost first", where, t)
	}
	// Only CPU arrays get here, and the CPU has no events (a sync_event is
	// one of the validator's findings): nothing to wait on first.
	var err error
	if p != nil {
		err = p.Validate(a, ferry.ValidateFull)
	} else {
		err = a.Validate(ferry.ValidateFull)
	}
	if err != nil {
		code, message := syscall.EINVAL, err.Error()
		if fe, ok := err.(*ferry.Error); ok {
			code, message = fe.Code, fe.Message
		}
		return &ferry.Error{Code: code, Message: "the array fails validation: " + message}
	}
	return nil
}

// ToArrow moves a CPU DeviceArray with its schema into an arrow.Array,
// after the core's FULL validation: a finding comes back as EINVAL "the
// array fails validation: <the validator's message>". An array on another
// device is refused (bring it over with DeviceArray.ToHost). On success a
// is consumed (left released) and the caller releases the result; on a
// refusal a is untouched and still the caller's.
func ToArrow(a *ferry.DeviceArray) (arrow.Array, error) {
	if err := checkConvertible("ToArrow", a, nil); err != nil {
		return nil, err
	}
	field, err := ToArrowField(a.Schema())
	if err != nil {
		return nil, err
	}
	return importArray(a, func(raw *cdata.CArrowArray) (arrow.Array, error) {
		return cdata.ImportCArrayWithType(raw, field.Type)
	})
}

// importArray moves a (validated) out into a C struct and lets imp hand it
// to arrow-go; a is consumed whatever the outcome.
func importArray[T any](a *ferry.DeviceArray, imp func(raw *cdata.CArrowArray) (T, error)) (T, error) {
	raw := ferry.NewRawDeviceArray()
	defer ferry.FreeRawDeviceArray(raw) // releases the array if arrow-go did not take it
	var out T
	if err := a.ExportTo(raw, nil); err != nil {
		return out, err
	}
	// The ArrowArray is the first member of ArrowDeviceArray (the
	// specification's layout), so the device struct's address is the
	// array's; arrow-go moves it out.
	err := contained("import", func() (err error) {
		out, err = imp((*cdata.CArrowArray)(raw))
		return err
	})
	return out, err
}

// ToRecord moves a CPU DeviceArray of struct type ("+s") into an
// arrow.RecordBatch, validated as ToArrow does.
func ToRecord(a *ferry.DeviceArray) (arrow.RecordBatch, error) {
	if err := checkConvertible("ToRecord", a, nil); err != nil {
		return nil, err
	}
	if f := a.Schema().Format(); f != "+s" {
		return nil, invalid("ToRecord: a record batch is a struct array (\"+s\"), not %q", f)
	}
	field, err := ToArrowField(a.Schema())
	if err != nil {
		return nil, err
	}
	schema := arrow.NewSchema(field.Type.(*arrow.StructType).Fields(), &field.Metadata)
	return importArray(a, func(raw *cdata.CArrowArray) (arrow.RecordBatch, error) {
		return cdata.ImportCRecordBatchWithSchema(raw, schema)
	})
}

// pinData pins the first byte of every buffer of data, its children and
// its dictionary: what arrow-go's export stores in C memory. Buffers in C
// memory (arrow-go's mallocator) are not Go memory, and Pin ignores them.
func pinData(p *runtime.Pinner, data arrow.ArrayData) {
	for _, b := range data.Buffers() {
		if b != nil && b.Len() > 0 {
			p.Pin(&b.Bytes()[0])
		}
	}
	for _, c := range data.Children() {
		pinData(p, c)
	}
	// Dictionary() is a typed nil for other types: ask the type first.
	if data.DataType().ID() == arrow.DICTIONARY && data.Dictionary() != nil {
		pinData(p, data.Dictionary())
	}
}

// FromArrow exports arr as an owned CPU DeviceArray with its schema,
// zero-copy: arr's buffers stay referenced, and those in Go memory pinned,
// until the consumer releases the result (arr itself may be released at
// once). Slices of every type cross as the specification lays them out
// (arrow-go's own export of a sliced struct or sparse union is repaired on
// the way), and the result is validated (ValidateDefault) before it is
// returned.
func FromArrow(arr arrow.Array) (*ferry.DeviceArray, error) {
	pins := new(runtime.Pinner)
	pinData(pins, arr.Data())
	return exportArray(pins, func(raw *cdata.CArrowArray, schema *cdata.CArrowSchema) {
		cdata.ExportArrowArray(arr, raw, schema)
	})
}

// FromRecord exports a record batch as a struct DeviceArray ("+s", one
// child per column, the schema's metadata kept), zero-copy as FromArrow.
func FromRecord(rec arrow.RecordBatch) (*ferry.DeviceArray, error) {
	pins := new(runtime.Pinner)
	for _, col := range rec.Columns() {
		pinData(pins, col.Data())
	}
	return exportArray(pins, func(raw *cdata.CArrowArray, schema *cdata.CArrowSchema) {
		cdata.ExportArrowRecordBatch(rec, raw, schema)
	})
}

// exportArray lets export fill C structs (through arrow-go's cdata, which
// stores the pinned buffer addresses in C memory) and takes them over as a
// CPU DeviceArray that unpins when it is released.
func exportArray(pins *runtime.Pinner, export func(raw *cdata.CArrowArray, schema *cdata.CArrowSchema)) (*ferry.DeviceArray, error) {
	raw, rawSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	err := contained("export", func() error {
		export((*cdata.CArrowArray)(raw), (*cdata.CArrowSchema)(rawSchema))
		return nil
	})
	var d *ferry.DeviceArray
	if err == nil {
		// Sliced structs and sparse unions come out of arrow-go with their
		// offset applied twice (rebase.go); repaired before ferry's import
		// validates them (ValidateDefault).
		rebase(raw, rawSchema)
		d, err = ferry.ImportArray(raw, rawSchema, pins.Unpin)
	}
	// Empty after a successful import; otherwise this releases what arrow-go
	// exported, while its buffers are still pinned.
	ferry.FreeRawDeviceArray(raw)
	ferry.FreeRawSchema(rawSchema)
	if err != nil {
		pins.Unpin()
		return nil, err
	}
	return d, nil
}

// ---- streams ---------------------------------------------------------------

// recordReader reads a ferry stream as an array.RecordReader.
type recordReader struct {
	refs     atomic.Int64
	stream   *ferry.DeviceArrayStream
	prepared *ferry.PreparedSchema
	schema   *arrow.Schema
	cur      arrow.RecordBatch
	err      error
}

// NewRecordReader reads a ferry stream of struct batches ("+s") on the CPU
// as an array.RecordReader. It owns s from now on, also when it fails (s is
// released then). Each batch is validated (FULL, against the stream's
// schema prepared once) before arrow-go sees it: a finding, like a
// producer's error, ends the reader, and Err returns it. Release the reader
// when done (it releases the stream).
func NewRecordReader(s *ferry.DeviceArrayStream) (array.RecordReader, error) {
	fail := func(err error) (array.RecordReader, error) {
		s.Release()
		return nil, err
	}
	if s.IsReleased() {
		return nil, invalid("NewRecordReader: the stream is released")
	}
	if t := s.DeviceType(); t != ferry.DeviceCPU {
		return fail(invalid("NewRecordReader: arrow-go reads CPU memory and the stream is on %s", t))
	}
	schema, err := s.Schema()
	if err != nil {
		return fail(err)
	}
	prepared, err := schema.Prepare()
	if err != nil {
		return fail(err)
	}
	if f := schema.Format(); f != "+s" {
		prepared.Free()
		return fail(invalid("NewRecordReader: record batches are struct arrays (\"+s\"), the stream's schema is %q", f))
	}
	field, err := ToArrowField(schema)
	if err != nil {
		prepared.Free()
		return fail(err)
	}
	r := &recordReader{stream: s, prepared: prepared,
		schema: arrow.NewSchema(field.Type.(*arrow.StructType).Fields(), &field.Metadata)}
	r.refs.Store(1)
	return r, nil
}

func (r *recordReader) Retain() { r.refs.Add(1) }

func (r *recordReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.drop()
	r.stream.Release()
	r.prepared.Free()
}

func (r *recordReader) drop() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *recordReader) Schema() *arrow.Schema { return r.schema }

func (r *recordReader) Next() bool {
	r.drop()
	if r.err != nil || r.stream.IsReleased() {
		return false
	}
	if !r.stream.Next() {
		r.err = r.stream.Err()
		return false
	}
	b := r.stream.Batch()
	if err := checkConvertible("RecordReader", b, r.prepared); err != nil {
		r.err = err
		return false
	}
	rec, err := importArray(b, func(raw *cdata.CArrowArray) (arrow.RecordBatch, error) {
		return cdata.ImportCRecordBatchWithSchema(raw, r.schema)
	})
	if err != nil {
		r.err = err
		return false
	}
	r.cur = rec
	return true
}

func (r *recordReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Deprecated: Use RecordBatch instead (array.RecordReader asks for both).
func (r *recordReader) Record() arrow.RecordBatch { return r.cur }

func (r *recordReader) Err() error { return r.err }

// readerSource adapts an array.RecordReader to ferry.BatchReader.
type readerSource struct{ r array.RecordReader }

func (s readerSource) Schema() (*ferry.Schema, error) { return FromArrowSchema(s.r.Schema()) }

func (s readerSource) Next() (*ferry.DeviceArray, error) {
	if s.r.Next() {
		return FromRecord(s.r.RecordBatch())
	}
	return nil, s.r.Err()
}

func (s readerSource) Release() { s.r.Release() }

// ExportRecordReader exports r as a ferry stream of CPU struct batches,
// each a zero-copy export of one record (see FromRecord); r.Err() ends the
// stream with that error. The stream owns r from now on (also when this
// fails) and releases it when the consumer releases the stream, as arrow-go's
// cdata.ExportRecordReader does.
func ExportRecordReader(r array.RecordReader) (*ferry.DeviceArrayStream, error) {
	return ferry.ExportReader(readerSource{r}, ferry.DeviceCPU)
}
