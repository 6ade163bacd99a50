#include "sidecar/app/sidecar_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <prometheus/registry.h>

#include "sidecar/app/gloo_store_adapter.h"
#include "sidecar/app/preflight_verdict.h"
#include "sidecar/collectives/bus_bandwidth.h"
#include "sidecar/collectives/gloo_communicator.h"
#include "sidecar/collectives/local_ranks.h"
#include "sidecar/collectives/probe.h"
#include "sidecar/contract/summary.h"
#include "sidecar/rendezvous/join.h"
#include "sidecar/rendezvous/peer_diagnosis.h"
#include "sidecar/rendezvous/store_client.h"
#include "sidecar/rendezvous/store_server.h"
#include "sidecar/rendezvous/torch_store_server.h"
#include "sidecar/service/contract_file.h"
#include "sidecar/service/endpoint_server.h"
#include "sidecar/service/preflight_result.h"
#include "sidecar/service/profiler_listener.h"
#include "sidecar/service/sidecar_metrics.h"
#include "sidecar/service/training_collectives.h"
#include "sidecar/service/training_report.h"
#include "sidecar/service/training_stall.h"
#include "sidecar/collectives/nccl_transport.h"
#ifdef RINGLEADER_WITH_NCCL
#include "sidecar/collectives/nccl_communicator.h"
#include "sidecar/gpu/gpu_inventory.h"
#endif

namespace ringleader::sidecar {
namespace {

using Clock = std::chrono::steady_clock;
using collectives::Collective;

// A failure that ends the run; its message names what broke.
class RunFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Key prefixes of the two rendezvous an operator-made Pod runs through rank 0's store: the
// preflight container's (the same keys a whole sidecar uses) and, after it, the native
// sidecar's own for its monitor.
constexpr std::string_view kPreflightPhase = "";
constexpr std::string_view kMonitorPhase = "monitor/";
// NCCL_DEBUG_FILE's name in the run dir (<prefix>.<host>.<pid>), which the preflight reads back.
constexpr std::string_view kNcclDebugPrefix = "nccl-debug";
constexpr auto kResultPollInterval = std::chrono::milliseconds(200);
// The training report's store calls (connect, set, reads): short, so that a stop never waits
// long for them and an unreachable rank 0 costs one try per interval.
constexpr auto kReportTimeout = std::chrono::milliseconds(2000);
// Rank 0 reads the ranks' reports this many keys per request.
constexpr int kReportBatch = 1024;

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

// The devices the runtime gave this container, as a device plugin names them.
std::string VisibleDevices() {
  std::string devices = Env("NVIDIA_VISIBLE_DEVICES").value_or("");
  if (const auto cuda = Env("CUDA_VISIBLE_DEVICES")) {
    devices += (devices.empty() ? "" : " ") + std::string("CUDA_VISIBLE_DEVICES=") + *cuda;
  }
  return devices;
}

// RDMA counts as asked for when the operator gave the preflight RDMA devices, or the trainers'
// NCCL_IB_* settings (other than switching IB off) came along.
bool RdmaRequested(const SidecarConfig& config) {
  if (!config.rdma_resources.empty()) {
    return true;
  }
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.starts_with("NCCL_IB_") && !text.starts_with("NCCL_IB_DISABLE=")) {
      return true;
    }
  }
  return false;
}

std::string NowRfc3339() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

class SidecarRun {
 public:
  SidecarRun(const SidecarConfig& config, const std::atomic<bool>& stop)
      : config_(config),
        stop_(stop),
        nccl_(UseNccl(config)),
        local_ranks_(LocalRankCount(config, nccl_)),
        registry_(std::make_shared<prometheus::Registry>()),
        metrics_(*registry_, config.rank, config.world_size(), local_ranks_) {}

  ~SidecarRun() {
    StopTrainingReports();
    profiler_.reset();  // before training_, its sink
  }
  SidecarRun(const SidecarRun&) = delete;
  SidecarRun& operator=(const SidecarRun&) = delete;

