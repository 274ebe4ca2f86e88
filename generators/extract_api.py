#!/usr/bin/env python3
"""Extracts ferry's public API from its public headers with clang.

The header (core/include/ferry/ferry.h, with the headers it includes and
ferry/dlpack_abi.h) is the one source of truth; this script is the only
tool that reads it. It asks clang (its JSON AST, not a regex) for every
declaration of the public headers, has clang compile and run a small probe
for the layouts and the constants' values, and writes:
  core/abi/api.json     the API description every generator reads (below)
  core/abi/symbols.txt  the exported symbol list the library must match

api.json (keys sorted, one-space indent; lists sorted by name except
`functions`, which keep the header's order, its grouping and documentation):
  generated_by, source, headers   where it comes from (no tool version)
  layout       {"data_model": "LP64", "pointer_size": 8}: the target the
               sizes and offsets below are for
  constants    [{name, type, value, header}]: integer macros (value a
               number, `type` the C type the API uses them as) and string
               macros (type "string"); `header`, here and below, is the
               basename of the defining header
  functions    [{name, return, params: [{name, type}], doc, header}]
  types        [{name, kind, c_type, header, doc, ...}] where kind is
    "struct"            tag, typedef ("" when absent), size, align,
                        fields: [{name, type, offset, size, align, doc}]
    "opaque"            tag: a struct only declared (`struct FerryDevice;`)
    "enum"              tag, typedef, size, align, signed,
                        enumerators: [{name, value, doc}]
    "typedef"           type (the aliased C type), size, align
    "function_pointer"  type, size, align, return, params: [{type}]
  C types are spelled as clang prints them ("const char *", "int64_t[3]",
  "void (*)(struct ArrowSchema *)"); a field whose type is a function
  pointer also carries `return` and `params`. `c_type` is how C code names
  the type ("struct ArrowSchema", "DLTensor").

Usage: extract_api.py [--out-dir DIR]   (default: core/abi of the repository)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = os.path.join(ROOT, "core", "include")
HEADERS = ("ferry.h", "arrow_c_device_abi.h", "dlpack_abi.h", "ferry_version.h")
# ferry.h includes the others except DLPack's, whose structures ferry's
# DLPack functions exchange; the translation unit clang reads:
UNIT = '#include "ferry/ferry.h"\n#include "ferry/dlpack_abi.h"\n'
PREFIXES = ("FERRY_", "ARROW_", "DLPACK_")


def clang():
    for name in ("clang-14", "clang"):
        try:
            subprocess.run([name, "--version"], capture_output=True, check=True)
            return name
        except (OSError, subprocess.CalledProcessError):
            continue
    sys.exit("extract_api.py: clang is required (apt-get install clang-14)")


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit("extract_api.py: %s failed:\n%s" % (" ".join(cmd[:2]), done.stderr))
    return done.stdout


# ---- the AST ------------------------------------------------------------------

def top_level_nodes(ast):
    """Yields (header basename, node) for every top-level declaration.

    clang's JSON names a location's file only when it differs from the one
    printed last, in document order, so the walk follows every location
    (an `includedFrom` names the includer, not a new current file)."""
    state = {"file": ""}

    def walk(obj):
        if isinstance(obj, dict):
            if isinstance(obj.get("file"), str):
                state["file"] = obj["file"]
            for key, value in obj.items():
                if key != "includedFrom":
                    walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    for node in ast.get("inner", []):
        # A declaration written through a macro (FERRY_EXPORT) has a
        # spellingLoc and then an expansionLoc: it belongs to the latter.
        walk(node.get("loc", {}))
        here = os.path.basename(state["file"])
        walk({k: v for k, v in node.items() if k != "loc"})
        yield here, node


def comment_text(node):
    if node.get("kind") == "TextComment":
        return node.get("text", "").strip()
    return " ".join(t for t in (comment_text(c) for c in node.get("inner", [])) if t)


def doc_of(node):
    return " ".join(comment_text(c) for c in node.get("inner", [])
                    if c.get("kind") == "FullComment").strip()


def function_type(spelling):
    """{return, params} of a function pointer type as clang prints it,
    "RET (*)(T1, T2)"; None for any other type."""
    m = re.fullmatch(r"(.*?) ?\(\*\)\((.*)\)", spelling)
    if not m:
        return None
    params, depth, current = [], 0, ""
    for char in m.group(2):
        if char == "," and depth == 0:
            params.append(current.strip())
            current = ""
            continue
        depth += char == "("
        depth -= char == ")"
        current += char
    if current.strip() and current.strip() != "void":
        params.append(current.strip())
    return {"return": m.group(1), "params": [{"type": p} for p in params]}


def declarations(ast):
    functions, records, typedefs, enums = [], {}, [], {}
    for header, node in top_level_nodes(ast):
        if header not in HEADERS or node.get("isImplicit"):
            continue
        kind = node.get("kind")
        if kind == "FunctionDecl":
            qual = node["type"]["qualType"]
            params = [{"name": c.get("name", ""), "type": c["type"]["qualType"]}
                      for c in node.get("inner", []) if c.get("kind") == "ParmVarDecl"]
            functions.append({"name": node["name"], "return": qual.split("(", 1)[0].strip(),
                              "params": params, "doc": doc_of(node), "header": header})
        elif kind == "RecordDecl":
            known = records.get(node["id"])
            entry = {"id": node["id"], "tag": node.get("name", ""), "header": header,
                     "complete": bool(node.get("completeDefinition")), "doc": doc_of(node),
                     "fields": [{"name": f["name"], "type": f["type"]["qualType"],
                                 "doc": doc_of(f)}
                                for f in node.get("inner", []) if f.get("kind") == "FieldDecl"]}
            if node.get("tagUsed") != "struct":
                sys.exit("extract_api.py: %s %s: only structs are supported"
                         % (node.get("tagUsed"), entry["tag"]))
            if known is None or (entry["complete"] and not known["complete"]):
                records[node["id"]] = entry
        elif kind == "EnumDecl":
            enumerators = []
            for c in node.get("inner", []):
                if c.get("kind") != "EnumConstantDecl":
                    continue
                values = list(constant_values(c))
                enumerators.append({"name": c["name"], "value": values[0] if values else None,
                                    "doc": doc_of(c)})
            enums[node["id"]] = {"tag": node.get("name", ""), "header": header,
                                 "doc": doc_of(node), "enumerators": enumerators}
        elif kind == "TypedefDecl":
            typedefs.append((header, node))
    return functions, records, typedefs, enums


def constant_values(node):
    """The values clang folded below an enumerator (its ConstantExpr)."""
    if node.get("kind") == "ConstantExpr" and "value" in node:
        yield int(node["value"])
        return
    for c in node.get("inner", []):
        yield from constant_values(c)


def owned_tag(typedef):
    """The id of the struct or enum a typedef defines in the same statement
    (`typedef struct {...} DLTensor;`), or None."""
    for c in typedef.get("inner", []):
        if c.get("kind") == "ElaboratedType" and "ownedTagDecl" in c:
            return c["ownedTagDecl"]["id"]
    return None


def types_of(records, typedefs, enums):
    """The type entries (without layouts), and the C spelling of each."""
    types = {}
    named = {}  # record/enum id -> typedef name
    for header, node in typedefs:
        tag_id = owned_tag(node)
        if tag_id in records or tag_id in enums:
            named[tag_id] = node["name"]
            if not records.get(tag_id, enums.get(tag_id))["doc"]:
                (records.get(tag_id) or enums[tag_id])["doc"] = doc_of(node)
            continue
        spelling = node["type"]["qualType"]
        entry = {"name": node["name"], "kind": "typedef", "c_type": node["name"],
                 "header": header, "doc": doc_of(node), "type": spelling}
        fn = function_type(spelling)
        if fn:
            entry["kind"] = "function_pointer"
            entry.update(fn)
        types[node["name"]] = entry
    for rid, r in records.items():
        typedef = named.get(rid, "")
        name = typedef or r["tag"]
        entry = {"name": name, "kind": "struct" if r["complete"] else "opaque",
                 "c_type": typedef or "struct " + r["tag"], "header": r["header"],
                 "doc": r["doc"], "tag": r["tag"]}
        if r["complete"]:
            entry["typedef"] = typedef
            entry["fields"] = []
            for f in r["fields"]:
                field = dict(f)
                fn = function_type(f["type"])
                if fn:
                    field.update(fn)
                entry["fields"].append(field)
        types[name] = entry
    for eid, e in enums.items():
        typedef = named.get(eid, "")
        name = typedef or e["tag"]
        types[name] = {"name": name, "kind": "enum", "c_type": typedef or "enum " + e["tag"],
                       "header": e["header"], "doc": e["doc"], "tag": e["tag"],
                       "typedef": typedef, "enumerators": e["enumerators"]}
    return types


# ---- constants ----------------------------------------------------------------

def macro_candidates(cc, unit_path):
    """Integer and string macros of the public headers, with the header that
    defines each, from the preprocessor's -dD listing (its line markers name
    the file each #define is in)."""
    out = run([cc, "-x", "c", "-std=c11", "-E", "-dD", "-I", INCLUDE, unit_path])
    integers, strings, header = {}, [], ""
    for line in out.splitlines():
        marker = re.match(r'# \d+ "([^"]*)"', line)
        if marker:
            header = os.path.basename(marker.group(1))
            continue
        m = re.match(r"#define ((?:%s)\w+) (.+)$" % "|".join(PREFIXES), line)
        if not m or header not in HEADERS:
            continue
        name, body = m.group(1), m.group(2).strip()
        if re.fullmatch(r'"[^"]*"', body):
            strings.append({"name": name, "value": body[1:-1], "type": "string", "header": header})
        elif re.fullmatch(r"[-+()<>| 0-9A-Fa-fxXuUlL]+", body):
            integers[name] = header  # an integer expression: the probe evaluates it
    return integers, strings


