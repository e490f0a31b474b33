// The huge-page slab of memory.hpp. Size classes: a request rounds up to a multiple of a
// quarter of its power of two and of 4 KiB (from 16 KiB on, at most a quarter more than
// asked); a chunk of 2 MiB holds as many slots of one class as fit. Each chunk keeps a
// stack of its free slots; each class keeps the chunks that have a free one. Empty
// chunks wait on a spare list (within the bytes given to huge_slab_keep) for the next
// chunk of any class: a cache emptied and filled again reuses pages already cleared.
//
// Chunks are marked for huge pages from the start, so the kernel clears a chunk's 2 MiB at
// its first write, ahead of the blocks decoded into it: the first whole read of a
// 10M-particle step costs about 8 % more CPU than with 4 KiB pages (collapsing each chunk
// once filled, with MADV_COLLAPSE, cost 13 %), and every filtered query after it gathers
// 10-20 % faster (bench/README.md, query_driver).
#include "motes/core/memory.hpp"

#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace motes {

namespace {

constexpr size_t kMinSlot = kBasePage, kMaxSlot = kHugeSlabMaxBytes;

size_t whole_huge_pages(size_t bytes) { return (std::max<size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage; }

size_t slot_size(size_t bytes) {
  bytes = std::max(bytes, kMinSlot);
  const size_t quarter = std::max(kMinSlot, std::bit_floor(bytes) / 4);
  return (bytes + quarter - 1) / quarter * quarter;
}

}  // namespace

void* huge_aligned_alloc(size_t bytes) {
  bytes = whole_huge_pages(bytes);
  void* p = std::aligned_alloc(kHugePage, bytes);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);  // advisory: without THP it is ordinary memory
#endif
  return p;
}