  // Rank 0's sidecar, stopped by the kubelet once the trainers have ended: the operator reads
  // /summary once more then, for the run's final figures (operator/runtime/controller.cc), so
  // the endpoints stay up until that read or kFinalReadWait (well within a Pod's grace period).
  // Only where an operator has read it before: a sidecar nobody reads stops at once.
  void AwaitFinalSummaryRead() {
    constexpr auto kFinalReadWait = std::chrono::seconds(3);
    const std::uint64_t reads = summary_reads_.load();
    if (!stop_.load() || !endpoints_ || !server_ || reads == 0) {
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + kFinalReadWait;
    while (summary_reads_.load() == reads && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Log(summary_reads_.load() == reads ? "stopping: no final /summary read within 3 s"
                                       : "stopping after the final /summary read");
  }

  int Run() {
    if (config_.mode == Mode::kPodPreflight) {
      return RunPodPreflight();
    }
    try {
      if (config_.mode == Mode::kSidecar) {
        return RunPodSidecar();
      }
      if (config_.mode == Mode::kRun) {
        StartTelemetry();
      }
      StartEndpoints();
      if (config_.rank == 0) {
        StartStoreServer();
      }
      Rendezvous(kPreflightPhase);
      WriteContract();
      MakeCommunicator(kPreflightPhase);
      return RunMode();
    } catch (const RunFailure& failure) {
      if (stop_.load()) {
        return Stopped(failure.what());
      }
      Log(std::string("failed: ") + failure.what());
      if (endpoints_) {
        endpoints_->SetReady(false, failure.what());
      }
      LetPeersHearTheOutcome();
      return kExitFailure;
    } catch (const std::exception& error) {
      if (stop_.load()) {
        return Stopped(error.what());
      }
      Log(std::string("failed: ") + error.what());
      LetPeersHearTheOutcome();
      return kExitFailure;
    }
  }

 private:
  // A SIGTERM that came while the run was blocked ends the wait it was in (every store client
  // watches stop_), and whatever failed after it is the stop's doing: a stopped sidecar leaves
  // at once with kExitOk, as from its monitor loop, with no failure for the operator to count.
  int Stopped(const std::string& interrupted) const {
    Log("stopped (" + interrupted + ")");
    return kExitOk;
  }

  // Rank 0's failure closes the store. Its peers are usually a moment behind (their barrier
  // deadlines started a little later), so the store stays up until they have left, for at most
  // a few seconds, and every rank reports the same missing ranks instead of a closed connection.
  void LetPeersHearTheOutcome() {
    if (!server_) {
      return;
    }
    StopTrainingReports();  // its store connection would count as this rank still there
    ranks_.reset();
    stores_.clear();
    sibling_clients_.clear();
    client_.reset();
    server_->WaitUntilEveryRankLeft(std::chrono::seconds(3));
  }

  void Log(const std::string& message) const {
    std::ostringstream line;
    line << (config_.mode == Mode::kPodPreflight ? "ringleader-preflight" : "ringleader-sidecar")
         << " rank " << config_.rank << "/" << config_.world_size() << ": "
         << message << "\n";
    std::cerr << line.str() << std::flush;
  }

  void StartEndpoints(const std::string& waiting_for = "rendezvous running") {
    endpoints_ = std::make_unique<EndpointServer>(config_.metrics_bind_address, config_.metrics_port,
                                                  *registry_, [this] {
                                                    summary_reads_.fetch_add(1);
                                                    return CurrentSummary();
                                                  });
    endpoints_->SetReady(false, waiting_for);
    metrics_.SetPreflightState(PreflightState::kPending);
    Log("serving /metrics, /healthz, /readyz and /summary on port " +
        std::to_string(endpoints_->port()));
  }

  void StartStoreServer() {
    rendezvous::ServerOptions options;
    options.port = static_cast<std::uint16_t>(config_.rendezvous_port);
    options.token = config_.token;
    // The preflight's barrier waits for the attempt's first Pods; an elastic job's store admits
    // the ranks its world may grow to (Pods of a scale-up join with scope Pod, no barrier).
    options.world_size = static_cast<std::uint32_t>(config_.world_size());
    options.max_ranks = static_cast<std::uint32_t>(config_.max_replicas);
    options.attempt = static_cast<std::uint32_t>(config_.attempt);
    // The port is open to every Pod in the cluster, so the caps follow the largest world (an
    // elastic job's maxReplicas; issue 20).
    // Every local rank of every Pod holds one connection, and at startup all of them may be in
    // their handshake at once. Beyond that, a full handshake cap evicts the oldest handshake: a
    // flood has to open kHandshakeSlack connections within one rank's handshake round trip to
    // shut it out, and each handshake costs about 2.5 KB (docs/benchmarks.md). Welcomed
    // connections get twice the world, for a rank that reconnects before its old connection's
    // close is seen.
    constexpr std::size_t kHandshakeSlack = 1024;
    const std::size_t per_pod = static_cast<std::size_t>(
        std::max({local_ranks_, config_.gpus_per_replica, 1}));
    const std::size_t ranks = static_cast<std::size_t>(config_.max_replicas) * per_pod;
    options.max_unauthenticated_connections = ranks + kHandshakeSlack;
    options.max_connections = 2 * ranks + options.max_unauthenticated_connections;
    options.on_refused = [this](std::string_view reason) { metrics_.CountRefusedConnection(reason); };
    const bool trainer_store = config_.trainer_store_port != 0;
    if (trainer_store) {
      options.make_guest = rendezvous::TorchStoreServer::GuestFactory(TrainerStoreOptions(ranks));
    }
    try {
      server_ = std::make_unique<rendezvous::StoreServer>(std::move(options));
    } catch (const std::exception& error) {
      // The trainers' store must be up before any trainer starts: not serving it is fatal.
      throw RunFailure(std::string(error.what()) +
                       (trainer_store ? " (RINGLEADER_TRAINER_STORE_PORT " +
                                            std::to_string(config_.trainer_store_port) +
                                            ", RINGLEADER_RENDEZVOUS_PORT " +
                                            std::to_string(config_.rendezvous_port) + ")"
                                      : std::string()));
    }
    Log("rendezvous store listening on port " + std::to_string(server_->port()) +
        (config_.elastic ? " (elastic: Pod ranks below " + std::to_string(config_.max_replicas) +
                               " admitted; the preflight barrier waits for " +
                               std::to_string(config_.world_size()) + ")"
                         : std::string()));
    if (trainer_store) {
      Log("serving the trainers' store (PyTorch's TCPStore protocol) on port " +
          std::to_string(config_.trainer_store_port));
    }
  }

  // The trainers' store on the master port, on the rendezvous store's event loop. Every trainer
  // process holds a connection (torchrun's agents one more each); the cap leaves room for four
  // processes per rank of the job and then some, and at the cap the least recently active idle
  // connection makes room (torch_store_server.h).
  rendezvous::TorchStoreOptions TrainerStoreOptions(std::size_t ranks) {
    constexpr std::size_t kConnectionSlack = 1024;
    trainer_store_metrics_ = std::make_unique<TrainerStoreMetrics>(*registry_);
    rendezvous::TorchStoreOptions options;
    options.port = static_cast<std::uint16_t>(config_.trainer_store_port);
    options.max_connections = 4 * ranks + kConnectionSlack;
    options.observer = trainer_store_metrics_.get();
    options.log = [this](const std::string& line) { Log(line); };
    return options;
  }

  // This rank's connection to rank 0's store, retried until `deadline`.
  rendezvous::ClientOptions StoreClientOptions(Clock::time_point deadline) const {
    rendezvous::ClientOptions options;
    options.host = config_.rendezvous_addr;
    options.port = static_cast<std::uint16_t>(config_.rendezvous_port);
    options.token = config_.token;
    options.rank = static_cast<std::uint32_t>(config_.rank);
    options.world_size = static_cast<std::uint32_t>(config_.world_size());
    options.max_ranks = static_cast<std::uint32_t>(config_.max_replicas);
    options.attempt = static_cast<std::uint32_t>(config_.attempt);
    options.deadline = deadline;
    // A SIGTERM ends its connecting and every wait within 100 ms (not at the deadline).
    options.stop = &stop_;
    return options;
  }

  // Joins the ranks of `phase` (keys and barrier under that prefix); returns its seconds.
  double Rendezvous(std::string_view phase) {
    phase_ = std::string(phase);
    const auto started = Clock::now();
    const auto deadline = started + config_.rendezvous_timeout;
    const rendezvous::ClientOptions options = StoreClientOptions(deadline);
    Log("joining the " + PhaseName() + " rendezvous through rank 0's store at " +
        config_.rendezvous_addr + ":" + std::to_string(config_.rendezvous_port));
    rendezvous::JoinRequest join;
    join.record = OwnAddress();
    join.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config_.rendezvous_timeout);
    join.key_prefix = phase_ + "ranks/";
    join.barrier_name = phase_ + "join";
    Log("waiting for all " + std::to_string(config_.world_size()) + " ranks at the " + PhaseName() +
        " rendezvous");
    // Connect, publish, meet and read rank 0's record in one write (protocol.h).
    rendezvous::ConnectedJoin joined = rendezvous::ConnectAndJoin(options, join);
    if (!joined.client) {
      metrics_.CountRendezvousFailure(RendezvousFailure::kConnect);
      throw RunFailure(joined.error);
    }
    client_ = std::move(joined.client);
    if (!joined.error.empty()) {
      metrics_.CountRendezvousFailure(joined.timed_out ? RendezvousFailure::kTimeout
                                                       : RendezvousFailure::kProtocol);
      throw RunFailure(joined.error);
    }
    master_addr_ = joined.joined.records.at(0);
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    metrics_.ObserveRendezvous(seconds);
    Log("rendezvous complete: " + std::to_string(config_.world_size()) + " ranks in " +
        std::to_string(seconds) + " s; rank 0 at " + master_addr_);
    return seconds;
  }

  std::string PhaseName() const { return phase_ == kMonitorPhase ? "monitor" : "preflight"; }

  // The address peers reach this rank on: the pod IP the kubelet gives, else loopback for a
  // local run.
  std::string OwnAddress() const { return config_.pod_ip.empty() ? "127.0.0.1" : config_.pod_ip; }

  void WriteContract() {
    ResolvedContract contract;
    contract.master_addr = master_addr_;
    contract.rendezvous_port = config_.rendezvous_port;
    contract.metrics_port = config_.metrics_port;
    // The block is contiguous in role order (contract::PortRole): master, rendezvous, metrics, spare.
    contract.master_port = config_.rendezvous_port - 1;
    contract.spare_port = config_.rendezvous_port + 2;
    contract.rank = config_.rank;
    contract.world_size = config_.world_size();
    contract.local_world_size = std::max(1, config_.gpus_per_replica);
    contract.node_rank = config_.rank;
    contract.job_name = config_.job_name;
    contract.job_namespace = config_.job_namespace;
    contract.backend = std::string(nccl_ ? "nccl" : "gloo");
    WriteContractFile(config_.contract_file, contract);
    Log("wrote the resolved contract to " + config_.contract_file);
  }

  static bool UseNccl([[maybe_unused]] const SidecarConfig& config) {
#ifdef RINGLEADER_WITH_NCCL
    if (config.backend == Backend::kNccl) {
      return true;
    }
    return config.backend == Backend::kAuto && config.gpus_per_replica > 0 &&
           collectives::VisibleCudaDevices() > 0;
#else
    return false;
#endif
  }

  // One rank per GPU with nccl unless the config says otherwise (sidecar_config.h).
  static int LocalRankCount(const SidecarConfig& config, bool nccl) {
    if (config.local_ranks > 0) {
      return config.local_ranks;
    }
    return nccl ? std::max(1, config.gpus_per_replica) : 1;
  }

  // Global rank of local rank `local`: Pod ranks' blocks in order, so a Pod's GPUs are
  // neighbours in the ring. A scope-Pod preflight's world is this Pod's local ranks alone.
  bool PodScope() const { return config_.preflight_scope == PreflightScope::kPod; }
  int GlobalRank(int local) const { return (PodScope() ? 0 : config_.rank * local_ranks_) + local; }
  int GlobalSize() const { return (PodScope() ? 1 : config_.world_size()) * local_ranks_; }

  // Local rank 0 bootstraps through the join's connection; each further one opens its own,
  // since a wait on a connection holds it and every local rank waits for the others' keys.
  gloo::rendezvous::Store& StoreFor(int local) {
    return *stores_.at(static_cast<std::size_t>(local));
  }

  void ConnectStores(std::chrono::milliseconds timeout) {
    stores_.push_back(std::make_unique<GlooStoreAdapter>(*client_, timeout));
    for (int local = 1; local < local_ranks_; ++local) {
      auto connected = rendezvous::StoreClient::Connect(StoreClientOptions(Clock::now() + timeout));
      if (!connected) {
        throw RunFailure("local rank " + std::to_string(local) + ": " + connected.error());
      }
      sibling_clients_.push_back(std::move(connected).value());
      stores_.push_back(std::make_unique<GlooStoreAdapter>(*sibling_clients_.back(), timeout));
    }
  }

  void MakeCommunicator(std::string_view phase) {
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config_.preflight_timeout);
    SidecarInfo info;
    info.measures = nccl_ ? "gpus" : "network";
    info.job = config_.job_name;
    info.job_namespace = config_.job_namespace;
    if (nccl_) {
#ifdef RINGLEADER_WITH_NCCL
      const int devices = collectives::VisibleCudaDevices();
      if (devices == 0) {
        // CUDA's reason tells a missing device from a driver older than this build's runtime.
        throw RunFailure("backend nccl: this container sees no CUDA device (CUDA: " +
                         gpu::InspectGpus().unavailable_reason + ")");
      }
      if (devices < local_ranks_) {
        throw RunFailure("backend nccl: " + std::to_string(local_ranks_) +
                         " local ranks need as many CUDA devices, this container sees " +
                         std::to_string(devices));
      }
      info.nccl_version = gpu::FormatNcclVersion(gpu::InspectGpus().nccl_version_code);
#endif
    } else if (config_.backend == Backend::kNccl) {
      throw RunFailure("backend nccl: this sidecar was built without NCCL");
    }
    ConnectStores(timeout);
    try {
      ranks_.emplace(collectives::LocalRanks::Connect(
          local_ranks_, [&](int local) { return MakeLocalCommunicator(local, phase, timeout); }));
    } catch (const collectives::CommunicatorError& error) {
      throw RunFailure(DiagnosePeerFailure("connecting the communicator", error.what()));
    }
    info.backend = std::string(ranks_->first().backend());
    info.transport = std::string(ranks_->first().transport());
    metrics_.SetInfo(info);
    {
      std::lock_guard lock(summary_mutex_);
      summary_.backend = info.backend;
    }
    Log("communicator up: " + info.backend + " over " + info.transport + ", " +
        std::to_string(local_ranks_) + " local rank(s) of " + std::to_string(GlobalSize()));
  }

