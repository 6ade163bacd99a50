// The ranks one process drives in a communicator, one thread each: a Pod with several GPUs puts
// every GPU in the job's one communicator (global rank = pod rank x local ranks + local index),
// as nccl-tests' -t does. Each local rank is a whole single-rank Communicator, so the probes run
// on it unchanged, with threads standing in for processes.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "sidecar/collectives/communicator.h"

namespace ringleader::collectives {

class LocalRanks {
 public:
  using Factory = std::function<std::unique_ptr<Communicator>(int local)>;

  // Builds `count` communicators at once, local rank l by make(l) on its own thread: a
  // constructor waits for every rank of the group, its siblings in this process included. When
  // any fails, the others still return (bounded by their own timeouts), then the first failure
  // is rethrown. Throws std::invalid_argument when count < 1.
  static LocalRanks Connect(int count, const Factory& make);

  // Takes communicators whose ranks are consecutive and whose sizes agree; throws
  // std::invalid_argument otherwise.
  explicit LocalRanks(std::vector<std::unique_ptr<Communicator>> comms);

  int count() const { return static_cast<int>(comms_.size()); }
  Communicator& at(int local) { return *comms_.at(static_cast<std::size_t>(local)); }
  // Local rank 0: its rank is the first of this process's, and its size the whole group's.
  Communicator& first() { return *comms_.front(); }

  // Calls body(at(l), l) for every local rank at once, local rank 0 on the calling thread, and
  // waits for all. Returns local rank 0's result; a collective probe returns the same on every
  // rank, since its figures are gathered from all of them. If any body throws, the exception
  // that was thrown first is rethrown once every body has returned (a sibling stuck in a
  // collective with the failed rank returns at its communicator's timeout).
  template <typename Body>
  std::invoke_result_t<Body&, Communicator&, int> OnEach(Body&& body);

 private:
  std::vector<std::unique_ptr<Communicator>> comms_;
};

// Remembers the first exception of several threads, in the order they failed.
class FirstFailure {
 public:
  void Capture(std::exception_ptr failure) {
    std::lock_guard lock(mutex_);
    if (!first_) {
      first_ = std::move(failure);
    }
  }
  void RethrowIfAny() const {
    if (first_) {
      std::rethrow_exception(first_);
    }
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

template <typename Body>
std::invoke_result_t<Body&, Communicator&, int> LocalRanks::OnEach(Body&& body) {
  using Result = std::invoke_result_t<Body&, Communicator&, int>;
  if (comms_.size() == 1) {
    return body(*comms_.front(), 0);  // the common case costs no thread
  }
  FirstFailure failure;
  std::vector<std::thread> siblings;
  siblings.reserve(comms_.size() - 1);
  for (int local = 1; local < count(); ++local) {
    siblings.emplace_back([&, local] {
      try {
        body(at(local), local);
      } catch (...) {
        failure.Capture(std::current_exception());
      }
    });
  }
  const auto join = [&] {
    for (std::thread& sibling : siblings) {
      sibling.join();
    }
  };
  if constexpr (std::is_void_v<Result>) {
    try {
      body(first(), 0);
    } catch (...) {
      failure.Capture(std::current_exception());
    }
    join();
    failure.RethrowIfAny();
  } else {
    std::optional<Result> result;
    try {
      result.emplace(body(first(), 0));
    } catch (...) {
      failure.Capture(std::current_exception());
    }
    join();
    failure.RethrowIfAny();
    return std::move(*result);
  }
}

}  // namespace ringleader::collectives
