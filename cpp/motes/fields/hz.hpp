// Hierarchical Z (HZ) order of a 1-3-D grid, as IDX (PIDX, OpenVisus) defines it: the
// samples of a grid padded to power-of-two sizes are numbered so that every prefix
// [0, 2^r) of the numbering is the grid subsampled at resolution r, and a run of numbers
// within a level is an aligned box of that level's lattice. docs/format.md §14.4 states the
// rules (docs/convert-idx.md how IDX files use them); OpenVisus reads what this numbering
// lays out (tests/python/convert/test_idx.py).
//
// Axes are numbered 0 = x, 1 = y, 2 = z; dims and coordinates are (x, y, z).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace motes::fields {

using Dims = std::array<uint64_t, 3>;

// Which axis each bit of a Z address splits, coarsest first (IDX's "V0120..." text).
class Bitmask {
 public:
  // The bitmask of a grid of `dims` samples (x, y, z; unused axes 1): OpenVisus' guess
  // "regular as soon as possible" (its default before 2023; it reads any bitmask): from
  // the finest bit up, one bit of every axis that still has bits, z then y then x, so
  // that the last sum_a min(k, bits_a) bits hold exactly min(k, bits_a) bits of axis a and
  // dropping them keeps every 2^k-th sample along each axis.
  static Bitmask guess(const Dims& dims, int ndim);
  // "V" then one digit per bit (0..ndim-1); throws FormatError naming the text.
  static Bitmask parse(std::string_view text);

  std::string text() const;
  int ndim() const { return ndim_; }
  int maxh() const { return int(axes_.size()); }
  // The axis of bit `position`, 1 = the coarsest (the first digit after "V").
  int axis(int position) const { return axes_[size_t(position - 1)]; }
  int bits(int axis) const { return bits_[size_t(axis)]; }
  Dims pow2_dims() const;
  // Per axis, log2 of the stride between the samples of resolution r (HZ [0, 2^r)).
  std::array<int, 3> stride_bits(int resolution) const;
  // The resolution that holds every 2^k-th sample along each axis (k of the issue's
  // "level"); axes with fewer than k bits keep their sample 0. Throws UsageError when
  // this bitmask cannot give that lattice (a suffix that is not regular).
  int resolution_of_level(int k) const;
  // The largest useful k: every axis down to one sample.
  int levels() const;

 private:
  int ndim_ = 0;
  std::vector<int> axes_;        // per bit, coarsest first
  std::array<int, 3> bits_{};    // per axis
};

// Conversions between coordinates, Z addresses and HZ indexes of one bitmask (tables of
// 8-bit pieces: no BMI2 needed, a few lookups per sample).
class HzOrder {
 public:
  explicit HzOrder(const Bitmask& bitmask);

  const Bitmask& bitmask() const { return bitmask_; }
  int maxh() const { return maxh_; }
  uint64_t size() const { return uint64_t(1) << maxh_; }  // HZ indexes of the padded grid

  uint64_t z_of(uint64_t x, uint64_t y, uint64_t z) const {
    return spread(0, x) | spread(1, y) | spread(2, z);
  }
  Dims point_of_z(uint64_t zaddr) const;
  static uint64_t hz_of_z(uint64_t zaddr, int maxh) {
    zaddr |= uint64_t(1) << maxh;
    return zaddr >> (__builtin_ctzll(zaddr) + 1);
  }
  uint64_t z_of_hz(uint64_t hz) const {
    if (hz == 0) return 0;
    const int h = 64 - __builtin_clzll(hz);  // the level: hz in [2^(h-1), 2^h)
    return ((((hz - (uint64_t(1) << (h - 1))) << 1) | 1) << (maxh_ - h));
  }
  uint64_t hz_of(uint64_t x, uint64_t y, uint64_t z) const { return hz_of_z(z_of(x, y, z), maxh_); }
  Dims point_of_hz(uint64_t hz) const { return point_of_z(z_of_hz(hz)); }

