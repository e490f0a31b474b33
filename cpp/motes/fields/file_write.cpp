// Writing field files (fields/file.hpp): a whole field from its C-order arrays, or one part
// from samples already in HZ order; each block coded (or stored within a tolerance by ZFP),
// with its range, then the sections and the header (docs/format.md §14).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include "motes/codec/codec.hpp"
#include "motes/codec/zfp.hpp"
#include "motes/core/errors.hpp"
#include "motes/core/threads.hpp"
#include "motes/fields/file.hpp"
#include "motes/fields/file_area.hpp"
#include "motes/io/files.hpp"

namespace motes::fields {

namespace {

constexpr uint64_t kPage = container::kPage;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Per-block minimum and maximum of the grid's samples (padding and NaN left out).
template <class T>
void block_range(const T* v, const uint8_t* inside, uint64_t n, double& lo_out, double& hi_out, uint64_t& nans) {
  // In locals (not through the references, which the compiler must then store every time),
  // in T: a comparison of T is exact, and NaN fails both.
  T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
  uint64_t valid = 0, nan = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const T x = v[i];
    const bool in = inside[i];
    if constexpr (std::is_floating_point_v<T>) nan += in && x != x;
    valid += in && x == x;
    if (in && x < lo) lo = x;
    if (in && x > hi) hi = x;
  }
  nans += nan;
  lo_out = valid ? double(lo) : std::numeric_limits<double>::infinity();
  hi_out = valid ? double(hi) : -std::numeric_limits<double>::infinity();
}

std::vector<codec::Predictor> predictors_for(codec::ValueType t) {
  std::vector<codec::Predictor> p{codec::Predictor::none, codec::Predictor::delta};
  if (t.is_float) p.push_back(codec::Predictor::xor_);
  else if (t.size > 1) p.push_back(codec::Predictor::offset);
  return p;
}


}  // namespace

uint64_t field_block_samples(const FieldSpec& spec, int block_bits) {
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  return std::min<uint64_t>(uint64_t(1) << block_bits, uint64_t(1) << bitmask.maxh());
}

uint64_t field_block_count(const FieldSpec& spec, int block_bits) {
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  return (uint64_t(1) << bitmask.maxh()) / field_block_samples(spec, block_bits);
}

std::vector<uint64_t> split_blocks(uint64_t blocks, uint32_t parts) {
  if (parts == 0 || parts > blocks) throw UsageError("cannot split " + std::to_string(blocks) + " blocks into " + std::to_string(parts) + " parts");
  std::vector<uint64_t> at(parts + 1);
  for (uint32_t k = 0; k <= parts; ++k) at[k] = k * (blocks / parts) + std::min<uint64_t>(k, blocks % parts);
  return at;
}
namespace {

// Fills block b's samples (per_block of them) of component c and their inside flags.
using BlockSource = std::function<void(size_t c, uint64_t b, unsigned char* values, uint8_t* inside)>;

void check_write(const FieldSpec& spec, const std::vector<const void*>& arrays, const FieldWriteOptions& options) {
  spec.check();
  const size_t nc = spec.component_count();
  if (arrays.size() != nc)
    throw UsageError("field '" + spec.name + "' has " + std::to_string(nc) + " components, " + std::to_string(arrays.size()) + " arrays given");
  for (const void* v : arrays)
    if (!v) throw UsageError("field '" + spec.name + "': a component has no data pointer");
  if (options.block_bits < kMinBlockBits || options.block_bits > kMaxBlockBits)
    throw UsageError("block_bits must be in [" + std::to_string(kMinBlockBits) + ", " + std::to_string(kMaxBlockBits) + "]");
  if (options.zstd_level < -7 || options.zstd_level > 19) throw UsageError("zstd_level must be in [-7, 19]");
}

// Codes block `block` (n samples at `values`, `inside` flags) with codec::Predictor::zfp at
// the field's tolerance into `out`, and decodes it into `decoded`; false when zfp cannot take
// it or a sample of the grid comes back further than the tolerance from its value.
bool try_zfp(const FieldSpec& spec, const std::string& bitmask, int block_bits, uint64_t block, const unsigned char* values,
             const uint8_t* inside, uint64_t n, std::string& out, std::vector<unsigned char>& decoded) {
  codec::Context ctx;
  if (!codec::zfp_block_context(bitmask, block_bits, block, ctx)) return false;
  ctx.zfp_tolerance = spec.tolerance;
  const codec::ValueType type = codec::value_type(uint8_t(spec.dtype));
  std::string z;
  if (!codec::encode_zfp(type, values, n, ctx, z)) return false;
  decoded.assign(n * type.size, 0);
  if (!codec::decode(type, z.data(), z.size(), decoded.data(), n, {}).empty()) return false;
  bool ok = true;
  dispatch_dtype(spec.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* a = reinterpret_cast<const T*>(values);
    const T* d = reinterpret_cast<const T*>(decoded.data());
    for (uint64_t i = 0; i < n && ok; ++i)
      if (inside[i]) ok = std::fabs(double(d[i]) - double(a[i])) <= spec.tolerance;
  });
  if (ok) out = std::move(z);
  return ok;
}

