// Package ferryarrow converts between ferry's device arrays and streams (CPU
// memory) and github.com/apache/arrow-go/v18's arrays, records and record
// readers, zero-copy for the buffers, through the Arrow C data interface.
// It is a package of the ferry Go module: a program that does not import it
// does not build arrow-go.
//
//   - ToArrow / ToRecord move a ferry DeviceArray into arrow-go after the
//     core's validation at ValidateDefault, unless its import already did
//     (Options{Validate: ferry.ValidateFull} also checks the offsets, UTF-8
//     and dictionary indices arrow-go trusts): arrow-go then owns it and
//     releases it with its last reference. ImportCArray is
//     cdata.ImportCArray with that validation first.
//   - FromArrow / FromRecord export arrow-go's data to ferry; the Go memory
//     of its buffers (arrow-go's default allocator) stays pinned, and
//     arrow-go's data referenced, until the consumer has released the array,
//     so the export follows the cgo pointer rules (GOEXPERIMENT=cgocheck2
//     passes).
//   - NewRecordReader reads a ferry stream as an array.RecordReader;
//     ExportRecordReader exports any array.RecordReader as a ferry stream.
package ferryarrow

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/internal/abi"
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

// Options tunes a conversion into arrow-go (ToArrow, ToRecord,
// NewRecordReader). The zero value validates at ValidateDefault.
type Options struct {
	// Validate is the level the array (each batch) must pass before arrow-go
	// sees it: ValidateDefault (the zero value: the structure, about 30 ns
	// a node), ValidateFull (offsets, UTF-8, dictionary indices too, which
	// arrow-go trusts: the explicit choice for a producer you do not trust
	// with them; it reads every offset and string) or ValidateNone. A level
	// the array already passed (its import's, its stream's: see
	// ferry.DeviceArray.Validated) is not checked again.
	Validate ferry.ValidateLevel
}

// options is the one Options of a variadic list (the zero value when none).
func options(where string, opts []Options) (Options, error) {
	switch len(opts) {
	case 0:
		return Options{}, nil
	case 1:
		o := opts[0]
		if o.Validate != ferry.ValidateNone && o.Validate != ferry.ValidateDefault && o.Validate != ferry.ValidateFull {
			return o, invalid("%s: unknown validation level %d", where, o.Validate)
		}
		return o, nil
	}
	return Options{}, invalid("%s: %d Options given, at most one is accepted", where, len(opts))
}

// checkConvertible refuses what arrow-go cannot take: a released array, no
// schema, memory other than the CPU's, or an array the core's validation
// at level finds fault with (the finding is the error). A level a already
// passed is not checked again.
func checkConvertible(where string, a *ferry.DeviceArray, p *ferry.PreparedSchema, level ferry.ValidateLevel) error {
	_, err := checkedSchema(where, a, p, level)
	return err
}

// checkedSchema is checkConvertible that also returns the address of a's
// schema (borrowed; nil with p).
func checkedSchema(where string, a *ferry.DeviceArray, p *ferry.PreparedSchema, level ferry.ValidateLevel) (unsafe.Pointer, error) {
	var schema unsafe.Pointer
	if p == nil {
		schema = a.SchemaPtr()
	}
	if schema == nil { // a released array has no schema either: asked only then
		if a.IsReleased() {
			return nil, invalid("%s: the array is released", where)
		}
		if p == nil {
			return nil, invalid("%s: the array has no schema attached", where)
		}
	}
	if t := a.DeviceType(); t != ferry.DeviceCPU {
		if _, err := ferry.ResolveDevice(t, a.DeviceID()); err != nil {
			return nil, err // ENODEV: not a device ferry knows
		}
		return nil, invalid("%s: arrow-go reads CPU memory and the array is on device %s: bring it over with DeviceArray.ToHost first", where, t)
	}
	if a.Validated() >= level { // ValidateNone < ValidateDefault < ValidateFull
		return schema, nil
	}
	// Only CPU arrays get here, and the CPU has no events (a sync_event is
	// one of the validator's findings): nothing to wait on first.
	var err error
	if p != nil {
		err = p.Validate(a, level)
	} else {
		err = a.Validate(level)
	}
	if err != nil {
		code, message := syscall.EINVAL, err.Error()
		if fe, ok := err.(*ferry.Error); ok {
			code, message = fe.Code, fe.Message
		}
		return nil, &ferry.Error{Code: code, Message: "the array fails validation: " + message}
	}
	return schema, nil
}

