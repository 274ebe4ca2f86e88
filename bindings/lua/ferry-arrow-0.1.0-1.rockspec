-- The LuaRocks package of ferry's Lua binding: rock `ferry-arrow`, module
-- `ferry`, for Lua 5.4 and LuaJIT. It needs libferry (the C core) installed
-- where LuaRocks looks (/usr/local, /usr), or FERRY_DIR=PREFIX on the
-- luarocks command line (bindings/lua/README.md, "Install").
--   luarocks --lua-version=5.4 make bindings/lua/ferry-arrow-0.1.0-1.rockspec   (from a checkout)
--   luarocks --lua-version=5.1 make bindings/lua/ferry-arrow-0.1.0-1.rockspec   (for LuaJIT)
-- Paths below are relative to the repository's root, as fetched from source.url.
rockspec_format = "3.0"
package = "ferry-arrow"
version = "0.1.0-1"
source = {
  url = "git+https://github.com/ferryarrow/ferry",
  tag = "v0.1.0",
}
description = {
  summary = "Zero-copy handoff of Apache Arrow arrays and streams on the CPU, CUDA or ROCm between runtimes",
  detailed = [[
ferry hands Apache Arrow data between the runtimes of one process (C, Rust, Go,
Java, Python, Lua) without copying, through the Arrow C Device Data Interface
(ArrowDeviceArray, ArrowDeviceArrayStream): on the CPU, CUDA, ROCm or ferry's
simulated device. This rock is the Lua binding, module `ferry`: import and
export of arrays and streams with validation and bounds-checked reads,
consumer-stream handoff, moves and copies between devices, and DLPack, on
Lua 5.4 (a C module over libferry) and LuaJIT (the FFI over libferry).]],
  homepage = "https://github.com/ferryarrow/ferry",
  issues_url = "https://github.com/ferryarrow/ferry/issues",
  license = "Apache-2.0",
  maintainer = "the ferry developers",
  labels = { "arrow", "gpu", "cuda", "rocm", "dlpack", "ffi", "zero-copy" },
}
-- The Lua versions tested (bindings/lua/test.sh): 5.4 and LuaJIT, which
-- LuaRocks sees as Lua 5.1 (so PUC Lua 5.1 is admitted too: LuaRocks cannot
-- tell them apart). 5.2 and 5.3 were never tested and are refused.
-- ferry_core is the Lua 5.4 module; built for LuaJIT it only tells the FFI
-- backend where libferry is.
dependencies = {
  "lua >= 5.1, < 5.5, ~= 5.2, ~= 5.3",
}
external_dependencies = {
  FERRY = {
    header = "ferry/ferry.h",
    library = "ferry",
  },
}
build = {
  type = "builtin",
  modules = {
    ferry = "bindings/lua/ferry/init.lua",
    ["ferry.devices"] = "bindings/lua/ferry/devices.lua",
    ["ferry.schemas"] = "bindings/lua/ferry/schemas.lua",
    ["ferry.values"] = "bindings/lua/ferry/values.lua",
    ["ferry.arrays"] = "bindings/lua/ferry/arrays.lua",
    ["ferry.streams"] = "bindings/lua/ferry/streams.lua",
    ["ferry.export"] = "bindings/lua/ferry/export.lua",
    ["ferry.async"] = "bindings/lua/ferry/async.lua",
    ["ferry.abi"] = "bindings/lua/ferry/abi.lua",
    ["ferry.backend.contract"] = "bindings/lua/ferry/backend/contract.lua",
    ["ferry.backend.lua54"] = "bindings/lua/ferry/backend/lua54.lua",
    ["ferry.backend.luajit"] = "bindings/lua/ferry/backend/luajit.lua",
    ferry_core = {
      sources = { "bindings/lua/src/lferry_support.c", "bindings/lua/src/generated/lferry_raw.c" },
      defines = { "_GNU_SOURCE" },
      incdirs = { "bindings/lua/src", "$(FERRY_INCDIR)" },
      libdirs = { "$(FERRY_LIBDIR)" },
      libraries = { "ferry", "pthread" },
    },
  },
  copy_directories = {},
}
