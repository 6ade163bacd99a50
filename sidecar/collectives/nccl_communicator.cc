// NCCL in non-blocking mode with our own deadline: NCCL has no watchdog, so every wait polls
// cudaStreamQuery and ncclCommGetAsyncError and aborts the communicator when time runs out.
#include "sidecar/collectives/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <gloo/rendezvous/prefix_store.h>
#include <nccl.h>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>
#include <utility>

// The NCCL floor (docs/gpu.md): every preflight runs alltoall, and ncclAlltoAll first shipped in
// NCCL 2.28. CMake refuses an older nccl.h with both versions named (cmake/RingleaderGpu.cmake);
// this catches a build that reaches an older header some other way.
#if !defined(NCCL_VERSION) || NCCL_VERSION_CODE < NCCL_VERSION(2, 28, 0)
#error "NCCL 2.28 or later is needed (ncclAlltoAll): set NCCL_ROOT to one, see docs/gpu.md"
#endif

namespace ringleader::collectives {

struct NcclCommunicator::Device {
  int index = 0;
  std::chrono::milliseconds timeout{0};
  cudaStream_t stream = nullptr;

  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() {
    if (stream != nullptr) {
      cudaSetDevice(index);
      cudaStreamDestroy(stream);
    }
  }
};

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  std::string broken;  // the first error's message; empty while healthy
  // AllGatherDouble's device buffers: one value in, one per rank out.
  double* gather_in = nullptr;
  double* gather_out = nullptr;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    cudaFree(gather_in);
    cudaFree(gather_out);
  }
};

namespace {

using Clock = std::chrono::steady_clock;

std::string RankOf(int rank, int size) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(size);
}

