package ferry_test

// The consumer-side API added for the host view and the Arrow bridges:
// DeviceArray.Import into a reused array, ImportArray with its release
// hook, Schema.Field / Clone, prepared schemas over a stream's batches.

import (
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

func TestImportIntoAReusedDeviceArray(t *testing.T) {
	settled(t)
	schema, array := ferry.NewRawSchema(), ferry.NewRawDeviceArray()
	defer ferry.FreeRawSchema(schema)
	defer ferry.FreeRawDeviceArray(array)
	leaks := ferry.Leaks()
	var a ferry.DeviceArray
	for i := 0; i < 200; i++ { // more than the nursery holds
		chelper.FillStatic(schema, array)
		if err := a.Import(array, schema); err != nil {
			t.Fatal(err)
		}
		if !ferry.RawDeviceArrayIsReleased(array) {
			t.Fatal("Import must move the array out")
		}
		h, err := a.Host()
		if err != nil {
			t.Fatal(err)
		}
		if v, err := ferry.Value[int32](h, 0); err != nil || v != 256 || a.Schema().Name() != "values" {
			t.Fatalf("import %d: %d, %v", i, v, err)
		}
		chelper.FillStatic(schema, array)
		if err := a.Import(array, schema); err == nil {
			t.Fatal("Import into a DeviceArray that holds an array must be refused")
		}
		if ferry.RawDeviceArrayIsReleased(array) {
			t.Fatal("a refused Import must move nothing")
		}
		chelper.FloorConsume(schema, array) // give the refused one back
		a.Release()
		if !a.IsReleased() {
			t.Fatal("released")
		}
	}
	runtime.GC()
	runtime.GC()
	if n := ferry.Leaks() - leaks; n != 0 {
		t.Fatalf("%d leaks reported for a reused, always released array", n)
	}
}

func TestImportArrayRunsItsHookOnceAfterRelease(t *testing.T) {
	settled(t)
	exported, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: 1, Buffers: []ferry.Buffer{{}, mustCopy(t, []int32{5})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, rawSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	defer ferry.FreeRawDeviceArray(raw)
	defer ferry.FreeRawSchema(rawSchema)
	if err := exported.ExportTo(raw, rawSchema); err != nil {
		t.Fatal(err)
	}
	// The plain C data interface: the ArrowArray is the device struct's
	// first member.
	var hooked atomic.Int32
	if _, err := ferry.ImportArray(nil, rawSchema, func() { hooked.Add(1) }); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("a NULL array: %v", err)
	}
	if ferry.RawDeviceArrayIsReleased(raw) {
		t.Fatal("a refused import must move nothing")
	}
	a, err := ferry.ImportArray(raw, rawSchema, func() { hooked.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if a.DeviceType() != ferry.DeviceCPU || a.DeviceID() != -1 || a.Schema().Format() != "i" {
		t.Fatalf("imported as %v:%d %q", a.DeviceType(), a.DeviceID(), a.Schema().Format())
	}
	if hooked.Load() != 0 {
		t.Fatal("the hook ran before the release")
	}
	dst := ferry.NewRawDeviceArray()
	defer ferry.FreeRawDeviceArray(dst)
	if err := a.ExportTo(dst, nil); err != nil { // handed on: the hook follows the array
		t.Fatal(err)
	}
	if first := chelper.ConsumeArray(dst); first != 5 || hooked.Load() != 1 {
		t.Fatalf("read %d, hook ran %d times", first, hooked.Load())
	}
}

func mustCopy[T any](t *testing.T, v []T) ferry.Buffer {
	t.Helper()
	b, err := ferry.CopySlice(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSchemaFieldAndClone(t *testing.T) {
	settled(t)
	field := ferry.Field{Format: "+s", Name: "row", Metadata: []ferry.KeyValue{{Key: "k", Value: "v"}},
		Children: []ferry.Field{
			{Format: "i", Name: "code", Flags: ferry.FlagNullable, Dictionary: &ferry.Field{Format: "u", Name: "words"}},
			{Format: "tsu:UTC", Name: "at"},
		}}
	s, err := field.Export()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	got, err := s.Field()
	if err != nil {
		t.Fatal(err)
	}
	if got.Format != "+s" || got.Name != "row" || !slices.Equal(got.Metadata, field.Metadata) ||
		len(got.Children) != 2 || got.Children[0].Dictionary == nil || got.Children[0].Dictionary.Format != "u" ||
		got.Children[0].Flags != ferry.FlagNullable || got.Children[1].Format != "tsu:UTC" {
		t.Fatalf("described as %+v", got)
	}
	c, err := s.Child(0).Clone() // a borrowed child, cloned into an owned schema
	if err != nil {
		t.Fatal(err)
	}
	if c.Ptr() == s.Child(0).Ptr() || c.Name() != "code" || c.Dictionary().Format() != "u" {
		t.Fatal("the clone must be an independent copy")
	}
	c.Release()
}

func TestAPreparedSchemaValidatesEveryBatch(t *testing.T) {
	settled(t)
	n := 0
	s, err := ferry.ExportStream(ferry.Field{Format: "u", Name: "s"}, ferry.DeviceCPU, func() (*ferry.DeviceArray, error) {
		n++
		switch n {
		case 1:
			return ferry.ExportArrayNoSchema(&ferry.ArrayData{Format: "u", Length: 2,
				Buffers: []ferry.Buffer{{}, mustCopy(t, []int32{0, 1, 3}), mustCopy(t, []byte("abc"))}}, nil)
		case 2: // decreasing offsets
			return ferry.ExportArrayNoSchema(&ferry.ArrayData{Format: "u", Length: 2,
				Buffers: []ferry.Buffer{{}, mustCopy(t, []int32{0, 3, 1}), mustCopy(t, []byte("abc"))}}, nil)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	schema, err := s.Schema()
	if err != nil {
		t.Fatal(err)
	}
	p, err := schema.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	var verdicts []bool
	for s.Next() {
		verdicts = append(verdicts, p.Validate(s.Batch(), ferry.ValidateFull) == nil)
	}
	if !slices.Equal(verdicts, []bool{true, false}) {
		t.Fatalf("verdicts %v", verdicts)
	}
	p.Free()
	if err := p.Validate(s.Batch(), ferry.ValidateDefault); err == nil {
		t.Fatal("a freed prepared schema must refuse")
	}
}

func TestBufferAccessorsOfTheLeanPathAreBounded(t *testing.T) {
	settled(t)
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: 2, Buffers: []ferry.Buffer{{}, mustCopy(t, []int32{1, 2})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	for _, i := range []int{-1, 2, 1 << 40} {
		if a.Buffer(i) != nil {
			t.Fatalf("Buffer(%d) must be nil", i)
		}
	}
	if a.Child(0).IsNil() != true || !a.Dictionary().IsNil() {
		t.Fatal("a primitive has no child or dictionary")
	}
	b, err := a.Root().BufferBytes(1)
	if err != nil || len(b) != 8 || *(*int32)(unsafe.Pointer(&b[4])) != 2 {
		t.Fatalf("BufferBytes(1): %v %v", b, err)
	}
	var released ferry.DeviceArray
	if released.Length() != 0 || released.Buffer(1) != nil || !released.IsReleased() {
		t.Fatal("the zero DeviceArray reads as empty")
	}
}
