package ferryarrow

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// BenchmarkPeers times each path a user of arrow-go takes through ferry
// against arrow-go's own C Data Interface (cdata) doing the same job, in one
// process, in interleaved rounds (ferry's block, then arrow-go's, each
// round): the metric x-<row> is the median over rounds of the per-round
// ratio ferry / arrow-go (below 1: ferry is faster), with x-min-/x-max-, the
// per-operation medians ns-ferry-/ns-peer- and the allocations per
// operation allocs-ferry-/allocs-peer-. Run with -benchtime 1x (b.N is
// ignored); bench.sh prints the table. The data: int32 x 1024 with 103
// nulls; streams of 1,000 such batches (one column).
func BenchmarkPeers(b *testing.B) {
	rounds, block, batches := 15, 2000, 1000
	if testing.Short() { // test.sh's smoke run: it runs, the figures are rough
		rounds, block, batches = 3, 100, 50
	}
	// C memory (mallocator): arrow-go's own exports store buffer addresses
	// in C memory unpinned, which the strict cgo checks of test.sh refuse
	// for Go memory; ferry's FromArrow pins either kind.
	mem := mallocator.NewMallocator()
	arr := int32Nulls(mem)
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len()))
	defer rec.Release()

	type row struct {
		key, label, same string
		ferry, peer      func(n int) // n operations
		per              int         // batches per operation (streams)
	}
	// Input structs for the import rows, filled by arrow-go's export
	// before each timed block (the producer is the same for both sides).
	inArr := make([]unsafe.Pointer, block)
	inSchema := make([]unsafe.Pointer, block)
	for i := range inArr {
		inArr[i], inSchema[i] = ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	}
	defer func() {
		for i := range inArr {
			ferry.FreeRawDeviceArray(inArr[i])
			ferry.FreeRawSchema(inSchema[i])
		}
	}()
	fill := func(n int) {
		for i := 0; i < n; i++ {
			cdata.ExportArrowArray(arr, (*cdata.CArrowArray)(inArr[i]), (*cdata.CArrowSchema)(inSchema[i]))
			ferry.SetRawDeviceArrayCPU(inArr[i])
		}
	}
	// The same values as Go slices, for ferry's own export.
	goValues := append([]int32(nil), arr.(*array.Int32).Int32Values()...)
	goValidity := append([]byte(nil), arr.Data().Buffers()[0].Bytes()...)
	outArr, outSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	defer ferry.FreeRawDeviceArray(outArr)
	defer ferry.FreeRawSchema(outSchema)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	reader := func() array.RecordReader {
		recs := make([]arrow.RecordBatch, batches)
		for i := range recs {
			recs[i] = rec
		}
		r, err := array.NewRecordReader(schema, recs)
		must(err)
		return r
	}
	// each runs op(i) for i in [0, n): one timed block of a row's side.
	each := func(op func(i int)) func(n int) {
		return func(n int) {
			for i := 0; i < n; i++ {
				op(i)
			}
		}
	}
	peerImport := each(func(i int) {
		_, a, err := cdata.ImportCArray((*cdata.CArrowArray)(inArr[i]), (*cdata.CArrowSchema)(inSchema[i]))
		must(err)
		a.Release()
	})
	// The consumer's release of outArr and outSchema, after each export.
	releaseOut := func() {
		cdata.ReleaseCArrowArray((*cdata.CArrowArray)(outArr))
		cdata.ReleaseCArrowSchema((*cdata.CArrowSchema)(outSchema))
	}
	peerExport := each(func(int) {
		cdata.ExportArrowArray(arr, (*cdata.CArrowArray)(outArr), (*cdata.CArrowSchema)(outSchema))
		releaseOut()
	})
	// drain reads every record of r, releases it and checks there were batches.
	drain := func(who string, r array.RecordReader) {
		k := 0
		for r.Next() {
			k++
		}
		must(r.Err())
		r.Release()
		if k != batches {
			b.Fatalf("%s bridge: %d batches", who, k)
		}
	}
	rows := []row{
		{key: "import", label: "import: ImportDeviceArray + ToArrow / cdata.ImportCArray",
			same: "same input structs, same arrow.Array out; ferry validates (DEFAULT), arrow-go does not",
			ferry: each(func(i int) {
				d, err := ferry.ImportDeviceArray(inArr[i], inSchema[i])
				must(err)
				a, err := ToArrow(d)
				must(err)
				a.Release()
			}),
			peer: peerImport},
		{key: "import-c", label: "import: ferryarrow.ImportCArray / cdata.ImportCArray",
			same: "same input structs, same arrow.Array out; ferry validates (DEFAULT) in place first, arrow-go does not",
			ferry: each(func(i int) {
				_, a, err := ImportCArray(inArr[i], inSchema[i])
				must(err)
				a.Release()
			}),
			peer: peerImport},
		{key: "own-import", label: "ferry's own import: ImportDeviceArray + Release / cdata.ImportCArray + Release",
			same: "same input structs; ferry validates (DEFAULT) and makes a ferry DeviceArray, arrow-go makes an arrow.Array (not the same object)",
			ferry: each(func(i int) {
				d, err := ferry.ImportDeviceArray(inArr[i], inSchema[i])
				must(err)
				d.Release()
			}),
			peer: peerImport},
		{key: "own-export", label: "ferry's own export: ExportArray(PinSlice) + ExportTo / cdata.ExportArrowArray",
			same: "array and schema structs out, released by the consumer; ferry exports a pinned Go slice (no arrow.Array in), arrow-go its arrow.Array",
			ferry: each(func(int) {
				d, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: int64(len(goValues)), NullCount: 103,
					Buffers: []ferry.Buffer{ferry.PinSlice(goValidity), ferry.PinSlice(goValues)}}, nil)
				must(err)
				must(d.ExportTo(outArr, outSchema))
				releaseOut()
			}),
			peer: peerExport},
		{key: "export", label: "export: FromArrow + ExportTo / cdata.ExportArrowArray",
			same: "same arrow.Array in, array and schema structs out, released by the consumer; ferry validates (DEFAULT) and pins, arrow-go does neither",
			ferry: each(func(int) {
				d, err := FromArrow(arr)
				must(err)
				must(d.ExportTo(outArr, outSchema))
				releaseOut()
			}),
			peer: peerExport},
		{key: "bridge", per: batches,
			label: "stream bridge: ExportRecordReader -> C -> NewRecordReader / cdata.ExportRecordReader -> ImportCRecordReader",
			same:  "same RecordReader in, same records out, per batch; ferry validates each batch (DEFAULT, schema prepared once), arrow-go does not",
			ferry: func(n int) {
				raw := ferry.NewRawStream()
				defer ferry.FreeRawStream(raw)
				for i := 0; i < n; i++ {
					s, err := ExportRecordReader(reader())
					must(err)
					must(s.ExportTo(raw))
					in, err := ferry.ImportStream(raw)
					must(err)
					r, err := NewRecordReader(in)
					must(err)
					drain("ferry", r)
				}
			},
			peer: func(n int) {
				raw := ferry.NewRawCStream()
				defer ferry.FreeRawCStream(raw)
				for i := 0; i < n; i++ {
					cdata.ExportRecordReader(reader(), (*cdata.CArrowArrayStream)(raw))
					ar, err := cdata.ImportCRecordReader((*cdata.CArrowArrayStream)(raw), nil)
					must(err)
					drain("arrow-go", ar.(array.RecordReader))
				}
			}},
		{key: "async", per: batches,
			label: "async Go->Go: ExportAsync -> NewAsyncConsumer (FromRecord/ToRecord) / ExportAsyncRecordBatchStream -> CreateAsyncDeviceStreamHandler",
			same:  "same records in and out through the async handler, per batch; ferry validates each batch (DEFAULT), arrow-go does not",
			ferry: func(n int) {
				fs, err := FromArrowSchema(schema)
				must(err)
				defer fs.Release()
				for i := 0; i < n; i++ {
					c, err := ferry.NewAsyncConsumer(4)
					must(err)
					ch := make(chan ferry.AsyncBatch)
					done := make(chan error, 1)
					go func() { done <- ferry.ExportAsync(context.Background(), c.Handler(), fs, ferry.DeviceCPU, ch) }()
					go func() {
						for k := 0; k < batches; k++ {
							d, err := FromRecord(rec)
							ch <- ferry.AsyncBatch{Batch: d, Err: err}
						}
						close(ch)
					}()
					k := 0
					for {
						d, err := c.Next(context.Background())
						must(err)
						if d == nil {
							break
						}
						got, err := ToRecord(d)
						must(err)
						got.Release()
						k++
					}
					must(<-done)
					c.Close()
					if k != batches {
						b.Fatalf("ferry async: %d batches", k)
					}
				}
			},
			peer: func(n int) {
				for i := 0; i < n; i++ {
					h := ferry.NewRawAsyncHandler()
					ctx, cancel := context.WithCancel(context.Background())
					streams := cdata.CreateAsyncDeviceStreamHandler(ctx, 4, (*cdata.CArrowAsyncDeviceStreamHandler)(h))
					msgs := make(chan cdata.RecordMessage)
					done := make(chan error, 1)
					go func() {
						done <- cdata.ExportAsyncRecordBatchStream(schema, msgs, (*cdata.CArrowAsyncDeviceStreamHandler)(h))
					}()
					readAll := make(chan struct{})
					go func() {
						for k := 0; k < batches; k++ {
							rec.Retain() // arrow-go releases what it sends
							msgs <- cdata.RecordMessage{Record: rec}
						}
						<-readAll // see arrowGoProducer in ferry/async_test.go
						close(msgs)
					}()
					s := <-streams
					must(s.Err)
					k := 0
					for m := range s.Stream {
						must(m.Err)
						m.Record.Release()
						k++
						if k == batches {
							close(readAll)
						}
					}
					must(<-done)
					cancel()
					ferry.FreeRawAsyncHandler(h)
					if k != batches {
						b.Fatalf("arrow-go async: %d batches", k)
					}
				}
			}},
	}
	ops := func(r row) int {
		if r.per > 0 { // streams: whole streams per block
			n := block / 1000
			if n < 1 || r.key == "async" {
				n = 1
			}
			return n
		}
		return block
	}
	timed := func(r row, f func(int)) (ns, allocs float64) {
		n := ops(r)
		if r.per == 0 {
			fill(n)
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		f(n)
		el := time.Since(start)
		runtime.ReadMemStats(&m1)
		per := float64(n)
		if r.per > 0 {
			per *= float64(r.per)
		}
		return float64(el.Nanoseconds()) / per, float64(m1.Mallocs-m0.Mallocs) / per
	}
	median := func(v []float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[len(s)/2]
	}
	only := os.Getenv("FERRY_GO_PEERS") // a comma-separated list of rows to run (default: all)
	for _, r := range rows {
		if only != "" && !slices.Contains(strings.Split(only, ","), r.key) {
			continue
		}
		// One warm-up block each, then the rounds.
		timed(r, r.ferry)
		timed(r, r.peer)
		var ratios, nsF, nsP, alF, alP []float64
		for k := 0; k < rounds; k++ {
			f, af := timed(r, r.ferry)
			p, ap := timed(r, r.peer)
			ratios = append(ratios, f/p)
			nsF, nsP, alF, alP = append(nsF, f), append(nsP, p), append(alF, af), append(alP, ap)
		}
		sort.Float64s(ratios)
		b.ReportMetric(median(ratios), "x-"+r.key)
		b.ReportMetric(ratios[0], "x-min-"+r.key)
		b.ReportMetric(ratios[len(ratios)-1], "x-max-"+r.key)
		b.ReportMetric(median(nsF), "ns-ferry-"+r.key)
		b.ReportMetric(median(nsP), "ns-peer-"+r.key)
		b.ReportMetric(median(alF), "allocs-ferry-"+r.key)
		b.ReportMetric(median(alP), "allocs-peer-"+r.key)
		fmt.Printf("PEER %s | %s | %s\n", r.key, r.label, r.same)
	}
}

// int32Nulls is the benchmark's array: int32 x 1024, 103 of them null.
func int32Nulls(mem memory.Allocator) arrow.Array {
	bld := array.NewInt32Builder(mem)
	defer bld.Release()
	for i := 0; i < 1024; i++ {
		if i%10 == 3 {
			bld.AppendNull()
		} else {
			bld.Append(int32(i))
		}
	}
	a := bld.NewArray()
	if a.NullN() != 103 {
		panic(fmt.Sprintf("int32Nulls: %d nulls", a.NullN()))
	}
	return a
}
