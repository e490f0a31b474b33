// Memory in transparent huge pages, for data read at random:
// - HugePageAllocator: the write's large arrays (keys, permutations), 2 MiB aligned, so
//   random access into hundreds of megabytes does not stall on page walks and first touch
//   costs far fewer page faults. resize() leaves new elements of trivial types
//   uninitialised (their users write every element before reading it): zeroing hundreds
//   of megabytes first would be a pass of its own.
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
    return static_cast<T*>(huge_aligned_alloc(bytes));
  }
  void deallocate(T* p, size_t) noexcept { std::free(p); }
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

// The memory of a vector that shrank, past its size, handed back (it keeps its capacity).
template <class T>
void release_unused_pages(BigVector<T>& v) {
  release_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

}  // namespace motes
