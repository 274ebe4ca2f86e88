-- The generator of ferry's Lua raw layers, one per backend, from the API
-- description core/abi/api.json (extract_api.py), the declaration block that
-- the one C-declarations emitter writes for LuaJIT (generators/cdecl.py
-- --target luajit) and the backend contract (bindings/lua/ferry/backend/contract.lua).
-- Run by gen.sh (./dev.sh regen); writes into OUTDIR:
--   abi.lua          -> bindings/lua/ferry/abi.lua: the declarations of ferry's
--                       headers for LuaJIT's ffi.cdef, their integer constants
--                       (ARROW_*/FERRY_*/DLPACK_* macros, enumerators), and each function with the role
--                       of every parameter and of its result (below). LuaJIT's
--                       backend builds its raw layer from this list.
--   lferry_raw.c     -> bindings/lua/src/generated/: the Lua 5.4 raw layer, one C
--                       wrapper per function from the same roles, and the constants.
--   lferry_helpers.h -> bindings/lua/src/generated/: prototypes and the
--                       registration list of the C helpers the contract marks `c`.
--
-- The roles are the one statement of the raw conventions both backends follow:
--   integer      int/int32_t/ArrowDeviceType (range-checked) and int64_t: a Lua integer
--   string       const char*: a string or nil (NULL)
--   pointer      any other pointer: a lightuserdata (cdata on LuaJIT) or nil (NULL)
--   function     a function pointer typedef: a lightuserdata holding a C address
--   buffers      const void* const*: a table of pointers (false/nil for NULL)
--   error        `struct FerryError* error`: not an argument; its message is the
--                last result (nil when empty)
--   out_integer  `T* out` / `T* x_out` of an integer type: not an argument; a result
--   out_pointer  `T** out` / `T** x_out`: not an argument; a result (nil for NULL)
--   length       `int32_t* length`: not an argument; the result becomes a string of
--                that length (binary-safe metadata keys and values)
-- Results come in this order: the return value, the out-parameters in
-- parameter order, the error message. Nothing raises once the C function
-- was called; a wrong argument type raises before.
-- Usage: lua5.4 gen.lua API_JSON LUAJIT_CDEF CONTRACT OUTDIR
local api_path, cdef_path, contract_path, outdir = arg[1], arg[2], arg[3], arg[4]
assert(outdir, "usage: gen.lua API_JSON LUAJIT_CDEF CONTRACT OUTDIR")

-- Functions of ferry.h the raw layer leaves out, with the reason.
local EXCLUDED = {
  ferry_error_init = "the error buffer is hidden: messages are results",
  ferry_error_message = "the error buffer is hidden: messages are results",
  ferry_error_new = "the error buffer is hidden: messages are results",
  ferry_error_free = "the error buffer is hidden: messages are results",
  ferry_schema_metadata = "metadata is binary: ferry_schema_metadata_key/value read it",
}

local INTEGER_TYPES = { int = "int32", int32_t = "int32", ArrowDeviceType = "int32", int64_t = "int64" }

local function read_all(path)
  local file = assert(io.open(path, "r"))
  local text = file:read("a")
  file:close()
  return text
end

local function write(path, text)
  local file = assert(io.open(path, "w"))
  file:write(text)
  file:close()
end

-- ---- api.json: a small JSON reader (objects, arrays, strings, numbers, literals) --

