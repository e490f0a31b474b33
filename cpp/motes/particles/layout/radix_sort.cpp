#include "motes/particles/layout/radix_sort.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "motes/core/threads.hpp"

namespace motes {

void sort_low_code_bits(uint64_t* keys, uint64_t n, uint64_t* scratch, int bits, unsigned threads) {
  if (n < 2 || bits <= 0) return;
  if (n < 64) {  // a few keys: insertion sort on the code bits (stable)
    const uint64_t mask = ((uint64_t(1) << bits) - 1) << 32;
    for (uint64_t i = 1; i < n; ++i) {
      const uint64_t k = keys[i];
      uint64_t j = i;
      for (; j > 0 && (keys[j - 1] & mask) > (k & mask); --j) keys[j] = keys[j - 1];
      keys[j] = k;
    }
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

}  // namespace motes
