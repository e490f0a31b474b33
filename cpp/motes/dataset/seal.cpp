#include "motes/dataset/seal.hpp"

#include <algorithm>
#include <random>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "motes/core/text.hpp"
#include "motes/dataset/manifest.hpp"

namespace motes {

namespace {

// A sealed manifest (1.6) begins with its checksum's line: kHead, 16 lowercase hex digits,
// kTail; the checksum is the XXH3-64 of every byte after that line.
constexpr std::string_view kHead = "{\n \"checksum\": \"";
constexpr std::string_view kTail = "\",\n";
constexpr size_t kLength = kHead.size() + 16 + kTail.size();

// Whether a published step is as it was: its time, attributes and the files of its species
// and fields (their checksums pin their contents), whatever their order (a handle lists them
// as written, a manifest read from disk by name).
bool same_step(const StepEntry& a, const StepEntry& b) {
  if (a.time != b.time || a.attributes != b.attributes || a.species.size() != b.species.size() ||
      a.fields.size() != b.fields.size())
    return false;
  for (const SpeciesEntry& x : a.species) {
    auto y = std::find_if(b.species.begin(), b.species.end(), [&](const SpeciesEntry& e) { return e.name == x.name; });
    if (y == b.species.end() || x.file != y->file || x.count != y->count || x.checksum != y->checksum ||
        x.part_checksums != y->part_checksums)
      return false;
  }
  for (const FieldEntry& x : a.fields) {
    auto y = std::find_if(b.fields.begin(), b.fields.end(), [&](const FieldEntry& e) { return e.name == x.name; });
    if (y == b.fields.end() || x.checksum != y->checksum || x.part_checksums != y->part_checksums) return false;
  }
  return true;
}

}  // namespace

namespace seal {

bool lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool sealed(std::string_view text) {
  return text.size() > kLength && text.substr(0, kHead.size()) == kHead && lower_hex(text.substr(kHead.size(), 16)) &&
         text.substr(kHead.size() + 16, kTail.size()) == kTail;
}

std::string stated_text(std::string_view text) { return std::string(text.substr(kHead.size(), 16)); }

uint64_t stated(std::string_view text) { return std::stoull(stated_text(text), nullptr, 16); }

uint64_t computed(std::string_view text) { return XXH3_64bits(text.data() + kLength, text.size() - kLength); }

std::string sealed_text(const std::string& body) {
  const std::string rest = body.substr(2);
  return std::string(kHead) + checksum_text(XXH3_64bits(rest.data(), rest.size())) + std::string(kTail) + rest;
}

}  // namespace seal

std::string new_dataset_id() {
  std::random_device rd;
  std::string out;
  for (int k = 0; k < 2; ++k) out += checksum_text((uint64_t(rd()) << 32) ^ uint64_t(rd()));
  return out;
}

std::optional<std::string> other_run(const Manifest& was, const Manifest& now) {
  if (!was.id.empty() && now.id != was.id)
    return "its identity was " + was.id + ", it is " + (now.id.empty() ? std::string("none") : now.id) + " now";
  // Steps are only ever appended: every step known is still there, as it was.
  auto it = now.steps.begin();
  for (const StepEntry& s : was.steps) {
    it = std::lower_bound(it, now.steps.end(), s.index, [](const StepEntry& e, int64_t i) { return e.index < i; });
    if (it == now.steps.end() || it->index != s.index) return "step " + std::to_string(s.index) + " is gone";
    if (!same_step(s, *it)) return "step " + std::to_string(s.index) + " is not the step it was";
  }
  return std::nullopt;
}

}  // namespace motes