  std::unique_ptr<collectives::Communicator> MakeLocalCommunicator(
      int local, std::string_view phase, std::chrono::milliseconds timeout) {
#ifdef RINGLEADER_WITH_NCCL
    if (nccl_) {
      collectives::NcclOptions options;
      options.rank = GlobalRank(local);
      options.size = GlobalSize();
      options.prefix = std::string(phase) + "nccl/0/";
      options.device = local;
      options.timeout = timeout;
      return std::make_unique<collectives::NcclCommunicator>(StoreFor(local), options);
    }
#endif
    collectives::GlooOptions options;
    options.rank = GlobalRank(local);
    options.size = GlobalSize();
    options.prefix = std::string(phase) + "gloo/0/";
    options.hostname = OwnAddress();
    options.timeout = timeout;
    return std::make_unique<collectives::GlooCommunicator>(StoreFor(local), options);
  }

  int RunMode() {
    switch (config_.mode) {
      case Mode::kPreflight:
        return RunPreflight() ? kExitOk : kExitFailure;
      case Mode::kPairwise:
        RunPairwise();
        return kExitOk;
      case Mode::kMonitor:
        MarkReady(PreflightState::kDisabled);
        return RunMonitor();
      case Mode::kSidecar:
      case Mode::kPodPreflight:
        break;  // Run() takes these before any of the above
      case Mode::kRun:
        if (config_.preflight_enabled) {
          if (!RunPreflight()) {
            return kExitFailure;
          }
        } else {
          MarkReady(PreflightState::kDisabled);
        }
        StartTrainingReports();
        return MonitorRuns() ? RunMonitor() : WaitForStop();
    }
    return kExitFailure;
  }

