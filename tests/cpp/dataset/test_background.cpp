// The background writer's priority: a writer made nicer runs its own thread and the threads of
// its parallel loops at that nice value, and leaves every other thread of the process, and the
// process-wide pool that queries use, as they were (Linux keeps a nice value per thread).
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "motes/core/errors.hpp"
#include "motes/core/threads.hpp"
#include "motes/dataset/background.hpp"

using namespace motes;

namespace {

// The nice values of the threads that ran a parallel loop's items (each item waits a little,
// so that every thread of the pool takes some).
std::set<int> loop_nices() {
  std::mutex m;
  std::set<int> seen;
  parallel_for(64, 4, [&](uint64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard lock(m);
    seen.insert(thread_nice());
  });
  return seen;
}

}  // namespace

#ifdef __linux__
TEST(BackgroundWriter, NicerWriterRunsItsThreadsNicerAndLeavesTheOthers) {
  const int base = process_nice();
  const std::set<int> before = loop_nices();  // the process-wide pool, made at the process's priority
  ASSERT_EQ(before, std::set<int>{base});

  std::set<int> writer_loop;
  int writer_thread = -100;
  {
    BackgroundWriter bg(nullptr, 1, OnBacklog::block, 5);
    StepJob job;
    job.custom = [&](StepOutcome&) {
      writer_thread = thread_nice();
      writer_loop = loop_nices();
    };
    bg.submit(std::move(job), false);
    bg.flush();
  }
  const int nicer = std::min(19, base + 5);
  EXPECT_EQ(writer_thread, nicer);
  EXPECT_EQ(writer_loop, std::set<int>{nicer});  // its loops ran on the lowered pool, the writer thread too

  EXPECT_EQ(thread_nice(), base);          // the caller's thread kept its priority
  EXPECT_EQ(loop_nices(), std::set<int>{base});  // and so did the pool queries use

  {  // nice 0: the writer's thread is the process's
    int plain = -100;
    BackgroundWriter bg(nullptr, 1);
    StepJob job;
    job.custom = [&](StepOutcome&) { plain = thread_nice(); };
    bg.submit(std::move(job), false);
    bg.flush();
    EXPECT_EQ(plain, base);
  }
}
#endif

TEST(BackgroundWriter, NiceOutOfRangeIsAUsageError) {
  for (int nice : {-1, 20}) {
    try {
      BackgroundWriter bg(nullptr, 1, OnBacklog::block, nice);
      FAIL() << "nice " << nice << " was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("nice must be 0 to 19"), std::string::npos) << e.what();
    }
  }
}
