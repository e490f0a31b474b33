// thetaMode field files (docs/format.md §14.9): the geometry round trips through the meta
// section, the file requires field-geometry (bit 4) and is version 1.1 so that a reader
// without it refuses the file by name instead of reading a Cartesian grid; a file whose meta
// section and required features disagree is refused; a Cartesian file stays version 1.0
// without the bit.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "motes/container/container.hpp"
#include "motes/core/errors.hpp"
#include "motes/fields/file.hpp"

using namespace motes;
using namespace motes::fields;
namespace fs = std::filesystem;

namespace {

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("motes-geometry-" + std::to_string(::getpid()) + "-" + name)).string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

container::Header header_of(const std::string& bytes) {
  container::Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  return h;
}

// The file's bytes with its required features replaced (the header checksum made valid).
std::string with_features(std::string bytes, uint64_t features) {
  container::Header h = header_of(bytes);
  h.required_features = features;
  h.header_checksum = container::checksum(&h, container::kHeaderChecksumAt);
  std::memcpy(bytes.data(), &h, sizeof h);
  return bytes;
}

void expect_refused(const std::string& bytes, const std::string& needle) {
  const std::string p = temp("mutated.mfd");
  spit(p, bytes);
  try {
    FieldFile::open(p);
    FAIL() << "accepted a file that should fail with: " << needle;
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

struct Written {
  FieldSpec spec;
  std::vector<std::vector<float>> arrays;
  std::string path;
};

Written write_theta(uint32_t modes, char imag) {
  Written w;
  FieldSpec& s = w.spec;
  s.name = "E";
  s.ndim = 2;
  s.dims = {11, 5, 1};  // z, r
  s.components = {"r", "t", "z"};
  s.centering = Centering::cell;
  s.origin = {-3.0, 0.0, 0.0};
  s.spacing = {0.5, 0.25, 1.0};
  s.geometry.kind = Geometry::theta_mode;
  s.geometry.modes = modes;
  s.geometry.imag = imag;
  std::vector<const void*> values;
  for (size_t c = 0; c < s.component_count(); ++c) {
    std::vector<float>& a = w.arrays.emplace_back(s.sample_count());
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(c * 1000 + i) * 0.5f;
  }
  for (const auto& a : w.arrays) values.push_back(a.data());
  w.path = temp("theta.mfd");
  FieldWriteOptions o;
  o.sync = false;
  write_field_file(w.path, s, values, o);
  return w;
}

}  // namespace

TEST(FieldGeometry, ThetaModeRoundTripsAndRequiresFieldGeometry) {
  const Written w = write_theta(2, '-');
  auto f = FieldFile::open(w.path);
  EXPECT_EQ(f->spec().geometry, w.spec.geometry);
  EXPECT_EQ(f->spec().component_count(), 9u);  // r, t, z x (mode 0, Re 1, Im 1)
  for (size_t c = 0; c < 9; ++c) {
    std::vector<float> out(w.spec.sample_count());
    f->read(f->region({0, 0, 0}, w.spec.dims, 0), c, out.data());
    EXPECT_EQ(out, w.arrays[c]) << "stored array " << c;
  }
  const std::string bytes = slurp(w.path);
  const container::Header h = header_of(bytes);
  EXPECT_EQ(h.version_major, 1);
  EXPECT_EQ(h.version_minor, 1);
  EXPECT_TRUE(h.required_features & container::kFeatureFieldGeometry);
  EXPECT_EQ(container::feature_names(container::kFeatureFieldGeometry), "field-geometry");
  // A reader that does not know the bit refuses it by name (as this one refuses bit 9).
  expect_refused(with_features(bytes, h.required_features | (uint64_t(1) << 9)), "needs features this motes does not know (bit 9)");
  // Without the bit, the geometry in the meta section is refused: no reader may take the
  // modes for a Cartesian grid.
  expect_refused(with_features(bytes, h.required_features & ~uint64_t(container::kFeatureFieldGeometry)),
                 "does not require field-geometry");
}

TEST(FieldGeometry, CartesianFilesStayVersion10WithoutTheBit) {
  FieldSpec s;
  s.name = "rho";
  s.ndim = 2;
  s.dims = {6, 4, 1};
  std::vector<float> a(s.sample_count(), 1.5f);
  const std::string p = temp("cart.mfd");
  FieldWriteOptions o;
  o.sync = false;
  write_field_file(p, s, {a.data()}, o);
  const std::string bytes = slurp(p);
  const container::Header h = header_of(bytes);
  EXPECT_EQ(h.version_minor, 0);
  EXPECT_FALSE(h.required_features & container::kFeatureFieldGeometry);
  EXPECT_TRUE(FieldFile::open(p)->spec().geometry.cartesian_grid());
  expect_refused(with_features(bytes, h.required_features | container::kFeatureFieldGeometry),
                 "requires field-geometry but its meta section gives no geometry");
}

TEST(FieldGeometry, BadThetaModeSpecsAreRefused) {
  FieldSpec s;
  s.name = "E";
  s.ndim = 3;
  s.dims = {4, 4, 4};
  s.geometry.kind = Geometry::theta_mode;
  s.geometry.modes = 2;
  EXPECT_THROW(s.check(), UsageError);  // not 2-D
  s.ndim = 2;
  s.dims = {4, 4, 1};
  s.origin = {0, -1, 0};
  EXPECT_THROW(s.check(), UsageError);  // r starts below the axis
  s.origin = {0, 0, 0};
  s.components = {"a", "b", "c"};
  s.geometry.modes = 11;  // 3 x 21 = 63 arrays
  EXPECT_NO_THROW(s.check());
  s.geometry.modes = 12;  // 3 x 23 = 69 > 64
  EXPECT_THROW(s.check(), UsageError);
  s.geometry.modes = 0;
  EXPECT_THROW(s.check(), UsageError);
}
