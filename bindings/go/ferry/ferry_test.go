package ferry

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

// baseline records the binding's allocation counters and checks at the end
// of the test that every export was given back.
func baseline(t *testing.T) {
	t.Helper()
	allocs, exports, core := LiveAllocations(), LiveGoExports(), LiveExports()
	t.Cleanup(func() {
		if got := LiveAllocations(); got != allocs {
			t.Errorf("live allocations: %d at start, %d at end", allocs, got)
		}
		if got := LiveGoExports(); got != exports {
			t.Errorf("live Go exports: %d at start, %d at end", exports, got)
		}
		if got := LiveExports(); got != core {
			t.Errorf("live exports of the core: %d at start, %d at end", core, got)
		}
	})
}

// collectUntil runs up to `rounds` collections until done() holds. Cleanups
// run on their own goroutine after a collection: the tests poll a bounded
// number of collections rather than sleeping.
func collectUntil(rounds int, done func() bool) {
	for i := 0; i < rounds && !done(); i++ {
		runtime.GC()
		runtime.Gosched()
	}
}

func int32Data(t *testing.T, values []int32, valid []bool) *ArrayData {
	t.Helper()
	buf, err := CopySlice(values)
	if err != nil {
		t.Fatal(err)
	}
	a := &ArrayData{Format: "i", Name: "x", Flags: FlagNullable, Length: int64(len(values)),
		Buffers: []Buffer{{}, buf}}
	if valid != nil {
		bits, bytes, err := AllocSlice[byte]((len(valid) + 7) / 8)
		if err != nil {
			t.Fatal(err)
		}
		clear(bytes)
		for i, v := range valid {
			if v {
				bytes[i/8] |= 1 << (i % 8)
			} else {
				a.NullCount++
			}
		}
		a.Buffers[0] = bits
	}
	return a
}

func TestVersionAndConstantsMatchTheLibrary(t *testing.T) {
	if got := Version(); got != VersionString {
		t.Errorf("Version() = %q, generated constant %q", got, VersionString)
	}
	if err := CheckABI(); err != nil {
		t.Errorf("CheckABI: %v", err)
	}
	if DeviceCPU.String() != "cpu" {
		t.Errorf("DeviceCPU.String() = %q", DeviceCPU.String())
	}
	got, err := ParseDeviceType("sim")
	if err != nil || got != DeviceExtDev {
		t.Errorf("ParseDeviceType(sim) = %v, %v", got, err)
	}
}

func TestErrorsCarryCodeAndMessage(t *testing.T) {
	_, err := ParseDeviceType("quantum")
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("expected *Error, got %T %v", err, err)
	}
	if fe.Code != syscall.EINVAL || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("code %v, want EINVAL", fe.Code)
	}
	if !strings.Contains(fe.Message, "quantum") || !strings.Contains(err.Error(), "EINVAL") {
		t.Errorf("message %q / %q should name the word and the code", fe.Message, err.Error())
	}
}

