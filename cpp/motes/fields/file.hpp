// The field file (.mfd): one grid field of one step, its samples in HZ order (fields/hz)
// in coded blocks of 2^block_bits samples per component, with each block's min and max,
// in the generic container. Reading a box at a level touches only the blocks that hold
// its samples; a coarse preview reads a prefix. docs/format.md §14 is the normative text.
#pragma once

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "motes/container/block_stream.hpp"
#include "motes/container/container.hpp"
#include "motes/core/types.hpp"
#include "motes/fields/geometry.hpp"
#include "motes/fields/hz.hpp"
#include "motes/io/byte_source.hpp"

namespace motes::fields {

inline constexpr char kMagic[8] = {'M', 'O', 'T', 'E', 'S', 'F', 'L', 'D'};
// 1.0: a whole field in one file; 1.1: a field in parts (PartInfo, feature field-parts), with
// ZFP blocks (feature zfp-blocks) or of a geometry other than Cartesian (feature
// field-geometry). A whole lossless Cartesian field is still written as 1.0.
inline constexpr uint16_t kVersionMajor = 1, kVersionMinor = 1, kWholeVersionMinor = 0;
inline constexpr uint32_t kMaxParts = uint32_t(1) << 20;
inline constexpr int kDefaultBlockBits = 14;  // 16384 samples: the particle columns' block size
inline constexpr int kMinBlockBits = 6, kMaxBlockBits = 17;
inline constexpr size_t kMaxComponents = 64;

// Section kinds of a field file (docs/format.md §14.3). Never renumber.
enum SectionKind : uint16_t {
  kMeta = 1,          // JSON: name, unit, attributes, components, bitmask, geometry
  kValues = 2,        // one component's samples in HZ order (coded blocks); column = component
  kBlockTable = 3,    // the blocks of the kValues section whose table index is `column`
  kBlockRanges = 4,   // one component's per-block minimum then maximum (f64); column = component
};

enum class Centering : uint8_t { node = 0, cell = 1 };
const char* centering_name(Centering c);

// A field but its samples.
struct FieldSpec {
  std::string name;
  DType dtype = DType::f32;
  int ndim = 3;
  Dims dims{1, 1, 1};                   // samples along x, y, z (1 past ndim)
  std::vector<std::string> components;  // empty: a scalar field
  Geometry geometry;                    // Cartesian, or thetaMode (axes z, r; the modes stored per component)
  Centering centering = Centering::node;
  std::array<double, 3> origin{0, 0, 0}, spacing{1, 1, 1};  // a uniform grid (when coords are empty)
  std::array<std::vector<double>, 3> coords;                 // a rectilinear grid: one array per axis
  std::string unit;
  nlohmann::json attributes = nlohmann::json::object();
  // > 0: the samples are stored within this absolute error (ZFP fixed accuracy, f32 and f64
  // only; a block that zfp cannot keep within it is stored exactly). 0: exactly.
  double tolerance = 0;

