// Does recording metrics slow the probes? 4 ranks as threads (GlooCommunicator over a HashStore)
// run all_reduce probes at one size in alternating blocks: "off" runs probes only; "on" also
// records every row in SidecarMetrics (as the sidecar does) while a thread scrapes each rank's
// EndpointServer /metrics every --scrape-ms (100 ms: far more often than Prometheus' usual 15-60
// s, to make the cost visible). Prints the median probe time per mode and their ratio, and -
// because on 2 shared cores that A/B comparison moves by several percent from run to run - the
// two costs metrics add, timed directly: recording one probe's row, and serving one scrape.
//   metrics_overhead_bench [--bytes 4194304] [--blocks 40] [--probes 10] [--scrape-ms 100]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/rendezvous/hash_store.h>
#include <prometheus/registry.h>

#include "sidecar/collectives/gloo_communicator.h"
#include "sidecar/collectives/probe.h"
#include "sidecar/service/endpoint_server.h"
#include "sidecar/service/sidecar_metrics.h"
#include "tests/bench/bench_args.h"

namespace ringleader::bench {
namespace {

using collectives::Collective;
constexpr int kRanks = 4;

struct Args {
  std::size_t bytes = std::size_t{4} << 20;
  int blocks = 40;  // alternating off, on, off, on, ...
  int probes = 10;  // per block
  int scrape_ms = 100;  // between scrapes of every rank
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--bytes") {
      args.bytes = std::stoul(value);
    } else if (flag == "--blocks") {
      args.blocks = std::stoi(value);
    } else if (flag == "--probes") {
      args.probes = std::stoi(value);
    } else if (flag == "--scrape-ms") {
      args.scrape_ms = std::stoi(value);
    } else {
      return false;
    }
    return true;
  });
  return args;
}

// GET /metrics over HTTP/1.0; returns the bytes read (0 on failure).
std::size_t Scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return 0;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::size_t total = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[16384];
      ssize_t n = 0;
      while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) {
        total += static_cast<std::size_t>(n);
      }
    }
  }
  ::close(fd);
  return total;
}