local function decode_json(text)
  local pos = 1
  local function fail(what) error(string.format("gen.lua: %s: %s at byte %d", api_path, what, pos)) end
  local function skip() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local value
  local ESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }
  local function string_value()
    local parts = {}
    pos = pos + 1
    while true do
      local stop = text:find('["\\]', pos)
      if not stop then fail("unterminated string") end
      parts[#parts + 1] = text:sub(pos, stop - 1)
      if text:sub(stop, stop) == '"' then
        pos = stop + 1
        return table.concat(parts)
      end
      local e = text:sub(stop + 1, stop + 1)
      if e == "u" then
        parts[#parts + 1] = utf8.char(tonumber(text:sub(stop + 2, stop + 5), 16))
        pos = stop + 6
      elseif ESCAPES[e] then
        parts[#parts + 1] = ESCAPES[e]
        pos = stop + 2
      else
        fail("bad escape")
      end
    end
  end
  function value()
    skip()
    local c = text:sub(pos, pos)
    if c == "{" or c == "[" then
      local result, close = {}, c == "{" and "}" or "]"
      pos = pos + 1
      skip()
      if text:sub(pos, pos) == close then pos = pos + 1 return result end
      while true do
        if close == "}" then
          skip()
          if text:sub(pos, pos) ~= '"' then fail("object key expected") end
          local key = string_value()
          skip()
          if text:sub(pos, pos) ~= ":" then fail("':' expected") end
          pos = pos + 1
          result[key] = value()
        else
          result[#result + 1] = value()
        end
        skip()
        local sep = text:sub(pos, pos)
        pos = pos + 1
        if sep == close then return result end
        if sep ~= "," then fail("',' or '" .. close .. "' expected") end
      end
    elseif c == '"' then
      return string_value()
    end
    for _, literal in ipairs({ "true", "false", "null" }) do
      if text:sub(pos, pos + #literal - 1) == literal then
        pos = pos + #literal
        if literal == "null" then return nil end
        return literal == "true"
      end
    end
    local number = text:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if not number or number == "" then fail("value expected") end
    pos = pos + #number
    return math.tointeger(tonumber(number)) or tonumber(number)
  end
  local result = value()
  skip()
  if pos <= #text then fail("trailing text") end
  return result
end

local api = decode_json(read_all(api_path))

-- clang spells pointers "const void *const *"; the raw layer's types (and
-- the roles below) use ferry's style, "const void* const*".
local function normalise_type(text)
  return (text:gsub("^%s+", ""):gsub("%s+$", ""):gsub("%s+", " "):gsub(" %*", "*"):gsub("%*([%w_])", "* %1"))
end

-- Function pointer typedefs (FerryReleaseHook, ...).
local function_types = {}
for _, t in ipairs(api.types) do
  if t.kind == "function_pointer" then function_types[t.name] = true end
end

-- ---- roles -------------------------------------------------------------------

local function is_out_name(name) return name == "out" or name:match("_out$") ~= nil end

local function classify(p, fn_name)
  local t, n = p.type, p.name
  if t == "struct FerryError*" and n == "error" then return "error" end
  if t == "int32_t*" and n == "length" then return "length" end
  if is_out_name(n) then
    if t:match("%*%*$") then return "out_pointer" end
    local base = t:match("^([%w_]+)%*$")
    if base and INTEGER_TYPES[base] then return "out_integer" end
  end
  if t == "const void* const*" then return "buffers" end
  if INTEGER_TYPES[t] then return "integer" end
  if t == "const char*" then return "string" end
  if function_types[t] then return "function" end
  if t:match("%*$") then return "pointer" end
  error(string.format("gen.lua: no role for parameter '%s %s' of %s: add one", t, n, fn_name))
end

local function result_role(ret, fn_name)
  if ret == "void" then return "void" end
  if INTEGER_TYPES[ret] then return "integer" end
  if ret == "const char*" then return "string" end
  if ret:match("%*$") then return "pointer" end
  error(string.format("gen.lua: no role for the result '%s' of %s: add one", ret, fn_name))
end

local functions, excluded = {}, {}
for _, fn in ipairs(api.functions) do
  local entry = { name = fn.name, ret = normalise_type(fn["return"]), params = {} }
  for _, p in ipairs(fn.params) do
    entry.params[#entry.params + 1] = { type = normalise_type(p.type), name = p.name }
  end
  if EXCLUDED[fn.name] then
    excluded[#excluded + 1] = { name = fn.name, reason = EXCLUDED[fn.name] }
  elseif fn.name:match("^ferry_") then
    local has_length = false
    for _, p in ipairs(entry.params) do
      p.role = classify(p, fn.name)
      if p.role == "length" then has_length = true end
    end
    entry.result = has_length and "lstring" or result_role(entry.ret, fn.name)
    functions[#functions + 1] = entry
  end
end
for name in pairs(EXCLUDED) do
  local found = false
  for _, e in ipairs(excluded) do found = found or e.name == name end
  assert(found, "gen.lua: excluded function " .. name .. " is not in ferry.h any more")
end

-- ---- constants ---------------------------------------------------------------

-- Every integer constant of ferry's headers (ARROW_*, FERRY_*, DLPACK_*
-- macros) and every enumerator of their enums (DLPack's kDL* device types
-- and type codes).
local constants = {}
for _, c in ipairs(api.constants) do
  if c.type ~= "string" then constants[#constants + 1] = { name = c.name, value = c.value } end
end
for _, t in ipairs(api.types) do
  for _, e in ipairs(t.enumerators or {}) do
    constants[#constants + 1] = { name = e.name, value = e.value }
  end
end
table.sort(constants, function(a, b) return a.name < b.name end)

-- ---- abi.lua -----------------------------------------------------------------

local HEADER = "generated by generators/lua/gen.sh from core/abi/api.json. DO NOT EDIT.\n"
local function emitter()
  local out = {}
  return out, function(fmt, ...) out[#out + 1] = select("#", ...) > 0 and fmt:format(...) or fmt end
end

do
  local out, emit = emitter()
  emit("-- @%s", HEADER)
  emit("-- Regenerate with ./dev.sh regen; the test command fails when it is stale.\n")
  emit("-- Roles of parameters and results: generators/lua/gen.lua.\n")
  emit("return {\n  cdef = [[\n")
  emit("%s", read_all(cdef_path))
  emit("]],\n  constants = {\n")
  for _, c in ipairs(constants) do emit("    %s = %d,\n", c.name, c.value) end
  emit("  },\n  functions = {\n")
  for _, fn in ipairs(functions) do
    local params = {}
    for _, p in ipairs(fn.params) do
      params[#params + 1] = string.format("{ type = %q, name = %q, role = %q }", p.type, p.name, p.role)
    end
    emit("    { name = %q, ret = %q, result = %q,\n      params = { %s } },\n", fn.name, fn.ret,
         fn.result, table.concat(params, ", "))
  end
  emit("  },\n  excluded = {\n")
  for _, e in ipairs(excluded) do emit("    %s = %q,\n", e.name, e.reason) end
  emit("  },\n}\n")
  write(outdir .. "/abi.lua", table.concat(out))
end

-- ---- lferry_raw.c ------------------------------------------------------------

do
  local out, emit = emitter()
  emit("/* @%s", HEADER)
  emit(" * The Lua 5.4 raw layer of ferry: one wrapper per function of ferry.h, with\n")
  emit(" * the roles of generators/lua/gen.lua (the same list LuaJIT's backend reads\n")
  emit(" * from ferry/abi.lua), and the header's integer constants. */\n")
  emit("#include \"lferry_support.h\"\n\n#if LUA_VERSION_NUM >= 504\n\n#include \"ferry/dlpack_abi.h\"\n")
  for _, fn in ipairs(functions) do
    local sig = {}
    for _, p in ipairs(fn.params) do sig[#sig + 1] = p.type .. " " .. p.name end
    emit("\n/* %s %s(%s) */\n", fn.ret, fn.name, table.concat(sig, ", "))
    emit("static int raw_%s(lua_State* L) {\n", fn.name)
    local args, index, pushes, has_error = {}, 0, {}, false
    for i, p in ipairs(fn.params) do
      local v = "a" .. i
      local role = p.role
      if role == "integer" then
        index = index + 1
        local check = INTEGER_TYPES[p.type] == "int32" and "lferry_check_int32" or "lferry_check_integer"
        emit("  %s %s = (%s)%s(L, %d);\n", p.type, v, p.type, check, index)
        args[#args + 1] = v
      elseif role == "string" then
        index = index + 1
        emit("  const char* %s = lferry_check_string(L, %d);\n", v, index)
        args[#args + 1] = v
      elseif role == "pointer" then
        index = index + 1
        emit("  %s %s = (%s)lferry_check_pointer(L, %d);\n", p.type, v, p.type, index)
        args[#args + 1] = v
      elseif role == "function" then
        index = index + 1
        emit("  %s %s = (%s)lferry_check_function(L, %d);\n", p.type, v, p.type, index)
        args[#args + 1] = v
      elseif role == "buffers" then
        index = index + 1
        emit("  void* scratch%d[16];\n", i)
        emit("  %s %s = (%s)lferry_check_buffer_list(L, %d, scratch%d, 16);\n", p.type, v, p.type,
             index, i)
        args[#args + 1] = v
      elseif role == "error" then
        has_error = true
        emit("  struct FerryError %s;\n  %s.message[0] = '\\0';\n", v, v)
        args[#args + 1] = "&" .. v
      elseif role == "out_integer" then
        local base = p.type:sub(1, -2)
        emit("  %s %s = 0;\n", base, v)
        args[#args + 1] = "&" .. v
        pushes[#pushes + 1] = string.format("  lua_pushinteger(L, (lua_Integer)%s);\n", v)
      elseif role == "out_pointer" then
        local base = p.type:sub(1, -2)
        emit("  %s %s = NULL;\n", base, v)
        args[#args + 1] = "&" .. v
        pushes[#pushes + 1] = string.format("  lferry_push_pointer(L, (const void*)%s);\n", v)
      elseif role == "length" then
        emit("  int32_t %s = 0;\n", v)
        args[#args + 1] = "&" .. v
        fn.length_var = v
      else
        error("gen.lua: no C for role " .. role)
      end
    end
    local call = string.format("%s(%s)", fn.name, table.concat(args, ", "))
    local n = 0
    if fn.result == "void" then
      emit("  %s;\n", call)
    else
      emit("  %s r = %s;\n", fn.ret, call)
      n = 1
      if fn.result == "integer" then
        emit("  lua_pushinteger(L, (lua_Integer)r);\n")
      elseif fn.result == "string" then
        emit("  lferry_push_string(L, r);\n")
      elseif fn.result == "pointer" then
        emit("  lferry_push_pointer(L, (const void*)r);\n")
      elseif fn.result == "lstring" then
        emit("  if (r) lua_pushlstring(L, r, (size_t)%s); else lua_pushnil(L);\n", fn.length_var)
      end
    end
    for _, push in ipairs(pushes) do
      emit(push)
      n = n + 1
    end
    if has_error then
      emit("  lferry_push_message(L, &a%d);\n", (function()
        for i, p in ipairs(fn.params) do if p.role == "error" then return i end end
      end)())
      n = n + 1
    end
    emit("  return %d;\n}\n", n)
  end
  emit("\nstatic const luaL_Reg raw_functions[] = {\n")
  for _, fn in ipairs(functions) do emit("    {\"%s\", raw_%s},\n", fn.name, fn.name) end
  emit("    {NULL, NULL}};\n\n")
  emit("void lferry_raw_register(lua_State* L) {\n  luaL_setfuncs(L, raw_functions, 0);\n")
  for _, c in ipairs(constants) do
    emit("  lua_pushinteger(L, (lua_Integer)(%s));\n  lua_setfield(L, -2, \"%s\");\n", c.name, c.name)
  end
  emit("}\n\n#endif  /* LUA_VERSION_NUM >= 504 */\n")
  write(outdir .. "/lferry_raw.c", table.concat(out))
end

-- ---- lferry_helpers.h --------------------------------------------------------

do
  local contract = dofile(contract_path)
  local out, emit = emitter()
  emit("/* @%s", HEADER:gsub("core/abi/api.json", "core/abi/api.json and\n * bindings/lua/ferry/backend/contract.lua"))
  emit(" * The C helpers of the Lua 5.4 backend (those the contract marks `c`): each is\n")
  emit(" * defined in src/lferry_support.c and registered as ferry_core.support.<name>. */\n")
  emit("#ifndef FERRY_LUA_LFERRY_HELPERS_H\n#define FERRY_LUA_LFERRY_HELPERS_H\n\n")
  local names = {}
  for _, f in ipairs(contract.functions) do
    if f.c then
      names[#names + 1] = f.name
      emit("/* %s%s: %s */\nLFERRY_INTERNAL int lferry_helper_%s(lua_State* L);\n", f.name,
           f.signature, f.doc, f.name)
    end
  end
  emit("\n/* The registration list (luaL_Reg initialisers). */\n#define LFERRY_HELPERS \\\n")
  for _, name in ipairs(names) do emit("  {\"%s\", lferry_helper_%s}, \\\n", name, name) end
  emit("  {NULL, NULL}\n\n#endif  // FERRY_LUA_LFERRY_HELPERS_H\n")
  write(outdir .. "/lferry_helpers.h", table.concat(out))
end
