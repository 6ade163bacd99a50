// The baseline for the sidecar's all_reduce probe: N processes call gloo::allreduce directly
// (TCP on loopback, FileStore rendezvous), timed the way the probe times it: warm-up, a barrier,
// the wall clock around `iters` calls, the slowest rank's mean; busbw = size / t x 2(n-1)/n.
//   gloo_allreduce_direct [--ranks 4] [--min 1048576] [--max 268435456] [--factor 4]
//                         [--warmup 2] [--iters 5]
// Rank 0 prints "bytes busbw_GBps" per size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "tests/bench/bench_args.h"
#include "tests/bench/forked_ranks.h"
#include "tests/bench/gloo_direct_timing.h"

namespace ringleader::bench {
namespace {

struct Args {
  int ranks = 4;
  std::size_t min_bytes = std::size_t{1} << 20;
  std::size_t max_bytes = std::size_t{256} << 20;
  std::size_t factor = 4;
  int warmup = 2;
  int iters = 5;
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
    } else {
      return false;
    }
    return true;
  });
  return args;
}

void RunRank(const Args& args, int rank, const std::string& store_dir) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, args.ranks);
  gloo::rendezvous::FileStore store(store_dir);
  context->connectFullMesh(store, device);
  for (std::size_t bytes = args.min_bytes; bytes <= args.max_bytes; bytes *= args.factor) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> in(count, static_cast<float>(rank + 1));
    std::vector<float> out(count, 0.0f);
    const double seconds =
        TimeGlooAllReduce(context, in.data(), out.data(), count, args.warmup, args.iters);
    const double expected = args.ranks * (args.ranks + 1) / 2.0;
    if (out[0] != static_cast<float>(expected) || out[count - 1] != static_cast<float>(expected)) {
      throw std::runtime_error("wrong all_reduce result");
    }
    if (rank == 0) {
      const double n = args.ranks;
      const double busbw = static_cast<double>(bytes) / seconds / 1e9 * 2.0 * (n - 1) / n;
      std::printf("%zu %.3f\n", bytes, busbw);
      std::fflush(stdout);
    }
  }
}

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  // Each rank is its own process.
  return RunForkedRanks(args.ranks, "gloo-direct", [&](int rank, const std::filesystem::path& dir) {
    RunRank(args, rank, dir.string());
  });
}

}  // namespace
}  // namespace ringleader::bench

int main(int argc, char** argv) {
  try {
    return ringleader::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_allreduce_direct: %s\n", e.what());
    return 1;
  }
}
