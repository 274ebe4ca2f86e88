//go:build ignore

// genconst writes bindings/go/ferry/zz_generated_constants.go from
// core/abi/api.json (which extract_api.py derives from ferry.h with clang).
//
// Every FERRY_* and ARROW_* integer or string macro must match a rule below,
// which gives it a Go name and a Go type; an unknown macro is an error, so a
// new constant in the header cannot silently arrive untyped. Each generated
// integer constant is also checked against the C macro at compile time, so
// the Go value can never drift from what cgo sees.
//
// Usage: go run genconst.go genlayout.go -api core/abi/api.json -out FILE
// [-layout FILE -layout-check FILE] (genlayout.go: the struct mirrors)
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

type constant struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
	Type  string          `json:"type"`
}

type api struct {
	Source    string     `json:"source"`
	Constants []constant `json:"constants"`
	Layout    struct {
		PointerSize int64 `json:"pointer_size"`
	} `json:"layout"`
	Types []typeDesc `json:"types"` // for genlayout.go
}

// rule maps a macro name prefix to a Go name prefix and a Go type. Rules are
// tried in order; the first whose prefix matches wins.
type rule struct {
	cPrefix  string
	goPrefix string
	goType   string // "" for an untyped constant
	doc      string // doc comment of the group
}

var rules = []rule{
	{"ARROW_DEVICE_", "Device", "DeviceType", "Device types of the Arrow C Device Data Interface (ArrowDeviceType)."},
	{"ARROW_FLAG_", "Flag", "SchemaFlags", "Bits of ArrowSchema.flags."},
	{"FERRY_VALIDATE_", "Validate", "ValidateLevel", "Validation levels of ferry_validate_device_array."},
	{"FERRY_SYNC_", "Sync", "SyncPolicy", "How an asynchronous export treats the producer's device stream."},
	{"FERRY_ASYNC_EXPORT_", "AsyncExport", "int32", "Flags of ferry_async_export_stream."},
	{"FERRY_CPU_STREAM_", "CPUStream", "int64", "Flags of ferry_array_stream_to_cpu_stream."},
	{"FERRY_ABI_VERSION", "ABIVersion", "int32", "The ABI version these bindings were generated from."},
	{"FERRY_VERSION_STRING", "VersionString", "string", "The library version these bindings were generated from."},
	{"FERRY_VERSION_", "Version", "int", "Version numbers these bindings were generated from."},
	{"FERRY_SIM_POISON_BYTE", "SimPoisonByte", "byte", "Byte that unwaited sim memory reads as in strict mode."},
	{"FERRY_SIM_DEVICE_COUNT", "SimDeviceCount", "int", "Number of simulated devices (ids 0 .. SimDeviceCount-1)."},
	{"FERRY_ERROR_MESSAGE_SIZE", "ErrorMessageSize", "int", "Size of struct FerryError's message buffer."},
	{"FERRY_OK", "OK", "int", "Success: every other return code is an errno value."},
}

// types declares the named types the rules use, in this order.
var types = []struct{ name, underlying, doc string }{
	{"DeviceType", "int32", "DeviceType is ArrowDeviceType: where an array's buffers live."},
	{"SchemaFlags", "int64", "SchemaFlags are the bits of ArrowSchema.flags."},
	{"ValidateLevel", "int32", "ValidateLevel says how deeply ferry validates an array."},
	{"SyncPolicy", "int32", "SyncPolicy says how an asynchronous export synchronizes (FERRY_SYNC_*)."},
}

// words spells the parts of macro names that are not simply capitalised.
var words = map[string]string{
	"CPU": "CPU", "CUDA": "CUDA", "VPI": "VPI", "OK": "OK", "ABI": "ABI",
	"ROCM": "ROCm", "OPENCL": "OpenCL", "ONEAPI": "OneAPI", "WEBGPU": "WebGPU",
}

func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w == "" {
			continue
		}
		if spelled, ok := words[w]; ok {
			b.WriteString(spelled)
			continue
		}
		b.WriteString(w[:1] + strings.ToLower(w[1:]))
	}
	return b.String()
}

