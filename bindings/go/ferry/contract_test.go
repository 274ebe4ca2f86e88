package ferry_test

// The binding contract of docs/bindings.md (issue 20): import validates by
// default with a named opt-out, a moved batch keeps its schema, a stream
// never calls get_next after an error and reports that error every time,
// and arrays and streams survive 8 goroutines reading, closing and
// iterating them at once (run under -race by test.sh).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/ferryarrow"
	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

// int32Array exports values as an owned int32 array with its schema.
func int32Array(t testing.TB, values []int32) *ferry.DeviceArray {
	t.Helper()
	buf, err := ferry.CopySlice(values)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Name: "x", Length: int64(len(values)),
		Buffers: []ferry.Buffer{{}, buf}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// handOver exports a into raw structs, as a producer in another runtime
// would hand it over; the caller frees them.
func handOver(t testing.TB, a *ferry.DeviceArray) (array, schema unsafe.Pointer) {
	t.Helper()
	array, schema = ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	if err := a.ExportTo(array, schema); err != nil {
		t.Fatal(err)
	}
	return array, schema
}

func TestImportValidatesByDefault(t *testing.T) {
	settled(t)
	// A structural lie at DEFAULT: a struct whose child is shorter than it.
	f := ferry.Field{Format: "+s", Name: "s", Children: []ferry.Field{{Format: "i", Name: "a"}}}
	schema, err := f.Export()
	if err != nil {
		t.Fatal(err)
	}
	prepared, err := schema.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	defer prepared.Free()
	rawSchema := ferry.NewRawSchema()
	defer ferry.FreeRawSchema(rawSchema)
	if err := schema.ExportTo(rawSchema); err != nil {
		t.Fatal(err)
	}
	raw := chelper.HostileCPUArray(chelper.HostileNode(3, 0, 0, nil).Child(chelper.HostileNode(1, 0, 0, nil, chelper.Int32s(1))))
	defer ferry.FreeRawDeviceArray(raw)
	_, err = ferry.ImportDeviceArray(raw, rawSchema)
	if err == nil || !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "ImportDeviceArray: the array fails validation") ||
		!strings.Contains(err.Error(), "length") {
		t.Fatalf("default import of a struct with a short child: %v", err)
	}
	if ferry.RawDeviceArrayIsReleased(raw) || ferry.RawSchemaIsReleased(rawSchema) {
		t.Fatal("a refused import must move nothing")
	}
	// The lean path validates too.
	var lean ferry.DeviceArray
	if err := lean.Import(raw, rawSchema); err == nil || !strings.Contains(err.Error(), "fails validation") {
		t.Fatalf("DeviceArray.Import of the same: %v", err)
	}
	// Without a schema, the default import cannot validate and says how to proceed.
	_, err = ferry.ImportDeviceArray(raw, nil)
	if err == nil || !strings.Contains(err.Error(), "ValidateNone") {
		t.Fatalf("default import without a schema: %v", err)
	}
	// A prepared schema validates an array that comes without one.
	_, err = ferry.ImportDeviceArray(raw, nil, ferry.ImportOptions{Prepared: prepared})
	if err == nil || !strings.Contains(err.Error(), "fails validation") {
		t.Fatalf("import against a prepared schema: %v", err)
	}
	// The named opt-out takes it as it is.
	a, err := ferry.ImportDeviceArray(raw, rawSchema, ferry.ImportOptions{Validate: ferry.ValidateNone})
	if err != nil {
		t.Fatalf("ValidateNone: %v", err)
	}
	if a.Validate(ferry.ValidateDefault) == nil {
		t.Fatal("the trusted array must still fail Validate")
	}
	a.Release()
	schema.Release()
	if n := chelper.HostileLive(); n != 0 {
		t.Fatalf("%d hostile nodes left", n)
	}

	// FULL at import catches what DEFAULT does not read (decreasing offsets).
	bad := func() unsafe.Pointer {
		s, err := (&ferry.Field{Format: "u", Name: "u"}).Export()
		if err != nil {
			t.Fatal(err)
		}
		raw := ferry.NewRawSchema()
		if err := s.ExportTo(raw); err != nil {
			t.Fatal(err)
		}
		return raw
	}
	utf8 := chelper.HostileCPUArray(chelper.HostileNode(2, 0, 0, nil, chelper.Int32s(0, 2, 1), chelper.Buf("abc")))
	defer ferry.FreeRawDeviceArray(utf8)
	us := bad()
	defer ferry.FreeRawSchema(us)
	if _, err := ferry.ImportDeviceArray(utf8, us, ferry.ImportOptions{Validate: ferry.ValidateFull}); err == nil ||
		!strings.Contains(err.Error(), "fails validation") {
		t.Fatalf("FULL import of decreasing offsets: %v", err)
	}
	a, err = ferry.ImportDeviceArray(utf8, us)
	if err != nil {
		t.Fatalf("DEFAULT import of decreasing offsets (not read at DEFAULT): %v", err)
	}
	a.Release()

	// Several options are refused by name, and so is an unknown level.
	good, goodSchema := handOver(t, int32Array(t, []int32{1, 2}))
	defer ferry.FreeRawDeviceArray(good)
	defer ferry.FreeRawSchema(goodSchema)
	if _, err := ferry.ImportDeviceArray(good, goodSchema, ferry.ImportOptions{}, ferry.ImportOptions{}); err == nil ||
		!strings.Contains(err.Error(), "at most one") {
		t.Fatalf("two ImportOptions: %v", err)
	}
	if _, err := ferry.ImportDeviceArray(good, goodSchema, ferry.ImportOptions{Validate: 7}); err == nil ||
		!strings.Contains(err.Error(), "unknown validation level 7") {
		t.Fatalf("level 7: %v", err)
	}
	a, err = ferry.ImportDeviceArray(good, goodSchema)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
}

