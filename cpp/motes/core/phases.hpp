// Wall and CPU time per phase of a long operation (the writer's phase table: what
// bench/drivers and Python's write summary report, so a profile can be read against the
// phases, and CPU over wall shows how busy the cores were in each).
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace motes {

struct Phases {
  std::vector<std::pair<std::string, double>> seconds;  // wall seconds, in the order they ran
  std::vector<std::pair<std::string, double>> cpu;      // user + system seconds of the whole process

  // Ends the running phase (its times are added under `name`) and starts the next.
  void lap(const std::string& name) {
    const auto now = std::chrono::steady_clock::now();
    const double c = process_cpu();
    add(seconds, name, std::chrono::duration<double>(now - start_).count());
    add(cpu, name, c - cpu_start_);
    start_ = now, cpu_start_ = c;
  }
  void merge(const Phases& other, const std::string& prefix) {
    for (const auto& [n, t] : other.seconds) add(seconds, prefix + n, t);
    for (const auto& [n, t] : other.cpu) add(cpu, prefix + n, t);
  }
  void restart() { start_ = std::chrono::steady_clock::now(), cpu_start_ = process_cpu(); }

  // User + system seconds of the whole process (every thread) so far.
  static double process_cpu() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }

 private:
  static void add(std::vector<std::pair<std::string, double>>& to, const std::string& name, double s) {
    for (auto& [n, t] : to)
      if (n == name) return void(t += s);
    to.emplace_back(name, s);
  }
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double cpu_start_ = process_cpu();
};

}  // namespace motes
