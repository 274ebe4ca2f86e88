// Package itcase implements the cross-language test cases of
// docs/cases.md in Go: the case grammar, the value formula, a producer
// of arrays and streams and a checker, all on the public ferry API. The Go
// plugin (bindings/go/plugin) exports it through the ferry_it_* entry points.
package itcase

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// Type is one TYPE word of the grammar.
type Type int

const (
	Int8 Type = iota
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float32
	Float64
	Bool
	UTF8
	Binary
	ListInt32
	StructInt32UTF8
	DictInt32UTF8
)

var typeNames = []string{"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"float32", "float64", "bool", "utf8", "binary", "list_int32", "struct_int32_utf8", "dict_int32_utf8"}

var typeFormats = []string{"c", "s", "i", "l", "C", "S", "I", "L", "f", "g", "b", "u", "z", "+l", "+s", "i"}

func (t Type) String() string { return typeNames[t] }

// Fail is the failure a case injects.
type Fail int

const (
	FailNone Fail = iota
	FailExport
	FailGetSchema
	FailGetNext
)

// MaxSlots bounds length + offset (the same bound as the C plugin: 2^28).
const MaxSlots = int64(1) << 28

// Case is a parsed case string.
type Case struct {
	Spec       string
	Type       Type
	Length     int64
	Nulls      int64
	Seed       uint32
	Offset     int64
	DeviceName string
	DeviceType ferry.DeviceType
	Batches    int64
	Fail       Fail
	FailAt     int64
	// The async-only keys (window, cancel, fail=consumer@N): parsed and
	// checked, then ignored here; the checking consumer of the generic
	// async layer (plugin/async.c) acts on them.
	Window, Cancel, ConsumerFailAt int64
}

// DeviceID is the device the case uses: -1 on the CPU, 0 otherwise.
func (c *Case) DeviceID() int64 {
	if c.DeviceType == ferry.DeviceCPU {
		return -1
	}
	return 0
}

func invalid(format string, args ...any) error {
	return &ferry.Error{Code: syscall.EINVAL, Message: fmt.Sprintf(format, args...)}
}

// Parse parses a case string; errors are EINVAL naming the offending part.
func Parse(spec string) (*Case, error) {
	c := &Case{Spec: spec, Type: Int32, Length: 16, Seed: 1, DeviceName: "cpu",
		DeviceType: ferry.DeviceCPU, Batches: 3}
	parts := strings.Split(spec, ":")
	found := false
	for t, name := range typeNames {
		if parts[0] == name {
			c.Type, found = Type(t), true
		}
	}
	if !found {
		return nil, invalid("unknown type %q in case %q", parts[0], spec)
	}
	seen := map[string]bool{}
	for _, pair := range parts[1:] {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, invalid("malformed KEY=VALUE %q in case %q", pair, spec)
		}
		if seen[key] {
			return nil, invalid("duplicate key %q in case %q", key, spec)
		}
		seen[key] = true
		var err error
		switch key {
		case "length":
			c.Length, err = number(key, value, uint64(MaxSlots), spec)
		case "nulls":
			c.Nulls, err = number(key, value, 1<<63-1, spec)
		case "seed":
			var s int64
			s, err = number(key, value, 1<<32-1, spec)
			c.Seed = uint32(s)
		case "offset":
			c.Offset, err = number(key, value, uint64(MaxSlots), spec)
		case "batches":
			c.Batches, err = number(key, value, 1<<63-1, spec)
		case "device":
			err = c.parseDevice(value)
		case "fail":
			err = c.parseFail(value)
		case "window":
			if c.Window, err = number(key, value, 1<<31-1, spec); err == nil && c.Window == 0 {
				err = invalid("window 0 in case %q: the window is at least 1", spec)
			}
		case "cancel":
			c.Cancel, err = number(key, value, 1<<63-1, spec)
		default:
			return nil, invalid("unknown key %q in case %q", key, spec)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.Length+c.Offset > MaxSlots {
		return nil, invalid("length %d plus offset %d exceeds %d slots in case %q", c.Length, c.Offset, MaxSlots, spec)
	}
	return c, nil
}

func number(key, value string, max uint64, spec string) (int64, error) {
	if value == "" {
		return 0, invalid("malformed number \"\" for key %q in case %q", key, spec)
	}
	if value[0] == '-' {
		if _, err := strconv.ParseUint(value[1:], 10, 64); err == nil {
			return 0, invalid("negative %s %q in case %q", key, value, spec)
		}
	}
	for _, r := range value {
		if r < '0' || r > '9' {
			return 0, invalid("malformed number %q for key %q in case %q", value, key, spec)
		}
	}
	n, err := strconv.ParseUint(value, 10, 64)
	if err != nil || n > max {
		return 0, invalid("%s %q out of range (0 to %d) in case %q", key, value, max, spec)
	}
	return int64(n), nil
}

func (c *Case) parseDevice(value string) error {
	types := map[string]ferry.DeviceType{"cpu": ferry.DeviceCPU, "sim": ferry.DeviceExtDev,
		"cuda": ferry.DeviceCUDA, "rocm": ferry.DeviceROCm}
	t, ok := types[value]
	if !ok {
		return invalid("unknown device %q in case %q (expected cpu, sim, cuda or rocm)", value, c.Spec)
	}
	c.DeviceName, c.DeviceType = value, t
	return nil
}

func (c *Case) parseFail(value string) error {
	switch {
	case value == "export":
		c.Fail = FailExport
	case value == "get_schema":
		c.Fail = FailGetSchema
	case strings.HasPrefix(value, "get_next@"), strings.HasPrefix(value, "consumer@"):
		mode, count, _ := strings.Cut(value, "@")
		n, err := number("fail="+mode+"@N", count, 1<<63-1, c.Spec)
		if err != nil {
			return err
		}
		counted := "tasks"
		if mode == "get_next" {
			counted = "get_next calls"
		}
		if n == 0 {
			return invalid("fail=%s@0 in case %q: N counts %s from 1", mode, c.Spec, counted)
		}
		if mode == "get_next" {
			c.Fail, c.FailAt = FailGetNext, n
		} else {
			c.ConsumerFailAt = n // the consumer's failure: nothing for a producer to inject
		}
	default:
		return invalid("unknown fail mode %q in case %q (expected export, get_next@N, get_schema or consumer@N)", value, c.Spec)
	}
	return nil
}

// Device resolves the case's device (nil for the CPU); ENODEV/ENOTSUP with
// the reason when it is not available.
func (c *Case) Device() (*ferry.Device, error) {
	if c.DeviceType == ferry.DeviceCPU {
		return nil, nil
	}
	d, err := ferry.ResolveDevice(c.DeviceType, c.DeviceID())
	if err != nil {
		code := syscall.ENODEV
		if fe, ok := err.(*ferry.Error); ok {
			code = fe.Code
		}
		return nil, &ferry.Error{Code: code, Message: fmt.Sprintf("device %q is not available for case %q: %v", c.DeviceName, c.Spec, err)}
	}
	return d, nil
}
