package ferryarrow

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

// The tests run under GOEXPERIMENT=cgocheck2 too (bindings/go/test.sh):
// arrow-go's default allocator hands out Go memory, whose addresses the
// export stores in C memory; without the pins that is the crash
// "unpinned Go pointer stored into non-Go memory".

// allocators are the two kinds of memory arrow-go hands out: the Go heap
// (its default) and C malloc (mallocator), each counted so the tests see
// every buffer come back.
func allocators(t *testing.T) map[string]*memory.CheckedAllocator {
	out := map[string]*memory.CheckedAllocator{
		"go heap (default)": memory.NewCheckedAllocator(memory.NewGoAllocator()),
		"mallocator":        memory.NewCheckedAllocator(mallocator.NewMallocator()),
	}
	t.Cleanup(func() {
		ferry.ReleaseDeferred() // exports let go of arrow-go's data when Go next looks
		for name, mem := range out {
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%s: %d bytes not given back to arrow-go", name, mem.CurrentAlloc())
			}
		}
	})
	return out
}

// counters checks at the end of the test that every ferry export was given
// back.
func counters(t *testing.T) {
	before, exports := ferry.LiveAllocations(), ferry.LiveExports()
	t.Cleanup(func() {
		if got := ferry.LiveAllocations(); got != before {
			t.Errorf("ferry allocations: %d, %d before", got, before)
		}
		if got := ferry.LiveExports(); got != exports {
			t.Errorf("ferry exports: %d, %d before", got, exports)
		}
	})
}

// sample builds one array of every layout family arrow-go and ferry share.
func sample(mem memory.Allocator) map[string]arrow.Array {
	out := map[string]arrow.Array{}
	ints := array.NewInt64Builder(mem)
	ints.AppendValues([]int64{1, 2, 3, 4}, []bool{true, false, true, true})
	out["int64 with nulls"] = ints.NewArray()
	ints.Release()

	strs := array.NewStringBuilder(mem)
	strs.AppendValues([]string{"a", "", "ccc", "dddd"}, []bool{true, true, false, true})
	full := strs.NewArray()
	strs.Release()
	out["utf8"] = full
	out["utf8, sliced"] = array.NewSlice(full, 1, 4)

	views := array.NewStringViewBuilder(mem)
	views.AppendValues([]string{"short", "a string longer than twelve bytes", ""}, nil)
	out["utf8 view"] = views.NewArray()
	views.Release()

	lists := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	values := lists.ValueBuilder().(*array.Int32Builder)
	lists.Append(true)
	values.AppendValues([]int32{1, 2}, nil)
	lists.AppendNull()
	lists.Append(true)
	values.Append(3)
	out["list<int32>"] = lists.NewArray()
	lists.Release()

	st := array.NewStructBuilder(mem, arrow.StructOf(
		arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}))
	for i := 0; i < 3; i++ {
		st.Append(true)
		st.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
		st.FieldBuilder(1).(*array.StringBuilder).Append(strings.Repeat("x", i))
	}
	out["struct<int32, utf8>"] = st.NewArray()
	st.Release()

	dict := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String})
	for _, v := range []string{"x", "y", "x", "z"} {
		_ = dict.(*array.BinaryDictionaryBuilder).AppendString(v)
	}
	out["dictionary<int16, utf8>"] = dict.NewArray()
	dict.Release()

	bools := array.NewBooleanBuilder(mem)
	bools.AppendValues([]bool{true, false, true}, nil)
	out["bool"] = bools.NewArray()
	bools.Release()

	// Slices of the layouts whose children arrow-go's cdata exports already
	// sliced (rebase.go): a struct, a struct of a struct, a sparse union.
	out["struct<int32, utf8>, sliced"] = array.NewSlice(out["struct<int32, utf8>"], 1, 3)
	inner := array.NewSlice(out["struct<int32, utf8>"], 1, 3)
	nums := array.NewInt32Builder(mem)
	nums.AppendValues([]int32{7, 8}, []bool{true, false})
	numArr := nums.NewArray()
	nums.Release()
	outer, err := array.NewStructArray([]arrow.Array{inner, numArr}, []string{"inner", "k"})
	if err != nil {
		panic(err)
	}
	inner.Release()
	numArr.Release()
	out["struct<struct<int32, utf8>, int32>, sliced"] = array.NewSlice(outer, 1, 2)
	outer.Release()
	ids := array.NewInt8Builder(mem)
	ids.AppendValues([]int8{0, 1, 1, 0, 1}, nil)
	idArr := ids.NewArray()
	ids.Release()
	c0 := array.NewInt32Builder(mem)
	c0.AppendValues([]int32{1, 2, 3, 4, 5}, []bool{true, true, false, true, true})
	c0Arr := c0.NewArray()
	c0.Release()
	c1 := array.NewStringBuilder(mem)
	c1.AppendValues([]string{"a", "bb", "ccc", "d", "ee"}, nil)
	c1Arr := c1.NewArray()
	c1.Release()
	union, err := array.NewSparseUnionFromArraysWithFields(idArr, []arrow.Array{c0Arr, c1Arr}, []string{"i", "s"})
	if err != nil {
		panic(err)
	}
	idArr.Release()
	c0Arr.Release()
	c1Arr.Release()
	out["sparse union<int32, utf8>"] = union
	out["sparse union<int32, utf8>, sliced"] = array.NewSlice(union, 2, 5)

	ree := array.NewRunEndEncodedBuilder(mem, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float64)
	ree.Append(3)
	ree.ValueBuilder().(*array.Float64Builder).Append(1.5)
	ree.Append(2)
	ree.ValueBuilder().(*array.Float64Builder).Append(2.5)
	out["run-end encoded"] = ree.NewArray()
	ree.Release()
	return out
}

