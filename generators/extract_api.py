#!/usr/bin/env python3
"""Extracts ferry's public API from core/include/ferry/ferry.h with clang.

The header is the one source of truth. This script asks clang (not a regex)
for every function declared in the public headers and every integer macro,
and writes:
  core/abi/api.json     functions (name, return type, parameters, doc comment)
                        and constants (name, value, C type), for generators
  core/abi/symbols.txt  the exported symbol list the library must match

Usage: extract_api.py [--out-dir DIR]   (default: core/abi of the repository)
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = os.path.join(ROOT, "core", "include")
HEADERS = ("ferry.h", "arrow_c_device_abi.h", "ferry_version.h")


def clang():
    for name in ("clang-14", "clang"):
        try:
            subprocess.run([name, "--version"], capture_output=True, check=True)
            return name
        except (OSError, subprocess.CalledProcessError):
            continue
    sys.exit("extract_api.py: clang is required (apt-get install clang-14)")


def public_header(loc):
    path = loc.get("file") or loc.get("includedFrom", {}).get("file", "")
    return os.path.basename(path) in HEADERS


def functions(cc):
    header = os.path.join(INCLUDE, "ferry", "ferry.h")
    out = subprocess.run(
        [cc, "-x", "c", "-std=c11", "-fsyntax-only", "-fparse-all-comments",
         "-Xclang", "-ast-dump=json", "-I", INCLUDE, header],
        capture_output=True, text=True, check=True).stdout
    ast = json.loads(out)
    result = []
    current_file = ""
    for node in ast.get("inner", []):
        # clang only names the file when it changes; track it across nodes.
        loc = node.get("loc", {})
        if "file" in loc:
            current_file = loc["file"]
        if node.get("kind") != "FunctionDecl":
            continue
        if os.path.basename(current_file) not in HEADERS:
            continue
        qual = node["type"]["qualType"]
        ret = qual.split("(", 1)[0].strip()
        params = []
        doc = []
        for child in node.get("inner", []):
            if child.get("kind") == "ParmVarDecl":
                params.append({"name": child.get("name", ""),
                               "type": child["type"]["qualType"]})
            elif child.get("kind") == "FullComment":
                doc.append(comment_text(child))
        result.append({"name": node["name"], "return": ret, "params": params,
                       "doc": " ".join(d for d in doc if d).strip()})
    return result


def comment_text(node):
    if node.get("kind") == "TextComment":
        return node.get("text", "").strip()
    return " ".join(t for t in (comment_text(c) for c in node.get("inner", [])) if t)


def constants(cc):
    header = os.path.join(INCLUDE, "ferry", "ferry.h")
    out = subprocess.run([cc, "-x", "c", "-std=c11", "-E", "-dM", "-I", INCLUDE, header],
                         capture_output=True, text=True, check=True).stdout
    result = []
    for line in out.splitlines():
        m = re.match(r"#define ((?:FERRY|ARROW)_[A-Z0-9_]+) (.+)$", line)
        if not m:
            continue
        name, value = m.group(1), m.group(2).strip()
        if name.startswith(("FERRY_FERRY_", "FERRY_ARROW_")) or name == "FERRY_EXPORT":
            continue  # include guards and the visibility macro
        if re.fullmatch(r"-?\d+|0x[0-9A-Fa-f]+", value):
            ctype = "ArrowDeviceType" if name.startswith("ARROW_DEVICE_") else "int64_t"
            if name.startswith("ARROW_FLAG_"):
                ctype = "int64_t"
            result.append({"name": name, "value": int(value, 0), "type": ctype})
        elif re.fullmatch(r'"[^"]*"', value):
            result.append({"name": name, "value": value[1:-1], "type": "string"})
        elif name.startswith("ARROW_C_"):
            continue  # canonical guards
    result.sort(key=lambda c: c["name"])
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "core", "abi"))
    args = parser.parse_args()
    cc = clang()
    funcs = functions(cc)
    api = {
        "generated_by": "generators/extract_api.py",
        "source": "core/include/ferry/ferry.h",
        "functions": funcs,
        "constants": constants(cc),
    }
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "api.json"), "w") as f:
        json.dump(api, f, indent=1, sort_keys=False)
        f.write("\n")
    with open(os.path.join(args.out_dir, "symbols.txt"), "w") as f:
        for name in sorted(fn["name"] for fn in funcs):
            f.write(name + "\n")


if __name__ == "__main__":
    main()
