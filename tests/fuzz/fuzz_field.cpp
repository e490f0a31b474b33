// libFuzzer target: any bytes given as a field file (read from memory through a byte
// source) must open cleanly or be rejected with motes::Error, never crash; an accepted file
// must read every level of boxes and decode every block. Built with
// FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, checksum mismatches are ignored so the fuzzer
// reaches the structural checks (and the block decoders) behind them.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "motes/fields/file.hpp"
#include "motes/io/byte_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = motes::fields::FieldFile::open(motes::memory_source(std::string(reinterpret_cast<const char*>(data), size)));
    const auto& spec = f->spec();
    if (spec.sample_count() > (uint64_t(1) << 22)) return 0;  // a grid this large reads too long for a fuzz run
    const size_t size_of = motes::dtype_size(spec.dtype);
    for (int level = 0; level <= f->levels(); ++level) {
      for (const motes::fields::Dims& hi : {spec.dims, motes::fields::Dims{std::max<uint64_t>(1, spec.dims[0] / 2), spec.dims[1], 1}}) {
        const motes::fields::Region r = f->region({0, 0, 0}, hi, level);
        std::vector<char> out(r.size() * size_of);
        for (size_t c = 0; c < spec.component_count(); ++c) f->read(r, c, out.data(), 1);
      }
    }
    f->verify();
  } catch (const motes::Error&) {
  }
  return 0;
}
