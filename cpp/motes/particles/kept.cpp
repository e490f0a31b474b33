#include "motes/particles/kept.hpp"

#include <cstdlib>
#include <list>
#include <map>
#include <mutex>

namespace motes {

namespace {

class Kept {
 public:
  Kept() {
    uint64_t mb = 64;
    if (const char* v = std::getenv("MOTES_KEPT_MB"); v && *v) {
      char* end = nullptr;
      unsigned long long m = std::strtoull(v, &end, 10);
      if (end && !*end) mb = m;
    }
    limit_ = mb << 20;
  }
  std::shared_ptr<const void> find(uint64_t file, uint64_t what) {
    std::lock_guard lock(m_);
    auto it = map_.find({file, what});
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->value;
  }
  void put(uint64_t file, uint64_t what, std::shared_ptr<const void> value, uint64_t bytes) {
    std::lock_guard lock(m_);
    if (!file || bytes > limit_ || map_.count({file, what})) return;
    lru_.push_front(Item{{file, what}, std::move(value), bytes});
    map_.emplace(lru_.front().key, lru_.begin());
    used_ += bytes;
    while (used_ > limit_ && !lru_.empty()) {
      used_ -= lru_.back().bytes;
      map_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }
  void clear() {
    std::lock_guard lock(m_);
    map_.clear();
    lru_.clear();
    used_ = 0;
  }

 private:
  struct Item {
    std::pair<uint64_t, uint64_t> key;
    std::shared_ptr<const void> value;
    uint64_t bytes;
  };
  std::mutex m_;
  std::list<Item> lru_;
  std::map<std::pair<uint64_t, uint64_t>, std::list<Item>::iterator> map_;
  uint64_t used_ = 0, limit_ = 0;
};

Kept& kept() {
  static Kept k;
  return k;
}

}  // namespace

std::shared_ptr<const void> kept_find(uint64_t file, uint64_t what) { return file ? kept().find(file, what) : nullptr; }
void kept_put(uint64_t file, uint64_t what, std::shared_ptr<const void> value, uint64_t bytes) {
  kept().put(file, what, std::move(value), bytes);
}
void kept_clear() { kept().clear(); }

}  // namespace motes
