// Names the transport NCCL really used, from its own INFO output (NCCL_DEBUG=INFO with the INIT
// and NET subsystems, NCCL_DEBUG_FILE=<run dir>/<prefix>.%h.%p): the net plugin and its HCAs or
// interfaces, GPUDirect RDMA, and the intra-node paths (P2P, SHM, NVLS) the channels took.
// Pure text in, a summary out: no NCCL, no CUDA, nothing wired to the sidecar here.
//
// The line formats are NCCL's own log strings, 2.18 to 2.28 (src/debug.cc, src/init.cc,
// src/plugin/net.cc, src/transport/{net,p2p,shm,nvls}.cc, src/transport/net_ib*.cc,
// net_socket.cc), which NVIDIA's ext-net plugins (IBext_vN) copy:
//   <host>:<pid>:<tid> [<dev>] NCCL INFO <message>   (2.25+ may put a timestamp before it)
//   NCCL version 2.21.5+cuda12.4
//   Using network IB                                  (2.26+ also: Assigned NET plugin IB to comm)
//   NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
//   NET/IB : No device found.
//   NET/Socket : Using [0]eth0:10.1.2.3<0> [1]eth1:10.2.0.3<0>
//   NVLS multicast support is available on dev 0 ...; NVLS comm 0x... headRank 0 nHeads 4 ...
//   Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA  (or NET/IB/0(4)/GDRDMA(PCI)/Shared)
//   Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read              (P2P/IPC, P2P/direct pointer,
//                                                                P2P/MNNVL, P2P/indirect/2[2], /CE)
//   Channel 00 : 0[0] -> 1[1] via SHM/direct/direct
// Lines that match none of these, or match them garbled, are skipped.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::collectives {

// How much is read, so that a huge or hostile log costs bounded memory and time. NCCL logs the
// lines that matter at communicator init, at the head of each file.
struct NcclLogLimits {
  std::size_t max_files = 256;
  std::size_t max_bytes_per_file = std::size_t{4} << 20;
  std::size_t max_line_bytes = 4096;  // NCCL formats a line in 1 KiB; longer ones are skipped
};

struct NcclIbDevice {
  std::string name;        // mlx5_0
  int port = 0;            // 1
  std::string link_layer;  // IB or RoCE

  bool operator==(const NcclIbDevice&) const = default;
};

struct NcclSocketInterface {
  std::string name;     // eth0
  std::string address;  // 10.1.2.3

  bool operator==(const NcclSocketInterface&) const = default;
};

struct NcclTransportSummary {
  std::string nccl_version;  // 2.21.5+cuda12.4; empty when no rank printed it
  // The net plugin most processes chose ("IB", "Socket", "IBext_v8", ...), and every one seen.
  std::string network;
  std::vector<std::string> networks;
  int processes = 0;         // distinct host:pid that named their network
  int socket_processes = 0;  // of which chose NET/Socket
  // The HCAs NET connections went through; every HCA NCCL listed when no connection was logged.
  std::vector<NcclIbDevice> ib_devices;
  // Likewise for NET/Socket's interfaces.
  std::vector<NcclSocketInterface> socket_interfaces;
  bool ib_found_no_device = false;  // "NET/IB : No device found."
  bool gpudirect_rdma = false;      // some NET connection ran /GDRDMA
  bool nvls_available = false;      // NVLS multicast is supported on some device
  bool nvls_used = false;           // some communicator set up NVLS buffers
  // Distinct connections (channel, peers, path) per path: "NET/IB/GDRDMA", "NET/Socket",
  // "P2P/CUMEM/read", "P2P/IPC", "P2P/direct", "P2P/MNNVL", "P2P/indirect", "SHM", "SHM/CE".
  std::map<std::string, int> connections;
  std::size_t lines = 0;   // NCCL INFO lines seen
  bool truncated = false;  // a limit cut the input short: the summary may miss something

  // Connections whose path starts with "NET/".
  int NetConnections() const;
};

// Reads NCCL debug text fed in chunks of any size, from one or several sources (files), and
// merges what every process logged.
class NcclLogParser {
 public:
  explicit NcclLogParser(NcclLogLimits limits = {});
  ~NcclLogParser();
  NcclLogParser(NcclLogParser&&) noexcept;
  NcclLogParser& operator=(NcclLogParser&&) noexcept;

  // `source` names where the text came from; it stands for the process of lines that carry no
  // host:pid prefix. Text past limits.max_bytes_per_file of one source is dropped.
  void Feed(std::string_view chunk, std::string_view source = {});
  // Ends the current source: a last line without a newline is parsed now.
  void EndSource();
  NcclTransportSummary Summary() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

NcclTransportSummary SummariseNcclDebugText(std::string_view text,
                                            const NcclLogLimits& limits = {});

// Reads each file's head (limits.max_bytes_per_file) and at most limits.max_files files; one
// that cannot be read is skipped and sets `truncated`.
NcclTransportSummary SummariseNcclDebugFiles(const std::vector<std::filesystem::path>& files,
                                             const NcclLogLimits& limits = {});

// The regular files in `dir` whose name starts with `name_prefix` (NCCL_DEBUG_FILE's
// <dir>/<prefix>.%h.%p), sorted by name, at most `max_files`. Empty when `dir` is unreadable.
std::vector<std::filesystem::path> FindNcclDebugFiles(const std::filesystem::path& dir,
                                                      std::string_view name_prefix,
                                                      std::size_t max_files);

// A short label for a table header: "NET/IB (mlx5_0:1, mlx5_1:1, GDRDMA) + P2P/CUMEM",
// "NET/Socket (eth0)", "P2P/CUMEM/read + SHM". Empty when the logs named nothing.
std::string NcclTransportLabel(const NcclTransportSummary& summary);

// Why an alert should fire when a job asked for RDMA (RDMA resources or NCCL_IB_* set) and NCCL
// talked over sockets anyway; nullopt when it did not ask, when no process used NET/Socket, or
// when the logs do not say.
std::optional<std::string> RdmaFallbackReason(const NcclTransportSummary& summary,
                                              bool asked_for_rdma);

}  // namespace ringleader::collectives
