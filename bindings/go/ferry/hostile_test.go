package ferry_test

// Hostile producers through the public import paths (issue 15): the arrays
// and streams of tests/hostile (the one library of hostile producers every
// binding loads; its catalogue says what each lie must come back as),
// handed to ImportDeviceArray / ImportStream, then read the ways a
// user reads them (Validate, Host and its accessors, BufferBytes, ToHost,
// ferryarrow.ToArrow and the arrow-go record reader). Each must come back
// as a *ferry.Error carrying the validator's finding: no crash, every node
// released exactly once (counted by the C side), and nothing on stderr
// (TestHostileNothingOnStderr re-runs them in a child process).

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/ferryarrow"
	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

const deviceCPU = int32(ferry.DeviceCPU)

// nothingLeft fails the test unless every hostile node, schema and stream
// made so far was released, exactly once.
func nothingLeft(t *testing.T, what string) {
	t.Helper()
	if n := chelper.HostileLive(); n != 0 {
		t.Fatalf("%s: %d hostile nodes not released (or released twice: negative)", what, n)
	}
}

// trusted opts out of import validation: these tests read what a user who
// trusted the producer would (TestHostileDefaultImportRefuses checks that
// the default import refuses it instead).
var trusted = ferry.ImportOptions{Validate: ferry.ValidateNone}

// importHostile takes the hand-made device array at raw (C memory) with an
// owned schema made from field, without validating it.
func importHostile(t *testing.T, raw unsafe.Pointer, field ferry.Field) *ferry.DeviceArray {
	t.Helper()
	defer ferry.FreeRawDeviceArray(raw)
	a, err := ferry.ImportDeviceArray(raw, nil, trusted)
	if err != nil {
		t.Fatalf("ImportDeviceArray: %v", err)
	}
	schema, err := field.Export()
	if err != nil {
		t.Fatalf("schema %q: %v", field.Format, err)
	}
	if err := a.SetSchema(schema); err != nil {
		t.Fatal(err)
	}
	return a
}

// mentions fails unless err is a *ferry.Error (EINVAL, or ENODEV for a
// device ferry does not know) whose message contains needle.
func mentions(t *testing.T, err error, needle, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted, expected an error about %q", what, needle)
	}
	var fe *ferry.Error
	if !errors.As(err, &fe) {
		t.Fatalf("%s: %v is not a *ferry.Error", what, err)
	}
	if fe.Code != syscall.EINVAL && fe.Code != syscall.ENODEV {
		t.Fatalf("%s: code %v (%v), expected EINVAL or ENODEV", what, fe.Code, err)
	}
	if !strings.Contains(strings.ToLower(fe.Message), strings.ToLower(needle)) {
		t.Fatalf("%s: %q does not mention %q", what, fe.Message, needle)
	}
}

// readAt reads element i of h the way a user does, by its format: values,
// strings, struct fields (at i + offset), list items, the dictionary; to a
// depth of 4 (a shared chain has 2^40 paths).
func readAt(h ferry.HostArray, i int64) error { return readAtDepth(h, i, 4) }

func readAtDepth(h ferry.HostArray, i int64, depth int) error {
	if depth == 0 {
		return nil
	}
	if _, err := h.IsValid(i); err != nil {
		return err
	}
	switch f := h.Format(); f {
	case "i":
		if _, err := ferry.Value[int32](h, i); err != nil {
			return err
		}
	case "u", "U":
		if _, err := h.String(i); err != nil {
			return err
		}
	case "b":
		if _, err := h.Bool(i); err != nil {
			return err
		}
	case "l":
		if _, err := ferry.Value[int64](h, i); err != nil {
			return err
		}
	case "+s":
		for k := 0; k < h.Schema().NumChildren(); k++ {
			c, err := h.Child(k)
			if err != nil {
				return err
			}
			if err := readAtDepth(c, i+h.Offset(), depth-1); err != nil {
				return err
			}
		}
	case "+l":
		start, end, err := h.ListRange(i)
		if err != nil {
			return err
		}
		items, err := h.Child(0)
		if err != nil {
			return err
		}
		for j := start; j < end; j++ {
			if err := readAtDepth(items, j, depth-1); err != nil {
				return err
			}
		}
	default:
		// a format the binding cannot parse: its buffers are refused
		if _, err := h.Buffer(1); err != nil {
			return err
		}
		panic("readAt does not know format " + f)
	}
	if h.Schema().Dictionary() != nil {
		d, err := h.Dictionary()
		if err != nil {
			return err
		}
		return readAll(d)
	}
	return nil
}

