// Derived quantities (format 2.4): the writer's values are the queries' own arithmetic, and
// verify_derived recomputes them, so a tail that does not hold what the expression computes
// (another writer's arithmetic, a value off by one unit in the last place) is a FormatError.
#include <gtest/gtest.h>

#include <cmath>

#include "motes/particles/reader.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/derive.hpp"
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

TEST(Derived, WithoutAnEvaluatorTheWriterRefuses) {
  const test::Columns c = test::make_columns(100, 4);
  EXPECT_THROW(write_particle_file(test::temp_path("derived-none.mpf"), c.views(), derived_options(nullptr)), UsageError);
}

}  // namespace
}  // namespace motes