void release_pages(void* p, size_t bytes) {
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kBasePage - 1) & ~uintptr_t(kBasePage - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~uintptr_t(kBasePage - 1);
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

namespace {

struct Chunk {
  unsigned char* base;
  size_t slot;
  std::vector<uint32_t> free;  // slot numbers, a stack
  uint32_t slots;
};

class Slab {
 public:
  void* allocate(size_t bytes) {
    const size_t slot = slot_size(bytes);
    std::lock_guard lock(m_);
    std::vector<Chunk*>& open = open_[slot];
    if (open.empty()) open.push_back(new_chunk(slot));
    Chunk* c = open.back();
    const uint32_t k = c->free.back();
    c->free.pop_back();
    if (c->free.empty()) open.pop_back();
    ++in_use_;
    in_use_bytes_ += slot;
    return c->base + size_t(k) * slot;
  }

  void free(void* p, size_t bytes) {
    const size_t slot = slot_size(bytes);
    std::lock_guard lock(m_);
    const auto at = chunks_.find(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(kHugePage - 1));
    if (at == chunks_.end() || at->second->slot != slot) std::abort();  // not ours, or freed with another size
    Chunk* c = at->second.get();
    std::vector<Chunk*>& open = open_[slot];
    if (c->free.empty()) open.push_back(c);
    c->free.push_back(uint32_t((static_cast<unsigned char*>(p) - c->base) / slot));
    --in_use_;
    in_use_bytes_ -= slot;
    if (c->free.size() == c->slots && open.size() > 1) {  // unused, and the class has another chunk with room
      open.erase(std::find(open.begin(), open.end(), c));
      unsigned char* base = c->base;
      chunks_.erase(at);
      retire(base);
    }
  }

  void keep(uint64_t bytes) {
    std::lock_guard lock(m_);
    keep_ = bytes;
    while (!spare_.empty() && over_keep()) {
      std::free(spare_.back());
      spare_.pop_back();
    }
  }

  void lock() { m_.lock(); }
  void unlock() { m_.unlock(); }

  HugeSlabUsage usage() {
    std::lock_guard lock(m_);
    return {chunks_.size(), chunks_.size() * kHugePage, in_use_, in_use_bytes_, spare_.size()};
  }

 private:
  Chunk* new_chunk(size_t slot) {
    auto c = std::make_unique<Chunk>();
    if (!spare_.empty()) {
      c->base = spare_.back();  // its pages are touched already: no page to clear
      spare_.pop_back();
    } else {
      c->base = static_cast<unsigned char*>(huge_aligned_alloc(kHugePage));
    }
    c->slot = slot;
    c->slots = uint32_t(kHugePage / slot);
    for (uint32_t k = c->slots; k-- > 0;) c->free.push_back(k);  // slot 0 first
    Chunk* raw = c.get();
    chunks_.emplace(reinterpret_cast<uintptr_t>(c->base), std::move(c));
    return raw;
  }
  // An empty chunk: kept for the next chunk of any class while the slab stays within
  // keep_, else handed back to the system.
  void retire(unsigned char* base) {
    spare_.push_back(base);
    if (over_keep()) {
      std::free(base);
      spare_.pop_back();
    }
  }
  bool over_keep() const { return in_use_bytes_ + spare_.size() * kHugePage > keep_; }

  std::mutex m_;
  std::unordered_map<uintptr_t, std::unique_ptr<Chunk>> chunks_;  // by base address
  std::unordered_map<size_t, std::vector<Chunk*>> open_;           // by slot size: chunks with a free slot
  std::vector<unsigned char*> spare_;                              // empty chunks, not handed back yet
  uint64_t in_use_ = 0, in_use_bytes_ = 0, keep_ = 0;
};

Slab& slab() {
  // Never destroyed: blocks may be freed by static destructors after exit. A fork waits
  // until no thread is inside the slab, so the child's copy of its lock is free.
  static Slab* s = [] {
    auto* made = new Slab();
    ::pthread_atfork([] { slab().lock(); }, [] { slab().unlock(); }, [] { slab().unlock(); });
    return made;
  }();
  return *s;
}

}  // namespace

// Under AddressSanitizer (the fuzzing builds) every allocation is its own, as before the
// slab, so that a decoder writing past a block's end is caught, not lost inside a chunk.
#if defined(__SANITIZE_ADDRESS__)
#define MOTES_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MOTES_ASAN 1
#endif
#endif

void* huge_slab_allocate(size_t bytes) {
#ifdef MOTES_ASAN
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return p;
#else
  if (bytes > kMaxSlot) return huge_aligned_alloc(bytes);
  return slab().allocate(bytes);
#endif
}

void huge_slab_free(void* p, size_t bytes) {
  if (!p) return;
#ifdef MOTES_ASAN
  (void)bytes;
  return std::free(p);
#else
  if (bytes > kMaxSlot) return std::free(p);
  slab().free(p, bytes);
#endif
}

bool huge_slab_pooled() {
#ifdef MOTES_ASAN
  return false;
#else
  return true;
#endif
}

size_t huge_slab_reserved(size_t bytes) {
  return bytes > kMaxSlot ? whole_huge_pages(bytes) : slot_size(bytes);
}

void huge_slab_keep(uint64_t bytes) { slab().keep(bytes); }

namespace {

#ifdef MOTES_ASAN
constexpr bool kNoReuse = true;  // a block read after it was freed must not be one handed out again
#else
constexpr bool kNoReuse = false;
#endif

// The huge blocks of memory.hpp: those in use (by address, with their size) and those kept,
// oldest first. Blocks are handed back outside the lock.
class Blocks {
 public:
  using Clock = std::chrono::steady_clock;

  void* allocate(size_t bytes) {
    const size_t want = whole_huge_pages(bytes);
    {
      std::lock_guard lock(m_);
      size_t best = kept_.size();
      for (size_t k = 0; k < kept_.size(); ++k)
        if (kept_[k].bytes >= want && kept_[k].bytes / 2 <= want && (best == kept_.size() || kept_[k].bytes < kept_[best].bytes))
          best = k;
      if (best < kept_.size()) {
        const Kept b = kept_[best];
        kept_.erase(kept_.begin() + std::ptrdiff_t(best));
        kept_bytes_ -= b.bytes;
        in_use_.emplace(b.p, b.bytes);
        in_use_bytes_ += b.bytes;
        ++reused_;
        return b.p;
      }
    }
    const bool reusing = scopes_.load() > 0;
    const size_t made = reusing ? whole_huge_pages(want + want / 16) : want;
    void* p = huge_aligned_alloc(made);
    std::vector<void*> drop;
    {
      std::lock_guard lock(m_);
      in_use_.emplace(p, made);
      in_use_bytes_ += made;
      peak_ = std::max(peak_, in_use_bytes_);
      ++made_;
      trim_locked(drop);
    }
    hand_back(drop);
    return p;
  }

  void free(void* p) {
    std::vector<void*> drop;
    {
      std::lock_guard lock(m_);
      const auto at = in_use_.find(p);
      if (at == in_use_.end()) std::abort();  // not a block of ours
      const size_t bytes = at->second;
      in_use_.erase(at);
      in_use_bytes_ -= bytes;
      if (scopes_.load() == 0 || kNoReuse) {
        drop.push_back(p);
      } else {
        kept_.push_back({p, bytes, Clock::now()});
        kept_bytes_ += bytes;
        trim_locked(drop);
        if (!kept_.empty() && !timer_) start_timer_locked();
      }
    }
    hand_back(drop);
  }

  void open() {
    std::lock_guard lock(m_);
    if (scopes_.fetch_add(1) == 0) peak_ = in_use_bytes_;
  }
  void close() {
    {
      std::lock_guard lock(m_);
      if (scopes_.fetch_sub(1) != 1) return;
    }
    release();
  }
  bool reusing() const { return scopes_.load() > 0; }
  void set_idle(double seconds) {
    {
      std::lock_guard lock(m_);
      idle_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)));
    }
    changed_.notify_all();
  }

  void release() {
    std::vector<void*> drop;
    {
      std::lock_guard lock(m_);
      for (const Kept& b : kept_) drop.push_back(b.p);
      kept_.clear();
      kept_bytes_ = 0;
    }
    changed_.notify_all();
    hand_back(drop);
  }

  HugeBlockUsage usage() {
    std::lock_guard lock(m_);
    return {in_use_.size(), in_use_bytes_, kept_.size(), kept_bytes_, peak_, reused_, made_};
  }

  void lock() { m_.lock(); }
  void unlock() { m_.unlock(); }
  void forked_child() { timer_ = false; }  // the child has no timer thread: the next block kept starts one

 private:
  struct Kept {
    void* p;
    size_t bytes;
    Clock::time_point since;
  };

  // Blocks kept and in use within the peak in use: the oldest kept leave first.
  void trim_locked(std::vector<void*>& drop) {
    while (!kept_.empty() && kept_bytes_ + in_use_bytes_ > peak_) {
      drop.push_back(kept_.front().p);
      kept_bytes_ -= kept_.front().bytes;
      kept_.erase(kept_.begin());
    }
  }
  static void hand_back(const std::vector<void*>& blocks) {
    for (void* p : blocks) std::free(p);
  }

  // A thread that hands back the blocks kept for the idle time, and ends when none is kept.
  void start_timer_locked() {
    timer_ = true;
    std::thread([this] {
      std::unique_lock lock(m_);
      while (!kept_.empty()) {
        const Clock::time_point due = kept_.front().since + idle_;
        if (Clock::now() < due) {
          changed_.wait_until(lock, due);
          continue;
        }
        std::vector<void*> drop;
        while (!kept_.empty() && kept_.front().since + idle_ <= Clock::now()) {
          drop.push_back(kept_.front().p);
          kept_bytes_ -= kept_.front().bytes;
          kept_.erase(kept_.begin());
        }
        lock.unlock();
        hand_back(drop);
        lock.lock();
      }
      timer_ = false;
    }).detach();
  }

  std::mutex m_;
  std::condition_variable changed_;
  std::unordered_map<void*, size_t> in_use_;
  std::vector<Kept> kept_;  // oldest first
  uint64_t in_use_bytes_ = 0, kept_bytes_ = 0, peak_ = 0, reused_ = 0, made_ = 0;
  std::atomic<unsigned> scopes_{0};
  bool timer_ = false;
  Clock::duration idle_ = std::chrono::seconds(30);
};