func readAll(h ferry.HostArray) error {
	for i := int64(0); i < h.Len(); i++ {
		if err := readAt(h, i); err != nil {
			return err
		}
	}
	return nil
}

func hostRead(a *ferry.DeviceArray) error {
	h, err := a.Host()
	if err != nil {
		return err
	}
	return readAll(h)
}

// mentionsFinding fails unless err carries the catalogue case's finding:
// its "rule: where" and its needle.
func mentionsFinding(t *testing.T, err error, c chelper.HostileCase, what string) {
	t.Helper()
	mentions(t, err, c.Where, what)
	mentions(t, err, c.Needle, what)
}

// refusedEverywhere: a structural lie of the catalogue. The default import
// refuses it and moves nothing; imported without validation, Validate
// reports the finding, reading through Host fails (at Host or at the
// accessor that meets the lie) instead of reading what the array does not
// declare, unless the lie is about what nobody reads (HostileReadable:
// the values read fine), and ToArrow refuses with the finding. The array is
// released on the way out.
func refusedEverywhere(t *testing.T, c chelper.HostileCase) {
	t.Helper()
	raw, rawSchema := chelper.HostileArray(c.Name)
	a, err := ferry.ImportDeviceArray(raw, rawSchema)
	if err == nil {
		a.Release()
		t.Fatalf("%s: the default import accepted it", c.Name)
	}
	mentionsFinding(t, err, c, c.Name+": default import")
	if !strings.Contains(err.Error(), "ImportDeviceArray: the array fails validation") {
		t.Fatalf("%s: default import: %v", c.Name, err)
	}
	if ferry.RawDeviceArrayIsReleased(raw) || ferry.RawSchemaIsReleased(rawSchema) {
		t.Fatalf("%s: a refused import moved the array or its schema", c.Name)
	}
	ferry.FreeRawDeviceArray(raw) // releases them: the import refused to take them
	ferry.FreeRawSchema(rawSchema)
	nothingLeft(t, c.Name+": default import")

	raw, rawSchema = chelper.HostileArray(c.Name)
	defer ferry.FreeRawDeviceArray(raw)
	defer ferry.FreeRawSchema(rawSchema)
	a, err = ferry.ImportDeviceArray(raw, rawSchema, trusted)
	if err != nil {
		// a schema no reader can use is refused even without validation
		mentions(t, err, "", c.Name+": trusted import")
		return
	}
	defer a.Release()
	mentionsFinding(t, a.Validate(ferry.ValidateDefault), c, c.Name+": Validate")
	if c.Flags&chelper.HostileDevice != 0 {
		// not host memory: ToArrow below refuses it by its device
	} else if err := hostRead(a); c.Flags&chelper.HostileReadable != 0 && err != nil {
		t.Fatalf("%s: Host: %v", c.Name, err)
	} else if c.Flags&chelper.HostileReadable == 0 && err == nil {
		t.Fatalf("%s: Host read it all without an error", c.Name)
	} else if err != nil {
		mentions(t, err, "", c.Name+": Host")
	}
	_, err = ferryarrow.ToArrow(a)
	if c.Flags&chelper.HostileDevice != 0 {
		mentions(t, err, "device", c.Name+": ToArrow") // arrow-go reads CPU memory only
	} else {
		mentionsFinding(t, err, c, c.Name+": ToArrow")
	}
	if a.IsReleased() {
		t.Fatalf("%s: a refused ToArrow must leave the array to its owner", c.Name)
	}
}

// refusedAtFull: a content lie of the catalogue. The default import takes
// it (DEFAULT reads no values); Validate(FULL), ToArrow at FULL (the
// explicit choice) and a FULL import refuse it with the finding.
func refusedAtFull(t *testing.T, c chelper.HostileCase) {
	t.Helper()
	raw, rawSchema := chelper.HostileArray(c.Name)
	_, err := ferry.ImportDeviceArray(raw, rawSchema, ferry.ImportOptions{Validate: ferry.ValidateFull})
	mentionsFinding(t, err, c, c.Name+": FULL import")
	a, err := ferry.ImportDeviceArray(raw, rawSchema)
	ferry.FreeRawDeviceArray(raw)
	ferry.FreeRawSchema(rawSchema)
	if err != nil {
		t.Fatalf("%s: the default import: %v", c.Name, err)
	}
	mentionsFinding(t, a.Validate(ferry.ValidateFull), c, c.Name+": Validate(FULL)")
	_, err = ferryarrow.ToArrow(a, ferryarrow.Options{Validate: ferry.ValidateFull})
	mentionsFinding(t, err, c, c.Name+": ToArrow at FULL")
	a.Release()
}

