package ferry

import (
	"runtime/cgo"
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

// Benchmarks of the Go binding's handoffs, each next to its floor measured
// in the same run (test.sh prints the ratios):
//   CgoCall                 the cheapest cgo call into libferry
//   CToGo/raw vs /ferry     pulling a batch from a C stream
//   GoToC/raw vs /ferry     exporting a Go-made array to a C consumer
//   GoStreamToC/...         a C consumer pulling from a Go producer
//   Callback/...            C -> Go calls on a Go thread and on a C thread
//   Export/cmem vs /pinned  exporting 4 KB from C memory or a pinned slice
//   Handle/table vs /cgo    the two ways to name Go state from C
//   Guard/...               leak safety nets (guard_bench_test.go)

func BenchmarkCgoCall(b *testing.B) {
	p := NewRawDeviceArray()
	defer FreeRawDeviceArray(p)
	acc := 0
	for i := 0; i < b.N; i++ {
		acc += chelper.CallFloor(p)
	}
	_ = acc
}

func BenchmarkCToGo(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		stream, batch := NewRawStream(), NewRawDeviceArray()
		defer FreeRawStream(stream)
		defer FreeRawDeviceArray(batch)
		chelper.EndlessStream(stream, 1024)
		for i := 0; i < b.N; i++ {
			chelper.NextRelease(stream, batch)
		}
	})
	b.Run("ferry", func(b *testing.B) {
		s := endlessCStream(b, 1024)
		defer s.Release()
		for i := 0; i < b.N; i++ {
			if !s.Next() {
				b.Fatal(s.Err())
			}
		}
	})
}

func BenchmarkGoToC(b *testing.B) {
	dst := NewRawDeviceArray()
	defer FreeRawDeviceArray(dst)
	b.Run("raw", func(b *testing.B) {
		tmp := NewRawDeviceArray() // only its ArrowArray part is used
		defer FreeRawDeviceArray(tmp)
		for i := 0; i < b.N; i++ {
			chelper.GoToC(tmp, dst, chelper.ConsumeArray)
		}
	})
	b.Run("ferry", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			buf, err := AllocBuffer(64)
			if err != nil {
				b.Fatal(err)
			}
			if err := ExportArrayTo(&ArrayData{Length: 16, Buffers: []Buffer{{}, buf}}, nil, dst); err != nil {
				b.Fatal(err)
			}
			chelper.ConsumeArray(dst)
		}
	})
	b.Run("object", func(b *testing.B) {
		// Through a DeviceArray (with its leak guard, see guard.go).
		for i := 0; i < b.N; i++ {
			buf, err := AllocBuffer(64)
			if err != nil {
				b.Fatal(err)
			}
			a, err := ExportArrayNoSchema(&ArrayData{Length: 16, Buffers: []Buffer{{}, buf}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := a.ExportTo(dst, nil); err != nil {
				b.Fatal(err)
			}
			chelper.ConsumeArray(dst)
		}
	})
}

// goStreamToC: a C consumer drains a Go producer of b.N batches.
func goStreamToC(b *testing.B, newThread bool) {
	n := 0
	s, err := ExportDataStream(int32Field, DeviceCPU, nil, func() (*ArrayData, error) {
		if n == b.N {
			return nil, nil
		}
		n++
		buf, err := AllocBuffer(64)
		if err != nil {
			return nil, err
		}
		return &ArrayData{Length: 16, Buffers: []Buffer{{}, buf}}, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	raw := NewRawStream()
	defer FreeRawStream(raw)
	if err := s.ExportTo(raw); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	batches, _, _, code, msg := chelper.DrainStream(raw, newThread)
	if code != 0 || batches != int64(b.N) {
		b.Fatalf("%d batches, %v %s", batches, code, msg)
	}
}

func BenchmarkGoStreamToC(b *testing.B) {
	b.Run("gothread", func(b *testing.B) { goStreamToC(b, false) })
	b.Run("cthread", func(b *testing.B) { goStreamToC(b, true) })
}

func BenchmarkCallback(b *testing.B) {
	b.Run("gothread", func(b *testing.B) { chelper.CallGo(int64(b.N), false) })
	b.Run("cthread", func(b *testing.B) { chelper.CallGo(int64(b.N), true) })
}

func BenchmarkExport(b *testing.B) {
	b.Run("cmem", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			buf, _, err := AllocSlice[int32](1024)
			if err != nil {
				b.Fatal(err)
			}
			a, err := ExportArrayNoSchema(&ArrayData{Format: "i", Length: 1024, Buffers: []Buffer{{}, buf}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			a.Release()
		}
	})
	b.Run("pinned", func(b *testing.B) {
		values := make([]int32, 1024)
		for i := 0; i < b.N; i++ {
			a, err := ExportArrayNoSchema(&ArrayData{Format: "i", Length: 1024, Buffers: []Buffer{{}, PinSlice(values)}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			a.Release()
		}
	})
}

func BenchmarkHandle(b *testing.B) {
	v := &exportState{}
	b.Run("table", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			handles.take(handles.put(v))
		}
	})
	b.Run("cgo", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cgo.NewHandle(v).Delete()
		}
	})
}

// BenchmarkPinnedExport: the everyday export of a cached Go slice to a C
// consumer, as the integration plugin's bench entry point does it (the
// README's first producer: PinSlice, ExportArray, ExportTo; the C consumer
// reads element 0 and releases both): 1 KiB and 64 MiB, which must cost the
// same (nothing scales with the buffer).
func BenchmarkPinnedExport(b *testing.B) {
	for _, n := range []int{256, 1 << 24} {
		values := make([]int32, n)
		values[0] = int32(n)
		schemaOut, arrayOut := NewRawSchema(), NewRawDeviceArray()
		b.Run(map[int]string{256: "1K", 1 << 24: "64M"}[n], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				a, err := ExportArray(&ArrayData{Format: "i", Name: "values", Length: int64(n), Buffers: []Buffer{{}, PinSlice(values)}}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := a.ExportTo(arrayOut, schemaOut); err != nil {
					b.Fatal(err)
				}
				if chelper.FloorConsume(schemaOut, arrayOut) != int32(n) {
					b.Fatal("v")
				}
			}
		})
	}
}

