// Thread-per-rank harness for Gloo communicator tests.
#include "tests/sidecar/collectives/gloo_ranks.h"

#include <gloo/rendezvous/hash_store.h>

#include <exception>
#include <latch>
#include <thread>

namespace ringleader::collectives::testing {

std::vector<RankOutcome> RunGlooRanks(int n, const RankBody& body, const RankRunOptions& options) {
  gloo::rendezvous::HashStore own_store;
  gloo::rendezvous::Store& store = options.store != nullptr ? *options.store : own_store;
  std::latch connected(n);
  std::latch finished(n);
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      RankOutcome& outcome = outcomes[static_cast<std::size_t>(rank)];
      std::unique_ptr<GlooCommunicator> comm;
      try {
        GlooOptions gloo_options;
        gloo_options.rank = rank;
        gloo_options.size = n;
        gloo_options.prefix = options.prefix;
        gloo_options.hostname = "127.0.0.1";
        gloo_options.timeout = options.timeout;
        comm = std::make_unique<GlooCommunicator>(store, gloo_options);
      } catch (const std::exception& e) {
        outcome.error = std::string("connect: ") + e.what();
      }
      // Nobody starts before everyone is connected, so a rank that leaves early cannot turn
      // another rank's test of a collective into a test of connecting.
      connected.arrive_and_wait();
      if (!comm) {
        finished.arrive_and_wait();
        return;
      }
      const auto start = std::chrono::steady_clock::now();
      try {
        body(comm);
      } catch (const CommunicatorError& e) {
        outcome.error = e.what();
        outcome.communicator_error = true;
      } catch (const std::exception& e) {
        outcome.error = e.what();
      }
      outcome.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      // A rank that is done must not close its sockets under a peer still finishing.
      finished.arrive_and_wait();
      comm.reset();
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  return outcomes;
}

std::string Failures(const std::vector<RankOutcome>& outcomes) {
  std::string failures;
  for (std::size_t rank = 0; rank < outcomes.size(); ++rank) {
    if (!outcomes[rank].error.empty()) {
      failures += "rank " + std::to_string(rank) + ": " + outcomes[rank].error + "\n";
    }
  }
  return failures;
}

}  // namespace ringleader::collectives::testing
