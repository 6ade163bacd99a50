// The sidecar's view of a communicator: a handful of float collectives over buffers the
// communicator owns, so the probe runner is the same for Gloo (host memory) and NCCL (device).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::collectives {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll, kSendRecv };

inline constexpr std::array<Collective, 6> kAllCollectives = {
    Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
    Collective::kBroadcast, Collective::kAllToAll,  Collective::kSendRecv};

// broadcast's root: nccl-tests' default (-r 0).
inline constexpr int kBroadcastRoot = 0;

// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall", "sendrecv".
std::string_view CollectiveName(Collective collective);

// A collective failed or did not finish before the communicator's timeout. The message names the
// backend, the collective, this rank and, when known, the peer. The communicator that threw is
// broken: every later call throws again, and the caller builds a new one (under a new prefix).
class CommunicatorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How many elements one rank's send and receive buffers hold for one call with `count` elements
// per rank (nccl-tests' "count" column): all_gather receives count x n, reduce_scatter sends
// count x n, alltoall sends and receives count x n (chunk j goes to rank j), the others count.
struct BufferElems {
  std::size_t send = 0;
  std::size_t recv = 0;
};
BufferElems ElemsFor(Collective collective, std::size_t count, int world_size);

// sendrecv's peers: this rank sends to `send_to` and receives from `recv_from`.
struct Peers {
  int send_to = -1;
  int recv_from = -1;
};

// A rank's send and receive buffers, allocated by (and valid only while) the communicator that
// made them. Host data goes in and out by copy, in pieces if the caller likes (so a probe's host
// memory need not grow with its message); for NCCL that is a device copy bounded by the
// communicator's timeout, and a failure throws CommunicatorError.
class Buffers {
 public:
  virtual ~Buffers() = default;

  virtual std::size_t send_elems() const = 0;
  virtual std::size_t recv_elems() const = 0;

  // Copies `data` into the send (receive) buffer from element `offset` (0 when omitted). Throws
  // std::invalid_argument when offset + data.size() exceeds the buffer.
  void WriteSend(std::size_t offset, std::span<const float> data);
  void WriteRecv(std::size_t offset, std::span<const float> data);
  void WriteSend(std::span<const float> data) { WriteSend(0, data); }
  void WriteRecv(std::span<const float> data) { WriteRecv(0, data); }
  // Copies receive elements offset .. offset + out.size() - 1 to `out`; the same bound.
  void ReadRecv(std::size_t offset, std::span<float> out);
  void ReadRecv(std::span<float> out) { ReadRecv(0, out); }

 protected:
  // The copies, after the range was checked.
  virtual void DoWriteSend(std::size_t offset, std::span<const float> data) = 0;
  virtual void DoWriteRecv(std::size_t offset, std::span<const float> data) = 0;
  virtual void DoReadRecv(std::size_t offset, std::span<float> out) = 0;
};

// A group of `size()` ranks. Every collective is called by all ranks in the same order (sendrecv
// by every rank too, each naming its own peers). Calls are not thread-safe. Each call returns or
// throws CommunicatorError within the communicator's timeout; a peer that leaves makes the
// others throw, never hang.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view backend() const = 0;    // "gloo" or "nccl"
  virtual std::string_view transport() const = 0;  // "tcp" for Gloo; see each implementation

  virtual std::unique_ptr<Buffers> Allocate(std::size_t send_elems, std::size_t recv_elems) = 0;

  // Launches `collective` with `count` elements per rank (sum for the reductions, root 0 for
  // broadcast) from buffers.send to buffers.recv. Gloo completes it before returning; NCCL only
  // enqueues it, and Synchronize waits. Throws std::invalid_argument when the buffers are too
  // small, count is 0, the buffers came from another communicator, or sendrecv's peers are out
  // of range.
  void Run(Collective collective, Buffers& buffers, std::size_t count, Peers peers = {});

  // Waits until every launched collective has completed.
  virtual void Synchronize() = 0;

  // Every rank's `value`, indexed by rank (to compare probe times and sum error counts).
  virtual std::vector<double> AllGatherDouble(double value) = 0;

 protected:
  // Run after its arguments were checked; sendrecv's peers are in range.
  virtual void DoRun(Collective collective, Buffers& buffers, std::size_t count, Peers peers) = 0;
};

}  // namespace ringleader::collectives
