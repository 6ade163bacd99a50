// The TCPStore client: a non-blocking socket, every wait a poll() with a deadline, requests
// encoded by torch_store_protocol's EncodeRequest and replies read field by field.
#include "sidecar/rendezvous/torch_store_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <utility>

#include "sidecar/rendezvous/blocking_socket.h"
#include "sidecar/rendezvous/torch_store_protocol.h"

namespace ringleader::rendezvous {
namespace {

namespace ts = torch_store;
using blocking::Clock;
using blocking::Dial;
using blocking::ErrnoText;
using blocking::HostPort;
using blocking::kStopped;
using blocking::PollOne;
using blocking::SleepUnlessStopped;
using blocking::Stopping;

// The errors a Connection's I/O fails with besides errno's text; Wait tells a timeout apart.
constexpr std::string_view kTimedOut = "timed out";
// What PyTorch's TCPStore client puts before every key it sends (1.13 and 2.x alike), so a key
// this client writes is the key a PyTorch client of the same name reads.
constexpr std::string_view kTcpStoreKeyPrefix = "/";

// "30 s" for whole seconds, "250 ms" otherwise.
std::string DurationText(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) {
    return std::to_string(duration.count() / 1000) + " s";
  }
  return std::to_string(duration.count()) + " ms";
}

// The deadline `timeout` from now; kWaitForever never passes.
Clock::time_point DeadlineIn(std::chrono::milliseconds timeout) {
  if (timeout == kWaitForever) {
    return Clock::time_point::max();
  }
  return Clock::now() + timeout;
}

std::string WhyNotReady(const std::atomic<bool>* stop) {
  return std::string(Stopping(stop) ? kStopped : kTimedOut);
}

// One request in the 2.x dialect, which has every query the client sends.
std::string Encode(ts::Query query, std::vector<std::string> keys = {},
                   std::vector<std::string> values = {}, std::int64_t number = 0,
                   std::uint32_t nonce = 0) {
  ts::Request request;
  request.query = query;
  request.keys = std::move(keys);
  request.values = std::move(values);
  request.number = number;
  request.nonce = nonce;
  return *ts::EncodeRequest(ts::Dialect::kTorch2, request);
}

}  // namespace

// The socket and exact-length reads and writes on it; errors are bare ("timed out", errno's text).
class TorchStoreClient::Connection {
 public:
  explicit Connection(int fd) : fd_(fd) {}
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Result<Ok> Send(std::string_view bytes, Clock::time_point deadline, const std::atomic<bool>* stop) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Result<Ok>::Failure(ErrnoText(errno));
      }
      pollfd poll_fd{fd_, POLLOUT, 0};
      const int ready = PollOne(poll_fd, deadline, stop);
      if (ready <= 0) {
        return Result<Ok>::Failure(ready < 0 ? ErrnoText(errno) : WhyNotReady(stop));
      }
    }
    return Ok{};
  }

  // Exactly `size` bytes.
  Result<std::string> Receive(std::size_t size, Clock::time_point deadline,
                              const std::atomic<bool>* stop) {
    std::string bytes(size, '\0');
    std::size_t have = 0;
    while (have < size) {
      const ssize_t n = ::recv(fd_, bytes.data() + have, size - have, 0);
      if (n > 0) {
        have += static_cast<std::size_t>(n);
        continue;
      }
      if (n == 0) {
        return Result<std::string>::Failure("connection closed by the store");
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Result<std::string>::Failure(ErrnoText(errno));
      }
      pollfd poll_fd{fd_, POLLIN, 0};
      const int ready = PollOne(poll_fd, deadline, stop);
      if (ready <= 0) {
        return Result<std::string>::Failure(ready < 0 ? ErrnoText(errno) : WhyNotReady(stop));
      }
    }
    return bytes;
  }

  Result<std::uint64_t> ReceiveInteger(std::size_t size, Clock::time_point deadline,
                                       const std::atomic<bool>* stop) {
    Result<std::string> bytes = Receive(size, deadline, stop);
    if (!bytes) {
      return Result<std::uint64_t>::Failure(bytes.error());
    }
    return ts::DecodeLittleEndian(bytes.value());
  }

  // A u64 length, bounded by max_bytes before anything is allocated, then the bytes.
  Result<std::string> ReceiveString(std::size_t max_bytes, Clock::time_point deadline,
                                    const std::atomic<bool>* stop) {
    Result<std::uint64_t> length = ReceiveInteger(8, deadline, stop);
    if (!length) {
      return Result<std::string>::Failure(length.error());
    }
    if (length.value() > max_bytes) {
      return Result<std::string>::Failure("a reply of " + std::to_string(length.value()) +
                                          " bytes exceeds the bound of " +
                                          std::to_string(max_bytes));
    }
    return Receive(static_cast<std::size_t>(length.value()), deadline, stop);
  }

 private:
  int fd_;
};

