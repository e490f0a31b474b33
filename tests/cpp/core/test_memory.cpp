// The huge-page slab (core/memory.hpp) behind the decoded-block cache: every allocation
// its own bytes, aligned, in the chunk its size class lives in; chunks handed back once
// empty, one kept per class; a forked child can allocate. The huge blocks of BigVector,
// reused across writes within their bounds.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "motes/container/block_stream.hpp"
#include "motes/core/memory.hpp"

using namespace motes;

namespace {

struct Live {
  unsigned char* p;
  size_t bytes;
  unsigned char fill;
};

void check(const Live& a) {
  for (size_t i = 0; i < a.bytes; i += 509) ASSERT_EQ(a.p[i], a.fill) << "allocation of " << a.bytes << " bytes overwritten";
  ASSERT_EQ(a.p[a.bytes - 1], a.fill);
}

}  // namespace

TEST(HugeSlab, AllocationsDoNotOverlapAndKeepTheirBytes) {
  if (!huge_slab_pooled()) GTEST_SKIP() << "AddressSanitizer build: no slab";
  const HugeSlabUsage before = huge_slab_usage();
  std::mt19937_64 rng(7);
  // Sizes of decoded blocks: whole blocks of 1-, 2-, 4- and 8-byte values, short last
  // blocks, odd sizes, and one above the slab's largest slot.
  const size_t sizes[] = {1, 100, 4096, 5000, 16384, 32768, 40000, 65536, 131072, 524288, 1 << 20, (1 << 20) + 1, 3 << 20};
  std::vector<Live> live;
  for (int round = 0; round < 6000; ++round) {
    if (!live.empty() && (rng() % 3 == 0 || live.size() > 400)) {
      const size_t k = rng() % live.size();
      check(live[k]);
      huge_slab_free(live[k].p, live[k].bytes);
      live[k] = live.back();
      live.pop_back();
      continue;
    }
    const size_t bytes = sizes[rng() % std::size(sizes)];
    auto* p = static_cast<unsigned char*>(huge_slab_allocate(bytes));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u) << bytes << " bytes";
    ASSERT_GE(huge_slab_reserved(bytes), bytes);
    if (bytes >= 16384 && bytes <= kHugePage / 2) ASSERT_LE(huge_slab_reserved(bytes) * 4, bytes * 5) << bytes << " bytes";
    const unsigned char fill = static_cast<unsigned char>(round);
    std::memset(p, fill, bytes);
    live.push_back({p, bytes, fill});
  }
  // No two live allocations share a byte.
  std::sort(live.begin(), live.end(), [](const Live& a, const Live& b) { return a.p < b.p; });
  for (size_t k = 0; k + 1 < live.size(); ++k) ASSERT_LE(live[k].p + live[k].bytes, live[k + 1].p);
  for (const Live& a : live) check(a);
  EXPECT_EQ(huge_slab_usage().slots_in_use, before.slots_in_use + uint64_t(std::count_if(live.begin(), live.end(), [](const Live& a) {
                                              return a.bytes <= kHugePage / 2;
                                            })));
  for (const Live& a : live) huge_slab_free(a.p, a.bytes);
  const HugeSlabUsage after = huge_slab_usage();
  EXPECT_EQ(after.slots_in_use, before.slots_in_use);
  // Every empty chunk went back but one per size class (12 classes in `sizes`).
  EXPECT_LE(after.chunks, before.chunks + 12);
}