// ToArrow moves a CPU DeviceArray with its schema into an arrow.Array,
// after the core's validation at ValidateDefault (opts: ValidateFull, which
// also checks the offsets, UTF-8 and dictionary indices arrow-go trusts;
// skipped when the array's import already validated at that level): a
// finding comes back as EINVAL "the array fails validation: <the
// validator's message>". An array on another device is refused (bring it
// over with DeviceArray.ToHost). On success a is consumed (left released)
// and the caller releases the result; on a refusal a is untouched and still
// the caller's.
func ToArrow(a *ferry.DeviceArray, opts ...Options) (arrow.Array, error) {
	o, err := options("ToArrow", opts)
	if err != nil {
		return nil, err
	}
	schema, err := checkedSchema("ToArrow", a, nil, o.Validate)
	if err != nil {
		return nil, err
	}
	dt, err := arrowType(a, (*cSchema)(schema))
	if err != nil {
		return nil, err
	}
	if v := (*cArray)(a.Ptr()); v != nil {
		p, ok, err := planFlat("ToArrow", dt, v)
		if err != nil {
			return nil, err
		}
		if ok {
			// The schema moves along and is released with the array, in
			// the same cgo call; a stream's batch owns no schema (its
			// stream does), so it moves alone.
			raw, rawSchema := takeRaw(), takeRawSchema()
			if a.ExportTo(raw, rawSchema) != nil {
				giveRawSchema(rawSchema)
				rawSchema = nil
				if err := a.ExportTo(raw, nil); err != nil {
					giveRaw(raw)
					return nil, err
				}
			}
			return wrapFlat(dt, raw, rawSchema, p), nil
		}
	}
	return importArray(a, func(raw *cdata.CArrowArray) (arrow.Array, error) {
		return cdata.ImportCArrayWithType(raw, dt)
	})
}

// arrowType is the arrow-go type of a's schema, at v. A leaf without
// metadata, children or dictionary (whose type is its format string alone)
// comes from a cache; other schemas go through arrow-go's schema import, as
// ToArrowField.
func arrowType(a *ferry.DeviceArray, v *cSchema) (arrow.DataType, error) {
	plain := plainLeaf(v)
	if plain {
		if dt, ok := leafTypes.Load().m[cString(v.Format)]; ok {
			return dt, nil
		}
	}
	f, err := ToArrowField(a.Schema())
	if err != nil {
		return nil, err
	}
	if plain {
		rememberLeafType(strings.Clone(cString(v.Format)), f.Type)
	}
	return f.Type, nil
}

// plainLeaf says whether the schema at v is a leaf whose type is its format
// string alone: no children, no dictionary, no metadata (arrow-go writes an
// empty list; an extension type is named in the metadata).
func plainLeaf(v *cSchema) bool {
	return v.NChildren == 0 && v.Dictionary == nil && v.Format != nil &&
		(v.Metadata == nil || *(*int32)(v.Metadata) == 0)
}

// cSchema and cArray read the fields of the C data interface's structs
// (C memory) from Go, without a cgo call, through the mirrors generated
// from core/abi/api.json (package abi proves their layout at compile time).
type (
	cSchema = abi.ArrowSchema
	cArray  = abi.ArrowArray
)

// cString views the NUL-terminated C string at p (at most 64 bytes; a
// longer one reads as "", which no type is cached under) without copying.
func cString(ptr unsafe.Pointer) string {
	p := (*byte)(ptr)
	b := unsafe.Slice(p, 65)
	for n := 0; n < 64; n++ {
		if b[n] == 0 {
			return unsafe.String(p, n)
		}
	}
	return ""
}

// leafTypes maps leaf format strings to arrow-go types: an immutable map,
// replaced by a copy with one more entry (at most maxLeafTypes), so a
// lookup takes no lock.
type typeMap struct{ m map[string]arrow.DataType }

