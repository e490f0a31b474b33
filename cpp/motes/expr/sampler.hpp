// What a field(...) node of an expression samples: values at arbitrary points. The expression
// layer knows no grid; the fields layer's Sampler (fields/sample.hpp) is one, handed to an
// expression by bind_fields (expr.hpp).
#pragma once

#include <cstdint>

namespace motes {

class PointSampler {
 public:
  virtual ~PointSampler() = default;
  // out[i] = the value at (x[i], y[i], z[i]), `fill` where there is none (pointers to n
  // doubles; y or z may be null where the sampled object has fewer axes). out may be z.
  virtual void sample(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
                      unsigned threads = 0) const = 0;
};

}  // namespace motes