def constant_type(name):
    """The C type the API uses an integer macro as."""
    if name.startswith("ARROW_DEVICE_"):
        return "ArrowDeviceType"
    if name.startswith("DLPACK_FLAG_"):
        return "uint64_t"  # bits of DLManagedTensorVersioned.flags
    return "int64_t"


# ---- layouts and values: a probe compiled and run by clang ----------------------

def probe(cc, types, integer_macros):
    lines = ["#include <stdio.h>", "#include <stddef.h>", UNIT,
             "int main(void) {",
             '  printf("pointer_size %zu\\n", sizeof(void*));',
             '  printf("long_size %zu\\n", sizeof(long));']
    for name in integer_macros:
        lines.append('  printf("macro %s %%lld\\n", (long long)(%s));' % (name, name))
    for t in types.values():
        if t["kind"] == "opaque":
            continue
        c = t["c_type"]
        lines.append('  printf("type %s %%zu %%zu\\n", sizeof(%s), _Alignof(%s));'
                     % (t["name"], c, c))
        if t["kind"] == "enum":
            lines.append('  printf("signed %s %%d\\n", (int)((%s)-1 < 0));' % (t["name"], c))
        for f in t.get("fields", []):
            member = "((%s*)0)->%s" % (c, f["name"])
            lines.append('  printf("field %s %s %%zu %%zu %%zu\\n", offsetof(%s, %s), '
                         "sizeof(%s), __alignof__(%s));"
                         % (t["name"], f["name"], c, f["name"], member, member))
    lines += ["  return 0;", "}", ""]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
        with open(src, "w") as f:
            f.write("\n".join(lines))
        run([cc, "-std=c11", "-w", "-I", INCLUDE, src, "-o", exe])
        out = run([exe])
    return out.splitlines()


