// The dataset layer under stress: the manifest's validation and encoding, the writer
// lock, stale handles, and the expression parser under a decimal-comma C locale.
#include <gtest/gtest.h>

#include <clocale>
#include <filesystem>
#include <fstream>

#include "motes/dataset/dataset.hpp"
#include "motes/dataset/species.hpp"
#include "motes/particles/collection.hpp"
#include "motes/expr/expr.hpp"
#include "test_util.hpp"

using namespace motes;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& name) {
  std::string d = test::temp_path(name);
  fs::remove_all(d);
  return d;
}

WriteOptions quick() {
  WriteOptions o;
  o.layout.leaf_size = 64;
  o.layout.lod_count = 4;
  o.layout.treelet_size = 1024;
  o.sync = false;
  return o;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Dataset, ManifestRoundTripsAndPinsFiles) {
  std::string dir = fresh_dir("rt.motes");
  auto cols = test::make_columns(3000);
  Dataset d = Dataset::create(dir);
  EXPECT_TRUE(d.created());
  d.append_step(4, 0.5, {{"dt", 0.1}}, {{"e", cols.views()}}, quick());
  Manifest m = Manifest::read(dir);
  ASSERT_EQ(m.steps.size(), 1u);
  const SpeciesEntry& e = m.steps[0].species[0];
  ASSERT_TRUE(e.checksum.has_value());
  EXPECT_EQ(e.file, "steps/000004/e.mpf");
  EXPECT_EQ(Manifest::read(dir).encode(), m.encode());
  auto c = open_species(dir, 4, e);
  EXPECT_EQ(c->particle_count(), 3000u);
  SpeciesEntry wrong = e;
  wrong.checksum = *e.checksum ^ 1;
  EXPECT_NE(error_of([&] { open_species(dir, 4, wrong); }).find("header checksum"), std::string::npos);
}

TEST(Dataset, ManifestRejectsWhatReadersRelyOn) {
  std::string dir = fresh_dir("bad.motes");
  Dataset::create(dir);
  auto with = [&](const std::string& steps) {
    std::ofstream(dir + "/manifest.json") << R"({"format": "motes-dataset", "version": [1, 1], "steps": )" << steps << "}";
    return error_of([&] { Manifest::read(dir); });
  };
  const std::string sp =
      R"({"file": "steps/000001/p.mpf", "count": 1, "bounds": [[0,0,0],[1,1,1]], "columns": [{"name": "x", "dtype": "f32"}, {"name": "y", "dtype": "f32"}, {"name": "z", "dtype": "f32"}]})";
  EXPECT_EQ(with(R"([{"index": 1, "time": 0, "species": {"p": )" + sp + "}}]"), "");
  EXPECT_NE(with(R"([{"index": 2, "time": 0, "species": {"p": )" + sp + "}}]").find("is not steps/000002/p.mpf"), std::string::npos);
  EXPECT_NE(with(R"([{"index": 1, "time": "x", "species": {"p": )" + sp + "}}]").find("time is not a number"), std::string::npos);
  EXPECT_NE(with(R"([{"index": 1, "time": 0, "attributes": )" + std::string(5000, '[') + std::string(5000, ']') +
                 R"(, "species": {"p": )" + sp + "}}]")
                .find("nested more than"),
            std::string::npos);
  EXPECT_NE(with("[]]").find("invalid manifest"), std::string::npos);
}

TEST(Dataset, OneWriterAtATime) {
  std::string dir = fresh_dir("lock.motes");
  Dataset a = Dataset::create(dir);
  Dataset b = Dataset::open(dir);
  auto w = a.begin_writing("test holding");
  std::string err = error_of([&] { b.begin_writing("second"); });
  EXPECT_NE(err.find("another writer holds the lock"), std::string::npos) << err;
  EXPECT_NE(err.find("test holding"), std::string::npos) << err;
  EXPECT_NE(err.find("pid " + std::to_string(::getpid())), std::string::npos) << err;
}

TEST(Dataset, StaleHandleSeesTheManifestOnDisk) {
  std::string dir = fresh_dir("stale.motes");
  auto cols = test::make_columns(500);
  Dataset a = Dataset::create(dir);
  Dataset b = Dataset::open(dir);  // opened before step 1 exists
  a.append_step(1, 0, nlohmann::json::object(), {{"p", cols.views()}}, quick());
  std::string err = error_of([&] { b.append_step(1, 0, nlohmann::json::object(), {{"p", cols.views()}}, quick()); });
  EXPECT_NE(err.find("step 1 already exists"), std::string::npos) << err;
  b.append_step(2, 0, nlohmann::json::object(), {{"p", cols.views()}}, quick());
  b.set_attributes({{"k", 1}});
  Dataset c = Dataset::open(dir);
  EXPECT_EQ(c.steps().size(), 2u);
  EXPECT_EQ(c.attributes()["k"], 1);
}