  // Samples [first, first + count) in HZ order, gathered from a C-order array of `dims`
  // samples ((z, y, x) indexing, `size` bytes each); samples of the padding are zero.
  // `inside` (when given) gets 1 for a sample of the grid, 0 for one of the padding.
  void gather(const void* src, const Dims& dims, size_t size, uint64_t first, uint64_t count, void* dst,
              uint8_t* inside = nullptr) const;
  // The reverse for a box and a lattice: the samples [first, first + count) in HZ order
  // (`src`) that lie in [lo, hi) and on the lattice of `stride_bits` are written into a
  // C-order array of the box's lattice points (`out_dims`, (x, y, z) counts; point
  // c goes to index (c - lo_aligned) >> stride per axis). Returns how many were written.
  uint64_t scatter(const void* src, size_t size, uint64_t first, uint64_t count, const Dims& lo, const Dims& hi,
                   const std::array<int, 3>& stride_bits, const Dims& out_first, const Dims& out_dims,
                   void* out) const;

 private:
  uint64_t spread(int axis, uint64_t v) const {
    uint64_t z = 0;
    for (size_t byte = 0; v; ++byte, v >>= 8) z |= spread_[size_t(axis)][byte][v & 0xff];
    return z;
  }

  Bitmask bitmask_;
  int maxh_;
  // spread_[axis][byte][value]: the Z bits of coordinate bits 8·byte.. of an axis.
  std::array<std::vector<std::array<uint64_t, 256>>, 3> spread_;
  // gather_[byte][value]: the coordinate bits (x, y, z) of Z bits 8·byte..
  std::vector<std::array<std::array<uint32_t, 3>, 256>> gather_;
};

// Whole blocks fast: a block of a level h > block_bits is its first point plus, for each of
// its samples i, the point of Z address i << (maxh - h + 1) (the bits are disjoint). Per
// level, the offsets of those points in a C-order array of `row` x `plane` samples, each
// coordinate shifted right by `shift` (the stride of a lattice read), and the block's extent.
class BlockOffsets {
 public:
  BlockOffsets(const HzOrder& order, int block_bits, uint64_t row, uint64_t plane, const std::array<int, 3>& shift,
               int max_level);
  // Levels block_bits + 1 .. max_level have tables.
  const std::vector<int64_t>& offsets(int h) const { return tables_[size_t(h)]; }
  const Dims& extent(int h) const { return extents_[size_t(h)]; }  // the largest offset point of a block of level h

 private:
  std::vector<std::vector<int64_t>> tables_;
  std::vector<Dims> extents_;
};

// The level (1..maxh) of HZ index hz > 0.
inline int level_of_hz(uint64_t hz) { return 64 - __builtin_clzll(hz); }

// Gathers block `b` (of 2^block_bits samples, b >= 1) from a C-order grid of `dims`: the fast
// path when the block lies inside the grid, else HzOrder::gather.
void gather_block(const HzOrder& order, const BlockOffsets& offsets, int block_bits, uint64_t b, const void* src,
                  const Dims& dims, size_t size, void* dst, uint8_t* inside);
// Scatters `count` samples of HZ indexes first.. (a whole block b >= 1, or any range) into the
// region's output array: the fast path for a whole block inside [lo, hi), else HzOrder::scatter.
uint64_t scatter_block(const HzOrder& order, const BlockOffsets* offsets, int block_bits, const void* src, size_t size,
                       uint64_t first, uint64_t count, const Dims& lo, const Dims& hi,
                       const std::array<int, 3>& stride_bits, const Dims& out_first, const Dims& out_dims, void* out);

// The samples of one HZ block (HZ [block·2^block_bits, (block+1)·2^block_bits)) are a
// box of a lattice: along axis a, first[a] + i·2^step_bits[a] for i < count[a]. Sorted by
// (z, y, x) they are IDX's row-major block layout (OpenVisus' "default_layout()": flag
// 0x10 of a block header). Block 0 is the lattice of resolution block_bits (levels 0 to
// block_bits); block b > 0 lies in level h = block_bits + 1 + floor(log2 b), whose samples
// are the odd multiples of the resolution-h stride along the axis of bit h. block_bits is
// at most maxh; throws UsageError for a block past the last.
struct BlockLattice {
  Dims first{};
  std::array<int, 3> step_bits{};
  Dims count{1, 1, 1};
};
BlockLattice block_lattice(const HzOrder& order, int block_bits, uint64_t block);

// The HZ blocks of 2^block_bits samples that hold samples of [lo, hi) at `resolution`:
// block b holds HZ [b·2^block_bits, (b+1)·2^block_bits). Ascending.
std::vector<uint64_t> blocks_for_box(const HzOrder& order, int block_bits, int resolution, const Dims& lo,
                                     const Dims& hi);

}  // namespace motes::fields
