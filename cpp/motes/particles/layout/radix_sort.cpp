#include "motes/particles/layout/radix_sort.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "motes/core/parallel.hpp"

namespace motes {

namespace {
constexpr int kDigitBits = 11, kPasses = 3;
constexpr uint32_t kBuckets = 1u << kDigitBits;
inline uint32_t digit(uint64_t key, int pass) { return uint32_t(key >> (32 + kDigitBits * pass)) & (kBuckets - 1); }
}  // namespace

void sort_by_high_bits(BigVector<uint64_t>& keys, BigVector<uint64_t>& scratch, unsigned threads) {
  const uint64_t n = keys.size();
  if (n < (uint64_t(1) << 16)) {  // small: a comparison sort of whole keys is stable enough when low bits ascend
    std::stable_sort(keys.begin(), keys.end(), [](uint64_t a, uint64_t b) { return a >> 32 < b >> 32; });
    return;
  }
  const uint64_t chunks = std::max(1u, threads);
  scratch.resize(n);
  uint64_t* src = keys.data();
  uint64_t* dst = scratch.data();
  std::vector<std::array<uint64_t, kBuckets>> count(chunks);
  for (int pass = 0; pass < kPasses; ++pass) {
    parallel_for(chunks, threads, [&](uint64_t c) {
      count[c].fill(0);
      for (uint64_t i = n * c / chunks, e = n * (c + 1) / chunks; i < e; ++i) ++count[c][digit(src[i], pass)];
    });
    // Where each chunk's keys of each digit go: digits in order, chunks in order within one.
    uint64_t total = 0;
    bool one_digit = false;
    for (uint32_t d = 0; d < kBuckets; ++d) {
      uint64_t of_digit = 0;
      for (uint64_t c = 0; c < chunks; ++c) {
        const uint64_t k = count[c][d];
        count[c][d] = total;
        total += k;
        of_digit += k;
      }
      one_digit |= of_digit == n;
    }
    if (one_digit) continue;  // every key has this digit: the pass would move nothing
    parallel_for(chunks, threads, [&](uint64_t c) {
      std::array<uint64_t, kBuckets>& at = count[c];
      for (uint64_t i = n * c / chunks, e = n * (c + 1) / chunks; i < e; ++i) {
        const uint64_t k = src[i];
        dst[at[digit(k, pass)]++] = k;
      }
    });
    std::swap(src, dst);
  }
  if (src != keys.data()) keys.swap(scratch);
}

}  // namespace motes
