#include "motes/io/remote.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "motes/core/errors.hpp"
#include "motes/core/lru.hpp"

namespace motes {

namespace {

std::mutex registry_mutex;
std::vector<std::pair<std::string, std::shared_ptr<const RemoteStore>>>& registry() {
  static std::vector<std::pair<std::string, std::shared_ptr<const RemoteStore>>> r;
  return r;
}

std::atomic<uint64_t> calls{0}, ranges_asked{0}, bytes_asked{0};

void fetch(const RemoteStore& store, const std::string& key, const std::vector<ByteRange>& ranges,
           const std::vector<void*>& dst) {
  if (ranges.empty()) return;
  calls++;
  ranges_asked += ranges.size();
  for (const ByteRange& r : ranges) bytes_asked += r.length;
  store.read(key, ranges, dst);
}

class RemoteSource final : public ByteSource {
 public:
  RemoteSource(std::shared_ptr<const RemoteStore> store, std::string key, uint64_t size)
      : store_(std::move(store)), key_(std::move(key)), name_(store_->url(key_)), size_(size) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }

  void read(uint64_t offset, uint64_t n, void* dst) const override {
    if (offset > size_ || n > size_ - offset)
      throw FormatError(name_ + ": a read of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                        " runs past the end of the " + std::to_string(size_) + "-byte object (truncated?)");
    if (n == 0) return;
    std::unique_lock lock(mutex_);
    if (copy_kept(offset, n, static_cast<unsigned char*>(dst))) return;
    // The aligned blocks the read covers, fetched and kept (headers, directories, a miss).
    const uint64_t lo = offset / kRemoteBlock * kRemoteBlock;
    const uint64_t hi = std::min(size_, (offset + n + kRemoteBlock - 1) / kRemoteBlock * kRemoteBlock);
    // The first read of a file (its header) also fetches its end, where a particle or field
    // file keeps its directory and the sections read before any query: one round trip, not three.
    const uint64_t tail_lo = first_read_ ? std::max(hi, size_ - std::min(size_, tail_bytes(size_))) : size_;
    first_read_ = false;
    lock.unlock();
    std::string bytes(hi - lo, '\0'), tail(size_ - tail_lo, '\0');
    if (tail.empty())
      fetch(*store_, key_, {{lo, hi - lo}}, {bytes.data()});
    else
      fetch(*store_, key_, {{lo, hi - lo}, {tail_lo, tail.size()}}, {bytes.data(), tail.data()});
    std::memcpy(dst, bytes.data() + (offset - lo), n);
    lock.lock();
    keep(lo, std::move(bytes));
    if (!tail.empty()) keep(tail_lo, std::move(tail));
  }

  // How much of a file's end its first read fetches: 1/64 of it, within [256 KiB, 4 MiB].
  static uint64_t tail_bytes(uint64_t size) {
    return std::clamp<uint64_t>(size / 64, uint64_t(256) << 10, uint64_t(4) << 20);
  }

  ReadCount will_need(const std::vector<ByteRange>& ranges) const override {
    std::vector<ByteRange> wanted;
    {
      std::lock_guard lock(mutex_);
      for (const ByteRange& r : ranges) {
        if (r.length == 0 || r.offset >= size_) continue;
        ByteRange c{r.offset, std::min(r.length, size_ - r.offset)};
        if (!covered(c.offset, c.length)) wanted.push_back(c);
      }
    }
    wanted = coalesce(std::move(wanted), remote_read_gap());
    ReadCount sent{wanted.size(), 0};
    if (wanted.empty()) return sent;
    for (const ByteRange& w : wanted) sent.bytes += w.length;
    std::vector<std::string> bytes(wanted.size());
    std::vector<void*> dst;
    for (size_t i = 0; i < wanted.size(); ++i) {
      bytes[i].resize(wanted[i].length);
      dst.push_back(bytes[i].data());
    }
    fetch(*store_, key_, wanted, dst);
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < wanted.size(); ++i) keep(wanted[i].offset, std::move(bytes[i]));
    return sent;
  }

 private:
  // The kept piece holding [offset, offset + n), if one does.
  const std::pair<const uint64_t, std::string>* holder(uint64_t offset, uint64_t n) const {
    auto it = kept_.upper_bound(offset);
    if (it == kept_.begin()) return nullptr;
    --it;
    if (offset + n <= it->first + it->second.size()) return &*it;
    return nullptr;
  }
  bool covered(uint64_t offset, uint64_t n) const { return holder(offset, n) != nullptr; }
  bool copy_kept(uint64_t offset, uint64_t n, unsigned char* dst) const {
    const auto* h = holder(offset, n);
    if (!h) return false;
    std::memcpy(dst, h->second.data() + (offset - h->first), n);
    return true;
  }
  void keep(uint64_t offset, std::string bytes) const {
    kept_bytes_ += bytes.size();
    auto [it, inserted] = kept_.try_emplace(offset, std::move(bytes));
    if (!inserted) {
      if (bytes.size() > it->second.size()) std::swap(it->second, bytes);
      kept_bytes_ -= bytes.size();
    }
    while (kept_bytes_ > kRemoteKeep && kept_.size() > 1) {  // the budget: the oldest offsets go first
      auto victim = kept_.begin() == it ? std::next(kept_.begin()) : kept_.begin();
      kept_bytes_ -= victim->second.size();
      kept_.erase(victim);
    }
  }

  std::shared_ptr<const RemoteStore> store_;
  std::string key_, name_;
  uint64_t size_;
  mutable std::mutex mutex_;
  mutable std::map<uint64_t, std::string> kept_;
  mutable uint64_t kept_bytes_ = 0;
  mutable bool first_read_ = true;
};

}  // namespace

void register_remote_store(const std::string& prefix, std::shared_ptr<const RemoteStore> store) {
  if (prefix.empty()) throw UsageError("a remote store's prefix must not be empty");
  unregister_remote_store(prefix);
  std::lock_guard lock(registry_mutex);
  registry().emplace_back(prefix, std::move(store));
}

void unregister_remote_store(const std::string& prefix) {
  std::shared_ptr<const RemoteStore> gone;  // released after the lock
  std::lock_guard lock(registry_mutex);
  auto& r = registry();
  for (auto it = r.begin(); it != r.end(); ++it)
    if (it->first == prefix) {
      gone = std::move(it->second);
      r.erase(it);
      return;
    }
}

std::shared_ptr<const RemoteStore> remote_store_of(const std::string& path, std::string* key) {
  std::lock_guard lock(registry_mutex);
  for (const auto& [prefix, store] : registry())
    if (path.compare(0, prefix.size(), prefix) == 0) {
      if (key) *key = path.substr(prefix.size());
      return store;
    }
  return nullptr;
}

std::shared_ptr<const ByteSource> open_remote_source(const std::string& path, const std::string& what,
                                                     uint64_t max_bytes) {
  std::string key;
  auto store = remote_store_of(path, &key);
  if (!store) throw UsageError("'" + path + "' is not under a registered remote store");
  const uint64_t size = store->size(key);
  if (size > max_bytes)
    throw FormatError(store->url(key) + ": the " + what + " is " + std::to_string(size) + " bytes, more than the " +
                      std::to_string(max_bytes) + " a " + what + " may be");
  return std::make_shared<RemoteSource>(std::move(store), std::move(key), size);
}

uint64_t remote_read_gap() { return env_bytes("MOTES_REMOTE_READ_GAP_KB", 10, kRemoteReadGap); }

RemoteCounters remote_counters() { return {calls.load(), ranges_asked.load(), bytes_asked.load()}; }

}  // namespace motes
