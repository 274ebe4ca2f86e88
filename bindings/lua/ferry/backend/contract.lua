-- The backend contract: everything the idiomatic layer (ferry/init.lua and
-- its parts) may use from a backend, written down once. A backend is the table that
-- ferry/backend/lua54.lua or ferry/backend/luajit.lua returns; both must
-- provide exactly these fields, plus the extras named for them below and
-- nothing else (spec/contract_spec.lua checks it on each interpreter).
--
--   raw        the raw layer: one function per function of ferry.h with the
--              conventions of generators/lua/gen.lua (integers for int64_t,
--              lightuserdata or cdata for pointers, nil for NULL, the
--              FerryError message returned last), and every integer
--              ARROW_*/FERRY_* macro; both generated from ferry.h
--              (ferry/abi.lua lists them).
--   functions  the helpers below, same arguments and results on both
--              backends. Lua 5.4 implements those marked `c = true` in C
--              (src/lferry_support.c, registered under ferry_core.support);
--              the generator declares them in src/generated/lferry_helpers.h,
--              so a helper missing from the C side does not link.
--
-- Helpers never raise for bad data: they return `ok, ...` or
-- `false, code, message` (errno code: ERANGE for an index out of range,
-- EINVAL for data that contradicts its own declaration), and the idiomatic
-- layer raises the ferry.Error. They may raise for programming errors (a wrong argument type).
-- No helper lets a Lua error cross a C frame of ferry or of a producer.
return {
  fields = {
    name = "the backend's name: \"lua5.4\" or \"luajit\"",
    raw = "the raw layer (see above)",
  },

  functions = {
    -- handles: binding-owned ABI structs
    { name = "handle", c = true, signature = "(kind) -> owner, pointer[, schema_pointer]",
      doc = "zeroed (released) heap structs: kind \"pair\" (an ArrowDeviceArray and an " ..
            "ArrowSchema, what an array holds), \"schema\" or \"stream\"; `owner` frees them " ..
            "(releasing them first when live) when collected" },
    { name = "handle_free", c = true, signature = "(owner)",
      doc = "releases (when live) and frees the structs of a handle now, once" },
    { name = "release_pair", c = true, signature = "(array, schema)",
      doc = "releases both structs of a pair (each may be released already; may run a " ..
            "producer's release, Lua's included)" },

    -- consuming
    { name = "import", c = true,
      signature = "(schema_in, array_in, schema, array, level) -> code, message, format, " ..
                  "device_type, device_id, pending, has_dictionary",
      doc = "moves a producer's schema and device array into the released `schema` and " ..
            "`array` (both or neither), then validates them at `level` (-1: not at all); a " ..
            "pair that fails is released and the validator's message returned. On success: " ..
            "the root's format, device, whether a sync event is pending, and whether the " ..
            "schema has a dictionary" },
    { name = "prepare", c = true, signature = "(schema) -> owner | false, code, message",
      doc = "a prepared schema (ferry_prepared_schema_create) owned by `owner` (freed when " ..
            "collected or by prepared_free), for validating many batches of one schema" },
    { name = "prepared_free", c = true, signature = "(owner)",
      doc = "frees a prepared schema now, once" },
    { name = "validate_batch", c = true,
      signature = "(prepared_owner | nil, array, level) -> code, message, released, " ..
                  "device_type, device_id, pending",
      doc = "a batch just pulled, in one call: released (the end of the stream), else " ..
            "validated with the prepared schema (when given; a failed batch is released) " ..
            "and its device and whether a sync event is pending" },
    { name = "get_next", signature = "(stream, out) -> code, message",
      doc = "ferry_array_stream_get_next (LuaJIT: compiled when no Lua callback can run)" },
    { name = "get_next_on", signature = "(stream, out, consumer_stream) -> code, message",
      doc = "ferry_array_stream_get_next_on" },
    { name = "release_device_array", signature = "(array)",
      doc = "ferry_device_array_release" },
    { name = "is_released", signature = "(array) -> boolean",
      doc = "true when the ArrowDeviceArray is released" },
    -- batch_iterator: after finish(code, message) ended the loop, every
    -- further step calls finish() with no argument (which raises the
    -- stream's error again, if it failed) and never pulls again.
    { name = "batch_iterator", c = true,
      signature = "(stream_owner, array_owner, object, finish, consumer_stream, mode, " ..
                  "prepared_owner) -> f, s",
      doc = "the iterator of `for batch in stream:batches{ reuse = true }`: each step releases " ..
            "the previous batch, pulls (mode 0: get_next, 1: get_next_on) and validates the " ..
            "next one into the same struct, resets the object's per-batch fields and returns " ..
            "the object; at the end or on failure it calls finish(code, message)" },

    -- bounds-checked reads (every index against the length, every byte
    -- against the size its buffer has by the array's own declaration)
    { name = "value", c = true, signature = "(array, kind, i) -> true, value | false, code, message",
      doc = "element i (logical) of a fixed-width array (kind: i8..u64, f32, f64, bits); " ..
            "nil when null; 64-bit kinds are exact (integers, or int64 cdata on LuaJIT)" },
    { name = "bytes", c = true,
      signature = "(array, large, i) -> true, string | false, code, message",
      doc = "element i of a utf8/binary array (large: 64-bit offsets); nil when null; the " ..
            "offsets are checked against each other and the data buffer's size" },
    { name = "list_bounds", c = true,
      signature = "(array, large, i) -> true, first, last | false, code, message",
      doc = "child positions [first, last) of list element i, checked against the child's length" },
    { name = "is_valid", c = true, signature = "(array, i) -> true, boolean | false, code, message",
      doc = "false when element i is null (a NULL bitmap or null_count 0: never null)" },
    { name = "validity_bit", c = true,
      signature = "(array, i) -> true, boolean | nil | false, code, message",
      doc = "the bitmap's bit for element i whatever null_count says; nil without a bitmap" },
    { name = "read", c = true, signature = "(pointer, kind, i) -> value",
      doc = "UNCHECKED read of element i of raw memory (tests that look at memory as it lies)" },
    { name = "read_bytes", c = true, signature = "(pointer, start, length) -> string",
      doc = "UNCHECKED copy of raw memory (callers bound it by a computed buffer size)" },
    { name = "pointer_add", c = true, signature = "(pointer, bytes) -> pointer",
      doc = "the address `bytes` past `pointer`" },
    { name = "address", c = true, signature = "(pointer) -> integer",
      doc = "the address as an integer (display, tests)" },
    { name = "to_integer", signature = "(value) -> number",
      doc = "a Lua number of a 64-bit value (exact on 5.4; int64 cdata on LuaJIT)" },

    -- producing: what an export owns until its consumer releases it
    { name = "keeper_new", c = true, signature = "() -> keeper",
      doc = "an empty keeper (freed when collected unless disowned)" },
    { name = "keeper_pointer", c = true, signature = "(keeper) -> pointer",
      doc = "the user_data to pass with keeper_hook()" },
    { name = "keeper_hook", c = true, signature = "() -> function pointer",
      doc = "the release hook that frees a keeper (never runs Lua on 5.4)" },
    { name = "keeper_disown", c = true, signature = "(keeper)",
      doc = "the release hook owns the keeper from now on" },
    { name = "keeper_free", c = true, signature = "(keeper)",
      doc = "frees now (an export that failed before the hook took over)" },
    { name = "keeper_pack", c = true, signature = "(keeper, kind, table, n) -> pointer, size",
      doc = "packs table[1..n] into new host memory the keeper owns (nil holes: 0/false)" },
    { name = "keeper_alloc", c = true, signature = "(keeper, size) -> pointer",
      doc = "zeroed host memory the keeper owns" },
    { name = "keeper_string", c = true, signature = "(keeper, string) -> pointer, size",
      doc = "the string's own bytes (zero-copy), anchored until release" },
    { name = "keeper_to_device", c = true,
      signature = "(keeper, host, size, device, stream) -> pointer | nil, code, message",
      doc = "copies host memory to new device memory the keeper owns, ordered on `stream` " ..
            "(borrowed) or, when nil, on the keeper's own producer stream (created on first use)" },
    { name = "keeper_device_stream", c = true, signature = "(keeper) -> stream | nil",
      doc = "the keeper's own producer stream, if it made one" },
    { name = "keeper_adopt", c = true,
      signature = "(keeper, what, device, pointer, destroy) -> true",
      doc = "the keeper owns `pointer` from now on: what = \"event\" (a native event, " ..
            "ferry_device_event_destroy at release) or \"memory\" (device memory, " ..
            "ferry_device_deallocate); with `destroy` (a Lua function) destroy(pointer) runs " ..
            "instead, under the rules of stream callbacks" },
    { name = "export_flat", c = true,
      signature = "(out, length, null_count, offset, buffers, n_buffers) -> code, message",
      doc = "a CPU array without children over borrowed buffers, in one call" },
    { name = "stream_export", c = true,
      signature = "(out, device_type, get_schema, get_next) -> code, message",
      doc = "an ArrowDeviceArrayStream whose callbacks call the Lua functions " ..
            "get_schema(schema_out) and get_next(array_out)" },

    -- validation, DLPack, counters
    { name = "validate", c = true, signature = "(schema, array | nil, level) -> code, message, findings",
      doc = "ferry_validate_device_array (or _schema) with every finding {rule, where, what}" },
    { name = "dlpack_info", c = true, signature = "(tensor) -> table",
      doc = "the fields of a DLManagedTensorVersioned (its data is not read)" },
    { name = "dlpack_delete", c = true, signature = "(tensor)",
      doc = "calls the tensor's deleter (once: the caller owns it)" },
    { name = "gc_anchor", signature = "(pointer, finaliser) -> anchor | nil",
      doc = "LuaJIT: a cdata whose finaliser runs finaliser(pointer); 5.4: nil (tables have __gc)" },
    { name = "gc_anchor_drop", signature = "(anchor)",
      doc = "disarms an anchor (ownership moved elsewhere)" },
    { name = "live_allocations", c = true, signature = "() -> integer",
      doc = "what Lua exports own now (buffers, device memory, anchors, live Lua streams)" },
  },

  -- What one backend has beyond the contract (and nothing else).
  extras = {
    ["lua5.4"] = {
      support = "the C helpers table of ferry_core (src/lferry_support.c)",
    },
    luajit = {
      lib = "the ffi.load'ed libferry (direct, compiled calls)",
      ffi = "LuaJIT's ffi module",
      library_path = "where libferry was loaded from, and how it was found",
      callbacks = "{ live = n }: objects that can call into Lua from C right now",
    },
  },
}
