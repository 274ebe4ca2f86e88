package ferry_test

// Async device streams through the Go API, Go to Go and both ways with
// arrow-go's own async functions (cdata.ExportAsyncRecordBatchStream and
// cdata.CreateAsyncDeviceStreamHandler), which judge from outside.

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/ferryarrow"
)

func int32Schema(t testing.TB) *ferry.Schema {
	t.Helper()
	s, err := (&ferry.Field{Format: "i", Name: "x"}).Export()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// int32Batch is a schema-less batch k: 10k, 10k+1, 10k+2.
func int32Batch(t testing.TB, k int32) *ferry.DeviceArray {
	t.Helper()
	buf, err := ferry.CopySlice([]int32{10 * k, 10*k + 1, 10*k + 2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := ferry.ExportArrayNoSchema(&ferry.ArrayData{Length: 3, Buffers: []ferry.Buffer{{}, buf}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// exportInt32Batches pushes batches int32Batch(t, 0..n-1), sent from a
// goroutine of their own (the producer's), through ExportAsync into handler;
// the channel gives ExportAsync's result.
func exportInt32Batches(t *testing.T, handler unsafe.Pointer, n int32) <-chan error {
	ch := make(chan ferry.AsyncBatch)
	done := make(chan error, 1)
	go func() {
		done <- ferry.ExportAsync(context.Background(), handler, int32Schema(t), ferry.DeviceCPU, ch)
	}()
	go func() {
		for k := int32(0); k < n; k++ {
			ch <- ferry.AsyncBatch{Batch: int32Batch(t, k)}
		}
		close(ch)
	}()
	return done
}

// asyncValues reads every batch of c (c.All) on the host and returns, for
// each, what value reads from its host array; before(k), when given, runs
// when batch k has arrived.
func asyncValues[T any](t *testing.T, c *ferry.AsyncConsumer, before func(k int), value func(ferry.HostArray) (T, error)) []T {
	t.Helper()
	var got []T
	for b, err := range c.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if before != nil {
			before(len(got))
		}
		h, err := b.Host()
		if err != nil {
			t.Fatal(err)
		}
		v, err := value(h)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
		b.Release()
	}
	return got
}

func TestAsyncGoToGo(t *testing.T) {
	settled(t)
	for _, window := range []int64{1, 4} {
		c, err := ferry.NewAsyncConsumer(window)
		if err != nil {
			t.Fatal(err)
		}
		done := exportInt32Batches(t, c.Handler(), 6)
		n := int32(0)
		for b, err := range c.All(context.Background()) {
			if err != nil {
				t.Fatalf("window %d: %v", window, err)
			}
			h, err := b.Host()
			if err != nil {
				t.Fatal(err)
			}
			vs, err := ferry.Values[int32](h)
			if err != nil || len(vs) != 3 || vs[2] != 10*n+2 || b.Schema().Format() != "i" {
				t.Fatalf("window %d, batch %d: %v %v", window, n, vs, err)
			}
			b.Release()
			n++
		}
		if n != 6 {
			t.Fatalf("window %d: %d batches", window, n)
		}
		if err := <-done; err != nil {
			t.Fatalf("ExportAsync: %v", err)
		}
		c.Close()
	}
}

func TestAsyncErrorsAndCancel(t *testing.T) {
	settled(t)
	// A producer's error reaches the consumer, the same every time.
	c, err := ferry.NewAsyncConsumer(2)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan ferry.AsyncBatch, 2)
	ch <- ferry.AsyncBatch{Batch: int32Batch(t, 1)}
	ch <- ferry.AsyncBatch{Err: &ferry.Error{Code: syscall.EBUSY, Message: "the producer gave up"}}
	done := make(chan error, 1)
	go func() {
		done <- ferry.ExportAsync(context.Background(), c.Handler(), int32Schema(t), ferry.DeviceCPU, ch)
	}()
	b, err := c.Next(context.Background())
	if err != nil || b == nil {
		t.Fatalf("first batch: %v", err)
	}
	b.Release()
	for i := 0; i < 3; i++ {
		b, err = c.Next(context.Background())
		var fe *ferry.Error
		if b != nil || !errors.As(err, &fe) || fe.Code != syscall.EBUSY || fe.Message != "the producer gave up" {
			t.Fatalf("after the producer's error: %v", err)
		}
	}
	if err := <-done; !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("ExportAsync: %v", err)
	}
	c.Close()

	// The consumer's context cancels the stream; the producer is told.
	c, err = ferry.NewAsyncConsumer(1)
	if err != nil {
		t.Fatal(err)
	}
	idle := make(chan ferry.AsyncBatch) // never sends
	go func() {
		done <- ferry.ExportAsync(context.Background(), c.Handler(), int32Schema(t), ferry.DeviceCPU, idle)
	}()
	if s, err := c.Schema(context.Background()); err != nil || s.Format() != "i" {
		t.Fatalf("schema: %v", err)
	} else {
		s.Release()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if _, err := c.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next under a cancelled context: %v", err)
	}
	// The core's consumer wakes its reader before it tells the producer, so
	// this batch may still be delivered (a task it had requested) or be
	// refused; either way the producer stops and its handler is released.
	idle <- ferry.AsyncBatch{Batch: int32Batch(t, 2)}
	close(idle)
	if err := <-done; err != nil && !errors.Is(err, syscall.ECANCELED) {
		t.Fatalf("ExportAsync after the consumer cancelled: %v", err)
	}
	if _, err := c.Next(context.Background()); !errors.Is(err, syscall.ECANCELED) {
		t.Fatalf("Next after the cancel: %v", err)
	}
	c.Close()
	c.Close()
	if _, err := c.Next(context.Background()); err == nil {
		t.Fatal("Next after Close")
	}

	// A bad window and a released handler are refused by name.
	if _, err := ferry.NewAsyncConsumer(0); err == nil {
		t.Fatal("window 0 accepted")
	}
	if err := ferry.ExportAsync(context.Background(), nil, int32Schema(t), ferry.DeviceCPU, nil); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("a NULL handler: %v", err)
	}
}

func records(t testing.TB, mem memory.Allocator, n int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	var out []arrow.RecordBatch
	for k := 0; k < n; k++ {
		b := array.NewRecordBuilder(mem, schema)
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(k), int64(k) + 100}, []bool{true, k%2 == 0})
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return schema, out
}

// arrowGoProducer runs arrow-go's async producer (on a goroutine) over recs
// into handler, and ends the stream once readAll is closed. The consumer
// closes it when it has taken the last batch: arrow-go frees its
// ArrowAsyncProducer (and deletes its handle) before it releases the
// handler, so a consumer's request(1) for more after a batch, racing with
// the end of the stream, would reach freed memory (a panic "misuse of an
// invalid Handle" inside arrow-go).
func arrowGoProducer(schema *arrow.Schema, recs []arrow.RecordBatch, handler unsafe.Pointer) (readAll chan struct{}, done chan error) {
	stream := make(chan cdata.RecordMessage)
	readAll, done = make(chan struct{}), make(chan error, 1)
	go func() {
		done <- cdata.ExportAsyncRecordBatchStream(schema, stream, (*cdata.CArrowAsyncDeviceStreamHandler)(handler))
	}()
	go func() {
		for _, r := range recs {
			r.Retain() // arrow-go releases what it sends
			stream <- cdata.RecordMessage{Record: r}
		}
		<-readAll
		close(stream)
	}()
	return readAll, done
}

// TestAsyncFromArrowGo: arrow-go's producer (ExportAsyncRecordBatchStream)
// pushes into ferry's consumer.
func TestAsyncFromArrowGo(t *testing.T) {
	settled(t)
	// C memory: arrow-go's async producer exports Go-heap buffers without
	// pinning them, which GOEXPERIMENT=cgocheck2 (test.sh) stops as
	// "unpinned Go pointer stored into non-Go memory".
	schema, recs := records(t, mallocator.NewMallocator(), 5)
	c, err := ferry.NewAsyncConsumer(2, ferry.ImportOptions{Validate: ferry.ValidateFull})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	readAll, done := arrowGoProducer(schema, recs, c.Handler())
	k := 0
	for b, err := range c.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if k == len(recs)-1 {
			close(readAll) // now the producer may end the stream
		}
		got, err := ferryarrow.ToRecord(b)
		if err != nil {
			t.Fatalf("batch %d: %v", k, err)
		}
		if !array.RecordEqual(got, recs[k]) {
			t.Fatalf("batch %d: %v, want %v", k, got, recs[k])
		}
		got.Release()
		k++
	}
	if k != len(recs) {
		t.Fatalf("%d batches of %d", k, len(recs))
	}
	if err := <-done; err != nil {
		t.Fatalf("arrow-go's producer: %v", err)
	}
	for _, r := range recs {
		r.Release()
	}
}

