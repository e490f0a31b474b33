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

// A component's range from its blocks' minima and maxima (blocks holding no valid sample,

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

// The blocks [part.first_block, + part.block_count) of a field, from `source`, as a field file.
FieldSummary write_blocks(const std::string& path, const FieldSpec& spec, const PartInfo& part, const BlockSource& source,
                          const FieldWriteOptions& options) {
  const size_t nc = spec.component_count();
  const unsigned threads = options.threads ? options.threads : default_threads();
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  const size_t size = dtype_size(spec.dtype);
  const codec::ValueType type = codec::value_type(uint8_t(spec.dtype));
  const uint64_t per_block = field_block_samples(spec, options.block_bits);
  const uint64_t first = part.first_block, blocks = part.block_count;
  const bool lossless = options.compression == Compression::lossless;

  // One plan per component, chosen on up to 8 blocks spread over the part.
  std::vector<codec::Plan> plans(nc);
  for (size_t c = 0; c < nc; ++c) {
    if (!lossless) {
      plans[c] = codec::Plan{codec::Predictor::none, codec::Layout::whole, {codec::Coder::raw}, options.zstd_level};
      continue;
    }
    const uint64_t nsamples = std::min<uint64_t>(blocks, 8);
    std::vector<std::vector<unsigned char>> bufs(nsamples, std::vector<unsigned char>(per_block * size));
    std::vector<uint8_t> inside(per_block);
    std::vector<codec::Sample> samples;
    for (uint64_t k = 0; k < nsamples; ++k) {
      const uint64_t b = nsamples > 1 ? k * (blocks - 1) / (nsamples - 1) : 0;
      source(c, first + b, bufs[k].data(), inside.data());
      samples.push_back({bufs[k].data(), per_block, {}});
    }
    plans[c] = codec::choose(type, predictors_for(type), samples, options.zstd_level);
  }

  AtomicFile file(path, options.sync);
  FieldSummary summary;
  summary.bitmask = bitmask.text();
  summary.ranges.assign(nc, ComponentRange{});
  std::vector<std::vector<StoredBlock>> stored(nc, std::vector<StoredBlock>(blocks));
  std::vector<std::vector<double>> bmin(nc, std::vector<double>(blocks)), bmax(nc, std::vector<double>(blocks));
  std::vector<uint64_t> nans(nc, 0);
  std::vector<std::vector<uint8_t>> zfp_blocks(nc, std::vector<uint8_t>(blocks, 0));
  const std::string bitmask_text = bitmask.text();
  uint64_t offset = kPage;
  std::vector<uint64_t> first_offset(nc), last_end(nc);
  const uint64_t window = std::max<uint64_t>(1, (uint64_t(1) << 22) / (per_block * size));  // about 4 MiB of samples
  for (size_t c = 0; c < nc; ++c) {
    first_offset[c] = offset;
    for (uint64_t w0 = 0; w0 < blocks; w0 += window) {
      const uint64_t w1 = std::min(blocks, w0 + window);
      std::vector<std::string> coded(w1 - w0);
      std::vector<uint64_t> wnans(w1 - w0, 0);
      parallel_for(w1 - w0, threads, [&](uint64_t i) {
        const uint64_t b = w0 + i;
        std::vector<unsigned char> buf(per_block * size);
        std::vector<uint8_t> inside(per_block);
        source(c, first + b, buf.data(), inside.data());
        // With a tolerance, the block as zfp stores it, when that keeps every sample of the
        // grid within the tolerance (decoded here and compared); its range is then that of
        // the values stored. Otherwise (NaN, infinities, a missed bound) the lossless plan.
        const unsigned char* ranged = buf.data();
        std::vector<unsigned char> back;
        if (spec.tolerance > 0 && try_zfp(spec, bitmask_text, options.block_bits, first + b, buf.data(), inside.data(),
                                          per_block, coded[i], back)) {
          ranged = back.data();
          zfp_blocks[c][b] = 1;
        } else {
          codec::encode(plans[c], type, buf.data(), per_block, {}, coded[i]);
        }
        dispatch_dtype(spec.dtype, [&](auto tag) {
          using T = decltype(tag);
          block_range(reinterpret_cast<const T*>(ranged), inside.data(), per_block, bmin[c][b], bmax[c][b], wnans[i]);
        });
      });
      std::string out;
      for (uint64_t i = 0; i < coded.size(); ++i) {
        stored[c][w0 + i] = StoredBlock{offset + out.size(), uint32_t(coded[i].size()), container::checksum(coded[i].data(), coded[i].size())};
        out += coded[i];
        nans[c] += wnans[i];
      }
      file.pwrite_all(out.data(), out.size(), offset);
      file.start_writeback(offset, out.size());
      offset += out.size();
      summary.stored_bytes += out.size();
    }
    last_end[c] = offset;
  }
  for (size_t c = 0; c < nc; ++c) {
    summary.ranges[c] = range_of_blocks(bmin[c], bmax[c]);
    summary.ranges[c].nan_count = nans[c];
  }

  container::SectionsBuilder meta{align_up(offset, 8), true, {}, {}, 0};
  meta.add(kMeta, 0, spec_json(spec).dump());
  for (uint32_t c = 0; c < nc; ++c) {
    const uint32_t at = meta.bulk(kValues, c, container::kBlocks, first_offset[c], last_end[c] - first_offset[c]);
    meta.add(kBlockTable, at, container::encode_block_table(stored[c]));
  }
  for (uint32_t c = 0; c < nc; ++c) {
    std::string r(reinterpret_cast<const char*>(bmin[c].data()), blocks * 8);
    r.append(reinterpret_cast<const char*>(bmax[c].data()), blocks * 8);
    meta.add(kBlockRanges, c, r);
  }
  FieldArea area{};
  area.sample_count = spec.sample_count();
  for (int a = 0; a < 3; ++a) area.dims[a] = spec.dims[size_t(a)];
  area.ndim = uint32_t(spec.ndim);
  area.component_count = uint32_t(nc);
  area.dtype = uint8_t(spec.dtype);
  area.centering = uint8_t(spec.centering);
  area.block_bits = uint8_t(options.block_bits);
  area.maxh = uint8_t(bitmask.maxh());
  uint16_t minor = kWholeVersionMinor;
  for (const auto& z : zfp_blocks)
    if (std::find(z.begin(), z.end(), 1) != z.end()) {
      meta.features |= container::kFeatureZfpBlocks;
      minor = kVersionMinor;
      summary.zfp_blocks += uint64_t(std::count(z.begin(), z.end(), 1));
    }
  if (!spec.geometry.cartesian_grid()) {  // readers that do not know the geometry refuse the file (§14.9)
    meta.features |= container::kFeatureFieldGeometry;
    minor = kVersionMinor;
  }
  if (part.count > 1) {  // a whole field's file stays a 1.0 file, byte for byte
    area.part_index = part.index;
    area.part_count = part.count;
    area.first_block = part.first_block;
    area.block_count = part.block_count;
    meta.features |= container::kFeatureFieldParts;
    minor = kVersionMinor;
  }
  const container::Header h = meta.write(file, kMagic, kVersionMajor, minor, &area, sizeof area);
  summary.file_bytes = h.file_size;
  summary.data_bytes = spec.sample_count() * size * nc;
  summary.header_checksum = h.header_checksum;
  return summary;
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
  return write_blocks(path, spec, whole, [&](size_t c, uint64_t b, unsigned char* buf, uint8_t* inside) {
    gather_block(order, offsets, block_bits, b, values[c], spec.dims, size, buf, inside);
  }, options);
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
  return write_blocks(path, spec, part, [&](size_t c, uint64_t b, unsigned char* buf, uint8_t* in) {
    const uint64_t at = (b - part.first_block) * per_block;
    std::memcpy(buf, static_cast<const unsigned char*>(hz_values[c]) + at * size, per_block * size);
    std::memcpy(in, inside + at, per_block);
  }, options);
}

}  // namespace motes::fields
