// The generic motes file (format 2): a 256-byte checksummed header (magic, version,
// required features, the section table's place and checksum, and an area of 192 bytes
// that the file kind defines), sections stored raw, as one zstd frame, or as coded blocks,
// and a section table at the end. Particle files use it now; field files will too.
// docs/format.md §4 is the normative description.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "motes/container/block_stream.hpp"
#include "motes/io/byte_source.hpp"

namespace motes {
class AtomicFile;
}

namespace motes::container {

inline constexpr uint32_t kHeaderBytes = 256;
inline constexpr uint32_t kHeaderChecksumAt = 248;  // u64 XXH3 of bytes [0, 248)
inline constexpr uint32_t kKindAreaAt = 56;
inline constexpr uint32_t kKindAreaBytes = kHeaderChecksumAt - kKindAreaAt;  // 192
inline constexpr uint32_t kEntryBytes = 32;
inline constexpr uint64_t kPage = 4096;
inline constexpr uint32_t kMaxSections = 1u << 24;
inline constexpr uint64_t kMaxDecodedSection = uint64_t(1) << 34;  // a zstd section decodes to at most 16 GiB

// How a section's bytes are stored (SectionEntry::storage). Never renumber.
enum Storage : uint8_t {
  kRaw = 0,     // the bytes at [offset, offset + length); checksum: XXH3 of them (0 for bulk data)
  kZstd = 1,    // one zstd frame at [offset, offset + length) declaring its decoded size; checksum: of the frame
  kBlocks = 2,  // coded blocks in [offset, offset + length), listed by a block table section; checksum 0
};

// Features a reader must know to read a file (Header::required_features). A reader refuses
// a file that sets a bit it does not know, naming it. Bits are never reused.
enum Feature : uint64_t {
  kFeatureZstdSections = 1u << 0,  // sections stored as zstd frames (kZstd)
  kFeatureCodedBlocks = 1u << 1,   // bulk data stored as coded blocks (kBlocks)
  kFeatureFieldParts = 1u << 2,    // a field file holding one run of a field's blocks (docs/format.md §14.7)
  kFeatureZfpBlocks = 1u << 3,     // a field file with blocks coded by codec::Predictor::zfp (lossy; §14.8)
  kFeatureFieldGeometry = 1u << 4, // a field file whose meta section gives a geometry other than Cartesian (§14.9)
  kFeaturePackedBlocks = 1u << 5,  // coded blocks holding packed words (codec::Layout::packed, §4.12.2)
  kFeatureRegionalDetail = 1u << 6,  // a particle file whose levels from its detail level on are stored region by region (§5.4)
  kFeatureIdsByIndex = 1u << 7,  // a particle file whose id column is stored only as its id index (§4.15)
};
inline constexpr uint64_t kKnownFeatures =
    kFeatureZstdSections | kFeatureCodedBlocks | kFeatureFieldParts | kFeatureZfpBlocks | kFeatureFieldGeometry |
    kFeaturePackedBlocks | kFeatureRegionalDetail | kFeatureIdsByIndex;
// The features only field files may require.
inline constexpr uint64_t kFieldOnlyFeatures = kFeatureFieldParts | kFeatureZfpBlocks | kFeatureFieldGeometry;
// The features only particle files may require.
inline constexpr uint64_t kParticleOnlyFeatures = kFeatureRegionalDetail | kFeatureIdsByIndex;
std::string feature_names(uint64_t bits);  // "zstd-sections, coded-blocks, bit 7"

#pragma pack(push, 1)
struct Header {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_bytes;
  uint64_t required_features;
  uint64_t file_size;
  uint64_t section_table_offset;
  uint32_t section_count;
  uint32_t entry_bytes;
  uint64_t section_table_checksum;
  unsigned char kind_area[kKindAreaBytes];
  uint64_t header_checksum;
};
static_assert(sizeof(Header) == kHeaderBytes);

struct SectionEntry {
  uint16_t kind;
  uint8_t storage;
  uint8_t zero;
  uint32_t column;
  uint64_t offset;
  uint64_t length;
  uint64_t checksum;
};
static_assert(sizeof(SectionEntry) == kEntryBytes);

// One entry of a block table section per coded block of a kBlocks section, in value order.
struct BlockEntry {
  uint64_t offset;    // of the stored block in the file
  uint32_t stored;    // its bytes
  uint32_t zero;
  uint64_t checksum;  // XXH3 of the stored bytes
};
static_assert(sizeof(BlockEntry) == 24);
#pragma pack(pop)

// An opened container: header and section table read and checked (magic, version,
// checksums, sizes, features, every section inside the file). Sections are read on demand.
class Reader {
 public:
  // FormatError naming the source and the problem. `what` names the file kind in messages
  // ("particle file"); major versions other than `major` are refused.
  Reader(std::shared_ptr<const ByteSource> source, const char (&magic)[8], uint16_t major, const std::string& what);
  const Header& header() const { return header_; }
  const std::vector<SectionEntry>& sections() const { return sections_; }
  const ByteSource& source() const { return *source_; }
  const std::shared_ptr<const ByteSource>& source_ptr() const { return source_; }
  // Section i's bytes: read, checked against its checksum, decoded when stored as zstd
  // (at most max_decoded bytes). FormatError naming `name` otherwise.
  // `stored`: its stored bytes when the caller read them already.
  std::string section(size_t i, const std::string& name, uint64_t max_decoded = kMaxDecodedSection,
                      std::optional<std::string_view> stored = std::nullopt) const;
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::shared_ptr<const ByteSource> source_;
  Header header_{};
  std::vector<SectionEntry> sections_;
};

// The checksum of every container part (XXH3, 64 bits).
uint64_t checksum(const void* data, size_t n);

// The bytes of a section as stored: raw, or a zstd frame (when that is smaller).
struct Stored {
  std::string bytes;
  uint8_t storage = kRaw;
};
Stored store_section(const std::string& bytes, bool compress, int zstd_level = 3);

// The sections a writer places after its bulk data, in one buffer starting at `base`, and
// the section table listing them and the bulk sections; small sections are stored as zstd
// frames when that makes them smaller (`compress`).
struct SectionsBuilder {
  uint64_t base;
  bool compress;
  std::string bytes;
  std::vector<SectionEntry> table;
  uint64_t features = 0;
  // Kinds stored raw even when `compress`: what every open reads whole, whose zstd decoding
  // would cost each open more than the bytes it saves (a particle file's tree and block tables).
  std::vector<uint32_t> raw_kinds = {};

