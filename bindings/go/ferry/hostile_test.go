package ferry_test

// Hostile producers through the public import paths (issue 15): arrays and
// streams built by hand in C (internal/chelper/hostile.c) with every kind
// of lie, handed to ImportDeviceArray / ImportStream, then read the ways a
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
// strings, struct fields (at i + offset), list items, the dictionary.
func readAt(h ferry.HostArray, i int64) error {
	if _, err := h.IsValid(i); err != nil {
		return err
	}
	switch f := h.Format(); f {
	case "i":
		if _, err := ferry.Value[int32](h, i); err != nil {
			return err
		}
	case "u":
		if _, err := h.String(i); err != nil {
			return err
		}
	case "+s":
		for k := 0; k < h.Schema().NumChildren(); k++ {
			c, err := h.Child(k)
			if err != nil {
				return err
			}
			if err := readAt(c, i+h.Offset()); err != nil {
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
			if err := readAt(items, j); err != nil {
				return err
			}
		}
	default:
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

// refusedEverywhere: a structural lie. Validate reports the finding;
// reading through Host fails (at Host or at the accessor that meets the
// lie) instead of reading what the array does not declare; ToHost and
// ToArrow refuse with the finding. The array is released on the way out.
func refusedEverywhere(t *testing.T, name string, field ferry.Field, raw unsafe.Pointer, needle string) {
	t.Helper()
	defaultImportRefuses(t, name, field, raw, needle)
	a := importHostile(t, raw, field)
	defer a.Release()
	mentions(t, a.Validate(ferry.ValidateDefault), needle, name+": Validate")
	if err := hostRead(a); err == nil {
		t.Fatalf("%s: Host read it all without an error", name)
	} else {
		mentions(t, err, "", name+": Host")
	}
	_, err := ferryarrow.ToArrow(a)
	mentions(t, err, needle, name+": ToArrow")
	if !strings.Contains(err.Error(), "the array fails validation") && !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("%s: ToArrow: %v", name, err)
	}
	if a.IsReleased() {
		t.Fatalf("%s: a refused ToArrow must leave the array to its owner", name)
	}
}

// defaultImportRefuses: ImportDeviceArray with the array's schema and no
// options (validation at ValidateDefault) refuses the structural lie at raw
// with the finding, and moves nothing (raw and the schema stay live and the
// caller's).
func defaultImportRefuses(t *testing.T, name string, field ferry.Field, raw unsafe.Pointer, needle string) {
	t.Helper()
	schema, err := field.Export()
	if err != nil {
		t.Fatalf("schema %q: %v", field.Format, err)
	}
	rawSchema := ferry.NewRawSchema()
	defer ferry.FreeRawSchema(rawSchema) // releases it: the import refused to take it
	if err := schema.ExportTo(rawSchema); err != nil {
		t.Fatal(err)
	}
	a, err := ferry.ImportDeviceArray(raw, rawSchema)
	if err == nil {
		a.Release()
		t.Fatalf("%s: the default import accepted it", name)
	}
	mentions(t, err, needle, name+": default import")
	if !strings.Contains(err.Error(), "ImportDeviceArray: the array fails validation") && !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("%s: default import: %v", name, err)
	}
	if ferry.RawDeviceArrayIsReleased(raw) || ferry.RawSchemaIsReleased(rawSchema) {
		t.Fatalf("%s: a refused import moved the array or its schema", name)
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

func structField(formats ...string) ferry.Field {
	f := ferry.Field{Format: "+s", Name: "x"}
	for i, c := range formats {
		f.Children = append(f.Children, ferry.Field{Format: c, Name: string(rune('a' + i)), Flags: ferry.FlagNullable})
	}
	return f
}

func dictField() ferry.Field {
	f := int32Field()
	f.Dictionary = &ferry.Field{Format: "u"}
	return f
}

func TestHostileStructuralLiesAreRefusedEverywhere(t *testing.T) {
	values := func() chelper.Buf { return chelper.Int32s(1, 2, 3, 4) }
	node := chelper.HostileNode
	cases := []struct {
		name, needle string
		field        ferry.Field
		raw          func() unsafe.Pointer
	}{
		{"missing values buffer", "buffer", int32Field(), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(4, 0, 0, nil))
		}},
		{"NULL values buffer", "NULL", int32Field(), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(4, 0, 0, nil, nil))
		}},
		{"negative length", "length", int32Field(), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(-1, 0, 0, nil, values()))
		}},
		{"negative offset", "offset", int32Field(), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(2, 0, -2, nil, values()))
		}},
		{"offset + length overflows", "overflow", int32Field(), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(2, 0, math.MaxInt64, nil, values()))
		}},
		{"negative n_buffers", "buffer", int32Field(), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(0, 0, 0).DeclareBuffers(-1))
		}},
		{"struct with a child missing", "child", structField("i", "u"), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(1, 0, 0, nil).Child(node(1, 0, 0, nil, chelper.Int32s(1))))
		}},
		{"NULL child pointer", "NULL", structField("i"), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(1, 0, 0, nil).NullChild())
		}},
		{"released child", "released", structField("i"), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(1, 0, 0, nil).ReleasedChild())
		}},
		{"child shorter than its parent", "length", structField("i"), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(3, 0, 0, nil).Child(node(1, 0, 0, nil, chelper.Int32s(1))))
		}},
		{"dictionary missing", "dictionary", dictField(), func() unsafe.Pointer {
			return chelper.HostileCPUArray(node(1, 0, 0, nil, chelper.Int32s(0)))
		}},
		{"unknown device type", "device", int32Field(), func() unsafe.Pointer {
			return chelper.HostileDeviceArray(node(4, 0, 0, nil, values()), chelper.DeviceOptions{DeviceType: 999})
		}},
		{"a CPU array with a sync event", "sync_event", int32Field(), func() unsafe.Pointer {
			return chelper.HostileDeviceArray(node(1, 0, 0, nil, chelper.Int32s(1)),
				chelper.DeviceOptions{DeviceType: deviceCPU, DeviceID: -1, Event: true})
		}},
	}
	for _, c := range cases {
		refusedEverywhere(t, c.name, c.field, c.raw(), c.needle)
		nothingLeft(t, c.name)
	}
	reportedNotInTheWay(t, "null_count above length", int32Field(),
		chelper.HostileCPUArray(node(4, 9, 0, nil, values())), "null_count")
	nothingLeft(t, "null_count above length")
	reportedNotInTheWay(t, "more buffers than the layout has", int32Field(),
		chelper.HostileCPUArray(node(4, 0, 0, nil, values()).DeclareBuffers(5)), "buffer")
	nothingLeft(t, "more buffers than the layout has")
	reportedNotInTheWay(t, "reserved words not zero", int32Field(),
		chelper.HostileDeviceArray(node(1, 0, 0, nil, chelper.Int32s(1)),
			chelper.DeviceOptions{DeviceType: deviceCPU, DeviceID: -1, Reserved1: 7}), "reserved")
	nothingLeft(t, "reserved words not zero")
}

