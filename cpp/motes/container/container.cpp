#include "motes/container/container.hpp"

#include <algorithm>

#include <zstd.h>

#include <cstring>

#include "motes/core/types.hpp"
#include "motes/io/files.hpp"
#include "motes/core/text.hpp"
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace motes::container {

namespace {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kCheckSums = false;  // mutated inputs reach the structural checks
#else
constexpr bool kCheckSums = true;
#endif
}  // namespace

std::string feature_names(uint64_t bits) {
  std::vector<std::string> names;
  for (uint32_t k = 0; k < 64; ++k) {
    if (!(bits >> k & 1)) continue;
    const uint64_t bit = uint64_t(1) << k;
    std::string name = bit == kFeatureZstdSections  ? "zstd-sections"
                       : bit == kFeatureCodedBlocks ? "coded-blocks"
                       : bit == kFeatureFieldParts  ? "field-parts"
                       : bit == kFeatureZfpBlocks   ? "zfp-blocks"
                       : bit == kFeatureFieldGeometry ? "field-geometry"
                       : bit == kFeaturePackedBlocks ? "packed-blocks"
                       : bit == kFeatureRegionalDetail ? "regional-detail"
                       : bit == kFeatureIdsByIndex ? "ids-by-index"
                                                    : "bit " + std::to_string(k);
    names.push_back(std::move(name));
  }
  return joined(names);
}

Reader::Reader(std::shared_ptr<const ByteSource> source, const char (&magic)[8], uint16_t major, const std::string& what)
    : source_(std::move(source)) {
  const uint64_t size = source_->size();
  if (size < kPage)
    fail("file is " + std::to_string(size) + " bytes, shorter than the 4096-byte header page (truncated or not a " + what + ")");
  source_->read(0, sizeof header_, &header_);
  if (std::memcmp(header_.magic, magic, 8) != 0) fail("not a motes " + what + " (bad magic)");
  if (header_.version_major != major)
    fail("format version " + std::to_string(header_.version_major) + "." + std::to_string(header_.version_minor) +
         " is not supported (this motes reads versions 1.x and " + std::to_string(major) + ".x)");
  if (kCheckSums && XXH3_64bits(&header_, kHeaderChecksumAt) != header_.header_checksum)
    fail("header checksum mismatch (corrupted header)");
  if (header_.header_bytes != kHeaderBytes)
    fail("header size " + std::to_string(header_.header_bytes) + " is not " + std::to_string(kHeaderBytes));
  if (uint64_t unknown = header_.required_features & ~kKnownFeatures)
    fail("needs features this motes does not know (" + feature_names(unknown) + "): read it with a newer motes");
  if (header_.file_size != size)
    fail("file is " + std::to_string(size) + " bytes but its header says " + std::to_string(header_.file_size) +
         (size < header_.file_size ? " (truncated)" : " (trailing bytes)"));
  if (header_.entry_bytes != kEntryBytes)
    fail("section entries of " + std::to_string(header_.entry_bytes) + " bytes (expected " + std::to_string(kEntryBytes) + ")");
  if (header_.section_count > kMaxSections) fail("implausible section count " + std::to_string(header_.section_count));
  const uint64_t table_bytes = uint64_t(header_.section_count) * kEntryBytes;
  if (header_.section_table_offset < kPage || header_.section_table_offset > size ||
      table_bytes > size - header_.section_table_offset)
    fail("section table lies outside the file");
  sections_.resize(header_.section_count);
  if (table_bytes) source_->read(header_.section_table_offset, table_bytes, sections_.data());
  if (kCheckSums && XXH3_64bits(sections_.data(), table_bytes) != header_.section_table_checksum)
    fail("section table checksum mismatch");
  for (size_t i = 0; i < sections_.size(); ++i) {
    const SectionEntry& e = sections_[i];
    const std::string name = "section " + std::to_string(i) + " (kind " + std::to_string(e.kind) + ")";
    if (e.offset < kPage || e.offset > size || e.length > size - e.offset) fail(name + " lies outside the file");
    if (e.storage > kBlocks) fail(name + " has unknown storage " + std::to_string(e.storage));
    if (e.zero) fail(name + " has a nonzero reserved byte");
    if (e.storage == kZstd && !(header_.required_features & kFeatureZstdSections))
      fail(name + " is zstd-coded but the header does not require zstd-sections");
    if (e.storage == kBlocks && !(header_.required_features & kFeatureCodedBlocks))
      fail(name + " holds coded blocks but the header does not require coded-blocks");
  }
}

void Reader::fail(const std::string& what) const { throw FormatError(source_->name() + ": " + what); }

std::string Reader::section(size_t i, const std::string& name, uint64_t max_decoded,
                            std::optional<std::string_view> given) const {
  const SectionEntry& e = sections_.at(i);
  if (e.storage == kBlocks) fail(name + " is stored as coded blocks, not as one section");
  std::string read;
  if (!given) read = source_->read(e.offset, e.length);
  const std::string_view stored = given ? *given : std::string_view(read);
  if (kCheckSums && XXH3_64bits(stored.data(), stored.size()) != e.checksum) fail(name + " checksum mismatch");
  if (e.storage == kRaw) return given ? std::string(stored) : std::move(read);
  const unsigned long long n = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN)
    fail(name + " is not a zstd frame with a declared size");
  if (n > max_decoded) fail(name + " declares " + std::to_string(n) + " decoded bytes, more than it can hold");
  std::string out(size_t(n), '\0');
  const size_t r = ZSTD_decompress(out.data(), out.size(), stored.data(), stored.size());
  if (ZSTD_isError(r)) fail(name + ": zstd: " + ZSTD_getErrorName(r));
  if (r != n) fail(name + " decodes to " + std::to_string(r) + " bytes, its frame says " + std::to_string(n));
  return out;
}