  // `raw`: stored raw whatever `compress` says (as raw_kinds, for one section of a kind).
  void add(uint32_t kind, uint32_t column, const std::string& s, bool raw = false);
  // A bulk section (raw values at offset, or coded blocks within [offset, offset + length));
  // returns its index in the table (the `column` of its block table or checksums).
  uint32_t bulk(uint32_t kind, uint32_t column, uint8_t storage, uint64_t offset, uint64_t length);
  // Pads the buffer to 8 bytes: the section table goes right after it.
  uint64_t table_offset();
  // Writes the sections, the section table and, last (a torn write never has a valid
  // header), the header page with `kind_area`; commits the file. Returns the header.
  Header write(AtomicFile& file, const char (&magic)[8], uint16_t major, uint16_t minor, const void* kind_area,
               size_t kind_area_bytes);
};

// A block table section's bytes (the blocks' offsets, sizes and checksums).
std::string encode_block_table(const std::vector<StoredBlock>& blocks);
// The `count` blocks of block table bytes `table`, each checked to lie inside its bulk
// section `bulk`; FormatError through `fail` naming `what` and the block otherwise.
std::vector<StoredBlock> decode_block_table(const std::string& table, uint64_t count, const SectionEntry& bulk,
                                            const std::string& what, const Reader& file);

// A file's header: fills the generic fields, the checksum and the kind area.
Header make_header(const char (&magic)[8], uint16_t major, uint16_t minor, uint64_t features, uint64_t file_size,
                   uint64_t table_offset, uint32_t section_count, uint64_t table_checksum, const void* kind_area,
                   size_t kind_area_bytes);

}  // namespace motes::container
