// Block codecs: one block of fixed-size values (at most 1 MiB) is transformed (a
// predictor in file order), split into byte planes (or bit planes), and each plane stored raw or coded
// by a well-kept entropy coder (zstd, lz4). A coded block describes itself: a reader
// needs only its bytes (and, for the quantile predictor, the column's quantile codes).
// docs/format.md §4.12 is the normative description of the stored bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "motes/codec/packed.hpp"

namespace motes::codec {

// The numbers below are stored in files: never renumber, never reuse.
enum class Predictor : uint8_t {
  none = 0,
  delta = 1,     // zigzag(v[i] - v[i-1]) on the values' bits (wrapping; v[-1] = 0)
  xor_ = 2,      // v[i] ^ v[i-1] on the values' bits (v[-1] = 0)
  quantile = 3,  // ordered(v[i]) - base[code[i]]: the value within its quantile bin (needs codes)
  offset = 4,    // v[i] - reference (wrapping): integers near a block's minimum
  grid = 5,      // floats on a grid: q[i] with v[i] = T(origin + q[i] * step) (error-bounded columns)
  grid_delta = 6,  // the same, q[i] - q[i-1] zigzagged
  grid_quantile = 7,  // the same, q[i] - qbase[code[i]]: the grid step within its quantile bin (needs codes, edges)
  zfp = 8,  // a field block (f32/f64) as a zfp fixed-accuracy stream of its lattice box (lossy; zfp.hpp)
};
enum class Layout : uint8_t {
  whole = 0,   // one stream of n * size bytes
  planes = 1,  // `size` streams: byte k of every value (byte shuffle)
  bits = 2,    // one stream of 8 * size bit planes: bit p of every value (bit shuffle)
  packed = 3,  // one raw stream of units of bit-packed words, each word addressable (packed.hpp)
  binned = 4,  // one raw stream of quantile residuals in their bins' widths, each addressable (packed.hpp)
};
enum class Coder : uint8_t { raw = 0, zstd = 1, lz4 = 2 };

inline constexpr uint8_t kMaxPredictor = 8, kMaxLayout = 4, kMaxCoder = 2;
inline constexpr uint32_t kBlockHeaderBytes = 4;  // predictor, layout, stream count, parameter bytes
inline constexpr uint32_t kStreamEntryBytes = 8;  // coder, 3 zero bytes, u32 stored length
inline constexpr size_t kMaxBlockBytes = size_t(1) << 20;  // decoded bytes of one block

const char* predictor_name(Predictor p);
const char* coder_name(Coder c);

// Everything the quantile predictor needs besides the block: each value's code and, per
// code, the base its residual is taken from (quantile_bases()).
struct Context {
  const uint8_t* codes = nullptr;      // one per value of the block
  const uint64_t* bases = nullptr;     // 256 ordered bases
  const double* edges = nullptr;       // the 257 quantile edges (Predictor::grid_quantile)
  double grid_origin = 0, grid_step = 0;  // the grid predictors (encoding; decoding reads the block)
  // Predictor::zfp (encoding; decoding reads the block): the absolute error tolerance (> 0),
  // whether the block is a field's HZ block 0 (levels 0 to its bits) rather than a block of
  // one level, and the axis of each bit of its samples' Z addresses, coarsest first, as the
  // field's bitmask writes them ('0' x, '1' y, '2' z; one per bit: n = 2^size).
  // zfp_block_context() (zfp.hpp) fills the last two from the bitmask.
  double zfp_tolerance = 0;
  bool zfp_hierarchical = false;
  std::string_view zfp_axes;
  // Layout::packed (encoding): the words per unit (kPackedUnit), or 0 for the smallest
  // stream of the sizes of kPackedUnitSizes (fewer unit entries when every unit needs as
  // many bits: the id index's rows and keys; a few times the packing work).
  uint32_t packed_unit = kPackedUnit;
};

// Error-bounded storage of a float column: values are moved to the nearest point of a grid
// origin + q * step, with step chosen so that every stored value lies within `bound` of the
// given one. The value of grid index q; the same function writes and reads.
double grid_value(double origin, double step, int64_t q);
struct Grid {
  double origin = 0, step = 0;
};
// The grid for a column of `dtype_code` whose finite values lie in [lo, hi]; UsageError
// naming the column when `bound` is too small for the type to honour at that magnitude.
Grid make_grid(uint8_t dtype_code, double lo, double hi, double bound, const std::string& column);
// Moves n values (of a float dtype, at src with `stride` bytes between them) to the grid,
// into dst (contiguous); NaN and infinities are kept. Returns the largest |given - stored|.
double quantize(uint8_t dtype_code, const Grid& g, const void* src, int64_t stride, uint64_t n, void* dst);

// The ordered bases of the 256 quantile bins of a column of `dtype_code` (a DType code)
// from its 257 edges: base[k] = ordered(edge k converted to the column's type).
std::vector<uint64_t> quantile_bases(uint8_t dtype_code, const double* edges);

// How a column's blocks are coded: the predictor and, per stream, the coder to try. A
// stream that a coder does not shrink is stored raw whatever the plan says.
struct Plan {
  Predictor predictor = Predictor::none;
  Layout layout = Layout::planes;
  std::vector<Coder> coders;  // one per stream
  int zstd_level = 1;
  // Layout::packed (encoding): the dictionary trials each unit makes (packed.hpp); choose()
  // keeps those that pay on the samples.
  uint8_t packed_trials = kAllDictionaryTrials;
  bool raw() const;  // no predictor, no bit planes, every stream raw: the block is plain values
  std::string name(uint32_t size) const;  // e.g. "delta+shuffle+zstd[2,3]", "raw"
};

// Values are `is_float` (IEEE) or integers (`is_signed`), of `size` bytes.
struct ValueType {
  uint32_t size = 4;
  bool is_float = true;
  bool is_signed = true;
};
ValueType value_type(uint8_t dtype_code);

// Encodes n values (n * type.size bytes at src) into out (replacing it): the block's
// header, stream table, parameter and streams. ctx is used by Predictor::quantile, the grid
// predictors and Predictor::zfp. A block that Predictor::zfp cannot take (zfp.hpp:
// encode_zfp) is stored with Predictor::none and the plan's layout and coders.
void encode(const Plan& plan, ValueType type, const void* src, size_t n, const Context& ctx, std::string& out);
// The same block appended to out (a writer's window of blocks, with no copy in between).
void encode_append(const Plan& plan, ValueType type, const void* src, size_t n, const Context& ctx, std::string& out);

// Decodes a block of `stored_n` bytes into n values at dst (n * type.size bytes). Returns
// an empty string, or what is wrong with the block (for a FormatError naming the block).
std::string decode(ValueType type, const void* stored, size_t stored_n, void* dst, size_t n, const Context& ctx);

// What a stored block says about itself (for `motes info` and tests): its predictor,
// layout and the coder of each stream; false when the header is damaged.
bool describe(const void* stored, size_t stored_n, Plan& plan);

// A block whose values can be read one at a time, where they lie (Layout::packed with
// predictor none, offset or quantile; Layout::binned): a gather of k values of it costs k
// words, not the block. The stored bytes must outlive it and be checked against their
// checksum first.
class AddressableBlock {
 public:
  // False when the block is not addressable (another layout or predictor); also false with
  // `problem` set when it is but its header or unit table is damaged. `checked`: these bytes
  // opened before, their tables are not walked again.
  bool open(ValueType t, const void* stored, size_t stored_n, size_t n, std::string& problem, bool checked = false);
  // Whether value() needs the block's quantile codes and the column's bases.
  bool needs_codes() const { return pred_ == Predictor::quantile; }
  // Value i's bytes (t.size) into dst, given the block's codes (all of them) where
  // needs_codes(); false when the block is damaged there.
  bool value(size_t i, const uint8_t* codes, const uint64_t* bases, unsigned char* dst) const;
  // Asks the memory for what value(i) will read; issued a few values ahead by gathers.
  void prefetch(size_t i, const uint8_t* codes) const { binned_ ? bins_.prefetch(i, codes) : words_.prefetch(i); }

