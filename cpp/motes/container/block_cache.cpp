#include "motes/container/block_cache.hpp"

#include <unistd.h>

#include <algorithm>

#include "motes/core/memory.hpp"

namespace motes {

namespace {

// 1 GiB, at most an eighth of the machine's memory; MOTES_CACHE_MB overrides.
uint64_t default_limit() {
  uint64_t bytes = uint64_t(1) << 30;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) bytes = std::min<uint64_t>(bytes, uint64_t(pages) * uint64_t(page) / 8 >> 20 << 20);
  return env_megabytes("MOTES_CACHE_MB", bytes);
}

}  // namespace

// In huge pages: a filtered query reads a value or two in each of thousands of blocks.
DecodedBlock::DecodedBlock(size_t bytes) : data_(static_cast<unsigned char*>(huge_slab_allocate(bytes))), size_(bytes) {}
DecodedBlock::~DecodedBlock() { huge_slab_free(data_, size_); }
size_t DecodedBlock::reserved() const { return huge_slab_reserved(size_); }

BlockCache::BlockCache() : lru_(default_limit()) {
  huge_slab_keep(lru_.limit());  // blocks evicted or cleared leave their pages for the next ones
}

void BlockCache::set_limit(uint64_t bytes) {
  lru_.set_limit(bytes);
  huge_slab_keep(bytes);
}

BlockCache& block_cache() {
  static BlockCache c;
  return c;
}

void set_block_cache_bytes(uint64_t bytes) { block_cache().set_limit(bytes); }
uint64_t block_cache_bytes() { return block_cache().limit(); }
uint64_t block_cache_used() { return block_cache().used(); }
void clear_block_cache() { block_cache().clear(); }

}  // namespace motes
