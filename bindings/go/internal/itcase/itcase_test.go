package itcase

import (
	"errors"
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