Stored store_section(const std::string& bytes, bool compress, int zstd_level) {
  Stored s;
  if (compress && bytes.size() >= 64) {
    std::string z(ZSTD_compressBound(bytes.size()), '\0');
    size_t r = ZSTD_compress(z.data(), z.size(), bytes.data(), bytes.size(), zstd_level);
    if (!ZSTD_isError(r) && r < bytes.size()) {
      z.resize(r);
      s.bytes = std::move(z);
      s.storage = kZstd;
      return s;
    }
  }
  s.bytes = bytes;
  return s;
}

Header make_header(const char (&magic)[8], uint16_t major, uint16_t minor, uint64_t features, uint64_t file_size,
                   uint64_t table_offset, uint32_t section_count, uint64_t table_checksum, const void* kind_area,
                   size_t kind_area_bytes) {
  Header h{};
  std::memcpy(h.magic, magic, 8);
  h.version_major = major;
  h.version_minor = minor;
  h.header_bytes = kHeaderBytes;
  h.required_features = features;
  h.file_size = file_size;
  h.section_table_offset = table_offset;
  h.section_count = section_count;
  h.entry_bytes = kEntryBytes;
  h.section_table_checksum = table_checksum;
  std::memcpy(h.kind_area, kind_area, std::min<size_t>(kind_area_bytes, kKindAreaBytes));
  h.header_checksum = XXH3_64bits(&h, kHeaderChecksumAt);
  return h;
}

uint64_t checksum(const void* data, size_t n) { return XXH3_64bits(data, n); }

void SectionsBuilder::add(uint32_t kind, uint32_t column, const std::string& s, bool raw) {
  while (bytes.size() % 8) bytes.push_back('\0');
  raw = raw || std::find(raw_kinds.begin(), raw_kinds.end(), kind) != raw_kinds.end();
  Stored st = store_section(s, compress && !raw);
  if (st.storage == kZstd) features |= kFeatureZstdSections;
  table.push_back(SectionEntry{uint16_t(kind), st.storage, 0, column, base + bytes.size(), st.bytes.size(),
                               XXH3_64bits(st.bytes.data(), st.bytes.size())});
  bytes += st.bytes;
}

uint32_t SectionsBuilder::bulk(uint32_t kind, uint32_t column, uint8_t storage, uint64_t offset, uint64_t length) {
  if (storage == kBlocks) features |= kFeatureCodedBlocks;
  table.push_back(SectionEntry{uint16_t(kind), storage, 0, column, offset, length, 0});
  return uint32_t(table.size() - 1);
}

uint64_t SectionsBuilder::table_offset() {
  while (bytes.size() % 8) bytes.push_back('\0');
  return base + bytes.size();
}

Header SectionsBuilder::write(AtomicFile& file, const char (&magic)[8], uint16_t major, uint16_t minor,
                              const void* kind_area, size_t kind_area_bytes) {
  const uint64_t at = table_offset();
  const char* t = reinterpret_cast<const char*>(table.data());
  const size_t table_bytes = table.size() * sizeof(SectionEntry);
  const Header h = make_header(magic, major, minor, features, at + table_bytes, at, uint32_t(table.size()),
                               checksum(t, table_bytes), kind_area, kind_area_bytes);
  std::string page0(kPage, '\0');
  std::memcpy(page0.data(), &h, sizeof h);
  file.pwrite_all(bytes.data(), bytes.size(), base);
  file.pwrite_all(t, table_bytes, at);
  file.pwrite_all(page0.data(), page0.size(), 0);  // last: a torn write never has a valid header
  file.commit();
  return h;
}

std::string encode_block_table(const std::vector<StoredBlock>& blocks) {
  std::string out;
  out.reserve(blocks.size() * sizeof(BlockEntry));
  for (const StoredBlock& b : blocks) {
    BlockEntry e{b.offset, b.stored, 0, b.checksum};
    out.append(reinterpret_cast<const char*>(&e), sizeof e);
  }
  return out;
}

std::vector<StoredBlock> decode_block_table(const std::string& table, uint64_t count, const SectionEntry& bulk,
                                            const std::string& what, const Reader& file) {
  if (table.size() != count * sizeof(BlockEntry))
    file.fail("block table of " + what + " lists " + std::to_string(table.size() / sizeof(BlockEntry)) +
              " blocks, expected " + std::to_string(count));
  std::vector<StoredBlock> out(count);
  for (uint64_t b = 0; b < count; ++b) {
    BlockEntry be;
    std::memcpy(&be, table.data() + b * sizeof be, sizeof be);
    if (be.offset < bulk.offset || be.offset > bulk.offset + bulk.length || be.stored > bulk.offset + bulk.length - be.offset)
      file.fail("block " + std::to_string(b) + " of " + what + " lies outside its section");
    if (be.stored == 0 || be.zero) file.fail("block " + std::to_string(b) + " of " + what + " is damaged in the block table");
    out[b] = StoredBlock{be.offset, be.stored, be.checksum};
  }
  return out;
}

}  // namespace motes::container
