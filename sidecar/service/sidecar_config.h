// The sidecar's settings: the environment the operator injects (contract.h) overridden by flags.
// Every bad or missing value is reported with the variable or flag that held it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/contract/contract.h"

namespace ringleader::sidecar {

class SidecarConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Settings the operator does not inject; a user may set them in the sidecar's env.
namespace env {
using contract::env::kMode;
inline constexpr std::string_view kMetricsBindAddress = "RINGLEADER_METRICS_BIND_ADDRESS";
inline constexpr std::string_view kPreflightWarmupIterations = "RINGLEADER_PREFLIGHT_WARMUP_ITERATIONS";
inline constexpr std::string_view kPreflightIterations = "RINGLEADER_PREFLIGHT_ITERATIONS";
inline constexpr std::string_view kRendezvousTimeoutSeconds = "RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS";
inline constexpr std::string_view kLocalRanks = "RINGLEADER_LOCAL_RANKS";
}  // namespace env

enum class Backend : std::uint8_t { kAuto, kGloo, kNccl };
// "preflight": sweep once and exit; "monitor": periodic probes only; "pairwise": measure every
// edge of this rank once; "run": preflight, then monitor. Those are whole sidecars in one process.
// An operator-made Pod splits one in two (contract::mode): "sidecar" serves the endpoints and, on
// rank 0, the store, takes the preflight's result from the run dir, then monitors with a
// communicator of its own; "pod-preflight" joins the store as a client, writes the contract,
// runs the preflight (or, disabled, only the rendezvous), writes its result and exits.
enum class Mode : std::uint8_t { kRun, kPreflight, kMonitor, kPairwise, kSidecar, kPodPreflight };

// What the preflight covers (contract::env::kPreflightScope): kJob, every Pod of the attempt in
// one world of `replicas` Pods; kPod, a Pod that joins an elastic job's running world: its own
// local ranks only, and a round trip to rank 0's store.
enum class PreflightScope : std::uint8_t { kJob, kPod };

std::string_view BackendName(Backend backend);  // "auto", "gloo", "nccl"
std::string_view PreflightScopeName(PreflightScope scope);  // "Job", "Pod"
std::string_view ModeName(Mode mode);  // "run", "preflight", ..., "sidecar", "pod-preflight"

// The largest token file accepted; a job token is 32-64 bytes.
inline constexpr std::size_t kMaxTokenBytes = 4096;

struct SidecarConfig {
  std::string job_name;       // required
  std::string job_namespace;  // required
  std::string job_uid;
  int rank = 0;      // required; below replicas
  int replicas = 0;  // required; the sidecars' world size
  // An elastic job's most replicas (RINGLEADER_MAX_REPLICAS, at least replicas): rank 0's store
  // accepts Pod ranks below it and sizes its caps for it, and rank 0 reads that many ranks'
  // training reports. Equal to replicas when unset; `elastic` says it was set.
  int max_replicas = 0;
  bool elastic = false;
  // kPod only on ranks above 0, in the sidecar and pod-preflight modes.
  PreflightScope preflight_scope = PreflightScope::kJob;
  int attempt = 0;   // the gang attempt (a restart makes a new one); rank 0's store must serve it
  int gpus_per_replica = 0;
  // Ranks this sidecar drives in the probe communicator (one thread each; with nccl, local rank
  // l drives CUDA device l); every sidecar must use the same number. 0: one per GPU with nccl,
  // 1 with gloo (see SidecarRun).
  int local_ranks = 0;
  std::string rendezvous_addr;  // required; rank 0's address
  int rendezvous_port = 0;      // required
  // Rank 0's sidecar serves the trainers' store (PyTorch's TCPStore protocol) on this port when
  // set; 0: not served. Other ranks ignore it.
  int trainer_store_port = 0;
  int metrics_port = 0;         // required; 0 picks a free port
  std::string metrics_bind_address;  // host only; "" listens on every address
  Backend backend = Backend::kAuto;
  Mode mode = Mode::kRun;
  bool preflight_enabled = true;
  std::int64_t preflight_min_bytes = std::int64_t{1} << 20;
  std::int64_t preflight_max_bytes = std::int64_t{64} << 20;
  int preflight_step_factor = 2;
  std::int64_t preflight_min_bus_bandwidth = 0;  // bytes per second; 0: no floor
  int preflight_warmup_iterations = 5;
  int preflight_iterations = 20;
  std::chrono::seconds preflight_timeout{300};
  std::chrono::seconds rendezvous_timeout{300};  // when unset: preflight_timeout
  bool monitor_enabled = true;
  std::chrono::seconds monitor_interval{60};
  std::int64_t monitor_message_bytes = std::int64_t{16} << 20;
  std::string token_file{contract::path::kTokenFile};
  std::string token;  // the token file's content less one trailing newline; never empty
  std::string run_dir{contract::path::kRunDir};
  std::string contract_file{contract::path::kContractFile};  // default: run_dir/contract.json
  // The NCCL profiler plugin's side (issue 18), in "sidecar" and "run" modes: the plugin is
  // copied into profiler_plugin_dir for the trainers and its snapshots taken on profiler_socket,
  // unless telemetry is off. Every profiler_interval the sidecar reports its Pod's collectives to
  // rank 0 (the plugin's snapshot interval, so each report has something new).
  bool telemetry_enabled = true;
  std::string profiler_socket;  // default: run_dir/profiler.sock (contract::path::kProfilerSocket)
  std::string profiler_plugin_dir{contract::path::kProfilerPluginDir};
  std::chrono::milliseconds profiler_interval{5000};
  // Rank 0 names a stalled collective once the missing ranks' own snapshots show them this long
  // behind the others (training_stall.h).
  std::chrono::seconds stall_seconds{120};
  // RDMA resources given to this container (the operator's list); any means RDMA was asked for.
  std::string rdma_resources;
  std::string pod_name;
  std::string pod_ip;
  std::string node_name;

  int world_size() const { return replicas; }
};

// The process environment's value for a name, or nullopt. Tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup ProcessEnvironment();
EnvLookup MapEnvironment(std::map<std::string, std::string> values);

// Reads every setting from `lookup` (an empty value counts as unset), then applies `args`
// (flags only, each "--flag VALUE" or "--flag=VALUE"; see SidecarConfigUsage()), then reads the
// token file. Throws SidecarConfigError naming the variable or flag and the value, e.g.
//   RINGLEADER_RANK: "x" is not an integer
//   --rank: 8 is not below RINGLEADER_REPLICAS (8)
//   RINGLEADER_TOKEN_FILE: /var/run/ringleader/token/token: cannot read: No such file or directory
// Unknown flags, flags without a value and positional arguments are errors too.
SidecarConfig ParseSidecarConfig(const std::vector<std::string>& args, const EnvLookup& lookup);

// True when args hold --help or -h; the caller prints SidecarConfigUsage() instead of parsing.
bool HelpRequested(const std::vector<std::string>& args);

// Every flag, its variable and its default, one per line.
std::string SidecarConfigUsage();

}  // namespace ringleader::sidecar
