#include "motes/particles/kept.hpp"

#include "motes/core/lru.hpp"

namespace motes {

namespace {

// One shard: a kept tree may take most of the budget.
using Kept = ShardedLru<std::shared_ptr<const void>, 1>;

Kept& kept() {
  static Kept k(env_megabytes("MOTES_KEPT_MB", uint64_t(64) << 20));
  return k;
}

}  // namespace

std::shared_ptr<const void> kept_find(uint64_t file, uint64_t what) { return file ? kept().find({file, what}) : nullptr; }
void kept_put(uint64_t file, uint64_t what, std::shared_ptr<const void> value, uint64_t bytes) {
  if (file) kept().put({file, what}, std::move(value), bytes);
}
void kept_clear() { kept().clear(); }

}  // namespace motes
