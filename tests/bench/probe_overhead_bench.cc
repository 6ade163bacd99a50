// Does the sidecar's probe path cost anything over calling Gloo directly? The cross-process
// comparison (allreduce_compare.sh) moves by +-15% from run to run on 2 cores, far more than the
// 5% target. Here 4 ranks are threads of one process that hold two Gloo meshes each: the
// sidecar's (GlooCommunicator, timed by RunProbe in buffers kept across probes, as Sweep keeps
// them) and a plain gloo::rendezvous::Context (timed the same way: warm-up, barrier, timed calls,
// slowest rank's mean). Each block runs both, in alternating order, so drift and noise fall on
// both sides of every pair.
//   probe_overhead_bench [--bytes 1048576,16777216,67108864] [--blocks 20] [--warmup 1]
//                        [--iters 4]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "sidecar/collectives/gloo_communicator.h"
#include "sidecar/collectives/probe.h"
#include "tests/bench/bench_args.h"

namespace ringleader::bench {
namespace {

constexpr int kRanks = 4;
using ReduceFn = void (*)(void*, const void*, const void*, std::size_t);

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

void AllReduce(const std::shared_ptr<gloo::Context>& context, float* in, float* out,
               std::size_t count) {
  gloo::AllreduceOptions opts(context);
  opts.setInput(in, count);
  opts.setOutput(out, count);
  opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
  gloo::allreduce(opts);
}

// The slowest rank's value, on every rank.
double Slowest(const std::shared_ptr<gloo::Context>& context, double seconds) {
  gloo::AllreduceOptions opts(context);
  opts.setOutput(&seconds, 1);
  opts.setReduceFunction(static_cast<ReduceFn>(&gloo::max<double>));
  gloo::allreduce(opts);
  return seconds;
}

// What gloo_allreduce_direct times: warm-up, barrier, timed calls, the slowest rank's mean (us).
double DirectMicros(const std::shared_ptr<gloo::Context>& context, std::vector<float>& in,
                    std::vector<float>& out, const Args& args) {
  for (int i = 0; i < args.warmup; ++i) {
    AllReduce(context, in.data(), out.data(), in.size());
  }
  gloo::BarrierOptions barrier(context);
  gloo::barrier(barrier);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < args.iters; ++i) {
    AllReduce(context, in.data(), out.data(), in.size());
  }
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
  return Slowest(context, elapsed.count() / args.iters);
}

struct Pairs {
  std::vector<double> sidecar_us;
  std::vector<double> direct_us;
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
        gloo::transport::tcp::attr attr;
        attr.hostname = "127.0.0.1";
        auto device = gloo::transport::tcp::CreateDevice(attr);
        auto direct = std::make_shared<gloo::rendezvous::Context>(rank, kRanks);
        gloo::rendezvous::PrefixStore direct_store("direct", store);
        direct->connectFullMesh(direct_store, device);
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
            // Alternate which side goes first, so neither always runs on a warmer machine.
            if (block % 2 == 0) {
              sidecar = collectives::RunProbe(comm, collectives::Collective::kAllReduce, count,
                                              probe, &buffers)
                            .time_us;
              plain = DirectMicros(direct, in, out, args);
            } else {
              plain = DirectMicros(direct, in, out, args);
              sidecar = collectives::RunProbe(comm, collectives::Collective::kAllReduce, count,
                                              probe, &buffers)
                            .time_us;
            }
            if (rank == 0) {
              results[s].sidecar_us.push_back(sidecar);
              results[s].direct_us.push_back(plain);
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
  std::printf("| size | sidecar probe (us) | direct Gloo (us) | ratio of medians | median paired ratio |\n");
  std::printf("|---|---|---|---|---|\n");
  for (std::size_t s = 0; s < args.bytes.size(); ++s) {
    std::vector<double> ratios;
    for (std::size_t b = 0; b < results[s].sidecar_us.size(); ++b) {
      ratios.push_back(results[s].sidecar_us[b] / results[s].direct_us[b]);
    }
    const double sidecar = Median(results[s].sidecar_us);
    const double plain = Median(results[s].direct_us);
    std::printf("| %zu MiB | %.0f | %.0f | %.4f | %.4f |\n", args.bytes[s] >> 20, sidecar, plain,
                sidecar / plain, Median(ratios));
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