// refusedByTheReader: a length no buffer can back, which validation cannot
// see on the CPU: the accessors refuse it instead of reading.
func refusedByTheReader(t *testing.T, c chelper.HostileCase) {
	t.Helper()
	raw, rawSchema := chelper.HostileArray(c.Name)
	a, err := ferry.ImportDeviceArray(raw, rawSchema)
	ferry.FreeRawDeviceArray(raw)
	ferry.FreeRawSchema(rawSchema)
	if err != nil {
		t.Fatalf("%s: the default import: %v", c.Name, err)
	}
	defer a.Release()
	h, err := a.Host()
	if err == nil {
		err = readAt(h, h.Len()-1) // the last element: past what the buffers hold
	}
	mentions(t, err, "", c.Name+": reading its last element")
	// FULL validation and the arrow-go conversion refuse the declared size
	// by name instead of reading it.
	mentions(t, a.Validate(ferry.ValidateFull), "more than any buffer ferry reads (2^48)", c.Name+": Validate(FULL)")
	_, err = ferryarrow.ToArrow(a)
	mentions(t, err, "more than any buffer ferry reads (2^48)", c.Name+": ToArrow")
	if a.IsReleased() {
		t.Fatalf("%s: a refused ToArrow must leave the array to its owner", c.Name)
	}
}

// reportedNotInTheWay: a lie about what nobody reads (null count, reserved
// words): Validate and ToArrow report it; the values read fine.
func reportedNotInTheWay(t *testing.T, name string, field ferry.Field, raw unsafe.Pointer, needle string) {
	t.Helper()
	a := importHostile(t, raw, field)
	defer a.Release()
	mentions(t, a.Validate(ferry.ValidateDefault), needle, name+": Validate")
	if err := hostRead(a); err != nil {
		t.Fatalf("%s: Host: %v", name, err)
	}
	_, err := ferryarrow.ToArrow(a)
	mentions(t, err, needle, name+": ToArrow")
}

func int32Field() ferry.Field { return ferry.Field{Format: "i", Name: "x", Flags: ferry.FlagNullable} }

func dictField() ferry.Field {
	f := int32Field()
	f.Dictionary = &ferry.Field{Format: "u"}
	return f
}

// Every case of the catalogue, the way its kind says.
func TestHostileCatalogue(t *testing.T) {
	cases := chelper.HostileCases()
	if len(cases) < 30 {
		t.Fatalf("the catalogue holds %d cases", len(cases))
	}
	for _, c := range cases {
		switch c.Kind {
		case chelper.HostileRefused:
			refusedEverywhere(t, c)
		case chelper.HostileFull:
			refusedAtFull(t, c)
		default:
			refusedByTheReader(t, c)
		}
		nothingLeft(t, c.Name)
	}
	reportedNotInTheWay(t, "reserved[1] not zero", int32Field(),
		chelper.HostileDeviceArray(chelper.HostileNode(1, 0, 0, nil, chelper.Int32s(1)),
			chelper.DeviceOptions{DeviceType: deviceCPU, DeviceID: -1, Reserved1: 7}), "reserved")
	nothingLeft(t, "reserved[1] not zero")
}

func TestHostileUnknownDeviceIsENODEV(t *testing.T) {
	raw, rawSchema := chelper.HostileArray("unknown_device")
	a, err := ferry.ImportDeviceArray(raw, rawSchema, trusted)
	ferry.FreeRawDeviceArray(raw)
	ferry.FreeRawSchema(rawSchema)
	if err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"Host":        func() error { _, err := a.Host(); return err }(),
		"BufferBytes": func() error { _, err := a.Root().BufferBytes(1); return err }(),
		"ToHost":      func() error { _, err := a.ToHost(); return err }(),
	} {
		if !errors.Is(err, syscall.ENODEV) {
			t.Errorf("%s of device type 999: %v, expected ENODEV", what, err)
		}
	}
	if a.IsReleased() {
		t.Fatal("a refused ToHost must leave the array to its owner")
	}
	a.Release()
	nothingLeft(t, "device 999")
}

