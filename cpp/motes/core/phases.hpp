// Wall time per phase of a long operation (the writer's phase table: what bench/drivers
// and Python's write summary report, so a profile can be read against the phases).
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace motes {

struct Phases {
  std::vector<std::pair<std::string, double>> seconds;  // in the order they ran

  // Ends the running phase (its time is added under `name`) and starts the next.
  void lap(const std::string& name) {
    const auto now = std::chrono::steady_clock::now();
    add(name, std::chrono::duration<double>(now - start_).count());
    start_ = now;
  }
  void add(const std::string& name, double s) {
    for (auto& [n, t] : seconds)
      if (n == name) return void(t += s);
    seconds.emplace_back(name, s);
  }
  void merge(const Phases& other, const std::string& prefix) {
    for (const auto& [n, t] : other.seconds) add(prefix + n, t);
  }
  void restart() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace motes