// throughC exports s into a raw stream struct and imports it back, the hand
// over of a stream between two runtimes; the struct is freed when the test
// ends.
func throughC(t *testing.T, s *ferry.DeviceArrayStream) *ferry.DeviceArrayStream {
	t.Helper()
	raw := ferry.NewRawStream()
	t.Cleanup(func() { ferry.FreeRawStream(raw) })
	if err := s.ExportTo(raw); err != nil {
		t.Fatal(err)
	}
	in, err := ferry.ImportStream(raw)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestImportStreamValidatesEachBatch(t *testing.T) {
	// decreasing offsets in batch 1: FULL refuses it, and ends the stream
	// with that error for good.
	raw := ferry.NewRawStream()
	defer ferry.FreeRawStream(raw)
	chelper.HostileStream(raw, chelper.StreamBadBatch, 0)
	s, err := ferry.ImportStream(raw, ferry.ImportOptions{Validate: ferry.ValidateFull})
	if err != nil {
		t.Fatal(err)
	}
	if s.Next() {
		t.Fatal("a FULL stream handed out a batch with decreasing offsets")
	}
	first := s.Err()
	if first == nil || !strings.Contains(first.Error(), "get_next returned a batch that fails validation") ||
		!strings.Contains(first.Error(), "offset") {
		t.Fatalf("the refusal: %v", first)
	}
	for i := 0; i < 3; i++ {
		if s.Next() || s.Err() == nil || s.Err().Error() != first.Error() {
			t.Fatalf("Next after the refusal: %v", s.Err())
		}
	}
	s.Release()
	if n := chelper.HostileLive(); n != 0 {
		t.Fatalf("%d hostile nodes left", n)
	}

	// A schema the validator refuses ends the stream at the first Next.
	raw2 := ferry.NewRawStream()
	defer ferry.FreeRawStream(raw2)
	chelper.HostileStream(raw2, chelper.StreamBadSchema, 0)
	s, err = ferry.ImportStream(raw2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Next() || s.Err() == nil || !strings.Contains(s.Err().Error(), "the stream's schema fails validation") {
		t.Fatalf("a stream with a bad schema: %v", s.Err())
	}
	s.Release()
}

// TestStreamErrorIsFinal: a producer that fails once and would then yield a
// batch; the consumer never calls get_next again and reports the same error.
func TestStreamErrorIsFinal(t *testing.T) {
	settled(t)
	var calls atomic.Int32
	out, err := ferry.ExportStream(ferry.Field{Format: "i", Name: "x"}, ferry.DeviceCPU, func() (*ferry.DeviceArray, error) {
		if calls.Add(1) == 1 {
			return nil, &ferry.Error{Code: syscall.EBUSY, Message: "boom once"}
		}
		buf, err := ferry.CopySlice([]int32{7})
		if err != nil {
			return nil, err
		}
		return ferry.ExportArrayNoSchema(&ferry.ArrayData{Length: 1, Buffers: []ferry.Buffer{{}, buf}}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	s := throughC(t, out)
	defer s.Release()
	check := func(what string, err error) {
		t.Helper()
		var fe *ferry.Error
		if !errors.As(err, &fe) || fe.Code != syscall.EBUSY || fe.Message != "boom once" {
			t.Fatalf("%s: %v, expected EBUSY \"boom once\"", what, err)
		}
	}
	if s.Next() {
		t.Fatal("Next succeeded over a failing get_next")
	}
	check("Err", s.Err())
	for i := 0; i < 3; i++ {
		if s.Next() {
			t.Fatal("Next went on after the error")
		}
		check("Err again", s.Err())
		b, err := s.NextBatch()
		if b != nil {
			t.Fatal("NextBatch went on after the error")
		}
		check("NextBatch", err)
	}
	n := 0
	for b, err := range s.All() {
		if b != nil {
			t.Fatal("All yielded a batch after the error")
		}
		check("All", err)
		n++
	}
	if n != 1 {
		t.Fatalf("All yielded the error %d times, expected once", n)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("get_next was called %d times, expected once", got)
	}
}

// TestMovedBatchKeepsItsSchema: a batch moved out of its stream (Move,
// NextBatch, ToHost) carries its own copy of the stream's schema, and
// outlives the stream.
func TestMovedBatchKeepsItsSchema(t *testing.T) {
	settled(t)
	f := ferry.Field{Format: "+s", Name: "rec", Children: []ferry.Field{{Format: "i", Name: "a", Flags: ferry.FlagNullable}}}
	batch := func(v int32) *ferry.DeviceArray {
		buf, err := ferry.CopySlice([]int32{v, v + 1})
		if err != nil {
			t.Fatal(err)
		}
		a, err := ferry.ExportArrayNoSchema(&ferry.ArrayData{Length: 2, Buffers: []ferry.Buffer{{}},
			Children: []*ferry.ArrayData{{Length: 2, Buffers: []ferry.Buffer{{}, buf}}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	i := int32(0)
	s, err := ferry.ExportStream(f, ferry.DeviceCPU, func() (*ferry.DeviceArray, error) {
		if i == 3 {
			return nil, nil
		}
		i++
		return batch(i * 10), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Next() {
		t.Fatal(s.Err())
	}
	moved, err := s.Batch().Move()
	if err != nil {
		t.Fatal(err)
	}
	taken, err := s.NextBatch()
	if err != nil || taken == nil {
		t.Fatalf("NextBatch: %v", err)
	}
	if !s.Next() {
		t.Fatal(s.Err())
	}
	onHost, err := s.Batch().ToHost()
	if err != nil {
		t.Fatal(err)
	}
	s.Release() // the stream and its schema are gone: the batches keep their own
	for k, b := range []*ferry.DeviceArray{moved, taken, onHost} {
		want := int32(10 * (k + 1))
		if sc := b.Schema(); sc == nil || sc.Format() != "+s" || sc.Child(0).Name() != "a" {
			t.Fatalf("batch %d: schema %v", k, sc)
		}
		h, err := b.Host()
		if err != nil {
			t.Fatalf("batch %d: Host: %v", k, err)
		}
		col, err := h.Child(0)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := ferry.Value[int32](col, 1); err != nil || v != want+1 {
			t.Fatalf("batch %d: %d, %v", k, v, err)
		}
		c, err := b.CopyTo(ferry.DeviceCPU, -1)
		if err != nil {
			t.Fatalf("batch %d: CopyTo: %v", k, err)
		}
		c.Release()
		rec, err := ferryarrow.ToRecord(b)
		if err != nil {
			t.Fatalf("batch %d: ToRecord: %v", k, err)
		}
		if got := fmt.Sprint(rec.Column(0)); got != fmt.Sprintf("[%d %d]", want, want+1) {
			t.Fatalf("batch %d: record %s", k, got)
		}
		rec.Release()
	}
}

// sharedReads is what the goroutines of the concurrency test may see: the
// right values, or a named "released" error once the array is closed.
func releasedError(err error) bool {
	return errors.Is(err, syscall.EINVAL) && strings.Contains(err.Error(), "released")
}

// TestConcurrentArrayAndStream: 8 goroutines read, close and iterate one
// array and one stream at once. Nothing crashes, no value is wrong, the
// producer's callbacks never overlap, its release runs once and last, and
// every failure is the named "released" error.
func TestConcurrentArrayAndStream(t *testing.T) {
	settled(t)
	const n = 1000
	values := make([]int32, n)
	for i := range values {
		values[i] = int32(i * 3)
	}
	for round := 0; round < 20; round++ {
		a := int32Array(t, values)
		p := &checkedProducer{t: t, batches: 64}
		s, err := ferry.ExportReader(p, ferry.DeviceCPU)
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var seen sync.Map // batch number -> true: each batch reaches one goroutine
		fail := make(chan error, 64)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				<-start
				for it := 0; it < 40; it++ {
					switch {
					case g == 7 && it == 20+round%10: // closes both midway
						a.Release()
						s.Release()
					case g%3 == 0: // reads the array's values
						err := a.Read(func(h ferry.HostArray) error {
							vs, err := ferry.Values[int32](h)
							if err != nil {
								return err
							}
							for i, v := range vs {
								if v != int32(i*3) {
									return fmt.Errorf("value %d is %d", i, v)
								}
							}
							return nil
						})
						if err != nil && !releasedError(err) {
							fail <- err
						}
						if err := a.Validate(ferry.ValidateFull); err != nil && !releasedError(err) {
							fail <- err
						}
					case g%3 == 1: // takes batches of its own
						b, err := s.NextBatch()
						if err != nil {
							if !releasedError(err) {
								fail <- err
							}
							continue
						}
						if b == nil {
							continue // the end
						}
						if err := checkBatch(b, &seen); err != nil {
							fail <- err
						}
						b.Release()
					default: // iterates, and copies the array
						for b, err := range s.All() {
							if err != nil {
								if !releasedError(err) {
									fail <- err
								}
								break
							}
							if err := b.Validate(ferry.ValidateDefault); err != nil && !releasedError(err) {
								fail <- err
							}
							break
						}
						if c, err := a.CopyTo(ferry.DeviceCPU, -1); err == nil {
							c.Release()
						} else if !releasedError(err) {
							fail <- err
						}
						if _, err := s.Schema(); err != nil && !releasedError(err) {
							fail <- err
						}
					}
				}
			}(g)
		}
		close(start)
		wg.Wait()
		close(fail)
		for err := range fail {
			t.Fatalf("round %d: %v", round, err)
		}
		if !a.IsReleased() || !s.IsReleased() {
			t.Fatal("the closing goroutine did not release both")
		}
		if got := p.released.Load(); got != 1 {
			t.Fatalf("round %d: the producer was released %d times", round, got)
		}
	}
}

// checkBatch checks a batch of checkedProducer: batch k holds k, k+1, ...,
// k+9, and each k reaches one goroutine only.
func checkBatch(b *ferry.DeviceArray, seen *sync.Map) error {
	h, err := b.Host()
	if err != nil {
		return err
	}
	vs, err := ferry.Values[int32](h)
	if err != nil {
		return err
	}
	if len(vs) != 10 {
		return fmt.Errorf("a batch of %d values", len(vs))
	}
	for i, v := range vs {
		if v != vs[0]+int32(i) {
			return fmt.Errorf("batch %d: value %d is %d", vs[0], i, v)
		}
	}
	if _, dup := seen.LoadOrStore(vs[0], true); dup {
		return fmt.Errorf("batch %d handed out twice", vs[0])
	}
	return nil
}

// checkedProducer is a BatchReader that fails the test when its callbacks
// overlap or come after its release.
type checkedProducer struct {
	t        testing.TB
	batches  int
	next     int
	inside   atomic.Int32
	released atomic.Int32
}

func (p *checkedProducer) enter(what string) {
	if p.inside.Add(1) != 1 {
		p.t.Errorf("%s: two producer callbacks at once", what)
	}
	if p.released.Load() != 0 {
		p.t.Errorf("%s after the producer's release", what)
	}
}

func (p *checkedProducer) Schema() (*ferry.Schema, error) {
	p.enter("get_schema")
	defer p.inside.Add(-1)
	return (&ferry.Field{Format: "i", Name: "x"}).Export()
}

func (p *checkedProducer) Next() (*ferry.DeviceArray, error) {
	p.enter("get_next")
	defer p.inside.Add(-1)
	if p.next == p.batches {
		return nil, nil
	}
	k := int32(p.next * 100)
	p.next++
	vs := make([]int32, 10)
	for i := range vs {
		vs[i] = k + int32(i)
	}
	buf, err := ferry.CopySlice(vs)
	if err != nil {
		return nil, err
	}
	return ferry.ExportArrayNoSchema(&ferry.ArrayData{Length: 10, Buffers: []ferry.Buffer{{}, buf}}, nil)
}

func (p *checkedProducer) Release() {
	p.enter("release")
	p.released.Add(1)
	p.inside.Add(-1)
}

// leakKept keeps the child's unreleased imports reachable until exit.
var leakKept []any

// TestLeakReportNamesGoImports runs a child (this test binary) with
// FERRY_LEAK_REPORT=1 that leaves an array, a stream and a schema imported
// and unreleased, releases a fourth import, and ends with ferry.Exit: the
// core's report on stderr names the three Go imports, one line each, and
// not the released one.
func TestLeakReportNamesGoImports(t *testing.T) {
	if os.Getenv("FERRY_LEAK_CHILD") != "" {
		array, schema := handOver(t, int32Array(t, []int32{1, 2, 3}))
		a, err := ferry.ImportDeviceArray(array, schema)
		if err != nil {
			t.Fatal(err)
		}
		array2, schema2 := handOver(t, int32Array(t, []int32{4}))
		b, err := ferry.ImportDeviceArray(array2, schema2)
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		out, err := ferry.ExportStream(ferry.Field{Format: "i", Name: "x"}, ferry.DeviceCPU,
			func() (*ferry.DeviceArray, error) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		s := throughC(t, out)
		sc, err := (&ferry.Field{Format: "u", Name: "y"}).Export()
		if err != nil {
			t.Fatal(err)
		}
		rawSchema := ferry.NewRawSchema()
		if err := sc.ExportTo(rawSchema); err != nil {
			t.Fatal(err)
		}
		imported, err := ferry.ImportSchema(rawSchema)
		if err != nil {
			t.Fatal(err)
		}
		leakKept = append(leakKept, a, s, imported)
		ferry.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLeakReportNamesGoImports$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "FERRY_LEAK_CHILD=1", "FERRY_LEAK_REPORT=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the child failed: %v\n%s", err, stderr.String())
	}
	var goLines []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(line, "ferry: leak: go: ") {
			goLines = append(goLines, line)
		}
	}
	want := []string{
		`ferry: leak: go: DeviceArray from ImportDeviceArray never released (format "i", length 3, `,
		`ferry: leak: go: DeviceArrayStream from ImportStream never released (`,
		`ferry: leak: go: Schema from ImportSchema never released (format "u")`,
	}
	if len(goLines) != len(want) {
		t.Fatalf("%d lines about Go objects, want %d:\n%s", len(goLines), len(want), stderr.String())
	}
	for _, w := range want {
		found := false
		for _, l := range goLines {
			found = found || strings.HasPrefix(l, w)
		}
		if !found {
			t.Fatalf("no line %q in the report:\n%s", w, stderr.String())
		}
	}

	// Without the variable, nothing is reported.
	cmd = exec.Command(os.Args[0], "-test.run", "^TestLeakReportNamesGoImports$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "FERRY_LEAK_CHILD=1", "FERRY_LEAK_REPORT=0")
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the child failed: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "ferry: leak") {
		t.Fatalf("a report without FERRY_LEAK_REPORT:\n%s", stderr.String())
	}
}
