// The resolved contract the sidecar writes for the trainers after rendezvous
// (contract::path::kContractFile): rank 0's IP address, the job's ports, ranks and sizes, as
//   {"version": 1, "masterAddr": "10.0.3.7", "masterPort": 61000, "rendezvousPort": 61001,
//    "metricsPort": 61002, "sparePort": 61003, "rank": 2, "worldSize": 32, "localWorldSize": 8,
//    "nodeRank": 2, "jobName": "llama", "jobNamespace": "team-a", "backend": "nccl"}
// A trainer that finds the file finds it whole: it is written to a temporary file in the same
// directory, fsynced and renamed over the old one.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ringleader::sidecar {

class ContractFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kContractFileVersion = 1;

struct ResolvedContract {
  std::string master_addr;  // rank 0's IP address
  int master_port = 0;
  int rendezvous_port = 0;
  int metrics_port = 0;
  int spare_port = 0;
  int rank = 0;
  int world_size = 0;
  int local_world_size = 0;
  int node_rank = 0;
  std::string job_name;
  std::string job_namespace;
  std::string backend;  // "gloo" or "nccl"
  bool operator==(const ResolvedContract&) const = default;
};

nlohmann::json ContractToJson(const ResolvedContract& contract);

// Writes ContractToJson(contract) to `path` atomically (see WriteFileAtomically).
void WriteContractFile(const std::string& path, const ResolvedContract& contract);

// Reads and checks a file written by WriteContractFile. Throws ContractFileError naming the path
// and the offending member, e.g. "/run/contract.json: worldSize: must be an integer >= 1".
ResolvedContract ReadContractFile(const std::string& path);

// Replaces `path` with `content` (mode 0644): a temporary file beside it, written, fsynced and
// renamed over `path`, then the directory fsynced. On failure `path` is left as it was, the
// temporary file is removed, and ContractFileError names `path` and the system's reason.
void WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace ringleader::sidecar
