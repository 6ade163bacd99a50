// Gloo's new-style collectives (options APIs with per-call timeouts) on a full TCP mesh. This
// Gloo's only reduce_scatter is the old-style ReduceScatterHalvingDoubling: no per-call timeout,
// and with position-dependent data it gave wrong elements on 3 ranks x 7 (Gloo's own test fills
// each rank with a constant, which cannot see that). So reduce_scatter is a ring over Gloo's
// UnboundBuffer send/recv instead.
#include "sidecar/collectives/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <utility>

namespace ringleader::collectives {
namespace {

// Slot prefixes for the operations built here, apart from those Gloo's own collectives use
// (small numbers).
constexpr std::uint8_t kSendRecvSlotPrefix = 0x52;
constexpr std::uint8_t kReduceScatterSlotPrefix = 0x53;

using Clock = std::chrono::steady_clock;

// What is left of the time to `deadline`, at least 1 ms so Gloo still waits (and then fails).
std::chrono::milliseconds Remaining(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

void IgnoreSigpipeIfDefault() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
  }
}

std::string RankOf(int rank, int size) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(size);
}

// Host buffers, used by Gloo in place.
class GlooBuffers final : public Buffers {
 public:
  GlooBuffers(const GlooCommunicator* owner, std::size_t send_elems, std::size_t recv_elems)
      : owner_(owner), send_(send_elems), recv_(recv_elems) {}

  std::size_t send_elems() const override { return send_.size(); }
  std::size_t recv_elems() const override { return recv_.size(); }

  const GlooCommunicator* owner() const { return owner_; }
  float* send() { return send_.data(); }
  float* recv() { return recv_.data(); }

  // reduce_scatter's working copy of the input and its landing area for one incoming chunk,
  // kept across calls.
  float* work(std::size_t elems) {
    if (work_.size() < elems) {
      work_.resize(elems);
    }
    return work_.data();
  }
  float* incoming(std::size_t elems) {
    if (incoming_.size() < elems) {
      incoming_.resize(elems);
    }
    return incoming_.data();
  }

 private:
  const GlooCommunicator* const owner_;
  std::vector<float> send_;
  std::vector<float> recv_;
  std::vector<float> work_;
  std::vector<float> incoming_;

 protected:
  void DoWriteSend(std::size_t offset, std::span<const float> data) override {
    std::copy(data.begin(), data.end(), send_.begin() + static_cast<std::ptrdiff_t>(offset));
  }
  void DoWriteRecv(std::size_t offset, std::span<const float> data) override {
    std::copy(data.begin(), data.end(), recv_.begin() + static_cast<std::ptrdiff_t>(offset));
  }
  void DoReadRecv(std::size_t offset, std::span<float> out) override {
    std::copy_n(recv_.begin() + static_cast<std::ptrdiff_t>(offset), out.size(), out.begin());
  }
};

}  // namespace

GlooCommunicator::GlooCommunicator(gloo::rendezvous::Store& store, const GlooOptions& options)
    : rank_(options.rank), size_(options.size), timeout_(options.timeout) {
  if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
    throw std::invalid_argument("gloo: rank " + std::to_string(rank_) + " is not in a group of " +
                                std::to_string(size_));
  }
  if (timeout_.count() <= 0) {
    throw std::invalid_argument("gloo: the timeout must be positive");
  }
  IgnoreSigpipeIfDefault();
  gloo::transport::tcp::attr attr;
  if (!options.iface.empty()) {
    attr.iface = options.iface;
  } else {
    attr.hostname = options.hostname;
  }
  try {
    device_ = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
    context->setTimeout(timeout_);
    gloo::rendezvous::PrefixStore prefixed(options.prefix, store);
    context->connectFullMesh(prefixed, device_);
    context_ = std::move(context);
  } catch (const std::exception& e) {
    throw CommunicatorError("gloo connect under prefix \"" + options.prefix + "\" failed on " +
                            RankOf(rank_, size_) + " (timeout " +
                            std::to_string(timeout_.count()) + " ms): " + e.what());
  }
}

GlooCommunicator::~GlooCommunicator() = default;

std::unique_ptr<Buffers> GlooCommunicator::Allocate(std::size_t send_elems,
                                                   std::size_t recv_elems) {
  return std::make_unique<GlooBuffers>(this, send_elems, recv_elems);
}

void GlooCommunicator::Synchronize() {}

template <typename Op>
void GlooCommunicator::Guarded(std::string_view what, Peers peers, Op&& op) {
  std::string call = "gloo " + std::string(what);
  if (peers.send_to >= 0) {
    call += " (send to rank " + std::to_string(peers.send_to) + ", receive from rank " +
            std::to_string(peers.recv_from) + ")";
  }
  if (!broken_.empty()) {
    throw CommunicatorError(call + " on " + RankOf(rank_, size_) +
                            ": communicator broken by an earlier error: " + broken_);
  }
  try {
    std::forward<Op>(op)();
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    broken_ = call + " failed on " + RankOf(rank_, size_) + " (timeout " +
              std::to_string(timeout_.count()) + " ms): " + e.what();
    throw CommunicatorError(broken_);
  }
}