  // The monitor's probes need a fixed world of every Pod: an elastic job's changes (the operator
  // sets RINGLEADER_MONITOR_ENABLED=false there; this holds if it did not).
  bool MonitorRuns() const {
    if (!config_.monitor_enabled) {
      return false;
    }
    if (config_.elastic) {
      Log("monitor off: an elastic job's world changes while it runs (RINGLEADER_MAX_REPLICAS " +
          std::to_string(config_.max_replicas) + "); the trainers' own collectives are still "
          "measured");
      return false;
    }
    return true;
  }

  void MarkReady(PreflightState state) {
    metrics_.SetPreflightState(state);
    endpoints_->SetReady(true);
  }

  // Runs `probe` (collective calls); a communicator failure becomes a RunFailure naming the
  // rank that broke.
  template <typename Probe>
  auto Guard(Collective collective, const std::string& what, Probe&& probe) {
    try {
      return probe();
    } catch (const collectives::CommunicatorError& error) {
      metrics_.CountProbeRun(collective, ProbeResult::kError);
      throw RunFailure(DiagnosePeerFailure(what, error.what()));
    }
  }

  bool RunPreflight() {
    metrics_.SetPreflightState(PreflightState::kRunning);
    endpoints_->SetReady(false, "preflight running");
    const PreflightResult result = Sweep();
    ApplyPreflight(result);
    return result.passed;
  }

  // What the communicator is and runs over; the start of every result.
  PreflightResult CommunicatorResult() {
    PreflightResult result;
    result.enabled = config_.preflight_enabled;
    result.ranks = GlobalSize();
    result.local_ranks = local_ranks_;
    result.devices = VisibleDevices();
    result.rdma_requested = RdmaRequested(config_);
    if (!ranks_) {
      return result;
    }
    result.backend = std::string(ranks_->first().backend());
    result.transport = std::string(ranks_->first().transport());
    if (nccl_) {
      // NCCL's own account of its transport, from the INFO lines it wrote into the run dir.
      const collectives::NcclTransportSummary summary = collectives::SummariseNcclDebugFiles(
          collectives::FindNcclDebugFiles(config_.run_dir, kNcclDebugPrefix, 256));
      if (std::string label = collectives::NcclTransportLabel(summary); !label.empty()) {
        label.resize(std::min(label.size(), contract::kMaxTransportBytes));
        result.transport = std::move(label);
      }
      result.rdma_fallback = collectives::RdmaFallbackReason(summary, result.rdma_requested);
    }
    return result;
  }

  // The sweep on every local rank, judged; rank 0 (and a rank that saw it fail) prints the table.
  PreflightResult Sweep() {
    collectives::ProbeOptions options;
    options.warmup_iters = config_.preflight_warmup_iterations;
    options.iters = config_.preflight_iterations;
    collectives::SweepRange sweep;
    sweep.min_bytes = static_cast<std::size_t>(config_.preflight_min_bytes);
    sweep.max_bytes = static_cast<std::size_t>(config_.preflight_max_bytes);
    sweep.factor = static_cast<std::size_t>(config_.preflight_step_factor);
    const auto started = Clock::now();
    std::vector<collectives::ProbeRow> rows =
        Guard(Collective::kAllReduce, "the preflight sweep", [&] {
          return ranks_->OnEach([&](collectives::Communicator& comm, int) {
            return collectives::PreflightSweep(comm, sweep, options);
          });
        });
    // In scope Pod the communicator ranks are this Pod's local ranks.
    const PreflightVerdict verdict =
        JudgePreflight(rows, config_.preflight_min_bus_bandwidth, PodScope() ? 1 : local_ranks_);
    PreflightResult result = CommunicatorResult();
    result.passed = verdict.passed;
    result.reason = verdict.reason.empty() || !PodScope()
                        ? verdict.reason
                        : "scope Pod, among this Pod's local ranks: " + verdict.reason;
    result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    result.all_reduce_bus_bandwidth = verdict.all_reduce_bus_bandwidth;
    result.slowest_rank = verdict.slowest_rank;
    result.below_floor_row = verdict.below_floor_row;
    result.rows = std::move(rows);
    if (config_.rank == 0 || PodScope() || !verdict.passed) {
      std::cout << "# ringleader preflight" << (PodScope() ? " (scope Pod)" : "") << ", "
                << result.backend << ", " << GlobalSize()
                << " ranks, " << result.seconds << " s\n"
                << "# transport: " << result.transport << "\n"
                << collectives::FormatTable(result.rows) << std::flush;
    }
    if (result.rdma_fallback) {
      Log("warning: " + *result.rdma_fallback);
    }
    return result;
  }

