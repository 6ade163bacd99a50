// The synchronous store client: POSIX sockets, non-blocking, every wait a poll() with a deadline.
#include "sidecar/rendezvous/store_client.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <limits>
#include <random>
#include <system_error>
#include <thread>
#include <utility>
#include <variant>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sidecar/rendezvous/auth.h"

namespace ringleader::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kReceiveChunk = 64 * 1024;
// What a wait that a stop request cut short failed with (ClientOptions::stop).
constexpr std::string_view kStopped = "stopped";

std::string ErrnoText(int error) {
  std::string text = std::generic_category().message(error);
  if (!text.empty()) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

std::string HostPort(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Milliseconds until deadline for poll(): at least 0, rounded up, at most INT_MAX.
int PollMillis(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) {
    return 0;
  }
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<long long>(ms, INT_MAX));
}

bool Stopping(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(); }

// poll() on one descriptor until it is ready (> 0), `deadline` passes or a stop is requested
// (0; the caller tells the two apart with Stopping), or it fails (-1, errno set). With a stop
// to watch, it polls in slices of kStopCheckInterval, so a stop is seen within one.
int PollOne(pollfd& poll_fd, Clock::time_point deadline, const std::atomic<bool>* stop) {
  while (true) {
    if (Stopping(stop) || Clock::now() >= deadline) {
      return 0;
    }
    int wait_ms = PollMillis(deadline);
    if (stop != nullptr) {
      wait_ms = std::min<int>(wait_ms, static_cast<int>(kStopCheckInterval.count()));
    }
    const int ready = ::poll(&poll_fd, 1, wait_ms);
    if (ready != 0 && !(ready < 0 && errno == EINTR)) {
      return ready;
    }
  }
}

// Sleeps for `pause` unless a stop comes first; true when it did.
bool SleepUnlessStopped(Clock::duration pause, const std::atomic<bool>* stop) {
  const Clock::time_point until = Clock::now() + pause;
  while (!Stopping(stop)) {
    const Clock::time_point now = Clock::now();
    if (now >= until) {
      return false;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(until - now, kStopCheckInterval));
  }
  return true;
}

std::uint32_t ClampMillis(std::chrono::milliseconds timeout) {
  return static_cast<std::uint32_t>(
      std::clamp<long long>(timeout.count(), 0, std::numeric_limits<std::uint32_t>::max()));
}

// Owns a descriptor until released.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Sends out and reads replies frames from fd, both directions at once so a long pipeline cannot
// deadlock against the server's bounded buffers. Stops early at a Refused, which it returns,
// and fails with kStopped once `stop` is set.
Result<std::vector<Message>> ExchangeFrames(int fd, FrameDecoder& decoder, std::string_view out,
                                            std::size_t replies, Clock::time_point deadline,
                                            const std::atomic<bool>* stop) {
  using R = Result<std::vector<Message>>;
  std::vector<Message> got;
  got.reserve(replies);
  std::size_t sent = 0;
  char buffer[kReceiveChunk];
  while (true) {
    while (got.size() < replies) {
      std::optional<Frame> frame = decoder.Next();
      if (!frame) {
        break;
      }
      Result<Message> message = DecodeMessage(*frame);
      if (!message) {
        return R::Failure("bad reply: " + message.error());
      }
      const bool refused = std::holds_alternative<Refused>(message.value());
      got.push_back(std::move(message).value());
      if (refused) {
        return got;
      }
    }
    if (got.size() == replies) {
      return got;
    }
    pollfd poll_fd{};
    poll_fd.fd = fd;
    poll_fd.events = static_cast<short>(POLLIN | (sent < out.size() ? POLLOUT : 0));
    const int ready = PollOne(poll_fd, deadline, stop);
    if (ready < 0) {
      return R::Failure(ErrnoText(errno));
    }
    if (ready == 0) {
      return R::Failure(std::string(Stopping(stop) ? kStopped : "timed out"));
    }
    // Read first: a Refused explains a failure to send better than EPIPE does.
    if ((poll_fd.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n == 0) {
        return R::Failure("connection closed by the server");
      }
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return R::Failure(ErrnoText(errno));
        }
      } else if (!decoder.Feed(std::string_view(buffer, static_cast<std::size_t>(n)))) {
        return R::Failure("bad reply: " + decoder.error()->message);
      }
    }
    if ((poll_fd.revents & POLLOUT) != 0 && sent < out.size()) {
      const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return R::Failure(ErrnoText(errno));
        }
      } else {
        sent += static_cast<std::size_t>(n);
      }
    }
  }
}