void GlooCommunicator::DoRun(Collective collective, Buffers& buffers, std::size_t count,
                             Peers peers) {
  auto* gloo_buffers = dynamic_cast<GlooBuffers*>(&buffers);
  if (gloo_buffers == nullptr || gloo_buffers->owner() != this) {
    throw std::invalid_argument(std::string(CollectiveName(collective)) +
                                ": buffers were allocated by another communicator");
  }
  float* send = gloo_buffers->send();
  float* recv = gloo_buffers->recv();
  const std::size_t total = count * static_cast<std::size_t>(size_);
  const Peers named = collective == Collective::kSendRecv ? peers : Peers{};
  Guarded(CollectiveName(collective), named, [&] {
    switch (collective) {
      case Collective::kAllReduce: {
        gloo::AllreduceOptions opts(context_);
        opts.setInput(send, count);
        opts.setOutput(recv, count);
        opts.setReduceFunction(
            static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<float>));
        opts.setTimeout(timeout_);
        gloo::allreduce(opts);
        return;
      }
      case Collective::kAllGather: {
        gloo::AllgatherOptions opts(context_);
        opts.setInput(send, count);
        opts.setOutput(recv, total);
        opts.setTimeout(timeout_);
        gloo::allgather(opts);
        return;
      }
      case Collective::kReduceScatter:
        RingReduceScatter(*gloo_buffers, count);
        return;
      case Collective::kBroadcast: {
        gloo::BroadcastOptions opts(context_);
        if (rank_ == kBroadcastRoot) {
          opts.setInput(send, count);
        }
        opts.setOutput(recv, count);
        opts.setRoot(kBroadcastRoot);
        opts.setTimeout(timeout_);
        gloo::broadcast(opts);
        return;
      }
      case Collective::kAllToAll: {
        gloo::AlltoallOptions opts(context_);
        opts.setInput(send, total);
        opts.setOutput(recv, total);
        opts.setTimeout(timeout_);
        gloo::alltoall(opts);
        return;
      }
      case Collective::kSendRecv: {
        if (peers.send_to == rank_) {
          std::memcpy(recv, send, count * sizeof(float));
          return;
        }
        const std::size_t bytes = count * sizeof(float);
        const auto slot = gloo::Slot::build(kSendRecvSlotPrefix, 0);
        auto inbound = context_->createUnboundBuffer(recv, bytes);
        auto outbound = context_->createUnboundBuffer(send, bytes);
        inbound->recv(peers.recv_from, slot);
        outbound->send(peers.send_to, slot);
        if (!inbound->waitRecv(timeout_) || !outbound->waitSend(timeout_)) {
          throw std::runtime_error("aborted");
        }
        return;
      }
    }
  });
}

// nccl's ring: at step s rank r sends its partial sum of chunk (r-s-1) mod n to r+1 and adds
// what r-1 sends (chunk (r-s-2) mod n) to its own; after n-1 steps chunk r is complete at rank r.
// Each rank sends (n-1) x count elements, the traffic busbw's (n-1)/n assumes.
void GlooCommunicator::RingReduceScatter(Buffers& buffers, std::size_t count) {
  auto& gloo_buffers = static_cast<GlooBuffers&>(buffers);
  const std::size_t n = static_cast<std::size_t>(size_);
  const std::size_t r = static_cast<std::size_t>(rank_);
  if (size_ == 1) {
    std::memcpy(gloo_buffers.recv(), gloo_buffers.send(), count * sizeof(float));
    return;
  }
  const auto deadline = Clock::now() + timeout_;
  const std::size_t chunk_bytes = count * sizeof(float);
  float* work = gloo_buffers.work(count * n);
  float* incoming = gloo_buffers.incoming(count);
  std::memcpy(work, gloo_buffers.send(), chunk_bytes * n);
  auto outbound = context_->createUnboundBuffer(work, chunk_bytes * n);
  auto inbound = context_->createUnboundBuffer(incoming, chunk_bytes);
  const int right = (rank_ + 1) % size_;
  const int left = (rank_ + size_ - 1) % size_;
  for (std::size_t step = 0; step + 1 < n; ++step) {
    const std::size_t send_chunk = (r + 2 * n - step - 1) % n;
    const std::size_t recv_chunk = (r + 2 * n - step - 2) % n;
    const auto slot = gloo::Slot::build(kReduceScatterSlotPrefix, static_cast<std::uint32_t>(step));
    inbound->recv(left, slot);
    outbound->send(right, slot, send_chunk * chunk_bytes, chunk_bytes);
    if (!inbound->waitRecv(Remaining(deadline))) {
      throw std::runtime_error("receive from rank " + std::to_string(left) + " aborted");
    }
    float* sum = work + recv_chunk * count;
    for (std::size_t i = 0; i < count; ++i) {
      sum[i] += incoming[i];
    }
    // The chunk summed here is the next step's send, so this step's send must be done first.
    if (!outbound->waitSend(Remaining(deadline))) {
      throw std::runtime_error("send to rank " + std::to_string(right) + " aborted");
    }
  }
  std::memcpy(gloo_buffers.recv(), work + r * count, chunk_bytes);
}

std::vector<double> GlooCommunicator::AllGatherDouble(double value) {
  std::vector<double> values(static_cast<std::size_t>(size_));
  Guarded("all_gather of one double", Peers{}, [&] {
    gloo::AllgatherOptions opts(context_);
    opts.setInput(&value, 1);
    opts.setOutput(values.data(), values.size());
    opts.setTimeout(timeout_);
    gloo::allgather(opts);
  });
  return values;
}

}  // namespace ringleader::collectives
