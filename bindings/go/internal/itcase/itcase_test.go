package itcase

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

func TestParseDefaultsAndKeys(t *testing.T) {
	c, err := Parse("int32")
	if err != nil || c.Length != 16 || c.Nulls != 0 || c.Seed != 1 || c.Offset != 0 || c.DeviceType != ferry.DeviceCPU || c.Batches != 3 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = Parse("utf8:length=0:nulls=3:seed=4294967295:offset=7:device=sim:batches=2:fail=get_next@5")
	if err != nil || c.Length != 0 || c.Nulls != 3 || c.Seed != 4294967295 || c.Offset != 7 ||
		c.DeviceType != ferry.DeviceExtDev || c.Batches != 2 || c.Fail != FailGetNext || c.FailAt != 5 {
		t.Fatalf("keys: %+v, %v", c, err)
	}
}

func TestParseErrorsNameTheOffendingPart(t *testing.T) {
	for spec, needle := range map[string]string{
		"int33":                 "int33",
		"int32:length=-1":       "negative length",
		"int32:length=1x":       "1x",
		"int32:seed=4294967296": "seed",
		"int32:colour=red":      "colour",
		"int32:device=tpu":      "tpu",
		"int32:fail=later":      "later",
		"int32:fail=get_next@0": "get_next@0",
		"int32:nulls=1:nulls=2": "duplicate",
		"int32:length":          "KEY=VALUE",
	} {
		_, err := Parse(spec)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), needle) {
			t.Errorf("%s: got %v, want EINVAL naming %q", spec, err, needle)
		}
	}
}

func TestFormulaSpotValues(t *testing.T) {
	// u(0) with seed 1 is 2654435761; u(1) adds 40503.
	if U(1, 0) != 2654435761 || U(1, 1) != 2654476264 {
		t.Fatalf("u: %d %d", U(1, 0), U(1, 1))
	}
	if String(1, 0) != "" || String(1, 1) != "76264" {
		t.Fatalf("utf8: %q %q", String(1, 0), String(1, 1))
	}
	if NullCount(3, 16) != 5 || !IsNull(3, 2) || IsNull(3, 3) {
		t.Fatal("nulls")
	}
}

// Every type and shape produced by Go is accepted by the Go checker, and a
// wrong seed is not.
func TestRoundTripEveryType(t *testing.T) {
	before := ferry.LiveAllocations()
	shapes := []string{"", ":nulls=3", ":length=0", ":offset=5:nulls=2:length=33:seed=77", ":nulls=1"}
	if _, err := ferry.ResolveDevice(ferry.DeviceExtDev, 0); err == nil {
		shapes = append(shapes, ":device=sim:offset=2:nulls=4")
	} else {
		t.Logf("SKIP sim shapes: %v", err)
	}
	for _, typ := range typeNames {
		for _, shape := range shapes {
			c, err := Parse(typ + shape)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Export(c)
			if err != nil {
				t.Fatalf("%s: export: %v", c.Spec, err)
			}
			if err := a.Validate(ferry.ValidateFull); err != nil {
				t.Errorf("%s: core validation: %v", c.Spec, err)
			}
			if err := Check(c, a); err != nil {
				t.Errorf("%s: check: %v", c.Spec, err)
			}
		}
		c, _ := Parse(typ + ":length=20")
		a, _ := Export(c)
		wrong, _ := Parse(typ + ":length=20:seed=2")
		if err := Check(wrong, a); err == nil && typ != "dict_int32_utf8" && typ != "bool" {
			t.Errorf("%s: a wrong seed must be caught", typ)
		}
	}
	if got := ferry.LiveAllocations(); got != before {
		t.Fatalf("live allocations %d, %d before", got, before)
	}
}