Blocks& blocks() {
  // Never destroyed: vectors may be freed by static destructors after exit, and the timer
  // thread may be waiting. A fork waits until no thread is inside, as for the slab.
  static Blocks* b = [] {
    auto* made = new Blocks();
    ::pthread_atfork([] { blocks().lock(); }, [] { blocks().unlock(); },
                     [] {
                       blocks().forked_child();
                       blocks().unlock();
                     });
    return made;
  }();
  return *b;
}

}  // namespace

void* huge_block_allocate(size_t bytes) { return blocks().allocate(bytes); }
void huge_block_free(void* p, size_t) { blocks().free(p); }
void huge_block_release() { blocks().release(); }
bool huge_block_reusing() { return blocks().reusing(); }
void huge_block_idle(double seconds) { blocks().set_idle(seconds); }
HugeBlockReuse::HugeBlockReuse() { blocks().open(); }
HugeBlockReuse::~HugeBlockReuse() { blocks().close(); }
HugeBlockUsage huge_block_usage() { return blocks().usage(); }

HugeSlabUsage huge_slab_usage() { return slab().usage(); }

bool keep_freed_memory() {
#ifdef __GLIBC__
  constexpr int kLargest = 32 << 20;  // DEFAULT_MMAP_THRESHOLD_MAX on 64-bit glibc: mallopt refuses more
  const bool reused = ::mallopt(M_MMAP_THRESHOLD, kLargest) == 1;  // blocks up to it from the heap...
  const bool kept = ::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;  // ...which is not trimmed
  return reused && kept;
#else
  return false;
#endif
}

}  // namespace motes
