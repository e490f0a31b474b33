// The process-wide caches' shared core (core/lru.hpp): the budget holds across shards, the
// least recently used go first, and threads may find and put at once.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "motes/core/lru.hpp"

namespace motes {
namespace {

using Lru = ShardedLru<std::shared_ptr<int>, 4>;

TEST(Lru, KeepsWithinItsBudgetAcrossShards) {
  Lru lru(1000);
  for (uint64_t k = 0; k < 100; ++k) lru.put({k, 7}, std::make_shared<int>(int(k)), 100);
  EXPECT_LE(lru.used(), 1000u);
  EXPECT_EQ(lru.used(), 1000u);  // ten entries of 100 bytes stay
  int held = 0;
  for (uint64_t k = 0; k < 100; ++k) held += lru.find({k, 7}) != nullptr;
  EXPECT_EQ(held, 10);
  EXPECT_NE(lru.find({99, 7}), nullptr);  // the newest is kept
  lru.put({200, 0}, std::make_shared<int>(0), 1001);  // alone beyond the budget: not kept
  EXPECT_EQ(lru.find({200, 0}), nullptr);
  lru.set_limit(300);
  EXPECT_LE(lru.used(), 300u);
  lru.clear();
  EXPECT_EQ(lru.used(), 0u);
  EXPECT_EQ(lru.find({99, 7}), nullptr);
}

TEST(Lru, TheLeastRecentlyUsedOfOneShardGoFirst) {
  ShardedLru<std::shared_ptr<int>, 1> lru(300);
  for (uint64_t k = 0; k < 3; ++k) lru.put({k, 0}, std::make_shared<int>(int(k)), 100);
  ASSERT_NE(lru.find({0, 0}), nullptr);  // 0 is now the most recently used: 1 goes next
  lru.put({3, 0}, std::make_shared<int>(3), 100);
  EXPECT_NE(lru.find({0, 0}), nullptr);
  EXPECT_EQ(lru.find({1, 0}), nullptr);
  EXPECT_NE(lru.find({2, 0}), nullptr);
  EXPECT_TRUE(lru.contains({3, 0}));
  lru.put({3, 0}, std::make_shared<int>(4), 100);  // a key held already keeps its value
  EXPECT_EQ(*lru.find({3, 0}), 3);
}

TEST(Lru, ThreadsFindAndPutAtOnce) {
  Lru lru(64 * 100);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 20000; ++i) {
        const uint64_t k = (i * 7 + uint64_t(t)) % 256;
        if (auto v = lru.find({k, 1})) {
          ASSERT_EQ(uint64_t(*v), k);
        } else {
          lru.put({k, 1}, std::make_shared<int>(int(k)), 100);
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_LE(lru.used(), 64u * 100);
}

TEST(Lru, MegabytesFromTheEnvironment) {
  ::setenv("MOTES_TEST_MB", "12", 1);
  EXPECT_EQ(env_megabytes("MOTES_TEST_MB", 5), uint64_t(12) << 20);
  ::setenv("MOTES_TEST_MB", "12x", 1);
  EXPECT_EQ(env_megabytes("MOTES_TEST_MB", 5), 5u);
  ::unsetenv("MOTES_TEST_MB");
  EXPECT_EQ(env_megabytes("MOTES_TEST_MB", 5), 5u);
}

}  // namespace
}  // namespace motes
