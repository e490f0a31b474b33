// libFuzzer target: any bytes given as a dataset manifest must open cleanly or be
// rejected with motes::Error, never crash, hang or overflow the stack (deeply nested
// JSON included); an accepted manifest must encode to text that reads back to the same
// manifest, and its species must be opened (their files are missing: motes::Error).
// The same bytes are also tried as user attributes.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "motes/dataset/dataset.hpp"
#include "motes/dataset/species.hpp"
#include "motes/particles/collection.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    std::string d = "/tmp/motes-fuzz-manifest-" + std::to_string(::getpid()) + ".motes";
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  FILE* f = std::fopen((dir + "/manifest.json").c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    motes::Manifest m = motes::Manifest::read(dir);
    const std::string once = m.encode();
    FILE* g = std::fopen((dir + "/manifest.json").c_str(), "wb");
    std::fwrite(once.data(), 1, once.size(), g);
    std::fclose(g);
    if (motes::Manifest::read(dir).encode() != once) __builtin_trap();  // the encoding is not stable
    motes::Dataset d = motes::Dataset::open(dir);
    for (const motes::StepEntry& st : d.steps())
      for (const motes::SpeciesEntry& e : st.species) {
        try {
          motes::open_species(d.dir(), st.index, e);
        } catch (const motes::Error&) {
        }
      }
  } catch (const motes::Error&) {
  }
  try {
    motes::parse_attributes(text, "attributes");
  } catch (const motes::Error&) {
  }
  return 0;
}