TEST(HugeSlab, ThreadsShareIt) {
  if (!huge_slab_pooled()) GTEST_SKIP() << "AddressSanitizer build: no slab";
  const HugeSlabUsage before = huge_slab_usage();
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &bad] {
      std::vector<unsigned char*> mine;
      for (int i = 0; i < 2000; ++i) {
        auto* p = static_cast<unsigned char*>(huge_slab_allocate(65536));
        std::memset(p, t + 1, 65536);
        mine.push_back(p);
        if (i % 3 == 2) {
          for (size_t k = 0; k < 65536; k += 4096) bad[size_t(t)] += mine.front()[k] != t + 1;
          huge_slab_free(mine.front(), 65536);
          mine.erase(mine.begin());
        }
      }
      for (unsigned char* p : mine) {
        for (size_t k = 0; k < 65536; k += 4096) bad[size_t(t)] += p[k] != t + 1;
        huge_slab_free(p, 65536);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
  EXPECT_EQ(huge_slab_usage().slots_in_use, before.slots_in_use);
}

TEST(HugeSlab, EmptyChunksAreKeptWithinTheBytesGiven) {
  if (!huge_slab_pooled()) GTEST_SKIP() << "AddressSanitizer build: no slab";
  huge_slab_keep(0);
  const HugeSlabUsage before = huge_slab_usage();
  EXPECT_EQ(before.spare_chunks, 0u);
  huge_slab_keep(before.slot_bytes_in_use + (uint64_t(24) << 20));  // room for 12 more chunks
  std::vector<void*> blocks;
  for (int i = 0; i < 320; ++i) blocks.push_back(huge_slab_allocate(65536));  // 20 MiB: 10 chunks
  for (void* p : blocks) huge_slab_free(p, 65536);
  const HugeSlabUsage emptied = huge_slab_usage();
  EXPECT_EQ(emptied.slots_in_use, before.slots_in_use);
  EXPECT_GE(emptied.spare_chunks, 8u);  // all but the last one with room, less what other classes hold
  EXPECT_LE(emptied.spare_chunks, 10u);
  // Another class takes the kept chunks before asking the system for memory.
  // (96 KiB: a class no other test uses, 21 slots to a chunk.)
  for (int i = 0; i < 63; ++i) blocks[size_t(i)] = huge_slab_allocate(98304);
  EXPECT_EQ(huge_slab_usage().spare_chunks, emptied.spare_chunks - 3);
  for (int i = 0; i < 63; ++i) huge_slab_free(blocks[size_t(i)], 98304);
  huge_slab_keep(0);  // hands back every empty chunk
  EXPECT_EQ(huge_slab_usage().spare_chunks, 0u);
  huge_slab_keep(block_cache_bytes());  // as the cache of decoded blocks sets it
}

TEST(HugeSlab, AForkedChildAllocates) {
  if (!huge_slab_pooled()) GTEST_SKIP() << "AddressSanitizer build: no slab";
  void* before = huge_slab_allocate(65536);
  std::atomic<bool> stop{false};
  std::thread busy([&] {  // another thread inside the slab while the process forks
    while (!stop) huge_slab_free(huge_slab_allocate(4096), 4096);
  });
  const pid_t child = ::fork();
  if (child == 0) {
    void* p = huge_slab_allocate(65536);
    std::memset(p, 1, 65536);
    huge_slab_free(p, 65536);
    std::_Exit(0);
  }
  stop = true;
  busy.join();
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  huge_slab_free(before, 65536);
}

TEST(BigVector, ReleasedPagesPastItsSizeLeaveItsValues) {
  const size_t n = 3 * kHugePage / sizeof(uint64_t);
  BigVector<uint64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i * 2654435761u;
  v.resize(n / 3 + 5);  // not on a page boundary
  release_unused_pages(v);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], i * 2654435761u);
  // The whole pages past the size are no longer resident.
  const uintptr_t first = (reinterpret_cast<uintptr_t>(v.data() + v.size()) + kBasePage - 1) & ~uintptr_t(kBasePage - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(v.data() + n) & ~uintptr_t(kBasePage - 1);
  std::vector<unsigned char> resident((end - first) / kBasePage);
  ASSERT_EQ(mincore(reinterpret_cast<void*>(first), end - first, resident.data()), 0);
  EXPECT_EQ(std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return r & 1; }), 0);
  v.resize(n);  // pages touched again read as zeros and hold what is written
  for (size_t i = n / 3 + 5; i < n; ++i) v[i] = i;
  for (size_t i = n / 3 + 5; i < n; ++i) ASSERT_EQ(v[i], i);
}

