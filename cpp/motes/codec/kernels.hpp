// The inner loops of unpacking addressable words (packed.cpp, binned.cpp), compiled twice
// (kernels.cpp): for any x86-64 processor and, where the processor has them, with the
// instructions of x86-64-v3 (AVX2, BMI2: shrx, bzhi, andn, 8-lane vectors; frames of reference
// of 32-bit words in up to 32 bits unpacked 8 fields per instruction sequence), chosen once at
// run time. Integer arithmetic only: either form gives the same bytes. Internal to codec/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "motes/codec/packed.hpp"

namespace motes::codec::kernels {

// The instruction sets the kernels are compiled for: v3 only where the compiler can (GCC or
// clang on x86-64; otherwise asking for it gives the plain form).
enum class Isa { plain, v3 };
// v3 where it was compiled and the processor has what that copy uses (GCC: all of x86-64-v3;
// clang: AVX2, BMI, BMI2, FMA, POPCNT), else plain (decided once).
Isa best_isa();

// m fields of w bits from `fields` (followed by kPackedPadBytes readable bytes), each plus
// ref through `map` (the offset predictor's inverse in the same pass; {0, 0} leaves words as
// they are), as words of `size` bytes into dst.
using ForUnpacker = void (*)(const unsigned char* fields, size_t m, uint64_t ref, const WordMap& map,
                             unsigned char* dst);
ForUnpacker for_unpacker(uint32_t size, uint32_t w, Isa isa = best_isa());

// A dictionary unit's m fields of w bits (docs/format.md §4.12.2) from `fields`, each the
// index of one of the d words of `size` bytes at `dict` in its high w - r <= 8 bits and the
// word's r low bits below: (dict[index] << r | low bits) plus add through `map`, as words into
// dst; false when a field indexes past them (or w, r and d do not fit together).
using DictUnpacker = bool (*)(const unsigned char* fields, size_t m, const unsigned char* dict, uint32_t d,
                              uint32_t r, uint64_t add, const WordMap& map, unsigned char* dst);
DictUnpacker dict_unpacker(uint32_t size, uint32_t w, Isa isa = best_isa());

// A binned stream's n words of `size` bytes (widths[256], offsets per unit of 1 << shift
// words, the fields' bits and how many there are) given every code, each plus bases[code]
// (bases: 256 words) through `map`, into dst; what is wrong, or empty.
using BinsUnpacker = std::string (*)(const unsigned char* widths, const unsigned char* offsets, uint32_t shift,
                                     const uint8_t* codes, const unsigned char* bits, uint64_t bit_count, size_t n,
                                     const uint64_t* bases, const WordMap& map, unsigned char* dst);
BinsUnpacker bins_unpacker(uint32_t size, Isa isa = best_isa());

}  // namespace motes::codec::kernels
