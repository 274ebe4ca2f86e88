package ferryarrow

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// checkedAllocator makes arrow-go count its allocations, so the tests can
// show that every buffer comes back after a round trip through ferry. The
// buffers come from C malloc (arrow-go's mallocator): cdata's export stores
// buffer addresses in C memory, which the cgo rules (and cgocheck2) forbid
// for unpinned Go-heap buffers.
func checkedAllocator(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func TestArrowToFerryAndBack(t *testing.T) {
	before := ferry.LiveAllocations()
	mem := checkedAllocator(t)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{1, 2, 3, 4}, []bool{true, false, true, true})
	src := b.NewArray()
	b.Release()

	d, err := FromArrow(src)
	if err != nil {
		t.Fatal(err)
	}
	if d.Length() != 4 || d.NullCount() != 1 || d.DeviceType() != ferry.DeviceCPU || d.Schema().Format() != "l" {
		t.Fatalf("ferry view: length %d nulls %d device %v format %q", d.Length(), d.NullCount(), d.DeviceType(), d.Schema().Format())
	}
	if err := d.Validate(ferry.ValidateFull); err != nil {
		t.Fatalf("core validation of arrow-go's export: %v", err)
	}
	addr := d.Buffer(1)

	back, err := ToArrow(d)
	if err != nil {
		t.Fatal(err)
	}
	if !d.IsReleased() {
		t.Fatal("ToArrow must move the array")
	}
	got := back.(*array.Int64)
	if got.Len() != 4 || !got.IsNull(1) || got.Value(3) != 4 {
		t.Fatalf("round trip gave %v", got)
	}
	if got.Data().Buffers()[1].Buf() == nil || &got.Data().Buffers()[1].Buf()[0] != (*byte)(addr) {
		t.Fatal("the round trip must not copy the values")
	}
	back.Release()
	src.Release()
	if ferry.LiveAllocations() != before {
		t.Fatal("ferry allocations leaked")
	}
}

func TestFerryToArrowRecord(t *testing.T) {
	before := ferry.LiveAllocations()
	ints, _ := ferry.CopySlice([]int32{10, 20, 30})
	offsets, _ := ferry.CopySlice([]int32{0, 1, 3, 6})
	data, _ := ferry.CopySlice([]byte("abbccc"))
	d, err := ferry.ExportArray(&ferry.ArrayData{Format: "+s", Length: 3, Buffers: []ferry.Buffer{{}},
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
	if rec.Schema().Field(0).Type.ID() != arrow.INT32 {
		t.Fatal("type lost")
	}
	// And back: a record exported to ferry is a struct array.
	again, err := FromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if again.Schema().Format() != "+s" || again.NumChildren() != 2 || again.Child(0).Length() != 3 {
		t.Fatal("record export wrong")
	}
	again.Release()
	rec.Release()
	if ferry.LiveAllocations() != before {
		t.Fatalf("ferry allocations: %d, %d before", ferry.LiveAllocations(), before)
	}
}

func TestToArrowRefusesDeviceMemory(t *testing.T) {
	dev, err := ferry.ResolveDevice(ferry.DeviceSim, 0)
	if err != nil {
		t.Skipf("SKIP: no sim device: %v", err)
	}
	buf, err := dev.AllocBuffer(16)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: 4, Buffers: []ferry.Buffer{{}, buf}}, &ferry.ExportOptions{Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if _, err := ToArrow(d); err == nil {
		t.Fatal("a sim array must be refused")
	}
}
