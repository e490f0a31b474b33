// The process-wide caches (decoded blocks: container/block_stream; trees and column indexes
// kept across opens: particles/kept): values under a key of two 64-bit words, least
// recently used out beyond a byte budget. Shards (each with its own lock, map and recency
// list) keep threads that look up blocks side by side from waiting on one lock; the budget
// is global, and a put beyond it evicts the least recently used entries of its own shard
// first, then of the others in turn (never holding two locks).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace motes {

// An environment variable holding a whole number of units of 2^shift bytes, in bytes;
// `fallback` bytes when it is unset, empty or not a number.
inline uint64_t env_bytes(const char* name, unsigned shift, uint64_t fallback) {
  if (const char* v = std::getenv(name); v && *v) {
    char* end = nullptr;
    const unsigned long long m = std::strtoull(v, &end, 10);
    if (end && !*end) return uint64_t(m) << shift;
  }
  return fallback;
}
// In MiB (MOTES_CACHE_MB, MOTES_KEPT_MB).
inline uint64_t env_megabytes(const char* name, uint64_t fallback) { return env_bytes(name, 20, fallback); }

template <class Value, unsigned Shards>
class ShardedLru {
 public:
  struct Key {
    uint64_t a, b;
    bool operator==(const Key& o) const { return a == o.a && b == o.b; }
  };

  explicit ShardedLru(uint64_t limit) : limit_(limit) {}

  // The value under `key`, made the most recently used; a default Value when absent.
  Value find(const Key& key) {
    Shard& s = shard(key);
    std::lock_guard lock(s.m);
    auto it = s.map.find(key);
    if (it == s.map.end()) return Value();
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    return it->second->value;
  }
  bool contains(const Key& key) {
    Shard& s = shard(key);
    std::lock_guard lock(s.m);
    return s.map.count(key) != 0;
  }
  // Keeps `value` (taking `bytes` of the budget) unless the key is held already or it alone
  // exceeds the budget; then evicts down to the budget.
  void put(const Key& key, Value value, uint64_t bytes) {
    if (bytes > limit_.load(std::memory_order_relaxed)) return;
    Shard& s = shard(key);
    {
      std::lock_guard lock(s.m);
      if (s.map.count(key)) return;  // put by another thread meanwhile
      s.lru.push_front(Item{key, std::move(value), bytes});
      s.map.emplace(key, s.lru.begin());
      s.bytes += bytes;
      used_.fetch_add(bytes, std::memory_order_relaxed);
    }
    trim(size_t(&s - shards_.data()), &key);
  }
  void set_limit(uint64_t bytes) {
    limit_.store(bytes, std::memory_order_relaxed);
    trim(0, nullptr);
  }
  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  void clear() {
    for (Shard& s : shards_) {
      std::lock_guard lock(s.m);
      used_.fetch_sub(s.bytes, std::memory_order_relaxed);  // not a walk of the list: its entries are cold
      s.bytes = 0;
      s.map.clear();
      s.lru.clear();
    }
  }

 private:
  struct Item {
    Key key;
    Value value;
    uint64_t bytes;
  };
  struct Hash {
    size_t operator()(const Key& k) const { return size_t((k.a ^ (k.b * 0x9E3779B97F4A7C15ULL)) * 0xD6E8FEB86659FD93ULL >> 7); }
  };
  struct Shard {
    std::mutex m;
    std::list<Item> lru;
    std::unordered_map<Key, typename std::list<Item>::iterator, Hash> map;
    uint64_t bytes = 0;  // of its entries
  };
  std::array<Shard, Shards> shards_;
  std::atomic<uint64_t> used_{0}, limit_;

  Shard& shard(const Key& k) { return shards_[(Hash()(k) >> 20) % Shards]; }
  // Evicts least recently used entries, shard `first` first, until within the budget; never
  // `keep` (the entry just put), unless it alone is left.
  void trim(size_t first, const Key* keep) {
    for (size_t k = 0; k <= Shards && used() > limit(); ++k) {
      Shard& s = shards_[(first + k) % Shards];
      std::vector<Value> gone;  // released after the lock (a value's destructor may be slow)
      {
        std::lock_guard lock(s.m);
        while (used() > limit() && !s.lru.empty()) {
          if (keep && k < Shards && s.lru.back().key == *keep) break;  // the others' turn first
          used_.fetch_sub(s.lru.back().bytes, std::memory_order_relaxed);
          s.bytes -= s.lru.back().bytes;
          s.map.erase(s.lru.back().key);
          gone.push_back(std::move(s.lru.back().value));
          s.lru.pop_back();
        }
      }
    }
  }
};

}  // namespace motes
