// Derived quantities (format 2.4): the writer's values are the queries' own arithmetic, and
// verify_derived recomputes them, so a tail that does not hold what the expression computes
// (another writer's arithmetic, a value off by one unit in the last place) is a FormatError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "motes/capi/motes.h"
#include "motes/expr/derive.hpp"
#include "motes/particles/derived_check.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/writer.hpp"
#include "test_util.hpp"

namespace motes {
namespace {

WriteOptions derived_options(DeriveFn derive) {
  WriteOptions o;
  o.sync = false;
  o.derived = {{"en", "energy * 2 + noise"}};
  o.derive = std::move(derive);
  return o;
}

TEST(Derived, VerifyRecomputesTheValuesBitForBit) {
  const test::Columns c = test::make_columns(20000, 4);
  const std::string good = test::temp_path("derived-good.mpf"), off = test::temp_path("derived-off.mpf");
  write_particle_file(good, c.views(), derived_options(derive_values));
  auto f = ParticleFile::open(good);
  ASSERT_EQ(f->derived().size(), 1u);
  EXPECT_EQ(f->derived()[0].expression, parse_value("energy * 2 + noise")->to_string());
  ASSERT_NE(f->tail_index(f->schema().size()), nullptr);
  EXPECT_NO_THROW(verify_derived(*f));
  // The same quantity from a writer whose arithmetic differs in the last place of the largest values.
  write_particle_file(off, c.views(), derived_options([](const std::string& e, const std::vector<ColumnView>& cols) {
                        DerivedValues v = derive_values(e, cols);
                        for (double& x : v.values)
                          if (x > 2.5) x = std::nextafter(x, INFINITY);
                        return v;
                      }));
  EXPECT_THROW(verify_derived(*ParticleFile::open(off)), FormatError);
}

TEST(Derived, TheWriterComputesThemItselfAndVerifyDataChecksThem) {
  // No evaluator handed in (C, Fortran and C++ writers): the particles layer computes the
  // values with the expression layer's arithmetic, and verify_data computes them again.
  const test::Columns c = test::make_columns(5000, 4);
  const std::string path = test::temp_path("derived-none.mpf");
  write_particle_file(path, c.views(), derived_options(nullptr));
  auto f = ParticleFile::open(path, /*verify_data=*/true);
  ASSERT_EQ(f->derived().size(), 1u);
  const DerivedValues v = derive_values("energy * 2 + noise", c.views());
  uint64_t nan = 0;
  double lo = INFINITY, hi = -INFINITY;
  for (double x : v.values) {
    if (std::isnan(x)) {
      ++nan;
      continue;
    }
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  EXPECT_EQ(f->derived()[0].nan_count, nan);
  EXPECT_EQ(f->derived()[0].min, lo);
  EXPECT_EQ(f->derived()[0].max, hi);
  const std::string off = test::temp_path("derived-off-verify.mpf");
  write_particle_file(off, c.views(), derived_options([](const std::string& e, const std::vector<ColumnView>& cols) {
                        DerivedValues w = derive_values(e, cols);
                        for (double& x : w.values)
                          if (x > 2.5) x = std::nextafter(x, INFINITY);
                        return w;
                      }));
  EXPECT_THROW(ParticleFile::open(off, /*verify_data=*/true), FormatError);  // verify_data alone catches it
}

TEST(Derived, AnExpressionIsCheckedBeforeAnythingIsWritten) {
  const test::Columns c = test::make_columns(100, 4);
  WriteOptions o = derived_options(nullptr);
  for (const char* bad : {"energy *", "nope + 1", "energy > 1", "field('Bz')"}) {
    o.derived = {{"en", bad}};
    const std::string path = test::temp_path("derived-bad.mpf");
    EXPECT_THROW(write_particle_file(path, c.views(), o), UsageError) << bad;
    EXPECT_FALSE(std::filesystem::exists(path)) << bad;
  }
}

TEST(Derived, AWriterOfTheCApiWritesThem) {
  // The C (and Fortran) API declares them by name and expression; nothing hands the writer an
  // evaluator: the particles layer computes them with the expression layer's arithmetic.
  const test::Columns c = test::make_columns(3000, 7);
  const std::string dir = test::temp_path("derived-capi.motes");
  std::filesystem::remove_all(dir);
  motes_writer* w = nullptr;
  ASSERT_EQ(motes_writer_open(dir.c_str(), &w), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_set_options(w, 64, 4, 0, 0), MOTES_OK);
  ASSERT_EQ(motes_writer_add_derived(w, "en", "energy * 2 + noise"), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_begin_step(w, 0, 0.0), MOTES_OK);
  for (const ColumnView& v : c.views())
    ASSERT_EQ(motes_writer_set_column(w, "e", v.spec.name.c_str(), motes_dtype(v.spec.dtype), v.data, v.count, 0), MOTES_OK)
        << motes_last_error();
  ASSERT_EQ(motes_writer_write_step(w), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_close(w), MOTES_OK);
  std::string file;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().extension() == ".mpf") file = e.path().string();
  ASSERT_FALSE(file.empty());
  auto f = ParticleFile::open(file, /*verify_data=*/true);  // computed again and compared
  ASSERT_EQ(f->derived().size(), 1u);
  EXPECT_EQ(f->derived()[0].name, "en");
  EXPECT_EQ(f->derived()[0].expression, parse_value("energy * 2 + noise")->to_string());
  const DerivedValues want = derive_values("energy * 2 + noise", c.views());
  EXPECT_EQ(f->derived()[0].max, *std::max_element(want.values.begin(), want.values.end()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace motes
