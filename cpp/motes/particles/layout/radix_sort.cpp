#include "motes/particles/layout/radix_sort.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "motes/core/threads.hpp"

namespace motes {

namespace {

// A few keys: insertion sort on the code bits (stable); whether any key moved.
bool insertion_sort_by_code(uint64_t* keys, uint64_t n, int bits) {
  const uint64_t mask = ((uint64_t(1) << bits) - 1) << 32;
  bool moved = false;
  for (uint64_t i = 1; i < n; ++i) {
    const uint64_t k = keys[i];
    uint64_t j = i;
    for (; j > 0 && (keys[j - 1] & mask) > (k & mask); --j) keys[j] = keys[j - 1];
    keys[j] = k;
    moved |= j != i;
  }
  return moved;
}

}  // namespace

void sort_low_code_bits(uint64_t* keys, uint64_t n, uint64_t* scratch, int bits, unsigned threads) {
  if (n < 2 || bits <= 0) return;
  if (n < 64) {
    insertion_sort_by_code(keys, n, bits);
    return;
  }
  constexpr int kMaxDigitBits = 12;  // 24-bit positions (16M rows) in two passes
  const int passes = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
  const int digit_bits = (bits + passes - 1) / passes;
  const uint32_t buckets = 1u << digit_bits;
  const uint64_t chunks = radix_chunks(n, threads);
  std::vector<std::vector<uint64_t>> count(chunks, std::vector<uint64_t>(buckets));
  uint64_t* src = keys;
  uint64_t* dst = scratch;
  for (int pass = 0; pass < passes; ++pass) {
    const int shift = 32 + digit_bits * pass;
    const uint32_t mask = uint32_t(std::min<uint64_t>(buckets, uint64_t(1) << (bits - digit_bits * pass)) - 1);
    auto digit = [&](uint64_t k) { return uint32_t(k >> shift) & mask; };
    parallel_for(chunks, threads, [&](uint64_t c) {
      std::vector<uint64_t>& at = count[c];
      std::fill(at.begin(), at.end(), 0);
      for (uint64_t i = n * c / chunks, e = n * (c + 1) / chunks; i < e; ++i) ++at[digit(src[i])];
    });
    if (place_by_digit(count, buckets) == n) continue;  // every key has one digit: the pass would move nothing
    parallel_for(chunks, threads, [&](uint64_t c) {
      std::vector<uint64_t>& at = count[c];
      for (uint64_t i = n * c / chunks, e = n * (c + 1) / chunks; i < e; ++i) {
        const uint64_t k = src[i];
        dst[at[digit(k)]++] = k;
      }
    });
    std::swap(src, dst);
  }
  if (src != keys) std::copy_n(src, n, keys);
}

const uint64_t* sort_places_by_code(uint64_t* keys, uint64_t n, uint64_t* scratch, int bits, bool& moved) {
  moved = false;
  if (n < 2 || bits <= 0) return keys;
  if (n < 64) {
    moved = insertion_sort_by_code(keys, n, bits);
    return keys;
  }
  constexpr int kMaxDigitBits = 12;
  const int low_bits = (bits + 1) / 2, high_bits = bits - low_bits;  // the two passes' digits
  const uint32_t low_mask = (1u << low_bits) - 1, high_mask = (1u << high_bits) - 1;
  static thread_local uint32_t count[2][1u << kMaxDigitBits];
  std::fill_n(count[0], low_mask + 1, 0u);
  std::fill_n(count[1], high_mask + 1, 0u);
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t code = uint32_t(keys[i] >> 32);
    ++count[0][code & low_mask];
    ++count[1][(code >> low_bits) & high_mask];
  }
  // A pass whose digit is the same in every key (the first key's) moves nothing; where
  // each digit's keys start.
  const uint32_t first = uint32_t(keys[0] >> 32);
  const bool runs[2] = {count[0][first & low_mask] != n, count[1][(first >> low_bits) & high_mask] != n};
  for (int p = 0; p < 2; ++p) {
    uint32_t at = 0;
    for (uint32_t d = 0, digits = (p ? high_mask : low_mask) + 1; d < digits; ++d) {
      const uint32_t c = count[p][d];
      count[p][d] = at;
      at += c;
    }
  }
  uint64_t* src = keys;
  uint64_t* dst = scratch;
  for (int p = 0; p < 2; ++p) {
    if (!runs[p]) continue;
    uint32_t* const at = count[p];
    const int shift = p ? low_bits : 0;
    const uint32_t mask = p ? high_mask : low_mask;
    if (p == 0 && runs[1]) {
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t k = src[i];
        dst[at[uint32_t(k >> 32 >> shift) & mask]++] = k;
      }
    } else {  // the last pass: whether a key ends elsewhere than it began
      uint32_t elsewhere = 0;
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t k = src[i];
        const uint32_t to = at[uint32_t(k >> 32 >> shift) & mask]++;
        dst[to] = k;
        elsewhere |= to ^ uint32_t(k);
      }
      moved = elsewhere != 0;
    }
    std::swap(src, dst);
  }
  return src;
}

}  // namespace motes
