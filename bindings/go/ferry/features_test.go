package ferry_test

// The capability table of docs/features.md, one test per row, named
// TestFeature_<id> (scripts/check_features.sh matches the names against
// the table's Go column). Each calls the capability through the public API
// and asserts something that fails when it breaks. Device capabilities run
// on the simulated device in strict mode (queued work runs only when waited
// for, unwaited reads see poison), so a missing wait shows; gpu_test.go
// covers the same on the emulated CUDA and ROCm drivers.

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/ferryarrow"
	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

// settled checks at the end of the test that every export, allocation and
// hostile node was given back.
func settled(t *testing.T) {
	t.Helper()
	allocs, exports := ferry.LiveAllocations(), ferry.LiveExports()
	t.Cleanup(func() {
		if got := ferry.LiveAllocations(); got != allocs {
			t.Errorf("ferry allocations %d, %d before", got, allocs)
		}
		if got := ferry.LiveExports(); got != exports {
			t.Errorf("core exports %d, %d before", got, exports)
		}
	})
}

// sim is the simulated device in strict mode, as a gpu of gpu_test.go.
func sim(t *testing.T) gpu {
	t.Helper()
	dev, err := ferry.ResolveDevice(ferry.DeviceSim, 0)
	if err != nil {
		t.Fatalf("the sim device: %v", err)
	}
	cpu, _ := ferry.ResolveDevice(ferry.DeviceCPU, -1)
	if !ferry.SimIsStrict() {
		ferry.SimSetStrict(true)
		t.Cleanup(func() { ferry.SimSetStrict(false) })
	}
	return gpu{name: "sim", typ: ferry.DeviceSim, dev: dev, cpu: cpu}
}

func (g gpu) stream(t *testing.T) unsafe.Pointer {
	t.Helper()
	s, err := g.dev.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = g.dev.StreamSynchronize(s)
		_ = g.dev.StreamDestroy(s)
	})
	return s
}

// raw reads n int32 at p with no wait (what an unsynchronized reader sees).
func raw(p unsafe.Pointer, n int) []int32 { return slices.Clone(unsafe.Slice((*int32)(p), n)) }