Result<std::unique_ptr<TorchStoreClient>> TorchStoreClient::Connect(
    const TorchStoreClientOptions& options) {
  using R = Result<std::unique_ptr<TorchStoreClient>>;
  const std::string store_name = "TCPStore " + HostPort(options.host, options.port);
  const Clock::time_point start = Clock::now();
  std::mt19937_64 random(std::random_device{}());
  auto backoff = std::max(options.initial_backoff, std::chrono::milliseconds(1));
  std::string last_error;
  while (true) {
    const Clock::time_point attempt_deadline =
        std::min(options.deadline, Clock::now() + options.io_timeout);
    std::string error;
    if (Result<int> dialed = Dial(options.host, options.port, attempt_deadline, options.stop)) {
      auto connection = std::make_unique<Connection>(dialed.value());
      // As a 2.x client opens: VALIDATE, then a PING whose nonce the store must echo.
      const auto nonce = static_cast<std::uint32_t>(random());
      const std::string hello = Encode(ts::Query::kValidate, {}, {}, 0, ts::kValidationMagic) +
                                Encode(ts::Query::kPing, {}, {}, 0, nonce);
      Result<Ok> sent = connection->Send(hello, attempt_deadline, options.stop);
      Result<std::uint64_t> echo = sent ? connection->ReceiveInteger(4, attempt_deadline, options.stop)
                                        : Result<std::uint64_t>::Failure(sent.error());
      if (echo && echo.value() == nonce) {
        return std::make_unique<TorchStoreClient>(Passkey(), std::move(connection), store_name,
                                                  options);
      }
      error = !echo ? "validation: " + echo.error()
                    : "validation: the ping was answered with " + std::to_string(echo.value()) +
                          ", not its nonce: not PyTorch's TCPStore protocol";
    } else {
      error = dialed.error();
    }
    if (Stopping(options.stop)) {
      return R::Failure(store_name + ": connecting " + std::string(kStopped));
    }
    const Clock::time_point now = Clock::now();
    // A try the overall deadline cut short says only that; the try before it says why.
    if (last_error.empty() || now < options.deadline) {
      last_error = std::move(error);
    }
    if (now >= options.deadline) {
      break;
    }
    if (options.on_attempt_failed) {
      options.on_attempt_failed(last_error);
    }
    std::uniform_int_distribution<long long> jitter(0, backoff.count());
    const auto pause = std::min<Clock::duration>(std::chrono::milliseconds(jitter(random)),
                                                 options.deadline - now);
    SleepUnlessStopped(pause, options.stop);  // a stop ends the next try at once
    backoff = std::min(backoff * 2, std::max(options.max_backoff, backoff));
  }
  const auto waited = std::chrono::round<std::chrono::seconds>(Clock::now() - start);
  return R::Failure(store_name + " unreachable for " + std::to_string(waited.count()) + " s: " +
                    last_error);
}

TorchStoreClient::TorchStoreClient(Passkey, std::unique_ptr<Connection> connection,
                                   std::string store_name, const TorchStoreClientOptions& options)
    : connection_(std::move(connection)),
      store_name_(std::move(store_name)),
      key_prefix_(options.key_prefix),
      io_timeout_(options.io_timeout),
      max_value_bytes_(options.max_value_bytes),
      stop_(options.stop) {}

