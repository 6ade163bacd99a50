// Runs N ranks as threads in one process: each builds a GlooCommunicator on 127.0.0.1 over one
// shared in-memory HashStore, waits until all are connected, then runs the test's body.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sidecar/collectives/gloo_communicator.h"

namespace gloo::rendezvous {
class Store;
}  // namespace gloo::rendezvous

namespace ringleader::collectives::testing {

// The body owns its rank's communicator and may destroy it (to play a rank that leaves).
using RankBody = std::function<void(std::unique_ptr<GlooCommunicator>& comm)>;

struct RankOutcome {
  std::string error;  // what() of the exception the rank ended with; empty when it returned
  bool communicator_error = false;  // the exception was a CommunicatorError
  std::chrono::milliseconds elapsed{0};  // time in the body (not counting connect)
};

struct RankRunOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // for connecting and every call
  std::string prefix = "test";
  gloo::rendezvous::Store* store = nullptr;  // a fresh HashStore when null
};

// Runs `body` on `n` ranks; returns each rank's outcome, indexed by rank.
std::vector<RankOutcome> RunGlooRanks(int n, const RankBody& body,
                                      const RankRunOptions& options = {});

// One line per rank that failed, for an assertion message; empty when every rank returned.
std::string Failures(const std::vector<RankOutcome>& outcomes);

}  // namespace ringleader::collectives::testing
