// Stopping a running query from outside: a token another thread cancels (a client that
// left) and a deadline (a time limit). The query engine, the gathers of a Selection and
// the analyses check them between chunks of work and throw CancelledError; nothing
// else is interrupted, so whatever the query holds is released as the exception unwinds.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "motes/core/errors.hpp"

namespace motes {

// Set once by cancel(), from any thread; never unset.
class CancelToken {
 public:
  void cancel() noexcept { flag_.store(true, std::memory_order_relaxed); }
  bool cancelled() const noexcept { return flag_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> flag_{false};
};

using Deadline = std::chrono::steady_clock::time_point;

// What a running job checks: a token (null: none) and a deadline (none: no limit).
class Cancellation {
 public:
  Cancellation() = default;
  Cancellation(std::shared_ptr<const CancelToken> token, std::optional<Deadline> deadline)
      : token_(std::move(token)), deadline_(deadline) {}
  bool active() const { return token_ || deadline_; }
  bool cancelled() const noexcept { return token_ && token_->cancelled(); }
  const std::optional<Deadline>& deadline() const { return deadline_; }
  // Throws CancelledError when the token was cancelled or the deadline has passed.
  void check() const {
    if (token_ && token_->cancelled()) throw CancelledError("the query was cancelled");
    if (deadline_ && std::chrono::steady_clock::now() >= *deadline_)
      throw CancelledError("the query was stopped at its deadline (it ran longer than its time limit)");
  }

 private:
  std::shared_ptr<const CancelToken> token_;
  std::optional<Deadline> deadline_;
};

namespace detail {
inline thread_local const Cancellation* current_cancellation = nullptr;
}

// The cancellation of the job this thread works for (null: none), for the layers below that
// wait on others and cannot check between chunks of work (a remote store's reads): set by a
// CancelScope around a query's work and its gathers, and carried into the helper threads of
// parallel_for (core/threads.hpp).
inline const Cancellation* current_cancellation() noexcept { return detail::current_cancellation; }

class CancelScope {
 public:
  // An inactive cancellation (no token, no deadline) leaves the current one as it is.
  explicit CancelScope(const Cancellation* c) noexcept : previous_(detail::current_cancellation) {
    if (c && c->active()) detail::current_cancellation = c;
  }
  ~CancelScope() { detail::current_cancellation = previous_; }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const Cancellation* previous_;
};

}  // namespace motes