type entry struct {
	rule   rule
	cName  string
	goName string
	value  string
	isStr  bool
}

func main() {
	apiPath := flag.String("api", "core/abi/api.json", "api.json written by extract_api.py")
	out := flag.String("out", "", "output file (stdout when empty)")
	layout := flag.String("layout", "", "the struct mirrors (package abi; genlayout.go)")
	layoutCheck := flag.String("layout-check", "", "their cgo proof (package ferry; genlayout.go)")
	flag.Parse()

	raw, err := os.ReadFile(*apiPath)
	if err != nil {
		fail("%v", err)
	}
	var a api
	if err := json.Unmarshal(raw, &a); err != nil {
		fail("%s: %v", *apiPath, err)
	}

	groups := map[string][]entry{}
	for _, c := range a.Constants {
		if !strings.HasPrefix(c.Name, "FERRY_") && !strings.HasPrefix(c.Name, "ARROW_") {
			continue
		}
		var r *rule
		for i := range rules {
			if strings.HasPrefix(c.Name, rules[i].cPrefix) {
				r = &rules[i]
				break
			}
		}
		if r == nil {
			fail("no Go rule for the C constant %s (type %s): add one to generators/go/genconst.go", c.Name, c.Type)
		}
		e := entry{rule: *r, cName: c.Name}
		if r.cPrefix == c.Name {
			e.goName = r.goPrefix
		} else {
			e.goName = r.goPrefix + camel(strings.TrimPrefix(c.Name, r.cPrefix))
		}
		var s string
		if json.Unmarshal(c.Value, &s) == nil {
			e.value, e.isStr = fmt.Sprintf("%q", s), true
		} else {
			var n json.Number
			dec := json.NewDecoder(bytes.NewReader(c.Value))
			dec.UseNumber()
			if err := dec.Decode(&n); err != nil {
				fail("constant %s: value %s is neither a string nor a number", c.Name, c.Value)
			}
			e.value = n.String()
		}
		if e.isStr != (r.goType == "string") {
			fail("constant %s: C type %s does not fit Go type %s", c.Name, c.Type, r.goType)
		}
		groups[r.cPrefix] = append(groups[r.cPrefix], e)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by generators/go/gen.sh; DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// Source: %s via core/abi/api.json.\n\n", a.Source)
	fmt.Fprintf(&b, "package ferry\n\n")
	fmt.Fprintf(&b, "/*\n#include \"ferry/ferry.h\"\n*/\nimport \"C\"\n\n")
	for _, t := range types {
		fmt.Fprintf(&b, "// %s\ntype %s %s\n\n", t.doc, t.name, t.underlying)
	}
	for _, r := range rules {
		es := groups[r.cPrefix]
		if len(es) == 0 {
			continue
		}
		sort.Slice(es, func(i, j int) bool { return es[i].cName < es[j].cName })
		fmt.Fprintf(&b, "// %s\nconst (\n", r.doc)
		for _, e := range es {
			fmt.Fprintf(&b, "\t%s %s = %s // %s\n", e.goName, r.goType, e.value, e.cName)
		}
		fmt.Fprintf(&b, ")\n\n")
	}
	fmt.Fprintf(&b, "// Compile-time proof that every integer constant above equals the C macro:\n")
	fmt.Fprintf(&b, "// a difference makes the array index negative or out of range.\n")
	fmt.Fprintf(&b, "var (\n")
	for _, r := range rules {
		for _, e := range groups[r.cPrefix] {
			if e.isStr {
				continue
			}
			fmt.Fprintf(&b, "\t_ = [1]int{}[%s-C.%s]\n\t_ = [1]int{}[C.%s-%s]\n", e.goName, e.cName, e.cName, e.goName)
		}
	}
	fmt.Fprintf(&b, ")\n")

	write(*out, b.Bytes())
	if *layout != "" || *layoutCheck != "" {
		writeLayout(a, *apiPath, *layout, *layoutCheck)
	}
}

func fail(f string, args ...any) {
	fmt.Fprintf(os.Stderr, "genconst: "+f+"\n", args...)
	os.Exit(1)
}
