// Byte-level constants of the particle file format (versions 1 and 2); docs/format.md is
// the normative text. Format 2 files are containers (container/container.hpp) whose kind
// area is ParticleArea; format 1 files have the Format1Header below.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "motes/core/bytes.hpp"  // and its little-endian check
#include "motes/core/types.hpp"
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace motes::spec {

// Fuzzing builds skip checksum comparisons so mutated inputs reach the structural checks.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
inline constexpr bool kCheckSums = false;
#else
inline constexpr bool kCheckSums = true;
#endif

inline constexpr char kMagic[8] = {'M', 'O', 'T', 'E', 'S', 'P', 'R', 'T'};
inline constexpr uint16_t kVersionMajor = 2;  // written
// 2.1: the id index (kinds 10-12); 2.2: tail indexes (kinds 13-15); 2.3: covering tail
// indexes (kinds 16-17); 2.4: derived quantities (kinds 18-23); 2.5: packed words in coded
// blocks (feature packed-blocks); 2.6: detail stored region by region (feature
// regional-detail); 2.7: the id column stored only as its id index (feature ids-by-index).
// A file is written with the lowest minor version that holds what it has (2.0 without any
// of them).
inline constexpr uint16_t kVersionMinor = 7;
inline constexpr uint16_t kRegionalVersionMinor = 6;
inline constexpr uint16_t kPackedVersionMinor = 5;
inline constexpr uint16_t kDerivedVersionMinor = 4;
inline constexpr uint16_t kCoverVersionMinor = 3;
inline constexpr uint16_t kTailVersionMinor = 2;
inline constexpr uint16_t kIdVersionMinor = 1;
inline constexpr uint16_t kPlainVersionMinor = 0;
inline constexpr uint16_t kLegacyMajor = 1;   // format 1 (motes 0.1) files stay readable forever
inline constexpr uint64_t kPage = 4096;
inline constexpr uint32_t kHeaderBytes = 256;        // checksummed header prefix
inline constexpr uint32_t kHeaderChecksumAt = 248;   // u64 XXH3 of bytes [0, 248)
inline constexpr uint32_t kBitmapBins = 32;
inline constexpr uint32_t kQuantileBins = 256;           // quantile codes are u8
inline constexpr uint32_t kNoColumn = 0xFFFFFFFFu;

enum SectionKind : uint32_t {
  kSchema = 1,
  kNodes = 2,
  kColumn = 3,       // bulk: particle_count values in file order
  kNodeRanges = 4,   // per node: subtree min, max in the column's dtype
  kBitmaps = 5,      // global range, bitmap dictionary, per-node ids
  kQuantileEdges = 6,    // 257 f64 quantile edges
  kQuantileCodes = 7,    // bulk: particle_count u8 quantile codes in file order
  kBlockSums = 8,    // u64 XXH3 per block of the bulk section named by `column`
  kBlockTable = 9,   // format 2: a BlockEntry per coded block of the bulk section named by `column`
  kIdKeys = 10,      // 2.1, bulk: the id column's values, ordered as u64 and sorted (coded blocks)
  kIdRows = 11,      // 2.1, bulk: the file position of each sorted id (u32, or u64 past 2^32 particles)
  kIdFences = 12,    // 2.1: per block of the id index, its first and last key (u64 each)
  kTailValues = 13,  // 2.2, bulk: a column's tail values, ascending, in its dtype (coded blocks)
  kTailRows = 14,    // 2.2, bulk: the file position of each tail value (u32, or u64 past 2^32 particles)
  kTailBounds = 15,  // 2.2: the tail's counts, flags and limits, then each block's first and last value (f64)
  kTailCoverValues = 16,  // 2.3, bulk: another column's values at a tail's outermost entries, in entry order
  kTailCover = 17,        // 2.3: a tail's covered entries per side and its kind-16 sections (table indexes)
  // 2.4, derived quantities (particles/derived.hpp): `column` is the quantity's number d
  // (kinds 18-21, 23) or, for kind 22, the covered column; kinds 19-23 are laid out as 13-17.
  kDerived = 18,                 // a derived quantity's name, expression and statistics
  kDerivedTailValues = 19,       // bulk: its tail's values (float64), as kind 13
  kDerivedTailRows = 20,         // bulk: their file positions, as kind 14
  kDerivedTailBounds = 21,       // its tail's bounds, as kind 15
  kDerivedTailCoverValues = 22,  // bulk: a column's values at its tail's outermost entries, as kind 16
  kDerivedTailCover = 23,        // its tail's cover, as kind 17 (listing kind-22 sections)
};
// A section kind as messages name it ("quantile codes"; "section kind 42" for an unknown one).
std::string section_kind_name(uint32_t kind);
// Bulk sections: read block by block where they lie, never as a whole at open.
inline constexpr bool is_bulk(uint32_t kind) {
  return kind == kColumn || kind == kQuantileCodes || kind == kIdKeys || kind == kIdRows || kind == kTailValues || kind == kTailRows ||
         kind == kTailCoverValues || kind == kDerivedTailValues || kind == kDerivedTailRows || kind == kDerivedTailCoverValues;
}
inline constexpr uint32_t kIdBlockValues = 4096;  // entries per block of the id and tail indexes
inline constexpr double kDefaultTailFraction = 0.005;
// The tail bounds section: u64 low count, u64 high count, u32 flags, u32 zero, 8 B low limit,
// 8 B high limit; then 16 B of fences per block of kIdBlockValues entries.
inline constexpr uint32_t kTailBoundsHead = 40;  // values beyond each limit of a tail index
// Covering tails (2.3): by default the outermost kDefaultTailCover of the values on each side
// of a tail index carry every other column beside them. The cover section (kind 17): u64
// entries covered on the low side, u64 on the high side, u32 K, u32 zero, then K u32 table
// indexes of the kind-16 sections holding the covered columns.
inline constexpr double kDefaultTailCover = 0.002;
inline constexpr uint32_t kTailCoverHead = 24;
// Derived quantities (2.4): the kind-18 section is u64 NaN count, f64 min, f64 max, u32 name
// length, u32 expression length, then the name and the expression (UTF-8).
inline constexpr uint32_t kDerivedHead = 32;

// Values per block in format 2 (ParticleArea::block_values): the unit of coded blocks and
// of block checksums of every bulk section, so block b covers the same rows in all of them.
inline constexpr uint32_t kDefaultBlockValues = 4096;
inline constexpr uint32_t kMaxBlockValues = 1u << 17;  // and at most 1 MiB of values per block

#pragma pack(push, 1)
// Format 1: the whole header (format 2 files have the container's, container::Header).
struct Format1Header {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_bytes;
  uint64_t particle_count;
  uint32_t column_count;
  uint32_t node_count;
  uint32_t level_count;
  uint32_t lod_count;
  uint32_t leaf_size;
  uint32_t block_bytes;
  uint64_t section_table_offset;
  uint32_t section_count;
  uint32_t flags;
  uint64_t file_size;
  uint64_t section_table_checksum;
  double bounds_lo[3];
  double bounds_hi[3];
  uint8_t reserved[kHeaderChecksumAt - 128];
  uint64_t header_checksum;
};
static_assert(sizeof(Format1Header) == kHeaderBytes);

// Format 2: the kind area of a particle file's container header (bytes 56..247).
struct ParticleArea {
  uint64_t particle_count;
  uint32_t column_count;
  uint32_t node_count;
  uint32_t level_count;
  uint32_t lod_count;
  uint32_t leaf_size;
  uint32_t block_values;
  double bounds_lo[3];
  double bounds_hi[3];
  uint32_t detail_level;  // 2.6: levels from this one on are stored region by region (0: none)
  uint32_t region_depth;  // 2.6: the depth of the regions' roots (<= detail_level)
  uint8_t zero[192 - 88];
};
static_assert(sizeof(ParticleArea) == 192);

// Format 1: an entry of the section table (format 2: container::SectionEntry).
struct Format1SectionEntry {
  uint32_t kind;
  uint32_t column;
  uint64_t offset;
  uint64_t length;
  uint64_t checksum;  // XXH3 of the section bytes; 0 for bulk sections (see kBlockSums)
};
static_assert(sizeof(Format1SectionEntry) == 32);

struct BitmapsHeader {
  double global_min;
  double global_max;
  uint32_t dictionary_size;
  uint32_t id_width;  // 1, 2 or 4 bytes per node id
  uint64_t nan_count; // values that are NaN (excluded from ranges and bitmaps)
};
static_assert(sizeof(BitmapsHeader) == 32);
#pragma pack(pop)

inline uint64_t checksum(const void* data, size_t n) { return XXH3_64bits(data, n); }

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The bin of the quotient t = (v - lo) / (hi - lo) * kBitmapBins: its whole part, clamped
// to the bins (NaN: bin 0). Without a branch, so that loops over many values vectorise.
inline uint32_t bitmap_bin_of_quotient(double t) {
  t = t > 0 ? t : 0;  // also NaN
  t = t < double(kBitmapBins - 1) ? t : double(kBitmapBins - 1);
  return uint32_t(int32_t(t));
}

// The bin of value v among kBitmapBins equal-width bins over [lo, hi]; monotone in v.
inline uint32_t bitmap_bin(double v, double lo, double hi) {
  if (!(hi > lo)) return 0;
  return bitmap_bin_of_quotient((v - lo) / (hi - lo) * double(kBitmapBins));
}

// The bins of v[0, n) among kBitmapBins equal-width bins from lo (width > 0), as bits (bit
// b: some value in bin b; NaN in none): bitmap_bin's own quotient per value. Floats and
// doubles on AVX2 where the processor has it (8 or 4 values an instruction: spec.cpp), the
// same bits either way.
// The loop (the bit set only for a value that is not NaN, x == x); integers take it as it is.
template <class T>
[[gnu::always_inline]] inline uint32_t bitmap_bits_loop(const T* v, uint64_t n, double lo, double width) {
  uint32_t bits = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double x = double(v[i]);
    bits |= uint32_t(x == x) << bitmap_bin_of_quotient((x - lo) / width * double(kBitmapBins));
  }
  return bits;
}
uint32_t bitmap_bits(const float* v, uint64_t n, double lo, double width);
uint32_t bitmap_bits(const double* v, uint64_t n, double lo, double width);
uint32_t bitmap_bits_portable(const float* v, uint64_t n, double lo, double width);  // without AVX2 (tests)
uint32_t bitmap_bits_portable(const double* v, uint64_t n, double lo, double width);
template <class T>
uint32_t bitmap_bits(const T* v, uint64_t n, double lo, double width) {
  return bitmap_bits_loop(v, n, lo, width);
}