// TestAsyncToArrowGo: ferry's producer (ExportAsync) pushes into arrow-go's
// consumer (CreateAsyncDeviceStreamHandler), which keeps tasks in a queue
// and extracts them after the handler's release.
func TestAsyncToArrowGo(t *testing.T) {
	settled(t)
	schema, recs := records(t, memory.NewGoAllocator(), 5)
	for _, queue := range []uint64{1, 3} {
		h := ferry.NewRawAsyncHandler()
		ctx, cancel := context.WithCancel(context.Background())
		streams := cdata.CreateAsyncDeviceStreamHandler(ctx, queue, (*cdata.CArrowAsyncDeviceStreamHandler)(h))
		fs, err := ferryarrow.FromArrowSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan ferry.AsyncBatch)
		done := make(chan error, 1)
		go func() { done <- ferry.ExportAsync(ctx, h, fs, ferry.DeviceCPU, ch) }()
		go func() {
			for _, r := range recs {
				d, err := ferryarrow.FromRecord(r)
				ch <- ferry.AsyncBatch{Batch: d, Err: err}
			}
			close(ch)
		}()
		s := <-streams
		if s.Err != nil {
			t.Fatalf("queue %d: arrow-go's consumer: %v", queue, s.Err)
		}
		if !s.Schema.Equal(schema) {
			t.Fatalf("queue %d: schema %v", queue, s.Schema)
		}
		k := 0
		for m := range s.Stream {
			if m.Err != nil {
				t.Fatalf("queue %d: %v", queue, m.Err)
			}
			if !array.RecordEqual(m.Record, recs[k]) {
				t.Fatalf("queue %d, batch %d: %v", queue, k, m.Record)
			}
			m.Record.Release()
			k++
		}
		if k != len(recs) {
			t.Fatalf("queue %d: %d batches of %d", queue, k, len(recs))
		}
		if err := <-done; err != nil {
			t.Fatalf("queue %d: ExportAsync: %v", queue, err)
		}
		cancel()
		ferry.FreeRawAsyncHandler(h) // released by arrow-go at the end
	}
	for _, r := range recs {
		r.Release()
	}
}
