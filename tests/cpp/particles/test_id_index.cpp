// The id index's sections (particles/id_index.hpp): build_id_index sorts the ids' keys with
// their file positions by a radix sort of (key - lowest) << 32 | position words when the keys
// span fewer than 2^32 values, else by a comparison sort of pairs. Either way its sections must be the bytes of the
// reference: the (key, position) pairs sorted as pairs, keys and positions coded by
// code_index_blocks. Checked for dense and sparse ids, duplicates (positions ascending within
// a key), signed ids below zero, 32-bit ids, one id, and spans on either side of 2^32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "motes/particles/id_index.hpp"

using namespace motes;

namespace {

// The sections as build_id_index wrote them before its radix sort: a sort of the pairs.
IdIndexSections reference(DType dtype, const void* values, int64_t stride, uint64_t n, const uint64_t* order) {
  const unsigned char* src = static_cast<const unsigned char*>(values);
  std::vector<std::pair<uint64_t, uint64_t>> entries(n);
  for (uint64_t p = 0; p < n; ++p) entries[p] = {id_key(dtype, src + int64_t(order[p]) * stride), p};
  std::sort(entries.begin(), entries.end());
  IdIndexSections s;
  s.column = 3;
  std::vector<uint64_t> keys(n), fences;
  for (uint64_t i = 0; i < n; ++i) keys[i] = entries[i].first;
  const uint64_t bv = 4096;
  for (uint64_t b = 0; b * bv < n; ++b) fences.push_back(keys[b * bv]), fences.push_back(keys[std::min(n, (b + 1) * bv) - 1]);
  s.fences.assign(reinterpret_cast<const char*>(fences.data()), fences.size() * 8);
  code_index_blocks(keys.data(), n, DType::u64, 1, 1, s.keys, s.key_blocks, Lookup::smallest);
  std::vector<uint32_t> rows(n);
  for (uint64_t i = 0; i < n; ++i) rows[i] = uint32_t(entries[i].second);
  code_index_blocks(rows.data(), n, DType::u32, 1, 1, s.rows, s.row_blocks, Lookup::smallest);
  return s;
}

bool same_blocks(const std::vector<StoredBlock>& a, const std::vector<StoredBlock>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].offset != b[i].offset || a[i].stored != b[i].stored || a[i].checksum != b[i].checksum) return false;
  return true;
}

template <class T>
void expect_reference_bytes(const std::vector<T>& ids, DType dtype, uint64_t seed, const char* what) {
  const uint64_t n = ids.size();
  std::vector<uint64_t> order(n);  // a file order: a random permutation of the input rows
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  for (unsigned threads : {1u, 2u}) {
    const IdIndexSections got = build_id_index(3, dtype, ids.data(), sizeof(T), n, order.data(), 1, threads);
    const IdIndexSections want = reference(dtype, ids.data(), sizeof(T), n, order.data());
    EXPECT_EQ(got.column, 3u) << what;
    EXPECT_TRUE(got.keys == want.keys) << what << ", threads " << threads;
    EXPECT_TRUE(got.rows == want.rows) << what << ", threads " << threads;
    EXPECT_TRUE(got.fences == want.fences) << what << ", threads " << threads;
    EXPECT_TRUE(same_blocks(got.key_blocks, want.key_blocks)) << what;
    EXPECT_TRUE(same_blocks(got.row_blocks, want.row_blocks)) << what;
  }
}

}  // namespace

TEST(IdIndex, SectionsEqualThoseOfAPairSort) {
  std::mt19937_64 rng(7);
  const uint64_t n = 50'000;
  {  // a rank's share of a global numbering: sparse in [0, 4n)
    std::vector<uint64_t> all(4 * n);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    expect_reference_bytes(std::vector<uint64_t>(all.begin(), all.begin() + n), DType::u64, 1, "sparse u64");
  }
  {  // dense, and with duplicates: positions ascend within a key
    std::vector<uint64_t> ids(n);
    std::iota(ids.begin(), ids.end(), uint64_t(1) << 40);
    expect_reference_bytes(ids, DType::u64, 2, "dense u64 from 2^40");
    for (uint64_t i = 0; i < n; i += 7) ids[i] = ids[(i * 31) % n];
    expect_reference_bytes(ids, DType::u64, 3, "u64 with duplicates");
  }
  {  // signed ids across zero, 64 and 32 bits
    std::vector<int64_t> s64(n);
    for (auto& v : s64) v = int64_t(rng() % 200'000) - 100'000;
    expect_reference_bytes(s64, DType::i64, 4, "i64 across zero");
    std::vector<int32_t> s32(n);
    for (auto& v : s32) v = int32_t(rng() % 2'000'000) - 1'000'000;
    expect_reference_bytes(s32, DType::i32, 5, "i32 across zero");
    std::vector<uint32_t> u32(n);
    for (auto& v : u32) v = uint32_t(rng());
    expect_reference_bytes(u32, DType::u32, 6, "u32, any");
  }
  {  // spans at the edge of 32 bits and past it
    std::vector<uint64_t> ids(n);
    for (auto& v : ids) v = (uint64_t(1) << 50) + rng() % (uint64_t(1) << 32);
    ids[0] = uint64_t(1) << 50, ids[1] = (uint64_t(1) << 50) + (uint64_t(1) << 32) - 1;
    expect_reference_bytes(ids, DType::u64, 7, "32-bit span from 2^50");
    ids[1] = (uint64_t(1) << 50) + (uint64_t(1) << 32);
    expect_reference_bytes(ids, DType::u64, 8, "33-bit span (pairs sorted)");
    for (auto& v : ids) v = rng();
    expect_reference_bytes(ids, DType::u64, 9, "any u64 (pairs sorted)");
  }
  expect_reference_bytes(std::vector<uint64_t>{42}, DType::u64, 10, "one id");
  expect_reference_bytes(std::vector<uint64_t>(5000, 9), DType::u64, 11, "one id 5000 times");
}