// int32 of length 2^62: its byte size overflows int64.
func TestHostileLengthWhoseSizeOverflows(t *testing.T) {
	a := importHostile(t, chelper.HostileCPUArray(chelper.HostileNode(1<<62, 0, 0, nil, chelper.Int32s(1, 2))), int32Field())
	h, err := a.Host()
	noError(t, err)
	_, err = ferry.Value[int32](h, 0)
	mentions(t, err, "overflows", "Value(0) of 2^62 int32")
	_, err = ferry.Values[int32](h)
	mentions(t, err, "overflows", "Values of 2^62 int32")
	_, err = h.Buffer(1)
	mentions(t, err, "int64", "Buffer(1) of 2^62 int32 (the core's size)")
	_, err = a.Root().BufferBytes(1)
	mentions(t, err, "int64", "BufferBytes(1) of 2^62 int32")
	_, err = ferryarrow.ToArrow(a)
	mentions(t, err, "", "ToArrow of 2^62 int32")
	a.Release()
	nothingLeft(t, "2^62")
}

// utf8Array is a utf8 array over data with these offsets.
func utf8Array(offsets []int32, data string) unsafe.Pointer {
	return chelper.HostileCPUArray(chelper.HostileNode(int64(len(offsets)-1), 0, 0, nil,
		chelper.Int32s(offsets...), chelper.Buf(data)))
}

// importCase takes the catalogue case called name with its own schema,
// without validating it.
func importCase(t *testing.T, name string) *ferry.DeviceArray {
	t.Helper()
	raw, rawSchema := chelper.HostileArray(name)
	defer ferry.FreeRawDeviceArray(raw)
	defer ferry.FreeRawSchema(rawSchema)
	a, err := ferry.ImportDeviceArray(raw, rawSchema, trusted)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return a
}

// Content lies (only FULL validation reads them; TestHostileCatalogue
// checks the FULL refusals): Host checks structure only, and its accessors
// refuse the element the lie is in.
func TestHostileContentLiesAreCaughtBeforeAnythingReadsThem(t *testing.T) {
	// utf8 offsets 0, 2, 1, 5 over "abcde"
	a := importCase(t, "decreasing_offsets")
	h, err := a.Host()
	noError(t, err)
	if s, err := h.String(0); err != nil || s != "ab" {
		t.Fatalf("String(0) = %q, %v", s, err)
	}
	_, err = h.String(1)
	mentions(t, err, "decreasing", "decreasing offsets: String(1)")
	_, err = h.String(3)
	mentions(t, err, "out of range", "String past the end")
	a.Release()

	// utf8 ["\xffb", "", "cde"]
	a = importCase(t, "bad_utf8")
	h, _ = a.Host()
	if b, err := h.Bytes(0); err != nil || string(b) != "\xffb" {
		t.Fatalf("Bytes(0) = %q, %v", b, err)
	}
	_, err = h.String(0)
	mentions(t, err, "not UTF-8", "bad UTF-8: String")
	a.Release()

	// Dictionary indices 1, 7 over a dictionary of 3.
	a = importCase(t, "dictionary_index")
	h, _ = a.Host()
	if v, err := ferry.Value[int32](h, 1); err != nil || v != 7 {
		t.Fatalf("index 1 = %d, %v", v, err)
	}
	d, err := h.Dictionary()
	noError(t, err)
	_, err = d.String(7)
	mentions(t, err, "out of range", "dictionary index: lookup")
	a.Release()

	// List offsets 0, 2, 9 over a child of 4.
	a = importCase(t, "list_past_child")
	h, _ = a.Host()
	if start, end, err := h.ListRange(0); err != nil || start != 0 || end != 2 {
		t.Fatalf("ListRange(0) = [%d, %d), %v", start, end, err)
	}
	_, _, err = h.ListRange(1)
	mentions(t, err, "past the child", "list offsets: ListRange")
	a.Release()
	nothingLeft(t, "content lies")
}

