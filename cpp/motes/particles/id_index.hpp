// The id index of a particle file (format 2.1, docs/format.md §4.15): the particle id
// column's values sorted, each with its file position, in coded blocks of kIdBlockValues
// entries with each block's first and last key, so that looking up k ids decodes at most k
// small blocks whatever the spatial layout put them. Built by the writer from the layout's
// order; read by tracking (ds.track) and id lookups.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "motes/container/block_stream.hpp"
#include "motes/container/container.hpp"
#include "motes/core/types.hpp"

namespace motes {

// An id of any 32- or 64-bit integer dtype as an unsigned key in the same order (signed
// values with their sign bit flipped after widening to 64 bits).
uint64_t id_key(DType dtype, const void* value);
// The key of an id given as an int64 (a value of the column's type widened, or a uint64
// id's bits), as callers from Python and C hold them.
inline uint64_t id_key_of_int64(DType dtype, int64_t v) {
  const bool is_signed = dtype == DType::i32 || dtype == DType::i64;
  return uint64_t(v) ^ (is_signed ? uint64_t(1) << 63 : 0);
}
// The id of `dtype` whose key is `key` (id_key's inverse), its dtype's bytes into out.
void id_of_key(DType dtype, uint64_t key, void* out);
// Whether `dtype` can be an id column (i32, u32, i64, u64).
bool id_dtype(DType dtype);

// What the writer hands the container: the sorted keys and their rows, coded.
struct IdIndexSections {
  uint32_t column = 0;                 // the id column in the schema
  std::string keys, rows;              // the coded blocks, one after the other
  std::vector<StoredBlock> key_blocks, row_blocks;  // offsets relative to the start of each string
  std::string fences;                  // per block: first key, last key (u64)
};
// Builds the index of column `column` (`values`: n ids in input order, `stride` bytes apart;
// order[p] is the input row at file position p).
// `smallest`: keys and rows coded as Lookup::smallest (format 2.7's writer, with the id
// column stored by its index), else as Lookup::packed (what writers of 2.1 to 2.6 wrote).
IdIndexSections build_id_index(uint32_t column, DType dtype, const void* values, int64_t stride, uint64_t n,
                               const uint64_t* order, int zstd_level, unsigned threads, bool smallest = true);

// Codes `n` values of `dtype` in blocks of kIdBlockValues with a plan chosen on a few of
// them (delta or none, then zstd, or packed words), into `out` (blocks' offsets relative to
// its start); the value indexes' streams (id and tail indexes). Lookup::packed: packed words
// in units of codec::kPackedUnit, each read where it lies (the id index: a lookup reads a few
// words, not two blocks); Lookup::smallest: packed words in the unit size that stores them
// smallest, unless coded blocks are much smaller (kLookupCodedShare).
enum class Lookup { no, packed, smallest };
void code_index_blocks(const void* values, uint64_t n, DType dtype, int zstd_level, unsigned threads, std::string& out,
                       std::vector<StoredBlock>& blocks, Lookup lookup = Lookup::no);
// A lookup stream (the id index) is entropy coded instead of packed when that takes at most
// this share of the packed bytes and saves at least a bit per entry.
inline constexpr double kLookupCodedShare = 0.5;

// A file's id index, opened from its sections.
class IdIndex {
 public:
  // Keys its two streams in the cache of decoded blocks by the file's contents (BlockStream::
  // set_cache_key): `file` from content_cache_key, and their two sections in the file.
  void set_cache_keys(uint64_t file, uint64_t keys_section, uint64_t rows_section) {
    keys_.set_cache_key(file, keys_section);
    rows_.set_cache_key(file, rows_section);
  }
  // `keys`, `rows`: the bulk sections' coded blocks; `fences` the fence section's bytes.
  // FormatError (through the file's name) when they do not agree.
  IdIndex(std::shared_ptr<const ByteSource> source, const std::string& file, uint32_t column, uint64_t count,
          std::vector<StoredBlock> key_blocks, std::vector<StoredBlock> row_blocks, const std::string& fences);
  uint32_t column() const { return column_; }
  uint64_t count() const { return count_; }
  uint64_t stored_bytes() const { return keys_.stored_bytes() + rows_.stored_bytes() + fences_.size() * 8; }
  // For each of n keys (sorted ascending, distinct), its file position, or -1 when the file
  // holds no such id. FormatError naming the id when the file holds it twice.
  void find(const uint64_t* keys, size_t n, int64_t* rows) const;
  // The file positions of every particle holding one of n keys (sorted ascending,
  // distinct), ascending; an id held twice gives both positions (queries, not tracking).
  std::vector<uint64_t> positions(const uint64_t* keys, size_t n) const;
  // Checks every block against its checksum, that keys ascend and rows are positions.
  void verify() const;
  // The id column's values (of `dtype`) in file order, as the index determines them (format
  // 2.7, ids-by-index): the id of key k at position rows[k]. Computing them checks that the
  // rows are a permutation of the positions (FormatError naming the file otherwise).
  std::shared_ptr<const ComputedValues> column_values(DType dtype) const;

 private:
  std::string file_;
  uint32_t column_;
  uint64_t count_;
  BlockStream keys_, rows_;
  std::vector<uint64_t> fences_;  // first, last per block
  uint64_t first_block(uint64_t key) const;  // the first block whose last key is >= key (or the count)
};

// The values of stream `s` at file positions rows[0..n) (each < s.count(), or -1: left
// as it is in `out`), decoding each block once; out holds n values.
void gather_rows(const BlockStream& s, const int64_t* rows, size_t n, void* out);

}  // namespace motes