// The huge blocks of BigVector: handed back when freed, but kept for the next write while a
// HugeBlockReuse lives, within the peak in use, and handed back when idle or when reuse ends.
TEST(HugeBlocks, HandedBackWithoutReuse) {
  ASSERT_FALSE(huge_block_reusing());
  const HugeBlockUsage before = huge_block_usage();
  void* p = huge_block_allocate(3 * kHugePage);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0u);
  EXPECT_EQ(huge_block_usage().in_use, before.in_use + 1);
  huge_block_free(p, 3 * kHugePage);
  const HugeBlockUsage after = huge_block_usage();
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.kept, 0u);
}

TEST(HugeBlocks, KeptForTheNextWriteWithinThePeak) {
  if (!huge_slab_pooled()) GTEST_SKIP() << "AddressSanitizer build: every block handed back";
  const size_t big = 8 * kHugePage;
  {
    HugeBlockReuse reuse;
    EXPECT_TRUE(huge_block_reusing());
    const HugeBlockUsage start = huge_block_usage();
    auto* a = static_cast<unsigned char*>(huge_block_allocate(big));
    std::memset(a, 7, big);
    huge_block_free(a, big);
    EXPECT_EQ(huge_block_usage().kept, 1u);
    // A request of at most the block and at least half of it takes it, pages and all.
    auto* b = static_cast<unsigned char*>(huge_block_allocate(big - 12345));
    EXPECT_EQ(b, a);
    EXPECT_EQ(b[big - 1], 7);
    EXPECT_EQ(huge_block_usage().reused, start.reused + 1);
    huge_block_free(b, big - 12345);
    {  // a BigVector's memory is such a block
      BigVector<uint64_t> v(big / 8 - 1000);
      EXPECT_EQ(static_cast<void*>(v.data()), static_cast<void*>(a));
    }
    // A small request does not take it: a block is made, and the one kept goes (both at once
    // would be more than was ever in use).
    void* c = huge_block_allocate(kHugePage);
    EXPECT_NE(c, static_cast<void*>(a));
    HugeBlockUsage u = huge_block_usage();
    EXPECT_LE(u.kept_bytes + u.in_use_bytes, u.peak_bytes);
    EXPECT_EQ(u.kept, 0u);
    huge_block_free(c, kHugePage);
    u = huge_block_usage();
    EXPECT_EQ(u.kept, 1u);
    EXPECT_LE(u.kept_bytes + u.in_use_bytes, u.peak_bytes);
  }
  EXPECT_FALSE(huge_block_reusing());
  EXPECT_EQ(huge_block_usage().kept, 0u);  // every kept block handed back with the last reuse
}

TEST(HugeBlocks, KeptBlocksGoWhenIdle) {
  if (!huge_slab_pooled()) GTEST_SKIP() << "AddressSanitizer build: every block handed back";
  HugeBlockReuse reuse;
  huge_block_idle(0.2);
  huge_block_free(huge_block_allocate(2 * kHugePage), 2 * kHugePage);
  EXPECT_EQ(huge_block_usage().kept, 1u);
  for (int i = 0; i < 100 && huge_block_usage().kept; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(huge_block_usage().kept, 0u);
  huge_block_idle(30);
}

TEST(HugeBlocks, ThreadsShareThem) {
  HugeBlockReuse reuse;
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &bad] {
      for (int i = 0; i < 50; ++i) {
        const size_t bytes = size_t(1 + (i + t) % 3) * kHugePage;
        auto* p = static_cast<unsigned char*>(huge_block_allocate(bytes));
        std::memset(p, t + 1, bytes);
        std::this_thread::yield();
        for (size_t k = 0; k < bytes; k += 4096) bad[size_t(t)] += p[k] != t + 1;
        huge_block_free(p, bytes);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
  const HugeBlockUsage u = huge_block_usage();
  EXPECT_LE(u.kept_bytes + u.in_use_bytes, u.peak_bytes);
}