func TestHostileAccessorsCheckTypesAndIndices(t *testing.T) {
	values, _ := ferry.CopySlice([]int32{1, 2, 3, 4})
	validity, _ := ferry.CopySlice([]byte{0b1011})
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Name: "x", Flags: ferry.FlagNullable, Length: 4, NullCount: 1,
		Buffers: []ferry.Buffer{validity, values}}, nil)
	noError(t, err)
	defer a.Release()
	h, err := a.Host()
	noError(t, err)
	_, err = ferry.Values[int64](h)
	mentions(t, err, "cannot read", "wrong type")
	for _, i := range []int64{4, -1, math.MaxInt64, math.MinInt64} {
		_, err = ferry.Value[int32](h, i)
		mentions(t, err, "out of range", "Value out of range")
		_, err = h.IsValid(i)
		mentions(t, err, "out of range", "IsValid out of range")
	}
	_, err = h.Buffer(2)
	mentions(t, err, "out of range", "buffer 2 of 2")
	_, err = h.Buffer(-1)
	mentions(t, err, "out of range", "buffer -1")
	_, err = a.Root().BufferBytes(2)
	mentions(t, err, "out of range", "BufferBytes 2 of 2")
	_, err = h.Child(0)
	mentions(t, err, "out of range", "a child of a primitive")
	_, err = h.Dictionary()
	mentions(t, err, "dictionary", "the dictionary of a plain array")
	_, err = h.String(0)
	mentions(t, err, "utf8", "String of an int32")
	_, err = h.Bool(0)
	mentions(t, err, "\"b\"", "Bool of an int32")
	_, _, err = h.ListRange(0)
	mentions(t, err, "list", "ListRange of an int32")
	if valid, err := h.IsValid(2); err != nil || valid {
		t.Fatalf("IsValid(2) = %v, %v", valid, err)
	}
	if all, err := ferry.Values[int32](h); err != nil || len(all) != 4 || all[3] != 4 {
		t.Fatalf("Values = %v, %v", all, err)
	}

	// A hand-made int32 whose offset puts the values past its buffer: the
	// computed size says so, no read happens. The buffer is declared by
	// length + offset = 5 values (20 bytes), the real one has 12: what no
	// CPU consumer can see (README).
	b := importHostile(t, chelper.HostileCPUArray(chelper.HostileNode(2, 0, 3, nil, chelper.Int32s(1, 2, 3))), int32Field())
	hb, err := b.Host()
	noError(t, err)
	if buf, err := hb.Buffer(1); err != nil || len(buf) != 20 {
		t.Fatalf("Buffer(1): %d bytes, %v", len(buf), err)
	}
	b.Release()
	nothingLeft(t, "accessors")
}

func TestHostileSchemasAreRefused(t *testing.T) {
	raw := ferry.NewRawSchema()
	chelper.HostileSchema(raw, "zz", "x")
	bad, err := ferry.ImportSchema(raw)
	ferry.FreeRawSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	mentions(t, bad.Validate(), "format", "format zz")
	_, err = bad.Clone()
	mentions(t, err, "format", "Clone of format zz")
	_, err = ferryarrow.ToArrowField(bad)
	mentions(t, err, "format", "ToArrowField of zz")
	a, err := ferry.ImportDeviceArray(chelper.HostileCPUArray(chelper.HostileNode(1, 0, 0, chelper.Buf{1}, chelper.Int32s(1))), nil, trusted)
	noError(t, err)
	h, err := a.HostWith(bad)
	noError(t, err)
	_, err = h.IsValid(0)
	mentions(t, err, "format", "IsValid under format zz")
	_, err = ferry.Value[int32](h, 0)
	mentions(t, err, "cannot read", "Value under format zz")
	_, err = h.Buffer(1)
	mentions(t, err, "format", "Buffer under format zz")
	a.Release()
	bad.Release()
	nothingLeft(t, "schemas")
}

// noError stops the test on err.
func noError(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func hostileStream(t *testing.T, behaviour int, code int32) *ferry.DeviceArrayStream {
	t.Helper()
	raw := ferry.NewRawStream()
	defer ferry.FreeRawStream(raw)
	chelper.HostileStream(raw, behaviour, code)
	s, err := ferry.ImportStream(raw)
	noError(t, err)
	return s
}

func TestHostileStreamsComeBackAsErrors(t *testing.T) {
	s := hostileStream(t, chelper.StreamReleasedSchema, 0)
	if _, err := s.Schema(); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "released schema") {
		t.Fatalf("a released schema from get_schema: %v", err)
	}
	s.Release()

	s = hostileStream(t, chelper.StreamBadSchema, 0)
	schema, err := s.Schema()
	noError(t, err)
	mentions(t, schema.Validate(), "format", "a stream's bad schema")
	_, err = schema.Prepare()
	mentions(t, err, "format", "Prepare of a stream's bad schema")
	s.Release()

	s = hostileStream(t, chelper.StreamWrongDevice, 0)
	if s.Next() || s.Err() == nil || !strings.Contains(s.Err().Error(), "device type") {
		t.Fatalf("a batch of another device: %v", s.Err())
	}
	s.Release()

	for _, code := range []int32{int32(syscall.EIO), -1, 100000} {
		s = hostileStream(t, chelper.StreamFails, code)
		var fe *ferry.Error
		if s.Next() || !errors.As(s.Err(), &fe) || fe.Message == "" {
			t.Fatalf("get_next failing with %d: %v", code, s.Err())
		}
		s.Release()
	}

	s = hostileStream(t, chelper.StreamFillsAndFails, 0)
	if s.Next() || !errors.Is(s.Err(), syscall.EIO) {
		t.Fatalf("get_next filling and failing: %v", s.Err())
	}
	s.Release()

	s = hostileStream(t, chelper.StreamBadBatch, 0)
	if !s.Next() {
		t.Fatal(s.Err())
	}
	mentions(t, s.Batch().Validate(ferry.ValidateFull), "offset", "a stream's bad batch")
	h, err := s.Batch().Host()
	noError(t, err)
	col, err := h.Child(0)
	noError(t, err)
	_, err = col.String(1)
	mentions(t, err, "decreasing", "a stream's bad batch: String(1)")
	s.Release()
	nothingLeft(t, "streams")
}