TorchStoreClient::~TorchStoreClient() = default;

std::string TorchStoreClient::Fail(std::string_view op, std::string_view key, std::string_view what) {
  std::string error = store_name_ + ": " + std::string(op);
  if (!key.empty()) {
    error += " of " + key_prefix_ + std::string(key);
  }
  error += ": " + std::string(what);
  if (!broken_) {
    broken_ = error;
  }
  return error;
}

std::vector<std::string> TorchStoreClient::Prefixed(const std::vector<std::string>& keys) const {
  std::vector<std::string> prefixed;
  prefixed.reserve(keys.size());
  for (const std::string& key : keys) {
    prefixed.push_back(WireKey(key));
  }
  return prefixed;
}

std::string TorchStoreClient::WireKey(std::string_view key) const {
  return std::string(kTcpStoreKeyPrefix) + key_prefix_ + std::string(key);
}

Clock::time_point TorchStoreClient::IoDeadline() const { return DeadlineIn(io_timeout_); }

Result<Ok> TorchStoreClient::Set(std::string_view key, std::string_view value) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_) {
    return Result<Ok>::Failure(*broken_);
  }
  const std::string request = Encode(ts::Query::kSet, {WireKey(key)}, {std::string(value)});
  if (Result<Ok> sent = connection_->Send(request, IoDeadline(), stop_); !sent) {
    return Result<Ok>::Failure(Fail("set", key, sent.error()));
  }
  return Ok{};
}

Result<std::string> TorchStoreClient::Get(std::string_view key, std::chrono::milliseconds timeout) {
  using R = Result<std::string>;
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_) {
    return R::Failure(*broken_);
  }
  Result<bool> came = WaitLocked("get", {std::string(key)}, timeout);
  if (!came) {
    return R::Failure(came.error());
  }
  if (!came.value()) {
    // Not an I/O failure: the wait was cancelled and the connection is still good.
    return R::Failure(store_name_ + ": get of " + key_prefix_ + std::string(key) +
                      ": the key was not set within " + DurationText(timeout));
  }
  const std::string request =
      Encode(ts::Query::kGet, {WireKey(key)});
  const Clock::time_point deadline = IoDeadline();
  if (Result<Ok> sent = connection_->Send(request, deadline, stop_); !sent) {
    return R::Failure(Fail("get", key, sent.error()));
  }
  Result<std::string> value = connection_->ReceiveString(max_value_bytes_, deadline, stop_);
  if (!value) {
    return R::Failure(Fail("get", key, value.error()));
  }
  return value;
}

Result<std::int64_t> TorchStoreClient::Add(std::string_view key, std::int64_t delta) {
  using R = Result<std::int64_t>;
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_) {
    return R::Failure(*broken_);
  }
  const std::string request = Encode(ts::Query::kAdd, {WireKey(key)}, {}, delta);
  const Clock::time_point deadline = IoDeadline();
  if (Result<Ok> sent = connection_->Send(request, deadline, stop_); !sent) {
    return R::Failure(Fail("add", key, sent.error()));
  }
  Result<std::uint64_t> value = connection_->ReceiveInteger(8, deadline, stop_);
  if (!value) {
    return R::Failure(Fail("add", key, value.error()));
  }
  return static_cast<std::int64_t>(value.value());
}

Result<bool> TorchStoreClient::Check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_) {
    return Result<bool>::Failure(*broken_);
  }
  const std::string request = Encode(ts::Query::kCheck, Prefixed(keys));
  const std::string first = keys.empty() ? std::string() : keys.front();
  const Clock::time_point deadline = IoDeadline();
  if (Result<Ok> sent = connection_->Send(request, deadline, stop_); !sent) {
    return Result<bool>::Failure(Fail("check", first, sent.error()));
  }
  Result<std::uint64_t> ready = connection_->ReceiveInteger(1, deadline, stop_);
  if (!ready) {
    return Result<bool>::Failure(Fail("check", first, ready.error()));
  }
  if (ready.value() != ts::kCheckReady && ready.value() != ts::kCheckNotReady) {
    return Result<bool>::Failure(
        Fail("check", first, "unexpected reply " + std::to_string(ready.value())));
  }
  return ready.value() == ts::kCheckReady;
}