  // The components (1 for a scalar field), and the arrays stored: per component, its modes'
  // slots (geometry.slots(); 1 for a Cartesian field), component-major. Stored array
  // `c` is slot c % slots of component c / slots.
  size_t vector_count() const { return components.empty() ? 1 : components.size(); }
  size_t component_count() const { return vector_count() * geometry.slots(); }
  uint64_t sample_count() const { return dims[0] * dims[1] * dims[2]; }
  bool rectilinear() const { return !coords[0].empty(); }
  // UsageError naming the field and the problem.
  void check() const;
};

struct FieldWriteOptions {
  Compression compression = Compression::lossless;
  int zstd_level = 1;
  int block_bits = kDefaultBlockBits;
  bool sync = true;
  unsigned threads = 0;  // 0: all cores
};

struct ComponentRange {
  double min = 0, max = 0;  // over the samples that are not NaN; 0, 0 when all are
  uint64_t nan_count = 0;
};

struct FieldSummary {
  uint64_t file_bytes = 0;
  uint64_t data_bytes = 0;    // the samples' bytes (every component, without padding)
  uint64_t stored_bytes = 0;  // the coded blocks' bytes
  uint64_t zfp_blocks = 0;    // blocks stored by ZFP within the tolerance (the others exactly)
  uint64_t header_checksum = 0;
  std::string bitmask;
  std::vector<ComponentRange> ranges;  // per component
};

// Writes the field file at `path` (atomically): values[c] holds component c's samples in C
// order ((z, y, x) indexing), spec.sample_count() of them.
FieldSummary write_field_file(const std::string& path, const FieldSpec& spec, const std::vector<const void*>& values,
                              const FieldWriteOptions& options = {});

// Which of a field's HZ blocks a file holds: all of them (count 1), or the run
// [first_block, first_block + block_count) as part `index` of `count` (parallel writes:
// each aggregator writes one part; docs/format.md §14.7).
struct PartInfo {
  uint32_t index = 0, count = 1;
  uint64_t first_block = 0, block_count = 0;
};
// The number of HZ blocks of a field of `spec` in blocks of 2^block_bits samples (one block
// when the padded grid is smaller), and the samples per block.
uint64_t field_block_count(const FieldSpec& spec, int block_bits);
uint64_t field_block_samples(const FieldSpec& spec, int block_bits);
// Splits a field's blocks into `parts` runs of near-equal length (the first runs one block
// longer); run k is [result[k], result[k + 1]).
std::vector<uint64_t> split_blocks(uint64_t blocks, uint32_t parts);

// Writes one part of a field, its samples already in HZ order: hz_values[c] holds component
// c's part.block_count * field_block_samples() samples from the part's first block on, and
// inside[i] is 1 for a sample of the grid and 0 for one of the padding (its value is stored,
// but left out of the block ranges). A part of count 1 is the whole field, written exactly
// as write_field_file writes it.
FieldSummary write_field_part(const std::string& path, const FieldSpec& spec, const std::vector<const void*>& hz_values,
                              const uint8_t* inside, const PartInfo& part, const FieldWriteOptions& options = {});

// A box of samples at a level: [lo, hi) in sample indexes (x, y, z), and the lattice of the
// level inside it: every 2^stride_bits[a]-th sample of the grid along axis a, from lattice
// index first[a], count[a] of them.
struct Region {
  Dims lo{0, 0, 0}, hi{1, 1, 1};
  int level = 0, resolution = 0;
  std::array<int, 3> stride_bits{};
  Dims first{0, 0, 0}, count{1, 1, 1};
  uint64_t size() const { return count[0] * count[1] * count[2]; }
};

class FieldFile {
 public:
  static std::shared_ptr<FieldFile> open(const std::string& path);
  static std::shared_ptr<FieldFile> open(std::shared_ptr<const ByteSource> source);
  // A field written in parts: the files of parts 0, 1, ... (FormatError when they do not
  // make one field: another field's part, a part missing or given twice).
  static std::shared_ptr<FieldFile> open(const std::vector<std::string>& part_paths);
  static std::shared_ptr<FieldFile> open(std::vector<std::shared_ptr<const ByteSource>> parts);
  FieldFile(const FieldFile&) = delete;
  FieldFile& operator=(const FieldFile&) = delete;

  const FieldSpec& spec() const { return spec_; }
  const Bitmask& bitmask() const { return order_.bitmask(); }
  const HzOrder& order() const { return order_; }
  int block_bits() const { return block_bits_; }
  int levels() const { return order_.bitmask().levels(); }
  const std::vector<ComponentRange>& ranges() const { return ranges_; }
  size_t part_count() const { return parts_.size(); }
  const PartInfo& part(size_t k) const { return parts_.at(k).info; }
  uint64_t header_checksum(size_t part = 0) const { return parts_.at(part).container->header().header_checksum; }
  uint64_t stored_bytes() const;
  const std::string& path(size_t part = 0) const { return parts_.at(part).source->name(); }
  // The blocks' minima and maxima of a component (NaN excluded; +inf, -inf for a block
  // holding no valid sample).
  const std::vector<double>& block_min(size_t c) const { return block_min_.at(c); }
  const std::vector<double>& block_max(size_t c) const { return block_max_.at(c); }

  // The region of [lo, hi) (clipped to the grid; UsageError when empty) at `level`.
  Region region(const Dims& lo, const Dims& hi, int level) const;
  // The blocks a read of `r` touches.
  std::vector<uint64_t> blocks(const Region& r) const;
  // Reads component c of `r` into out: r.size() samples, C order ((z, y, x) indexing).
  void read(const Region& r, size_t c, void* out, unsigned threads = 0) const;
  // Checks every block against its checksum and that it decodes.
  void verify() const;

 private:
  struct Part {
    std::shared_ptr<const ByteSource> source;
    std::unique_ptr<container::Reader> container;
    PartInfo info;
    std::vector<BlockStream> values;  // per component: the part's blocks
  };
  FieldFile(std::vector<std::shared_ptr<const ByteSource>> sources);
  // Reads part `k`'s header, meta and sections; the first part sets the spec, the others
  // must agree with it.
  void open_part(size_t k, std::shared_ptr<const ByteSource> source);
  class PartOpen;  // open_part's phases (file_open.cpp)
  const Part& part_of(uint64_t block) const;
  std::vector<Part> parts_;
  FieldSpec spec_;
  std::string meta_;  // the meta section's JSON text (the same in every part)
  HzOrder order_;
  int block_bits_ = kDefaultBlockBits;
  uint64_t per_block_ = 0, blocks_ = 0;
  std::vector<ComponentRange> ranges_;
  std::vector<std::vector<double>> block_min_, block_max_;
  [[noreturn]] void fail(const std::string& what, size_t part = 0) const;
};

// The JSON of the meta section (and the manifest's field entry) from a spec, and back
// (FormatError through `fail` naming what is wrong).
nlohmann::json spec_json(const FieldSpec& spec);

}  // namespace motes::fields