// Every stream case of the catalogue: Next fails where the catalogue says,
// with its errno and message.
func TestHostileStreamCatalogue(t *testing.T) {
	for _, c := range chelper.HostileStreamCases() {
		raw := ferry.NewRawStream()
		chelper.HostileStreamMake(raw, c.Name)
		s, err := ferry.ImportStream(raw, ferry.ImportOptions{Validate: ferry.ValidateLevel(c.Level)})
		ferry.FreeRawStream(raw)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for i := 1; i < c.At; i++ {
			if !s.Next() {
				t.Fatalf("%s: batch %d: %v", c.Name, i, s.Err())
			}
		}
		var fe *ferry.Error
		if s.Next() || !errors.As(s.Err(), &fe) {
			t.Fatalf("%s: %v is not a *ferry.Error", c.Name, s.Err())
		}
		if fe.Code != c.Code || !strings.Contains(fe.Message, c.Needle) {
			t.Fatalf("%s: %v (%v), expected %v mentioning %q", c.Name, fe, fe.Code, c.Code, c.Needle)
		}
		s.Release()
		nothingLeft(t, c.Name)
	}
}

func TestHostileStreamsThroughTheArrowReader(t *testing.T) {
	_, err := ferryarrow.NewRecordReader(hostileStream(t, chelper.StreamBadSchema, 0))
	mentions(t, err, "format", "NewRecordReader over a bad schema")
	if _, err := ferryarrow.NewRecordReader(hostileStream(t, chelper.StreamReleasedSchema, 0)); err == nil ||
		!strings.Contains(err.Error(), "released schema") {
		t.Fatalf("NewRecordReader over a released schema: %v", err)
	}

	// Decreasing offsets are a content lie: the reader refuses them at
	// ValidateFull, the explicit choice (its default is ValidateDefault).
	r, err := ferryarrow.NewRecordReader(hostileStream(t, chelper.StreamBadBatch, 0),
		ferryarrow.Options{Validate: ferry.ValidateFull})
	if err != nil {
		t.Fatal(err)
	}
	if r.Next() {
		t.Fatal("the reader handed out a batch with decreasing offsets")
	}
	mentions(t, r.Err(), "offset", "the reader's error")
	if !strings.Contains(r.Err().Error(), "the array fails validation") {
		t.Fatalf("the reader's error: %v", r.Err())
	}
	if r.Next() {
		t.Fatal("the reader went on after its error")
	}
	r.Release()

	r, err = ferryarrow.NewRecordReader(hostileStream(t, chelper.StreamFails, int32(syscall.EIO)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Next() || !errors.Is(r.Err(), syscall.EIO) {
		t.Fatalf("a failing stream through the reader: %v", r.Err())
	}
	r.Release()
	nothingLeft(t, "arrow reader")
}

// TestHostileNothingOnStderr runs every hostile test again in a child
// process whose stderr is read: a panic message, a leak report or any other
// text there fails.
func TestHostileNothingOnStderr(t *testing.T) {
	if os.Getenv("FERRY_HOSTILE_CHILD") != "" {
		t.Skip("SKIP: this is the child run")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHostile", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "FERRY_HOSTILE_CHILD=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the hostile tests failed in the child: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "--- PASS: TestHostileStreamsComeBackAsErrors") {
		t.Fatalf("the child did not run the hostile tests:\n%s", stdout.String())
	}
	if strings.TrimSpace(stderr.String()) != "" {
		t.Fatalf("stderr of the hostile tests:\n%s", stderr.String())
	}
}