// Writes the blocks [part.first_block, + part.block_count) of a field, from `source`, as a
// field file, phase by phase (run): a coding plan per component, then each component's
// blocks coded with their ranges and written, then the sections and the header after them.
class BlocksWrite {
 public:
  BlocksWrite(const FieldSpec& spec, const PartInfo& part, const BlockSource& source, const FieldWriteOptions& options)
      : spec_(spec), part_(part), source_(source), options_(options), nc_(spec.component_count()),
        threads_(options.threads ? options.threads : default_threads()), bitmask_(Bitmask::guess(spec.dims, spec.ndim)),
        bitmask_text_(bitmask_.text()), size_(dtype_size(spec.dtype)), type_(codec::value_type(uint8_t(spec.dtype))),
        per_block_(field_block_samples(spec, options.block_bits)), first_(part.first_block), blocks_(part.block_count) {}
  FieldSummary run(const std::string& path);

 private:
  void choose_plans();
  void write_component(AtomicFile& file, size_t c);
  void code_block(size_t c, uint64_t b, std::string& coded, uint64_t& nans);
  void write_sections(AtomicFile& file);
  FieldArea header_area() const;
  uint16_t features(container::SectionsBuilder& meta, FieldArea& area);

  const FieldSpec& spec_;
  const PartInfo& part_;
  const BlockSource& source_;
  const FieldWriteOptions& options_;
  const size_t nc_;
  const unsigned threads_;
  const Bitmask bitmask_;
  const std::string bitmask_text_;
  const size_t size_;
  const codec::ValueType type_;
  const uint64_t per_block_, first_, blocks_;
  std::vector<codec::Plan> plans_;
  FieldSummary summary_;
  // Per component and block of the part: where it is stored, its range, whether zfp stores it.
  std::vector<std::vector<StoredBlock>> stored_;
  std::vector<std::vector<double>> bmin_, bmax_;
  std::vector<uint64_t> nans_;
  std::vector<std::vector<uint8_t>> zfp_blocks_;
  uint64_t offset_ = kPage;                       // where the next coded bytes go
  std::vector<uint64_t> first_offset_, last_end_;  // per component: its values' bytes
};

FieldSummary BlocksWrite::run(const std::string& path) {
  choose_plans();
  AtomicFile file(path, options_.sync);
  summary_.bitmask = bitmask_text_;
  summary_.ranges.assign(nc_, ComponentRange{});
  stored_.assign(nc_, std::vector<StoredBlock>(blocks_));
  bmin_.assign(nc_, std::vector<double>(blocks_));
  bmax_.assign(nc_, std::vector<double>(blocks_));
  nans_.assign(nc_, 0);
  zfp_blocks_.assign(nc_, std::vector<uint8_t>(blocks_, 0));
  first_offset_.assign(nc_, 0);
  last_end_.assign(nc_, 0);
  for (size_t c = 0; c < nc_; ++c) write_component(file, c);
  for (size_t c = 0; c < nc_; ++c) {
    summary_.ranges[c] = range_of_blocks(bmin_[c], bmax_[c]);
    summary_.ranges[c].nan_count = nans_[c];
  }
  write_sections(file);
  return summary_;
}

