#!/usr/bin/env python3
"""The one emitter of C declarations of ferry's API, from core/abi/api.json.

Every binding that needs ferry's declarations as C text gets them here:
  --target cffi     the declaration block of the Python binding's cffi cdef
                    (--python-module writes the whole _cdef.py around it)
  --target luajit   the declaration block of the Lua binding's ffi.cdef
                    (generators/lua/gen.lua puts it into ferry/abi.lua)
  --target swig     the header SWIG wraps for the Java binding (the constants
                    as #defines too; generators/java/gen.sh)
  --target c        the same as a C header with a _Static_assert for every
                    size, alignment and offset of api.json: --check compiles
                    it, proving that the emitted declarations give a C
                    compiler the layouts clang found in the real header (and
                    has LuaJIT and cffi lay out their blocks and compare)
The block is the same C for every target: forward declarations of every
struct, then the types in an order where each follows what it uses by value
(ties by name), then the functions in the header's order; one statement a
line. The targets differ only through the options of TARGETS below, and
--headers keeps the definitions of some headers only (SWIG does not wrap
DLPack's).

Usage: cdecl.py --target cffi|luajit|swig|c [--headers H1,H2] [--api PATH] [--out FILE]
       cdecl.py --python-module [--api PATH] [--out FILE]
       cdecl.py --check [--api PATH]    (compiles --target c; run by regen.sh --check)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = os.path.join(ROOT, "core", "abi", "api.json")

# What each target needs beyond plain C declarations:
#   layout_checks  emit _Static_assert lines proving api.json's layouts
#                  (only a C compiler understands them; --check has LuaJIT
#                  and cffi compare their layouts instead)
#   docs           one comment line before each declaration that has a doc
#   macros         the integer and string constants as #define lines
TARGETS = {
    "cffi": {"layout_checks": False, "docs": False, "macros": False},
    "luajit": {"layout_checks": False, "docs": False, "macros": False},
    "swig": {"layout_checks": False, "docs": True, "macros": True},
    "c": {"layout_checks": True, "docs": True, "macros": True},
}


def load_api(path=API):
    with open(path) as f:
        return json.load(f)


def c_spelling(spelling):
    """clang's type spelling in ferry's style: "const void *const *" becomes
    "const void* const*" (the star sticks to the type)."""
    text = re.sub(r"\s*\*", "*", spelling)
    text = text.replace("*(*)", "* (*)")
    return re.sub(r"\*(?=[A-Za-z_])", "* ", text)


def declarator(spelling, name):
    """`type name` for a type as clang spells it, arrays and function
    pointers included ("int64_t[3]" + "reserved" -> "int64_t reserved[3]")."""
    text = c_spelling(spelling)
    if "(*)" in text:
        return text.replace("(*)", "(*%s)" % name, 1)
    array = re.fullmatch(r"(.*?)((?:\[\d+\])+)", text)
    if array:
        return "%s %s%s" % (array.group(1), name, array.group(2))
    return "%s %s" % (text, name)


def _spellings(t):
    if t["kind"] in ("typedef", "function_pointer"):
        yield t["type"]
    for f in t.get("fields", []):
        yield f["type"]


def _dependencies(t, by_c_type):
    """Names of the types `t` needs declared (or, by value, defined) first.
    A `struct X*` needs nothing: every struct is forward-declared."""
    needs = set()
    for spelling in _spellings(t):
        for word in re.findall(r"(?:struct |enum )?[A-Za-z_]\w*(?:\s*\*)?", spelling):
            if word.rstrip().endswith("*") and word.startswith("struct "):
                continue
            dep = by_c_type.get(word.rstrip(" *"))
            if dep and dep["name"] != t["name"]:
                needs.add(dep["name"])
    return needs


def _ordered_types(api):
    types = {t["name"]: t for t in api["types"] if t["kind"] != "opaque"}
    by_c_type = {t["c_type"]: t for t in api["types"]}
    deps = {name: _dependencies(t, by_c_type) & set(types) for name, t in types.items()}
    done, order = set(), []
    while len(order) < len(types):
        ready = sorted(n for n in types if n not in done and deps[n] <= done)
        if not ready:
            sys.exit("cdecl.py: the types of api.json depend on each other in a cycle: %s"
                     % sorted(set(types) - done))
        for name in ready:
            done.add(name)
            order.append(types[name])
    return order


def _doc(text, options):
    if not options["docs"] or not text:
        return []
    return ["/* %s */" % text.replace("*/", "* /")]


def _type_declaration(t):
    kind = t["kind"]
    if kind in ("typedef", "function_pointer"):
        return "typedef %s;" % declarator(t["type"], t["name"])
    if kind == "enum":
        body = ", ".join("%s = %d" % (e["name"], e["value"]) for e in t["enumerators"])
        head = "enum %s" % t["tag"] if t["tag"] else "enum"
        if t["typedef"]:
            return "typedef %s { %s } %s;" % (head, body, t["typedef"])
        return "%s { %s };" % (head, body)
    if kind == "struct":
        body = " ".join("%s;" % declarator(f["type"], f["name"]) for f in t["fields"])
        head = "struct %s" % t["tag"] if t["tag"] else "struct"
        if t["typedef"]:
            return "typedef %s { %s } %s;" % (head, body, t["typedef"])
        return "%s { %s };" % (head, body)
    raise ValueError("cdecl.py: no declaration for a type of kind %r" % kind)


def _function_declaration(fn):
    params = ", ".join(declarator(p["type"], p["name"]) if p["name"] else c_spelling(p["type"])
                       for p in fn["params"]) or "void"
    return "%s(%s);" % (declarator(fn["return"], fn["name"]), params)


def _layout_checks(t):
    c = t["c_type"]
    lines = ["_Static_assert(sizeof(%s) == %d && _Alignof(%s) == %d, \"layout of %s\");"
             % (c, t["size"], c, t["align"], t["name"])]
    for f in t.get("fields", []):
        lines.append("_Static_assert(offsetof(%s, %s) == %d, \"offset of %s.%s\");"
                     % (c, f["name"], f["offset"], t["name"], f["name"]))
    return lines


def declarations(api, target, headers=None):
    """The declaration lines for `target` (a key of TARGETS); with `headers`
    (basenames), only what those headers define, and every struct tag."""
    options = TARGETS[target]
    if headers is not None:
        keep = lambda entry: entry["header"] in headers  # noqa: E731
        # The structs of the other headers stay declared (`struct X;`): the
        # kept functions may take pointers to them.
        others = [dict(t, kind="opaque", doc="") for t in api["types"]
                  if not keep(t) and t["kind"] == "struct" and t["tag"]]
        api = dict(api, constants=[c for c in api["constants"] if keep(c)],
                   functions=[f for f in api["functions"] if keep(f)],
                   types=[t for t in api["types"] if keep(t)] + others)
    lines = []
    if options["macros"]:
        for c in api["constants"]:
            value = '"%s"' % c["value"] if c["type"] == "string" else "%d" % c["value"]
            lines.append("#define %s %s" % (c["name"], value))
    tags = sorted((t["tag"], t) for t in api["types"]
                  if t["kind"] in ("struct", "opaque") and t["tag"])
    for tag, t in tags:
        if t["kind"] == "opaque":
            lines.extend(_doc(t["doc"], options))
        lines.append("struct %s;" % tag)
    for t in _ordered_types(api):
        lines.extend(_doc(t["doc"], options))
        lines.append(_type_declaration(t))
    for fn in api["functions"]:
        lines.extend(_doc(fn["doc"], options))
        lines.append(_function_declaration(fn))
    if options["layout_checks"]:
        for t in _ordered_types(api):
            if t["kind"] == "struct":
                lines.extend(_layout_checks(t))
    return lines


def integer_constants(api):
    """{name: value} of every integer constant, sorted by name."""
    return dict(sorted((c["name"], c["value"]) for c in api["constants"] if c["type"] != "string"))


def python_module(api):
    """bindings/python/src/ferry/_cdef.py."""
    out = [
        "# @generated by generators/cdecl.py from core/abi/api.json. DO NOT EDIT.",
        "# Regenerate with ./dev.sh regen; bindings/python/test.sh fails when this file is stale.",
        '"""ferry\'s C API as cffi declarations, its integer constants and function names."""',
        "",
        'CDEF = """',
    ]
    out.extend(declarations(api, "cffi"))
    out.append('"""')
    out.append("")
    out.append("CONSTANTS = {")
    out.extend('    "%s": %d,' % item for item in integer_constants(api).items())
    out.append("}")
    out.append("")
    out.append("FUNCTIONS = (")
    out.extend('    "%s",' % fn["name"] for fn in api["functions"])
    out.append(")")
    return "\n".join(out) + "\n"


