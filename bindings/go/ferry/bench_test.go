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
		raw := NewRawStream()
		chelper.EndlessStream(raw, 1024)
		s, err := ImportStream(raw)
		FreeRawStream(raw)
		if err != nil {
			b.Fatal(err)
		}
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

var _ = unsafe.Pointer(nil)
