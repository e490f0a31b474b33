// The request layer (request/request.hpp): a read resolved against a dataset's manifest and
// checked once: the default step and species, the columns, the spec's check, and the grid
// fields that where, values and columns sample, each named when missing.
#include <gtest/gtest.h>

#include <filesystem>

#include "motes/request/request.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

WriteOptions quick() {
  WriteOptions o;
  o.layout.leaf_size = 64;
  o.sync = false;
  return o;
}

// Step 0: electrons; step 1: electrons and ions.
Dataset two_steps() {
  const std::string dir = test::temp_path("request.motes");
  std::filesystem::remove_all(dir);
  auto e0 = test::make_columns(2000, 1), e1 = test::make_columns(2000, 2), ions = test::make_columns(500, 3);
  Dataset d = Dataset::create(dir);
  d.append_step(0, 0.0, nlohmann::json::object(), {{"electrons", e0.views()}}, quick());
  d.append_step(1, 1.0, nlohmann::json::object(), {{"electrons", e1.views()}, {"ions", ions.views()}}, quick());
  return Dataset::open(dir);
}

std::string error_of(const Dataset& d, const ReadArgs& args, QuerySpec spec = {}) {
  try {
    resolve_read(d, args, std::move(spec), [](int64_t, const std::string&, const std::string&) { return nullptr; });
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Request, ResolvesTheStepSpeciesAndColumnsOnce) {
  const Dataset d = two_steps();
  auto none = [](int64_t, const std::string&, const std::string&) -> std::shared_ptr<const PointSampler> {
    ADD_FAILURE() << "no field is sampled";
    return nullptr;
  };
  ReadArgs first;
  first.step = 0;
  ReadRequest r = resolve_read(d, first, {}, none);
  EXPECT_EQ(r.step, 0);
  EXPECT_EQ(r.species, "electrons");  // the step's only species
  EXPECT_EQ(r.columns, r.known);     // every column by default, in schema order
  ASSERT_FALSE(r.known.empty());
  EXPECT_EQ(r.known[0], "x");

  ReadArgs ions;
  ions.species = "ions";
  ions.columns = std::vector<std::string>{"energy", "x"};
  ions.values = {"ux*ux + uy*uy", "energy"};
  QuerySpec spec;
  spec.where = "energy > 1";
  r = resolve_read(d, ions, spec, none);
  EXPECT_EQ(r.step, 1);  // the last step by default
  EXPECT_EQ(r.species, "ions");
  EXPECT_EQ(r.columns, (std::vector<std::string>{"energy", "x"}));
  EXPECT_EQ(r.spec.where, "energy > 1");
  EXPECT_TRUE(r.spec.fields.empty());
}

TEST(Request, NamesWhatIsWrong) {
  const Dataset d = two_steps();
  ReadArgs a;
  EXPECT_NE(error_of(d, a).find("step 1 has several species (electrons, ions): pass species="), std::string::npos);
  a.species = "muons";
  EXPECT_NE(error_of(d, a).find("step 1 has no species 'muons' (species: electrons, ions)"), std::string::npos);
  a = {};
  a.step = 7;
  EXPECT_NE(error_of(d, a).find("dataset has no step 7 (steps: 0, 1)"), std::string::npos);
  a = {};
  a.step = 0;
  a.columns = std::vector<std::string>{"x", "nope"};
  EXPECT_NE(error_of(d, a).find("unknown column 'nope' (columns: x, y, z"), std::string::npos);
  for (const char* column : {"field('Bz')", "field('E', 'x')"}) {
    a.columns = std::vector<std::string>{"x", column};
    EXPECT_NE(error_of(d, a).find("step 0 has no field '"), std::string::npos) << column;
  }
  a.columns.reset();
  QuerySpec spec;
  spec.where = "field('Bz') > 0";
  EXPECT_NE(error_of(d, a, spec).find("step 0 has no field 'Bz' (fields: none)"), std::string::npos);
  a.values = {"field('B', 'z') * 2"};
  EXPECT_NE(error_of(d, a).find("step 0 has no field 'B'"), std::string::npos);
  a.values = {"field('Bz') + nope"};
  EXPECT_NE(error_of(d, a).find("unknown column 'nope'"), std::string::npos);
  a.values = {};
  spec = {};
  spec.quality_from = 0.7;
  spec.quality_to = 0.2;
  EXPECT_NE(error_of(d, a, spec).find("reversed"), std::string::npos);
}

TEST(Request, ADatasetWithoutStepsSaysSo) {
  const std::string dir = test::temp_path("request-empty.motes");
  std::filesystem::remove_all(dir);
  Dataset d = Dataset::create(dir);
  EXPECT_EQ(error_of(d, {}), "dataset has no steps");
}

TEST(Request, AColumnFieldIsAFieldAlone) {
  const std::vector<std::string> known{"x", "y", "z"};
  EXPECT_EQ(column_field("field('Bz')", known), std::make_pair(std::string("Bz"), std::string()));
  EXPECT_EQ(column_field("field('E', 'x')", known), std::make_pair(std::string("E"), std::string("x")));
  EXPECT_FALSE(column_field("x", known));
  EXPECT_FALSE(column_field("2 * field('Bz')", known));  // an expression, not a field alone
  EXPECT_FALSE(column_field("not an expression (", known));
}