  // Metrics, /summary and readiness from a preflight's result, whichever process ran it.
  void ApplyPreflight(const PreflightResult& result) {
    for (std::size_t i = 0; i < result.rows.size(); ++i) {
      RecordRow(result.rows[i],
                i == result.below_floor_row ? ProbeResult::kBelowFloor : ProbeResult::kOk);
    }
    if (!result.backend.empty()) {
      metrics_.SetPreflightTransport(result.backend, result.transport, result.rdma_requested,
                                     result.rdma_fallback.has_value());
    }
    if (result.rendezvous_seconds) {
      metrics_.ObserveRendezvous(*result.rendezvous_seconds);
    }
    if (!result.backend.empty()) {
      std::lock_guard lock(summary_mutex_);
      summary_.backend = result.backend;
      summary_.transport = result.transport;
      // Kept apart from the monitor's small probes that follow: the job's BusBW until the
      // trainers' own figures arrive.
      summary_.preflight_all_reduce_bus_bandwidth = result.all_reduce_bus_bandwidth;
    }
    if (!result.enabled && result.passed) {
      MarkReady(PreflightState::kDisabled);
      return;
    }
    UpdateSummary(result.passed ? "Passed" : "Failed", result.all_reduce_bus_bandwidth,
                  result.slowest_rank);
    if (!result.passed) {
      metrics_.SetPreflightState(PreflightState::kFailed);
      endpoints_->SetReady(false, "preflight failed: " + result.reason);
      Log("preflight failed: " + result.reason);
      return;
    }
    MarkReady(PreflightState::kPassed);
    if (result.rows.empty()) {
      Log("preflight (scope " + std::string(PreflightScopeName(config_.preflight_scope)) +
          ") passed without a sweep: " + std::to_string(result.ranks) +
          " communicator rank(s), nothing to measure");
      return;
    }
    Log("preflight passed: all_reduce bus bandwidth " +
        FormatBandwidth(result.all_reduce_bus_bandwidth.value_or(0)) + " at the largest size" +
        (PodScope() ? " among this Pod's local ranks (scope Pod)" : ""));
  }

  // NCCL writes its INFO lines (INIT and NET: the net plugin, HCAs, interfaces, each channel's
  // path) into the run dir, where CommunicatorResult reads them; set before NCCL starts.
  void RouteNcclDebugToRunDir() const {
    std::error_code error;
    if (!nccl_ || !std::filesystem::is_directory(config_.run_dir, error)) {
      return;
    }
    const std::string file = config_.run_dir + "/" + std::string(kNcclDebugPrefix) + ".%h.%p";
    ::setenv("NCCL_DEBUG", "INFO", 1);
    ::setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
    ::setenv("NCCL_DEBUG_FILE", file.c_str(), 1);
  }

  // The regular init container of an operator-made Pod: the trainers' devices and fabric
  // settings, rank 0's store as a client, the contract for the trainers, the preflight, and its
  // result for the sidecar. Exit 0 lets the kubelet start the trainers.
  int RunPodPreflight() {
    Log("devices: " + (VisibleDevices().empty() ? std::string("none given") : VisibleDevices()));
    PreflightResult result;
    try {
      RouteNcclDebugToRunDir();
      if (PodScope()) {
        result = RunPodScopePreflight();
      } else {
        Log("preflight scope Job: every Pod of the attempt meets in one world of " +
            std::to_string(config_.world_size()) + " Pods");
        const double rendezvous_seconds = Rendezvous(kPreflightPhase);
        WriteContract();
        MakeCommunicator(kPreflightPhase);
        result = config_.preflight_enabled ? Sweep() : CommunicatorResult();
        if (!config_.preflight_enabled) {
          result.passed = true;
        }
        result.rendezvous_seconds = rendezvous_seconds;
      }
    } catch (const std::exception& error) {
      if (stop_.load()) {
        return Stopped(error.what());  // no result: the preflight did not finish
      }
      result = CommunicatorResult();
      result.passed = false;
      result.reason = error.what();
    }
    try {
      WritePreflightResult(PreflightResultPath(), result);
    } catch (const std::exception& error) {
      Log(std::string("cannot hand the result to the sidecar: ") + error.what());
      return kExitFailure;
    }
    if (!result.passed) {
      Log((result.enabled && !result.rows.empty() ? "preflight failed: " : "failed: ") + result.reason);
      return kExitFailure;
    }
    if (!result.enabled) {
      Log(PodScope() ? "preflight disabled; rank 0's store reached" : "preflight disabled; rendezvous complete");
    } else if (result.rows.empty()) {
      Log("preflight (scope Pod) passed without a sweep: rank 0's store reached, this Pod's "
          "communicator up");
    } else {
      Log("preflight passed: all_reduce bus bandwidth " +
          FormatBandwidth(result.all_reduce_bus_bandwidth.value_or(0)) + " at the largest size" +
          (PodScope() ? " among this Pod's local ranks (scope Pod)" : ""));
    }
    return kExitOk;
  }

  std::string PreflightResultPath() const { return config_.run_dir + "/preflight.json"; }

  // Scope Pod: a Pod joining an elastic job's running world (a scale-up, or a lost Pod made
  // again) has no one to meet at a barrier: the others passed theirs and train. It proves the
  // part of its fabric the job needs before its trainers join torchrun's rendezvous (rank 0's
  // store, with the job token) and measures its own local ranks; its collectives with the other
  // Pods are the trainers', measured by the profiler plugin.
  PreflightResult RunPodScopePreflight() {
    // Fresh keys for each run of a Pod: a rank made again must not read its predecessor's.
    const std::string prefix = "pod-scope/" + std::to_string(config_.rank) + "/" + RandomHex() + "/";
    Log("preflight scope Pod: this Pod's " + std::to_string(local_ranks_) +
        " local rank(s) form the world, with no barrier with the running one; first a round trip "
        "to rank 0's store at " + RankZeroStore());
    const double reach_seconds = ReachRankZero(prefix);
    WriteContract();
    MakeCommunicator(prefix);
    PreflightResult result;
    if (!config_.preflight_enabled) {
      result = CommunicatorResult();
      result.passed = true;
    } else if (GlobalSize() < 2) {
      // all_reduce over one rank moves no data (bus bandwidth 0 by definition): no figure.
      Log("scope Pod with one local rank: no sweep (a 1-rank all_reduce measures nothing); this "
          "preflight proved rank 0's store and this Pod's communicator");
      result = CommunicatorResult();
      result.passed = true;
    } else {
      result = Sweep();
    }
    result.rendezvous_seconds = reach_seconds;
    return result;
  }

  std::string RankZeroStore() const {
    return config_.rendezvous_addr + ":" + std::to_string(config_.rendezvous_port);
  }

  static std::string RandomHex() {
    std::random_device random;
    char text[17];
    std::snprintf(text, sizeof(text), "%08x%08x", random(), random());
    return text;
  }

