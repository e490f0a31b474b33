// The layout's key sort: 64-bit keys ordered by their high 32 bits (a Morton code's top
// bits above the input row), stably, in linear time on all threads.
#pragma once

#include <cstdint>

#include "motes/core/memory.hpp"

namespace motes {

// Sorts keys by bits 32..63, keeping the order of keys equal there (so keys built with
// ascending low bits end fully sorted). LSD radix, three passes of 11 bits (a pass whose
// digit is the same in every key is skipped). `scratch` is resized to the keys' length
// and left holding no meaning (the caller may reuse its touched pages).
void sort_by_high_bits(BigVector<uint64_t>& keys, BigVector<uint64_t>& scratch, unsigned threads);

}  // namespace motes