// "2.28.3" from ncclGetVersion's code (X*10000 + Y*100 + Z since NCCL 2.9, X*1000 + Y*100 + Z
// before).
std::string NcclVersionText(int code) {
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

std::string CudaText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

std::string NcclText(ncclComm_t comm, ncclResult_t result) {
  std::string text = ncclGetErrorString(result);
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  if (last != nullptr && *last != '\0') {
    text += ": ";
    text += last;
  }
  return text;
}

// Waits for `device`'s stream under its timeout; for buffer copies, which no NCCL call shares.
void WaitStream(const NcclCommunicator::Device& device, std::string_view what) {
  const auto deadline = Clock::now() + device.timeout;
  while (true) {
    const cudaError_t status = cudaStreamQuery(device.stream);
    if (status == cudaSuccess) {
      return;
    }
    if (status != cudaErrorNotReady) {
      throw CommunicatorError("nccl " + std::string(what) + ": " + CudaText(status));
    }
    if (Clock::now() > deadline) {
      throw CommunicatorError("nccl " + std::string(what) + ": timed out after " +
                              std::to_string(device.timeout.count()) + " ms");
    }
    std::this_thread::yield();
  }
}

// `what` names the step, starting "nccl ...".
void CheckCuda(cudaError_t status, std::string_view what) {
  if (status != cudaSuccess) {
    throw CommunicatorError(std::string(what) + ": " + CudaText(status));
  }
}

// Device send and receive buffers; host data moves by copies on the communicator's stream.
class NcclBuffers final : public Buffers {
 public:
  NcclBuffers(const NcclCommunicator* owner, std::shared_ptr<NcclCommunicator::Device> device,
              std::size_t send_elems, std::size_t recv_elems)
      : owner_(owner),
        device_(std::move(device)),
        send_elems_(send_elems),
        recv_elems_(recv_elems) {
    CheckCuda(cudaSetDevice(device_->index), "nccl allocate: cudaSetDevice");
    CheckCuda(cudaMalloc(reinterpret_cast<void**>(&send_), send_elems * sizeof(float)),
              "nccl allocate send buffer");
    const cudaError_t status =
        cudaMalloc(reinterpret_cast<void**>(&recv_), recv_elems * sizeof(float));
    if (status != cudaSuccess) {
      cudaFree(send_);
      CheckCuda(status, "nccl allocate receive buffer");
    }
  }
  NcclBuffers(const NcclBuffers&) = delete;
  NcclBuffers& operator=(const NcclBuffers&) = delete;
  ~NcclBuffers() override {
    cudaSetDevice(device_->index);
    cudaFree(send_);
    cudaFree(recv_);
  }

  std::size_t send_elems() const override { return send_elems_; }
  std::size_t recv_elems() const override { return recv_elems_; }

  const NcclCommunicator* owner() const { return owner_; }
  float* send() const { return send_; }
  float* recv() const { return recv_; }

 protected:
  void DoWriteSend(std::size_t offset, std::span<const float> data) override {
    CopyIn(send_ + offset, data);
  }
  void DoWriteRecv(std::size_t offset, std::span<const float> data) override {
    CopyIn(recv_ + offset, data);
  }
  void DoReadRecv(std::size_t offset, std::span<float> out) override {
    CheckCuda(cudaSetDevice(device_->index), "nccl ReadRecv: cudaSetDevice");
    // A copy to pageable memory returns only once it is done, so wait (bounded) for the stream
    // to drain first; the copy itself then cannot hang behind a stuck collective.
    WaitStream(*device_, "ReadRecv");
    CheckCuda(cudaMemcpyAsync(out.data(), recv_ + offset, out.size_bytes(), cudaMemcpyDeviceToHost,
                              device_->stream),
              "nccl ReadRecv: cudaMemcpyAsync");
    WaitStream(*device_, "ReadRecv");
  }

 private:
  void CopyIn(float* target, std::span<const float> data) {
    CheckCuda(cudaSetDevice(device_->index), "nccl copy in: cudaSetDevice");
    CheckCuda(cudaMemcpyAsync(target, data.data(), data.size_bytes(), cudaMemcpyHostToDevice,
                              device_->stream),
              "nccl copy in: cudaMemcpyAsync");
    WaitStream(*device_, "copy in");
  }

  const NcclCommunicator* const owner_;
  const std::shared_ptr<NcclCommunicator::Device> device_;
  const std::size_t send_elems_;
  const std::size_t recv_elems_;
  float* send_ = nullptr;
  float* recv_ = nullptr;
};

// The communicator's failure path: abort it (NCCL frees what it can) and remember why.
[[noreturn]] void Fail(NcclCommunicator::State& state, std::string message) {
  if (state.comm != nullptr) {
    ncclCommAbort(state.comm);
    state.comm = nullptr;
  }
  state.broken = message;
  throw CommunicatorError(std::move(message));
}

// Waits until NCCL has finished what `result` started (a non-blocking call may answer
// ncclInProgress), failing the communicator on an error or at `deadline`.
void AwaitNccl(NcclCommunicator::State& state, ncclResult_t result, const std::string& what,
               Clock::time_point deadline, std::chrono::milliseconds timeout) {
  while (result == ncclInProgress) {
    if (Clock::now() > deadline) {
      Fail(state, what + ": timed out after " + std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::yield();
    const ncclResult_t query = ncclCommGetAsyncError(state.comm, &result);
    if (query != ncclSuccess) {
      result = query;
    }
  }
  if (result != ncclSuccess) {
    Fail(state, what + ": " + NcclText(state.comm, result));
  }
}

}  // namespace

int VisibleCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later CUDA calls do not see it
    return 0;
  }
  return count;
}