// waitAndCheck waits (on the host) for a's event, then reads want from its
// values buffer.
func waitAndCheck(t *testing.T, a *ferry.DeviceArray, want []int32) {
	t.Helper()
	if err := a.Wait(nil); err != nil {
		t.Fatal(err)
	}
	if got := raw(a.Buffer(1), len(want)); !slices.Equal(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func TestFeature_export_array(t *testing.T) {
	settled(t)
	values := []int32{7, 8, 9}
	var released atomic.Int32
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Name: "x", Length: 3,
		Buffers:   []ferry.Buffer{{}, ferry.PinSlice(values)}, // Go memory, zero-copy
		OnRelease: func() { released.Add(1) }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Buffer(1) != unsafe.Pointer(&values[0]) {
		t.Fatal("the export copied the Go slice")
	}
	dst := ferry.NewRawDeviceArray()
	defer ferry.FreeRawDeviceArray(dst)
	if err := a.ExportTo(dst, nil); err != nil {
		t.Fatal(err)
	}
	if first := chelper.ConsumeArray(dst); first != 7 { // a C consumer reads and releases
		t.Fatalf("the C consumer read %d", first)
	}
	if released.Load() != 1 {
		t.Fatalf("the release hook ran %d times", released.Load())
	}
}

func TestFeature_import_array(t *testing.T) {
	settled(t)
	src, _ := ferry.CopySlice([]int32{1, 2, 3, 4})
	validity, _ := ferry.CopySlice([]byte{0b1101})
	exported, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Name: "x", Flags: ferry.FlagNullable, Length: 4,
		NullCount: 1, Buffers: []ferry.Buffer{validity, src}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rawArray, rawSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	defer ferry.FreeRawDeviceArray(rawArray)
	defer ferry.FreeRawSchema(rawSchema)
	if err := exported.ExportTo(rawArray, rawSchema); err != nil { // what a producer hands over
		t.Fatal(err)
	}
	a, err := ferry.ImportDeviceArray(rawArray, rawSchema)
	if err != nil {
		t.Fatal(err)
	}
	if !ferry.RawDeviceArrayIsReleased(rawArray) {
		t.Fatal("the import must move the array out")
	}
	if err := a.Validate(ferry.ValidateFull); err != nil {
		t.Fatal(err)
	}
	h, err := a.Host() // waits on the sync event
	if err != nil {
		t.Fatal(err)
	}
	v, err := ferry.Value[int32](h, 3)
	valid, _ := h.IsValid(1)
	if err != nil || v != 4 || valid {
		t.Fatalf("value 3 = %d (%v), element 1 valid: %v", v, err, valid)
	}
	a.Release()
}

func TestFeature_export_stream(t *testing.T) {
	settled(t)
	n := 0
	s, err := ferry.ExportDataStream(ferry.Field{Format: "i", Name: "x"}, ferry.DeviceCPU, nil,
		func() (*ferry.ArrayData, error) {
			if n == 4 {
				return nil, nil
			}
			n++
			b, _ := ferry.CopySlice([]int32{int32(n), int32(n)})
			return &ferry.ArrayData{Format: "i", Length: 2, Buffers: []ferry.Buffer{{}, b}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	out := ferry.NewRawStream()
	defer ferry.FreeRawStream(out)
	if err := s.ExportTo(out); err != nil {
		t.Fatal(err)
	}
	batches, elements, _, code, msg := chelper.DrainStream(out, true) // C, on a new thread
	if code != 0 || batches != 4 || elements != 8 {
		t.Fatalf("C read %d batches, %d elements: %v %s", batches, elements, code, msg)
	}
}

func TestFeature_import_stream(t *testing.T) {
	settled(t)
	schema, _ := (&ferry.Field{Format: "i", Name: "x"}).Export()
	var arrays []*ferry.DeviceArray
	for i := 0; i < 3; i++ {
		b, _ := ferry.CopySlice([]int32{int32(10 * i)})
		a, err := ferry.ExportArrayNoSchema(&ferry.ArrayData{Format: "i", Length: 1, Buffers: []ferry.Buffer{{}, b}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		arrays = append(arrays, a)
	}
	produced, err := ferry.NewStreamFromArrays(schema, ferry.DeviceCPU, arrays...)
	if err != nil {
		t.Fatal(err)
	}
	s := throughC(t, produced)
	defer s.Release()
	var got []int32
	for b, err := range s.All() {
		if err != nil {
			t.Fatal(err)
		}
		h, err := b.Host()
		if err != nil {
			t.Fatal(err)
		}
		v, err := ferry.Value[int32](h, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int32{0, 10, 20}) {
		t.Fatalf("batches %v", got)
	}
}

func TestFeature_to_host(t *testing.T) {
	settled(t)
	g := sim(t)
	a := g.array(t, g.stream(t), []int32{5, 6})
	if a.DeviceType() != ferry.DeviceSim {
		t.Fatal("not a sim array")
	}
	host, err := a.ToHost() // waits on the event, then copies
	if err != nil {
		t.Fatal(err)
	}
	if !a.IsReleased() || host.DeviceType() != ferry.DeviceCPU {
		t.Fatal("ToHost must consume the source and give a CPU array")
	}
	if got := raw(host.Buffer(1), 2); !slices.Equal(got, []int32{5, 6}) {
		t.Fatalf("values %v", got)
	}
	host.Release()
}

func TestFeature_copy_to_device(t *testing.T) {
	settled(t)
	sim(t)
	b, _ := ferry.CopySlice([]int32{1, 2, 3})
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: 3, Buffers: []ferry.Buffer{{}, b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	onSim, err := a.CopyTo(ferry.DeviceSim, 1)
	if err != nil {
		t.Fatal(err)
	}
	if onSim.DeviceType() != ferry.DeviceSim || onSim.DeviceID() != 1 || a.IsReleased() {
		t.Fatalf("copy on %v:%d, source released %v", onSim.DeviceType(), onSim.DeviceID(), a.IsReleased())
	}
	if got := raw(onSim.Buffer(1), 3); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("copy holds %v", got)
	}
	onSim.Release()
	a.Release()
}

func TestFeature_move_to_device(t *testing.T) {
	settled(t)
	g := sim(t)
	a := g.array(t, g.stream(t), []int32{4, 5})
	addr := a.Buffer(1)
	same, err := a.MoveToDevice(nil, ferry.DeviceSim, 0) // reachable: zero-copy
	if err != nil {
		t.Fatal(err)
	}
	if same.Buffer(1) != addr || !a.IsReleased() {
		t.Fatal("a move to the device the memory is on copied")
	}
	other, err := same.MoveToDevice(nil, ferry.DeviceSim, 2) // another device: a copy
	if err != nil {
		t.Fatal(err)
	}
	if other.DeviceID() != 2 || other.Buffer(1) == addr || !slices.Equal(raw(other.Buffer(1), 2), []int32{4, 5}) {
		t.Fatalf("moved to sim:%d: %v", other.DeviceID(), raw(other.Buffer(1), 2))
	}
	other.Release()
}

func TestFeature_consumer_stream_array(t *testing.T) {
	settled(t)
	g := sim(t)
	a := g.array(t, g.stream(t), []int32{11, 12, 13, 14})
	if poison := raw(a.Buffer(1), 1)[0]; poison == 11 {
		t.Fatal("strict mode: the data must not be there before the wait")
	}
	consumer := g.stream(t)
	if err := a.Wait(consumer); err != nil { // the consumer stream waits, the host does not
		t.Fatal(err)
	}
	if err := g.dev.StreamSynchronize(consumer); err != nil {
		t.Fatal(err)
	}
	if got := raw(a.Buffer(1), 4); !slices.Equal(got, []int32{11, 12, 13, 14}) {
		t.Fatalf("after the consumer stream: %v", got)
	}
	a.Release()
}

func TestFeature_consumer_stream_batch(t *testing.T) {
	settled(t)
	g := sim(t)
	producer, consumer := g.stream(t), g.stream(t)
	n := int32(0)
	s, err := ferry.ExportDataStream(ferry.Field{Format: "i"}, ferry.DeviceSim,
		&ferry.ExportOptions{Device: g.dev, ProducerStream: producer, Policy: ferry.SyncRecordEvent},
		func() (*ferry.ArrayData, error) {
			if n == 3 {
				return nil, nil
			}
			n++
			return g.data(t, producer, []int32{n, n * n}), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	seen := int32(0)
	for s.NextOn(consumer) {
		seen++
		if err := g.dev.StreamSynchronize(consumer); err != nil {
			t.Fatal(err)
		}
		if got := raw(s.Batch().Buffer(1), 2); !slices.Equal(got, []int32{seen, seen * seen}) {
			t.Fatalf("batch %d: %v", seen, got)
		}
	}
	if s.Err() != nil || seen != 3 {
		t.Fatalf("%d batches, %v", seen, s.Err())
	}
}

func TestFeature_wrap_native_stream(t *testing.T) {
	settled(t)
	// The native stream of the device (a sim stream here; a CUstream or
	// hipStream_t value on a GPU, gpu_test.go uses one made by the driver
	// itself): the producer's work is queued on it and ferry records its
	// event there.
	g := sim(t)
	theirs := g.stream(t)
	a := g.array(t, theirs, []int32{21, 22})
	if a.SyncEvent() == nil {
		t.Fatal("no event was recorded on the producer's stream")
	}
	waitAndCheck(t, a, []int32{21, 22})
	a.Release()
	for _, g := range gpus(t) {
		theirs := g.nativeStream(t)
		a := g.array(t, theirs, []int32{23})
		host, err := a.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if got := raw(host.Buffer(1), 1); got[0] != 23 {
			t.Fatalf("%s: %v", g.name, got)
		}
		host.Release()
	}
}

func TestFeature_wrap_native_event(t *testing.T) {
	settled(t)
	g := sim(t)
	theirs := g.stream(t)
	event, err := g.dev.EventCreate()
	if err != nil {
		t.Fatal(err)
	}
	data := g.data(t, theirs, []int32{31, 32})
	if err := g.dev.EventRecord(event, theirs); err != nil {
		t.Fatal(err)
	}
	var destroyed atomic.Int32
	a, err := ferry.ExportArray(data, &ferry.ExportOptions{Device: g.dev, SyncEvent: event,
		ReleaseEvent: func() { destroyed.Add(1); _ = g.dev.EventDestroy(event) }})
	if err != nil {
		t.Fatal(err)
	}
	if a.SyncEvent() != event {
		t.Fatal("the producer's event was not passed through")
	}
	waitAndCheck(t, a, []int32{31, 32})
	a.Release()
	if destroyed.Load() != 1 {
		t.Fatalf("the event's release ran %d times", destroyed.Load())
	}
}

func TestFeature_dlpack_export(t *testing.T) {
	settled(t)
	b, _ := ferry.CopySlice([]int64{3, 6, 9})
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "l", Length: 3, Buffers: []ferry.Buffer{{}, b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := a.Buffer(1)
	tensor, err := a.ToDLPack(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ferry.DescribeDLPack(tensor)
	if err != nil {
		t.Fatal(err)
	}
	if d.Data != addr || d.Code != ferry.DLPackInt || d.Bits != 64 || !slices.Equal(d.Shape, []int64{3}) ||
		d.Flags&ferry.DLPackFlagReadOnly == 0 {
		t.Fatalf("tensor %+v", d)
	}
	ferry.DeleteDLPack(tensor) // releases the array
}

func TestFeature_dlpack_import(t *testing.T) {
	settled(t)
	deleted := chelper.DLPackDeleted()
	a, schema, err := ferry.FromDLPack(chelper.DLPackTensor(5, 1))
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.Host()
	if err != nil {
		t.Fatal(err)
	}
	v, err := ferry.Values[int64](h)
	if err != nil || schema.Format() != "l" || !slices.Equal(v, []int64{0, 3, 6, 9, 12}) {
		t.Fatalf("%q %v %v", schema.Format(), v, err)
	}
	a.Release()
	if chelper.DLPackDeleted() != deleted+1 {
		t.Fatal("the tensor's deleter must run once, at release")
	}
}

func TestFeature_arrow_array_interop(t *testing.T) {
	settled(t)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	// Exports let go of arrow-go's data when Go next looks after the
	// consumer's release (ArrayData.AfterRelease): look, then count.
	defer func() { ferry.ReleaseDeferred(); mem.AssertSize(t, 0) }()
	b := array.NewStringBuilder(mem)
	b.AppendValues([]string{"go", "", "arrow"}, []bool{true, false, true})
	src := b.NewArray()
	b.Release()
	d, err := ferryarrow.FromArrow(src) // zero-copy, Go memory pinned until release
	if err != nil {
		t.Fatal(err)
	}
	src.Release()
	h, err := d.Host()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := h.String(2); err != nil || s != "arrow" {
		t.Fatalf("%q %v", s, err)
	}
	back, err := ferryarrow.ToArrow(d) // validated, then moved into arrow-go
	if err != nil {
		t.Fatal(err)
	}
	if back.DataType().ID() != arrow.STRING || back.(*array.String).Value(0) != "go" || !back.IsNull(1) {
		t.Fatalf("%v", back)
	}
	back.Release()
}

func TestFeature_arrow_stream_bridge(t *testing.T) {
	settled(t)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer func() { ferry.ReleaseDeferred(); mem.AssertSize(t, 0) }() // see TestFeature_arrow_array_interop
	schema, recs := recordBatches(mem, 3)
	src, _ := array.NewRecordReader(schema, recs)
	for _, r := range recs {
		r.Release()
	}
	s, err := ferryarrow.ExportRecordReader(src) // arrow-go reader -> ferry stream
	if err != nil {
		t.Fatal(err)
	}
	r, err := ferryarrow.NewRecordReader(s) // ferry stream -> arrow-go reader
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	rows := int64(0)
	for r.Next() {
		rows += r.RecordBatch().NumRows()
	}
	if r.Err() != nil || rows != 6 || !r.Schema().Equal(schema) {
		t.Fatalf("%d rows, %v", rows, r.Err())
	}
}

func recordBatches(mem memory.Allocator, n int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var out []arrow.RecordBatch
	for i := 0; i < n; i++ {
		rb := array.NewRecordBuilder(mem, schema)
		rb.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(i), int64(i)}, nil)
		out = append(out, rb.NewRecordBatch())
		rb.Release()
	}
	return schema, out
}

func TestFeature_validate(t *testing.T) {
	settled(t)
	a := importHostile(t, utf8Array([]int32{0, 4, 2, 6}, "abcdef"), ferry.Field{Format: "u", Name: "s"})
	defer a.Release()
	if err := a.Validate(ferry.ValidateDefault); err != nil {
		t.Fatalf("DEFAULT does not read offsets: %v", err)
	}
	findings, err := a.Findings(ferry.ValidateFull)
	if err == nil || len(findings) == 0 || findings[0].Rule != "offsets" || !strings.Contains(findings[0].What, "decrease") {
		t.Fatalf("FULL: %v, %+v", err, findings)
	}
	schema := a.Schema()
	prepared, err := schema.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	defer prepared.Free()
	if err := prepared.Validate(a, ferry.ValidateFull); err == nil || err.Error() != ferryErr(a.Validate(ferry.ValidateFull)) {
		t.Fatalf("the prepared schema's finding differs: %v", err)
	}
}

func ferryErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFeature_devices(t *testing.T) {
	settled(t)
	backends := ferry.Backends()
	if err, ok := backends["sim"]; !ok || err != nil {
		t.Fatalf("backends %v", backends)
	}
	if _, ok := backends["cuda"]; !ok {
		t.Fatalf("the cuda backend is not listed: %v", backends)
	}
	dev, err := ferry.ResolveDevice(ferry.DeviceSim, 3)
	if err != nil {
		t.Fatal(err)
	}
	if dev.Type() != ferry.DeviceSim || dev.ID() != 3 || !dev.HostAccessible() {
		t.Fatalf("sim:3 is %v:%d", dev.Type(), dev.ID())
	}
	before := dev.LiveAllocations()
	p, err := dev.Allocate(256)
	if err != nil || p == nil || dev.LiveAllocations() != before+1 {
		t.Fatalf("allocate: %v", err)
	}
	if err := dev.Deallocate(p); err != nil || dev.LiveAllocations() != before {
		t.Fatalf("deallocate: %v", err)
	}
	if _, err := ferry.ResolveDevice(ferry.DeviceType(999), 0); err == nil {
		t.Fatal("device type 999 resolved")
	}
}

func TestFeature_export_async(t *testing.T) {
	settled(t)
	c, err := ferry.NewAsyncConsumer(2) // the core's consumer, judging the protocol
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := exportInt32Batches(t, c.Handler(), 3) // pushed from the producer's own goroutine
	got := asyncValues(t, c, nil, func(h ferry.HostArray) (int32, error) { return ferry.Value[int32](h, 1) })
	if fmt.Sprint(got) != "[1 11 21]" {
		t.Fatalf("batches %v", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFeature_import_async(t *testing.T) {
	settled(t)
	schema, recs := records(t, mallocator.NewMallocator(), 3) // C memory: see TestAsyncFromArrowGo
	c, err := ferry.NewAsyncConsumer(2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	readAll, done := arrowGoProducer(schema, recs, c.Handler()) // arrow-go's producer (async_test.go)
	lastArrived := func(k int) {
		if k == len(recs)-1 {
			close(readAll)
		}
	}
	got := asyncValues(t, c, lastArrived, func(h ferry.HostArray) (int64, error) {
		col, err := h.Child(0)
		if err != nil {
			return 0, err
		}
		return ferry.Value[int64](col, 1)
	})
	if fmt.Sprint(got) != "[100 101 102]" {
		t.Fatalf("batches %v", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
}

// TestFeature_import_c_stream: a plain ArrowArrayStream (the C stream
// interface) made by arrow-go's cdata.ExportRecordReader is imported with
// ImportCStream and read as a CPU device stream, each batch validated; a
// released stream is refused.
func TestFeature_import_c_stream(t *testing.T) {
	settled(t)
	// C memory: arrow-go's export stores buffer addresses in C memory
	// unpinned (GOEXPERIMENT=cgocheck2 in test.sh).
	schema, recs := recordBatches(mallocator.NewMallocator(), 3)
	src, _ := array.NewRecordReader(schema, recs)
	for _, r := range recs {
		r.Release()
	}
	raw := ferry.NewRawCStream()
	defer ferry.FreeRawCStream(raw)
	cdata.ExportRecordReader(src, (*cdata.CArrowArrayStream)(raw))
	s, err := ferry.ImportCStream(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if !ferry.RawCStreamIsReleased(raw) || s.DeviceType() != ferry.DeviceCPU {
		t.Fatalf("the stream must be moved in as a CPU stream (%v)", s.DeviceType())
	}
	var got []int64
	for s.Next() {
		b := s.Batch()
		if b.Validated() != ferry.ValidateDefault {
			t.Fatalf("batch validated at %v", b.Validated())
		}
		h, err := b.Host()
		if err != nil {
			t.Fatal(err)
		}
		col, err := h.Child(0)
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(0); i < col.Len(); i++ {
			v, err := ferry.Value[int64](col, i)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
	}
	if s.Err() != nil || !slices.Equal(got, []int64{0, 0, 1, 1, 2, 2}) {
		t.Fatalf("read %v, %v", got, s.Err())
	}
	if _, err := ferry.ImportCStream(raw); err == nil || !strings.Contains(err.Error(), "released") {
		t.Fatalf("a released stream: %v", err)
	}
}

// TestFeature_export_c_stream: a ferry stream is exported as a plain
// ArrowArrayStream with ExportToCStream and read by arrow-go's
// cdata.ImportCRecordReader (record batches of one column); a batch that
// fails validation ends arrow-go's reader with the validator's finding.
func TestFeature_export_c_stream(t *testing.T) {
	settled(t)
	field := ferry.Field{Format: "i", Name: "x"}
	var arrays []*ferry.DeviceArray
	for k := 0; k < 3; k++ {
		buf, err := ferry.CopySlice([]int32{int32(k), int32(10 * k)})
		if err != nil {
			t.Fatal(err)
		}
		a, err := ferry.ExportArrayNoSchema(&ferry.ArrayData{Length: 2, Buffers: []ferry.Buffer{{}, buf}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		arrays = append(arrays, a)
	}
	schema, err := field.Export()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ferry.NewStreamFromArrays(schema, ferry.DeviceCPU, arrays...)
	if err != nil {
		t.Fatal(err)
	}
	raw := ferry.NewRawCStream()
	defer ferry.FreeRawCStream(raw)
	if err := s.ExportToCStream(raw, ferry.CStreamOptions{RecordBatches: true}); err != nil {
		t.Fatal(err)
	}
	if !s.IsReleased() {
		t.Fatal("ExportToCStream must consume the stream")
	}
	rdr, err := cdata.ImportCRecordReader((*cdata.CArrowArrayStream)(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rdr.(array.RecordReader)
	var got []int32
	for r.Next() {
		got = append(got, r.RecordBatch().Column(0).(*array.Int32).Int32Values()...)
	}
	err = r.Err()
	r.Release()
	if err != nil || !slices.Equal(got, []int32{0, 0, 1, 10, 2, 20}) {
		t.Fatalf("arrow-go read %v, %v", got, err)
	}

	// A producer whose batch fails validation: arrow-go's reader ends with
	// the finding.
	bad := ferry.NewRawStream()
	defer ferry.FreeRawStream(bad)
	chelper.HostileStream(bad, chelper.StreamBadBatch, 0)
	hs, err := ferry.ImportStream(bad)
	if err != nil {
		t.Fatal(err)
	}
	raw2 := ferry.NewRawCStream()
	defer ferry.FreeRawCStream(raw2)
	// Decreasing offsets: a FULL finding, the level asked for here.
	if err := hs.ExportToCStream(raw2, ferry.CStreamOptions{Validate: ferry.ValidateFull}); err != nil {
		t.Fatal(err)
	}
	rdr, err = cdata.ImportCRecordReader((*cdata.CArrowArrayStream)(raw2), nil)
	if err == nil {
		r = rdr.(array.RecordReader)
		for r.Next() {
		}
		err = r.Err()
		r.Release()
	}
	if err == nil || !strings.Contains(err.Error(), "fails validation") {
		t.Fatalf("a bad batch: %v", err)
	}
}
