// The baseline for the preflight's NCCL all_reduce: N processes call ncclAllReduce directly, timed
// the way the probe times it (warm-up, the wall clock around `iters` calls and a stream sync, the
// slowest rank's mean), with nccl-tests' busbw from the sidecar's own bus_bandwidth.h. Each rank
// may be another "host" to NCCL through NCCL_HOSTID (--host-ids), so several ranks can share one
// GPU and talk over NET/Socket, which is how tests/gpu/device_check.sh runs it on one GPU.
//   nccl_allreduce_direct [--ranks 2] [--min 1048576] [--max 268435456] [--factor 4]
//                         [--warmup 5] [--iters 20] [--host-ids 1]
// Rank 0 prints "bytes busbw_GBps algbw_GBps" per size (busbw is 0 for one rank).
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "sidecar/collectives/bus_bandwidth.h"
#include "tests/bench/bench_args.h"
#include "tests/bench/forked_ranks.h"

namespace ringleader::bench {
namespace {

struct Args {
  int ranks = 2;
  std::size_t min_bytes = std::size_t{1} << 20;
  std::size_t max_bytes = std::size_t{256} << 20;
  std::size_t factor = 4;
  int warmup = 5;
  int iters = 20;
  bool host_ids = true;  // NCCL_HOSTID=nccl-direct-host-<rank> in each rank
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--ranks") {
      args.ranks = std::stoi(value);
    } else if (flag == "--min") {
      args.min_bytes = std::stoul(value);
    } else if (flag == "--max") {
      args.max_bytes = std::stoul(value);
    } else if (flag == "--factor") {
      args.factor = std::stoul(value);
    } else if (flag == "--warmup") {
      args.warmup = std::stoi(value);
    } else if (flag == "--iters") {
      args.iters = std::stoi(value);
    } else if (flag == "--host-ids") {
      args.host_ids = value != "0";
    } else {
      return false;
    }
    return true;
  });
  return args;
}

void Check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(error));
  }
}

void Check(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(result));
  }
}

// Rank 0 publishes the unique id in a file (written whole, then renamed); the others wait for it.
ncclUniqueId ShareId(int rank, const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "id";
  ncclUniqueId id{};
  if (rank == 0) {
    Check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::ofstream(dir / "id.tmp", std::ios::binary).write(id.internal, sizeof(id.internal));
    std::filesystem::rename(dir / "id.tmp", path);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("no unique id from rank 0 within 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream(path, std::ios::binary).read(id.internal, sizeof(id.internal));
  return id;
}

void RunRank(const Args& args, int rank, const std::filesystem::path& dir) {
  if (args.host_ids) {
    ::setenv("NCCL_HOSTID", ("nccl-direct-host-" + std::to_string(rank)).c_str(), 1);
  }
  int devices = 0;
  Check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  Check(cudaSetDevice(rank % devices), "cudaSetDevice");
  const ncclUniqueId id = ShareId(rank, dir);
  ncclComm_t comm = nullptr;
  Check(ncclCommInitRank(&comm, args.ranks, id, rank), "ncclCommInitRank");
  cudaStream_t stream = nullptr;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  float* send = nullptr;
  float* recv = nullptr;
  double* seconds_device = nullptr;
  Check(cudaMalloc(&send, args.max_bytes), "cudaMalloc");
  Check(cudaMalloc(&recv, args.max_bytes), "cudaMalloc");
  Check(cudaMalloc(&seconds_device, sizeof(double)), "cudaMalloc");
  Check(cudaMemset(send, 0, args.max_bytes), "cudaMemset");
  for (std::size_t bytes = args.min_bytes; bytes <= args.max_bytes; bytes *= args.factor) {
    const std::size_t count = collectives::CountPerRank(collectives::Collective::kAllReduce, bytes, args.ranks);
    for (int i = 0; i < args.warmup; ++i) {
      Check(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream), "ncclAllReduce");
    }
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < args.iters; ++i) {
      Check(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream), "ncclAllReduce");
    }
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() / args.iters;
    // The slowest rank's mean, as the probe reports.
    Check(cudaMemcpy(seconds_device, &seconds, sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
    Check(ncclAllReduce(seconds_device, seconds_device, 1, ncclDouble, ncclMax, comm, stream), "ncclAllReduce");
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    Check(cudaMemcpy(&seconds, seconds_device, sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (rank == 0) {
      const std::size_t reported = collectives::ReportedBytes(collectives::Collective::kAllReduce, count, args.ranks);
      const collectives::Bandwidth bandwidth =
          collectives::ComputeBandwidth(collectives::Collective::kAllReduce, reported, seconds, args.ranks);
      std::printf("%zu %.3f %.3f\n", reported, bandwidth.busbw_gbps, bandwidth.algbw_gbps);
      std::fflush(stdout);
    }
  }
  cudaFree(send);
  cudaFree(recv);
  cudaFree(seconds_device);
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
}

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  // Each rank is its own process and initialises CUDA after the fork.
  return RunForkedRanks(args.ranks, "nccl-direct", [&](int rank, const std::filesystem::path& dir) {
    RunRank(args, rank, dir);
  });
}

}  // namespace
}  // namespace ringleader::bench

int main(int argc, char** argv) {
  try {
    return ringleader::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nccl_allreduce_direct: %s\n", e.what());
    return 1;
  }
}
