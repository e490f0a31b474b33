#include "motes/particles/collection.hpp"
#include "motes/core/text.hpp"

namespace motes {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

[[noreturn]] void wrong_file(const std::string& path, const std::string& owner, const std::string& what) {
  throw FormatError(path + ": not the file the manifest lists for " + owner + ": " + what +
                    " (the file was replaced, copied from elsewhere or damaged)");
}
}  // namespace

std::shared_ptr<const Collection> Collection::open_pinned(const std::string& path, const std::string& owner,
                                                          std::vector<uint64_t> part_checksums) {
  auto c = std::const_pointer_cast<Collection>(open(path));
  c->part_checksums_ = std::move(part_checksums);
  c->owner_ = owner;
  return c;
}

uint64_t Collection::header_checksum() const { return index_ ? index_->header_checksum() : parts_[0]->header_checksum(); }

std::shared_ptr<const Collection> Collection::open(const std::string& path) {
  if (ends_with(path, StepIndex::kExtension)) return of(StepIndex::open(path));
  return of(ParticleFile::open(path));
}

std::shared_ptr<const Collection> Collection::of(std::shared_ptr<const ParticleFile> file) {
  auto c = std::make_shared<Collection>();
  c->path_ = file->path();
  c->count_ = file->particle_count();
  c->bounds_ = file->bounds();
  c->schema_ = file->schema();
  c->part_count_ = {c->count_};
  c->part_offset_ = {0};
  c->parts_ = {std::move(file)};
  return c;
}

std::shared_ptr<const Collection> Collection::of(std::shared_ptr<const StepIndex> index) {
  auto c = std::make_shared<Collection>();
  c->path_ = index->path();
  c->count_ = index->particle_count();
  c->bounds_ = index->bounds();
  for (const ColumnIndex& ci : index->columns()) c->schema_.push_back(ci.spec);
  uint64_t offset = 0;
  for (const IndexPart& p : index->parts()) {
    c->part_count_.push_back(p.count);
    c->part_offset_.push_back(offset);
    offset += p.count;
  }
  c->parts_.resize(index->parts().size());
  c->index_ = std::move(index);
  return c;
}

size_t Collection::column(const std::string& name) const {
  for (size_t i = 0; i < schema_.size(); ++i)
    if (schema_[i].name == name) return i;
  throw UsageError("unknown column '" + name + "' (columns: " +
                   joined(schema_, [](const ColumnSpec& c) { return c.name; }) + ")");
}

std::shared_ptr<const ParticleFile> Collection::part(size_t k) const {
  if (k >= parts_.size()) throw UsageError("part " + std::to_string(k) + " out of range");
  std::lock_guard guard(*lock_);
  if (parts_[k]) return parts_[k];
  std::string path = StepIndex::part_path(index_->path(), k);
  auto f = ParticleFile::open(path);
  if (k < part_checksums_.size() && f->header_checksum() != part_checksums_[k])
    wrong_file(path, owner_ + ", part " + std::to_string(k), "its header checksum is " + checksum_text(f->header_checksum()) +
                                                             ", the manifest says " + checksum_text(part_checksums_[k]));
  if (f->particle_count() != part_count_[k])
    throw FormatError(path + ": holds " + std::to_string(f->particle_count()) + " particles, its step index says " +
                      std::to_string(part_count_[k]));
  if (f->schema().size() != schema_.size())
    throw FormatError(path + ": has " + std::to_string(f->schema().size()) + " columns, its step index has " +
                      std::to_string(schema_.size()));
  for (size_t c = 0; c < schema_.size(); ++c) {
    const ColumnSpec& s = f->schema()[c];
    if (s.name != schema_[c].name || s.dtype != schema_[c].dtype)
      throw FormatError(path + ": column " + std::to_string(c) + " is '" + s.name + "' (" + dtype_name(s.dtype) +
                        "), its step index says '" + schema_[c].name + "' (" + dtype_name(schema_[c].dtype) + ")");
  }
  parts_[k] = f;
  return f;
}

}  // namespace motes
