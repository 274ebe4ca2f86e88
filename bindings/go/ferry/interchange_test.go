package ferry

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

// Tests of the GPU interchange functions (consumer streams, moves between
// devices, DLPack), the export policies, streams from arrays, the stream
// trampoline's batch descriptions and the lazy leak guard. Device cases run
// on ferry's sim device in strict mode, where memory written by queued work
// reads as SimPoisonByte until something waits for that work: reading too
// early fails these tests deterministically.

// consumerStream is a new stream of dev for the consumer's side, destroyed
// at the end of the test.
func consumerStream(t *testing.T, dev *Device) unsafe.Pointer {
	t.Helper()
	stream, err := dev.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.StreamDestroy(stream) })
	return stream
}

// simDevice returns sim device 0 and the CPU, in strict mode for the test,
// whose allocations and exports must all be given back (baseline).
func simDevice(t *testing.T) (*Device, *Device) {
	t.Helper()
	baseline(t)
	dev, err := ResolveDevice(DeviceSim, 0)
	if err != nil {
		t.Skipf("SKIP: the sim device is not available: %v", err)
	}
	cpu, err := ResolveDevice(DeviceCPU, -1)
	if err != nil {
		t.Fatal(err)
	}
	was := SimIsStrict()
	SimSetStrict(true)
	t.Cleanup(func() { SimSetStrict(was) })
	before := dev.LiveAllocations()
	t.Cleanup(func() {
		if got := dev.LiveAllocations(); got != before {
			t.Errorf("sim allocations: %d at start, %d at end", before, got)
		}
	})
	return dev, cpu
}

func squares(n int, base int32) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = base + int32(i*i)
	}
	return v
}

// simData copies values to a sim buffer on a new producer stream (queued,
// not run) and describes the array; the stream is synchronized and destroyed
// at release. The caller exports it with opts from simOptions.
func simData(t *testing.T, dev, cpu *Device, values []int32) (*ArrayData, unsafe.Pointer) {
	t.Helper()
	stream, err := dev.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	host, err := CopySlice(values)
	if err != nil {
		t.Fatal(err)
	}
	devBuf, err := dev.AllocBuffer(host.Size())
	if err != nil {
		t.Fatal(err)
	}
	if err := Memcpy(dev, devBuf.Ptr(), cpu, host.Ptr(), host.Size(), stream); err != nil {
		t.Fatal(err)
	}
	return &ArrayData{Format: "i", Name: "sq", Length: int64(len(values)), Buffers: []Buffer{{}, devBuf},
		Keep: []Buffer{host}, OnRelease: func() {
			_ = dev.StreamSynchronize(stream)
			_ = dev.StreamDestroy(stream)
		}}, stream
}

