// The process's cache of decoded blocks: the least recently used blocks of every stream,
// up to a byte budget, in huge pages (core/memory.hpp). BlockStream (block_stream.hpp) keeps
// and finds its blocks here by (stream id, block); blocks in use elsewhere stay alive after
// eviction (shared_ptr): the cache only stops holding them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "motes/core/lru.hpp"

namespace motes {

// Decoded values of one block, 4 KiB aligned, in huge pages (core/memory.hpp).
class DecodedBlock {
 public:
  explicit DecodedBlock(size_t bytes);
  ~DecodedBlock();
  DecodedBlock(const DecodedBlock&) = delete;
  DecodedBlock& operator=(const DecodedBlock&) = delete;
  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t reserved() const;  // the memory it takes (what the cache counts)

 private:
  unsigned char* data_;
  size_t size_;
};

class BlockCache {
 public:
  BlockCache();
  bool has_room(uint64_t bytes) { return lru_.used() + bytes <= lru_.limit(); }
  // Which of `blocks` of `stream` are not held.
  void missing(uint64_t stream, const std::vector<uint64_t>& blocks, std::vector<uint64_t>& out) {
    for (uint64_t b : blocks)
      if (!lru_.contains({stream, b})) out.push_back(b);
  }
  std::shared_ptr<const DecodedBlock> find(uint64_t stream, uint64_t block) { return lru_.find({stream, block}); }
  void put(uint64_t stream, uint64_t block, std::shared_ptr<const DecodedBlock> b) {
    const uint64_t bytes = b->reserved();
    lru_.put({stream, block}, std::move(b), bytes);
  }
  void set_limit(uint64_t bytes);
  uint64_t limit() { return lru_.limit(); }
  uint64_t used() { return lru_.used(); }
  void clear() { lru_.clear(); }

 private:
  // Shards: the query's threads look up blocks side by side without waiting on one lock.
  ShardedLru<std::shared_ptr<const DecodedBlock>, 16> lru_;
};

// The process's one cache.
BlockCache& block_cache();

// The process-wide cache of decoded blocks: how many bytes it may keep (MOTES_CACHE_MB;
// default 1 GiB, at most an eighth of the memory), what it holds, and emptying it (for cold
// measurements).
void set_block_cache_bytes(uint64_t bytes);
uint64_t block_cache_bytes();
uint64_t block_cache_used();
void clear_block_cache();

}  // namespace motes
