// Field values at arbitrary points (CMFE: a donor field sampled at a target's positions):
// linear interpolation between the samples around each point along every axis of the grid
// (trilinear in 3-D), between sample positions (node-centred: the nodes; cell-centred: the
// cell centres), `fill` for a point outside the hull of the sample positions or with a NaN
// coordinate. Axes past the grid's ndim are ignored. docs/guide.md "Grid fields".
//
// A thetaMode field (fields/geometry.hpp) is sampled at (x, y, z) as openPMD-viewer
// reconstructs it: r = √(x² + y²), θ = atan2(y, x) (θ = 0 on the axis), each mode's arrays
// interpolated bilinearly in (z, r), then F = F₀ + Σₘ (Reₘ cos mθ ± Imₘ sin mθ) (the sign
// is the geometry's imag). Between the axis and the first radial sample r₀ (when 0 < r₀ ≤
// Δr, FBPIC's r₀ = Δr/2) a point is interpolated across the axis, between r₀ on its side and
// r₀ on the opposite side (θ + π), where mode m of a scalar (or of the z component) is
// (−1)^m times its value and of the r and t components (−1)^(m+1) times (they point the other
// way there): the Cartesian components x, y, z are then linear across the axis, as in
// openPMD-viewer's slice through the axis. "x" and "y" of a field with components r and t are
// Fr cos θ − Ft sin θ and Fr sin θ + Ft cos θ.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "motes/expr/sampler.hpp"
#include "motes/fields/file.hpp"

namespace motes::fields {

// One component of a field in memory at full resolution, ready to be sampled (the values a
// field(...) of an expression reads: a PointSampler).
class Sampler : public PointSampler {
 public:
  // `component` names the component ("" for a scalar field); for a thetaMode field with
  // components r and t (and none named x or y), "x" and "y" too. UsageError naming the ones
  // there are.
  Sampler(const FieldFile& file, const std::string& component, unsigned threads = 0);
  // The names a Sampler takes for a field of `spec` (empty for a scalar field).
  static std::vector<std::string> component_names(const FieldSpec& spec);
  // out[i] = the field at (x[i], y[i], z[i]) (pointers to n doubles; y or z may be null for a
  // grid with fewer axes; a thetaMode field needs all three). out may be z.
  void sample(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
              unsigned threads = 0) const override;

 private:
  FieldSpec spec_;
  std::vector<unsigned char> values_;  // Cartesian: the samples as stored (dtype), C order ((z, y, x) indexing)
  // thetaMode: per component combined (one; r and t for "x" and "y"), its mode arrays as
  // doubles, slot after slot, each (r, z) in C order (z fastest).
  std::vector<std::vector<double>> modes_;
  enum class Project : uint8_t { none, x, y } project_ = Project::none;
  bool vector_parity_ = false;  // thetaMode: across the axis, mode m flips as (−1)^(m+1) (r, t), else (−1)^m
  // The fractional index of coordinate p along axis a; false when p lies outside.
  bool locate(int a, double p, uint64_t& i0, double& t) const;
  template <class T>
  void sample_typed(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
                    unsigned threads) const;
  void sample_theta(const double* x, const double* y, const double* z, uint64_t n, double fill, double* out,
                    unsigned threads) const;
};

}  // namespace motes::fields
