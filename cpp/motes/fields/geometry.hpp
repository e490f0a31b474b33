// How a field's grid maps to space (docs/format.md §14.9): Cartesian (the grid's axes are x,
// y, z), or thetaMode, the azimuthal modes of FBPIC and WarpX RZ on an (r, z) grid (the grid's
// axes are z then r; each component stored as 2·modes − 1 arrays: mode 0, then the real and
// the imaginary part of each mode m ≥ 1, as openPMD stores them).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace motes::fields {

struct Geometry {
  enum Kind : uint8_t { cartesian = 0, theta_mode = 1 };
  Kind kind = cartesian;
  uint32_t modes = 0;  // thetaMode: modes 0 .. modes − 1 (1 to 32)
  char imag = '+';     // thetaMode: the sign of the sin terms, F = F0 + Σ Re_m cos mθ ± Im_m sin mθ
  static constexpr uint32_t kMaxModes = 32;

  bool cartesian_grid() const { return kind == cartesian; }
  // Arrays stored per component: 1, or 2·modes − 1 (mode 0, then Re and Im of each mode m ≥ 1).
  uint32_t slots() const { return kind == theta_mode ? 2 * modes - 1 : 1; }
  const char* name() const { return kind == theta_mode ? "thetaMode" : "cartesian"; }
  bool operator==(const Geometry&) const = default;

  // The meta section's (and the manifest entry's) "geometry" object; null for Cartesian,
  // which writes no key (files of Cartesian fields stay as they were).
  nlohmann::json json() const {
    if (kind == cartesian) return nullptr;
    return {{"name", name()}, {"modes", modes}, {"imag", std::string(1, imag)}};
  }
  // From a "geometry" object; `problem` says what is wrong ("" when it is valid).
  static Geometry of(const nlohmann::json& j, std::string& problem) {
    Geometry g;
    problem.clear();
    if (!j.is_object() || !j.contains("name") || !j.at("name").is_string()) {
      problem = "geometry is not an object with a name";
      return g;
    }
    const std::string name = j.at("name").get<std::string>();
    if (name != "thetaMode") {
      problem = "geometry '" + name.substr(0, 40) + "' is not one this motes knows (thetaMode)";
      return g;
    }
    g.kind = theta_mode;
    const auto m = j.find("modes");
    const auto im = j.find("imag");
    if (m == j.end() || !m->is_number_unsigned() || m->get<uint64_t>() < 1 || m->get<uint64_t>() > kMaxModes)
      problem = "thetaMode geometry needs modes, 1 to " + std::to_string(kMaxModes);
    else if (im == j.end() || !im->is_string() || (im->get<std::string>() != "+" && im->get<std::string>() != "-"))
      problem = "thetaMode geometry needs imag, \"+\" or \"-\"";
    else
      g.modes = uint32_t(m->get<uint64_t>()), g.imag = im->get<std::string>()[0];
    return g;
  }
};

}  // namespace motes::fields
