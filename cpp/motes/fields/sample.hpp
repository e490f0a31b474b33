// Field values at arbitrary points (CMFE: a donor field sampled at a target's positions):
// linear interpolation between the samples around each point along every axis of the grid
// (trilinear in 3-D), between sample positions (node-centred: the nodes; cell-centred: the
// cell centres), `fill` for a point outside the hull of the sample positions or with a NaN
// coordinate. Axes past the grid's ndim are ignored. docs/guide.md "Grid fields".
#pragma once

#include <cstdint>
#include <vector>

#include "motes/fields/file.hpp"

namespace motes::fields {

// One component of a field in memory at full resolution, ready to be sampled.
class Sampler {
 public:
  Sampler(const FieldFile& file, size_t component, unsigned threads = 0);
  // out[i] = the field at (x[i], y[i], z[i]) (pointers to n doubles; y or z may be null for a
  // grid with fewer axes).
  void sample(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
              unsigned threads = 0) const;

 private:
  FieldSpec spec_;
  std::vector<unsigned char> values_;  // the samples as stored (dtype), C order ((z, y, x) indexing)
  // The fractional index of coordinate p along axis a; false when p lies outside.
  bool locate(int a, double p, uint64_t& i0, double& t) const;
  template <class T>
  void sample_typed(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
                    unsigned threads) const;
};

}  // namespace motes::fields