// eachExport calls f with every array of samples under each allocator of
// allocators, exported with FromArrow; what names it for messages.
func eachExport(t *testing.T, samples func(memory.Allocator) map[string]arrow.Array,
	f func(what, memName string, src arrow.Array, d *ferry.DeviceArray)) {
	for memName, mem := range allocators(t) {
		for name, src := range samples(mem) {
			what := memName + ": " + name
			d, err := FromArrow(src)
			if err != nil {
				t.Fatalf("%s: FromArrow: %v", what, err)
			}
			f(what, memName, src, d)
		}
	}
}

func TestArraysRoundTripWithEitherAllocator(t *testing.T) {
	counters(t)
	eachExport(t, sample, func(what, _ string, src arrow.Array, d *ferry.DeviceArray) {
		// The consumer keeps only ferry's array; collections in between
		// must not move or free the pinned buffers.
		runtime.GC()
		if err := d.Validate(ferry.ValidateFull); err != nil {
			t.Fatalf("%s: the core's FULL validation of the export: %v", what, err)
		}
		if d.Length() != int64(src.Len()) || d.DeviceType() != ferry.DeviceCPU {
			t.Fatalf("%s: length %d on %v", what, d.Length(), d.DeviceType())
		}
		back, err := ToArrow(d)
		if err != nil {
			t.Fatalf("%s: ToArrow: %v", what, err)
		}
		if !d.IsReleased() {
			t.Fatalf("%s: ToArrow must consume the array", what)
		}
		if !array.Equal(src, back) {
			t.Fatalf("%s: round trip gave %v, want %v", what, back, src)
		}
		src.Release()
		runtime.GC()
		// arrow-go's first reference is gone; the round trip's keeps
		// the data alive until its release.
		if !strings.Contains(back.String(), "") || back.Len() != back.Data().Len() {
			t.Fatalf("%s: %v", what, back)
		}
		back.Release()
	})
}

func TestTheExportIsZeroCopy(t *testing.T) {
	counters(t)
	mem := checkedGoMemory(t)
	b := array.NewInt32Builder(mem)
	b.AppendValues([]int32{7, 8, 9}, nil)
	src := b.NewArray().(*array.Int32)
	b.Release()
	d, err := FromArrow(src)
	if err != nil {
		t.Fatal(err)
	}
	src.Release() // the export holds its own reference
	runtime.GC()
	h, err := d.Host()
	if err != nil {
		t.Fatal(err)
	}
	values, err := ferry.Values[int32](h)
	if err != nil || len(values) != 3 || values[2] != 9 {
		t.Fatalf("values %v, %v", values, err)
	}
	addr := d.Buffer(1)
	back, err := ToArrow(d)
	if err != nil {
		t.Fatal(err)
	}
	if &back.Data().Buffers()[1].Bytes()[0] != (*byte)(addr) {
		t.Fatal("the round trip copied the values")
	}
	back.Release()
}

