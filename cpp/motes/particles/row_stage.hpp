// The columns of one write side by side, row after row, in input order (internal to the
// writer). The column passes read rows in the file's order, unrelated to the input's: from
// the caller's separate arrays every column of a row is a cache miss of its own, from the
// stage the whole row is one. It costs one copy of the columns, made by one sequential pass.
#pragma once

#include <cstdint>
#include <vector>

#include "motes/core/memory.hpp"
#include "motes/core/types.hpp"

namespace motes {

class RowStage {
 public:
  // Below this many rows the columns stay in cache and a stage would not pay.
  static constexpr uint64_t kMinRows = uint64_t(1) << 16;

  // Whether a stage pays for rows in this order: when neighbouring rows lie about as far
  // apart in space as rows taken at random (median distances, from a few thousand pairs).
  // Rows in a spatial order (a simulation's cell sort) gather from cache anyway.
  static bool pays(const ColumnView& x, const ColumnView& y, const ColumnView& z);

  // Copies the columns (any dtypes and strides, equal counts) on `threads` threads.
  RowStage(const std::vector<ColumnView>& columns, unsigned threads);

  uint32_t row_bytes() const { return row_bytes_; }
  // A buffer of `rows` rows per column holds each column's values back to back in a region
  // of its own: where column c's region starts (64-byte aligned, so that every value is
  // aligned to its size), and, for c = the column count, the buffer's size.
  uint64_t region(size_t c, uint64_t rows) const;

  // Rows rows[0, n) into such a buffer of stride_rows rows, from its row `at` on.
  void gather(const uint64_t* rows, uint64_t n, unsigned char* out, uint64_t stride_rows, uint64_t at) const;

 private:
  std::vector<ColumnView> columns_;
  std::vector<uint32_t> offset_;   // of each column within a row
  uint32_t row_bytes_ = 0;
  BigVector<uint64_t> rows_;       // u64 words: rows stay 8-byte aligned
};

}  // namespace motes