func TestHostileUnknownDeviceIsENODEV(t *testing.T) {
	a := importHostile(t, chelper.HostileDeviceArray(chelper.HostileNode(4, 0, 0, nil, chelper.Int32s(1, 2, 3, 4)),
		chelper.DeviceOptions{DeviceType: 999}), int32Field())
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
	if err != nil {
		t.Fatal(err)
	}
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

func TestHostileCycleEndsInAFinding(t *testing.T) {
	// struct<struct<i>>: the inner struct's only child is itself.
	field := structField("+s")
	field.Children[0].Children = []ferry.Field{{Format: "i", Name: "leaf"}}
	inner := chelper.HostileNode(1, 0, 0, nil).SelfChild()
	a := importHostile(t, chelper.HostileCPUArray(chelper.HostileNode(1, 0, 0, nil).Child(inner)), field)
	if err := a.Validate(ferry.ValidateFull); err == nil {
		t.Fatal("a cycle passed FULL validation")
	}
	if err := hostRead(a); err == nil {
		t.Fatal("a cycle was read through Host without an error")
	}
	if _, err := ferryarrow.ToArrow(a); err == nil {
		t.Fatal("ToArrow took a cycle")
	}
	a.Release()
	nothingLeft(t, "cycle")
}

// utf8Array is a utf8 array over data with these offsets.
func utf8Array(offsets []int32, data string) unsafe.Pointer {
	return chelper.HostileCPUArray(chelper.HostileNode(int64(len(offsets)-1), 0, 0, nil,
		chelper.Int32s(offsets...), chelper.Buf(data)))
}

// Content lies (only FULL validation reads them): Validate(FULL) and
// ToArrow with ValidateFull (the explicit choice) refuse with the finding; Host checks structure only, and its
// accessors refuse the element the lie is in.
func TestHostileContentLiesAreCaughtBeforeAnythingReadsThem(t *testing.T) {
	full := ferryarrow.Options{Validate: ferry.ValidateFull} // the explicit choice: ToArrow's default is DEFAULT
	utf8 := ferry.Field{Format: "u", Name: "s", Flags: ferry.FlagNullable}

	a := importHostile(t, utf8Array([]int32{0, 4, 2, 6}, "abcdef"), utf8)
	mentions(t, a.Validate(ferry.ValidateFull), "offset", "decreasing offsets: Validate")
	h, err := a.Host()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := h.String(0); err != nil || s != "abcd" {
		t.Fatalf("String(0) = %q, %v", s, err)
	}
	_, err = h.String(1)
	mentions(t, err, "decreasing", "decreasing offsets: String(1)")
	_, err = h.String(3)
	mentions(t, err, "out of range", "String past the end")
	_, err = ferryarrow.ToArrow(a, full)
	mentions(t, err, "offset", "decreasing offsets: ToArrow")
	a.Release()

	a = importHostile(t, utf8Array([]int32{0, 2, 4}, "ab\xff\xfe"), utf8)
	mentions(t, a.Validate(ferry.ValidateFull), "utf-8", "bad UTF-8: Validate")
	h, _ = a.Host()
	if b, err := h.Bytes(1); err != nil || string(b) != "\xff\xfe" {
		t.Fatalf("Bytes(1) = %q, %v", b, err)
	}
	_, err = h.String(1)
	mentions(t, err, "not UTF-8", "bad UTF-8: String")
	_, err = ferryarrow.ToArrow(a, full)
	mentions(t, err, "utf-8", "bad UTF-8: ToArrow")
	a.Release()

	// A dictionary index past the dictionary.
	dictionary := chelper.HostileNode(2, 0, 0, nil, chelper.Int32s(0, 1, 2), chelper.Buf("ab"))
	a = importHostile(t, chelper.HostileCPUArray(chelper.HostileNode(2, 0, 0, nil, chelper.Int32s(1, 5)).Dictionary(dictionary)), dictField())
	mentions(t, a.Validate(ferry.ValidateFull), "dictionary", "dictionary index: Validate")
	h, _ = a.Host()
	if v, err := ferry.Value[int32](h, 1); err != nil || v != 5 {
		t.Fatalf("index 1 = %d, %v", v, err)
	}
	d, err := h.Dictionary()
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.String(5)
	mentions(t, err, "out of range", "dictionary index: lookup")
	_, err = ferryarrow.ToArrow(a, full)
	mentions(t, err, "dictionary", "dictionary index: ToArrow")
	a.Release()

	// List offsets past the child.
	list := ferry.Field{Format: "+l", Name: "l", Children: []ferry.Field{{Format: "i", Name: "item"}}}
	a = importHostile(t, chelper.HostileCPUArray(chelper.HostileNode(2, 0, 0, nil, chelper.Int32s(0, 1, 5)).
		Child(chelper.HostileNode(2, 0, 0, nil, chelper.Int32s(1, 2)))), list)
	if err := a.Validate(ferry.ValidateFull); err == nil {
		t.Fatal("list offsets past the child passed FULL validation")
	}
	h, _ = a.Host()
	if start, end, err := h.ListRange(0); err != nil || start != 0 || end != 1 {
		t.Fatalf("ListRange(0) = [%d, %d), %v", start, end, err)
	}
	_, _, err = h.ListRange(1)
	mentions(t, err, "past the child", "list offsets: ListRange")
	if _, err := ferryarrow.ToArrow(a, full); err == nil {
		t.Fatal("ToArrow took list offsets past the child")
	}
	a.Release()
	nothingLeft(t, "content lies")
}

func TestHostileAccessorsCheckTypesAndIndices(t *testing.T) {
	values, _ := ferry.CopySlice([]int32{1, 2, 3, 4})
	validity, _ := ferry.CopySlice([]byte{0b1011})
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Name: "x", Flags: ferry.FlagNullable, Length: 4, NullCount: 1,
		Buffers: []ferry.Buffer{validity, values}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	h, err := a.Host()
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.HostWith(bad)
	if err != nil {
		t.Fatal(err)
	}
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

func hostileStream(t *testing.T, behaviour int, code int32) *ferry.DeviceArrayStream {
	t.Helper()
	raw := ferry.NewRawStream()
	defer ferry.FreeRawStream(raw)
	chelper.HostileStream(raw, behaviour, code)
	s, err := ferry.ImportStream(raw)
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	col, err := h.Child(0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = col.String(1)
	mentions(t, err, "decreasing", "a stream's bad batch: String(1)")
	s.Release()
	nothingLeft(t, "streams")
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