func TestFerryToArrowRecord(t *testing.T) {
	counters(t)
	ints, _ := ferry.CopySlice([]int32{10, 20, 30})
	offsets, _ := ferry.CopySlice([]int32{0, 1, 3, 6})
	data, _ := ferry.CopySlice([]byte("abbccc"))
	d, err := ferry.ExportArray(&ferry.ArrayData{Format: "+s", Length: 3, Buffers: []ferry.Buffer{{}},
		Metadata: []ferry.KeyValue{{Key: "origin", Value: "ferry"}},
		Children: []*ferry.ArrayData{
			{Format: "i", Name: "n", Length: 3, Buffers: []ferry.Buffer{{}, ints}},
			{Format: "u", Name: "s", Flags: ferry.FlagNullable, Length: 3, Buffers: []ferry.Buffer{{}, offsets, data}},
		}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ToRecord(d)
	if err != nil {
		t.Fatal(err)
	}
	if rec.NumRows() != 3 || rec.NumCols() != 2 || rec.ColumnName(1) != "s" {
		t.Fatalf("record %v", rec)
	}
	if v := rec.Column(1).(*array.String).Value(2); v != "ccc" {
		t.Fatalf("value %q", v)
	}
	if v, ok := rec.Schema().Metadata().GetValue("origin"); !ok || v != "ferry" {
		t.Fatalf("metadata lost: %v", rec.Schema().Metadata())
	}
	// And back: a record exported to ferry is a struct array.
	again, err := FromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	runtime.GC()
	h, err := again.Host()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := h.Child(1)
	if v, err := s.String(1); err != nil || v != "bb" || again.Schema().Format() != "+s" {
		t.Fatalf("record export: %q, %v", v, err)
	}
	again.Release()
}

// TestSlicedRecordCrosses: a Go user's record batch sliced with NewSlice,
// whose struct and sparse union columns arrow-go's cdata alone exports with
// their offsets applied twice, crosses with FromRecord, passes FULL
// validation, reads the right rows in ferry and comes back equal.
func TestSlicedRecordCrosses(t *testing.T) {
	counters(t)
	for memName, mem := range allocators(t) {
		cols := sample(mem)
		names := []string{"struct<int32, utf8>", "sparse union<int32, utf8>", "int64 with nulls"}
		var fields []arrow.Field
		var arrs []arrow.Array
		for _, n := range names {
			fields = append(fields, arrow.Field{Name: n, Type: cols[n].DataType(), Nullable: true})
			arrs = append(arrs, array.NewSlice(cols[n], 0, 3)) // three rows each
		}
		full := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, 3)
		for _, a := range arrs {
			a.Release()
		}
		for _, a := range cols {
			a.Release()
		}
		for _, bounds := range [][2]int64{{1, 3}, {2, 3}, {0, 3}, {1, 2}} {
			what := memName + ": rows " + string(rune('0'+bounds[0])) + ".." + string(rune('0'+bounds[1]))
			rec := full.NewSlice(bounds[0], bounds[1])
			d, err := FromRecord(rec)
			if err != nil {
				t.Fatalf("%s: FromRecord: %v", what, err)
			}
			if err := d.Validate(ferry.ValidateFull); err != nil {
				t.Fatalf("%s: FULL validation: %v", what, err)
			}
			// Row 0 of the slice, read through ferry: the struct's int32
			// child and the union's type id.
			h, err := d.Host()
			if err != nil {
				t.Fatal(err)
			}
			st, _ := h.Child(0)
			n, _ := st.Child(0)
			if v, err := ferry.Value[int32](n, st.Offset()); err != nil || v != int32(bounds[0]) {
				t.Fatalf("%s: the struct's first n is %d (%v), want %d", what, v, err, bounds[0])
			}
			back, err := ToRecord(d)
			if err != nil {
				t.Fatalf("%s: ToRecord: %v", what, err)
			}
			if !array.RecordEqual(rec, back) {
				t.Fatalf("%s: round trip gave\n%v\nwant\n%v", what, back, rec)
			}
			back.Release()
			rec.Release()
		}
		full.Release()
	}
}

func TestToArrowRefusals(t *testing.T) {
	counters(t)
	// Decreasing utf8 offsets: arrow-go would take them, and so does the
	// default (ValidateDefault: the structure); the explicit FULL does not,
	// and the array stays the caller's.
	offsets, _ := ferry.CopySlice([]int32{0, 4, 2, 6})
	data, _ := ferry.CopySlice([]byte("abcdef"))
	d, err := ferry.ExportArray(&ferry.ArrayData{Format: "u", Length: 3, Buffers: []ferry.Buffer{{}, offsets, data}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ToArrow(d, Options{Validate: ferry.ValidateFull})
	var fe *ferry.Error
	if !errors.As(err, &fe) || fe.Code != syscall.EINVAL ||
		!strings.HasPrefix(fe.Message, "the array fails validation: ") || !strings.Contains(fe.Message, "offsets") {
		t.Fatalf("decreasing offsets: %v", err)
	}
	if d.IsReleased() {
		t.Fatal("a refused array must stay the caller's")
	}
	d.Release()

	// Memory on another device: refused, naming ToHost.
	dev, err := ferry.ResolveDevice(ferry.DeviceSim, 0)
	if err != nil {
		t.Skipf("SKIP the sim part: no sim device: %v", err)
	}
	buf, err := dev.AllocBuffer(16)
	if err != nil {
		t.Fatal(err)
	}
	d, err = ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: 4, Buffers: []ferry.Buffer{{}, buf}}, &ferry.ExportOptions{Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ToArrow(d); err == nil || !strings.Contains(err.Error(), "ToHost") {
		t.Fatalf("a sim array: %v", err)
	}
	host, err := d.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ToArrow(host)
	if err != nil {
		t.Fatalf("after ToHost: %v", err)
	}
	if back.Len() != 4 {
		t.Fatal(back)
	}
	back.Release()
}

func TestSchemasBothWays(t *testing.T) {
	counters(t)
	f := arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true,
		Metadata: arrow.NewMetadata([]string{"k"}, []string{"v"})}
	s, err := FromArrowField(f)
	if err != nil {
		t.Fatal(err)
	}
	if s.Format() != "tsu:UTC" || s.Name() != "ts" {
		t.Fatalf("format %q name %q", s.Format(), s.Name())
	}
	back, err := ToArrowField(s)
	s.Release()
	if err != nil || !back.Equal(f) {
		t.Fatalf("field %v, %v; want %v", back, err, f)
	}
}

// records makes n record batches of schema {n: int32, s: utf8}.
func records(mem memory.Allocator, n int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int32},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	var out []arrow.RecordBatch
	for b := 0; b < n; b++ {
		rb := array.NewRecordBuilder(mem, schema)
		for i := 0; i < 3; i++ {
			rb.Field(0).(*array.Int32Builder).Append(int32(10*b + i))
			rb.Field(1).(*array.StringBuilder).Append(strings.Repeat("s", b+i))
		}
		out = append(out, rb.NewRecordBatch())
		rb.Release()
	}
	return schema, out
}

// checkedGoMemory is a checked Go-heap allocator that must be empty when the
// test ends. Exports let go of arrow-go's data when Go next looks after the
// consumer's release (ArrayData.AfterRelease): the check looks first.
func checkedGoMemory(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { ferry.ReleaseDeferred(); mem.AssertSize(t, 0) })
	return mem
}