// One plan per component, chosen on up to 8 blocks spread over the part (without compression,
// the raw plan: samples stored as they are).
void BlocksWrite::choose_plans() {
  plans_.resize(nc_);
  for (size_t c = 0; c < nc_; ++c) {
    if (options_.compression != Compression::lossless) {
      plans_[c] = codec::Plan{codec::Predictor::none, codec::Layout::whole, {codec::Coder::raw}, options_.zstd_level};
      continue;
    }
    const uint64_t nsamples = std::min<uint64_t>(blocks_, 8);
    std::vector<std::vector<unsigned char>> bufs(nsamples, std::vector<unsigned char>(per_block_ * size_));
    std::vector<uint8_t> inside(per_block_);
    std::vector<codec::Sample> samples;
    for (uint64_t k = 0; k < nsamples; ++k) {
      const uint64_t b = nsamples > 1 ? k * (blocks_ - 1) / (nsamples - 1) : 0;
      source_(c, first_ + b, bufs[k].data(), inside.data());
      samples.push_back({bufs[k].data(), per_block_, {}});
    }
    plans_[c] = codec::choose(type_, predictors_for(type_), samples, options_.zstd_level);
  }
}

// Component c's blocks, coded in windows of about 4 MiB of samples (the blocks of a window
// in parallel), each window written after the last from offset_.
void BlocksWrite::write_component(AtomicFile& file, size_t c) {
  const uint64_t window = std::max<uint64_t>(1, (uint64_t(1) << 22) / (per_block_ * size_));
  first_offset_[c] = offset_;
  for (uint64_t w0 = 0; w0 < blocks_; w0 += window) {
    const uint64_t w1 = std::min(blocks_, w0 + window);
    std::vector<std::string> coded(w1 - w0);
    std::vector<uint64_t> wnans(w1 - w0, 0);
    parallel_for(w1 - w0, threads_, [&](uint64_t i) { code_block(c, w0 + i, coded[i], wnans[i]); });
    std::string out;
    for (uint64_t i = 0; i < coded.size(); ++i) {
      stored_[c][w0 + i] = StoredBlock{offset_ + out.size(), uint32_t(coded[i].size()), container::checksum(coded[i].data(), coded[i].size())};
      out += coded[i];
      nans_[c] += wnans[i];
    }
    file.pwrite_all(out.data(), out.size(), offset_);
    file.start_writeback(offset_, out.size());
    offset_ += out.size();
    summary_.stored_bytes += out.size();
  }
  last_end_[c] = offset_;
}

// Block b (of the part) of component c: its samples coded into `coded`, its range into
// bmin_ and bmax_, its NaNs counted into `nans`.
void BlocksWrite::code_block(size_t c, uint64_t b, std::string& coded, uint64_t& nans) {
  std::vector<unsigned char> buf(per_block_ * size_);
  std::vector<uint8_t> inside(per_block_);
  source_(c, first_ + b, buf.data(), inside.data());
  // With a tolerance, the block as zfp stores it, when that keeps every sample of the
  // grid within the tolerance (decoded here and compared); its range is then that of
  // the values stored. Otherwise (NaN, infinities, a missed bound) the lossless plan.
  const unsigned char* ranged = buf.data();
  std::vector<unsigned char> back;
  if (spec_.tolerance > 0 &&
      try_zfp(spec_, bitmask_text_, options_.block_bits, first_ + b, buf.data(), inside.data(), per_block_, coded, back)) {
    ranged = back.data();
    zfp_blocks_[c][b] = 1;
  } else {
    codec::encode(plans_[c], type_, buf.data(), per_block_, {}, coded);
  }
  dispatch_dtype(spec_.dtype, [&](auto tag) {
    using T = decltype(tag);
    block_range(reinterpret_cast<const T*>(ranged), inside.data(), per_block_, bmin_[c][b], bmax_[c][b], nans);
  });
}

// The sections after the blocks (meta, each component's values and block table, then the
// block ranges) and the header; the summary's sizes and checksum.
void BlocksWrite::write_sections(AtomicFile& file) {
  container::SectionsBuilder meta{align_up(offset_, 8), true, {}, {}, 0};
  meta.add(kMeta, 0, spec_json(spec_).dump());
  for (uint32_t c = 0; c < nc_; ++c) {
    const uint32_t at = meta.bulk(kValues, c, container::kBlocks, first_offset_[c], last_end_[c] - first_offset_[c]);
    meta.add(kBlockTable, at, container::encode_block_table(stored_[c]));
  }
  for (uint32_t c = 0; c < nc_; ++c) {
    std::string r(reinterpret_cast<const char*>(bmin_[c].data()), blocks_ * 8);
    r.append(reinterpret_cast<const char*>(bmax_[c].data()), blocks_ * 8);
    meta.add(kBlockRanges, c, r);
  }
  FieldArea area = header_area();
  const uint16_t minor = features(meta, area);
  const container::Header h = meta.write(file, kMagic, kVersionMajor, minor, &area, sizeof area);
  summary_.file_bytes = h.file_size;
  summary_.data_bytes = spec_.sample_count() * size_ * nc_;
  summary_.header_checksum = h.header_checksum;
}