// simExport exports values written on the sim device by simData with the
// given synchronization policy.
func simExport(t *testing.T, dev, cpu *Device, values []int32, policy SyncPolicy) *DeviceArray {
	t.Helper()
	data, stream := simData(t, dev, cpu, values)
	a, err := ExportArray(data, &ExportOptions{Device: dev, ProducerStream: stream, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// readInt32 reads n values of a host-readable buffer.
func readInt32(p unsafe.Pointer, n int) []int32 {
	return append([]int32(nil), unsafe.Slice((*int32)(p), n)...)
}

// poisoned reports whether every byte of the n int32 values at p is the sim
// poison byte.
func poisoned(p unsafe.Pointer, n int) bool {
	for _, b := range unsafe.Slice((*byte)(p), 4*n) {
		if b != SimPoisonByte {
			return false
		}
	}
	return true
}

func TestSimStrictModeReadsPoisonUntilTheEventIsWaitedOn(t *testing.T) {
	dev, cpu := simDevice(t)
	want := squares(32, 1)
	a := simExport(t, dev, cpu, want, SyncRecordEvent)
	defer a.Release()
	if a.SyncEvent() == nil {
		t.Fatal("SyncRecordEvent must export an event")
	}
	if !poisoned(a.Buffer(1), 32) {
		t.Fatal("strict mode: data read before waiting must be poison (else this test cannot fail)")
	}
	if err := a.Wait(nil); err != nil {
		t.Fatal(err)
	}
	if got := readInt32(a.Buffer(1), 32); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after Wait: %v", got[:4])
	}
}

func TestExportSynchronizeExportsNoEventAndReadyData(t *testing.T) {
	dev, cpu := simDevice(t)
	want := squares(16, 5)
	a := simExport(t, dev, cpu, want, SyncSynchronize)
	defer a.Release()
	if a.SyncEvent() != nil {
		t.Fatal("SyncSynchronize must export sync_event NULL")
	}
	if got := readInt32(a.Buffer(1), 16); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("synchronized export reads %v", got[:4])
	}
}

func TestProducersOwnEventIsPassedThroughAndReleasedOnce(t *testing.T) {
	dev, cpu := simDevice(t)
	want := squares(8, 2)
	data, stream := simData(t, dev, cpu, want)
	ev, err := dev.EventCreate()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.EventRecord(ev, stream); err != nil {
		t.Fatal(err)
	}
	var released atomic.Int32
	a, err := ExportArray(data, &ExportOptions{Device: dev, SyncEvent: ev, ReleaseEvent: func() {
		released.Add(1)
		if err := dev.EventDestroy(ev); err != nil {
			t.Errorf("EventDestroy: %v", err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if a.SyncEvent() != ev || a.DeviceType() != DeviceSim || a.DeviceID() != 0 {
		t.Fatalf("event %p (want %p), device %v/%d", a.SyncEvent(), ev, a.DeviceType(), a.DeviceID())
	}
	if !poisoned(a.Buffer(1), 8) {
		t.Fatal("the producer's event has not been waited on: expected poison")
	}
	if err := a.Wait(nil); err != nil {
		t.Fatal(err)
	}
	if got := readInt32(a.Buffer(1), 8); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after Wait: %v", got)
	}
	if released.Load() != 0 {
		t.Fatal("the event was released while the array is live")
	}
	a.Release()
	a.Release()
	if released.Load() != 1 {
		t.Fatalf("ReleaseEvent ran %d times, want exactly once", released.Load())
	}
}

func TestExportOptionsThatContradictEachOtherAreRefused(t *testing.T) {
	dev, cpu := simDevice(t)
	someEvent := unsafe.Pointer(&struct{ x int }{}) // never dereferenced: refused before use
	cases := []struct {
		opts *ExportOptions
		msg  string
	}{
		{&ExportOptions{SyncEvent: someEvent}, "needs the Device"},
		{&ExportOptions{Device: dev, SyncEvent: someEvent, ProducerStream: someEvent}, "exclude each other"},
		{&ExportOptions{ReleaseEvent: func() {}}, "without a SyncEvent"},
	}
	for _, c := range cases {
		buf, _ := CopySlice([]int32{1, 2})
		_, err := ExportArray(&ArrayData{Format: "i", Length: 2, Buffers: []Buffer{{}, buf}}, c.opts)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: got %v, want EINVAL naming %q", c.opts, err, c.msg)
		}
	}
	// A failing export leaves the producer's event with the producer.
	ev, err := dev.EventCreate()
	if err != nil {
		t.Fatal(err)
	}
	called := 0
	buf, _ := dev.AllocBuffer(8)
	_, err = ExportArray(&ArrayData{Format: "i", Length: -1, Buffers: []Buffer{{}, buf}},
		&ExportOptions{Device: dev, SyncEvent: ev, ReleaseEvent: func() { called++ }})
	if err == nil || called != 0 {
		t.Fatalf("failed export: err %v, ReleaseEvent called %d times (want an error and 0)", err, called)
	}
	if err := dev.EventDestroy(ev); err != nil {
		t.Fatal(err)
	}
	if _, err := ExportDataStream(int32Field, DeviceSim, &ExportOptions{Device: dev, SyncEvent: ev},
		func() (*ArrayData, error) { return nil, nil }); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("a stream with one SyncEvent for every batch: %v", err)
	}
	_ = cpu
}

// simStream exports a stream of n sim batches, each with its own event
// (batch b holds squares(size, b*1000)).
func simStream(t *testing.T, dev, cpu *Device, n, size int) *DeviceArrayStream {
	t.Helper()
	b := 0
	s, err := ExportStream(int32Field, DeviceSim, func() (*DeviceArray, error) {
		if b == n {
			return nil, nil
		}
		data, stream := simData(t, dev, cpu, squares(size, int32(b*1000)))
		b++
		return ExportArrayNoSchema(data, &ExportOptions{Device: dev, ProducerStream: stream, Policy: SyncRecordEvent})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNextOnHandsEachBatchToTheConsumerStream(t *testing.T) {
	dev, cpu := simDevice(t)
	consumer := consumerStream(t, dev)
	s := simStream(t, dev, cpu, 4, 16)
	defer s.Release()

	// Plain Next hands nothing over: the batch still reads poison.
	if !s.Next() || !poisoned(s.Batch().Buffer(1), 16) {
		t.Fatalf("batch 0 via Next: expected poison (err %v)", s.Err())
	}
	// NextOn(consumer) queues the wait on the consumer stream and does not
	// block the host: poison until that stream is synchronized, then data.
	if !s.NextOn(consumer) {
		t.Fatal(s.Err())
	}
	if !poisoned(s.Batch().Buffer(1), 16) {
		t.Fatal("NextOn must not block the host (the sim runs queued work only on demand)")
	}
	if err := dev.StreamSynchronize(consumer); err != nil {
		t.Fatal(err)
	}
	if got := readInt32(s.Batch().Buffer(1), 16); fmt.Sprint(got) != fmt.Sprint(squares(16, 1000)) {
		t.Fatalf("batch 1 after the consumer stream: %v", got[:4])
	}
	// NextOn(nil): the host waits, the batch is readable at once.
	if !s.NextOn(nil) {
		t.Fatal(s.Err())
	}
	if got := readInt32(s.Batch().Buffer(1), 16); fmt.Sprint(got) != fmt.Sprint(squares(16, 2000)) {
		t.Fatalf("batch 2 after NextOn(nil): %v", got[:4])
	}
	// AllOn does the same for every batch.
	n := 0
	for b, err := range s.AllOn(nil) {
		if err != nil {
			t.Fatal(err)
		}
		if got := readInt32(b.Buffer(1), 16); got[3] != 3000+9 {
			t.Fatalf("batch 3 via AllOn: %v", got[:4])
		}
		n++
	}
	if n != 1 || s.NextOn(nil) {
		t.Fatalf("AllOn read %d batches, want the last one only, then the end", n)
	}
}

func TestMoveToDevice(t *testing.T) {
	dev, cpu := simDevice(t)
	want := squares(20, 7)

	// sim -> CPU is a copy after waiting on the event.
	a := simExport(t, dev, cpu, want, SyncRecordEvent)
	// Refused: a device that does not exist. a stays the caller's.
	if _, err := a.MoveToDevice(nil, DeviceSim, 99); err == nil {
		t.Fatal("moving to sim device 99 must fail")
	}
	if a.IsReleased() {
		t.Fatal("a failed move must leave the source untouched")
	}
	onCPU, err := a.MoveToDevice(nil, DeviceCPU, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !a.IsReleased() {
		t.Fatal("a successful move consumes the source")
	}
	if onCPU.DeviceType() != DeviceCPU || onCPU.SyncEvent() != nil || onCPU.Schema() == nil || onCPU.Schema().Name() != "sq" {
		t.Fatalf("moved: device %v, event %p, schema %v", onCPU.DeviceType(), onCPU.SyncEvent(), onCPU.Schema())
	}
	if got := readInt32(onCPU.Buffer(1), 20); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("moved values %v", got[:4])
	}

	// CPU -> CPU and sim -> same sim device move without copying.
	addr := onCPU.Buffer(1)
	same, err := onCPU.MoveToDevice(nil, DeviceCPU, -1)
	if err != nil {
		t.Fatal(err)
	}
	if same.Buffer(1) != addr {
		t.Fatal("a move to the same device must not copy")
	}
	same.Release()

	b := simExport(t, dev, cpu, want, SyncRecordEvent)
	addr = b.Buffer(1)
	schema := b.Schema()
	onSim, err := b.MoveToDevice(schema, DeviceSim, 0)
	if err != nil {
		t.Fatal(err)
	}
	if onSim.Buffer(1) != addr || onSim.DeviceType() != DeviceSim {
		t.Fatal("sim 0 -> sim 0 must not copy")
	}
	onSim.Release()
	if _, err := onSim.MoveToDevice(nil, DeviceCPU, -1); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("moving a released array: %v", err)
	}
}

func TestDLPackRoundTripOnTheCPU(t *testing.T) {
	baseline(t)
	values := []int32{10, 11, 12, 13, 14, 15, 16}
	buf, _ := CopySlice(values)
	a, err := ExportArray(&ArrayData{Format: "i", Name: "v", Length: 5, Offset: 2, Buffers: []Buffer{{}, buf}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := a.Buffer(1)
	tensor, err := a.ToDLPack(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.IsReleased() {
		t.Fatal("ToDLPack must consume the array")
	}
	d, err := DescribeDLPack(tensor)
	if err != nil {
		t.Fatal(err)
	}
	if d.Major != 1 || d.Flags&DLPackFlagReadOnly == 0 || d.Flags&DLPackFlagIsCopied != 0 {
		t.Fatalf("version %d.%d flags %#x: want 1.x, READ_ONLY, not IS_COPIED", d.Major, d.Minor, d.Flags)
	}
	if d.DeviceType != DeviceCPU || d.DeviceID != 0 || d.Code != DLPackInt || d.Bits != 32 || d.Lanes != 1 {
		t.Fatalf("device %v/%d dtype %d/%d/%d", d.DeviceType, d.DeviceID, d.Code, d.Bits, d.Lanes)
	}
	compact := d.Strides == nil || (len(d.Strides) == 1 && d.Strides[0] == 1)
	if len(d.Shape) != 1 || d.Shape[0] != 5 || !compact || d.Data != base || d.ByteOffset != 8 {
		t.Fatalf("shape %v strides %v data %p (want %p) byte offset %d", d.Shape, d.Strides, d.Data, base, d.ByteOffset)
	}

	b, schema, err := FromDLPack(tensor)
	if err != nil {
		t.Fatal(err)
	}
	if schema.Format() != "i" || schema.Flags()&FlagNullable != 0 || b.Schema().Format() != "i" {
		t.Fatalf("imported schema %q flags %d", schema.Format(), schema.Flags())
	}
	if b.Length() != 5 || b.NullCount() != 0 || b.DeviceType() != DeviceCPU || b.SyncEvent() != nil {
		t.Fatalf("imported length %d nulls %d device %v", b.Length(), b.NullCount(), b.DeviceType())
	}
	view, err := b.Root().BufferBytes(1)
	if err != nil {
		t.Fatal(err)
	}
	got := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(view))), b.Offset()+5)[b.Offset():]
	if fmt.Sprint(got) != "[12 13 14 15 16]" {
		t.Fatalf("imported values %v", got)
	}
	if err := b.Validate(ValidateFull); err != nil {
		t.Fatal(err)
	}
	live := LiveAllocations()
	b.Release() // the tensor's deleter releases the original export
	if LiveAllocations() != live-1 {
		t.Fatalf("releasing the import must release the exported buffer: %d -> %d", live, LiveAllocations())
	}
	schema.Release() // borrowed from b: harmless
}

func TestDLPackRefusals(t *testing.T) {
	baseline(t)
	// Nulls and booleans have no DLPack form: refused, the array untouched.
	withNulls, err := ExportArray(int32Data(t, []int32{1, 2, 3}, []bool{true, false, true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer withNulls.Release()
	if _, err := withNulls.ToDLPack(nil); err == nil || withNulls.IsReleased() {
		t.Fatalf("an array with nulls: err %v, released %v", err, withNulls.IsReleased())
	}
	bits, _ := CopySlice([]byte{0b101})
	boolean, err := ExportArray(&ArrayData{Format: "b", Length: 3, Buffers: []Buffer{{}, bits}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer boolean.Release()
	if _, err := boolean.ToDLPack(nil); err == nil || boolean.IsReleased() {
		t.Fatalf("a boolean array: err %v", err)
	}
	noSchema, err := ExportArrayNoSchema(int32Data(t, []int32{1}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer noSchema.Release()
	if _, err := noSchema.ToDLPack(nil); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("no schema: %v", err)
	}

	// A 2-D tensor is refused: the caller keeps it, its deleter is not called.
	deleted := chelper.DLPackDeleted()
	flat := chelper.DLPackTensor(4, 2)
	if _, _, err := FromDLPack(flat); err == nil {
		t.Fatal("a 2-D tensor must be refused")
	}
	if chelper.DLPackDeleted() != deleted {
		t.Fatal("a refused tensor's deleter must not run")
	}
	DeleteDLPack(flat)
	if chelper.DLPackDeleted() != deleted+1 {
		t.Fatal("DeleteDLPack must call the deleter")
	}
	if _, _, err := FromDLPack(nil); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("FromDLPack(nil): %v", err)
	}
}

func TestDLPackFromCIsDeletedExactlyOnceAtRelease(t *testing.T) {
	baseline(t)
	deleted := chelper.DLPackDeleted()
	a, schema, err := FromDLPack(chelper.DLPackTensor(6, 1))
	if err != nil {
		t.Fatal(err)
	}
	if schema.Format() != "l" || a.Length() != 6 {
		t.Fatalf("format %q length %d", schema.Format(), a.Length())
	}
	if got := unsafe.Slice((*int64)(a.Buffer(1)), 6)[5]; got != 15 {
		t.Fatalf("value 5 = %d", got)
	}
	if chelper.DLPackDeleted() != deleted {
		t.Fatal("deleted before release")
	}
	kept, err := a.Move()
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	kept.Release()
	kept.Release()
	if chelper.DLPackDeleted() != deleted+1 {
		t.Fatalf("deleter ran %d times, want once", chelper.DLPackDeleted()-deleted)
	}
}

func TestDLPackOnTheSimDevice(t *testing.T) {
	dev, cpu := simDevice(t)
	consumer := consumerStream(t, dev)
	want := squares(12, 3)

	// With a consumer stream the wait is queued, not performed.
	a := simExport(t, dev, cpu, want, SyncRecordEvent)
	tensor, err := a.ToDLPack(consumer)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DescribeDLPack(tensor)
	if err != nil {
		t.Fatal(err)
	}
	if d.DeviceType != DeviceSim || d.DeviceID != 0 || d.Flags&DLPackFlagReadOnly == 0 {
		t.Fatalf("device %v/%d flags %#x", d.DeviceType, d.DeviceID, d.Flags)
	}
	if !poisoned(d.Data, 12) {
		t.Fatal("before the consumer stream ran, the tensor's data must be poison")
	}
	if err := dev.StreamSynchronize(consumer); err != nil {
		t.Fatal(err)
	}
	if got := readInt32(d.Data, 12); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the consumer stream: %v", got[:4])
	}
	// Back to Arrow: on the sim, no event (DLPack's producer synchronized).
	b, _, err := FromDLPack(tensor)
	if err != nil {
		t.Fatal(err)
	}
	if b.DeviceType() != DeviceSim || b.DeviceID() != 0 || b.SyncEvent() != nil || b.Buffer(1) != d.Data {
		t.Fatalf("imported: device %v/%d event %p", b.DeviceType(), b.DeviceID(), b.SyncEvent())
	}
	b.Release()

	// Without a consumer stream the host waits: readable at once.
	a = simExport(t, dev, cpu, want, SyncRecordEvent)
	tensor, err = a.ToDLPack(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, _ = DescribeDLPack(tensor)
	if got := readInt32(d.Data, 12); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ToDLPack(nil): %v", got[:4])
	}
	DeleteDLPack(tensor)
}

func TestNewStreamFromArrays(t *testing.T) {
	baseline(t)
	arrays := func(n int) []*DeviceArray {
		out := make([]*DeviceArray, n)
		for i := range out {
			a, err := ExportArray(int32Data(t, squares(i+2, int32(i)), nil), nil) // schema attached, dropped
			if err != nil {
				t.Fatal(err)
			}
			out[i] = a
		}
		return out
	}
	schema, err := int32Field.Export()
	if err != nil {
		t.Fatal(err)
	}
	in := arrays(3)
	s, err := NewStreamFromArrays(schema, DeviceCPU, in...)
	if err != nil {
		t.Fatal(err)
	}
	if !schema.IsReleased() || !in[0].IsReleased() || !in[2].IsReleased() {
		t.Fatal("the schema and the arrays must be moved in")
	}
	got := []string{}
	for b, err := range s.All() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(readInt32(b.Buffer(1), int(b.Length()))))
	}
	if sc, _ := s.Schema(); sc.Name() != "x" || strings.Join(got, " ") != "[0 1] [1 2 5] [2 3 6 11]" {
		t.Fatalf("stream gave %v", got)
	}
	s.Release()

	// The same stream handed to a C consumer on a new thread.
	schema, _ = int32Field.Export()
	s, err = NewStreamFromArrays(schema, DeviceCPU, arrays(4)...)
	if err != nil {
		t.Fatal(err)
	}
	if batches, elements, _, code, msg := drainInC(t, s, true); code != 0 || batches != 4 || elements != 2+3+4+5 {
		t.Fatalf("C drained %d batches, %d elements: %v %s", batches, elements, code, msg)
	}

	// Refusals move nothing.
	schema, _ = int32Field.Export()
	defer schema.Release()
	in = arrays(2)
	defer in[0].Release()
	defer in[1].Release()
	if _, err := NewStreamFromArrays(schema, DeviceSim, in...); err == nil {
		t.Fatal("CPU arrays in a sim stream must be refused")
	}
	if _, err := NewStreamFromArrays(schema, DeviceCPU, in[0], in[1], in[0]); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("an array given twice: %v", err)
	}
	if schema.IsReleased() || in[0].IsReleased() || in[1].IsReleased() {
		t.Fatal("a refused stream must move nothing")
	}
	if _, err := NewStreamFromArrays(in[0].Schema(), DeviceCPU); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("a borrowed schema: %v", err)
	}
	empty, err := NewStreamFromArrays(schema, DeviceCPU)
	if err != nil || empty.Next() || empty.Err() != nil {
		t.Fatalf("an empty stream: %v / %v", err, empty.Err())
	}
	empty.Release()
}

// The trampoline exports leaf batches described by Go after get_next
// returns; other shapes are exported directly. Both, with C memory, pinned
// Go memory (a handle) and sim memory, read back the same from Go and C.
func TestDataStreamBatchShapesThroughTheTrampoline(t *testing.T) {
	dev, cpu := simDevice(t)
	pinnedValues := squares(9, 4)
	producers := map[string]func(b int) *ArrayData{
		"leaf": func(b int) *ArrayData { return int32Data(t, squares(b+1, 0), nil) },
		"pinned": func(b int) *ArrayData {
			return &ArrayData{Length: 9, Buffers: []Buffer{{}, PinSlice(pinnedValues)}}
		},
		"struct": func(b int) *ArrayData {
			return &ArrayData{Length: 2, Buffers: []Buffer{{}}, Children: []*ArrayData{int32Data(t, []int32{int32(b), 1}, nil)}}
		},
	}
	fields := map[string]Field{"leaf": int32Field, "pinned": int32Field,
		"struct": {Format: "+s", Name: "s", Children: []Field{int32Field}}}
	for name, produce := range producers {
		for _, newThread := range []bool{false, true} {
			b := 0
			s, err := ExportDataStream(fields[name], DeviceCPU, nil, func() (*ArrayData, error) {
				if b == 5 {
					return nil, nil
				}
				b++
				return produce(b - 1), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			batches, _, _, code, msg := drainInC(t, s, newThread)
			if code != 0 || batches != 5 {
				t.Fatalf("%s (new thread %v): %d batches, %v %s", name, newThread, batches, code, msg)
			}
		}
	}
	// Go consumer of sim batches described by Go (the device travels in the
	// description); each producer stream is synchronized, so no event.
	b := 0
	s, err := ExportDataStream(int32Field, DeviceSim, &ExportOptions{Device: dev}, func() (*ArrayData, error) {
		if b == 3 {
			return nil, nil
		}
		b++
		data, stream := simData(t, dev, cpu, squares(4, int32(b)))
		if err := dev.StreamSynchronize(stream); err != nil {
			return nil, err
		}
		return data, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	n := 0
	for batch, err := range s.All() {
		if err != nil {
			t.Fatal(err)
		}
		if batch.DeviceType() != DeviceSim || batch.SyncEvent() != nil || readInt32(batch.Buffer(1), 4)[3] != int32(1+n)+9 {
			t.Fatalf("sim batch %d: device %v values %v", n, batch.DeviceType(), readInt32(batch.Buffer(1), 4))
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d sim batches", n)
	}
}

func TestShortLivedObjectsRegisterNoCleanup(t *testing.T) {
	baseline(t)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	armed := guardsArmed.Load()
	for i := 0; i < 2000; i++ {
		buf, _ := AllocBuffer(16)
		a, err := ExportArray(&ArrayData{Format: "i", Length: 4, Buffers: []Buffer{{}, buf}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	runtime.ReadMemStats(&after)
	// Only objects alive at a collection get a cleanup: here at most the
	// array and its schema, per collection that happened during the loop.
	collections := int64(after.NumGC - before.NumGC)
	if got := guardsArmed.Load() - armed; got > 2*collections+2 {
		t.Fatalf("%d cleanups registered for 4000 short-lived objects (%d collections)", got, collections)
	}
}

func TestObjectsPushedOutOfTheNurseryAreStillGuarded(t *testing.T) {
	baseline(t)
	var reported atomic.Int64
	SetLeakHook(func(what string) { reported.Add(1) })
	defer SetLeakHook(nil)
	armed := guardsArmed.Load()
	kept := make([]*DeviceArray, 0, 2*nurserySize)
	func() {
		for i := 0; i < 2*nurserySize; i++ {
			a, err := ExportArrayNoSchema(int32Data(t, []int32{int32(i)}, nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, a)
		}
	}()
	if got := guardsArmed.Load() - armed; got < nurserySize {
		t.Fatalf("%d of %d long-lived objects got their cleanup when pushed out", got, nurserySize)
	}
	for _, a := range kept[:nurserySize] {
		a.Release() // armed ones: their cleanup is stopped
	}
	kept = kept[nurserySize:]
	// The rest are forgotten: every one is reported and released.
	kept = nil
	collectUntil(200, func() bool { return reported.Load() >= nurserySize && LiveGoExports() == 0 })
	if reported.Load() != nurserySize {
		t.Fatalf("%d leaks reported, want %d", reported.Load(), nurserySize)
	}
	// A forgotten stream is caught the same way.
	reported.Store(0)
	func() {
		s, err := ExportStream(int32Field, DeviceCPU, countingProducer(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		_ = s.DeviceType()
	}()
	collectUntil(200, func() bool { return reported.Load() != 0 && LiveGoExports() == 0 })
	if reported.Load() != 1 {
		t.Fatalf("forgotten stream: %d reports", reported.Load())
	}
}

// Releases racing the nursery's flush after each collection (run with
// -race): every object is released exactly once, nothing is reported.
func TestGuardsUnderConcurrentCollections(t *testing.T) {
	baseline(t)
	var reported atomic.Int64
	SetLeakHook(func(string) { reported.Add(1) })
	defer SetLeakHook(nil)
	done := make(chan struct{})
	stopGC := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stopGC:
				return
			default:
				runtime.GC()
			}
		}
	}()
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			var err error
			for i := 0; i < 300 && err == nil; i++ {
				var a *DeviceArray
				if a, err = ExportArray(&ArrayData{Format: "n", Length: int64(i)}, nil); err == nil {
					runtime.Gosched()
					a.Release()
				}
			}
			errs <- err
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(stopGC)
	<-done
	if reported.Load() != 0 {
		t.Fatalf("%d released objects were reported as leaks", reported.Load())
	}
}
