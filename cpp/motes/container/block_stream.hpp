// The column/block reader: every consumer of stored values (filtering, gathering,
// analyses, verify, the parallel read) reads them through a BlockStream and a BlockReader.
// A stream is one column's values (or its quantile codes) in file order, stored either
// contiguously (raw; read in place when the source is addressable) or as independently
// coded blocks (decoded on first use, checked against their checksums, and shared through
// one process-wide cache of decoded blocks).
//
// No value is used before the checksum that covers it is checked (docs/format.md §4.14): a
// coded block each time it is decoded, a raw block the first time a value of it is read
// (the stream remembers which of its blocks passed).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/container/block_cache.hpp"
#include "motes/io/byte_source.hpp"

namespace motes {

struct StoredBlock {
  uint64_t offset = 0;    // in the source
  uint32_t stored = 0;    // bytes in the source
  uint64_t checksum = 0;  // XXH3 of the stored bytes
};

// Values a stream derives from other stored bytes instead of storing them (format 2.7: the
// id column from its id index), all of them at once on first use.
class ComputedValues {
 public:
  virtual ~ComputedValues() = default;
  // Every value, in file order, into dst; FormatError when the bytes they come from are
  // damaged (those are checked against their checksums as they are read).
  virtual void compute(unsigned char* dst) const = 0;
  // The stored bytes that computing them reads (for read plans and prefetches).
  virtual void ranges(std::vector<ByteRange>& out) const = 0;
  // What they come from, as `motes info` names a codec ("id index").
  virtual std::string source_name() const = 0;
};

class BlockStream {
 public:
  BlockStream() = default;
  // `count` values stored one after the other from `offset` (format 1, and raw sections of
  // format 2); sums holds an XXH3 per block of per_block values (checked by verify_block).
  static BlockStream contiguous(std::shared_ptr<const ByteSource> source, std::string what, uint8_t dtype_code,
                                uint64_t count, uint64_t per_block, uint64_t offset, std::vector<uint64_t> sums);
  // `count` values in blocks of per_block values (the last one shorter), each coded on its
  // own (codec::encode) and stored at blocks[b].
  static BlockStream coded(std::shared_ptr<const ByteSource> source, std::string what, uint8_t dtype_code,
                           uint64_t count, uint64_t per_block, std::vector<StoredBlock> blocks);
  // `count` values that are not stored but computed from other stored bytes (ComputedValues),
  // all at once the first time any is read, then kept (in the cache of decoded blocks too,
  // so that another open of the same file finds them).
  static BlockStream derived(std::shared_ptr<const ByteSource> source, std::string what, uint8_t dtype_code,
                             uint64_t count, uint64_t per_block, std::shared_ptr<const ComputedValues> from);
  bool is_derived() const { return derived_ != nullptr; }
  // The quantile codes of the same values and the bases of their bins, for blocks coded
  // with the quantile predictor. `codes` must outlive this stream.
  void set_quantile_context(const BlockStream* codes, std::shared_ptr<const std::vector<uint64_t>> bases,
                            std::shared_ptr<const std::vector<double>> edges);

  const std::string& what() const { return what_; }
  uint32_t value_size() const { return type_.size; }
  uint64_t count() const { return count_; }
  uint64_t per_block() const { return per_block_; }
  uint64_t block_count() const { return count_ ? (count_ + per_block_ - 1) / per_block_ : 0; }
  bool is_coded() const { return coded_; }
  // Keys this stream's blocks in the cache of decoded blocks by what they hold rather than by
  // this object, so that another open of the same file finds them decoded already: `file` is
  // content_cache_key of the file (nothing changes when it is 0), `section` the stream's
  // section in it.
  void set_cache_key(uint64_t file, uint64_t section);
  uint64_t stored_bytes() const;  // in the source
  const std::vector<StoredBlock>& blocks() const { return blocks_; }
  const ByteSource& source() const { return *source_; }
  // The coders used, e.g. "delta+shuffle+[raw,raw,zstd,zstd]" or "raw", from the blocks'
  // own headers (several joined with " | " when blocks differ).
  std::string pipelines() const;