var _ = unsafe.Pointer(nil)

// BenchmarkConsume: a Go consumer of a C producer's int32 array (static
// buffers, FillStatic), reading element 0, against the floor of bare cgo
// calls doing the same (FloorConsume: the read from C memory, both releases
// in one call).
// everyday: ImportDeviceArray, Host, Value, Release (the README's first
// consumer); lean: DeviceArray.Import into a reused DeviceArray, Buffer,
// Release. Targets: lean 1.5x, everyday 3x (issue 14).
func BenchmarkConsume(b *testing.B) {
	schema, array := NewRawSchema(), NewRawDeviceArray()
	defer FreeRawSchema(schema)
	defer FreeRawDeviceArray(array)
	b.Run("floor", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			chelper.FillStatic(schema, array)
			if chelper.FloorConsume(schema, array) != 256 {
				b.Fatal("element 0")
			}
		}
	})
	b.Run("lean", func(b *testing.B) {
		var a DeviceArray
		for i := 0; i < b.N; i++ {
			chelper.FillStatic(schema, array)
			if consumeLean(b, &a, schema, array) != 256 {
				b.Fatal("element 0")
			}
		}
	})
	b.Run("everyday", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			chelper.FillStatic(schema, array)
			if consumeEveryday(b, schema, array) != 256 {
				b.Fatal("element 0")
			}
		}
	})
}

// trusted is the lean path's explicit opt-out of import validation.
var trusted = ImportOptions{Validate: ValidateNone}

// consumeLean imports into a reused DeviceArray (no allocation), trusting
// the producer (no validation), and reads through Buffer, unchecked.
func consumeLean(b testing.TB, a *DeviceArray, schema, array unsafe.Pointer) int32 {
	if err := a.Import(array, schema, trusted); err != nil {
		b.Fatal(err)
	}
	v := int32(0)
	if a.Length() > 0 {
		v = unsafe.Slice((*int32)(a.Buffer(1)), a.Offset()+1)[a.Offset()]
	}
	a.Release()
	return v
}

func consumeEveryday(b testing.TB, schema, array unsafe.Pointer) int32 {
	a, err := ImportDeviceArray(array, schema)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Release()
	h, err := a.Host()
	if err != nil {
		b.Fatal(err)
	}
	v, err := Value[int32](h, 0)
	if err != nil {
		b.Fatal(err)
	}
	return v
}
