package ferry

import (
	"errors"
	"fmt"
	"iter"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

var int32Field = Field{Format: "i", Name: "x", Flags: FlagNullable}

// countingProducer yields n int32 batches; batch b holds b+1 values b*10+k.
func countingProducer(t testing.TB, n int) func() (*DeviceArray, error) {
	b := 0
	return func() (*DeviceArray, error) {
		if b == n {
			return nil, nil
		}
		buf, values, err := AllocSlice[int32](b + 1)
		if err != nil {
			return nil, err
		}
		for k := range values {
			values[k] = int32(b*10 + k)
		}
		b++
		return ExportArrayNoSchema(&ArrayData{Length: int64(len(values)), Buffers: []Buffer{{}, buf}}, nil)
	}
}

func TestGoStreamConsumedInGo(t *testing.T) {
	baseline(t)
	s, err := ExportStream(int32Field, DeviceCPU, countingProducer(t, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	schema, err := s.Schema()
	if err != nil || schema.Format() != "i" || schema.Name() != "x" {
		t.Fatalf("schema: %v", err)
	}
	var kept *DeviceArray
	n := 0
	for s.Next() {
		b := s.Batch()
		if b.Length() != int64(n+1) || b.Schema().Format() != "i" {
			t.Fatalf("batch %d: length %d", n, b.Length())
		}
		if got := unsafe.Slice((*int32)(b.Buffer(1)), n+1)[n]; got != int32(n*10+n) {
			t.Fatalf("batch %d: last value %d", n, got)
		}
		if n == 1 {
			if kept, err = b.Move(); err != nil {
				t.Fatal(err)
			}
		}
		n++
	}
	if s.Err() != nil || n != 4 {
		t.Fatalf("read %d batches, err %v", n, s.Err())
	}
	if s.Next() {
		t.Fatal("Next after the end must stay false")
	}
	if kept.Length() != 2 || unsafe.Slice((*int32)(kept.Buffer(1)), 2)[1] != 11 {
		t.Fatal("a moved batch must survive later Next calls")
	}
	kept.Release()
}

func TestIteratorStreamWithAll(t *testing.T) {
	baseline(t)
	seq := func(yield func(*DeviceArray, error) bool) {
		next := countingProducer(t, 3)
		for {
			a, err := next()
			if a == nil && err == nil {
				return
			}
			if !yield(a, err) {
				a.Release() // never reached the consumer
				return
			}
		}
	}
	s, err := ExportSeq(int32Field, DeviceCPU, iter.Seq2[*DeviceArray, error](seq))
	if err != nil {
		t.Fatal(err)
	}
	lengths := []int64{}
	for b, err := range s.All() {
		if err != nil {
			t.Fatal(err)
		}
		lengths = append(lengths, b.Length())
	}
	if fmt.Sprint(lengths) != "[1 2 3]" {
		t.Fatalf("lengths %v", lengths)
	}
	s.Release()

	// Stopping early releases the producer's iterator through the stream's
	// release.
	s, err = ExportSeq(int32Field, DeviceCPU, iter.Seq2[*DeviceArray, error](seq))
	if err != nil {
		t.Fatal(err)
	}
	for range s.All() {
		break
	}
	s.Release()
}

func TestProducerErrorsAndPanicsReachTheConsumer(t *testing.T) {
	baseline(t)
	cases := []struct {
		name string
		next func() (*DeviceArray, error)
		code syscall.Errno
		msg  string
	}{
		{"ferry error", func() (*DeviceArray, error) { return nil, &Error{Code: syscall.ENOMEM, Message: "no room"} }, syscall.ENOMEM, "no room"},
		{"plain error", func() (*DeviceArray, error) { return nil, errors.New("disk on fire") }, syscall.EIO, "disk on fire"},
		{"panic", func() (*DeviceArray, error) { panic("boom") }, syscall.EIO, "panic in Go get_next: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ExportStream(int32Field, DeviceCPU, c.next)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release()
			if s.Next() {
				t.Fatal("Next must fail")
			}
			var fe *Error
			if !errors.As(s.Err(), &fe) || fe.Code != c.code || !strings.Contains(fe.Message, c.msg) {
				t.Fatalf("got %v, want %v with %q", s.Err(), c.code, c.msg)
			}
		})
	}
	// get_schema failures travel the same way.
	s, err := ExportStreamWithSchema(func() (*Schema, error) { return nil, errors.New("no schema today") }, DeviceCPU,
		func() (*DeviceArray, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if _, err := s.Schema(); err == nil || !strings.Contains(err.Error(), "no schema today") {
		t.Fatalf("schema error %v", err)
	}
}

func TestGoStreamConsumedByCOnForeignThreads(t *testing.T) {
	baseline(t)
	for _, newThread := range []bool{false, true} {
		s, err := ExportStream(int32Field, DeviceCPU, countingProducer(t, 50))
		if err != nil {
			t.Fatal(err)
		}
		// (freeing the raw struct releases the stream: the Go producer is given back)
		batches, elements, _, code, msg := drainInC(t, s, newThread)
		if code != 0 || batches != 50 || elements != 50*51/2 {
			t.Fatalf("new thread %v: %d batches, %d elements, %v %s", newThread, batches, elements, code, msg)
		}
	}
	// A panic on a foreign thread is contained too.
	s, _ := ExportStream(int32Field, DeviceCPU, func() (*DeviceArray, error) { panic("far away") })
	if _, _, _, code, msg := drainInC(t, s, true); code != syscall.EIO || !strings.Contains(msg, "far away") {
		t.Fatalf("panic on a C thread gave %v %q", code, msg)
	}
}

// drainInC hands s to a C consumer (chelper.DrainStream, on a new thread
// when newThread) through a raw stream struct, freed afterwards.
func drainInC(tb testing.TB, s *DeviceArrayStream, newThread bool) (batches, elements, ns int64, code syscall.Errno, msg string) {
	tb.Helper()
	raw := NewRawStream()
	defer FreeRawStream(raw)
	if err := s.ExportTo(raw); err != nil {
		tb.Fatal(err)
	}
	return chelper.DrainStream(raw, newThread)
}

// endlessCStream imports chelper's endless C stream of int32 batches of
// length values.
func endlessCStream(tb testing.TB, length int64) *DeviceArrayStream {
	tb.Helper()
	raw := NewRawStream()
	defer FreeRawStream(raw)
	chelper.EndlessStream(raw, length)
	s, err := ImportStream(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestCStreamConsumedInGo(t *testing.T) {
	s := endlessCStream(t, 8)
	defer s.Release()
	for i := 0; i < 3; i++ {
		if !s.Next() || s.Batch().Length() != 8 || unsafe.Slice((*int32)(s.Batch().Buffer(1)), 8)[7] != 7 {
			t.Fatalf("batch %d wrong (err %v)", i, s.Err())
		}
	}
	if _, err := ImportStream(nil); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("ImportStream(nil): %v", err)
	}
}
