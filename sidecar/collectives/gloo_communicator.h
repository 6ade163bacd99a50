// Gloo over TCP: the sidecar's CPU collectives, and the fallback where NCCL is not built.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/collectives/communicator.h"

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}  // namespace rendezvous
namespace transport {
class Device;
}  // namespace transport
}  // namespace gloo

namespace ringleader::collectives {

struct GlooOptions {
  int rank = 0;
  int size = 1;
  // Store keys live under this prefix; give each attempt its own so attempts never collide.
  std::string prefix;
  // Where the TCP device listens: a network interface name, or else a hostname or address
  // (e.g. the pod IP, or "127.0.0.1" in tests).
  std::string iface;
  std::string hostname;
  // Bound on connecting the mesh and on every collective.
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

// Connects a full mesh through `store` (under options.prefix) in the constructor, which throws
// CommunicatorError naming the rank when a peer does not show up within the timeout. The store
// is only used during construction. Because Gloo writes to sockets with writev, a peer that
// closes could raise SIGPIPE; the constructor therefore ignores SIGPIPE when its disposition is
// still the default.
class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(gloo::rendezvous::Store& store, const GlooOptions& options);
  ~GlooCommunicator() override;

  GlooCommunicator(const GlooCommunicator&) = delete;
  GlooCommunicator& operator=(const GlooCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "gloo"; }
  std::string_view transport() const override { return "tcp"; }

  std::unique_ptr<Buffers> Allocate(std::size_t send_elems, std::size_t recv_elems) override;
  // Gloo collectives complete before Run returns; nothing is left to wait for.
  void Synchronize() override;
  std::vector<double> AllGatherDouble(double value) override;

  // The Gloo context under this communicator, for benchmarks that call Gloo directly on the
  // same connections (tests/bench/probe_overhead_bench.cc).
  const std::shared_ptr<gloo::Context>& gloo_context() const { return context_; }

 protected:
  void DoRun(Collective collective, Buffers& buffers, std::size_t count, Peers peers) override;

 private:
  // Runs `op`, turning any Gloo failure into CommunicatorError (and breaking this communicator).
  template <typename Op>
  void Guarded(std::string_view what, Peers peers, Op&& op);
  void RingReduceScatter(Buffers& buffers, std::size_t count);

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  std::string broken_;  // the first error's message; empty while healthy
};

}  // namespace ringleader::collectives
