// Create, list and watch throughput for 10,000 Pods through the operator's client against
// devcluster over real HTTPS, and watch delivery latency. Each repetition starts a fresh
// devcluster in this process; the baseline is a GET of one small object on the same
// connection pool, so the ratios say what a Pod write costs over a bare round trip.
//
//   kube_client_bench [--pods N] [--writers W] [--repetitions R]
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "tests/bench/bench_args.h"
#include "tests/devcluster/devcluster.h"

namespace {

using ringleader::bench::Median;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Settings {
  int pods = 10000;
  int writers = 8;
  int repetitions = 3;
};

Settings ParseArgs(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (value <= 0) {
      throw std::invalid_argument(flag + " needs a positive number");
    }
    if (flag == "--pods") {
      settings.pods = value;
    } else if (flag == "--writers") {
      settings.writers = value;
    } else if (flag == "--repetitions") {
      settings.repetitions = value;
    } else {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
  return settings;
}

// About the size of a Pod the operator writes: 40 env entries, two containers, labels.
json BenchPod(int index) {
  json env = json::array();
  for (int i = 0; i < 40; ++i) {
    env.push_back({{"name", "ENV_" + std::to_string(i)}, {"value", "value-" + std::to_string(i)}});
  }
  const std::string name = "bench-" + std::to_string(index);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"labels", {{"ringleader.dev/job-name", "bench"}, {"ringleader.dev/rank", std::to_string(index)}}}}},
          {"spec",
           {{"containers", json::array({{{"name", "trainer"}, {"image", "example/trainer:1"}, {"env", env}},
                                        {{"name", "sidecar"}, {"image", "ringleader/sidecar:1"}}})}}}};
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1));
  return values[index];
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct RepetitionResult {
  double baseline_get_ms = 0;     // median GET of one ConfigMap
  double create_per_s = 0;        // Pods created per second, W writers
  double create_ms_median = 0;    // one Create call
  double watch_per_s = 0;         // events delivered per second during the creates
  double watch_latency_p50_ms = 0;
  double watch_latency_p99_ms = 0;
  double list_all_ms = 0;         // one unpaged list of every Pod (median of 5)
  double list_paged_ms = 0;       // ListAll in pages of 500 (median of 5)
  double watch_replay_per_s = 0;  // a new watch from RV 0 of the list: every Pod as ADDED
};

