// Predictor::zfp (docs/format.md §4.12): a block of a grid field (f32 or f64) coded by zfp
// in fixed-accuracy mode. A field block holds 2^bits samples in HZ order; they are an
// axis-aligned box of a lattice, so they are put in that box's (z, y, x) C order before zfp
// sees them, and put back in HZ order after decoding. The block describes itself: its
// parameter holds whether it is the field's block 0 (hierarchical), the axis of each bit of
// its samples' Z addresses and the tolerance, so a reader needs only its bytes.
//
// Lossy: zfp keeps most values within the tolerance but does not promise it for every
// input; a writer checks each block (max_abs_error on the decoded block) and stores a block
// that misses the bound, or holds NaN or an infinity, losslessly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "motes/codec/codec.hpp"

namespace motes::codec {

// Z-address bits of a zfp block: n = 2^bits samples, at most kMaxBlockBytes of them.
inline constexpr int kZfpMaxBits = 20;
inline constexpr uint32_t kZfpFixedParamBytes = 10;  // flags, bits, f64 tolerance; then one byte per bit

// Where each sample of a block lies in its box: the box's sizes along (x, y, z) (powers of
// two: 2^(bits of that axis)) and, per sample i in HZ order, its index x + nx * (y + ny * z)
// in the box's C-order array. `axes` are the axes of the Z-address bits, coarsest first
// (values 0, 1, 2). Sample i's Z address is i, or, when hierarchical, the Z address of HZ
// index i of a grid of `axes.size()` bits (HzOrder::z_of_hz).
struct ZfpBox {
  std::array<uint32_t, 3> dims{1, 1, 1};
  std::vector<uint32_t> lattice;
};
// false (with `why`) when there are more than kZfpMaxBits axes or an axis is not 0-2.
bool zfp_box(bool hierarchical, const std::vector<uint8_t>& axes, ZfpBox& box, std::string* why = nullptr);

// What Predictor::zfp needs to know of block `block` of a field whose bitmask is `bitmask`
// ("V" then one digit per bit, as HzOrder's Bitmask::text() writes it) stored in blocks of
// 2^block_bits samples: sets ctx.zfp_hierarchical and ctx.zfp_axes (a view into `bitmask`,
// which must outlive ctx's use). The block holds 2^min(block_bits, maxh) samples. Block 0 is
// hierarchical and its axes are the bitmask's first min(block_bits, maxh) digits; block
// b > 0 lies in level h = block_bits + 1 + floor(log2 b) and its axes are the digits at
// positions h - block_bits .. h - 1 (1 = the first after 'V'). False when the bitmask is
// malformed or the block lies past the last.
bool zfp_block_context(std::string_view bitmask, int block_bits, uint64_t block, Context& ctx);

// Encodes n values (f32 or f64, n = 2^ctx.zfp_axes.size()) as a Predictor::zfp block into
// out. False, with the reason in `why` and out untouched, when the block cannot be coded
// so: another value type, a value that is NaN or infinite, a tolerance that is not a finite
// positive number, axes that do not match n.
bool encode_zfp(ValueType type, const void* src, size_t n, const Context& ctx, std::string& out,
                std::string* why = nullptr);

// Decodes a Predictor::zfp block (the whole coded block, header included) into n values at
// dst: an empty string, or what is wrong with the block. Called by codec::decode.
std::string decode_zfp(ValueType type, const unsigned char* stored, size_t stored_n, void* dst, size_t n);

// The largest |decoded[i] - original[i]| over n floats of `type` (f32 or f64); +inf when a
// value of either is NaN or infinite (or the type is not a float). What a writer compares
// with its tolerance after decoding the block it coded.
double max_abs_error(ValueType type, const void* original, const void* decoded, size_t n);

}  // namespace motes::codec
