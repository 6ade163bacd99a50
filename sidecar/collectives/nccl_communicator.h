// NCCL on one local GPU per process (device = the local index): the sidecar's GPU collectives.
// Built only when CMake finds CUDA and NCCL (RINGLEADER_WITH_NCCL).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/collectives/communicator.h"

namespace gloo::rendezvous {
class Store;
}  // namespace gloo::rendezvous

namespace ringleader::collectives {

struct NcclOptions {
  int rank = 0;
  int size = 1;
  // Store keys live under this prefix; give each attempt its own so attempts never collide.
  std::string prefix;
  int device = 0;  // the CUDA device this rank drives
  // Bound on init, on every collective's enqueue, on Synchronize and on buffer copies.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// CUDA devices visible to this process; 0 when there is no driver or no device.
int VisibleCudaDevices();

// Rank 0 makes the ncclUniqueId and publishes it in `store` under options.prefix; the others
// wait for it there. The communicator is non-blocking (config.blocking = 0) and NCCL has no
// watchdog of its own, so every call polls under the timeout; on timeout or error the
// communicator is aborted (ncclCommAbort) and CommunicatorError names the collective and NCCL's
// error string.
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(gloo::rendezvous::Store& store, const NcclOptions& options);
  ~NcclCommunicator() override;

  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "nccl"; }
  // NCCL picks P2P, SHM or NET per peer and does not expose its choice through the API.
  std::string_view transport() const override { return "nccl"; }

  std::unique_ptr<Buffers> Allocate(std::size_t send_elems, std::size_t recv_elems) override;
  void Synchronize() override;
  std::vector<double> AllGatherDouble(double value) override;

  // Defined in the .cc: the device state shared with the buffers this communicator allocated,
  // and the communicator's own NCCL state.
  struct Device;
  struct State;

 protected:
  void DoRun(Collective collective, Buffers& buffers, std::size_t count, Peers peers) override;

 private:
  const int rank_;
  const int size_;
  std::shared_ptr<Device> device_;
  std::unique_ptr<State> state_;
};

}  // namespace ringleader::collectives
