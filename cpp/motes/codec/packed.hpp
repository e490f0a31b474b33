// Packed words (Layout::packed, docs/format.md §4.12.2): a block's words in units of
// kPackedUnit, each unit frame-of-reference (a reference word plus w-bit offsets) or a
// dictionary of the words' high parts (up to 256, with each word's index and low bits in a
// w-bit field: ALP-RD's split, per unit), bit-packed. Any word is found
// from its position alone, so a reader gathering k scattered values of a block decodes k
// words, not the block (tracking, id lookups), and a whole block unpacks with no entropy
// decoder. The stream is the block's one stream, stored raw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace motes::codec {

inline constexpr uint32_t kPackedUnit = 256;        // words per unit written
inline constexpr uint32_t kPackedUnitEntryBytes = 8;  // u32 body offset, u8 width, u8 mode, u8 dictionary size - 1, u8 low bits
inline constexpr uint32_t kPackedPadBytes = 8;      // zero bytes closing the stream (whole-word loads)

// words::unordered() of a value type as two masks (words::unorder_map), for the loop that
// unpacks binned words to take the type as data: v ^ ((((v >> top bit) - 1) & when_clear) |
// always), the masks cut to the word's size.
struct WordMap {
  uint64_t when_clear = 0, always = 0;
};
// A WordMap's masks cut to U, as the inner loops apply them.
template <class U>
struct Unorder {
  U when_clear, always;
  explicit Unorder(const WordMap& m) : when_clear(U(m.when_clear)), always(U(m.always)) {}
  U operator()(U v) const { return U(v ^ ((U(U(v >> (8 * sizeof(U) - 1)) - 1) & when_clear) | always)); }
};

// The dictionary trials a unit makes before it is stored frame-of-reference: bit t of a
// trial set asks for dictionaries of the words' high parts of kDictionaryTrialBits[t] bits
// (64: whole words). Which trial stores a unit changes its bytes, never how they are read.
inline constexpr uint32_t kDictionaryTrialBits[] = {64, 4, 6, 8, 10, 12};
inline constexpr uint32_t kDictionaryTrials = sizeof kDictionaryTrialBits / sizeof kDictionaryTrialBits[0];
inline constexpr uint8_t kAllDictionaryTrials = uint8_t((1u << kDictionaryTrials) - 1);
// A column's packed units make only the trials that pay on its samples (DictionaryGains)
// when it holds at least this many times the sampled values (codec::choose): a small
// column is cheap to try in full, and its samples speak for less of it.
inline constexpr uint64_t kDictionaryAnalysisRatio = 8;
// The unit sizes a stream of Context::packed_unit 0 is packed in, the smallest kept.
inline constexpr uint32_t kPackedUnitSizes[] = {kPackedUnit, 1024, 4096};

// Appends the packed stream of n words of `size` bytes (little-endian) to out, in units of
// `unit` words (a power of two, 64 to 4096), each unit making the dictionary trials of
// `trials`.
void pack_words(const unsigned char* words, size_t n, uint32_t size, std::string& out, uint32_t unit = kPackedUnit,
                uint8_t trials = kAllDictionaryTrials);

// Which dictionary trials pay on a column's sample (a writer's analysis, as DuckDB's
// compression analyze measures candidates on the column itself): add() plans the units of
// some words, in every unit size of kPackedUnitSizes, with every trial; paying() is the set
// of trials that made some unit's plan smaller when tried. The rest are not worth their
// time on that column: most trials on most units end in frame-of-reference (noise has too
// many distinct high parts). Trials that never make a plan smaller change no unit's plan
// when left out, so a column whose sample is all of it is written with the same bytes.
struct DictionaryGains {
  uint64_t improving[kDictionaryTrials] = {};  // units whose plan each trial made smaller
  void add(const unsigned char* words, size_t n, uint32_t size);
  uint8_t paying() const;
};

// A checked packed stream: word(i) reads word i (0 <= i < n) where it lies.
class PackedWords {
 public:
  // Checks the stream (its unit table, sizes and padding) for n words of `size` bytes;
  // returns what is wrong, or an empty string. `checked`: the same bytes passed this check
  // before (a reader remembers it per block), only the header is read.
  std::string open(const unsigned char* stream, size_t len, size_t n, uint32_t size, bool checked = false);
  // Word i, or false when a dictionary index is past its dictionary (a damaged stream).
  bool word(size_t i, uint64_t& out) const;
  // Asks the memory for what word(i) will read (its unit's base and field): a gather of
  // scattered words issues these a few words ahead so that their cache misses overlap.
  void prefetch(size_t i) const;
  // All n words, little-endian, into dst (n * size bytes), each plus `add` through `map`
  // (the offset predictor's inverse in the same pass; 0 and {} leave the words as they are);
  // what is wrong, or empty.
  std::string unpack(unsigned char* dst, uint64_t add, const WordMap& map) const;

 private:
  const unsigned char* s_ = nullptr;
  size_t len_ = 0, n_ = 0;
  uint32_t size_ = 0, shift_ = 0;  // unit = 1 << shift_
};

// Binned words (Layout::binned): the residuals of the quantile predictor, each in as many
// bits as the largest of the block's residuals of its quantile bin needs (a table of 256
// widths per block), back to back; a table of bit offsets every kBinnedUnit words makes any
// word a short sum of widths away. The bins' codes are the column's quantile codes, stored
// for its index anyway: a value costs about log2 of its bin's width.
inline constexpr uint32_t kBinnedUnit = 128;

// Appends the binned stream of n words of `size` bytes with their codes to out.
void pack_binned(const unsigned char* words, const uint8_t* codes, size_t n, uint32_t size, std::string& out);

class BinnedWords {
 public:
  // Checks the stream's header, widths and offsets for n words of `size` bytes (that every
  // offset is where the widths before it end and the stream's length is exact is checked by
  // unpack, which has every code). `checked`: opened before, only the header is read. What
  // is wrong, or an empty string.
  std::string open(const unsigned char* stream, size_t len, size_t n, uint32_t size, bool checked = false);
  // Word i given the block's codes; false when it would lie past the stream (damaged).
  bool word(size_t i, const uint8_t* codes, uint64_t& out) const;
  // Asks the memory for what word(i) will read (its unit's codes, offset and first bits).
  void prefetch(size_t i, const uint8_t* codes) const;
  // All n values into dst (n * size bytes), given every code: word w of code c becomes
  // `map` applied to w + bases[c] (bases: 256 words), the quantile predictor's inverse in the
  // same pass; what is wrong, or empty.
  std::string unpack(const uint8_t* codes, unsigned char* dst, const uint64_t* bases, const WordMap& map) const;

 private:
  const unsigned char* widths_ = nullptr;  // 256
  const unsigned char* offsets_ = nullptr; // u32 per unit
  const unsigned char* bits_ = nullptr;    // the fields
  uint64_t bit_count_ = 0;                 // bits the fields may take
  size_t n_ = 0;
  uint32_t size_ = 0, shift_ = 0;
};

}  // namespace motes::codec
