-- luarocks make (from bindings/lua) builds ferry's Lua 5.4 module against an
-- installed or built core, e.g.
--   luarocks --lua-version=5.4 make --tree=TREE ferry-scm-1.rockspec \
--     FERRY_INCDIR=/work/main/core/include FERRY_LIBDIR=/work/main/build/lib
-- LuaJIT needs no C: put bindings/lua on package.path (see README.md).
rockspec_format = "3.0"
package = "ferry"
version = "scm-1"
source = {
  url = "git+file:///work/main",
}
description = {
  summary = "Zero-copy handoff of Arrow device arrays and streams between runtimes",
  detailed = [[
Lua binding of ferry: a SWIG-generated raw layer (ferry_core) with hand-written
trampolines, and an idiomatic `ferry` module (arrays, streams, devices).]],
  license = "Apache-2.0",
}
dependencies = {
  "lua >= 5.4, < 5.5",
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
    ferry = "ferry/init.lua",
    ["ferry.cdef"] = "ferry/cdef.lua",
    ["ferry.backend.lua54"] = "ferry/backend/lua54.lua",
    ["ferry.backend.luajit"] = "ferry/backend/luajit.lua",
    ferry_core = {
      sources = { "src/generated/ferry_core_wrap.c", "src/lferry_support.c" },
      defines = { "_GNU_SOURCE" },
      incdirs = { "src", "$(FERRY_INCDIR)" },
      libdirs = { "$(FERRY_LIBDIR)" },
      libraries = { "ferry", "pthread" },
    },
  },
}
