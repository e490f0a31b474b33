// Stopping queries: a cancelled token or a past deadline stops the traversal, the
// gathers of a Selection and the analyses with CancelledError, between chunks of work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "motes/analysis/analysis.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

std::shared_ptr<ParticleFile> small_file(uint64_t n) {
  static std::map<uint64_t, std::shared_ptr<ParticleFile>> files;
  auto& f = files[n];
  if (!f) {
    test::Columns cols = test::make_columns(n, 3);
    WriteOptions o;
    o.layout.leaf_size = 64;
    o.sync = false;
    const std::string path = test::temp_path("cancel-" + std::to_string(n) + ".mpf");
    write_particle_file(path, cols.views(), o);
    f = ParticleFile::open(path);
  }
  return f;
}

template <class F>
std::string cancelled_message(F&& f) {
  try {
    f();
  } catch (const CancelledError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    return e.what();
  }
  ADD_FAILURE() << "no CancelledError";
  return "";
}

}  // namespace

TEST(Cancel, ACancelledTokenStopsQueriesAndAnalyses) {
  auto file = small_file(20000);
  auto token = std::make_shared<CancelToken>();
  QuerySpec s;
  s.where = "energy > 0.1";
  s.cancel = token;
  {
    Query q(file, s);  // not cancelled yet: runs to the end
    EXPECT_GT(count(q), 0u);
  }
  token->cancel();
  EXPECT_TRUE(token->cancelled());
  Query q(file, s);
  EXPECT_NE(cancelled_message([&] { Selection sel(q); }).find("cancelled"), std::string::npos);
  cancelled_message([&] { count(q); });
  cancelled_message([&] { stats(q, file->column("energy")); });
  cancelled_message([&] { histogram(q, Axis{file->column("energy"), 8, 0.0, 1.0}); });
  cancelled_message([&] {
    histogram2d(q, Axis{file->column("energy"), 8, 0.0, 1.0}, Axis{file->column("x"), 4, 0.0, 1.0});
  });
  // The kind crosses every layer by the table.
  try {
    Selection sel(q);
  } catch (...) {
    EXPECT_EQ(describe_exception(std::current_exception()).kind, ErrorKind::cancelled);
  }
}

TEST(Cancel, CancellingDuringTheTraversalStopsAtTheNextChunk) {
  auto file = small_file(200000);
  auto token = std::make_shared<CancelToken>();
  QuerySpec s;
  s.where = "noise > 0";  // not spatially coherent: every point tested, many chunks
  s.threads = 1;
  s.cancel = token;
  Query q(file, s);
  size_t total = 0;
  {
    QuerySpec all = s;
    all.cancel = nullptr;
    Query full(file, all);
    total = full.run([](unsigned, size_t, uint32_t, const std::vector<Segment>&) {});
  }
  ASSERT_GT(total, 4u);
  size_t seen = 0;
  cancelled_message([&] {
    q.run([&](unsigned, size_t, uint32_t, const std::vector<Segment>&) {
      ++seen;
      token->cancel();
    });
  });
  EXPECT_EQ(seen, 1u) << "of " << total << " chunks";
}

TEST(Cancel, ADeadlineStopsTheQueryAndItsGathers) {
  auto file = small_file(20000);
  QuerySpec s;
  s.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  Query late(file, s);
  EXPECT_NE(cancelled_message([&] { count(late); }).find("deadline"), std::string::npos);

  // A selection made in time, gathered after its deadline.
  s.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  Query q(file, s);
  Selection sel(q);
  ASSERT_EQ(sel.size(), file->particle_count());
  std::vector<float> x(sel.size());
  sel.gather(file->column("x"), 0, sel.size(), x.data(), 1);  // in time
  while (std::chrono::steady_clock::now() < *s.deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  cancelled_message([&] { sel.gather(file->column("x"), 0, sel.size(), x.data(), 1); });
  cancelled_message([&] { sel.gather_f32(file->column("x"), 0, sel.size(), x.data(), 0.0, 2); });
}

TEST(Cancel, GathersStopBetweenPiecesWhenCancelled) {
  auto file = small_file(600000);
  auto token = std::make_shared<CancelToken>();
  QuerySpec s;
  s.cancel = token;
  Query q(file, s);
  Selection sel(q);
  std::vector<double> noise(sel.size());
  sel.gather(file->column("noise"), 0, sel.size(), noise.data(), 2);
  token->cancel();
  cancelled_message([&] { sel.gather(file->column("noise"), 0, sel.size(), noise.data(), 1); });
  cancelled_message([&] { sel.gather(file->column("noise"), 10, 20, noise.data(), 1); });
  // An empty range does no work, and checks nothing.
  sel.gather(file->column("noise"), 5, 5, noise.data(), 1);
}
