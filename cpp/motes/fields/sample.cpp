#include "motes/fields/sample.hpp"

#include <algorithm>
#include <cmath>

#include "motes/core/errors.hpp"
#include "motes/core/threads.hpp"
#include "motes/core/text.hpp"

namespace motes::fields {

std::vector<std::string> Sampler::component_names(const FieldSpec& spec) {
  std::vector<std::string> out = spec.components;
  auto has = [&](const char* c) { return std::find(out.begin(), out.end(), c) != out.end(); };
  if (spec.geometry.kind == Geometry::theta_mode && has("r") && has("t") && !has("x") && !has("y")) {
    out.push_back("x");
    out.push_back("y");
  }
  return out;
}

Sampler::Sampler(const FieldFile& file, const std::string& component, unsigned threads) : spec_(file.spec()) {
  const std::vector<std::string> names = component_names(spec_);
  auto index_of = [&](const std::string& c) {
    return size_t(std::find(spec_.components.begin(), spec_.components.end(), c) - spec_.components.begin());
  };
  if (names.empty() ? !component.empty() : std::find(names.begin(), names.end(), component) == names.end()) {
    throw UsageError("field '" + spec_.name + "' has no component '" + component + "' (" +
                     (names.empty() ? std::string("a scalar field") : "components: " + joined(names)) + ")");
  }
  const Region r = file.region({0, 0, 0}, spec_.dims, 0);
  if (spec_.geometry.cartesian_grid()) {
    values_.resize(r.size() * dtype_size(spec_.dtype));
    file.read(r, names.empty() ? 0 : index_of(component), values_.data(), threads);
    return;
  }
  // thetaMode: the mode arrays of the component, or of r and t for x and y, as doubles.
  std::vector<size_t> combined;
  if (component == "x" || component == "y") {
    project_ = component == "x" ? Project::x : Project::y;
    combined = {index_of("r"), index_of("t")};
  } else {
    combined = {names.empty() ? 0 : index_of(component)};
  }
  vector_parity_ = project_ != Project::none || component == "r" || component == "t";
  const uint32_t slots = spec_.geometry.slots();
  const uint64_t n = r.size();
  std::vector<unsigned char> raw(n * dtype_size(spec_.dtype));
  for (size_t vc : combined) {
    std::vector<double>& out = modes_.emplace_back(size_t(slots) * n);
    for (uint32_t s = 0; s < slots; ++s) {
      file.read(r, vc * slots + s, raw.data(), threads);
      dispatch_dtype(spec_.dtype, [&](auto tag) {
        using T = decltype(tag);
        const T* v = reinterpret_cast<const T*>(raw.data());
        for (uint64_t i = 0; i < n; ++i) out[s * n + i] = double(v[i]);
      });
    }
  }
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
  if (!spec_.geometry.cartesian_grid()) return sample_theta(x, y, z, n, fill, out, threads);
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

void Sampler::sample_theta(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
                           unsigned threads) const {
  if (!x || !y || !z) throw UsageError("field '" + spec_.name + "' is a thetaMode field: give x, y and z");
  const uint64_t nz = spec_.dims[0], nr = spec_.dims[1], plane = nz * nr;
  const double shift = spec_.centering == Centering::cell ? 0.5 : 0.0;
  const double z0 = spec_.origin[0], dz = spec_.spacing[0], r_origin = spec_.origin[1], dr = spec_.spacing[1];
  const double r_first = r_origin + shift * dr;        // the first radial sample
  const bool across = r_first > 0 && r_first <= dr;     // interpolated across the axis below it
  const double top_z = double(nz - 1), top_r = double(nr - 1);
  const uint64_t step_z = nz > 1 ? 1 : 0, step_r = nr > 1 ? nz : 0;
  const uint32_t modes = spec_.geometry.modes;
  const double imag = spec_.geometry.imag == '-' ? -1.0 : 1.0;
  // r = √(x² + y²) may round past the last radius of a point on it: within 1e-9 of a cell, it
  // counts as on it.
  constexpr double kEdge = 1e-9;
  parallel_ranges(n, threads ? threads : default_threads(), 1 << 12, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      const double px = x[i], py = y[i], pz = z[i];  // read before out[i] (out may be z)
      const double r = std::hypot(px, py);
      const double uz = (pz - z0) / dz - shift;
      double ur = (r - r_origin) / dr - shift;
      if (ur > top_r && ur <= top_r + kEdge) ur = top_r;
      if (!(uz >= 0.0 && uz <= top_z) || std::isnan(r)) {
        out[i] = fill;
        continue;
      }
      bool axis = false;
      double ta = 1.0;  // across the axis: the weight of r₀ on the point's side
      uint64_t ir = 0;
      double tr = 0.0;
      if (ur >= 0.0 && ur <= top_r) {
        ir = nr > 1 ? std::min<uint64_t>(uint64_t(ur), nr - 2) : 0;
        tr = ur - double(ir);
      } else if (ur < 0.0 && across) {
        axis = true;
        ta = (r + r_first) / (2.0 * r_first);
      } else {
        out[i] = fill;
        continue;
      }
      const uint64_t iz = nz > 1 ? std::min<uint64_t>(uint64_t(uz), nz - 2) : 0;
      const double tz = uz - double(iz);
      const uint64_t at = ir * nz + iz;
      auto value = [&](const double* g) {  // one mode array at the point
        const double* p = g + at;
        const double v0 = p[0] + tz * (p[step_z] - p[0]);
        if (axis || tr == 0.0) return v0;
        const double v1 = p[step_r] + tz * (p[step_r + step_z] - p[step_r]);
        return v0 + tr * (v1 - v0);
      };
      const double c1 = r > 0 ? px / r : 1.0, s1 = r > 0 ? py / r : 0.0;
      auto combine = [&](const std::vector<double>& g) {
        double f = value(g.data());  // mode 0: even across the axis (odd for r and t)
        if (axis && vector_parity_) f *= 2.0 * ta - 1.0;
        double cm = 1.0, sm = 0.0;
        for (uint32_t m = 1; m < modes; ++m) {
          const double c = cm * c1 - sm * s1, s = sm * c1 + cm * s1;  // cos mθ, sin mθ
          cm = c, sm = s;
          double v = value(g.data() + (2 * m - 1) * plane) * cm + imag * value(g.data() + 2 * m * plane) * sm;
          if (axis && ((m % 2 == 1) != vector_parity_)) v *= 2.0 * ta - 1.0;  // odd across the axis
          f += v;
        }
        return f;
      };
      if (project_ == Project::none) {
        out[i] = combine(modes_[0]);
      } else {
        const double fr = combine(modes_[0]), ft = combine(modes_[1]);
        out[i] = project_ == Project::x ? c1 * fr - s1 * ft : s1 * fr + c1 * ft;
      }
    }
  });
}

}  // namespace motes::fields