NcclCommunicator::NcclCommunicator(gloo::rendezvous::Store& store, const NcclOptions& options)
    : rank_(options.rank),
      size_(options.size),
      device_(std::make_shared<Device>()),
      state_(std::make_unique<State>()) {
  if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
    throw std::invalid_argument("nccl: rank " + std::to_string(rank_) + " is not in a group of " +
                                std::to_string(size_));
  }
  if (options.timeout.count() <= 0) {
    throw std::invalid_argument("nccl: the timeout must be positive");
  }
  const std::string where = "nccl init under prefix \"" + options.prefix + "\" on " +
                            RankOf(rank_, size_) + " (device " + std::to_string(options.device) +
                            ")";
  // Built against 2.28 headers, but the library loaded at run time may be older (an image whose
  // runtime base ships another NCCL): say so before the first alltoall finds no symbol.
  int loaded = 0;
  if (ncclGetVersion(&loaded) == ncclSuccess && loaded < NCCL_VERSION(2, 28, 0)) {
    throw CommunicatorError(where + ": the NCCL library loaded is " + NcclVersionText(loaded) +
                            ", older than the 2.28 this sidecar needs (ncclAlltoAll; built "
                            "against " + NcclVersionText(NCCL_VERSION_CODE) +
                            "): use a runtime image with NCCL 2.28 or later (docs/gpu.md)");
  }
  const auto deadline = Clock::now() + options.timeout;
  device_->index = options.device;
  device_->timeout = options.timeout;
  CheckCuda(cudaSetDevice(device_->index), where + ": cudaSetDevice");
  CheckCuda(cudaStreamCreateWithFlags(&device_->stream, cudaStreamNonBlocking),
            where + ": cudaStreamCreate");
  CheckCuda(cudaMalloc(reinterpret_cast<void**>(&state_->gather_in), sizeof(double)),
            where + ": cudaMalloc");
  CheckCuda(cudaMalloc(reinterpret_cast<void**>(&state_->gather_out),
                       sizeof(double) * static_cast<std::size_t>(size_)),
            where + ": cudaMalloc");

  ncclUniqueId id;
  try {
    gloo::rendezvous::PrefixStore prefixed(options.prefix, store);
    const std::string key = "nccl_unique_id";
    if (rank_ == 0) {
      const ncclResult_t made = ncclGetUniqueId(&id);
      if (made != ncclSuccess) {
        throw CommunicatorError(where + ": ncclGetUniqueId: " + ncclGetErrorString(made));
      }
      prefixed.set(key, std::vector<char>(id.internal, id.internal + sizeof(id.internal)));
    } else {
      prefixed.wait({key}, options.timeout);
      const std::vector<char> bytes = prefixed.get(key);
      if (bytes.size() != sizeof(id.internal)) {
        throw CommunicatorError(where + ": the published ncclUniqueId has " +
                                std::to_string(bytes.size()) + " bytes, not " +
                                std::to_string(sizeof(id.internal)));
      }
      std::memcpy(id.internal, bytes.data(), bytes.size());
    }
  } catch (const CommunicatorError&) {
    throw;
  } catch (const std::exception& e) {
    throw CommunicatorError(where + ": exchanging the ncclUniqueId: " + e.what());
  }

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t started = ncclCommInitRankConfig(&state_->comm, size_, id, rank_, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    Fail(*state_, where + ": ncclCommInitRankConfig: " + NcclText(state_->comm, started));
  }
  AwaitNccl(*state_, started, where, deadline, options.timeout);
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_->index);
  if (state_->comm != nullptr) {
    // Finalize flushes outstanding work, bounded like everything else; abort if that fails.
    const auto deadline = Clock::now() + device_->timeout;
    ncclResult_t result = ncclCommFinalize(state_->comm);
    while (result == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::yield();
      if (ncclCommGetAsyncError(state_->comm, &result) != ncclSuccess) {
        result = ncclInternalError;
      }
    }
    if (result == ncclSuccess) {
      ncclCommDestroy(state_->comm);
    } else {
      ncclCommAbort(state_->comm);
    }
  }
}

std::unique_ptr<Buffers> NcclCommunicator::Allocate(std::size_t send_elems,
                                                   std::size_t recv_elems) {
  return std::make_unique<NcclBuffers>(this, device_, send_elems, recv_elems);
}

void NcclCommunicator::Synchronize() {
  const std::string what = "nccl synchronize on " + RankOf(rank_, size_);
  if (!state_->broken.empty()) {
    throw CommunicatorError(what + ": communicator broken by an earlier error: " + state_->broken);
  }
  cudaSetDevice(device_->index);
  const auto deadline = Clock::now() + device_->timeout;
  while (true) {
    const cudaError_t status = cudaStreamQuery(device_->stream);
    if (status == cudaSuccess) {
      return;
    }
    if (status != cudaErrorNotReady) {
      Fail(*state_, what + ": " + CudaText(status));
    }
    ncclResult_t async = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(state_->comm, &async);
    if (query != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
      Fail(*state_, what + ": " + NcclText(state_->comm, query != ncclSuccess ? query : async));
    }
    if (Clock::now() > deadline) {
      Fail(*state_, what + ": timed out after " + std::to_string(device_->timeout.count()) +
                        " ms");
    }
    std::this_thread::yield();
  }
}

