// Memory in transparent huge pages, for data read at random:
// - HugePageAllocator: the write's large arrays (keys, permutations), 2 MiB aligned, so
//   random access into hundreds of megabytes does not stall on page walks and first touch
//   costs far fewer page faults. resize() leaves new elements of trivial types
//   uninitialised (their users write every element before reading it): zeroing hundreds
//   of megabytes first would be a pass of its own. Its blocks of 2 MiB or more are kept
//   for the next write while a HugeBlockReuse lives (a process writing step after step).
// - huge_slab_allocate: many middle-sized buffers (the decoded blocks of the read path)
//   carved out of shared 2 MiB chunks in huge pages, so a query that reads one
//   value in each of thousands of blocks walks a few dozen pages, not thousands.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace motes {

constexpr size_t kBasePage = 4096;               // the base pages of x86-64 and arm64 (Linux's default)
constexpr size_t kHugePage = size_t(2) << 20;  // their transparent huge pages

// `bytes` of 2 MiB aligned memory (a multiple of 2 MiB), marked for huge pages; free with std::free.
void* huge_aligned_alloc(size_t bytes);

// `bytes` (at least 1) of 4 KiB aligned memory: up to 1 MiB, a slot of a 2 MiB chunk in huge
// pages shared with allocations of about the same size (size classes: multiples of 4 KiB,
// and from 16 KiB on, at most a quarter more than asked); above 1 MiB, huge_aligned_alloc.
// Thread-safe. A chunk none of whose slots is in use (but the last one with room of its
// size class) is kept for the next chunks while the slots in use and the chunks kept take
// at most huge_slab_keep's bytes (0 at first), else handed back to the system.
constexpr size_t kHugeSlabMaxBytes = kHugePage / 2;  // the largest slot
void* huge_slab_allocate(size_t bytes);
void huge_slab_free(void* p, size_t bytes);  // `bytes` as allocated
size_t huge_slab_reserved(size_t bytes);     // the memory an allocation of `bytes` takes
void huge_slab_keep(uint64_t bytes);         // hands back the empty chunks beyond it at once
// Chunks in use and their bytes, slots in use and theirs, empty chunks kept (for tests and
// memory reports).
struct HugeSlabUsage {
  uint64_t chunks = 0, bytes = 0, slots_in_use = 0, slot_bytes_in_use = 0, spare_chunks = 0;
};
HugeSlabUsage huge_slab_usage();
// False under AddressSanitizer, where each allocation is its own (memory.cpp).
bool huge_slab_pooled();

// Blocks of 2 MiB or more, 2 MiB aligned, in huge pages, reused across writes: a process that
// writes a step every second would otherwise map its layout's and stages' hundreds of
// megabytes afresh every time, and the kernel clears every page at its first touch (about a
// sixth of a 10M-particle write's CPU; bench/README.md). While at least one HugeBlockReuse
// lives (dataset writers hold one: Dataset::create's handles, BackgroundWriter), a block freed
// is kept, not handed back, and the next allocation it fits takes it (the smallest kept
// block of at least the bytes asked and at most twice them); a block made while reuse is on
// is made a sixteenth larger, so that a count growing a little from one step to the next
// still fits. The rule that bounds the memory kept:
// - the blocks kept and those in use take together at most the most bytes of blocks that
//   were in use at once since reuse began (a process keeps no more than its largest write
//   used at once): past it, the blocks kept longest are handed back;
// - a block kept unused for the idle time (30 s; huge_block_idle sets it) is handed back (a
//   helper thread, running only while some block is kept, times them);
// - when the last HugeBlockReuse ends, or at huge_block_release(), every kept block is.
// Without a HugeBlockReuse a block is handed back when freed, as a std::free would. Thread-safe.
#define MOTES_HUGE_BLOCK_REUSE 1  // this API exists (for the profiling drivers)
void* huge_block_allocate(size_t bytes);        // bytes >= 1
void huge_block_free(void* p, size_t bytes);    // a block of huge_block_allocate(bytes)
void huge_block_release();                      // hands back every block kept now
bool huge_block_reusing();                      // whether a HugeBlockReuse lives
void huge_block_idle(double seconds);           // the idle time after which a kept block goes
class HugeBlockReuse {
 public:
  HugeBlockReuse();
  ~HugeBlockReuse();
  HugeBlockReuse(const HugeBlockReuse&) = delete;
  HugeBlockReuse& operator=(const HugeBlockReuse&) = delete;
};
// Blocks in use and kept and their bytes, the peak bytes in use the rule bounds by, and how
// many allocations took a kept block or a new one (for tests and memory reports).
struct HugeBlockUsage {
  uint64_t in_use = 0, in_use_bytes = 0, kept = 0, kept_bytes = 0, peak_bytes = 0, reused = 0, made = 0;
};
HugeBlockUsage huge_block_usage();

template <class T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      void* p = std::malloc(bytes ? bytes : 1);
      if (!p) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    return static_cast<T*>(huge_block_allocate(bytes));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < kHugePage) return std::free(p);
    huge_block_free(p, n * sizeof(T));
  }
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;  // default-initialised: no zeroing
  }
  template <class U, class... A>
  void construct(U* p, A&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(args)...);
  }

  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
};

template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

// Hands the whole pages inside [p, p + bytes) back to the system; they read as zeros if
// touched again.
void release_pages(void* p, size_t bytes);

// Has malloc keep what the process frees for its next allocations, in blocks up to 32 MiB
// (glibc's largest mmap threshold), instead of handing it back to the kernel: a process that
// takes one large step after another (motes ingest: each step's numpy arrays, the stream
// library's buffers) then reuses its pages instead of faulting fresh ones in at every step,
// which on a VM costs the host a round trip per page and slows every process beside it.
// Process-wide and for good; glibc only (elsewhere it returns false and changes nothing).
bool keep_freed_memory();

// The memory of a vector that shrank, past its size, handed back (it keeps its capacity);
// kept while blocks are reused (huge_block_reusing): its block goes back whole to the next
// write, which would have those pages cleared again.
template <class T>
void release_unused_pages(BigVector<T>& v) {
  if (v.capacity() * sizeof(T) >= kHugePage && huge_block_reusing()) return;
  release_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

}  // namespace motes