  // Connects to rank 0's store (the job token's handshake, the attempt checked), sets a key
  // under `prefix` and reads it back, then reads rank 0's address from its record (published by
  // its preflight container's rendezvous) for the contract; all within the preflight timeout.
  // Returns the seconds it took; throws naming rank 0 and its address.
  double ReachRankZero(const std::string& prefix) {
    phase_ = prefix;
    const auto started = Clock::now();
    const auto deadline = started + config_.preflight_timeout;
    const auto fail = [&](const std::string& what) -> void {
      throw RunFailure("scope Pod: this Pod cannot reach rank 0's store at " + RankZeroStore() +
                       " (RINGLEADER_RENDEZVOUS_ADDR:RINGLEADER_RENDEZVOUS_PORT) within the "
                       "preflight timeout of " + std::to_string(config_.preflight_timeout.count()) +
                       " s: " + what);
    };
    auto connected = rendezvous::StoreClient::Connect(StoreClientOptions(deadline));
    if (!connected) {
      fail(connected.error());
    }
    client_ = std::move(connected).value();
    const std::string key = prefix + "reach";
    const std::string value = OwnAddress() + " " + config_.pod_name;
    if (auto set = client_->Set(key, value); !set) {
      fail(set.error());
    }
    auto got = client_->Get(key);
    if (!got) {
      fail(got.error());
    }
    if (got.value() != value) {
      fail("the key " + key + " read back " + (got.value() ? "\"" + *got.value() + "\"" : "missing") +
           ", not the value just set");
    }
    const std::string record = rendezvous::RankRecordKey("ranks/", 0);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto published = client_->Wait({record}, std::max(left, std::chrono::milliseconds(1)));
    if (!published) {
      fail(published.error());
    }
    if (published.value().timed_out) {
      fail("rank 0 has not published its address (" + record + ") in this attempt's store");
    }
    auto master = client_->Get(record);
    if (!master || !master.value()) {
      fail(master ? "rank 0's record " + record + " vanished" : master.error());
    }
    master_addr_ = *master.value();
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    Log("reached rank 0's store at " + RankZeroStore() + " in " + std::to_string(seconds) +
        " s: authenticated with the job token, a set and get round trip under " + prefix +
        "; rank 0 at " + master_addr_);
    return seconds;
  }

  // The native sidecar of an operator-made Pod: the store (rank 0) and the endpoints for the
  // job's life, the preflight container's result, then a monitor of its own.
  int RunPodSidecar() {
    if (config_.rank == 0) {
      StartStoreServer();  // first: a started sidecar means a reachable store
    } else if (config_.trainer_store_port != 0) {
      Log("RINGLEADER_TRAINER_STORE_PORT is set, but only rank 0's sidecar serves the trainers' "
          "store: ignored");
    }
    StartTelemetry();
    StartEndpoints("waiting for the preflight container");
    std::optional<PreflightResult> result = WaitForPreflightResult();
    if (!result) {
      Log("stopped");
      return kExitOk;
    }
    ApplyPreflight(*result);
    if (result->passed) {
      // Only now: a rank's report connection would hide its preflight container's death from
      // the others' peer diagnosis, and the trainers start after the preflight anyway.
      StartTrainingReports();
    }
    if (!result->passed || !MonitorRuns()) {
      // A failed Pod is stopped by the kubelet; until then /readyz and /metrics say why. Rank 0
      // serves its stores (server_'s thread) until then.
      return WaitForStop();
    }
    const double seconds = Rendezvous(kMonitorPhase);
    metrics_.ObserveRendezvous(seconds);
    MakeCommunicator(kMonitorPhase);
    return RunMonitor();
  }

  // Polls the run dir for the preflight container's result; nullopt when stopped first.
  std::optional<PreflightResult> WaitForPreflightResult() {
    Log("waiting for the preflight container's result in " + PreflightResultPath());
    while (!stop_.load()) {
      try {
        if (std::optional<PreflightResult> result = ReadPreflightResult(PreflightResultPath())) {
          return result;
        }
      } catch (const PreflightResultError& error) {
        throw RunFailure(std::string("the preflight container's result: ") + error.what());
      }
      std::this_thread::sleep_for(kResultPollInterval);
    }
    return std::nullopt;
  }

  // The NCCL profiler plugin's side, before the endpoints serve (a passing startup probe then
  // means the plugin is in place for the trainers): the plugin copied where they load it from,
  // and the socket its snapshots arrive on. Telemetry never fails the Pod: what fails is logged
  // once and shows in ringleader_training_profiler_plugin_installed.
  void StartTelemetry() {
    if (!config_.telemetry_enabled) {
      Log("telemetry off: no profiler plugin copied, no profiler socket");
      return;
    }
    training_ = std::make_unique<TrainingCollectives>(*registry_, config_.rank);
    if (const auto failure = InstallProfilerPlugin(ProfilerPluginSource(), config_.profiler_plugin_dir)) {
      Log("profiler plugin not installed, so the trainers' own collectives go unmeasured: " + *failure);
      training_->SetPluginInstalled(false);
    } else {
      Log("installed the NCCL profiler plugin in " + config_.profiler_plugin_dir);
      training_->SetPluginInstalled(true);
    }
    try {
      profiler_ = std::make_unique<ProfilerListener>(
          ProfilerListenerOptions{.path = config_.profiler_socket}, *training_);
      Log("taking the profiler plugin's snapshots on " + config_.profiler_socket);
    } catch (const std::exception& error) {
      Log(std::string("not taking the profiler plugin's snapshots: ") + error.what());
    }
  }

  // Every profiler interval: this Pod's report into rank 0's store, and on rank 0 the ranks'
  // reports compared into /summary's `training`, on a thread and a store connection of its own.
  void StartTrainingReports() {
    if (!training_ || reporter_.joinable()) {
      return;
    }
    reporter_ = std::thread([this] { RunTrainingReports(); });
  }

  void StopTrainingReports() {
    {
      std::lock_guard<std::mutex> lock(reporter_mutex_);
      reporter_stop_ = true;
    }
    reporter_wake_.notify_all();
    if (reporter_.joinable()) {
      reporter_.join();
    }
  }

  void RunTrainingReports() {
    std::unique_ptr<rendezvous::StoreClient> store;
    bool failing = false;  // logs only the changes
    std::unique_lock<std::mutex> lock(reporter_mutex_);
    while (!reporter_wake_.wait_for(lock, config_.profiler_interval, [this] { return reporter_stop_; })) {
      lock.unlock();
      const std::string error = ReportTraining(store);
      if (!error.empty() && stop_.load()) {
        break;  // the SIGTERM cut the round short: nothing failed
      }
      if (!error.empty()) {
        store.reset();
        if (!failing) {
          Log("cannot report the trainers' collectives to rank 0's store (retrying every interval): " +
              error);
        }
      } else if (failing) {
        Log("reporting the trainers' collectives to rank 0's store again");
      }
      failing = !error.empty();
      lock.lock();
    }
  }