 private:
  ValueType type_{};
  Predictor pred_ = Predictor::none;
  bool binned_ = false;
  uint64_t param_ = 0;
  PackedWords words_;
  BinnedWords bins_;
};
inline constexpr bool addressable_predictor(Predictor p) {
  return p == Predictor::none || p == Predictor::offset || p == Predictor::quantile;
}
// Layouts whose words are read where they lie (one raw stream): packed and binned words.
inline constexpr bool addressable_layout(uint8_t layout) {
  return layout == uint8_t(Layout::packed) || layout == uint8_t(Layout::binned);
}

// Chooses the plan giving the fewest bytes on sample blocks of a column (with a
// preference for fast decoding: a stream is coded only when that saves at least
// kMinSaving of its bytes, and lz4 is taken over zstd when within kLz4Slack of it).
// `predictors` lists the candidates; samples are (values, count) with ctx per sample.
// Bit planes are taken only when they give at most 1 - kBitsSaving of the bytes of the best
// byte layout: near a tie, byte planes (whose streams are coded one by one) are kept.
// With `addressable`, packed words (Layout::packed) are tried too, with predictors offset and
// quantile, and taken when they give at most 1 + kPackedSlack of the best bytes, or at most
// kPackedRawSlack of the values' raw bytes more: values read one by one are worth that much
// (unless the best plan stores the values raw: those are read in place already). When the
// samples come from a column of `column_values` values, at least kDictionaryAnalysisRatio
// times theirs, packed units make only the dictionary trials that pay on the samples
// (DictionaryGains, Plan::packed_trials); otherwise (0: not known) they make all.
inline constexpr double kMinSaving = 0.10, kLz4Slack = 0.03, kBitsSaving = 0.05, kPackedSlack = 0.10,
                        kPackedRawSlack = 1.0 / 64;
struct Sample {
  const void* values;
  size_t count;
  Context ctx;
};
Plan choose(ValueType type, const std::vector<Predictor>& predictors, const std::vector<Sample>& samples, int zstd_level,
            bool addressable = false, uint64_t column_values = 0);

}  // namespace motes::codec
