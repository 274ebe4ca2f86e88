-- ferry/export.lua, part of the module `ferry`: producing: Lua data and type specs ->
-- exported arrays and streams (ferry.array, ferry.export_array_to, ferry.stream ...).
-- ferry/init.lua loads the parts in order; what they share goes through the table
-- ferry/init.lua puts at package.loaded["ferry.internal"] while they load.
local I = require("ferry.internal")
local ferry, raw, backend = I.ferry, I.raw, I.backend
local check, constants, CPU, DeviceArray = I.check, I.constants, I.CPU, I.DeviceArray
local EINVAL, ENOMEM, FIXED, new_device_array = I.EINVAL, I.ENOMEM, I.FIXED, I.new_device_array
local new_stream, NULLABLE, raise = I.new_stream, I.NULLABLE, I.raise

-- ---- producing: Lua data -> exported arrays -----------------------------------

-- A node describes one array and its schema:
--   { format=, name=, flags=, metadata={{k,v},...}, length=, null_count=,
--     offset=, buffers = { buf, ... } (n_buffers = buffers.n or #buffers),
--     children = { node, ... }, dictionary = node }
-- and buf is nil/false (NULL), a Lua string (zero-copy: its bytes are used
-- as they are and the string is anchored until release), or a packed table
-- { kind = "i32"|..."f64"|"bits", values = {...}, n = count } copied once
-- into C memory (Lua tables must be packed once; after that nothing is
-- copied), or { pointer = p, size = n } for memory the caller keeps alive.

-- Buffers of a node on their way into an export (`k` owns what is made):
-- host data is packed once, and copied once to `device` (when not the CPU)
-- on `stream` (the caller's native stream, or the keeper's own).
local function materialise_buffers(k, node, device, cpu, stream)
  local pointers, n = {}, node.buffers and (node.buffers.n or #node.buffers) or 0
  for i = 1, n do
    local buf = node.buffers[i]
    local ptr, size, on_device
    if buf == nil or buf == false then
      ptr = nil
    elseif type(buf) == "string" then
      ptr, size = backend.keeper_string(k, buf)
    elseif type(buf) == "table" and buf.kind then
      ptr, size = backend.keeper_pack(k, buf.kind, buf.values, buf.n or #buf.values)
    elseif type(buf) == "table" and buf.pointer ~= nil then
      ptr, size = buf.pointer, buf.size
    elseif type(buf) == "table" and buf.device_pointer ~= nil then
      if cpu then
        raise("ferry.export", EINVAL, "buffer " .. (i - 1) .. " is device memory, but the export is on the CPU")
      end
      ptr, on_device = buf.device_pointer, true
      if buf.owned then backend.keeper_adopt(k, "memory", device.ptr, ptr, buf.destroy) end
    else
      raise("ferry.export", EINVAL, "buffer " .. (i - 1) .. " of " .. tostring(node.format)
            .. " must be nil, a string, a packed table, { pointer = } or { device_pointer = }")
    end
    if ptr ~= nil and device and not cpu and not on_device then
      if size == nil then
        raise("ferry.export", EINVAL, "buffer " .. (i - 1) .. " needs a size to go to a device")
      end
      local moved, code, message = backend.keeper_to_device(k, ptr, size, device.ptr, stream)
      if moved == nil then raise("ferry.export", code, message) end
      ptr = moved
    end
    pointers[i] = ptr or false
  end
  node._pointers, node._n_buffers = pointers, n
  for _, child in ipairs(node.children or {}) do materialise_buffers(k, child, device, cpu, stream) end
  if node.dictionary then materialise_buffers(k, node.dictionary, device, cpu, stream) end
end

-- Initialises `ptr` (released) from `node` with the given hook, then its
-- children and dictionary (no hooks: the root's hook frees everything).
local function fill_array(ptr, node, hook, user_data)
  local children = node.children
  local code, message = raw.ferry_array_init(ptr, node.length, node.null_count or 0,
                                             node.offset or 0, node._n_buffers, node._pointers,
                                             children and #children or 0, hook, user_data)
  return code, message
end

local no_children = {}

-- Fills the children and the dictionary of the struct at `ptr` from `node`
-- with fill(child_ptr, child_node), finding a child's struct with
-- child_of(ptr, i) and making the dictionary's with allocate_dictionary(ptr)
-- (the raw functions of the schema or the array tree).
local function fill_below(ptr, node, fill, child_of, allocate_dictionary)
  for i, child in ipairs(node.children or no_children) do
    local code, message = fill(child_of(ptr, i - 1), child)
    if code ~= 0 then return code, message end
  end
  if node.dictionary then
    local code, dictionary, message = allocate_dictionary(ptr)
    if code ~= 0 then return code, message end
    return fill(dictionary, node.dictionary)
  end
  return 0
end

local fill_array_node

local function fill_array_children(ptr, node)
  return fill_below(ptr, node, fill_array_node, raw.ferry_array_child,
                    raw.ferry_array_allocate_dictionary)
end

-- A node below the root: no hook.
function fill_array_node(ptr, node)
  local code, message = fill_array(ptr, node, nil, nil)
  if code == 0 then code, message = fill_array_children(ptr, node) end
  return code, message
end

local function fill_schema(ptr, node)
  local children = node.children or no_children
  local code, message = raw.ferry_schema_init(ptr, node.format, node.name,
                                              node.flags or NULLABLE, #children)
  if code ~= 0 then return code, message end
  for _, pair in ipairs(node.metadata or no_children) do
    code, message = raw.ferry_schema_add_metadata(ptr, pair[1], pair[2])
    if code ~= 0 then return code, message end
  end
  return fill_below(ptr, node, fill_schema, raw.ferry_schema_child,
                    raw.ferry_schema_allocate_dictionary)
end

-- ---- type specs -> nodes ------------------------------------------------------------

local formats = {
  int8 = "c", uint8 = "C", int16 = "s", uint16 = "S", int32 = "i", uint32 = "I",
  int64 = "l", uint64 = "L", float32 = "f", float64 = "g", bool = "b",
  utf8 = "u", binary = "z", list = "+l", struct = "+s",
}
ferry.formats = formats

local function spec_length(spec)
  local n = spec.length or (spec.values and (spec.values.n or #spec.values)) or
            (spec.indices and (spec.indices.n or #spec.indices)) or 0
  if n < 0 then raise("ferry.array", EINVAL, "negative length " .. n) end
  return n
end

-- validity bitmap (physical, offset slots first) and null count
local function validity_of(spec, values, n, offset)
  local bits, nulls = {}, 0
  for i = 1, n do
    local valid
    if spec.validity then valid = spec.validity[i] and true or false
    else valid = values == nil or values[i] ~= nil end
    bits[offset + i] = valid
    if not valid then nulls = nulls + 1 end
  end
  if nulls == 0 and not spec.validity then return nil, 0 end
  return { kind = "bits", values = bits, n = offset + n }, nulls
end

local function shifted(values, n, offset, filler)
  if offset == 0 then return values end
  local out = {}
  for i = 1, offset do out[i] = filler end
  for i = 1, n do out[offset + i] = values[i] end
  return out
end

local to_node

local function variable_size_node(spec, n, offset, format)
  local offsets, pieces, position = { 0 }, {}, 0
  for i = 1, offset do offsets[#offsets + 1] = 0 end
  for i = 1, n do
    local v = spec.values[i]
    if v ~= nil then
      if type(v) ~= "string" then
        raise("ferry.array", EINVAL, string.format("element %d of %s must be a string, got %s",
              i - 1, spec.type, type(v)))
      end
      pieces[#pieces + 1] = v
      position = position + #v
    end
    offsets[#offsets + 1] = position
  end
  if position > 2147483647 then raise("ferry.array", EINVAL, "more than 2 GiB of string data") end
  local validity, nulls = validity_of(spec, spec.values, n, offset)
  return {
    format = format, length = n, null_count = nulls, offset = offset,
    buffers = { validity or false, { kind = "i32", values = offsets, n = offset + n + 1 },
                table.concat(pieces), n = 3 },
  }
end

to_node = function(spec)
  if spec.format then return spec end -- already a node
  local type_name = spec.type
  local format = formats[type_name]
  local n, offset = spec_length(spec), spec.offset or 0
  local node
  if type_name == "utf8" or type_name == "binary" then
    node = variable_size_node(spec, n, offset, format)
  elseif type_name == "list" then
    local offsets, flat, position = { 0 }, {}, 0
    for i = 1, offset do offsets[#offsets + 1] = 0 end
    for i = 1, n do
      local list = spec.values[i]
      if list ~= nil then
        for j = 1, (list.n or #list) do flat[position + j] = list[j] end
        position = position + (list.n or #list)
      end
      offsets[#offsets + 1] = position
    end
    local item = {}
    for key, value in pairs(spec.item or { type = "int32" }) do item[key] = value end
    item.values, item.length, item.offset, item.name = flat, position, 0, item.name or "item"
    local validity, nulls = validity_of(spec, spec.values, n, offset)
    node = { format = "+l", length = n, null_count = nulls, offset = offset,
             buffers = { validity or false, { kind = "i32", values = offsets, n = offset + n + 1 }, n = 2 },
             children = { to_node(item) } }
  elseif type_name == "struct" then
    local children = {}
    for i, field in ipairs(spec.fields or {}) do
      local child = {}
      for key, value in pairs(field) do child[key] = value end
      child.length = n + offset
      child.values = shifted(field.values or {}, n, offset, nil)
      child.offset = 0
      child.name = field.name or ("f" .. (i - 1))
      children[i] = to_node(child)
    end
    local validity, nulls = validity_of(spec, nil, n, offset)
    node = { format = "+s", length = n, null_count = nulls, offset = offset,
             buffers = { validity or false, n = 1 }, children = children }
  elseif type_name == "dictionary" then
    local index_type = spec.index_type or "int32"
    local kind = FIXED[formats[index_type] or ""]
    if not kind or kind == "bits" then
      raise("ferry.array", EINVAL, "bad dictionary index type " .. tostring(index_type))
    end
    local validity, nulls = validity_of(spec, spec.indices, n, offset)
    node = { format = formats[index_type], length = n, null_count = nulls, offset = offset,
             buffers = { validity or false,
                         { kind = kind, values = shifted(spec.indices, n, offset, nil), n = offset + n },
                         n = 2 },
             dictionary = to_node(spec.dictionary) }
  elseif format then
    local kind = FIXED[format]
    local values = spec.values or {}
    local validity, nulls = validity_of(spec, values, n, offset)
    node = { format = format, length = n, null_count = nulls, offset = offset,
             buffers = { validity or false, { kind = kind, values = shifted(values, n, offset, nil),
                                              n = offset + n }, n = 2 } }
  else
    raise("ferry.array", EINVAL, "unknown type " .. tostring(type_name))
  end
  node.name = spec.name or (spec.name == nil and type_name) or nil
  node.flags = spec.nullable == false and 0 or NULLABLE
  node.metadata = spec.metadata
  return node
end
ferry.node = to_node

-- ---- export entry points ------------------------------------------------------------

local function resolve_device(opts)
  local kind = opts.device or "cpu"
  if kind == "cpu" or kind == CPU then return nil, true end
  local device = ferry.device(kind, opts.device_id)
  return device, device.type == CPU
end

--- export_schema_to(spec_or_node, out): fills a released ArrowSchema*.
function ferry.export_schema_to(spec, out)
  local code, message = fill_schema(out, to_node(spec))
  if code ~= 0 then
    raw.ferry_schema_release(out)
    raise("ferry.export_schema", code, message)
  end
end

--- export_array_to(spec_or_node, out, opts): fills a released
--- ArrowDeviceArray* (opts.device "cpu" default | "sim" | ..., opts.device_id).
--- Off the CPU the buffers are copied once on a producer stream and the export
--- carries a sync event recorded after the copies. Everything the export owns
--- is freed by one release hook, exactly once, whatever fails.
-- True when every buffer of the tree is NULL or caller-kept memory on the CPU.
local function borrows_only(node)
  local buffers = node.buffers
  if buffers then
    for i = 1, buffers.n or #buffers do
      local buf = buffers[i]
      if buf and not (type(buf) == "table" and buf.pointer ~= nil) then return false end
    end
  end
  local children = node.children
  if children then
    for i = 1, #children do
      if not borrows_only(children[i]) then return false end
    end
  end
  return node.dictionary == nil or borrows_only(node.dictionary)
end

local raw_array_init, raw_device_array_init = raw.ferry_array_init, raw.ferry_device_array_init
local export_flat = backend.export_flat

-- Scratch ArrowArray structs, one per nesting depth (producers may nest):
-- every export moves its scratch array out or releases it before returning.
local scratch, scratch_depth = {}, 0

-- Fast path for exports that own nothing: no keeper, no hook, and no
-- garbage when a producer returns the same node again (its pointer list is
-- rewritten in place).
local function export_borrowed(node, out)
  local buffers = node.buffers
  local n = buffers and (buffers.n or #buffers) or 0
  local pointers = node._pointers or {}
  for i = 1, n do
    local buf = buffers[i]
    pointers[i] = buf and buf.pointer or false
  end
  for i = n + 1, #pointers do pointers[i] = nil end
  node._pointers, node._n_buffers = pointers, n
  local children = node.children
  if children then
    for i = 1, #children do export_borrowed(children[i], nil) end
  end
  if node.dictionary then export_borrowed(node.dictionary, nil) end
  if out == nil then return end
  if not children and not node.dictionary then
    -- the common producer case: one call, no scratch struct
    local code, message = export_flat(out, node.length, node.null_count or 0, node.offset or 0,
                                      pointers, n)
    if code ~= 0 then raise("ferry.export", code, message) end
    return
  end
  scratch_depth = scratch_depth + 1
  local tmp = scratch[scratch_depth]
  if not tmp then
    tmp = raw.ferry_array_new()
    scratch[scratch_depth] = tmp
  end
  local code, message = raw_array_init(tmp, node.length, node.null_count or 0, node.offset or 0,
                                       n, pointers, children and #children or 0, nil, nil)
  if code == 0 and (children or node.dictionary) then
    code, message = fill_array_children(tmp, node)
  end
  if code == 0 then code, message = raw_device_array_init(out, tmp, CPU, -1, nil, nil, nil) end
  -- On success tmp was moved into out; otherwise it may hold a partial tree.
  if code ~= 0 then raw.ferry_array_release(tmp) end
  scratch_depth = scratch_depth - 1
  if code ~= 0 then raise("ferry.export", code, message) end
end

local SYNC_POLICIES = { record_event = constants.FERRY_SYNC_RECORD_EVENT,
                        synchronize = constants.FERRY_SYNC_SYNCHRONIZE }

-- The caller's own sync event: checked, and owned by the export (keeper
-- `k`) when event_destroy says how to destroy it.
local function adopt_event(k, device, opts)
  if backend.keeper_device_stream(k) ~= nil then
    raise("ferry.export", EINVAL, "with sync_event every buffer must already be on the device " ..
          "({ device_pointer = }): ferry would copy on a stream the event does not cover")
  end
  local destroy = opts.event_destroy
  if destroy ~= nil then
    if destroy ~= "ferry" and type(destroy) ~= "function" then
      raise("ferry.export", EINVAL, "event_destroy must be \"ferry\" or a function, got " .. tostring(destroy))
    end
    backend.keeper_adopt(k, "event", device.ptr, opts.sync_event, destroy ~= "ferry" and destroy or nil)
  end
end

-- The export's sync: a producer stream whose end ferry records an event
-- at (or synchronizes: sync = "synchronize"), or the caller's own event.
local function init_on_device(out, tmp, device, stream, opts)
  local event = opts.sync_event
  if event ~= nil then
    return raw.ferry_device_array_init(out, tmp, device.type, device.id, event, nil, nil)
  end
  local policy = SYNC_POLICIES[opts.sync or "record_event"]
  if not policy then
    raise("ferry.export", EINVAL, "sync must be \"record_event\" or \"synchronize\", got " ..
          tostring(opts.sync))
  end
  return raw.ferry_device_array_init_async(out, tmp, device.ptr, stream, policy)
end

function ferry.export_array_to(spec, out, opts)
  opts = opts or spec
  local node = spec.format and spec or to_node(spec)
  if (opts.device == nil or opts.device == "cpu") and borrows_only(node) then
    return export_borrowed(node, out)
  end
  local device, cpu = resolve_device(opts)
  local k = backend.keeper_new()
  local ok, err = pcall(materialise_buffers, k, node, device, cpu, opts.stream)
  if ok and not cpu and opts.sync_event ~= nil then ok, err = pcall(adopt_event, k, device, opts) end
  if not ok then
    backend.keeper_free(k)
    error(err, 2)
  end
  local stream = opts.stream or backend.keeper_device_stream(k)
  local tmp = raw.ferry_array_new()
  if not tmp then
    backend.keeper_free(k)
    raise("ferry.export", ENOMEM, "out of memory")
  end
  local code, message = fill_array(tmp, node, backend.keeper_hook(), backend.keeper_pointer(k))
  if code ~= 0 then
    backend.keeper_free(k) -- the hook was not taken
  else
    backend.keeper_disown(k)
    code, message = fill_array_children(tmp, node)
    if code == 0 then
      if cpu then
        code, message = raw.ferry_device_array_init(out, tmp, CPU, -1, nil, nil, nil)
      else
        ok, code, message = pcall(init_on_device, out, tmp, device, stream, opts)
        if not ok then
          raw.ferry_array_free(tmp) -- runs the hook: the keeper goes
          error(code, 2)
        end
      end
    end
  end
  raw.ferry_array_free(tmp) -- releases it (running the hook) unless it was moved
  if code ~= 0 then raise("ferry.export", code, message) end
end

--- ferry.array(spec) -> DeviceArray owned by Lua, built from Lua values:
---   { type = "int32", values = { 1, 2, nil, 4 }, length = 4, offset = 0,
---     device = "cpu" | "sim", name = "x", metadata = { { "k", "v" } } }
--- types: int8..uint64, float32, float64, bool, utf8, binary, list (item =),
--- struct (fields =), dictionary (indices =, dictionary =), or a raw node.
function ferry.array(spec)
  local node = to_node(spec)
  local arr = new_device_array(false, false)
  local ok, err = pcall(ferry.export_schema_to, node, arr._sptr)
  if ok then ok, err = pcall(ferry.export_array_to, node, arr._ptr, spec) end
  if not ok then
    arr:release()
    error(err, 2)
  end
  return arr
end

--- export_array(spec, array_out, schema_out, opts): fills consumer-allocated
--- structs (the array first) from Lua values in one go (opts defaults to
--- spec: device=...).
function ferry.export_array(spec, array_out, schema_out, opts)
  local node = to_node(spec)
  ferry.export_schema_to(node, schema_out)
  local ok, err = pcall(ferry.export_array_to, node, array_out, opts or spec)
  if not ok then
    raw.ferry_schema_release(schema_out)
    error(err, 2)
  end
end


-- ---- producing streams ---------------------------------------------------------------

--- export_stream_to(out, schema, producer, opts): fills a released
--- ArrowDeviceArrayStream* whose callbacks run Lua:
---   schema    a spec/node, or a function returning one (or nil, message[, code])
---   producer  called per get_next: returns a spec/node or DeviceArray for the
---             next batch, nil at the end, or nil, message[, code] on failure;
---             raising gives EIO with the traceback.
---   opts      { device = "cpu" | "sim" | "cuda" | ..., device_id =, stream =, sync = }
---             (as for ferry.export_array; every batch is exported with them)
function ferry.export_stream_to(out, schema, producer, opts)
  opts = opts or {}
  local device, cpu = resolve_device(opts)
  local device_type = cpu and CPU or device.type
  local function get_schema(schema_out)
    local spec, message, code = schema, nil, nil
    if type(schema) == "function" then spec, message, code = schema() end
    if spec == nil then return nil, message or "no schema", code end
    local ok, err = pcall(ferry.export_schema_to, spec, schema_out)
    if not ok then return nil, err end
  end
  -- Per batch: no table and no extra protected call. An error raised by the
  -- export (a ferry.Error) reaches the trampoline, which keeps its code and
  -- message; anything else becomes EIO with a traceback.
  local spec_opts = { device = opts.device, device_id = opts.device_id, stream = opts.stream,
                      sync = opts.sync }
  local export_array_to = ferry.export_array_to
  local function get_next(array_out)
    local item, message, code = producer()
    if item == nil then
      if message ~= nil then return nil, message, code end
      return -- end of stream: array_out stays released
    end
    if getmetatable(item) == DeviceArray then
      item:export(array_out)
    else
      export_array_to(item, array_out, spec_opts)
    end
  end
  local code, message = backend.stream_export(out, device_type, get_schema, get_next)
  check("ferry.export_stream", code, message)
end

--- ferry.stream(schema, producer, opts) -> DeviceStream backed by Lua.
function ferry.stream(schema, producer, opts)
  local owner, ptr = backend.handle("stream")
  local ok, err = pcall(ferry.export_stream_to, ptr, schema, producer, opts)
  if not ok then
    backend.handle_free(owner)
    error(err, 2)
  end
  return new_stream(owner, ptr, opts, "ferry.stream")
end

--- ferry.stream_from_arrays(list_of_specs, opts): a stream over fixed batches
--- (the schema is taken from the first spec).
function ferry.stream_from_arrays(specs, opts)
  local i = 0
  return ferry.stream(specs[1], function()
    i = i + 1
    return specs[i]
  end, opts)
end

-- For the parts loaded after this one.
I.resolve_device = resolve_device