void NcclCommunicator::DoRun(Collective collective, Buffers& buffers, std::size_t count,
                             Peers peers) {
  auto* nccl_buffers = dynamic_cast<NcclBuffers*>(&buffers);
  if (nccl_buffers == nullptr || nccl_buffers->owner() != this) {
    throw std::invalid_argument(std::string(CollectiveName(collective)) +
                                ": buffers were allocated by another communicator");
  }
  std::string what = "nccl " + std::string(CollectiveName(collective));
  if (collective == Collective::kSendRecv) {
    what += " (send to rank " + std::to_string(peers.send_to) + ", receive from rank " +
            std::to_string(peers.recv_from) + ")";
  }
  what += " on " + RankOf(rank_, size_);
  if (!state_->broken.empty()) {
    throw CommunicatorError(what + ": communicator broken by an earlier error: " + state_->broken);
  }
  cudaSetDevice(device_->index);
  const auto deadline = Clock::now() + device_->timeout;
  const float* send = nccl_buffers->send();
  float* recv = nccl_buffers->recv();
  ncclComm_t comm = state_->comm;
  cudaStream_t stream = device_->stream;
  ncclResult_t result = ncclSuccess;
  switch (collective) {
    case Collective::kAllReduce:
      result = ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream);
      break;
    case Collective::kAllGather:
      result = ncclAllGather(send, recv, count, ncclFloat, comm, stream);
      break;
    case Collective::kReduceScatter:
      result = ncclReduceScatter(send, recv, count, ncclFloat, ncclSum, comm, stream);
      break;
    case Collective::kBroadcast:
      result = ncclBroadcast(send, recv, count, ncclFloat, kBroadcastRoot, comm, stream);
      break;
    case Collective::kAllToAll:
      result = ncclAlltoAll(send, recv, count, ncclFloat, comm, stream);
      break;
    case Collective::kSendRecv: {
      if (peers.send_to == rank_) {
        const cudaError_t copied = cudaMemcpyAsync(recv, send, count * sizeof(float),
                                                   cudaMemcpyDeviceToDevice, stream);
        if (copied != cudaSuccess) {
          Fail(*state_, what + ": " + CudaText(copied));
        }
        return;
      }
      result = ncclGroupStart();
      if (result == ncclSuccess) {
        result = ncclSend(send, count, ncclFloat, peers.send_to, comm, stream);
      }
      if (result == ncclSuccess) {
        result = ncclRecv(recv, count, ncclFloat, peers.recv_from, comm, stream);
      }
      // Always close the group; its answer covers the operations inside it.
      const ncclResult_t ended = ncclGroupEnd();
      if (result == ncclSuccess) {
        result = ended;
      }
      break;
    }
  }
  AwaitNccl(*state_, result, what, deadline, device_->timeout);
}

std::vector<double> NcclCommunicator::AllGatherDouble(double value) {
  const std::string what = "nccl all_gather of one double on " + RankOf(rank_, size_);
  if (!state_->broken.empty()) {
    throw CommunicatorError(what + ": communicator broken by an earlier error: " + state_->broken);
  }
  cudaSetDevice(device_->index);
  const auto deadline = Clock::now() + device_->timeout;
  const cudaError_t in = cudaMemcpyAsync(state_->gather_in, &value, sizeof(value),
                                         cudaMemcpyHostToDevice, device_->stream);
  if (in != cudaSuccess) {
    Fail(*state_, what + ": " + CudaText(in));
  }
  AwaitNccl(*state_,
            ncclAllGather(state_->gather_in, state_->gather_out, 1, ncclDouble, state_->comm,
                          device_->stream),
            what, deadline, device_->timeout);
  Synchronize();
  std::vector<double> values(static_cast<std::size_t>(size_));
  const cudaError_t out =
      cudaMemcpyAsync(values.data(), state_->gather_out, sizeof(double) * values.size(),
                      cudaMemcpyDeviceToHost, device_->stream);
  if (out != cudaSuccess) {
    Fail(*state_, what + ": " + CudaText(out));
  }
  Synchronize();
  return values;
}

}  // namespace ringleader::collectives
