package itcase

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// Field is the schema of the case, as ferry.Field.
func (c *Case) Field() ferry.Field {
	f := ferry.Field{Format: typeFormats[c.Type], Name: c.Type.String(), Flags: ferry.FlagNullable}
	for _, ch := range wantField(c).children {
		f.Children = append(f.Children, ferry.Field{Format: ch.format, Name: ch.name, Flags: ferry.FlagNullable})
	}
	if c.Type == DictInt32UTF8 {
		f.Dictionary = &ferry.Field{Format: "u", Flags: ferry.FlagNullable}
	}
	return f
}

// Export produces the case's array (entry point ferry_it_export_array).
func Export(c *Case) (*ferry.DeviceArray, error) {
	dev, err := c.exportDevice()
	if err != nil {
		return nil, err
	}
	return ExportArray(c, c.Seed, dev)
}

// exportDevice is the device an export of the case lives on, or the
// injected failure of fail=export.
func (c *Case) exportDevice() (*ferry.Device, error) {
	if c.Fail == FailExport {
		return nil, injected("export")
	}
	return c.Device()
}

// ExportStream produces the case's stream: `batches` arrays, batch b with
// seed + b, and the injected failures of the case.
func ExportStream(c *Case) (*ferry.DeviceArrayStream, error) {
	dev, err := c.exportDevice()
	if err != nil {
		return nil, err
	}
	calls, done := int64(0), int64(0)
	field := c.Field()
	if c.Fail == FailGetSchema {
		// A Field whose export fails: ferry.ExportStream calls fill at every
		// get_schema, so the stream itself reports the failure.
		return ferry.ExportStreamWithSchema(func() (*ferry.Schema, error) { return nil, injected("get_schema") },
			c.DeviceType, func() (*ferry.DeviceArray, error) { return nil, nil })
	}
	return ferry.ExportStream(field, c.DeviceType, func() (*ferry.DeviceArray, error) {
		calls++
		if c.Fail == FailGetNext && calls == c.FailAt {
			return nil, injected(fmt.Sprintf("get_next %d", calls))
		}
		if done >= c.Batches {
			return nil, nil
		}
		a, err := ExportArray(c, c.Seed+uint32(done), dev)
		if err != nil {
			return nil, err
		}
		done++
		return a, nil
	})
}

// Check checks an owned array against the case and releases it, whatever
// the outcome (entry point ferry_it_check_array).
func Check(c *Case, a *ferry.DeviceArray) error {
	defer a.Release() // a no-op when ToHost consumed it
	return CheckArray(c, c.Seed, a, "", true)
}

// CheckStream reads the stream to its end, or to the injected failure the
// case expects, checking the schema and every batch; it releases the stream
// whatever the outcome.
func CheckStream(c *Case, s *ferry.DeviceArrayStream) error {
	defer s.Release()
	if got := s.DeviceType(); got != c.DeviceType {
		return mismatch("", "stream device type: expected %s (%d), got %s (%d)", c.DeviceName, c.DeviceType, got, got)
	}
	schema, err := s.Schema()
	if c.Fail == FailGetSchema {
		return expectInjected(err, "get_schema", "injected failure at get_schema")
	}
	if err != nil {
		return fmt.Errorf("get_schema failed: %w", err)
	}
	if err := CheckSchema(c, schema); err != nil {
		return err
	}
	failing := int64(0)
	if c.Fail == FailGetNext && c.FailAt <= c.Batches+1 {
		failing = c.FailAt
	}
	seen := int64(0)
	for s.Next() {
		if failing != 0 && seen+1 == failing {
			return mismatch("", "get_next call %d succeeded, expected the injected failure", failing)
		}
		if seen >= c.Batches {
			return mismatch("", "stream yielded more than %d batches", c.Batches)
		}
		if err := CheckArray(c, c.Seed+uint32(seen), s.Batch(), fmt.Sprintf("batch %d: ", seen), false); err != nil {
			return err
		}
		seen++
	}
	if failing != 0 {
		if s.Err() == nil {
			return mismatch("", "stream ended before the injected failure at get_next call %d", failing)
		}
		if seen+1 != failing {
			return mismatch("", "get_next failed at call %d, expected call %d: %v", seen+1, failing, s.Err())
		}
		return expectInjected(s.Err(), fmt.Sprintf("get_next call %d", failing), fmt.Sprintf("injected failure at get_next %d", failing))
	}
	if s.Err() != nil {
		return fmt.Errorf("get_next call %d failed: %w", seen+1, s.Err())
	}
	if seen != c.Batches {
		return mismatch("", "stream ended after %d batches, expected %d", seen, c.Batches)
	}
	return nil
}

func expectInjected(err error, what, message string) error {
	var fe *ferry.Error
	if err == nil {
		return mismatch("", "%s succeeded, expected the injected failure %q", what, message)
	}
	if !errors.As(err, &fe) || fe.Code != syscall.EIO {
		return mismatch("", "%s: expected EIO from the injected failure, got %v", what, err)
	}
	if fe.Message != message {
		return mismatch("", "%s: last error %q, expected %q", what, fe.Message, message)
	}
	return nil
}