  // One round: "" when done, else what failed.
  std::string ReportTraining(std::unique_ptr<rendezvous::StoreClient>& store) {
    if (!store) {
      rendezvous::ClientOptions options = StoreClientOptions(Clock::now() + kReportTimeout);
      options.io_timeout = kReportTimeout;
      auto connected = rendezvous::StoreClient::Connect(options);
      if (!connected) {
        return connected.error();
      }
      store = std::move(connected).value();
    }
    const TrainingReport report = training_->Report();
    if (!report.cells.empty() || !report.progress.empty()) {
      if (const auto set = store->Set(TrainingReportKey(config_.rank), EncodeTrainingReport(report));
          !set) {
        return set.error();
      }
    }
    if (config_.rank != 0) {
      return "";
    }
    // An elastic job's world is any of ranks 0 .. maxReplicas-1 at a time: every possible
    // rank's key is read, and an absent one is simply not compared.
    std::map<int, std::string> reports;
    for (int first = 0; first < config_.max_replicas; first += kReportBatch) {
      std::vector<std::string> keys;
      for (int rank = first; rank < std::min(first + kReportBatch, config_.max_replicas); ++rank) {
        keys.push_back(TrainingReportKey(rank));
      }
      const auto values = store->MultiGet(keys);
      if (!values) {
        return values.error();
      }
      for (std::size_t i = 0; i < values.value().size(); ++i) {
        if (const std::optional<std::string>& value = values.value()[i]) {
          reports.emplace(first + static_cast<int>(i), *value);
        }
      }
    }
    if (config_.elastic) {
      if (const std::string error = KeepConnectedRanks(*store, reports); !error.empty()) {
        return error;
      }
    }
    const std::map<int, TrainingReport> decoded = DecodeTrainingReports(reports);
    std::optional<contract::StallSummary> stall = FindStall(
        decoded, NowUnixMs(), StallOptions{.stall_after = config_.stall_seconds, .attempt = config_.attempt});
    NoteStall(stall);
    std::lock_guard<std::mutex> lock(summary_mutex_);
    if (std::optional<contract::TrainingSummary> training = CompareTrainingReports(decoded)) {
      summary_.training = std::move(training);
    }
    summary_.stall = std::move(stall);  // cleared as soon as the missing ranks catch up
    return "";
  }

  // An elastic job's Pods come and go, and a removed rank's last report stays in the store:
  // only the ranks whose sidecar holds a connection to the store now (its report connection)
  // are compared, so a scaled-down rank leaves the comparison within one interval. "" or what
  // failed.
  static std::string KeepConnectedRanks(rendezvous::StoreClient& store,
                                        std::map<int, std::string>& reports) {
    const auto connected = store.Get(rendezvous::kConnectedRanksKey);
    if (!connected) {
      return connected.error();
    }
    const std::vector<std::uint32_t> ranks =
        rendezvous::ParseMissingRanks(connected.value().value_or(""));
    std::erase_if(reports, [&](const auto& entry) {
      return std::find(ranks.begin(), ranks.end(), static_cast<std::uint32_t>(entry.first)) ==
             ranks.end();
    });
    return "";
  }

  // The stall gauge, and a log line when a stall is found or ends (not on every round).
  void NoteStall(const std::optional<contract::StallSummary>& stall) {
    training_->SetStalled(stall.has_value());
    const auto identity = [](const contract::StallSummary& s) {
      return std::make_pair(s.communicator, s.sequence);
    };
    if (stall && (!logged_stall_ || identity(*logged_stall_) != identity(*stall))) {
      Log("stalled: " + DescribeStall(*stall));
    } else if (!stall && logged_stall_) {
      Log("the stall of collective #" + std::to_string(logged_stall_->sequence) + " on communicator " +
          logged_stall_->communicator + " ended: its missing ranks entered it");
    }
    logged_stall_ = stall;
  }

  static std::string DescribeStall(const contract::StallSummary& stall) {
    std::string ranks;
    for (const int rank : stall.missing_ranks) {
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    }
    std::string pods;
    for (const int pod : stall.missing_pods) {
      pods += (pods.empty() ? "" : ", ") + std::to_string(pod);
    }
    return std::to_string(stall.missing_rank_count) + " communicator rank(s) (" + ranks +
           "; Pod rank(s) " + pods + ") never entered " + stall.collective.value_or("collective") +
           " #" + std::to_string(stall.sequence) +
           (stall.bytes ? " of " + std::to_string(*stall.bytes) + " bytes" : std::string()) +
           " on communicator " + stall.communicator + "; " + std::to_string(stall.waiting_ranks) +
           " rank(s) have waited " + std::to_string(stall.waited_seconds) + " s";
  }