// bitmap_bin for one (lo, hi) and millions of values. One value (operator()) without a
// division: a multiply gives the bin (it is within 1e-14 of bitmap_bin's quotient, so a
// fraction at least 1e-9 from a whole number floors alike); a value that close to a bin
// border is settled by the exact thresholds of bitmap_bin, found once by bisection over
// the doubles, so the two cannot disagree. A run of values (mask): bitmap_bin's own
// quotient, on vectors.
class BitmapBins {
 public:
  BitmapBins(double lo, double hi) : lo_(lo), width_(hi > lo ? hi - lo : 0.0) {
    scale_ = hi > lo ? double(kBitmapBins) / (hi - lo) : 0.0;
    if (!std::isfinite(scale_)) scale_ = 0;  // every value then takes the thresholds
    first_[0] = -INFINITY;
    for (uint32_t b = 1; b <= kBitmapBins; ++b) first_[b] = NAN;  // bins no value reaches: never taken
    if (!(hi > lo)) return;
    // Doubles in order as unsigned keys: the smallest v with bitmap_bin(v) >= b, per b.
    auto key = [](double v) {
      uint64_t k;
      std::memcpy(&k, &v, 8);
      return k >> 63 ? ~k : k | (uint64_t(1) << 63);
    };
    auto value = [](uint64_t k) {
      k = k >> 63 ? k & ~(uint64_t(1) << 63) : ~k;
      double v;
      std::memcpy(&v, &k, 8);
      return v;
    };
    for (uint32_t b = 1; b < kBitmapBins; ++b) {
      uint64_t a = key(lo), z = key(hi);  // bin(lo) = 0 < b <= bin(hi) = 31
      if (bitmap_bin(hi, lo, hi) < b) break;
      while (a + 1 < z) {
        const uint64_t m = a + (z - a) / 2;
        (bitmap_bin(value(m), lo, hi) >= b ? z : a) = m;
      }
      first_[b] = value(z);
    }
  }
  uint32_t operator()(double v) const {
    const double d = v - lo_;
    if (!(d > 0)) return 0;  // at or below lo (bitmap_bin's quotient is not positive either), or NaN
    const double t = d * scale_;
    if (t >= double(kBitmapBins - 1) + kMargin) return kBitmapBins - 1;
    if (!(t >= 0) || scale_ == 0) return search(v);  // a range too wide or too narrow for a multiply
    const uint32_t b = uint32_t(t);
    const double f = t - double(b);
    if (f > kMargin && f < 1 - kMargin) [[likely]]
      return b;
    return exact(v, b);
  }

