// Does the sidecar's probe path cost anything over calling Gloo directly? The cross-process
// comparison (allreduce_compare.sh) moves by +-15% from run to run on 2 cores, far more than the
// 5% target. Here 4 ranks are threads of one process, each with one GlooCommunicator, and each
// block times three ways of running all_reduce over the same connections:
//   - the sidecar's probe: RunProbe, in buffers kept across probes as Sweep keeps them;
//   - the communicator alone: Communicator::Run in a loop, timed as below;
//   - Gloo directly: gloo::allreduce on the communicator's own Gloo context, with its own
//     vectors, timed as gloo_allreduce_direct times it (warm-up, barrier, timed calls, the
//     slowest rank's mean).
// The three share one mesh because two meshes in one process do not run at the same speed: with
// a second mesh for the direct calls, the ratio moved from 0.96 to 1.18 with how many calls each
// mesh got per block (docs/benchmarks.md). The order rotates from block to block, and the
// per-block ratios' median comes with a bootstrap 95% interval.
//   probe_overhead_bench [--bytes 1048576,16777216,67108864] [--blocks 20] [--warmup 1]
//                        [--iters 4]
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gloo/context.h>
#include <gloo/rendezvous/hash_store.h>

#include "sidecar/collectives/gloo_communicator.h"
#include "sidecar/collectives/probe.h"
#include "tests/bench/bench_args.h"
#include "tests/bench/gloo_direct_timing.h"

namespace ringleader::bench {
namespace {

constexpr int kRanks = 4;

struct Args {
  std::vector<std::size_t> bytes{std::size_t{1} << 20, std::size_t{16} << 20,
                                 std::size_t{64} << 20};
  int blocks = 20;
  int warmup = 1;
  int iters = 4;
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--bytes") {
      args.bytes = ParseList<std::size_t>(value);
    } else if (flag == "--blocks") {
      args.blocks = std::stoi(value);
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

// The sidecar's communicator without the probe runner: Communicator::Run timed as RunProbe times
// it (the communicator's own AllGatherDouble as the barrier) but with no input fill or buffer
// handling, so a gap to the direct calls splits into the communicator's share and the runner's.
double CommunicatorMicros(collectives::Communicator& comm, collectives::Buffers& buffers,
                          std::size_t count, const Args& args) {
  for (int i = 0; i < args.warmup; ++i) {
    comm.Run(collectives::Collective::kAllReduce, buffers, count);
  }
  comm.AllGatherDouble(0.0);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < args.iters; ++i) {
    comm.Run(collectives::Collective::kAllReduce, buffers, count);
  }
  comm.Synchronize();
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  const std::vector<double> all = comm.AllGatherDouble(elapsed.count() / args.iters);
  return *std::max_element(all.begin(), all.end());
}

struct Pairs {
  std::vector<double> sidecar_us;
  std::vector<double> direct_us;
  std::vector<double> communicator_us;
};

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  gloo::rendezvous::HashStore store;
  std::vector<Pairs> results(args.bytes.size());  // written by rank 0 only
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        collectives::GlooOptions options;
        options.rank = rank;
        options.size = kRanks;
        options.prefix = "sidecar";
        options.hostname = "127.0.0.1";
        collectives::GlooCommunicator comm(store, options);
        const std::shared_ptr<gloo::Context>& direct = comm.gloo_context();
        collectives::ProbeBuffers buffers(comm);  // as Sweep and the monitor keep theirs
        collectives::ProbeOptions probe;
        probe.warmup_iters = args.warmup;
        probe.iters = args.iters;
        probe.check = false;  // the direct side checks nothing either
        for (std::size_t s = 0; s < args.bytes.size(); ++s) {
          const std::size_t count = args.bytes[s] / sizeof(float);
          std::vector<float> in(count, static_cast<float>(rank + 1));
          std::vector<float> out(count, 0.0f);
          for (int block = 0; block < args.blocks; ++block) {
            double sidecar = 0;
            double plain = 0;
            double communicator = 0;
            const auto run_sidecar = [&] {
              sidecar = collectives::RunProbe(comm, collectives::Collective::kAllReduce, count,
                                              probe, &buffers)
                            .time_us;
            };
            const auto run_plain = [&] {
              plain = 1e6 * TimeGlooAllReduce(direct, in.data(), out.data(), count, args.warmup,
                                              args.iters);
            };
            const auto run_communicator = [&] {
              communicator = CommunicatorMicros(comm, buffers.AtLeast(count, count), count, args);
            };
            // Rotate which side goes first, so none always runs on a warmer machine.
            const std::array<std::function<void()>, 3> sides = {run_sidecar, run_plain,
                                                                run_communicator};
            for (int k = 0; k < 3; ++k) {
              sides[static_cast<std::size_t>((block + k) % 3)]();
            }
            if (rank == 0) {
              results[s].sidecar_us.push_back(sidecar);
              results[s].direct_us.push_back(plain);
              results[s].communicator_us.push_back(communicator);
            }
          }
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        failed = true;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  if (failed) {
    return 1;
  }
  std::printf("all_reduce, %d ranks as threads, %d blocks, warm-up %d, %d timed calls\n", kRanks,
              args.blocks, args.warmup, args.iters);
  std::printf(
      "| size | sidecar probe (us) | communicator alone (us) | direct Gloo (us) | probe / direct, "
      "ratio of medians | probe / direct, median paired [95%% interval] | communicator / direct, "
      "median paired [95%% interval] |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (std::size_t s = 0; s < args.bytes.size(); ++s) {
    const Pairs& pairs = results[s];
    // "1.0123 [0.9950, 1.0301]": the median of per-block ratios to direct, and its interval.
    const auto paired = [&](const std::vector<double>& side) {
      std::vector<double> ratios;
      for (std::size_t b = 0; b < side.size(); ++b) {
        ratios.push_back(side[b] / pairs.direct_us[b]);
      }
      const auto [low, high] = MedianInterval95(ratios);
      char text[64];
      std::snprintf(text, sizeof(text), "%.4f [%.4f, %.4f]", Median(ratios), low, high);
      return std::string(text);
    };
    const double sidecar = Median(pairs.sidecar_us);
    const double plain = Median(pairs.direct_us);
    std::printf("| %zu MiB | %.0f | %.0f | %.0f | %.4f | %s | %s |\n", args.bytes[s] >> 20, sidecar,
                Median(pairs.communicator_us), plain, sidecar / plain,
                paired(pairs.sidecar_us).c_str(), paired(pairs.communicator_us).c_str());
  }
  return 0;
}

}  // namespace
}  // namespace ringleader::bench

int main(int argc, char** argv) {
  try {
    return ringleader::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probe_overhead_bench: %s\n", e.what());
    return 1;
  }
}
