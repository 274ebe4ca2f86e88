#!/usr/bin/env python3
"""Writes ferry-arrow-sys's raw Rust layer from core/abi/api.json.

The one API description (extract_api.py's output, taken from ferry.h with
clang) holds every function, constant and type with its layout; this script
turns it into Rust items and nothing else reads the header:
  - constants: integer macros as i32 (i64 when out of range), so that
    ARROW_DEVICE_* assign to the int32_t device_type field without a cast;
    string macros as NUL-terminated byte strings;
  - types: #[repr(C)] structs with the described fields, opaque structs as
    zero-sized markers, enums as their integer type plus one constant per
    enumerator (Type_name), typedefs as aliases, function pointers as
    Option<unsafe extern "C" fn>;
  - functions: one extern "C" block, in header order, with their doc comments;
  - layout proofs: const assertions that each struct's size, alignment and
    field offsets are the described ones (a wrong mapping fails to compile).
The owning Arrow structs are neither Copy nor Clone (a bitwise copy would
invite a double release; ArrowAsyncTask stays Copy: the specification lets a
consumer copy a task out of on_next_task); Default zeroes every struct, which
is the released state for out-parameters. The text depends on api.json and
this script only (no tool version): one item a line, a function signature
over 100 columns one parameter a line; lib.rs keeps rustfmt off it.

Usage: gen.py [--api core/abi/api.json] [--out FILE]   (stdout without --out)
"""
import argparse
import json
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RAW = "::std::os::raw::"

NO_COPY = {"ArrowSchema", "ArrowArray", "ArrowArrayStream", "ArrowDeviceArray",
           "ArrowDeviceArrayStream", "ArrowAsyncDeviceStreamHandler"}

SCALARS = {
    "void": RAW + "c_void", "char": RAW + "c_char", "signed char": RAW + "c_schar",
    "unsigned char": RAW + "c_uchar", "short": RAW + "c_short",
    "unsigned short": RAW + "c_ushort", "int": RAW + "c_int",
    "unsigned int": RAW + "c_uint", "long": RAW + "c_long",
    "unsigned long": RAW + "c_ulong", "long long": RAW + "c_longlong",
    "unsigned long long": RAW + "c_ulonglong", "float": "f32", "double": "f64",
    "int8_t": "i8", "int16_t": "i16", "int32_t": "i32", "int64_t": "i64",
    "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64",
    "size_t": "usize", "ssize_t": "isize", "uintptr_t": "usize", "intptr_t": "isize",
    "_Bool": "bool", "bool": "bool",
}

KEYWORDS = {"as", "async", "await", "box", "break", "const", "continue", "crate", "dyn",
            "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in", "let",
            "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
            "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
            "while", "yield", "abstract", "become", "do", "final", "macro", "override",
            "priv", "try", "typeof", "unsized", "virtual"}

ARRAY = re.compile(r"^(?P<elem>.*\S)\s*\[(?P<n>\d+)\]$")


def fail(message):
    sys.exit("generators/rust/gen.py: " + message)


class Gen:
    def __init__(self, api):
        self.api = api
        self.types = {t["name"]: t for t in api.get("types", [])}
        if "ArrowArray" not in self.types:
            fail("api.json describes no types (extract_api.py writes them)")

    def rust_type(self, c):
        """The Rust spelling of a C type as clang prints it."""
        c = c.strip()
        if "(*)" in c:  # the description splits function pointers (fn_pointer)
            fail("the function pointer type %r comes without its return and params" % c)
        m = ARRAY.match(c)
        if m:
            return "[%s; %susize]" % (self.rust_type(m["elem"]), m["n"])
        if c.endswith("*"):
            pointee = c[:-1].strip()
            if pointee.endswith("*const"):  # `T *const *`: a const pointer pointed to
                const, pointee = True, pointee[: -len("const")].strip()
            else:
                const = "*" not in pointee and (pointee.startswith("const ") or pointee.endswith(" const"))
            return ("*const " if const else "*mut ") + self.rust_type(pointee)
        c = re.sub(r"\bconst\b", "", c).strip()
        c = re.sub(r"^(struct|enum|union)\s+", "", c)
        c = re.sub(r"\s+", " ", c)
        if c in SCALARS:
            return SCALARS[c]
        if c in self.types:
            return c
        fail("no Rust mapping for the C type %r: add it to generators/rust/gen.py" % c)

    def fn_pointer(self, desc):
        """Option<fn> of a described function pointer (its return and params)."""
        params = [p["type"] for p in desc["params"]]
        return "::std::option::Option<%s>" % self.fn_type(desc["return"], params)

    def fn_type(self, ret, params):
        args = ", ".join("arg%d: %s" % (i + 1, self.rust_type(p)) for i, p in enumerate(params))
        return 'unsafe extern "C" fn(%s)%s' % (args, self.returns(ret))

    def returns(self, ret):
        return "" if ret.strip() == "void" else " -> " + self.rust_type(ret)


def doc_lines(text, indent=""):
    """A doc comment, wrapped; empty when there is no text."""
    text = " ".join((text or "").split())
    if not text:
        return []
    width = 96 - len(indent)
    return [indent + "/// " + line for line in textwrap.wrap(text, width, break_long_words=False,
                                                             break_on_hyphens=False)]