func TestStreamsAndInjectedFailures(t *testing.T) {
	before := ferry.LiveAllocations()
	for _, spec := range []string{"int64:batches=4", "list_int32:batches=0", "utf8:fail=get_next@2",
		"struct_int32_utf8:fail=get_schema", "int8:batches=1:fail=get_next@2", "bool:fail=get_next@9"} {
		c, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ExportStream(c)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if err := CheckStream(c, s); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	c, _ := Parse("int32:fail=export")
	if _, err := Export(c); err == nil || !strings.Contains(err.Error(), "injected failure at export") {
		t.Errorf("fail=export: %v", err)
	}
	// A stream checked against a case expecting another failure point fails.
	c, _ = Parse("int32:fail=get_next@2")
	s, _ := ExportStream(c)
	other, _ := Parse("int32:fail=get_next@3")
	if err := CheckStream(other, s); err == nil {
		t.Error("a failure at the wrong call must be caught")
	}
	if got := ferry.LiveAllocations(); got != before {
		t.Fatalf("live allocations %d, %d before", got, before)
	}
}

// int32Case exports the int32 case spec by hand with the given validity
// bytes (nil: no validity buffer), as another runtime's producer might.
func int32Case(t *testing.T, spec string, validity []byte) (*Case, *ferry.DeviceArray) {
	t.Helper()
	c, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	slots := c.Offset + c.Length
	values, v, _ := ferry.AllocSlice[uint32](int(slots))
	for i := int64(0); i < c.Length; i++ {
		v[i+c.Offset] = uint32(Bits(Int32, c.Seed, i))
	}
	var bitmap ferry.Buffer
	if validity != nil {
		bitmap, _ = ferry.CopySlice(validity)
	}
	a, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Name: "int32", Flags: ferry.FlagNullable,
		Length: c.Length, Offset: c.Offset, NullCount: NullCount(c.Nulls, c.Length),
		Buffers: []ferry.Buffer{bitmap, values}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, a
}

// cases.md: with nulls=0 a validity buffer may be present (pyarrow keeps
// one on slices), every bit in range set; NULL is equally fine. A clear
// bit, or a NULL bitmap where elements are null, is a mismatch.
func TestCheckerJudgesAnyCorrectValidity(t *testing.T) {
	before := ferry.LiveAllocations()
	allSet := []byte{0xff, 0xff}
	c, a := int32Case(t, "int32:length=10:offset=3", allSet)
	if err := Check(c, a); err != nil {
		t.Fatalf("nulls=0 with every validity bit set: %v", err)
	}
	c, a = int32Case(t, "int32:length=10:offset=3", nil)
	if err := Check(c, a); err != nil {
		t.Fatalf("nulls=0 without a validity buffer: %v", err)
	}
	oneClear := []byte{0xff &^ (1 << 7), 0xff} // element 4 is physical slot 7
	c, a = int32Case(t, "int32:length=10:offset=3", oneClear)
	if err := Check(c, a); err == nil || !strings.Contains(err.Error(), "validity of element 4") {
		t.Fatalf("nulls=0 with element 4's bit clear: %v", err)
	}
	c, a = int32Case(t, "int32:length=10:nulls=3", nil)
	if err := Check(c, a); err == nil || !strings.Contains(err.Error(), "validity buffer is NULL") {
		t.Fatalf("nulls=3 without a validity buffer: %v", err)
	}
	if got := ferry.LiveAllocations(); got != before {
		t.Fatalf("live allocations %d, %d before", got, before)
	}
}

// emulated says whether the driver emulation for device (cuda or rocm) is
// configured (bindings/go/test.sh sets FERRY_CUDA_LIBRARY and
// FERRY_HIP_LIBRARY); skipped loudly otherwise.
func emulated(t *testing.T, device string) bool {
	variable := map[string]string{"cuda": "FERRY_CUDA_LIBRARY", "rocm": "FERRY_HIP_LIBRARY"}[device]
	if os.Getenv(variable) == "" {
		t.Logf("SKIPPED: %s cases through the driver emulation: %s is not set (bindings/go/test.sh sets it)", device, variable)
		return false
	}
	return true
}

// Every type on device=cuda and device=rocm through the driver emulations,
// whose device memory the host cannot read: the producer copies on its
// stream and records an event, the checker brings arrays to the host with
// ToHost and batches with CopyTo.
func TestDeviceCasesThroughTheEmulations(t *testing.T) {
	for _, device := range []string{"cuda", "rocm"} {
		if !emulated(t, device) {
			continue
		}
		before := ferry.LiveAllocations()
		for _, typ := range typeNames {
			for _, shape := range []string{"", ":nulls=3:offset=2:length=21"} {
				c, err := Parse(typ + shape + ":device=" + device)
				if err != nil {
					t.Fatal(err)
				}
				a, err := Export(c)
				if err != nil {
					t.Fatalf("%s: export: %v", c.Spec, err)
				}
				if a.DeviceType() != c.DeviceType {
					t.Fatalf("%s: exported on %v", c.Spec, a.DeviceType())
				}
				if _, err := a.Host(); err == nil {
					t.Fatalf("%s: Host must refuse device memory", c.Spec)
				}
				if err := Check(c, a); err != nil {
					t.Errorf("%s: check: %v", c.Spec, err)
				}
				s, err := ExportStream(c)
				if err != nil {
					t.Fatalf("%s: stream: %v", c.Spec, err)
				}
				if err := CheckStream(c, s); err != nil {
					t.Errorf("%s: stream check: %v", c.Spec, err)
				}
			}
		}
		if got := ferry.LiveAllocations(); got != before {
			t.Fatalf("%s: live allocations %d, %d before", device, got, before)
		}
	}
}
