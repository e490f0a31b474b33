// The messages of the parallel layer (parallel/wire.hpp), without MPI: every message
// round-trips, and a truncated, corrupted or mistaken buffer is refused with an
// InternalError naming the message.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "motes/parallel/wire.hpp"

using namespace motes;
using namespace motes::wire;

namespace {

bool same_box(const Box& a, const Box& b) {
  for (int k = 0; k < 3; ++k)
    if (a.lo[k] != b.lo[k] || a.hi[k] != b.hi[k]) return false;
  return true;
}

Schema sample_schema() {
  return {{"electrons", {{"x", DType::f32}, {"y", DType::f32}, {"z", DType::f32}, {"w", DType::f64}}},
          {"ions", {{"x", DType::f64}, {"id", DType::u64}}},
          {"empty", {}}};
}

RankSummary sample_summary() {
  RankSummary s;
  s.count = (uint64_t(1) << 60) + 3;  // beyond a double's integers: carried exactly
  s.node = 0xfedcba98u;
  s.bounds = Box{{-1, -2, -3}, {1, 2, 3.5}};
  s.cells = {RankCell{Box{{-1, -2, -3}, {0, 0, 0}}, 7}, RankCell{Box{{0, 0, 0}, {1, 2, 3.5}}, (uint64_t(1) << 60) - 4}};
  return s;
}

std::vector<PartReport> sample_reports() {
  PartReport a;
  a.part = 3;
  a.summary.count = 1000;
  a.summary.file_bytes = 123456;
  a.summary.header_checksum = 0xfedcba9876543210ull;
  a.summary.bounds = Box{{0, 0, 0}, {1, 1, 1}};
  a.summary.columns = {ColumnSummary{"x", DType::f32, IndexKind::none, 0, 1, 0, 0xffffffffu},
                       ColumnSummary{"w", DType::f64, IndexKind::quantile, -2.5, std::nan(""), 17, 5}};
  PartReport b;
  b.part = 0;  // a part with no columns (cannot happen, but the message does not care)
  return {a, b};
}

// Every way of spoiling `good` is refused, naming `name`.
void expect_refused(const std::string& good, const std::function<void(std::string_view)>& decode,
                    const std::string& name) {
  auto refused = [&](const std::string& bad, const std::string& what, const std::string& needle) {
    try {
      decode(bad);
      ADD_FAILURE() << name << ": " << what << " accepted";
    } catch (const InternalError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(name + " message"), std::string::npos) << what << ": " << m;
      EXPECT_NE(m.find(needle), std::string::npos) << what << ": " << m;
      EXPECT_EQ(e.kind(), ErrorKind::internal);
    }
  };
  refused("", "an empty buffer", "truncated");
  for (size_t n : {size_t(1), size_t(5), size_t(12), good.size() / 2, good.size() - 1})
    if (n < good.size()) refused(good.substr(0, n), "a buffer cut to " + std::to_string(n) + " bytes", "truncated");
  refused(good + '\0', "a trailing byte", "corrupt");
  for (size_t i = 5; i < good.size(); i += std::max<size_t>(1, good.size() / 23)) {
    std::string bad = good;
    bad[i] = char(bad[i] ^ 0x40);
    refused(bad, "byte " + std::to_string(i) + " flipped", "corrupt");
  }
  std::string other = good;
  other[0] = char(other[0] ^ 1);
  refused(other, "another tag", name + " message, got one tagged");
}

}  // namespace

TEST(Wire, FailureRoundTrips) {
  for (const ErrorKindInfo& k : error_kinds) {
    ErrorReport f{k.kind, 28, std::string("rank 3: no space left on device '\xff'")};
    EXPECT_EQ(decode_failure(encode(f)), f);
  }
  expect_refused(encode(ErrorReport{ErrorKind::io, 5, "x"}), [](std::string_view b) { decode_failure(b); }, "failure");
}

TEST(Wire, FailureOfUnknownKindIsRefused) {
  ErrorReport fake{ErrorKind(99), 0, "m"};
  try {
    decode_failure(encode(fake));
    FAIL() << "kind 99 accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("failure message corrupt (error kind 99)"), std::string::npos) << e.what();
  }
}

TEST(Wire, StepRoundTrips) {
  Step s{-42, -0.0, R"({"dt": 0.1, "name": "run"})"};
  Step back = decode_step(encode(s));
  EXPECT_EQ(back.index, -42);
  EXPECT_TRUE(std::signbit(back.time));
  EXPECT_EQ(back.attributes, s.attributes);
  Step nan{std::numeric_limits<int64_t>::min(), std::nan("7"), ""};
  EXPECT_TRUE(std::isnan(decode_step(encode(nan)).time));
  expect_refused(encode(s), [](std::string_view b) { decode_step(b); }, "step");
}

TEST(Wire, SchemaRoundTripsAndDifferencesAreNamed) {
  Schema s = sample_schema();
  EXPECT_EQ(decode_schema(encode(s)), s);
  EXPECT_EQ(decode_schema(encode(Schema{})), Schema{});
  expect_refused(encode(s), [](std::string_view b) { decode_schema(b); }, "schema");

  Schema other = s;
  other[0].columns[3].dtype = DType::f32;              // electrons.w: f32
  other[1].columns.pop_back();                         // ions.id missing
  other[1].columns.push_back({"q", DType::i8});        // ions.q extra
  other.erase(other.begin() + 2);                      // species 'empty' missing
  other.push_back({"neutrals", {{"x", DType::f32}}});  // species 'neutrals' extra
  EXPECT_EQ(schema_difference(s, other),
            "column 'electrons.w' is f32 (rank 0: f64), species 'empty' is missing, column 'ions.id' is missing, "
            "column 'ions.q' (i8) is extra, species 'neutrals' is extra");
  Schema reordered = s;
  std::swap(reordered[0].columns[0], reordered[0].columns[1]);
  EXPECT_EQ(schema_difference(s, reordered), "columns are in a different order");
}