// The header area of a whole field (a part's run of blocks is set by features()).
FieldArea BlocksWrite::header_area() const {
  FieldArea area{};
  area.sample_count = spec_.sample_count();
  for (int a = 0; a < 3; ++a) area.dims[a] = spec_.dims[size_t(a)];
  area.ndim = uint32_t(spec_.ndim);
  area.component_count = uint32_t(nc_);
  area.dtype = uint8_t(spec_.dtype);
  area.centering = uint8_t(spec_.centering);
  area.block_bits = uint8_t(options_.block_bits);
  area.maxh = uint8_t(bitmask_.maxh());
  return area;
}

// The features the file requires (ZFP blocks, a geometry, a part: then also the part's
// run of blocks in the area), and its minor version: 1.1 with any of them, 1.0 without.
uint16_t BlocksWrite::features(container::SectionsBuilder& meta, FieldArea& area) {
  uint16_t minor = kWholeVersionMinor;
  for (const auto& z : zfp_blocks_)
    if (std::find(z.begin(), z.end(), 1) != z.end()) {
      meta.features |= container::kFeatureZfpBlocks;
      minor = kVersionMinor;
      summary_.zfp_blocks += uint64_t(std::count(z.begin(), z.end(), 1));
    }
  if (!spec_.geometry.cartesian_grid()) {  // readers that do not know the geometry refuse the file (§14.9)
    meta.features |= container::kFeatureFieldGeometry;
    minor = kVersionMinor;
  }
  if (part_.count > 1) {  // a whole field's file stays a 1.0 file, byte for byte
    area.part_index = part_.index;
    area.part_count = part_.count;
    area.first_block = part_.first_block;
    area.block_count = part_.block_count;
    meta.features |= container::kFeatureFieldParts;
    minor = kVersionMinor;
  }
  return minor;
}

}  // namespace

FieldSummary write_field_file(const std::string& path, const FieldSpec& spec, const std::vector<const void*>& values,
                              const FieldWriteOptions& options) {
  check_write(spec, values, options);
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  const HzOrder order(bitmask);
  const size_t size = dtype_size(spec.dtype);
  const uint64_t per_block = field_block_samples(spec, options.block_bits);
  const int block_bits = per_block == (uint64_t(1) << options.block_bits) ? options.block_bits : bitmask.maxh();
  const BlockOffsets offsets(order, block_bits, spec.dims[0], spec.dims[0] * spec.dims[1], {0, 0, 0}, bitmask.maxh());
  const PartInfo whole{0, 1, 0, field_block_count(spec, options.block_bits)};
  return BlocksWrite(spec, whole, [&](size_t c, uint64_t b, unsigned char* buf, uint8_t* inside) {
    gather_block(order, offsets, block_bits, b, values[c], spec.dims, size, buf, inside);
  }, options).run(path);
}

FieldSummary write_field_part(const std::string& path, const FieldSpec& spec, const std::vector<const void*>& hz_values,
                              const uint8_t* inside, const PartInfo& part, const FieldWriteOptions& options) {
  check_write(spec, hz_values, options);
  const uint64_t blocks = field_block_count(spec, options.block_bits);
  if (part.count == 0 || part.count > kMaxParts || part.index >= part.count || part.block_count == 0 ||
      part.first_block >= blocks || part.block_count > blocks - part.first_block || (part.count == 1 && part.block_count != blocks))
    throw UsageError("field '" + spec.name + "': part " + std::to_string(part.index) + " of " + std::to_string(part.count) +
                     " (blocks " + std::to_string(part.first_block) + " + " + std::to_string(part.block_count) +
                     ") does not fit its " + std::to_string(blocks) + " blocks");
  if (!inside) throw UsageError("field '" + spec.name + "': no inside flags");
  const size_t size = dtype_size(spec.dtype);
  const uint64_t per_block = field_block_samples(spec, options.block_bits);
  return BlocksWrite(spec, part, [&](size_t c, uint64_t b, unsigned char* buf, uint8_t* in) {
    const uint64_t at = (b - part.first_block) * per_block;
    std::memcpy(buf, static_cast<const unsigned char*>(hz_values[c]) + at * size, per_block * size);
    std::memcpy(in, inside + at, per_block);
  }, options).run(path);
}

}  // namespace motes::fields
