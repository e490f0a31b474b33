// The layout's Morton sort (internal to the builder), in linear time on all threads, of
// records that carry the positions: one pass moves every row's record (its coordinates and
// input row) into the bucket of its code's top bits, then each bucket is sorted in cache.
// The treelets then read their points in order, not at random from the whole input.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "motes/core/memory.hpp"
#include "motes/core/threads.hpp"

namespace motes {

constexpr int kBucketBits = 12;  // of a 32-bit code: 4096 buckets
constexpr int kBucketShift = 32 - kBucketBits;

// Rows are counted and moved in chunks: one per thread, of at least 2^16 rows.
inline uint64_t radix_chunks(uint64_t n, unsigned threads) {
  return std::max<uint64_t>(1, std::min<uint64_t>(std::max(1u, threads), n >> 16));
}

// Turns each chunk's count of each digit (count[chunk][digit]) into where that chunk's rows of
// that digit go: digits in order, chunks in order within one (a stable placement). The first
// row of each digit goes to digit_start[digit] when given; returns the most rows one digit has.
template <class Counts>
uint64_t place_by_digit(std::vector<Counts>& count, uint32_t digits, uint64_t* digit_start = nullptr) {
  uint64_t total = 0, most = 0;
  for (uint32_t d = 0; d < digits; ++d) {
    if (digit_start) digit_start[d] = total;
    const uint64_t first = total;
    for (Counts& c : count) {
      const uint64_t k = c[d];
      c[d] = total;
      total += k;
    }
    most = std::max(most, total - first);
  }
  return most;
}

// Sorts keys[0, n) by their bits [32, 32 + bits), keeping the order of keys equal there:
// LSD radix in passes of at most 12 bits (a pass whose digit is the same in every key is
// skipped). `scratch` holds n keys; the sorted keys end in `keys`.
void sort_low_code_bits(uint64_t* keys, uint64_t n, uint64_t* scratch, int bits, unsigned threads);

// The same on one thread, for keys (code << 32 | place) of at most 2^32 places and at most 24
// code bits: two passes whose digit counts come from one read, the keys ending in `keys` or
// `scratch` (returned). `moved` says whether any key left its place.
const uint64_t* sort_places_by_code(uint64_t* keys, uint64_t n, uint64_t* scratch, int bits, bool& moved);

// Records of rows [0, n) in the order of their 32-bit codes, equal codes in row order.
// visit(i, rec) fills row i's record and returns its code; code_of(rec) returns the code
// of a record; counted() runs after the first pass. One pass counts the rows of each
// bucket (the code's top kBucketBits bits), one moves every record into its bucket (rows
// in order within one), then each bucket is sorted on the code's other bits in cache:
// keys (code, place in the bucket) are sorted and the records follow them.
template <class Rec, class Visit, class CodeOf, class Counted>
void bucket_sort(uint64_t n, unsigned threads, Visit&& visit, CodeOf&& code_of, Counted&& counted, Rec* records) {
  constexpr uint32_t kBuckets = 1u << kBucketBits;
  const uint64_t chunks = radix_chunks(n, threads);
  std::vector<std::array<uint64_t, kBuckets>> at(chunks);
  parallel_for(chunks, threads, [&](uint64_t c) {
    std::array<uint64_t, kBuckets>& count = at[c];
    count.fill(0);
    Rec rec;
    for (uint64_t i = n * c / chunks, e = n * (c + 1) / chunks; i < e; ++i) ++count[visit(i, rec) >> kBucketShift];
  });
  counted();
  std::vector<uint64_t> start(kBuckets + 1);
  place_by_digit(at, kBuckets, start.data());
  start[kBuckets] = n;
  parallel_for(chunks, threads, [&](uint64_t c) {
    std::array<uint64_t, kBuckets>& to = at[c];
    Rec rec;
    for (uint64_t i = n * c / chunks, e = n * (c + 1) / chunks; i < e; ++i) {
      const uint32_t code = visit(i, rec);
      records[to[code >> kBucketShift]++] = rec;
    }
  });
  // One bucket: its keys, sorted, then its records in their order. keys, scratch: len
  // words each; moved_buffer() gives room for len records, asked only when they move.
  auto sort_bucket = [&](Rec* r, uint64_t len, uint64_t* keys, uint64_t* scratch, auto&& moved_buffer, unsigned t) {
    parallel_ranges(len, t, 1 << 16, [&](uint64_t b, uint64_t e) {
      for (uint64_t j = b; j < e; ++j) keys[j] = uint64_t(code_of(r[j])) << 32 | j;
    });
    const uint64_t* sorted = keys;
    bool any_moved = false;  // none: the records are in order already (codes all equal, say)
    if (t <= 1) {
      sorted = sort_places_by_code(keys, len, scratch, kBucketShift, any_moved);
    } else {
      sort_low_code_bits(keys, len, scratch, kBucketShift, t);
      for (uint64_t j = 0; j < len; ++j) any_moved |= (keys[j] & 0xFFFFFFFF) != j;
    }
    if (!any_moved) return;
    Rec* const moved = moved_buffer();
    parallel_ranges(len, t, 1 << 16, [&](uint64_t b, uint64_t e) {
      for (uint64_t j = b; j < e; ++j) moved[j] = r[sorted[j] & 0xFFFFFFFF];
    });
    parallel_ranges(len, t, 1 << 16, [&](uint64_t b, uint64_t e) { std::copy(moved + b, moved + e, r + b); });
  };
  // Large buckets on all threads, one after another, with memory of their own (a key and a
  // scratch word and a copy of each record: a step crowded into one region of its bounds,
  // as a few far outliers make it, takes up to three times the records' memory here); the
  // rest side by side, one thread each, in per-thread buffers.
  const uint64_t large = std::max<uint64_t>(uint64_t(1) << 20, n / (4 * uint64_t(std::max(1u, threads))));
  std::vector<uint32_t> small;
  for (uint32_t d = 0; d < kBuckets; ++d) {
    const uint64_t len = start[d + 1] - start[d];
    if (len < large) {
      if (len > 1) small.push_back(d);
      continue;
    }
    BigVector<uint64_t> keys(len), scratch(len);
    BigVector<Rec> moved;
    sort_bucket(records + start[d], len, keys.data(), scratch.data(), [&] { return moved.resize(len), moved.data(); }, threads);
  }
  parallel_for(small.size(), threads, [&](uint64_t s) {
    thread_local BigVector<uint64_t> words;  // not zeroed when they grow
    thread_local BigVector<Rec> moved;
    const uint32_t d = small[s];
    const uint64_t len = start[d + 1] - start[d];
    if (words.size() < 2 * len) words.resize(2 * len), moved.resize(len);
    sort_bucket(records + start[d], len, words.data(), words.data() + len, [&] { return moved.data(); }, 1);
    if (len > (uint64_t(1) << 17)) BigVector<uint64_t>().swap(words), BigVector<Rec>().swap(moved);  // unusually large
  });
}

}  // namespace motes