Result<TorchWaitOutcome> TorchStoreClient::Wait(const std::vector<std::string>& keys,
                                                std::chrono::milliseconds timeout) {
  using R = Result<TorchWaitOutcome>;
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_) {
    return R::Failure(*broken_);
  }
  Result<bool> came = WaitLocked("wait", keys, timeout);
  if (!came) {
    return R::Failure(came.error());
  }
  if (came.value()) {
    return TorchWaitOutcome{};
  }
  Result<std::vector<std::string>> missing = MissingLocked("wait", keys);
  if (!missing) {
    return R::Failure(missing.error());
  }
  return TorchWaitOutcome{true, std::move(missing).value()};
}

Result<bool> TorchStoreClient::WaitLocked(std::string_view op, const std::vector<std::string>& keys,
                                          std::chrono::milliseconds timeout) {
  const std::string first = keys.empty() ? std::string() : keys.front();
  const std::string request = Encode(ts::Query::kWait, Prefixed(keys));
  if (Result<Ok> sent = connection_->Send(request, IoDeadline(), stop_); !sent) {
    return Result<bool>::Failure(Fail(op, first, sent.error()));
  }
  const auto expect = [&](std::uint64_t got, std::uint8_t wanted) -> std::optional<std::string> {
    if (got == wanted) {
      return std::nullopt;
    }
    return Fail(op, first, "unexpected reply " + std::to_string(got) + " to a wait");
  };
  Result<std::uint64_t> reply = connection_->ReceiveInteger(1, DeadlineIn(timeout), stop_);
  if (reply) {
    if (auto error = expect(reply.value(), ts::kStopWaiting)) {
      return Result<bool>::Failure(*error);
    }
    return true;
  }
  if (reply.error() != kTimedOut) {
    return Result<bool>::Failure(Fail(op, first, reply.error()));
  }
  // As PyTorch 2.x's client does: cancel the wait, so the connection stays in step. The store
  // answers WAIT_CANCELED, after a STOP_WAITING if the keys came meanwhile.
  const Clock::time_point deadline = IoDeadline();
  if (Result<Ok> sent = connection_->Send(Encode(ts::Query::kCancelWait), deadline, stop_);
      !sent) {
    return Result<bool>::Failure(Fail(op, first, sent.error()));
  }
  Result<std::uint64_t> cancelled = connection_->ReceiveInteger(1, deadline, stop_);
  if (!cancelled) {
    return Result<bool>::Failure(Fail(op, first, "cancelling a timed-out wait: " + cancelled.error()));
  }
  const bool came = cancelled.value() == ts::kStopWaiting;
  if (came) {
    cancelled = connection_->ReceiveInteger(1, deadline, stop_);
    if (!cancelled) {
      return Result<bool>::Failure(Fail(op, first, "cancelling a wait: " + cancelled.error()));
    }
  }
  if (auto error = expect(cancelled.value(), ts::kWaitCanceled)) {
    return Result<bool>::Failure(*error);
  }
  return came;
}

Result<std::vector<std::string>> TorchStoreClient::MissingLocked(std::string_view op,
                                                                 const std::vector<std::string>& keys) {
  using R = Result<std::vector<std::string>>;
  std::vector<std::string> missing;
  for (const std::string& key : keys) {
    const std::string request = Encode(ts::Query::kCheck, {WireKey(key)});
    const Clock::time_point deadline = IoDeadline();
    if (Result<Ok> sent = connection_->Send(request, deadline, stop_); !sent) {
      return R::Failure(Fail(op, key, sent.error()));
    }
    Result<std::uint64_t> ready = connection_->ReceiveInteger(1, deadline, stop_);
    if (!ready) {
      return R::Failure(Fail(op, key, ready.error()));
    }
    if (ready.value() != ts::kCheckReady) {
      missing.push_back(key);
    }
  }
  return missing;
}

}  // namespace ringleader::rendezvous