  static std::uint64_t NowUnixMs() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  }

  void RecordRow(const collectives::ProbeRow& row, ProbeResult judged) {
    metrics_.ObserveProbe(row.collective, row.bytes, row.algbw_gbps * 1e9, row.busbw_gbps * 1e9,
                          row.time_us / 1e6);
    metrics_.AddWrongElements(row.collective, row.wrong);
    metrics_.CountProbeRun(row.collective, row.wrong > 0 ? ProbeResult::kWrongData : judged);
  }

  void UpdateSummary(const std::string& preflight, std::optional<double> busbw,
                     std::optional<int> slowest) {
    std::lock_guard lock(summary_mutex_);
    if (!preflight.empty()) {
      summary_.preflight = preflight;
    }
    summary_.last_probe_time = NowRfc3339();
    summary_.all_reduce_bus_bandwidth = busbw;
    summary_.slowest_rank = slowest;
  }

  contract::Summary CurrentSummary() {
    std::lock_guard lock(summary_mutex_);
    return summary_;
  }

  int RunMonitor() {
    const auto bytes = static_cast<std::size_t>(config_.monitor_message_bytes);
    collectives::ProbeOptions options;
    options.warmup_iters = 1;
    options.iters = 5;
    Log("monitoring: all_reduce of " + std::to_string(bytes) + " bytes every " +
        std::to_string(config_.monitor_interval.count()) + " s");
    // Every interval's probes time warm memory: one buffer set per local rank, kept.
    std::vector<collectives::ProbeBuffers> buffers;
    buffers.reserve(static_cast<std::size_t>(local_ranks_));
    for (int local = 0; local < local_ranks_; ++local) {
      buffers.emplace_back(ranks_->at(local));
    }
    const auto kept = [&](int local) { return &buffers[static_cast<std::size_t>(local)]; };
    while (!stop_.load()) {
      const std::size_t count = std::max<std::size_t>(
          1, collectives::CountPerRank(Collective::kAllReduce, bytes, GlobalSize()));
      const auto row = Guard(Collective::kAllReduce, "the monitor's all_reduce probe", [&] {
        return ranks_->OnEach([&](collectives::Communicator& comm, int local) {
          return collectives::RunProbe(comm, Collective::kAllReduce, count, options, kept(local));
        });
      });
      RecordRow(row, ProbeResult::kOk);
      UpdateSummary("", row.busbw_gbps * 1e9, row.slowest_rank);
      if (GlobalSize() > 1) {
        const auto ring = Guard(Collective::kSendRecv, "the monitor's ring sendrecv probe", [&] {
          return ranks_->OnEach([&](collectives::Communicator& comm, int local) {
            return collectives::Pairwise(comm, collectives::PairPattern::kRingNeighbour, bytes,
                                         options, kept(local));
          });
        });
        RecordEdges(ring);
      }
      if (row.wrong > 0) {
        throw RunFailure(std::to_string(row.wrong) + " wrong elements in the monitor's all_reduce");
      }
      if (SleepUnlessStopped(config_.monitor_interval)) {
        break;
      }
    }
    Log("stopped");
    return kExitOk;
  }

  void RecordEdges(const collectives::PairwiseResult& result) {
    const int first = GlobalRank(0);
    const auto is_local = [&](int rank) { return rank >= first && rank < first + local_ranks_; };
    for (const auto& edge : result.edges) {
      if (is_local(edge.to)) {
        metrics_.SetEdgeBandwidth(edge.to - first, edge.from, Direction::kRecv,
                                  edge.bandwidth_gbps * 1e9);
      }
      if (is_local(edge.from)) {
        metrics_.SetEdgeBandwidth(edge.from - first, edge.to, Direction::kSend,
                                  edge.bandwidth_gbps * 1e9);
      }
    }
  }

  void RunPairwise() {
    MarkReady(PreflightState::kDisabled);
    const auto bytes = static_cast<std::size_t>(config_.preflight_max_bytes);
    collectives::ProbeOptions options;
    options.warmup_iters = config_.preflight_warmup_iterations;
    options.iters = config_.preflight_iterations;
    for (const auto pattern : {collectives::PairPattern::kRingNeighbour, collectives::PairPattern::kHalves}) {
      const bool ring = pattern == collectives::PairPattern::kRingNeighbour;
      if (GlobalSize() < 2 || (!ring && GlobalSize() % 2 != 0)) {
        continue;
      }
      const auto result = Guard(Collective::kSendRecv, "the pairwise sendrecv probe", [&] {
        return ranks_->OnEach([&](collectives::Communicator& comm, int) {
          return collectives::Pairwise(comm, pattern, bytes, options);
        });
      });
      RecordEdges(result);
      if (config_.rank == 0) {
        std::cout << "# pairwise " << (ring ? "ring-neighbour" : "halves") << ", " << bytes
                  << " bytes per edge\n";
        for (const auto& edge : result.edges) {
          std::cout << "  " << edge.name() << "  " << FormatBandwidth(edge.bandwidth_gbps * 1e9) << "\n";
        }
        std::cout << "  slowest edge " << result.slowest_edge << " ("
                  << DescribeRank(result.slowest_rank, local_ranks_) << ")\n"
                  << std::flush;
      }
      if (result.wrong > 0) {
        throw RunFailure(std::to_string(result.wrong) + " wrong elements in the pairwise probe");
      }
    }
  }

  // Sleeps up to `duration`; true when a stop was requested meanwhile.
  bool SleepUnlessStopped(std::chrono::nanoseconds duration) {
    const auto until = Clock::now() + duration;
    while (!stop_.load()) {
      if (Clock::now() >= until) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  }

  int WaitForStop() {
    while (!SleepUnlessStopped(std::chrono::hours(1))) {
    }
    Log("stopped");
    return kExitOk;
  }

  // Turns a collective's failure into a message naming the rank that died (peer_diagnosis.h).
  std::string DiagnosePeerFailure(const std::string& what, const std::string& error) {
    if (PodScope()) {
      return what + " failed among this Pod's own ranks: " + error;  // no other Pod takes part
    }
    const auto diagnosis = rendezvous::DiagnosePeers(*client_, phase_);
    return what + " failed: " +
           rendezvous::DescribePeerDiagnosis(diagnosis, static_cast<std::uint32_t>(config_.world_size())) +
           "; " + error;
  }

  const SidecarConfig& config_;
  const std::atomic<bool>& stop_;
  const bool nccl_;        // the backend, decided once at the start
  const int local_ranks_;  // ranks this sidecar drives (LocalRankCount)
  std::shared_ptr<prometheus::Registry> registry_;
  SidecarMetrics metrics_;
  std::mutex summary_mutex_;
  contract::Summary summary_;  // guarded by summary_mutex_
  std::unique_ptr<EndpointServer> endpoints_;
  std::atomic<std::uint64_t> summary_reads_{0};  // /summary requests answered
  // Before server_: the trainer store (server_'s guest) reports to it until server_ is gone.
  std::unique_ptr<TrainerStoreMetrics> trainer_store_metrics_;
  std::unique_ptr<rendezvous::StoreServer> server_;
  std::unique_ptr<rendezvous::StoreClient> client_;
  // Connections of local ranks 1.. (local rank 0 uses client_), and each local rank's store.
  std::vector<std::unique_ptr<rendezvous::StoreClient>> sibling_clients_;
  std::vector<std::unique_ptr<GlooStoreAdapter>> stores_;
  std::optional<collectives::LocalRanks> ranks_;
  std::string master_addr_;
  std::string phase_;  // key prefix of the rendezvous this process joined (kPreflightPhase, ...)
  // The trainers' collectives (null with telemetry off), the socket that feeds them, and the
  // thread that reports them to rank 0.
  std::unique_ptr<TrainingCollectives> training_;
  std::unique_ptr<ProfilerListener> profiler_;
  std::mutex reporter_mutex_;
  std::condition_variable reporter_wake_;
  bool reporter_stop_ = false;  // guarded by reporter_mutex_
  std::optional<contract::StallSummary> logged_stall_;  // the reporter thread's own
  std::thread reporter_;
};

}  // namespace

int RunSidecar(const SidecarConfig& config, const std::atomic<bool>& stop_requested) {
  SidecarRun run(config, stop_requested);
  const int code = run.Run();
  run.AwaitFinalSummaryRead();
  return code;
}

}  // namespace ringleader::sidecar
