#!/usr/bin/env python3
"""WordHasher (Sources/Deterministic/WordHasher.swift) written again from its definition alone, the
reference DeterministicTests' golden values come from: section versions and snapshot ids are made
of it, so a change to it must be a change to this file too.

  python3 scripts/word_hasher_reference.py   # prints the values the tests pin
"""
MASK = (1 << 64) - 1
FIRST_MULTIPLIER = 0x9E3779B97F4A7C15
SECOND_MULTIPLIER = 0xC4CEB9FE1A85EC53


def start(seed):
    return ((seed * 0xFF51AFD7ED558CCD) & MASK) ^ 0x2545F4914F6CDD1D


def combine(state, word, multiplier):
    product = ((state ^ word) * (multiplier | 1)) & MASK
    return product ^ (product >> 32)


def combine_text(state, text, multiplier):
    data = text.encode()
    state = combine(state, len(data), multiplier)
    for offset in range(0, len(data), 8):
        state = combine(state, int.from_bytes(data[offset:offset + 8], "little"), multiplier)
    return state


def value(state):
    state ^= state >> 33
    state = (state * 0xFF51AFD7ED558CCD) & MASK
    state ^= state >> 33
    state = (state * 0xC4CEB9FE1A85EC53) & MASK
    return state ^ (state >> 33)


if __name__ == "__main__":
    for text in ["", "a", "video:50001", "12345678", "123456789abcdefghi", "é✓"]:
        first = value(combine_text(start(0), text, FIRST_MULTIPLIER))
        second = value(combine_text(start(7), text, SECOND_MULTIPLIER))
        print(f"{text!r}: 0x{first:016x} 0x{second:016x}")
    words = combine(combine(start(1), 0, FIRST_MULTIPLIER), MASK, FIRST_MULTIPLIER)
    print(f"words 0, 2^64-1 from seed 1: 0x{value(words):016x}")
