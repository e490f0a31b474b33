// What a particle file's open decodes and derives from its metadata (the node tree with its
// levels, the column indexes), kept across opens of the same contents: keyed by the file's
// content_cache_key (its identity and header checksum, which covers every section), so a
// reopened file skips the zstd frames and the derivations. Least recently used first out, within
// a byte budget shared by every kind (64 MiB; MOTES_KEPT_MB).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

namespace motes {

// The value kept for (file, what), or null; `what` names the thing within the file (a
// column's number, or kKeptTree).
std::shared_ptr<const void> kept_find(uint64_t file, uint64_t what);
// Keeps `value` (taking about `bytes`) for (file, what); file 0 keeps nothing.
void kept_put(uint64_t file, uint64_t what, std::shared_ptr<const void> value, uint64_t bytes);
// Forgets everything (cold measurements; clear_block_cache calls it too).
void kept_clear();
inline constexpr uint64_t kKeptTree = ~uint64_t(0);

template <class T>
std::shared_ptr<const T> kept_as(uint64_t file, uint64_t what) {
  return std::static_pointer_cast<const T>(kept_find(file, what));
}

}  // namespace motes