func TestExportImportRoundTripThroughCStructs(t *testing.T) {
	baseline(t)
	a, err := ExportArray(int32Data(t, []int32{1, 2, 3, 4, 5}, []bool{true, false, true, true, true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Length() != 5 || a.NullCount() != 1 || a.NumBuffers() != 2 || a.DeviceType() != DeviceCPU || a.DeviceID() != -1 {
		t.Fatalf("length %d nulls %d buffers %d device %v/%d", a.Length(), a.NullCount(), a.NumBuffers(), a.DeviceType(), a.DeviceID())
	}
	if err := a.Validate(ValidateFull); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	values := unsafe.Slice((*int32)(a.Buffer(1)), 5)
	addr := a.Buffer(1)

	rawArray, rawSchema := NewRawDeviceArray(), NewRawSchema()
	defer FreeRawDeviceArray(rawArray)
	defer FreeRawSchema(rawSchema)
	if err := a.ExportTo(rawArray, rawSchema); err != nil {
		t.Fatal(err)
	}
	if !a.IsReleased() {
		t.Fatal("ExportTo must leave the source released")
	}
	b, err := ImportDeviceArray(rawArray, rawSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if !RawDeviceArrayIsReleased(rawArray) {
		t.Fatal("import must move out of the raw struct")
	}
	if b.Buffer(1) != addr || values[3] != 4 {
		t.Fatalf("zero-copy: buffer moved from %p to %p or values changed", addr, b.Buffer(1))
	}
	if s := b.Schema(); s.Format() != "i" || s.Name() != "x" || s.Flags() != FlagNullable {
		t.Fatalf("schema %q %q %d", s.Format(), s.Name(), s.Flags())
	}
	size, err := b.BufferSize(1)
	if err != nil || size != 20 {
		t.Fatalf("BufferSize(1) = %d, %v", size, err)
	}
}

func TestPinnedGoSliceIsExportedInPlaceAndUnpinnedAtRelease(t *testing.T) {
	baseline(t)
	values := make([]int64, 1000)
	for i := range values {
		values[i] = int64(i * 3)
	}
	a, err := ExportArray(&ArrayData{Format: "l", Length: 1000, Buffers: []Buffer{{}, PinSlice(values)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Buffer(1) != unsafe.Pointer(&values[0]) {
		t.Fatal("a pinned slice must be exported in place")
	}
	if handles.live.Load() == 0 {
		t.Fatal("the pin must be held behind a handle until release")
	}
	for i := 0; i < 3; i++ {
		runtime.GC() // pinned memory must stay put and alive
	}
	if got := unsafe.Slice((*int64)(a.Buffer(1)), 1000)[999]; got != 2997 {
		t.Fatalf("value after GC = %d", got)
	}
	a.Release()
	a.Release() // harmless
}

func TestNestedExportWithChildrenAndDictionary(t *testing.T) {
	baseline(t)
	offsets, _ := CopySlice([]int32{0, 1, 3, 3})
	data, _ := CopySlice([]byte("abc"))
	indices, _ := CopySlice([]int32{2, 0, 1})
	dictOffsets, _ := CopySlice([]int32{0, 2, 4, 6})
	dictData, _ := CopySlice([]byte("d0d1d2"))
	s := &ArrayData{Format: "+s", Name: "row", Length: 3, Buffers: []Buffer{{}},
		Metadata: []KeyValue{{"k", "v"}},
		Children: []*ArrayData{
			{Format: "u", Name: "s", Length: 3, Buffers: []Buffer{{}, offsets, data}},
			{Format: "i", Name: "d", Length: 3, Buffers: []Buffer{{}, indices},
				Dictionary: &ArrayData{Format: "u", Length: 3, Buffers: []Buffer{{}, dictOffsets, dictData}}},
		}}
	a, err := ExportArray(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if err := a.Validate(ValidateFull); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	md, err := a.Schema().Metadata()
	if err != nil || len(md) != 1 || md[0] != (KeyValue{"k", "v"}) {
		t.Fatalf("metadata %v, %v", md, err)
	}
	str := a.Child(0)
	if str.Schema().Name() != "s" || str.Length() != 3 {
		t.Fatalf("child 0: %q length %d", str.Schema().Name(), str.Length())
	}
	b, err := str.BufferBytes(2)
	if err != nil || string(b) != "abc" {
		t.Fatalf("child 0 data %q, %v", b, err)
	}
	dict := a.Child(1).Dictionary()
	if dict.IsNil() || dict.Length() != 3 || dict.Schema().Format() != "u" {
		t.Fatal("dictionary missing or wrong")
	}
	if !a.Child(2).IsNil() || !a.Dictionary().IsNil() {
		t.Fatal("out-of-range child and absent dictionary must be nil views")
	}
	// A child moved out stays valid after the parent is released: every node
	// owns its own buffers.
	child := NewRawDeviceArray()
	defer FreeRawDeviceArray(child)
	moved := chelper.MoveChildOut(a.Ptr(), 0, child)
	a.Release()
	if got := string(unsafe.Slice((*byte)(moved), 3)); got != "abc" {
		t.Fatalf("moved child data %q", got)
	}
}

func TestExportFailureGivesEverythingBack(t *testing.T) {
	baseline(t)
	good, _ := CopySlice([]int32{1, 2})
	pinned := PinSlice([]int32{3, 4})
	// An invalid format makes the schema export fail after the buffers were
	// handed over: they must all come back.
	_, err := ExportArray(&ArrayData{Format: "?!", Length: 2, Buffers: []Buffer{{}, good},
		Children: []*ArrayData{{Format: "i", Length: 2, Buffers: []Buffer{{}, pinned}}}}, nil)
	if err == nil {
		t.Fatal("an invalid format must fail")
	}
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("expected EINVAL, got %v", err)
	}
	// A negative length fails in the core after the schema was made.
	more, _ := CopySlice([]int32{1})
	_, err = ExportArray(&ArrayData{Format: "i", Length: -1, Buffers: []Buffer{{}, more}}, nil)
	if err == nil {
		t.Fatal("a negative length must fail")
	}
	// The same failure on the one-call leaf paths carries the core's message.
	for _, export := range []func(*ArrayData) error{
		func(d *ArrayData) error { _, err := ExportArrayNoSchema(d, nil); return err },
		func(d *ArrayData) error {
			dst := NewRawDeviceArray()
			defer FreeRawDeviceArray(dst)
			return ExportArrayTo(d, nil, dst)
		},
	} {
		more, _ := CopySlice([]int32{1})
		err := export(&ArrayData{Format: "i", Length: -1, Buffers: []Buffer{{}, more}})
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "length (-1)") {
			t.Errorf("leaf export with a negative length: %v", err)
		}
	}
}

func TestMoveAndDoubleRelease(t *testing.T) {
	baseline(t)
	a, err := ExportArray(int32Data(t, []int32{7}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.Move()
	if err != nil {
		t.Fatal(err)
	}
	if !a.IsReleased() || b.IsReleased() || b.Length() != 1 || b.Schema() == nil {
		t.Fatal("Move must transfer the array and its schema")
	}
	if _, err := a.Move(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("moving a released array: %v", err)
	}
	b.Release()
	b.Release()
	a.Release()
}

func TestForgottenArrayIsReportedAndReleasedByItsCleanup(t *testing.T) {
	baseline(t)
	var reported atomic.Int64
	SetLeakHook(func(what string) {
		if what == "DeviceArray" {
			reported.Add(1)
		}
	})
	defer SetLeakHook(nil)
	func() {
		a, err := ExportArray(int32Data(t, []int32{1, 2, 3}, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = a.Length()
	}()
	collectUntil(100, func() bool { return reported.Load() != 0 && LiveGoExports() == 0 })
	if reported.Load() == 0 {
		t.Fatal("a forgotten DeviceArray was not reported")
	}
}

func TestSimDeviceExportWithEventAndCopy(t *testing.T) {
	baseline(t)
	dev, err := ResolveDevice(DeviceSim, 0)
	if err != nil {
		t.Skipf("SKIP: the sim device is not available: %v", err)
	}
	cpu, err := ResolveDevice(DeviceCPU, -1)
	if err != nil {
		t.Fatal(err)
	}
	before := dev.LiveAllocations()
	stream, err := dev.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	host, values, _ := AllocSlice[int32](64)
	for i := range values {
		values[i] = int32(i * i)
	}
	devBuf, err := dev.AllocBuffer(host.Size())
	if err != nil {
		t.Fatal(err)
	}
	if err := Memcpy(dev, devBuf.Ptr(), cpu, host.Ptr(), host.Size(), stream); err != nil {
		t.Fatal(err)
	}
	a, err := ExportArray(&ArrayData{Format: "i", Length: 64, Buffers: []Buffer{{}, devBuf}, Keep: []Buffer{host},
		OnRelease: func() { _ = dev.StreamSynchronize(stream); _ = dev.StreamDestroy(stream) }},
		&ExportOptions{Device: dev, ProducerStream: stream, Policy: SyncRecordEvent})
	if err != nil {
		t.Fatal(err)
	}
	if a.DeviceType() != DeviceSim || a.SyncEvent() == nil {
		t.Fatalf("device %v, sync event %p: expected sim with an event", a.DeviceType(), a.SyncEvent())
	}
	cp, err := a.CopyTo(DeviceCPU, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := unsafe.Slice((*int32)(cp.Buffer(1)), 64)[63]; got != 63*63 {
		t.Fatalf("copied value %d", got)
	}
	if err := a.Wait(nil); err != nil {
		t.Fatal(err)
	}
	if got := unsafe.Slice((*int32)(a.Buffer(1)), 64)[10]; got != 100 {
		t.Fatalf("value read in place after Wait: %d", got)
	}
	cp.Release()
	a.Release()
	if got := dev.LiveAllocations(); got != before {
		t.Fatalf("sim allocations %d, %d before", got, before)
	}
}
