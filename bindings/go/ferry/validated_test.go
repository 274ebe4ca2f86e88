package ferry_test

import (
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// TestValidatedFollowsTheImport: an import records the level it validated
// at, a Validate call that passes raises it, a release forgets it, and an
// import with a prepared schema (not the array's own) records nothing.
func TestValidatedFollowsTheImport(t *testing.T) {
	settled(t)
	// export hands a ferry-made int32 array and its schema over into fresh
	// raw structs (freed by the caller).
	export := func() (arr, sch unsafe.Pointer) {
		buf, err := ferry.CopySlice([]int32{1, 2, 3})
		if err != nil {
			t.Fatal(err)
		}
		d, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: 3, Buffers: []ferry.Buffer{{}, buf}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.Validated() != ferry.ValidateNone {
			t.Fatalf("an export is not validated: %v", d.Validated())
		}
		arr, sch = ferry.NewRawDeviceArray(), ferry.NewRawSchema()
		if err := d.ExportTo(arr, sch); err != nil {
			t.Fatal(err)
		}
		return arr, sch
	}
	for _, c := range []struct {
		opts []ferry.ImportOptions
		want ferry.ValidateLevel
	}{
		{nil, ferry.ValidateDefault},
		{[]ferry.ImportOptions{{Validate: ferry.ValidateFull}}, ferry.ValidateFull},
		{[]ferry.ImportOptions{{Validate: ferry.ValidateNone}}, ferry.ValidateNone},
	} {
		arr, sch := export()
		d, err := ferry.ImportDeviceArray(arr, sch, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if d.Validated() != c.want {
			t.Fatalf("import with %v: Validated %v, want %v", c.opts, d.Validated(), c.want)
		}
		if err := d.Validate(ferry.ValidateFull); err != nil {
			t.Fatal(err)
		}
		if d.Validated() != ferry.ValidateFull {
			t.Fatalf("after Validate(FULL): %v", d.Validated())
		}
		moved, err := d.Move()
		if err != nil || moved.Validated() != ferry.ValidateFull {
			t.Fatalf("Move must keep the level: %v, %v", moved.Validated(), err)
		}
		moved.Release()
		if moved.Validated() != ferry.ValidateNone {
			t.Fatalf("a released array: %v", moved.Validated())
		}
		ferry.FreeRawDeviceArray(arr)
		ferry.FreeRawSchema(sch)
	}

	// Against a prepared schema: the array's own schema was not looked at.
	arr, sch := export()
	s, err := ferry.ImportSchema(sch)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ferry.ImportDeviceArray(arr, nil, ferry.ImportOptions{Prepared: p})
	if err != nil {
		t.Fatal(err)
	}
	if d.Validated() != ferry.ValidateNone {
		t.Fatalf("validated against a prepared schema: %v", d.Validated())
	}
	d.Release()
	p.Free()
	s.Release()
	ferry.FreeRawDeviceArray(arr)
	ferry.FreeRawSchema(sch)
}

// TestAfterReleaseRunsOnceAfterTheRelease: ArrayData.AfterRelease does not
// run at the export nor before the consumer's release, and runs exactly
// once after it, by ReleaseDeferred at the latest.
func TestAfterReleaseRunsOnceAfterTheRelease(t *testing.T) {
	settled(t)
	values := []int32{4, 5, 6}
	runs := 0
	d, err := ferry.ExportArray(&ferry.ArrayData{Format: "i", Length: 3,
		Buffers: []ferry.Buffer{{}, ferry.PinSlice(values)}, AfterRelease: func() { runs++ }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ferry.ReleaseDeferred()
	if runs != 0 {
		t.Fatal("AfterRelease ran before the release")
	}
	d.Release()
	ferry.ReleaseDeferred()
	ferry.ReleaseDeferred()
	if runs != 1 {
		t.Fatalf("AfterRelease ran %d times, want 1", runs)
	}
}