def apply_probe(lines, types, integer_macros):
    layout, values = {}, {}
    for line in lines:
        words = line.split()
        if words[0] in ("pointer_size", "long_size"):
            layout[words[0]] = int(words[1])
        elif words[0] == "macro":
            values[words[1]] = int(words[2])
        elif words[0] == "type":
            types[words[1]]["size"], types[words[1]]["align"] = int(words[2]), int(words[3])
        elif words[0] == "signed":
            types[words[1]]["signed"] = words[2] == "1"
        elif words[0] == "field":
            for f in types[words[1]]["fields"]:
                if f["name"] == words[2]:
                    f["offset"], f["size"], f["align"] = map(int, words[3:6])
    model = "LP64" if layout["pointer_size"] == 8 and layout["long_size"] == 8 else (
        "LLP64" if layout["pointer_size"] == 8 else "ILP32")
    constants = [{"name": n, "value": values[n], "type": constant_type(n),
                  "header": integer_macros[n]} for n in integer_macros]
    return {"data_model": model, "pointer_size": layout["pointer_size"]}, constants


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "core", "abi"))
    args = parser.parse_args()
    cc = clang()
    with tempfile.TemporaryDirectory() as tmp:
        unit = os.path.join(tmp, "api.h")
        with open(unit, "w") as f:
            f.write(UNIT)
        ast = json.loads(run([cc, "-x", "c", "-std=c11", "-fsyntax-only", "-fparse-all-comments",
                              "-Xclang", "-ast-dump=json", "-I", INCLUDE, unit]))
        integer_macros, string_macros = macro_candidates(cc, unit)
    functions, records, typedefs, enums = declarations(ast)
    types = types_of(records, typedefs, enums)
    layout, constants = apply_probe(probe(cc, types, integer_macros), types, integer_macros)
    api = {
        "generated_by": "generators/extract_api.py",
        "source": "core/include/ferry/ferry.h",
        "headers": ["core/include/ferry/" + h for h in sorted(HEADERS)],
        "layout": layout,
        "functions": functions,
        "constants": sorted(constants + string_macros, key=lambda c: c["name"]),
        "types": [types[name] for name in sorted(types)],
    }
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "api.json"), "w") as f:
        json.dump(api, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(args.out_dir, "symbols.txt"), "w") as f:
        for name in sorted(fn["name"] for fn in functions):
            f.write(name + "\n")


if __name__ == "__main__":
    main()