const maxLeafTypes = 256

var (
	leafTypes   atomic.Pointer[typeMap]
	leafTypesMu sync.Mutex
)

func init() { leafTypes.Store(&typeMap{m: map[string]arrow.DataType{}}) }

func rememberLeafType(format string, dt arrow.DataType) {
	leafTypesMu.Lock()
	defer leafTypesMu.Unlock()
	old := leafTypes.Load().m
	if _, ok := old[format]; ok || len(old) >= maxLeafTypes || format == "" {
		return
	}
	m := make(map[string]arrow.DataType, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[format] = dt
	leafTypes.Store(&typeMap{m: m})
}

// spareStruct holds one released C struct (an ArrowDeviceArray, or an
// ArrowSchema) between conversions, which saves the two cgo calls that
// would allocate and free one each time.
type spareStruct struct {
	p        atomic.Pointer[byte]
	alloc    func() unsafe.Pointer
	free     func(unsafe.Pointer) // also releases what is left in the struct
	released func(unsafe.Pointer) bool
}

func (s *spareStruct) take() unsafe.Pointer {
	if p := s.p.Swap(nil); p != nil {
		return unsafe.Pointer(p)
	}
	return s.alloc()
}

// give keeps p as the spare if it is released (its content moved out),
// else frees it.
func (s *spareStruct) give(p unsafe.Pointer) {
	if !s.released(p) {
		s.free(p)
	} else if old := s.p.Swap((*byte)(p)); old != nil {
		s.free(unsafe.Pointer(old))
	}
}

var (
	spareArray = spareStruct{alloc: ferry.NewRawDeviceArray, free: ferry.FreeRawDeviceArray,
		released: func(p unsafe.Pointer) bool { return (*cArray)(p).Release == nil }}
	// the schema a direct conversion keeps until its array's release
	spareSchema = spareStruct{alloc: ferry.NewRawSchema, free: ferry.FreeRawSchema,
		released: func(p unsafe.Pointer) bool { return (*cSchema)(p).Release == nil }}
)

func takeRaw() unsafe.Pointer          { return spareArray.take() }
func giveRaw(raw unsafe.Pointer)       { spareArray.give(raw) }
func takeRawSchema() unsafe.Pointer    { return spareSchema.take() }
func giveRawSchema(raw unsafe.Pointer) { spareSchema.give(raw) }

// importArray moves a (validated) out into a C struct and lets imp hand it
// to arrow-go; a is consumed whatever the outcome.
func importArray[T any](a *ferry.DeviceArray, imp func(raw *cdata.CArrowArray) (T, error)) (T, error) {
	raw := takeRaw()
	defer giveRaw(raw) // releases the array if arrow-go did not take it
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
// arrow.RecordBatch, validated as ToArrow does (opts).
func ToRecord(a *ferry.DeviceArray, opts ...Options) (arrow.RecordBatch, error) {
	o, err := options("ToRecord", opts)
	if err != nil {
		return nil, err
	}
	if err := checkConvertible("ToRecord", a, nil, o.Validate); err != nil {
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
	if ad, ok := leafData(arr.Data(), "", 0); ok {
		return exportDescribed(&ad, arr.Data(), false)
	}
	pins := new(runtime.Pinner)
	pinData(pins, arr.Data())
	return exportArray(pins, func(raw *cdata.CArrowArray, schema *cdata.CArrowSchema) {
		cdata.ExportArrowArray(arr, raw, schema)
	})
}

// FromRecord exports a record batch as a struct DeviceArray ("+s", one
// child per column, the schema's metadata kept), zero-copy as FromArrow.
func FromRecord(rec arrow.RecordBatch) (*ferry.DeviceArray, error) {
	if ad, ok := recordData(rec, true); ok {
		return exportDescribed(&ad, rec, false)
	}
	pins := new(runtime.Pinner)
	for _, col := range rec.Columns() {
		pinData(pins, col.Data())
	}
	return exportArray(pins, func(raw *cdata.CArrowArray, schema *cdata.CArrowSchema) {
		cdata.ExportArrowRecordBatch(rec, raw, schema)
	})
}

// leafFormats are the format strings of the arrow-go types that take no
// parameters and whose buffers are, one for one, the C data interface's
// (a validity bitmap first): FromArrow, FromRecord and the stream export
// describe these to ferry directly, pointing at arrow-go's buffers,
// instead of going through arrow-go's cdata export.
var leafFormats = map[arrow.Type]string{
	arrow.BOOL: "b", arrow.INT8: "c", arrow.UINT8: "C", arrow.INT16: "s", arrow.UINT16: "S",
	arrow.INT32: "i", arrow.UINT32: "I", arrow.INT64: "l", arrow.UINT64: "L",
	arrow.FLOAT16: "e", arrow.FLOAT32: "f", arrow.FLOAT64: "g",
	arrow.STRING: "u", arrow.BINARY: "z", arrow.LARGE_STRING: "U", arrow.LARGE_BINARY: "Z",
	arrow.DATE32: "tdD", arrow.DATE64: "tdm",
}

// leafData describes data (a leaf of a type in leafFormats, not empty) as
// a ferry ArrayData over arrow-go's own buffers (pinned while exported: Go
// memory stays put and alive; C memory is unaffected); ok is false for
// anything else, which then goes through arrow-go's cdata export.
func leafData(data arrow.ArrayData, name string, flags ferry.SchemaFlags) (ad ferry.ArrayData, ok bool) {
	format, known := leafFormats[data.DataType().ID()]
	if !known || data.Len() == 0 || len(data.Children()) != 0 {
		return ad, false
	}
	bufs := data.Buffers()
	want := 2
	if format == "u" || format == "z" || format == "U" || format == "Z" {
		want = 3
	}
	if len(bufs) != want {
		return ad, false
	}
	ad = ferry.ArrayData{Format: format, Name: name, Flags: flags, Length: int64(data.Len()),
		NullCount: int64(data.NullN()), Offset: int64(data.Offset()), Buffers: make([]ferry.Buffer, want)}
	for i, b := range bufs {
		if b == nil || b.Len() == 0 {
			if i == 0 && data.NullN() == 0 {
				continue // no validity bitmap: NULL
			}
			return ferry.ArrayData{}, false
		}
		ad.Buffers[i] = ferry.PinSlice(b.Bytes())
	}
	return ad, true
}

// recordData describes rec as a struct ArrayData ("+s", one leaf child
// per column, as leafData) when every column is such a leaf and carries no
// metadata; withSchema adds the names, flags and the schema's metadata
// (FromRecord), which a stream's batches do not need.
func recordData(rec arrow.RecordBatch, withSchema bool) (ad ferry.ArrayData, ok bool) {
	sc := rec.Schema()
	ad = ferry.ArrayData{Format: "+s", Length: rec.NumRows(), Buffers: []ferry.Buffer{{}},
		Children: make([]*ferry.ArrayData, rec.NumCols())}
	for i, col := range rec.Columns() {
		f := sc.Field(i)
		if f.HasMetadata() {
			return ferry.ArrayData{}, false
		}
		var name string
		var flags ferry.SchemaFlags
		if withSchema {
			name = f.Name
			if f.Nullable {
				flags = ferry.FlagNullable
			}
		}
		child, ok := leafData(col.Data(), name, flags)
		if !ok {
			return ferry.ArrayData{}, false
		}
		ad.Children[i] = &child
	}
	if withSchema {
		if md := sc.Metadata(); md.Len() > 0 {
			for k := range md.Keys() {
				ad.Metadata = append(ad.Metadata, ferry.KeyValue{Key: md.Keys()[k], Value: md.Values()[k]})
			}
		}
	}
	return ad, true
}

// retainer is what an export holds on to: arrow-go's array data or record.
type retainer interface {
	Retain()
	Release()
}

// exportDescribed exports ad (described by leafData or recordData over the
// buffers of owner), holding a reference to owner until Go next looks
// after the consumer's release (ArrayData.AfterRelease: no call back into
// Go at the release itself). Without noSchema the result has its schema
// and is validated (ValidateDefault) before it is returned; a stream's
// batch (noSchema) is validated by whoever consumes the stream.
func exportDescribed(ad *ferry.ArrayData, owner retainer, noSchema bool) (*ferry.DeviceArray, error) {
	owner.Retain()
	ad.AfterRelease = owner.Release
	if noSchema {
		return ferry.ExportArrayNoSchema(ad, nil) // ad is the export's, on failure too
	}
	d, err := ferry.ExportArray(ad, nil)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(ferry.ValidateDefault); err != nil {
		d.Release()
		return nil, invalid("FromArrow: the array fails validation: %v", err)
	}
	return d, nil
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
	level    ferry.ValidateLevel
}

// NewRecordReader reads a ferry stream of struct batches ("+s") on the CPU
// as an array.RecordReader. It owns s from now on, also when it fails (s is
// released then). Each batch is validated at ValidateDefault (opts:
// ValidateFull, ValidateNone) against the stream's schema, prepared once,
// before arrow-go sees it; the stream's own validation (ImportStream
// validates each batch at ValidateDefault) counts, so a batch is not
// checked twice. A finding, like a producer's error, ends the reader, and
// Err returns it. Release the reader when done (it releases the stream).
func NewRecordReader(s *ferry.DeviceArrayStream, opts ...Options) (array.RecordReader, error) {
	fail := func(err error) (array.RecordReader, error) {
		s.Release()
		return nil, err
	}
	o, err := options("NewRecordReader", opts)
	if err != nil {
		return fail(err)
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
	r := &recordReader{stream: s, prepared: prepared, level: o.Validate,
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
	if err := checkConvertible("RecordReader", b, r.prepared, r.level); err != nil {
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

// readerSource adapts an array.RecordReader to ferry.BatchReader. The
// schema crosses once, at the stream's get_schema; each batch is exported
// without one (the stream's consumer has it): described straight from
// arrow-go's buffers when its columns are leaves (recordData), else through
// arrow-go's cdata export of the array alone, repaired against the stream's
// schema (rebase.go).
type readerSource struct {
	r      array.RecordReader
	schema *ferry.Schema // the stream's, exported once (for the repair)
}

func (s *readerSource) Schema() (*ferry.Schema, error) {
	if s.schema == nil {
		sc, err := FromArrowSchema(s.r.Schema())
		if err != nil {
			return nil, err
		}
		s.schema = sc
	}
	return s.schema.Clone() // the stream moves what it is given
}

func (s *readerSource) Next() (*ferry.DeviceArray, error) {
	if !s.r.Next() {
		return nil, s.r.Err()
	}
	rec := s.r.RecordBatch()
	if ad, ok := recordData(rec, false); ok {
		return exportDescribed(&ad, rec, true)
	}
	if s.schema == nil { // get_schema not called yet: export the schema now, once
		if _, err := s.Schema(); err != nil {
			return nil, err
		}
	}
	pins := new(runtime.Pinner)
	for _, col := range rec.Columns() {
		pinData(pins, col.Data())
	}
	raw := ferry.NewRawDeviceArray()
	defer ferry.FreeRawDeviceArray(raw) // empty after the import; else it releases arrow-go's export
	if err := contained("export", func() error {
		cdata.ExportArrowRecordBatch(rec, (*cdata.CArrowArray)(raw), nil)
		return nil
	}); err != nil {
		pins.Unpin()
		return nil, err
	}
	rebase(raw, s.schema.Ptr())
	// Validated by the stream's consumer, against the schema it reads once.
	d, err := ferry.ImportArray(raw, nil, pins.Unpin, ferry.ImportOptions{Validate: ferry.ValidateNone})
	if err != nil {
		pins.Unpin()
		return nil, err
	}
	return d, nil
}

func (s *readerSource) Release() {
	s.r.Release()
	s.schema.Release()
}

// ExportRecordReader exports r as a ferry stream of CPU struct batches,
// each a zero-copy export of one record (see FromRecord); r.Err() ends the
// stream with that error. The stream owns r from now on (also when this
// fails) and releases it when the consumer releases the stream, as arrow-go's
// cdata.ExportRecordReader does.
func ExportRecordReader(r array.RecordReader) (*ferry.DeviceArrayStream, error) {
	return ferry.ExportReader(&readerSource{r: r}, ferry.DeviceCPU)
}