// exportedRecords is ExportRecordReader of an arrow-go reader of records(mem,
// n) in checkedGoMemory, and their schema.
func exportedRecords(t *testing.T, n int) (*arrow.Schema, *ferry.DeviceArrayStream) {
	schema, recs := records(checkedGoMemory(t), n)
	src, err := array.NewRecordReader(schema, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	s, err := ExportRecordReader(src)
	if err != nil {
		t.Fatal(err)
	}
	return schema, s
}

func TestRecordReadersBothWays(t *testing.T) {
	counters(t)
	// arrow-go reader -> ferry stream -> arrow-go reader.
	schema, s := exportedRecords(t, 4)
	r, err := NewRecordReader(s)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Schema().Equal(schema) {
		t.Fatalf("schema %v, want %v", r.Schema(), schema)
	}
	batches := 0
	for r.Next() {
		rec := r.RecordBatch()
		runtime.GC()
		if rec.NumRows() != 3 || rec.Column(0).(*array.Int32).Value(2) != int32(10*batches+2) ||
			rec.Column(1).(*array.String).Value(1) != strings.Repeat("s", batches+1) {
			t.Fatalf("batch %d: %v", batches, rec)
		}
		batches++
	}
	if r.Err() != nil || batches != 4 {
		t.Fatalf("%d batches, %v", batches, r.Err())
	}
	r.Release()
}

func TestAnExportedReaderDrainedByCOnAnotherThread(t *testing.T) {
	counters(t)
	_, s := exportedRecords(t, 5)
	raw := ferry.NewRawStream()
	defer ferry.FreeRawStream(raw)
	if err := s.ExportTo(raw); err != nil {
		t.Fatal(err)
	}
	batches, elements, _, code, msg := chelper.DrainStream(raw, true)
	if code != 0 || batches != 5 || elements != 15 {
		t.Fatalf("C drained %d batches, %d rows: %v %s", batches, elements, code, msg)
	}
}

// A reader's error reaches the ferry consumer as the stream's error.
type failingReader struct {
	array.RecordReader
}

func (failingReader) Next() bool     { return false }
func (failingReader) Err() error     { return errors.New("the source broke") }
func (f failingReader) Release()     { f.RecordReader.Release() }
func (failingReader) Retain()        {}
func (failingReader) String() string { return "failingReader" }

func TestAReadersErrorReachesTheConsumer(t *testing.T) {
	counters(t)
	schema, _ := records(memory.DefaultAllocator, 0)
	inner, _ := array.NewRecordReader(schema, nil)
	s, err := ExportRecordReader(failingReader{inner})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if s.Next() || s.Err() == nil || !strings.Contains(s.Err().Error(), "the source broke") {
		t.Fatalf("stream error: %v", s.Err())
	}
}

func TestNewRecordReaderRefusals(t *testing.T) {
	counters(t)
	// Not a record stream: an int32 stream.
	v, _ := ferry.CopySlice([]int32{1})
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: 1, Buffers: []ferry.Buffer{{}, v}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := (&ferry.Field{Format: "i"}).Export()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ferry.NewStreamFromArrays(schema, ferry.DeviceCPU, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewRecordReader(s); err == nil || !strings.Contains(err.Error(), "+s") {
		t.Fatalf("an int32 stream: %v", err)
	}
	if !s.IsReleased() {
		t.Fatal("NewRecordReader owns the stream also when it fails")
	}
}

// TestImportCArray: ferryarrow.ImportCArray takes what arrow-go's cdata
// export made (the type parsed once, then from the cache: both give the
// same field and values); a structural lie is refused at the default level
// and a content lie at ValidateFull, each leaving both structs untouched.
func TestImportCArray(t *testing.T) {
	counters(t)
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator()) // cdata's export stores addresses in C memory
	defer mem.AssertSize(t, 0)
	b := array.NewStringBuilder(mem)
	b.AppendValues([]string{"go", "", "ferry"}, []bool{true, false, true})
	src := b.NewArray()
	b.Release()
	defer src.Release()
	raw, rawSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	defer ferry.FreeRawDeviceArray(raw)
	defer func() { ferry.FreeRawSchema(rawSchema) }() // the struct in use at the end
	// The first round parses the schema, the second takes the type from the cache.
	for round := 0; round < 2; round++ {
		cdata.ExportArrowArray(src, (*cdata.CArrowArray)(raw), (*cdata.CArrowSchema)(rawSchema))
		f, got, err := ImportCArray(raw, rawSchema)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !ferry.RawSchemaIsReleased(rawSchema) || !ferry.RawDeviceArrayIsReleased(raw) {
			t.Fatalf("round %d: both structs must be taken", round)
		}
		if f.Type.ID() != arrow.STRING || f.Name != "" || f.Nullable || !array.Equal(got, src) {
			t.Fatalf("round %d: %v %v", round, f, got)
		}
		got.Release()
	}

	// A structural lie (an int32 with one buffer): refused at DEFAULT.
	lie := chelper.HostileCPUArray(chelper.HostileNode(3, 0, 0, nil))
	defer ferry.FreeRawDeviceArray(lie)
	chelper.HostileSchema(rawSchema, "i", "x")
	_, _, err := ImportCArray(lie, rawSchema)
	if err == nil || !strings.Contains(err.Error(), "the array fails validation") {
		t.Fatalf("a structural lie: %v", err)
	}
	if ferry.RawSchemaIsReleased(rawSchema) || ferry.RawDeviceArrayIsReleased(lie) {
		t.Fatal("a refusal must leave both structs to the caller")
	}
	ferry.FreeRawSchema(rawSchema) // releases the hand-made schema
	rawSchema = ferry.NewRawSchema()

	// A content lie (decreasing utf8 offsets): passes DEFAULT, refused at FULL.
	offsets, _ := ferry.CopySlice([]int32{0, 4, 2, 6})
	data, _ := ferry.CopySlice([]byte("abcdef"))
	d, err := ferry.ExportArray(&ferry.ArrayData{Format: "u", Length: 3, Buffers: []ferry.Buffer{{}, offsets, data}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ExportTo(raw, rawSchema); err != nil {
		t.Fatal(err)
	}
	_, _, err = ImportCArray(raw, rawSchema, Options{Validate: ferry.ValidateFull})
	if err == nil || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("a content lie at FULL: %v", err)
	}
	if ferry.RawSchemaIsReleased(rawSchema) || ferry.RawDeviceArrayIsReleased(raw) {
		t.Fatal("a refusal must leave both structs to the caller")
	}
}

// flatSamples builds an array of every flat layout the direct import wraps
// (fixed width, bool, the four binary forms), with nulls and without.
func flatSamples(mem memory.Allocator) map[string]arrow.Array {
	out := map[string]arrow.Array{}
	types := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint8,
		arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int32,
		arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64,
		arrow.FixedWidthTypes.Float16, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Time32ms,
		arrow.FixedWidthTypes.Time64ns, arrow.FixedWidthTypes.Timestamp_us, arrow.FixedWidthTypes.Duration_s,
		&arrow.Decimal128Type{Precision: 20, Scale: 2}, &arrow.Decimal256Type{Precision: 40, Scale: 3},
		&arrow.FixedSizeBinaryType{ByteWidth: 3}, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
		arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeBinary,
	}
	for _, dt := range types {
		for _, nulls := range []bool{false, true} {
			var values []string
			for i := 0; i < 21; i++ {
				v := strconv.Itoa(i % 7) // numbers: every fixed-width type reads them
				switch dt.ID() {
				case arrow.BOOL:
					v = strconv.FormatBool(i%3 == 0)
				case arrow.STRING, arrow.LARGE_STRING:
					v = strconv.Quote(strings.Repeat("é", i%5))
				case arrow.BINARY, arrow.LARGE_BINARY:
					v = strconv.Quote(strings.Repeat("QUJD", i%3)) // base64
				case arrow.FIXED_SIZE_BINARY:
					v = `"YWJj"` // base64 of "abc"
				}
				if nulls && i%4 == 1 {
					v = "null"
				}
				values = append(values, v)
			}
			whole, _, err := array.FromJSON(mem, dt, strings.NewReader("["+strings.Join(values, ",")+"]"))
			if err != nil {
				panic(dt.String() + ": " + err.Error())
			}
			name := dt.String()
			if nulls {
				name += " with nulls"
			}
			out[name] = whole
			out[name+", sliced"] = array.NewSlice(whole, 3, 17)
		}
	}
	return out
}

// TestFlatLayoutsImportDirectly: every flat layout, whole and sliced, with
// and without nulls, crosses ToArrow and ImportCArray (which wrap its
// buffers where they are) equal to the source, and the producer's memory
// comes back once the last arrow-go reference is released.
func TestFlatLayoutsImportDirectly(t *testing.T) {
	counters(t)
	eachExport(t, flatSamples, func(what, memName string, src arrow.Array, d *ferry.DeviceArray) {
		back, err := ToArrow(d)
		if err != nil {
			t.Fatalf("%s: ToArrow: %v", what, err)
		}
		if !d.IsReleased() || !array.Equal(src, back) {
			t.Fatalf("%s: ToArrow gave %v, want %v", what, back, src)
		}
		back.Release()
		if memName != "mallocator" {
			// cdata's export stores Go-heap addresses in C memory,
			// which cgocheck2 refuses: ImportCArray's input comes
			// from C-allocated arrays only.
			src.Release()
			return
		}

		raw, rawSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
		cdata.ExportArrowArray(src, (*cdata.CArrowArray)(raw), (*cdata.CArrowSchema)(rawSchema))
		_, got, err := ImportCArray(raw, rawSchema)
		if err != nil {
			t.Fatalf("%s: ImportCArray: %v", what, err)
		}
		if !ferry.RawDeviceArrayIsReleased(raw) || !array.Equal(src, got) {
			t.Fatalf("%s: ImportCArray gave %v, want %v", what, got, src)
		}
		ferry.FreeRawDeviceArray(raw)
		ferry.FreeRawSchema(rawSchema)
		want := src.String()
		src.Release()
		runtime.GC() // the import alone keeps the data alive
		if got.String() != want {
			t.Fatalf("%s: %v", what, got)
		}
		got.Release()
	})
}