  // Value 0 in place, when the stream is contiguous and its source addressable; else null.
  // Only a test of addressability (read hints): values are read in place through
  // in_place(start, n), or after check(start, n).
  const unsigned char* in_place() const;
  // Value `start` in place, its blocks up to value start + n checked (raw streams); null when
  // the stream is not in place.
  const unsigned char* in_place(uint64_t start, uint64_t n) const;
  // Raw streams: checks the blocks holding values [start, start + n) against their checksums,
  // each block once (FormatError naming the stream and block on a mismatch). Coded: nothing.
  void check(uint64_t start, uint64_t n) const {
    if (checked_ && n) check_blocks(start / per_block_, (start + n - 1) / per_block_);
  }
  // Raw streams: checks those of `blocks` not checked yet, on up to `threads` threads (a
  // gather about to read rows scattered over many blocks checks them all first, side by side).
  void check(std::vector<uint64_t> blocks, unsigned threads) const;
  // Whether every block has been checked (or needs no check).
  bool all_checked() const { return !checked_ || checked_count_->load(std::memory_order_acquire) == sums_.size(); }
  // Decoded block b, through the shared cache; FormatError naming the stream and block when
  // its checksum or its contents are wrong.
  std::shared_ptr<const DecodedBlock> block(uint64_t b) const;
  // Copies values [start, start + n) to dst.
  void read(uint64_t start, uint64_t n, void* dst) const;
  // As read, but whole blocks not in the cache are decoded straight into dst and not cached:
  // for a pass whose values the caller keeps in another form (a derived stream's sources).
  void read_uncached(uint64_t start, uint64_t n, void* dst) const;
  // The values at positions pos[0..k) (ascending, each < count()) into out, k values: a
  // packed block's values are read where they lie, a word each (codec::AddressableBlock), any
  // other block is decoded once (through the cache).
  void gather(const uint64_t* pos, size_t k, void* out) const;
  // Coded block b as values addressable one by one, its stored bytes checked (once per
  // stream when the source is in memory or mapped; else read into `buf` and checked each
  // time); false when the block is not packed or needs quantile codes. FormatError naming the
  // stream and block when it is damaged.
  bool addressable(uint64_t b, codec::AddressableBlock& view, std::vector<unsigned char>& buf) const;
  // The stored bytes holding values [start, start + n) (whole blocks when coded, leaving out
  // blocks decoded already). Spans of many small runs should go through blocks_of (below).
  void byte_ranges(uint64_t start, uint64_t n, std::vector<ByteRange>& out) const;
  // The blocks holding values [start, start + n), appended to `blocks` (without repeating the
  // last one there); then the stored bytes of those not decoded already (sorted, unique).
  void blocks_of(uint64_t start, uint64_t n, std::vector<uint64_t>& blocks) const;
  void block_ranges(std::vector<uint64_t>& blocks, std::vector<ByteRange>& out) const;
  // Checks block b's stored bytes against its checksum (and that a coded block decodes).
  void verify_block(uint64_t b) const;

 private:
  std::shared_ptr<const ByteSource> source_;
  std::string what_;
  codec::ValueType type_{};
  uint8_t dtype_code_ = 0;
  uint64_t count_ = 0, per_block_ = 1;
  bool coded_ = false;
  uint64_t offset_ = 0;               // contiguous: value 0
  std::vector<uint64_t> sums_;        // contiguous: per block
  // contiguous with checksums: a bit per block that has passed its check
  std::shared_ptr<std::atomic<uint64_t>[]> checked_;
  std::shared_ptr<std::atomic<uint64_t>> checked_count_;  // bits set in checked_
  std::vector<StoredBlock> blocks_;   // coded
  // coded: a bit per block whose stored bytes passed their check where they lie (mapped)
  std::shared_ptr<std::atomic<uint64_t>[]> stored_checked_;
  uint64_t id_ = 0;                   // key in the cache of decoded blocks
  const BlockStream* codes_ = nullptr;
  std::shared_ptr<const std::vector<uint64_t>> bases_;
  std::shared_ptr<const std::vector<double>> edges_;
  struct Computed;  // derived streams: the values once computed
  std::shared_ptr<const ComputedValues> derived_;
  std::shared_ptr<Computed> computed_;

  // Derived streams: every value, computed on first use (or found in the cache).
  std::shared_ptr<const DecodedBlock> all() const;
  uint64_t values_in(uint64_t b) const { return std::min(per_block_, count_ - b * per_block_); }
  void check_blocks(uint64_t first, uint64_t last) const;
  // Raw block b's bytes against its checksum (they are `bytes`); marks it checked.
  void check_raw(uint64_t b, const unsigned char* bytes) const;
  std::shared_ptr<DecodedBlock> decode(uint64_t b) const;
  void decode_into(uint64_t b, unsigned char* dst) const;
  // read (keep) and read_uncached (not keep): the blocks of the span found in the cache are
  // copied from it; those missing are decoded from runs of their stored bytes read at once,
  // into the cache or, whole blocks when not kept or when the cache is full, straight into dst.
  void read_span(uint64_t start, uint64_t n, void* dst, bool keep) const;
  // Coded block b from its stored bytes (checked against the block's checksum first) into
  // dst: `stored` is nullptr (in place in the source's memory), their address, or a callable
  // returning it, called after the block's quantile codes are decoded (which may read).
  template <class Stored>
  void decode_stored(uint64_t b, Stored stored, unsigned char* dst) const;
  [[noreturn]] void fail(uint64_t b, const std::string& problem) const;
};

// Reads spans of values from streams; one reader per thread. It keeps the block it last
// used of each stream, so consecutive spans of one block cost no cache lookup.
class BlockReader {
 public:
  // Values [start, start + n) of `s`, valid until the next call for the same stream or the
  // reader's end: in place when the stream is, in a decoded block, or copied into the
  // reader's scratch when the span crosses blocks.
  const void* span(const BlockStream& s, uint64_t start, uint64_t n);
  template <class T>
  const T* values(const BlockStream& s, uint64_t start, uint64_t n) {
    return static_cast<const T*>(span(s, start, n));
  }

 private:
  struct Slot {
    const BlockStream* stream = nullptr;
    std::shared_ptr<const DecodedBlock> block;
    uint64_t first = 0, last = 0;  // values the block holds
    std::vector<unsigned char> scratch;
  };
  std::vector<Slot> slots_;
};

// What names a file's contents across opens, for set_cache_key: its identity (device and
// inode) with its header checksum, which covers every section and block of a motes file; 0
// for a source that is not a file.
uint64_t content_cache_key(const ByteSource& source, uint64_t header_checksum);
// Coded blocks decoded by this process so far, checks included (the work the cache saves).
uint64_t blocks_decoded();

}  // namespace motes