// A connected non-blocking TCP socket, or why not (kStopped once `stop` is set).
Result<int> Dial(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                 const std::atomic<bool>* stop) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (gai != 0) {
    return Result<int>::Failure("cannot resolve " + host + ": " + ::gai_strerror(gai));
  }
  std::string error = "no address";
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                         ai->ai_protocol));
    if (fd.get() < 0) {
      error = ErrnoText(errno);
      continue;
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        error = ErrnoText(errno);
        continue;
      }
      pollfd poll_fd{};
      poll_fd.fd = fd.get();
      poll_fd.events = POLLOUT;
      const int ready = PollOne(poll_fd, deadline, stop);
      if (ready < 0) {
        error = ErrnoText(errno);
        continue;
      }
      if (ready == 0) {
        if (Stopping(stop)) {
          error = kStopped;
          break;  // the other addresses would be stopped too
        }
        error = "connect timed out";
        continue;
      }
      int so_error = 0;
      socklen_t length = sizeof(so_error);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &length);
      if (so_error != 0) {
        error = ErrnoText(so_error);
        continue;
      }
    }
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::freeaddrinfo(found);
    return fd.release();
  }
  ::freeaddrinfo(found);
  return Result<int>::Failure(error);
}

// Refusals that a later attempt may not meet: the server was busy, not wrong about us.
bool IsRetryableRefusal(std::string_view reason) {
  return reason == "too many connections" || reason == "handshake timeout" ||
         reason == "internal error";
}

struct HandshakeOutcome {
  bool ok = false;
  bool final_refusal = false;  // a refusal not worth retrying
  std::string error;
  // With options.attempt: the server's kAttemptKey (nullopt when it has none).
  std::optional<std::string> served_attempt;
};

