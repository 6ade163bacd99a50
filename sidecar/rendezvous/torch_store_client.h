// A blocking client of PyTorch's TCPStore protocol in its 2.x dialect (torch_store_protocol.h),
// as a trainer with TORCHELASTIC_USE_AGENT_STORE=True uses the store on MASTER_PORT that rank 0's
// sidecar serves: one TCP connection, every read and write bounded by a poll() deadline. Failures
// are values naming the store's host:port and the key.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/rendezvous/protocol.h"

namespace ringleader::rendezvous {

// A Wait with no timeout of its own: it ends when the keys exist, the connection fails, or the
// client's stop flag is set.
inline constexpr std::chrono::milliseconds kWaitForever = std::chrono::milliseconds::max();

struct TorchStoreClientOptions {
  std::string host;  // a name or an address
  std::uint16_t port = 0;
  // Every key is sent under this prefix, as PyTorch's PrefixStore does ("/worker/attempt_0/");
  // errors name the whole key. Like PyTorch's TCPStore client, the client puts a "/" before it
  // on the wire, so keys match those of PyTorch clients of the same store.
  std::string key_prefix;
  // Connect retries (refused, reset, unresolvable, no answer to the validation) until here: the
  // store's owner may still be starting.
  std::chrono::steady_clock::time_point deadline;
  // Exponential backoff with full jitter between attempts.
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  // For one connect attempt, and for each op; Wait and Get add their own timeout.
  std::chrono::milliseconds io_timeout{30'000};
  // The longest value a reply may carry, checked before anything is allocated for it.
  std::size_t max_value_bytes = 64 * 1024 * 1024;
  // Called after each failed connect attempt that will be retried, with why it failed.
  std::function<void(std::string_view error)> on_attempt_failed;
  // The owner's stop request, or null. Once it is true, Connect and every op give up within
  // 100 ms with an error ending in "stopped"; the connection is then broken. Must outlive the
  // client.
  const std::atomic<bool>* stop = nullptr;
};

// A Wait's outcome: done, or timed out with the keys (without the prefix) still missing then.
struct TorchWaitOutcome {
  bool timed_out = false;
  std::vector<std::string> missing_keys;
};

class TorchStoreClient {
 public:
  // Connects, sends VALIDATE and a PING, and checks the PING's echo, retrying until
  // options.deadline (or options.stop). Errors read like "TCPStore 10.0.0.1:29500 unreachable for
  // 60 s: connection refused".
  static Result<std::unique_ptr<TorchStoreClient>> Connect(const TorchStoreClientOptions& options);

  ~TorchStoreClient();
  TorchStoreClient(const TorchStoreClient&) = delete;
  TorchStoreClient& operator=(const TorchStoreClient&) = delete;

  // Each op is one request and its reply; calls from several threads are serialised. After an
  // I/O failure (store gone, timeout) every later call fails at once with the same error.
  Result<Ok> Set(std::string_view key, std::string_view value);
  // Waits up to `timeout` for the key, then reads it (PyTorch's get: a missing key is waited
  // for, never read as empty). A timeout fails naming the key.
  Result<std::string> Get(std::string_view key, std::chrono::milliseconds timeout);
  // The new value.
  Result<std::int64_t> Add(std::string_view key, std::int64_t delta);
  // Whether every key exists now.
  Result<bool> Check(const std::vector<std::string>& keys);
  // Until every key exists or `timeout` passes. A timed-out wait is cancelled on the server
  // (CANCEL_WAIT), so the connection stays usable, and the keys still missing are named.
  Result<TorchWaitOutcome> Wait(const std::vector<std::string>& keys,
                                std::chrono::milliseconds timeout);

  // "TCPStore host:port", as errors name it.
  const std::string& store_name() const { return store_name_; }
  const std::string& key_prefix() const { return key_prefix_; }

 private:
  // Lets Connect use make_unique while the constructor stays out of reach.
  class Passkey {
    friend class TorchStoreClient;
    Passkey() = default;
  };

 public:
  class Connection;
  TorchStoreClient(Passkey, std::unique_ptr<Connection> connection, std::string store_name,
                   const TorchStoreClientOptions& options);

 private:

  // Marks the connection broken with `what` (the first failure sticks) and returns the error.
  std::string Fail(std::string_view op, std::string_view key, std::string_view what);
  // A key as it goes on the wire: PyTorch's "/", the prefix, the key.
  std::string WireKey(std::string_view key) const;
  std::vector<std::string> Prefixed(const std::vector<std::string>& keys) const;
  std::chrono::steady_clock::time_point IoDeadline() const;
  // WAIT on the wire, the lock held; a timeout sends CANCEL_WAIT. True when the keys came.
  Result<bool> WaitLocked(std::string_view op, const std::vector<std::string>& keys,
                          std::chrono::milliseconds timeout);
  Result<std::vector<std::string>> MissingLocked(std::string_view op,
                                                 const std::vector<std::string>& keys);

  std::mutex mutex_;
  std::unique_ptr<Connection> connection_;
  std::string store_name_;
  std::string key_prefix_;
  std::chrono::milliseconds io_timeout_;
  std::size_t max_value_bytes_;
  const std::atomic<bool>* stop_;
  std::optional<std::string> broken_;  // the first I/O failure, repeated thereafter
};

}  // namespace ringleader::rendezvous
