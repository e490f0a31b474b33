// The profiling drivers' column loader (write.cpp, layout.cpp): a .npy file as numpy.save
// writes a column, into memory allocated as numpy allocates large arrays. Header-only, so
// that a driver still builds with one g++ line from any checkout.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "motes/core/memory.hpp"
#include "motes/core/types.hpp"

namespace motes_drivers {

// Column memory as numpy allocates it: large arrays advised to use transparent huge pages
// (without them every random gather also misses the TLB, and a profile misleads).
struct Array {
  std::string name;
  motes::DType dtype;
  std::unique_ptr<char, decltype(&std::free)> bytes{nullptr, &std::free};
  uint64_t count = 0;
  void allocate(size_t n) { bytes.reset(static_cast<char*>(motes::huge_aligned_alloc(n))); }
};

// A 1-d, little-endian, C-order .npy file (what numpy.save writes for a column).
inline Array load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  char magic[8];
  in.read(magic, 8);
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint16_t h;
    in.read(reinterpret_cast<char*>(&h), 2);
    header_len = h;
  } else {
    in.read(reinterpret_cast<char*>(&header_len), 4);
  }
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  static const std::map<std::string, motes::DType> kinds = {
      {"<f4", motes::DType::f32}, {"<f8", motes::DType::f64}, {"<i4", motes::DType::i32}, {"<i8", motes::DType::i64},
      {"<u4", motes::DType::u32}, {"<u8", motes::DType::u64}, {"|u1", motes::DType::u8}, {"|i1", motes::DType::i8}};
  Array a;
  const size_t d = header.find("'descr': '");
  if (d == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": unsupported .npy header " + header);
  const std::string descr = header.substr(d + 10, 3);
  if (!kinds.count(descr)) throw std::runtime_error(path + ": unsupported dtype " + descr);
  a.dtype = kinds.at(descr);
  const size_t s = header.find("'shape': (");
  a.count = std::stoull(header.substr(s + 10));
  const size_t size = a.count * motes::dtype_size(a.dtype);
  a.allocate(size);
  in.read(a.bytes.get(), int64_t(size));
  if (!in) throw std::runtime_error(path + ": truncated");
  std::string stem = path.substr(path.find_last_of('/') + 1);
  a.name = stem.substr(0, stem.rfind('.'));
  return a;
}

}  // namespace motes_drivers