// Hello, Challenge, then the Proof. When the rank belongs to a gang attempt, a Get of the
// server's attempt rides in the Proof's write: the server answers it only once the Proof is
// accepted, so checking the attempt costs no round trip of its own.
HandshakeOutcome Handshake(int fd, FrameDecoder& decoder, const ClientOptions& options,
                           Clock::time_point deadline) {
  const auto refused = [](const Refused& r) {
    return HandshakeOutcome{false, !IsRetryableRefusal(r.reason), "refused: " + r.reason, {}};
  };
  Result<std::vector<Message>> challenge =
      ExchangeFrames(fd, decoder, EncodeMessage(Hello{options.rank, options.world_size}), 1,
                     deadline, options.stop);
  if (!challenge) {
    return {false, false, "handshake: " + challenge.error(), {}};
  }
  if (const auto* r = std::get_if<Refused>(&challenge.value()[0])) {
    return refused(*r);
  }
  const auto* c = std::get_if<Challenge>(&challenge.value()[0]);
  if (c == nullptr) {
    return {false, false, "handshake: expected Challenge", {}};
  }
  Proof proof;
  proof.hmac = ComputeProof(options.token, c->nonce, options.rank);
  std::string frames = EncodeMessage(proof);
  if (options.attempt) {
    frames += EncodeMessage(Get{std::string(kAttemptKey)});
  }
  Result<std::vector<Message>> welcome =
      ExchangeFrames(fd, decoder, frames, options.attempt ? 2 : 1, deadline, options.stop);
  if (!welcome) {
    return {false, false, "handshake: " + welcome.error(), {}};
  }
  if (const auto* r = std::get_if<Refused>(&welcome.value()[0])) {
    return refused(*r);
  }
  if (!std::holds_alternative<Welcome>(welcome.value()[0])) {
    return {false, false, "handshake: expected Welcome", {}};
  }
  HandshakeOutcome outcome{true, false, "", {}};
  if (options.attempt) {
    if (const auto* value = std::get_if<Value>(&welcome.value()[1])) {
      outcome.served_attempt = value->value;
    } else if (!std::holds_alternative<NotFound>(welcome.value()[1])) {
      return {false, false, "handshake: unexpected reply to the attempt Get", {}};
    }
  }
  return outcome;
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> items;
  if (text.empty()) {
    return items;
  }
  while (true) {
    const std::size_t comma = text.find(',');
    items.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) {
      return items;
    }
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

std::vector<std::uint32_t> ParseMissingRanks(std::string_view text) {
  std::vector<std::uint32_t> ranks;
  for (const std::string& item : SplitList(text)) {
    std::uint32_t rank = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), rank);
    if (ec == std::errc() && end == item.data() + item.size() && !item.empty()) {
      ranks.push_back(rank);
    }
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

namespace {

// Why a freshly authenticated connection is to a store of another gang attempt, or nullopt when
// it is the right one (or no attempt was asked for).
std::optional<std::string> WrongAttempt(const HandshakeOutcome& outcome,
                                        const ClientOptions& options) {
  if (!options.attempt) {
    return std::nullopt;
  }
  const std::string wanted = std::to_string(*options.attempt);
  if (outcome.served_attempt == wanted) {
    return std::nullopt;
  }
  return "it serves gang attempt " + outcome.served_attempt.value_or("(none)") +
         ", and this rank belongs to attempt " + wanted;
}

}  // namespace

Result<std::unique_ptr<StoreClient>> StoreClient::Connect(const ClientOptions& options) {
  using R = Result<std::unique_ptr<StoreClient>>;
  const std::string server_name =
      "rendezvous server " + HostPort(options.host, options.port) + " (rank 0)";
  const Clock::time_point start = Clock::now();
  std::mt19937_64 random(std::random_device{}());
  auto backoff = std::max(options.initial_backoff, std::chrono::milliseconds(1));
  std::string last_error;
  while (true) {
    const Clock::time_point attempt_deadline =
        std::min(options.deadline, Clock::now() + options.io_timeout);
    Result<int> dialed = Dial(options.host, options.port, attempt_deadline, options.stop);
    std::string error;
    if (dialed) {
      UniqueFd fd(dialed.value());
      FrameDecoder decoder(options.max_frame_payload);
      HandshakeOutcome outcome = Handshake(fd.get(), decoder, options, attempt_deadline);
      if (outcome.ok) {
        std::optional<std::string> wrong_attempt = WrongAttempt(outcome, options);
        if (!wrong_attempt) {
          return std::make_unique<StoreClient>(Passkey(), fd.release(), server_name, options);
        }
        error = std::move(*wrong_attempt);  // fd closes; the next try may find the right rank 0
      } else if (outcome.final_refusal) {
        return R::Failure(server_name + " " + outcome.error + " (rank " +
                          std::to_string(options.rank) + " of " +
                          std::to_string(options.world_size) + ")");
      } else {
        error = std::move(outcome.error);
      }
    } else {
      error = dialed.error();
    }
    if (Stopping(options.stop)) {
      return R::Failure(server_name + ": connecting " + std::string(kStopped));
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
    if (SleepUnlessStopped(pause, options.stop)) {
      return R::Failure(server_name + ": connecting " + std::string(kStopped));
    }
    backoff = std::min(backoff * 2, std::max(options.max_backoff, backoff));
  }
  const auto waited = std::chrono::round<std::chrono::seconds>(Clock::now() - start);
  return R::Failure(server_name + " unreachable for " + std::to_string(waited.count()) +
                    " s: " + last_error);
}

StoreClient::StoreClient(Passkey, int fd, std::string server_name, const ClientOptions& options)
    : fd_(fd),
      server_name_(std::move(server_name)),
      rank_(options.rank),
      world_size_(options.world_size),
      io_timeout_(options.io_timeout),
      stop_(options.stop),
      decoder_(options.max_frame_payload) {}

StoreClient::~StoreClient() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

std::string StoreClient::Failure(std::string_view op, std::string_view what) {
  return server_name_ + ": " + std::string(op) + " failed: " + std::string(what);
}

Result<std::vector<Message>> StoreClient::Exchange(std::string_view op, const std::string& frames,
                                                   std::size_t replies,
                                                   Clock::time_point deadline) {
  using R = Result<std::vector<Message>>;
  if (broken_) {
    return R::Failure(*broken_);
  }
  Result<std::vector<Message>> got =
      ExchangeFrames(fd_, decoder_, frames, replies, deadline, stop_);
  if (!got) {
    broken_ = Failure(op, got.error());
    return R::Failure(*broken_);
  }
  if (got.value().size() < replies) {  // stopped at a Refused
    broken_ = Failure(op, "refused: " + std::get<Refused>(got.value().back()).reason);
    return R::Failure(*broken_);
  }
  return got;
}

Result<Message> StoreClient::Call(std::string_view op, const std::string& frame,
                                  std::chrono::milliseconds extra_timeout) {
  Result<std::vector<Message>> got =
      Exchange(op, frame, 1, Clock::now() + io_timeout_ + extra_timeout);
  if (!got) {
    return Result<Message>::Failure(got.error());
  }
  Message reply = std::move(std::move(got).value()[0]);
  if (const auto* error = std::get_if<Error>(&reply)) {
    return Result<Message>::Failure(Failure(op, error->message));
  }
  return reply;
}

namespace {

// The error for a reply an op does not expect; the connection's replies can no longer be
// matched to requests, so the caller marks it broken.
std::string UnexpectedReply(const Message& reply) {
  return "unexpected reply " +
         std::string(MessageTypeName(std::visit([](const auto& m) { return m.kType; }, reply)));
}

}  // namespace

Result<Ok> StoreClient::Set(std::string_view key, std::string_view value) {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<Message> reply =
      Call("Set", EncodeMessage(rendezvous::Set{std::string(key), std::string(value)}));
  if (!reply) {
    return Result<Ok>::Failure(reply.error());
  }
  if (std::holds_alternative<Ok>(reply.value())) {
    return Ok{};
  }
  broken_ = Failure("Set", UnexpectedReply(reply.value()));
  return Result<Ok>::Failure(*broken_);
}

Result<std::optional<std::string>> StoreClient::Get(std::string_view key) {
  using R = Result<std::optional<std::string>>;
  std::lock_guard<std::mutex> lock(mutex_);
  Result<Message> reply = Call("Get", EncodeMessage(rendezvous::Get{std::string(key)}));
  if (!reply) {
    return R::Failure(reply.error());
  }
  if (const auto* value = std::get_if<Value>(&reply.value())) {
    return std::optional<std::string>(value->value);
  }
  if (std::holds_alternative<NotFound>(reply.value())) {
    return std::optional<std::string>();
  }
  broken_ = Failure("Get", UnexpectedReply(reply.value()));
  return R::Failure(*broken_);
}

Result<std::vector<std::optional<std::string>>> StoreClient::MultiGet(
    const std::vector<std::string>& keys) {
  using R = Result<std::vector<std::optional<std::string>>>;
  std::lock_guard<std::mutex> lock(mutex_);
  std::string frames;
  for (const std::string& key : keys) {
    frames += EncodeMessage(rendezvous::Get{key});
  }
  Result<std::vector<Message>> got =
      Exchange("Get", frames, keys.size(), Clock::now() + io_timeout_);
  if (!got) {
    return R::Failure(got.error());
  }
  std::vector<Message> replies = std::move(got).value();
  return GetValues(replies, 0);
}

Result<std::vector<std::optional<std::string>>> StoreClient::GetValues(
    std::vector<Message>& replies, std::size_t first) {
  using R = Result<std::vector<std::optional<std::string>>>;
  std::vector<std::optional<std::string>> values;
  values.reserve(replies.size() - first);
  for (std::size_t i = first; i < replies.size(); ++i) {
    Message& reply = replies[i];
    if (auto* value = std::get_if<Value>(&reply)) {
      values.emplace_back(std::move(value->value));
    } else if (std::holds_alternative<NotFound>(reply)) {
      values.emplace_back();
    } else if (const auto* error = std::get_if<Error>(&reply)) {
      return R::Failure(Failure("Get", error->message));
    } else {
      broken_ = Failure("Get", UnexpectedReply(reply));
      return R::Failure(*broken_);
    }
  }
  return values;
}

Result<WaitOutcome> StoreClient::Wait(const std::vector<std::string>& keys,
                                      std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<Message> reply =
      Call("Wait", EncodeMessage(rendezvous::Wait{keys, ClampMillis(timeout)}), timeout);
  if (!reply) {
    return Result<WaitOutcome>::Failure(reply.error());
  }
  if (std::holds_alternative<Ok>(reply.value())) {
    return WaitOutcome{};
  }
  if (const auto* timed_out = std::get_if<TimedOut>(&reply.value())) {
    return WaitOutcome{true, SplitList(timed_out->missing)};
  }
  broken_ = Failure("Wait", UnexpectedReply(reply.value()));
  return Result<WaitOutcome>::Failure(*broken_);
}

Result<std::int64_t> StoreClient::Add(std::string_view key, std::int64_t delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<Message> reply = Call("Add", EncodeMessage(rendezvous::Add{std::string(key), delta}));
  if (!reply) {
    return Result<std::int64_t>::Failure(reply.error());
  }
  if (const auto* counter = std::get_if<Counter>(&reply.value())) {
    return counter->value;
  }
  broken_ = Failure("Add", UnexpectedReply(reply.value()));
  return Result<std::int64_t>::Failure(*broken_);
}

Result<std::string> StoreClient::CompareSet(std::string_view key, std::string_view expected,
                                            std::string_view desired) {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<Message> reply =
      Call("CompareSet", EncodeMessage(rendezvous::CompareSet{
                             std::string(key), std::string(expected), std::string(desired)}));
  if (!reply) {
    return Result<std::string>::Failure(reply.error());
  }
  if (auto* value = std::get_if<Value>(&reply.value())) {
    return std::string(value->value);
  }
  broken_ = Failure("CompareSet", UnexpectedReply(reply.value()));
  return Result<std::string>::Failure(*broken_);
}

Result<BarrierOutcome> StoreClient::Barrier(std::string_view name,
                                            std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<Message> reply = Call(
      "Barrier", EncodeMessage(rendezvous::Barrier{std::string(name), ClampMillis(timeout)}),
      timeout);
  if (!reply) {
    return Result<BarrierOutcome>::Failure(reply.error());
  }
  return BarrierFrom(reply.value());
}

Result<BarrierOutcome> StoreClient::BarrierFrom(const Message& reply) {
  if (std::holds_alternative<Ok>(reply)) {
    return BarrierOutcome{};
  }
  if (const auto* timed_out = std::get_if<TimedOut>(&reply)) {
    return BarrierOutcome{true, ParseMissingRanks(timed_out->missing)};
  }
  if (const auto* error = std::get_if<Error>(&reply)) {
    return Result<BarrierOutcome>::Failure(Failure("Barrier", error->message));
  }
  broken_ = Failure("Barrier", UnexpectedReply(reply));
  return Result<BarrierOutcome>::Failure(*broken_);
}

Result<SetBarrierGetOutcome> StoreClient::SetBarrierMultiGet(std::string_view key,
                                                             std::string_view value,
                                                             std::string_view barrier,
                                                             std::chrono::milliseconds timeout,
                                                             const std::vector<std::string>& keys) {
  using R = Result<SetBarrierGetOutcome>;
  std::lock_guard<std::mutex> lock(mutex_);
  std::string frames =
      EncodeMessage(rendezvous::Set{std::string(key), std::string(value)}) +
      EncodeMessage(rendezvous::Barrier{std::string(barrier), ClampMillis(timeout)});
  for (const std::string& get : keys) {
    frames += EncodeMessage(rendezvous::Get{get});
  }
  Result<std::vector<Message>> got =
      Exchange("Set+Barrier+Get", frames, 2 + keys.size(), Clock::now() + io_timeout_ + timeout);
  if (!got) {
    return R::Failure(got.error());
  }
  std::vector<Message> replies = std::move(got).value();
  if (const auto* error = std::get_if<Error>(&replies[0])) {
    return R::Failure(Failure("Set", error->message));
  }
  if (!std::holds_alternative<Ok>(replies[0])) {
    broken_ = Failure("Set", UnexpectedReply(replies[0]));
    return R::Failure(*broken_);
  }
  Result<BarrierOutcome> met = BarrierFrom(replies[1]);
  if (!met) {
    return R::Failure(met.error());
  }
  SetBarrierGetOutcome outcome{std::move(met).value(), {}};
  if (outcome.barrier.timed_out) {
    return outcome;  // the Gets were answered too, but before every rank had published
  }
  Result<std::vector<std::optional<std::string>>> values = GetValues(replies, 2);
  if (!values) {
    return R::Failure(values.error());
  }
  outcome.values = std::move(values).value();
  return outcome;
}

}  // namespace ringleader::rendezvous