RepetitionResult RunOnce(const Settings& settings) {
  namespace kube = ringleader::kube;
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ringleader-kube-bench-" + std::to_string(rd()));
  ringleader::devcluster::Options options;
  options.data_dir = dir.string();
  auto cluster = ringleader::devcluster::DevCluster::Start(options);
  kube::Config config = kube::LoadKubeconfig(cluster->kubeconfig_path());
  kube::ClientOptions client_options;
  client_options.qps = 0;  // measure the client and server, not the limiter
  auto client = kube::MakeClient(config, client_options);
  RepetitionResult result;

  // Baseline: the cheapest round trip the client makes.
  client->Create(kube::ConfigMaps(), "default",
                 {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "baseline"}}}});
  std::vector<double> gets;
  for (int i = 0; i < 200; ++i) {
    const auto start = Clock::now();
    client->Get(kube::ConfigMaps(), "default", "baseline");
    gets.push_back(Millis(Clock::now() - start));
  }
  result.baseline_get_ms = Median(gets);

  // One watcher from the empty list's RV sees every create; arrival minus call start of the
  // matching Create is the delivery latency (it includes the create's own round trip).
  const std::string start_rv = client->List(kube::Pods(), "default").resource_version;
  std::vector<Clock::time_point> sent(static_cast<std::size_t>(settings.pods));
  std::vector<Clock::time_point> seen(static_cast<std::size_t>(settings.pods));
  std::mutex mutex;
  std::condition_variable cv;
  int events = 0;
  std::jthread watcher([&](std::stop_token stop) {
    kube::WatchOptions watch;
    watch.resource_version = start_rv;
    std::string rv = start_rv;
    while (!stop.stop_requested()) {
      watch.resource_version = rv;
      const auto end = client->Watch(kube::Pods(), "default", watch, [&](const kube::WatchEvent& event) {
        if (event.type != kube::WatchEventType::kAdded) {
          return true;
        }
        const auto now = Clock::now();
        rv = kube::ResourceVersionOf(event.object);
        const std::string name = event.object["metadata"]["name"];
        const int index = std::stoi(name.substr(6));
        std::lock_guard lock(mutex);
        seen[static_cast<std::size_t>(index)] = now;
        if (++events == settings.pods) {
          cv.notify_all();
          return false;
        }
        return true;
      }, stop);
      if (end == kube::WatchEnd::kStopped) {
        break;
      }
    }
  });

  std::atomic<int> next{0};
  std::vector<std::vector<double>> create_ms(static_cast<std::size_t>(settings.writers));
  const auto create_start = Clock::now();
  {
    std::vector<std::jthread> writers;
    for (int w = 0; w < settings.writers; ++w) {
      writers.emplace_back([&, w] {
        for (int i = next++; i < settings.pods; i = next++) {
          const json pod = BenchPod(i);
          const auto start = Clock::now();
          {
            std::lock_guard lock(mutex);
            sent[static_cast<std::size_t>(i)] = start;
          }
          client->Create(kube::Pods(), "default", pod);
          create_ms[static_cast<std::size_t>(w)].push_back(Millis(Clock::now() - start));
        }
      });
    }
  }
  const auto create_end = Clock::now();
  {
    std::unique_lock lock(mutex);
    if (!cv.wait_for(lock, std::chrono::seconds(120), [&] { return events == settings.pods; })) {
      throw std::runtime_error("the watch saw " + std::to_string(events) + " of " +
                               std::to_string(settings.pods) + " creates");
    }
  }
  watcher.request_stop();
  watcher.join();
  result.create_per_s = settings.pods / Seconds(create_end - create_start);
  std::vector<double> all_create_ms;
  for (const auto& per_writer : create_ms) {
    all_create_ms.insert(all_create_ms.end(), per_writer.begin(), per_writer.end());
  }
  result.create_ms_median = Median(all_create_ms);
  const auto last_seen = *std::max_element(seen.begin(), seen.end());
  result.watch_per_s = settings.pods / Seconds(last_seen - create_start);
  std::vector<double> latency;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    latency.push_back(Millis(seen[i] - sent[i]));
  }
  // Latency by creation order shows whether the watch keeps up or builds a backlog.
  std::printf("watch latency p50 by tenth of the creates (ms):");
  for (std::size_t tenth = 0; tenth < 10; ++tenth) {
    const auto begin = latency.begin() + static_cast<std::ptrdiff_t>(tenth * latency.size() / 10);
    const auto end = latency.begin() + static_cast<std::ptrdiff_t>((tenth + 1) * latency.size() / 10);
    std::printf(" %.1f", Percentile(std::vector<double>(begin, end), 0.5));
  }
  std::printf("\n");
  result.watch_latency_p50_ms = Percentile(latency, 0.5);
  result.watch_latency_p99_ms = Percentile(latency, 0.99);

  std::vector<double> list_all;
  std::vector<double> list_paged;
  std::string list_rv;
  for (int i = 0; i < 5; ++i) {
    auto start = Clock::now();
    auto listed = client->List(kube::Pods(), "default");
    list_all.push_back(Millis(Clock::now() - start));
    list_rv = listed.resource_version;
    if (static_cast<int>(listed.items.size()) != settings.pods) {
      throw std::runtime_error("list returned " + std::to_string(listed.items.size()) + " Pods");
    }
    start = Clock::now();
    kube::ListOptions paged;
    paged.limit = 500;
    listed = kube::ListAll(*client, kube::Pods(), "default", paged);
    list_paged.push_back(Millis(Clock::now() - start));
    if (static_cast<int>(listed.items.size()) != settings.pods) {
      throw std::runtime_error("paged list returned " + std::to_string(listed.items.size()) + " Pods");
    }
  }
  result.list_all_ms = Median(list_all);
  result.list_paged_ms = Median(list_paged);

  // A watch from resourceVersion "0" replays the current state as ADDED events, as an
  // informer's initial sync would see it.
  int replayed = 0;
  const auto replay_start = Clock::now();
  kube::WatchOptions replay;
  replay.resource_version = "0";
  client->Watch(kube::Pods(), "default", replay, [&](const kube::WatchEvent& event) {
    replayed += event.type == kube::WatchEventType::kAdded ? 1 : 0;
    return replayed < settings.pods;
  });
  if (replayed != settings.pods) {
    throw std::runtime_error("the replay watch saw " + std::to_string(replayed) + " Pods");
  }
  result.watch_replay_per_s = settings.pods / Seconds(Clock::now() - replay_start);

  client.reset();
  cluster->Stop();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Settings settings = ParseArgs(argc, argv);
    std::vector<RepetitionResult> runs;
    for (int r = 0; r < settings.repetitions; ++r) {
      runs.push_back(RunOnce(settings));
      const auto& run = runs.back();
      std::printf("run %d: get %.3f ms, create %.0f/s (%.2f ms each), watch %.0f/s p50 %.1f ms p99 %.1f ms, "
                  "list %.0f ms, paged %.0f ms, replay %.0f/s\n",
                  r + 1, run.baseline_get_ms, run.create_per_s, run.create_ms_median, run.watch_per_s,
                  run.watch_latency_p50_ms, run.watch_latency_p99_ms, run.list_all_ms, run.list_paged_ms,
                  run.watch_replay_per_s);
    }
    auto median = [&](double RepetitionResult::*field) {
      std::vector<double> values;
      for (const auto& run : runs) {
        values.push_back(run.*field);
      }
      return Median(values);
    };
    const double get_ms = median(&RepetitionResult::baseline_get_ms);
    std::printf("\n%d Pods, %d writers, median of %d runs\n\n", settings.pods, settings.writers,
                settings.repetitions);
    std::printf("| measure | median | vs baseline GET |\n|---|---|---|\n");
    std::printf("| GET one ConfigMap (baseline) | %.3f ms | 1 |\n", get_ms);
    const double create_ms = median(&RepetitionResult::create_ms_median);
    std::printf("| Create one Pod (call latency, %d writers) | %.2f ms | %.1fx |\n", settings.writers,
                create_ms, create_ms / get_ms);
    std::printf("| Create throughput | %.0f Pods/s | - |\n", median(&RepetitionResult::create_per_s));
    std::printf("| Watch delivery during the creates | %.0f events/s | - |\n",
                median(&RepetitionResult::watch_per_s));
    std::printf("| Watch latency, Create call to event, p50 | %.1f ms | %.1fx |\n",
                median(&RepetitionResult::watch_latency_p50_ms),
                median(&RepetitionResult::watch_latency_p50_ms) / get_ms);
    std::printf("| Watch latency, Create call to event, p99 | %.1f ms | %.1fx |\n",
                median(&RepetitionResult::watch_latency_p99_ms),
                median(&RepetitionResult::watch_latency_p99_ms) / get_ms);
    const double list_ms = median(&RepetitionResult::list_all_ms);
    std::printf("| List all %d Pods, one response | %.0f ms (%.0f Pods/s) | %.0fx |\n", settings.pods, list_ms,
                settings.pods / (list_ms / 1000), list_ms / get_ms);
    const double paged_ms = median(&RepetitionResult::list_paged_ms);
    std::printf("| List all, pages of 500 | %.0f ms (%.0f Pods/s) | %.0fx |\n", paged_ms,
                settings.pods / (paged_ms / 1000), paged_ms / get_ms);
    std::printf("| Watch from RV 0 (replay of every Pod) | %.0f events/s | - |\n",
                median(&RepetitionResult::watch_replay_per_s));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kube_client_bench: %s\n", e.what());
    return 1;
  }
}