def constant_lines(c):
    name, value = c["name"], c["value"]
    if isinstance(value, str):
        data = value.encode() + b"\0"
        literal = "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\' else "\\x%02x" % b
                          for b in data[:-1])
        return ['pub const %s: &[u8; %dusize] = b"%s\\0";' % (name, len(data), literal)]
    if not isinstance(value, int):
        fail("constant %s has value %r, neither an integer nor a string" % (name, value))
    rust = "i32" if -2**31 <= value < 2**31 else "i64"
    return ["pub const %s: %s = %d;" % (name, rust, value)]


def struct_lines(g, t):
    name, out = t["name"], []
    out += doc_lines(t.get("doc"))
    copy = "" if name in NO_COPY else ", Copy, Clone"
    out += ["#[repr(C)]", "#[derive(Debug%s)]" % copy, "pub struct %s {" % name]
    for f in t["fields"]:
        out += doc_lines(f.get("doc"), "    ")
        field = f["name"] + "_" if f["name"] in KEYWORDS else f["name"]
        rust = g.fn_pointer(f) if "return" in f else g.rust_type(f["type"])
        out.append("    pub %s: %s," % (field, rust))
    out += ["}",
            "impl Default for %s {" % name,
            "    /// All zero: for the Arrow structs, the released state.",
            "    fn default() -> Self {",
            "        // SAFETY: every field is an integer, a raw pointer, an Option of a",
            "        // function pointer or an array or struct of those: all-zero is valid.",
            "        unsafe { ::std::mem::zeroed() }",
            "    }",
            "}"]
    return out


def layout_lines(t):
    """Const assertions of the described layout (compile-time)."""
    name = t["name"]
    out = ["const _: () = assert!(::std::mem::size_of::<%s>() == %d);" % (name, t["size"]),
           "const _: () = assert!(::std::mem::align_of::<%s>() == %d);" % (name, t["align"])]
    for f in t["fields"]:
        field = f["name"] + "_" if f["name"] in KEYWORDS else f["name"]
        out.append("const _: () = assert!(::std::mem::offset_of!(%s, %s) == %d);"
                   % (name, field, f["offset"]))
    return out


def type_lines(g, t):
    kind, name = t["kind"], t["name"]
    if kind == "struct":
        return struct_lines(g, t)
    if kind == "opaque":
        return doc_lines(t.get("doc")) + [
            "#[repr(C)]", "#[derive(Debug, Copy, Clone)]",
            "pub struct %s {" % name, "    _unused: [u8; 0],", "}"]
    if kind == "enum":
        base = {(4, False): RAW + "c_uint", (4, True): RAW + "c_int"}.get((t["size"], t["signed"]))
        if base is None:
            fail("enum %s: no Rust type for size %s signed %s" % (name, t["size"], t["signed"]))
        out = doc_lines(t.get("doc")) + ["pub type %s = %s;" % (name, base)]
        for e in t["enumerators"]:
            out += doc_lines(e.get("doc"))
            out.append("pub const %s_%s: %s = %d;" % (name, e["name"], name, e["value"]))
        return out
    if kind == "typedef":
        return doc_lines(t.get("doc")) + ["pub type %s = %s;" % (name, g.rust_type(t["type"]))]
    if kind == "function_pointer":
        return doc_lines(t.get("doc")) + ["pub type %s = %s;" % (name, g.fn_pointer(t))]
    fail("type %s has the unknown kind %r" % (name, kind))


def function_lines(g, f):
    out = doc_lines(f.get("doc"), "    ")
    params = []
    for i, p in enumerate(f["params"]):
        pname = p.get("name") or "arg%d" % (i + 1)
        if pname in KEYWORDS:
            pname += "_"
        params.append("%s: %s" % (pname, g.rust_type(p["type"])))
    one = "    pub fn %s(%s)%s;" % (f["name"], ", ".join(params), g.returns(f["return"]))
    if len(one) <= 100:
        return out + [one]
    return out + ["    pub fn %s(" % f["name"]] + ["        %s," % p for p in params] + \
        ["    )%s;" % g.returns(f["return"])]


def generate(api):
    g = Gen(api)
    if api.get("layout", {}).get("pointer_size") != 8:
        fail("api.json describes a layout other than 64-bit pointers: %r" % api.get("layout"))
    out = ["// @generated by generators/rust/gen.py from core/abi/api.json; do not edit.",
           "// Regenerate with: ./dev.sh regen   (or generators/rust/gen.sh); CI runs gen.sh --check.",
           ""]
    out += ["// Constants (integer macros as i32, the type of ArrowDeviceType)."]
    for c in api["constants"]:
        out += constant_lines(c)
    out += ["", "// Types."]
    for t in api["types"]:
        out += type_lines(g, t)
    out += ["", "// Layout: the described sizes, alignments and offsets, proven at compile time."]
    for t in api["types"]:
        if t["kind"] == "struct":
            out += layout_lines(t)
    out += ["", "// Functions of libferry, in header order.", 'extern "C" {']
    for f in api["functions"]:
        out += function_lines(g, f)
    out += ["}"]
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", default=os.path.join(ROOT, "core", "abi", "api.json"))
    parser.add_argument("--out")
    args = parser.parse_args()
    with open(args.api, encoding="utf-8") as f:
        text = generate(json.load(f))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
