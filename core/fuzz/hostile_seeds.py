#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_hostile (core/fuzz/corpus/hostile/): the
reproducers of issues 15 and 20, spelled in the input grammar of fuzz_hostile.c.
Run it again after changing that grammar:  python3 core/fuzz/hostile_seeds.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "hostile")

STRUCT, INT32, UTF8, UTF8_VIEW = 0, 1, 2, 3  # indices into kFormats
CPU, SIM = 0x00, 0x01
HUGE_1M = 0xF1  # length byte: kHuge[1] = 2^20
NO_TENSOR = bytes(6)
NO_METADATA = bytes([0])  # the metadata byte between the links and the tensor
LIST = 32  # "+l"
EXTRA_2, EXTRA_2_40 = 0xE9, 0xEA  # children byte: declares 1 (+l: its 1) + 2 or 2^40
EMPTY_0_BYTES, EMPTY_NULL = 0xEE, 0xDD  # length byte: 0, with 0-byte / NULL buffers


def header(mode, n_nodes):
    return bytes([mode, n_nodes - 1])


def struct_node(length, n_children):
    # format, flags, length, offset, children, validity gate (none)
    return bytes([STRUCT, 0, length, 0, n_children, 0])


def int32_node(length):
    # ..., validity gate (none), data placement (honest), the values
    return bytes([INT32, 0, length, 0, 0, 0, 0]) + bytes(range(4 * length))


def chain(levels, mode=CPU):
    """Every level a struct whose two children are the same next level."""
    nodes = b"".join(struct_node(4, 2) for _ in range(levels)) + int32_node(4)
    links = b"".join(bytes([i + 2, i + 2, 0]) for i in range(levels)) + bytes([0])
    return header(mode, levels + 1) + nodes + links + NO_METADATA + NO_TENSOR


def self_cycle():
    """A struct whose two children are itself."""
    return header(CPU, 1) + struct_node(1, 2) + bytes([1, 1, 0]) + NO_METADATA + NO_TENSOR


def sim_longer_than_allocation():
    """2^20 int32 values on the sim with a 1-byte bitmap and 16 data bytes."""
    node = bytes([INT32, 0, HUGE_1M, 0, 0,
                  1, 1, 1, 0xFF,        # validity: short, 1 byte
                  1, 16]) + bytes(16)   # data: short, 16 bytes
    return header(SIM, 1) + node + bytes([0]) + NO_METADATA + NO_TENSOR


def empty_utf8_offset_3_no_offsets():
    node = bytes([UTF8, 0, 0, 3, 0,
                  0,        # no validity
                  0xFF,     # offsets: NULL
                  0])       # data: honest (0 bytes, a real pointer)
    return header(CPU, 1) + node + bytes([0]) + NO_METADATA + NO_TENSOR


def empty_string_view_no_sizes():
    node = bytes([UTF8_VIEW, 0, 0, 0, 0,
                  1,              # one variadic buffer
                  0,              # no validity
                  0,              # views: honest (0 bytes)
                  3, 0]) + b"abc" + bytes([0xFF])  # variadic "abc"; no sizes buffer
    return header(CPU, 1) + node + bytes([0]) + NO_METADATA + NO_TENSOR


def dictionary_shared_with_a_child():
    """struct<a: dictionary<int32 -> utf8>, b: utf8> where b is a's dictionary."""
    indices = bytes([INT32, 0, 2, 0, 0, 0, 0]) + bytes(8)       # two indices 0
    values = bytes([UTF8, 0, 2, 0, 0,
                    0,                                          # no validity
                    0]) + bytes(12) + bytes([0, 1, 1]) + bytes([0]) + b"ab"  # [0, 1, 2]
    nodes = struct_node(2, 2) + indices + values
    links = bytes([0, 3, 0,   # root: children node 1 (fresh), node 2; no dictionary
                   3,         # node 1: dictionary node 2
                   0])        # node 2: no dictionary
    return header(CPU, 3) + nodes + links + NO_METADATA + NO_TENSOR


def dlpack_byte_offset(device_flags):
    """An int32 tensor of 3 values whose byte_offset is 2^64 - 64."""
    graph = header(CPU, 1) + int32_node(0) + bytes([0]) + NO_METADATA
    return graph + bytes([device_flags | 0x08, 2, 0, 0x08, 6, 64])


def more_children_than_the_table(children_byte):
    """A struct of one int32 child whose array declares 3 (or 2^40 + 1)
    children over a table of one; the schema has one."""
    nodes = bytes([STRUCT, 0, 2, 0, children_byte, 0]) + int32_node(2)
    links = bytes([0, 0,   # root: child node 1; no dictionary
                   0])     # node 1: no dictionary
    return header(CPU, 2) + nodes + links + NO_METADATA + NO_TENSOR


def empty_utf8(length_byte, mode=CPU):
    """A length-0 utf8 whose offsets and data are 0-byte blocks or NULL."""
    node = bytes([UTF8, 0, length_byte, 0, 0, 0])  # no validity; no buffer bytes
    return header(mode, 1) + node + bytes([0]) + NO_METADATA + NO_TENSOR


def empty_list(length_byte):
    """A length-0 list<int32> whose offsets are a 0-byte block or NULL."""
    nodes = bytes([LIST, 0, length_byte, 0, 0, 0]) + int32_node(0)
    return header(CPU, 2) + nodes + bytes([0, 0, 0]) + NO_METADATA + NO_TENSOR


def lying_metadata(kind):
    """An int32 column whose schema metadata header lies (fuzz_input.h)."""
    return header(CPU, 1) + int32_node(2) + bytes([0, kind]) + NO_TENSOR


SEEDS = {
    "chain_20_shared_levels": chain(20),
    "chain_40_shared_levels": chain(40),
    "chain_40_shared_levels_sim": chain(40, SIM),
    "struct_whose_children_are_itself": self_cycle(),
    "sim_array_longer_than_allocation": sim_longer_than_allocation(),
    "empty_utf8_offset_3_no_offsets": empty_utf8_offset_3_no_offsets(),
    "empty_string_view_no_sizes": empty_string_view_no_sizes(),
    "dictionary_shared_with_a_child": dictionary_shared_with_a_child(),
    "dlpack_byte_offset_wraps_cpu": dlpack_byte_offset(0x00),
    "dlpack_byte_offset_wraps_sim": dlpack_byte_offset(0x20),
    "more_children_than_the_table_2": more_children_than_the_table(EXTRA_2),
    "more_children_than_the_table_2_40": more_children_than_the_table(EXTRA_2_40),
    "empty_utf8_0_byte_offsets": empty_utf8(EMPTY_0_BYTES),
    "empty_utf8_null_offsets": empty_utf8(EMPTY_NULL),
    "empty_utf8_0_byte_offsets_sim": empty_utf8(EMPTY_0_BYTES, SIM),
    "empty_list_0_byte_offsets": empty_list(EMPTY_0_BYTES),
    "empty_list_null_offsets": empty_list(EMPTY_NULL),
    "metadata_1m_pairs_in_64_bytes": lying_metadata(2),
    "metadata_int32_max_pairs": lying_metadata(3),
    "metadata_huge_key": lying_metadata(4),
    "metadata_huge_value": lying_metadata(5),
    "metadata_negative_count": lying_metadata(6),
    "metadata_bad_utf8_key": lying_metadata(7),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {OUT}")