TEST(Dataset, ManifestIsSealedAndEveryByteChecked) {
  std::string dir = fresh_dir("sealed.motes");
  auto cols = test::make_columns(300);
  Dataset d = Dataset::create(dir);
  d.append_step(0, 0.5, {{"a", 1.25}}, {{"p", cols.views()}}, quick());
  d.append_step(1, 1.5, {{"s", "t"}}, {{"q", cols.views()}, {"p", cols.views()}}, quick());
  const std::string text = d.steps().empty() ? "" : Manifest::read(dir).encode();
  ASSERT_EQ(text.rfind("{\n \"checksum\": \"", 0), 0u);
  EXPECT_EQ(Manifest::parse(text, "m").id, d.id());
  EXPECT_EQ(d.id().size(), 32u);
  // One bit of each byte: refused before any value is used (the checksum, its line, or JSON).
  for (size_t i = 0; i < text.size(); ++i) {
    std::string flipped = text;
    flipped[i] = char(flipped[i] ^ (1 << (i % 8)));
    EXPECT_NE(error_of([&] { Manifest::parse(flipped, "m"); }), "") << "byte " << i;
  }
  // An edit sealed again reads; the edit is kept.
  std::string edited = text;
  edited.replace(edited.find("0.5"), 3, "0.7");
  EXPECT_NE(error_of([&] { Manifest::parse(edited, "m"); }).find("contents hash to"), std::string::npos);
  EXPECT_EQ(Manifest::parse(seal_manifest_text(edited), "m").steps[0].time, 0.7);
}

TEST(Dataset, ReloadRefusesAnotherRun) {
  std::string dir = fresh_dir("rerun.motes");
  auto cols = test::make_columns(300);
  Dataset a = Dataset::create(dir);
  a.append_step(0, 0, nlohmann::json::object(), {{"p", cols.views()}, {"e", cols.views()}}, quick());
  Dataset b = Dataset::open(dir);
  a.append_step(1, 0, nlohmann::json::object(), {{"p", cols.views()}}, quick());
  b.reload();  // an append: the same run (species listed by name on disk, as written in a)
  a.reload();
  EXPECT_EQ(b.steps().size(), 2u);
  fs::remove_all(dir);
  Dataset c = Dataset::create(dir);
  c.append_step(0, 0, nlohmann::json::object(), {{"p", cols.views()}}, quick());
  EXPECT_NE(c.id(), b.id());
  try {
    b.reload();
    FAIL() << "a re-created dataset was reloaded";
  } catch (const ReplacedError& e) {
    EXPECT_NE(std::string(e.what()).find("its identity was " + b.id()), std::string::npos) << e.what();
  }
  EXPECT_EQ(b.steps().size(), 2u);  // the run it read
  EXPECT_THROW(a.append_step(2, 0, nlohmann::json::object(), {{"p", cols.views()}}, quick()), ReplacedError);
}

TEST(Expressions, DecimalCommaLocaleDoesNotChangeNumbers) {
  const char* old = std::setlocale(LC_ALL, nullptr);
  std::string saved = old ? old : "C";
  if (!std::setlocale(LC_ALL, "de_DE.UTF-8")) GTEST_SKIP() << "locale de_DE.UTF-8 is not installed";
  ExprPtr e = parse_expression("x > 0.5 and y < 2.5e-1");
  std::string text = e->to_string();
  std::setlocale(LC_ALL, saved.c_str());
  EXPECT_EQ(text, "((x > 0.5) and (y < 0.25))");
}

TEST(Expressions, DepthIsBounded) {
  std::string sum = "x";
  for (int i = 0; i < 20000; ++i) sum += "+x";
  EXPECT_NE(error_of([&] { parse_expression(sum + " > 1"); }).find("too deep"), std::string::npos);
  std::string ok = "x";
  for (int i = 0; i < 300; ++i) ok += "+x";
  EXPECT_EQ(error_of([&] { parse_expression(ok + " > 1"); }), "");
}
