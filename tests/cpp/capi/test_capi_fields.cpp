// Grid fields through the C API (motes_writer_set_field): a step of particles and fields,
// read back through the dataset and the field file exactly; bad fields refused with a
// status and a message naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "motes/capi/motes.h"
#include "motes/dataset/dataset.hpp"
#include "motes/fields/file.hpp"

namespace fs = std::filesystem;

TEST(CapiFields, AStepWithAScalarAndAVectorField) {
  const fs::path dir = fs::temp_directory_path() / ("motes-capi-fields-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const uint64_t dims[3] = {5, 4, 3};
  std::vector<float> rho(60);
  std::vector<double> ex(60), ey(60);
  for (size_t i = 0; i < 60; ++i) rho[i] = float(i) * 0.5f, ex[i] = double(i), ey[i] = -double(i);
  std::vector<double> x(10), y(10), z(10);
  for (int i = 0; i < 10; ++i) x[i] = i, y[i] = i % 3, z[i] = 1;
  motes_writer* w = nullptr;
  ASSERT_EQ(motes_writer_open(dir.c_str(), &w), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_set_options(w, 0, 0, 0, 0), MOTES_OK);
  ASSERT_EQ(motes_writer_begin_step(w, 0, 0.0), MOTES_OK);
  ASSERT_EQ(motes_writer_set_column(w, "e", "x", MOTES_F64, x.data(), 10, 0), MOTES_OK);
  ASSERT_EQ(motes_writer_set_column(w, "e", "y", MOTES_F64, y.data(), 10, 0), MOTES_OK);
  ASSERT_EQ(motes_writer_set_column(w, "e", "z", MOTES_F64, z.data(), 10, 0), MOTES_OK);
  const void* r[1] = {rho.data()};
  const double origin[3] = {1, 2, 3}, spacing[3] = {0.5, 0.5, 2};
  ASSERT_EQ(motes_writer_set_field(w, "rho", MOTES_F32, 3, dims, 1, r, nullptr, origin, spacing, 0, "kg/m^3"), MOTES_OK)
      << motes_last_error();
  const void* e[2] = {ex.data(), ey.data()};
  const char* names[2] = {"x", "y"};
  ASSERT_EQ(motes_writer_set_field(w, "E", MOTES_F64, 3, dims, 2, e, names, nullptr, nullptr, 1, nullptr), MOTES_OK);
  EXPECT_EQ(motes_writer_set_field(w, "rho", MOTES_F32, 3, dims, 1, r, nullptr, origin, spacing, 0, nullptr),
            MOTES_ERROR_USAGE);
  EXPECT_NE(std::strstr(motes_last_error(), "set twice"), nullptr);
  EXPECT_EQ(motes_writer_set_field(w, "bad", MOTES_F32, 4, dims, 1, r, nullptr, nullptr, nullptr, 0, nullptr),
            MOTES_ERROR_USAGE);
  const double bad_spacing[3] = {0.5, 0, 1};
  EXPECT_EQ(motes_writer_set_field(w, "flat", MOTES_F32, 3, dims, 1, r, nullptr, nullptr, bad_spacing, 0, nullptr),
            MOTES_ERROR_USAGE);
  EXPECT_NE(std::strstr(motes_last_error(), "spacing"), nullptr);
  ASSERT_EQ(motes_writer_write_step(w), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_close(w), MOTES_OK);

  motes::Dataset ds = motes::Dataset::open(dir.string());
  const motes::StepEntry& st = ds.step(0);
  ASSERT_EQ(st.fields.size(), 2u);
  auto rf = motes::fields::FieldFile::open(dir.string() + "/" + st.find_field("rho").file);
  EXPECT_EQ(rf->spec().unit, "kg/m^3");
  EXPECT_EQ(rf->spec().origin[2], 3.0);
  const motes::fields::Region all = rf->region({0, 0, 0}, {5, 4, 3}, 0);
  std::vector<float> got(60);
  rf->read(all, 0, got.data());
  EXPECT_EQ(got, rho);
  auto ef = motes::fields::FieldFile::open(dir.string() + "/" + st.find_field("E").file);
  EXPECT_EQ(ef->spec().components, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(ef->spec().centering, motes::fields::Centering::cell);
  std::vector<double> gy(60);
  ef->read(ef->region({0, 0, 0}, {5, 4, 3}, 0), 1, gy.data());
  EXPECT_EQ(gy, ey);
  fs::remove_all(dir);
}

TEST(CapiFields, AFieldStoredWithinATolerance) {
  const fs::path dir = fs::temp_directory_path() / ("motes-capi-zfp-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const uint64_t dims[3] = {40, 30, 20};
  std::vector<float> rho(40 * 30 * 20);
  std::vector<int32_t> count(rho.size());
  for (size_t i = 0; i < rho.size(); ++i) rho[i] = float(std::sin(0.05 * double(i % 40)) + 0.01 * double(i / 1200)), count[i] = int32_t(i);
  motes_writer* w = nullptr;
  ASSERT_EQ(motes_writer_open(dir.c_str(), &w), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_begin_step(w, 0, 0.0), MOTES_OK);
  const void* r[1] = {rho.data()};
  const void* n[1] = {count.data()};
  ASSERT_EQ(motes_writer_set_field(w, "rho", MOTES_F32, 3, dims, 1, r, nullptr, nullptr, nullptr, 0, nullptr), MOTES_OK);
  ASSERT_EQ(motes_writer_set_field(w, "n", MOTES_I32, 3, dims, 1, n, nullptr, nullptr, nullptr, 0, nullptr), MOTES_OK);
  EXPECT_EQ(motes_writer_set_field_tolerance(w, "nope", 1e-3), MOTES_ERROR_USAGE);
  EXPECT_NE(std::strstr(motes_last_error(), "not set"), nullptr);
  EXPECT_EQ(motes_writer_set_field_tolerance(w, "n", 1e-3), MOTES_ERROR_USAGE);  // an integer field
  EXPECT_NE(std::strstr(motes_last_error(), "float32 or float64"), nullptr);
  EXPECT_EQ(motes_writer_set_field_tolerance(w, "rho", -1), MOTES_ERROR_USAGE);
  ASSERT_EQ(motes_writer_set_field_tolerance(w, "rho", 1e-3), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_write_step(w), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_close(w), MOTES_OK);

  motes::Dataset ds = motes::Dataset::open(dir.string());
  auto f = motes::fields::FieldFile::open(dir.string() + "/" + ds.step(0).find_field("rho").file);
  EXPECT_EQ(f->spec().tolerance, 1e-3);
  std::vector<float> got(rho.size());
  f->read(f->region({0, 0, 0}, {40, 30, 20}, 0), 0, got.data());
  double worst = 0;
  for (size_t i = 0; i < rho.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - double(rho[i])));
  EXPECT_LE(worst, 1e-3);
  EXPECT_LT(f->stored_bytes(), rho.size() * sizeof(float) / 3);
  auto exact = motes::fields::FieldFile::open(dir.string() + "/" + ds.step(0).find_field("n").file);
  EXPECT_EQ(exact->spec().tolerance, 0.0);
  f->verify();
  fs::remove_all(dir);
}

// In-situ tracking through the C API (motes_track): the values of a column by id in a step,
// NaN and found = 0 for an id the step does not hold.
TEST(CapiTrack, ValuesById) {
  const fs::path dir = fs::temp_directory_path() / ("motes-capi-track-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const uint64_t n = 50000;
  std::vector<double> x(n), y(n), z(n), e(n);
  std::vector<int64_t> id(n);
  for (uint64_t i = 0; i < n; ++i) {
    id[i] = int64_t((i * 7919) % n) - 1000;  // a permutation, some negative
    x[i] = double((i * 31) % 1000), y[i] = double(i % 17), z[i] = 0.5, e[i] = 0.25 * double(id[i]);
  }
  motes_writer* w = nullptr;
  ASSERT_EQ(motes_writer_open(dir.c_str(), &w), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_begin_step(w, 3, 0.0), MOTES_OK);
  for (auto [name, v] : {std::pair{"x", &x}, std::pair{"y", &y}, std::pair{"z", &z}, std::pair{"energy", &e}})
    ASSERT_EQ(motes_writer_set_column(w, "e", name, MOTES_F64, v->data(), n, 0), MOTES_OK);
  ASSERT_EQ(motes_writer_set_column(w, "e", "id", MOTES_I64, id.data(), n, 0), MOTES_OK);
  ASSERT_EQ(motes_writer_write_step(w), MOTES_OK) << motes_last_error();
  ASSERT_EQ(motes_writer_close(w), MOTES_OK);
  const int64_t want[4] = {-1000, 17, 48999, 123456789};
  double out[4];
  uint8_t found[4];
  ASSERT_EQ(motes_track(dir.c_str(), 3, nullptr, nullptr, want, 4, "energy", out, found), MOTES_OK) << motes_last_error();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(found[i], 1);
    EXPECT_EQ(out[i], 0.25 * double(want[i]));
  }
  EXPECT_EQ(found[3], 0);
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(motes_track(dir.c_str(), 4, nullptr, nullptr, want, 4, "energy", out, found), MOTES_ERROR_USAGE);
  EXPECT_EQ(motes_track(dir.c_str(), 3, "e", nullptr, want, 4, "nope", out, found), MOTES_ERROR_USAGE);
  fs::remove_all(dir);
}