def _layout_facts(api):
    """(C type, field or None, what, expected value) of every layout fact."""
    for t in api["types"]:
        if t["kind"] != "struct":
            continue
        yield t["c_type"], None, "sizeof", t["size"]
        yield t["c_type"], None, "alignof", t["align"]
        for f in t["fields"]:
            yield t["c_type"], f["name"], "offsetof", f["offset"]


def _check_luajit(api):
    """LuaJIT's layouts of the luajit block equal api.json's (skipped without
    luajit: the Lua binding's tests need it anyway)."""
    try:
        subprocess.run(["luajit", "-v"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        print("cdecl.py: luajit not found: LuaJIT's layouts not checked")
        return True
    script = ["local ffi = require('ffi')", "ffi.cdef[[", *declarations(api, "luajit"), "]]",
              "local bad = 0"]
    for c_type, field, what, want in _layout_facts(api):
        got = "ffi.%s(%r%s)" % (what, c_type, ", %r" % field if field else "")
        script.append("if %s ~= %d then bad = bad + 1; print(%r .. tostring(%s)) end"
                      % (got, want, "%s %s %s: api.json %d, LuaJIT " % (what, c_type, field or "",
                                                                      want), got))
    script.append("os.exit(bad == 0 and 0 or 1)")
    done = subprocess.run(["luajit", "-"], input="\n".join(script), capture_output=True, text=True)
    sys.stdout.write(done.stdout + done.stderr)
    return done.returncode == 0


def _check_cffi(api):
    """cffi's layouts of the cffi block equal api.json's (skipped where this
    python3 has no cffi: the Python binding's virtual environment has)."""
    try:
        import cffi
    except ImportError:
        print("cdecl.py: no cffi in this python3: cffi's layouts not checked")
        return True
    ffi = cffi.FFI()
    ffi.cdef("\n".join(declarations(api, "cffi")))
    bad = 0
    for c_type, field, what, want in _layout_facts(api):
        got = getattr(ffi, what)(c_type, *([field] if field else []))
        if got != want:
            bad += 1
            print("%s %s %s: api.json %d, cffi %d" % (what, c_type, field or "", want, got))
    return bad == 0


def check(api):
    """Compiles --target c with the C compiler (every _Static_assert holds
    when the emitted declarations have the layouts clang found) and has
    LuaJIT and cffi lay out their blocks."""
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "decl.c")
        with open(src, "w") as f:
            f.write("#include <stddef.h>\n#include <stdint.h>\n")
            f.write("\n".join(declarations(api, "c")) + "\n")
        done = subprocess.run([cc, "-std=c11", "-fsyntax-only", src], capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        sys.exit("cdecl.py: the emitted declarations do not compile to api.json's layouts")
    if not _check_luajit(api):
        sys.exit("cdecl.py: LuaJIT lays out the luajit declarations differently from api.json")
    if not _check_cffi(api):
        sys.exit("cdecl.py: cffi lays out the cffi declarations differently from api.json")
    print("cdecl.py: the emitted declarations give api.json's layouts")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--target", choices=sorted(TARGETS))
    what.add_argument("--python-module", action="store_true")
    what.add_argument("--check", action="store_true")
    parser.add_argument("--headers", help="comma-separated header basenames to define")
    parser.add_argument("--api", default=API)
    parser.add_argument("--out", default="-")
    args = parser.parse_args()
    api = load_api(args.api)
    if args.check:
        check(api)
        return
    if args.python_module:
        text = python_module(api)
    else:
        headers = args.headers.split(",") if args.headers else None
        text = "\n".join(declarations(api, args.target, headers)) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