struct Rank {
  prometheus::Registry registry;
  std::unique_ptr<sidecar::SidecarMetrics> metrics;
  std::unique_ptr<sidecar::EndpointServer> endpoint;
  std::vector<double> block_medians_us;  // rank 0's probe times, one median per block
  std::vector<double> record_ns;         // recording each "on" probe's row in the metrics
};

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < kRanks; ++r) {
    auto rank = std::make_unique<Rank>();
    rank->metrics = std::make_unique<sidecar::SidecarMetrics>(rank->registry, r, kRanks);
    rank->endpoint = std::make_unique<sidecar::EndpointServer>(
        "127.0.0.1", 0, rank->registry, [] { return contract::Summary{}; });
    ranks.push_back(std::move(rank));
  }

  // Recording on a quiet thread first (its own registry): the cost without the ranks' contention.
  double quiet_record_us = 0;
  {
    prometheus::Registry registry;
    sidecar::SidecarMetrics metrics(registry, 0, kRanks);
    constexpr int kRows = 10'000;
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < kRows; ++i) {
      metrics.ObserveProbe(Collective::kAllReduce, args.bytes, 1e9, 1.5e9, 1e-3);
      metrics.AddWrongElements(Collective::kAllReduce, 0);
      metrics.CountProbeRun(Collective::kAllReduce, sidecar::ProbeResult::kOk);
    }
    quiet_record_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started)
            .count() /
        kRows;
  }

  std::atomic<bool> scraping{false};
  std::atomic<bool> finished{false};
  std::atomic<std::size_t> scrapes{0};
  std::vector<double> scrape_us;  // each scrape's wall time, an upper bound on the server's CPU
  std::thread scraper([&] {
    auto next = std::chrono::steady_clock::now();
    while (!finished) {
      next += std::chrono::milliseconds(args.scrape_ms);
      if (scraping) {
        for (const auto& rank : ranks) {
          const auto started = std::chrono::steady_clock::now();
          if (Scrape(rank->endpoint->port()) > 0) {
            ++scrapes;
            scrape_us.push_back(std::chrono::duration<double, std::micro>(
                                    std::chrono::steady_clock::now() - started)
                                    .count());
          }
        }
      }
      std::this_thread::sleep_until(next);
    }
  });

  gloo::rendezvous::HashStore store;
  const std::size_t count = args.bytes / sizeof(float);
  std::vector<double> off_us;
  std::vector<double> on_us;
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        collectives::GlooOptions options;
        options.rank = r;
        options.size = kRanks;
        options.prefix = "metrics-bench";
        options.hostname = "127.0.0.1";
        collectives::GlooCommunicator comm(store, options);
        Rank& self = *ranks[static_cast<std::size_t>(r)];
        for (int block = 0; block < args.blocks; ++block) {
          const bool on = block % 2 == 1;
          if (r == 0) {
            scraping = on;
          }
          std::vector<double> times;
          for (int p = 0; p < args.probes; ++p) {
            const collectives::ProbeRow row = collectives::RunProbe(comm, Collective::kAllReduce, count);
            if (on) {
              const auto started = std::chrono::steady_clock::now();
              self.metrics->ObserveProbe(row.collective, row.bytes, row.algbw_gbps * 1e9,
                                         row.busbw_gbps * 1e9, row.time_us / 1e6);
              self.metrics->AddWrongElements(row.collective, row.wrong);
              self.metrics->CountProbeRun(row.collective, sidecar::ProbeResult::kOk);
              self.record_ns.push_back(std::chrono::duration<double, std::nano>(
                                           std::chrono::steady_clock::now() - started)
                                           .count());
            }
            times.push_back(row.time_us);
          }
          self.block_medians_us.push_back(Median(times));
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        failed = true;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  finished = true;
  scraper.join();
  if (failed) {
    return 1;
  }
  // Every rank reports the same (slowest-rank) probe time; rank 0's list is the record.
  const std::vector<double>& blocks = ranks[0]->block_medians_us;
  std::vector<double> pair_ratios;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    (b % 2 == 1 ? on_us : off_us).push_back(blocks[b]);
    if (b % 2 == 1) {
      pair_ratios.push_back(blocks[b] / blocks[b - 1]);
    }
  }
  std::printf("all_reduce %zu B, %d ranks, %d blocks x %d probes, %zu scrapes\n", args.bytes,
              kRanks, args.blocks, args.probes, scrapes.load());
  std::printf("metrics off: median probe time %.1f us\n", Median(off_us));
  std::printf("metrics on:  median probe time %.1f us\n", Median(on_us));
  std::printf("on/off ratio of medians %.4f; median of paired block ratios %.4f\n",
              Median(on_us) / Median(off_us), Median(pair_ratios));
  // The direct costs, against the probe time they would add to.
  std::vector<double> record_ns;
  for (const auto& rank : ranks) {
    record_ns.insert(record_ns.end(), rank->record_ns.begin(), rank->record_ns.end());
  }
  const double probe_us = Median(off_us);
  const double record_us = Median(record_ns) / 1e3;
  const double scrape = scrape_us.empty() ? 0 : Median(scrape_us);
  std::printf("recording a probe's row: median %.2f us (%.4f%% of the median probe time); "
              "%.2f us on a quiet thread\n",
              record_us, 100 * record_us / probe_us, quiet_record_us);
  std::printf("serving a scrape: median %.0f us wall; one scrape every %d ms is %.4f%% of a core\n",
              scrape, args.scrape_ms, 100 * scrape / (args.scrape_ms * 1e3));
  return 0;
}

}  // namespace
}  // namespace ringleader::bench

int main(int argc, char** argv) {
  try {
    return ringleader::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metrics_overhead_bench: %s\n", e.what());
    return 1;
  }
}
