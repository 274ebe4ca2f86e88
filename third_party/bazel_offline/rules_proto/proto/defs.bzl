"""Offline stand-in: the rules_proto macros forward to the native rules."""

def proto_library(**kwargs):
    native.proto_library(**kwargs)

def proto_lang_toolchain(**kwargs):
    native.proto_lang_toolchain(**kwargs)

def rules_proto_dependencies():
    pass

def rules_proto_toolchains():
    pass
