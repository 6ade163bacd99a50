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
// RunProbe's time is the timed calls alone. So a second part times the preflight end to end
// (what it does around the collectives: buffers, input fill, barriers, gathering the times, the
// checked call and its comparison, the verdict and the table) against the same collective calls
// made with nothing around them, in alternating order on the same mesh, as a ratio per block.
// Its defaults are the sidecar's warm-up and iterations over a smaller range than its 1-64 MiB.
//   probe_overhead_bench [--bytes 1048576,16777216,67108864] [--blocks 20] [--warmup 1]
//                        [--iters 4] [--preflight-min-bytes 1048576]
//                        [--preflight-max-bytes 4194304] [--preflight-factor 2]
//                        [--preflight-warmup 5] [--preflight-iters 20] [--preflight-blocks 5]
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

#include "sidecar/app/preflight_verdict.h"
#include "sidecar/collectives/gloo_communicator.h"
#include "sidecar/collectives/probe.h"
#include "tests/bench/bench_args.h"
#include "tests/bench/gloo_direct_timing.h"

namespace ringleader::bench {
namespace {

constexpr int kRanks = 4;
using collectives::Collective;

struct Args {
  std::vector<std::size_t> bytes{std::size_t{1} << 20, std::size_t{16} << 20,
                                 std::size_t{64} << 20};
  int blocks = 20;
  int warmup = 1;
  int iters = 4;
  collectives::SweepRange preflight{std::size_t{1} << 20, std::size_t{4} << 20, 2};
  int preflight_warmup = 5;  // SidecarConfig's preflight_warmup_iterations
  int preflight_iters = 20;  // and preflight_iterations
  int preflight_blocks = 5;
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
    } else if (flag == "--preflight-min-bytes") {
      args.preflight.min_bytes = std::stoull(value);
    } else if (flag == "--preflight-max-bytes") {
      args.preflight.max_bytes = std::stoull(value);
    } else if (flag == "--preflight-factor") {
      args.preflight.factor = std::stoull(value);
    } else if (flag == "--preflight-warmup") {
      args.preflight_warmup = std::stoi(value);
    } else if (flag == "--preflight-iters") {
      args.preflight_iters = std::stoi(value);
    } else if (flag == "--preflight-blocks") {
      args.preflight_blocks = std::stoi(value);
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

// The preflight on one rank as the sidecar's RunPreflight (sidecar/app/sidecar_run.cc) runs it:
// its sweep, the verdict and the table, less the metrics and /summary updates.
std::vector<collectives::ProbeRow> Preflight(collectives::Communicator& comm,
                                             const collectives::SweepRange& sweep,
                                             const collectives::ProbeOptions& options) {
  std::vector<collectives::ProbeRow> measured = collectives::PreflightSweep(comm, sweep, options);
  const sidecar::PreflightVerdict verdict = sidecar::JudgePreflight(measured, 0);
  const std::string table = collectives::FormatTable(measured);
  if (!verdict.passed) {
    throw std::runtime_error("the preflight failed: " + verdict.reason + "\n" + table);
  }
  return measured;
}

// The collective calls that made `rows` and nothing else: per row the same warm-up, timed and
// checked calls, each group followed by Synchronize as in the probe, on buffers kept across
// blocks (the preflight's sweeps allocate theirs, which is part of what they cost).
void CollectivesOf(collectives::Communicator& comm, const std::vector<collectives::ProbeRow>& rows,
                   const collectives::ProbeOptions& options, collectives::ProbeBuffers& kept) {
  for (const collectives::ProbeRow& row : rows) {
    const collectives::BufferElems elems = collectives::ElemsFor(row.collective, row.count, comm.size());
    collectives::Buffers& buffers = kept.AtLeast(elems.send, elems.recv);
    // RunProbe's sendrecv peers when ProbeOptions::peers is unset: the ring.
    const collectives::Peers peers =
        row.collective == Collective::kSendRecv
            ? collectives::PeersFor(collectives::PairPattern::kRingNeighbour, comm.rank(), comm.size())
            : collectives::Peers{};
    for (int i = 0; i < options.warmup_iters; ++i) {
      comm.Run(row.collective, buffers, row.count, peers);
    }
    comm.Synchronize();
    for (int i = 0; i < options.iters; ++i) {
      comm.Run(row.collective, buffers, row.count, peers);
    }
    comm.Synchronize();
    if (options.check) {
      comm.Run(row.collective, buffers, row.count, peers);
      comm.Synchronize();
    }
  }
}

// The slowest rank's wall seconds for `work`, all ranks starting together.
double SlowestWallSeconds(collectives::Communicator& comm, const std::function<void()>& work) {
  comm.AllGatherDouble(0.0);
  const auto start = std::chrono::steady_clock::now();
  work();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  const std::vector<double> all = comm.AllGatherDouble(elapsed.count());
  return *std::max_element(all.begin(), all.end());
}

struct PreflightTimes {
  std::vector<double> end_to_end_s;
  std::vector<double> collectives_s;
  std::vector<double> reported_s;  // the rows' time_us x iters: the timed calls as reported
};

// "1.0123 [0.9950, 1.0301]": the median of the per-block ratios and its bootstrap 95% interval.
std::string PairedRatio(const std::vector<double>& numerator, const std::vector<double>& denominator) {
  std::vector<double> ratios;
  for (std::size_t b = 0; b < numerator.size(); ++b) {
    ratios.push_back(numerator[b] / denominator[b]);
  }
  const auto [low, high] = MedianInterval95(ratios);
  char text[64];
  std::snprintf(text, sizeof(text), "%.4f [%.4f, %.4f]", Median(ratios), low, high);
  return text;
}

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  gloo::rendezvous::HashStore store;
  std::vector<Pairs> results(args.bytes.size());  // written by rank 0 only
  PreflightTimes preflight_times;                  // written by rank 0 only
  std::vector<collectives::ProbeRow> preflight_rows;
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
        if (args.preflight_blocks > 0) {
          collectives::ProbeOptions preflight;  // as RunPreflight sets it: check stays on
          preflight.warmup_iters = args.preflight_warmup;
          preflight.iters = args.preflight_iters;
          // One untimed preflight first: the rows say which calls it makes, and the mesh warms.
          const std::vector<collectives::ProbeRow> rows = Preflight(comm, args.preflight, preflight);
          for (int block = 0; block < args.preflight_blocks; ++block) {
            std::vector<collectives::ProbeRow> timed_rows;
            const auto run_preflight = [&] {
              return SlowestWallSeconds(comm, [&] { timed_rows = Preflight(comm, args.preflight, preflight); });
            };
            const auto run_collectives = [&] {
              return SlowestWallSeconds(comm, [&] { CollectivesOf(comm, rows, preflight, buffers); });
            };
            // Alternate which goes first, as the blocks above rotate theirs.
            double end_to_end = 0;
            double alone = 0;
            if (block % 2 == 0) {
              end_to_end = run_preflight();
              alone = run_collectives();
            } else {
              alone = run_collectives();
              end_to_end = run_preflight();
            }
            if (rank == 0) {
              double reported_us = 0;
              for (const collectives::ProbeRow& row : timed_rows) {
                reported_us += row.time_us * preflight.iters;
              }
              preflight_times.end_to_end_s.push_back(end_to_end);
              preflight_times.collectives_s.push_back(alone);
              preflight_times.reported_s.push_back(reported_us / 1e6);
              if (block == 0) {
                preflight_rows = timed_rows;
              }
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
  if (args.blocks > 0) {
    std::printf("all_reduce, %d ranks as threads, %d blocks, warm-up %d, %d timed calls\n", kRanks,
                args.blocks, args.warmup, args.iters);
    std::printf(
        "| size | sidecar probe (us) | communicator alone (us) | direct Gloo (us) | probe / direct, "
        "ratio of medians | probe / direct, median paired [95%% interval] | communicator / direct, "
        "median paired [95%% interval] |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (std::size_t s = 0; s < args.bytes.size(); ++s) {
      const Pairs& pairs = results[s];
      const double sidecar = Median(pairs.sidecar_us);
      const double plain = Median(pairs.direct_us);
      std::printf("| %zu MiB | %.0f | %.0f | %.0f | %.4f | %s | %s |\n", args.bytes[s] >> 20, sidecar,
                  Median(pairs.communicator_us), plain, sidecar / plain,
                  PairedRatio(pairs.sidecar_us, pairs.direct_us).c_str(),
                  PairedRatio(pairs.communicator_us, pairs.direct_us).c_str());
    }
  }
  if (args.preflight_blocks > 0) {
    const PreflightTimes& t = preflight_times;
    std::printf(
        "\nThe preflight end to end against its collective calls alone: all_reduce from %zu to %zu "
        "bytes (factor %zu), then every other collective at %zu bytes, %zu rows; per row warm-up %d, "
        "%d timed calls and 1 checked call; %d ranks as threads, %d blocks, the slowest rank's wall "
        "time\n",
        args.preflight.min_bytes, args.preflight.max_bytes, args.preflight.factor,
        args.preflight.max_bytes, preflight_rows.size(), args.preflight_warmup, args.preflight_iters,
        kRanks, args.preflight_blocks);
    std::printf(
        "| preflight end to end (ms) | its collective calls alone (ms) | timed calls as its rows "
        "report them (ms) | end to end / collectives alone, ratio of medians | end to end / "
        "collectives alone, median paired [95%% interval] | end to end / reported timed calls, "
        "median paired [95%% interval] |\n");
    std::printf("|---|---|---|---|---|---|\n");
    std::printf("| %.1f | %.1f | %.1f | %.4f | %s | %s |\n", 1e3 * Median(t.end_to_end_s),
                1e3 * Median(t.collectives_s), 1e3 * Median(t.reported_s),
                Median(t.end_to_end_s) / Median(t.collectives_s),
                PairedRatio(t.end_to_end_s, t.collectives_s).c_str(),
                PairedRatio(t.end_to_end_s, t.reported_s).c_str());
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
