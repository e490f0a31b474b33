#include "motes/fields/sample.hpp"

#include <algorithm>
#include <cmath>

#include "motes/core/errors.hpp"
#include "motes/core/parallel.hpp"

namespace motes::fields {

Sampler::Sampler(const FieldFile& file, size_t component, unsigned threads) : spec_(file.spec()) {
  if (component >= spec_.component_count())
    throw UsageError("field '" + spec_.name + "' has no component " + std::to_string(component));
  const Region r = file.region({0, 0, 0}, spec_.dims, 0);
  values_.resize(r.size() * dtype_size(spec_.dtype));
  file.read(r, component, values_.data(), threads);
}

bool Sampler::locate(int a, double p, uint64_t& i0, double& t) const {
  const uint64_t n = spec_.dims[size_t(a)];
  if (std::isnan(p)) return false;
  if (spec_.rectilinear()) {
    const std::vector<double>& c = spec_.coords[size_t(a)];
    if (p < c.front() || p > c.back()) return false;
    if (n == 1) return i0 = 0, t = 0, true;
    const uint64_t k = uint64_t(std::upper_bound(c.begin(), c.end(), p) - c.begin());  // c[k-1] <= p < c[k]
    i0 = std::min<uint64_t>(k ? k - 1 : 0, n - 2);
    t = (p - c[i0]) / (c[i0 + 1] - c[i0]);
    return true;
  }
  const double shift = spec_.centering == Centering::cell ? 0.5 : 0.0;
  const double u = (p - spec_.origin[size_t(a)]) / spec_.spacing[size_t(a)] - shift;
  if (!(u >= 0.0 && u <= double(n - 1))) return false;
  if (n == 1) return i0 = 0, t = 0, true;
  i0 = std::min<uint64_t>(uint64_t(u), n - 2);
  t = u - double(i0);
  return true;
}

void Sampler::sample(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
                     unsigned threads) const {
  dispatch_dtype(spec_.dtype, [&](auto tag) { sample_typed<decltype(tag)>(x, y, z, n, fill, out, threads); });
}

template <class T>
void Sampler::sample_typed(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
                           unsigned threads) const {
  const int nd = spec_.ndim;
  if ((nd >= 2 && !y) || (nd >= 3 && !z)) throw UsageError("field '" + spec_.name + "' needs coordinates along every axis");
  const uint64_t row = spec_.dims[0], plane = spec_.dims[0] * spec_.dims[1];
  const uint64_t step[3] = {1, row, plane};
  const double* coords[3] = {x, y, z};
  const bool fast = nd == 3 && !spec_.rectilinear() && spec_.dims[0] > 1 && spec_.dims[1] > 1 && spec_.dims[2] > 1;
  if (fast) {  // uniform 3-D grids: the common case, without the general loops
    const double shift = spec_.centering == Centering::cell ? 0.5 : 0.0;
    double top[3];
    for (int a = 0; a < 3; ++a) top[a] = double(spec_.dims[size_t(a)] - 1);
    const T* v = reinterpret_cast<const T*>(values_.data());
    parallel_ranges(n, threads ? threads : default_threads(), 1 << 14, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) {
        // Exactly the general path's index: (p - origin) / spacing - shift, up to rounding
        // in the last bit; a point on the hull's edge stays inside through the clamps.
        const double u = (x[i] - spec_.origin[0]) / spec_.spacing[0] - shift;
        const double w = (y[i] - spec_.origin[1]) / spec_.spacing[1] - shift;
        const double q = (z[i] - spec_.origin[2]) / spec_.spacing[2] - shift;
        if (!(u >= 0.0 && u <= top[0] && w >= 0.0 && w <= top[1] && q >= 0.0 && q <= top[2])) {
          out[i] = fill;
          continue;
        }
        const uint64_t ix = std::min<uint64_t>(uint64_t(u), spec_.dims[0] - 2),
                       iy = std::min<uint64_t>(uint64_t(w), spec_.dims[1] - 2),
                       iz = std::min<uint64_t>(uint64_t(q), spec_.dims[2] - 2);
        const double tx = u - double(ix), ty = w - double(iy), tz = q - double(iz);
        const T* c = v + ix + iy * row + iz * plane;
        auto at = [&](uint64_t k) { return double(c[k]); };
        const double c00 = at(0) + tx * (at(1) - at(0)), c10 = at(row) + tx * (at(row + 1) - at(row));
        const double c01 = at(plane) + tx * (at(plane + 1) - at(plane)),
                     c11 = at(plane + row) + tx * (at(plane + row + 1) - at(plane + row));
        const double c0 = c00 + ty * (c10 - c00), c1 = c01 + ty * (c11 - c01);
        out[i] = c0 + tz * (c1 - c0);
      }
    });
    return;
  }
  parallel_ranges(n, threads ? threads : default_threads(), 1 << 14, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      uint64_t i0[3] = {0, 0, 0};
      double t[3] = {0, 0, 0};
      bool inside = true;
      for (int a = 0; a < nd && inside; ++a) inside = locate(a, coords[a][i], i0[a], t[a]);
      if (!inside) {
        out[i] = fill;
        continue;
      }
      const uint64_t base = i0[0] + i0[1] * row + i0[2] * plane;
      // Corners along the axes with a next sample (an axis of one sample has none).
      double v = 0.0;
      const int corners = 1 << nd;
      for (int c = 0; c < corners; ++c) {
        double w = 1.0;
        uint64_t at = base;
        bool skip = false;
        for (int a = 0; a < nd; ++a) {
          const bool hi = (c >> a) & 1;
          if (hi && spec_.dims[size_t(a)] == 1) {
            skip = true;
            break;
          }
          w *= hi ? t[a] : 1.0 - t[a];
          at += hi ? step[a] : 0;
        }
        if (!skip && w != 0.0) v += w * double(reinterpret_cast<const T*>(values_.data())[at]);
      }
      out[i] = v;
    }
  });
}

}  // namespace motes::fields
