package ferry

import (
	"sort"
	"testing"
	"time"

	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

// BenchmarkRatios measures each handoff and its floor in alternating short
// blocks inside one process and reports the median over rounds of the
// per-round ratio: on a shared, loaded machine, load drifts between separate
// benchmarks, but rarely within one round. Run with -benchtime 1x (b.N is
// ignored); the metrics are the ratios, named x-<case>/<floor>, with the
// per-round minimum and maximum as x-min-... and x-max-....
func BenchmarkRatios(b *testing.B) {
	rounds, block := 15, 20000
	if testing.Short() { // test.sh's smoke run: it runs, the figures are rough
		rounds, block = 3, 2000
	}
	dst := NewRawDeviceArray()
	defer FreeRawDeviceArray(dst)
	tmp := NewRawDeviceArray()
	defer FreeRawDeviceArray(tmp)
	rawSchema, rawArray := NewRawSchema(), NewRawDeviceArray()
	defer FreeRawSchema(rawSchema)
	defer FreeRawDeviceArray(rawArray)
	timed := func(f func()) float64 {
		start := time.Now()
		f()
		return float64(time.Since(start).Nanoseconds()) / float64(block)
	}
	// The ArrayData literal is written in each loop, as a caller would: made
	// by a helper that returns it, it would move to the heap.
	alloc := func() Buffer {
		buf, err := AllocBuffer(64)
		if err != nil {
			b.Fatal(err)
		}
		return buf
	}
	stream := func(newThread bool) float64 {
		n := 0
		s, err := ExportDataStream(int32Field, DeviceCPU, nil, func() (*ArrayData, error) {
			if n == block {
				return nil, nil
			}
			n++
			return &ArrayData{Length: 16, Buffers: []Buffer{{}, alloc()}}, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		batches, _, ns, code, msg := drainInC(b, s, newThread)
		if code != 0 || batches != int64(block) {
			b.Fatalf("%d batches: %v %s", batches, code, msg)
		}
		return float64(ns) / float64(block)
	}
	cases := []struct {
		name string
		run  func() float64
	}{
		{"raw", func() float64 {
			return timed(func() {
				for i := 0; i < block; i++ {
					chelper.GoToC(tmp, dst, chelper.ConsumeArray)
				}
			})
		}},
		{"ferry", func() float64 {
			return timed(func() {
				for i := 0; i < block; i++ {
					if err := ExportArrayTo(&ArrayData{Length: 16, Buffers: []Buffer{{}, alloc()}}, nil, dst); err != nil {
						b.Fatal(err)
					}
					chelper.ConsumeArray(dst)
				}
			})
		}},
		{"object", func() float64 {
			return timed(func() {
				for i := 0; i < block; i++ {
					a, err := ExportArrayNoSchema(&ArrayData{Length: 16, Buffers: []Buffer{{}, alloc()}}, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := a.ExportTo(dst, nil); err != nil {
						b.Fatal(err)
					}
					chelper.ConsumeArray(dst)
				}
			})
		}},
		// A Go consumer of a C producer's array (BenchmarkConsume).
		{"consume-floor", func() float64 {
			return timed(func() {
				for i := 0; i < block; i++ {
					chelper.FillStatic(rawSchema, rawArray)
					chelper.FloorConsume(rawSchema, rawArray)
				}
			})
		}},
		{"consume-lean", func() float64 {
			var a DeviceArray
			return timed(func() {
				for i := 0; i < block; i++ {
					chelper.FillStatic(rawSchema, rawArray)
					consumeLean(b, &a, rawSchema, rawArray)
				}
			})
		}},
		{"consume-everyday", func() float64 {
			return timed(func() {
				for i := 0; i < block; i++ {
					chelper.FillStatic(rawSchema, rawArray)
					consumeEveryday(b, rawSchema, rawArray)
				}
			})
		}},
		{"callback-go", func() float64 { return float64(chelper.CallGo(int64(block), false)) / float64(block) }},
		{"callback-c", func() float64 { return float64(chelper.CallGo(int64(block), true)) / float64(block) }},
		{"stream-go", func() float64 { return stream(false) }},
		{"stream-c", func() float64 { return stream(true) }},
	}
	ratios := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		ns := map[string]float64{}
		for k := range cases { // rotate the order: no case always runs first
			c := cases[(k+r)%len(cases)]
			ns[c.name] = c.run()
		}
		ratios["ferry/raw"] = append(ratios["ferry/raw"], ns["ferry"]/ns["raw"])
		ratios["object/raw"] = append(ratios["object/raw"], ns["object"]/ns["raw"])
		ratios["lean/floor"] = append(ratios["lean/floor"], ns["consume-lean"]/ns["consume-floor"])
		ratios["everyday/floor"] = append(ratios["everyday/floor"], ns["consume-everyday"]/ns["consume-floor"])
		ratios["stream-go/floor"] = append(ratios["stream-go/floor"], ns["stream-go"]/(ns["callback-go"]+ns["raw"]))
		ratios["stream-c/floor"] = append(ratios["stream-c/floor"], ns["stream-c"]/(ns["callback-c"]+ns["raw"]))
		for name, v := range ns {
			ratios["ns-"+name] = append(ratios["ns-"+name], v)
		}
	}
	names := make([]string, 0, len(ratios))
	for name := range ratios {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := append([]float64(nil), ratios[name]...)
		sort.Float64s(v)
		if name[:3] == "ns-" {
			b.ReportMetric(v[len(v)/2], name)
			continue
		}
		b.ReportMetric(v[len(v)/2], "x-"+name)
		b.ReportMetric(v[0], "x-min-"+name)
		b.ReportMetric(v[len(v)-1], "x-max-"+name)
	}
}
