// Unaligned loads and stores of plain values at byte addresses. Files, blocks and
// messages are little-endian and read in place: a big-endian port needs byte swapping.
#pragma once

#include <bit>
#include <cstring>

static_assert(std::endian::native == std::endian::little, "the format is little-endian; this port needs byte swapping");

namespace motes {

template <class T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store(void* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace motes