  // The bins of n values as bits (bit b: some value in bin b; NaN in none): bitmap_bin's
  // own quotient, a chunk of bins at a time (on vectors); the bits are then set from the chunk.
  // Stops early once bits | `have` reach `all` (the bins the values can be in: no chunk
  // after can add one).
  template <class T>
  uint32_t mask(const T* v, uint64_t n, uint32_t have = 0, uint32_t all = ~0u) const {
    uint32_t bits = 0;
    constexpr uint64_t kChunk = 64;
    for (uint64_t s = 0; s < n; s += kChunk) {
      const uint64_t len = std::min(kChunk, n - s);
      if (width_ > 0) {
        bits |= bitmap_bits(v + s, len, lo_, width_);
      } else {  // no range: bitmap_bin puts everything in bin 0
        for (uint64_t i = 0; i < len; ++i) bits |= uint32_t(v[s + i] == v[s + i]);
      }
      if ((bits | have) == all) break;
    }
    return bits;
  }

 private:
  static constexpr double kMargin = 1e-9;
  // b is the bin or a neighbour: the thresholds on either side settle it.
  uint32_t exact(double v, uint32_t b) const {
    b = std::min(b, kBitmapBins - 1);
    b += v >= first_[b + 1];
    b -= v < first_[b];
    return b;
  }
  uint32_t search(double v) const {
    uint32_t b = 0;
    for (uint32_t k = 1; k < kBitmapBins; ++k) b += v >= first_[k];  // unreached bins (NaN) never count
    return b;
  }
  double lo_, scale_;
  double width_;  // hi - lo when hi > lo, else 0 (mask)
  double first_[kBitmapBins + 1];  // first_[b]: the smallest value in bin b or above
};

// The quantile code of v: how many interior edges edges[1..255] are <= v; monotone in v.
// (Branch-free binary search: the largest k in [0, 255] with k == 0 or edges[k] <= v.)
inline uint8_t quantile_code(double v, const double* edges) {
  uint32_t pos = 0;
  for (uint32_t step = kQuantileBins / 2; step; step >>= 1) pos += edges[pos + step] <= v ? step : 0;
  return uint8_t(pos);
}

// Schema records (u8 dtype, u8 index kind, u16 name length, u32 unit length, [f64 error
// bound: format 2 particle files], name, unit), shared by particle files and step indexes.
std::string encode_schema(const std::vector<ColumnSpec>& columns, bool with_bounds);
// Decodes exactly `count` records filling [p, end); returns an error message, empty on success.
// Checks dtype and index codes, duplicate names, bounds, and that x, y, z exist as f32/f64.
std::string decode_schema(const unsigned char* p, const unsigned char* end, uint32_t count, bool with_bounds,
                          std::vector<ColumnSpec>& out);
// The problem with a schema (a name twice, x, y or z missing or not f32/f64), empty if none.
std::string check_schema(const std::vector<ColumnSpec>& columns);

}  // namespace motes::spec