TEST(Wire, SchemaWithABadDtypeIsRefused) {
  Schema s{{"e", {{"x", DType(0)}}}};
  try {
    decode_schema(encode(s));
    FAIL() << "dtype 0 accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("schema message corrupt (dtype code 0)"), std::string::npos) << e.what();
  }
}

TEST(Wire, ReadRequestRoundTrips) {
  ReadRequest r{"run.motes/steps/000001/electrons.mpi", "energy > 1.3", 0.25, 0.125, {"x", "id"}};
  EXPECT_EQ(decode_read_request(encode(r)), r);
  ReadRequest none{"p", "", 1.0, std::nullopt, {}};
  EXPECT_EQ(decode_read_request(encode(none)), none);
  EXPECT_NE(encode(r), encode(none));
  expect_refused(encode(r), [](std::string_view b) { decode_read_request(b); }, "read request");
}

TEST(Wire, RankSummaryRoundTripsExactly) {
  RankSummary s = sample_summary();
  RankSummary back = decode_rank_summary(encode(s));
  EXPECT_EQ(back.count, s.count);
  EXPECT_EQ(back.node, s.node);
  EXPECT_TRUE(same_box(back.bounds, s.bounds));
  ASSERT_EQ(back.cells.size(), s.cells.size());
  for (size_t i = 0; i < s.cells.size(); ++i) {
    EXPECT_TRUE(same_box(back.cells[i].box, s.cells[i].box));
    EXPECT_EQ(back.cells[i].count, s.cells[i].count);
  }
  EXPECT_TRUE(decode_rank_summary(encode(RankSummary{})).cells.empty());
  expect_refused(encode(s), [](std::string_view b) { decode_rank_summary(b); }, "rank summary");
}

TEST(Wire, RankPlanRoundTrips) {
  RankPlan p;
  p.part_of_cell = {0, 0, 4, 2, 4294967295u};
  p.incoming = {IncomingPart{2, {{0, 10}, {3, uint64_t(1) << 62}}}, IncomingPart{4, {}}};
  EXPECT_EQ(decode_rank_plan(encode(p)), p);
  EXPECT_EQ(decode_rank_plan(encode(RankPlan{})), RankPlan{});
  expect_refused(encode(p), [](std::string_view b) { decode_rank_plan(b); }, "rank plan");
}

TEST(Wire, PartReportsRoundTrip) {
  auto reports = sample_reports();
  auto back = decode_part_reports(encode(reports));
  ASSERT_EQ(back.size(), reports.size());
  for (size_t i = 0; i < reports.size(); ++i) {
    const PartSummary &a = reports[i].summary, &b = back[i].summary;
    EXPECT_EQ(back[i].part, reports[i].part);
    EXPECT_EQ(b.count, a.count);
    EXPECT_EQ(b.file_bytes, a.file_bytes);
    EXPECT_EQ(b.header_checksum, a.header_checksum);
    EXPECT_TRUE(same_box(b.bounds, a.bounds));
    ASSERT_EQ(b.columns.size(), a.columns.size());
    for (size_t c = 0; c < a.columns.size(); ++c) {
      EXPECT_EQ(b.columns[c].name, a.columns[c].name);
      EXPECT_EQ(b.columns[c].dtype, a.columns[c].dtype);
      EXPECT_EQ(b.columns[c].index, a.columns[c].index);
      EXPECT_EQ(std::bit_cast<uint64_t>(b.columns[c].min), std::bit_cast<uint64_t>(a.columns[c].min));
      EXPECT_EQ(std::bit_cast<uint64_t>(b.columns[c].max), std::bit_cast<uint64_t>(a.columns[c].max));
      EXPECT_EQ(b.columns[c].nan_count, a.columns[c].nan_count);
      EXPECT_EQ(b.columns[c].root_bits, a.columns[c].root_bits);
    }
  }
  EXPECT_TRUE(decode_part_reports(encode(std::vector<PartReport>{})).empty());
  expect_refused(encode(reports), [](std::string_view b) { decode_part_reports(b); }, "part summaries");
}

TEST(Wire, CountsHaveAFixedSize) {
  for (uint64_t n : {uint64_t(0), uint64_t(1), ~uint64_t(0)}) {
    std::string b = encode_count(n);
    EXPECT_EQ(b.size(), kCountBytes);
    EXPECT_EQ(decode_count(b), n);
  }
  expect_refused(encode_count(12345), [](std::string_view b) { decode_count(b); }, "count");
}

TEST(Wire, MessagesAreNotInterchangeable) {
  std::string step = encode(Step{1, 0, "{}"});
  EXPECT_THROW(decode_count(step), InternalError);
  EXPECT_THROW(decode_schema(step), InternalError);
  EXPECT_THROW(decode_step(encode_count(1)), InternalError);
}
