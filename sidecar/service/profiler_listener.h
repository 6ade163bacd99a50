// The sidecar's end of the NCCL profiler plugin (sidecar/profiler): it copies the plugin where the
// trainers load it from, and listens on a Unix socket for the snapshots the plugin sends
// (profiler/snapshot_protocol.h), handing each decoded one to a sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sidecar/profiler/snapshot_protocol.h"

namespace ringleader::sidecar {

// Why a frame, a connection or a snapshot was turned away; the metrics label by these, so the
// set is fixed.
enum class FrameRejection : std::uint8_t {
  kBadHeader,           // wrong magic, version or type: not the plugin speaking
  kTooLarge,            // the header announced more than the listener's max payload
  kBadPayload,          // the payload does not decode (DecodeSnapshot's error)
  kTruncated,           // the connection closed in the middle of a frame
  kTooManyConnections,  // accepted beyond the connection cap and closed at once
  kStale,               // a sequence number at or below one already taken from that process
  kTableFull,           // a new process, but every slot of the process table is held
};
inline constexpr std::size_t kFrameRejectionCount = 7;
// "bad_header", "too_large", "bad_payload", "truncated", "too_many_connections", "stale",
// "table_full".
std::string_view FrameRejectionName(FrameRejection reason);

// Where the listener delivers. Called on the listener's thread, one call at a time; must not
// block for long (every connection shares the thread) and should not throw (a throw closes the
// connection that caused it).
class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  // A snapshot that decoded, from connection `connection` (ids are never reused).
  virtual void OnSnapshot(std::uint64_t connection, const profiler::Snapshot& snapshot) = 0;
  // The connection closed, for whatever reason; no snapshot from it follows.
  virtual void OnConnectionClosed(std::uint64_t connection) = 0;
  virtual void OnRejected(FrameRejection reason) = 0;
};

struct ProfilerListenerOptions {
  std::string path;  // the Unix socket; must fit sockaddr_un (107 bytes)
  // Connections open at once; a connection beyond is closed at once (kTooManyConnections).
  std::size_t max_connections = 256;
  // One frame's payload; a real process sends a few KiB. Bounds what one connection can make
  // the sidecar buffer (max_connections x this, at worst).
  std::size_t max_payload_bytes = std::size_t{4} << 20;
};

// Listens on options.path with one Boost.Asio event loop on a thread of its own. A stale file at
// the path (a socket left by an earlier sidecar) is removed first; the socket is made 0666 since
// trainers may run as another uid. One SnapshotFrameDecoder per connection: a bad or oversized
// frame closes that connection and is counted through the sink; nothing the peer sends can make
// the listener throw or block.
class ProfilerListener {
 public:
  // Throws std::runtime_error naming the path when it cannot listen (too long, a non-socket file
  // in the way, bind or listen failed). `sink` must outlive this.
  ProfilerListener(ProfilerListenerOptions options, SnapshotSink& sink);
  // Stops: closes every connection, joins the thread, removes the socket file.
  ~ProfilerListener();
  ProfilerListener(const ProfilerListener&) = delete;
  ProfilerListener& operator=(const ProfilerListener&) = delete;

  const std::string& path() const;
  // Connections open now (for tests).
  std::size_t OpenConnectionsForTest() const;

 private:
  class Core;
  std::unique_ptr<Core> core_;
};

// The plugin's file in the sidecar's image: beside the running executable (/proc/self/exe).
std::string ProfilerPluginSource();

// Copies `source` to `directory`/contract::kProfilerPluginFileName atomically (a temporary file
// in the same directory, mode 0755, then rename), so a trainer never loads half a file. nullopt
// on success, else what failed, e.g. "/var/run/ringleader/profiler: cannot create a file: Read-only
// file system". Never throws.
std::optional<std::string> InstallProfilerPlugin(const std::string& source,
                                                 const std::string& directory);

}  // namespace ringleader::sidecar
