// The synchronous store client: POSIX sockets, non-blocking, every wait a poll() with a deadline.
#include "sidecar/rendezvous/store_client.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>
#include <random>
#include <utility>
#include <variant>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sidecar/rendezvous/auth.h"
#include "sidecar/rendezvous/blocking_socket.h"

namespace ringleader::rendezvous {
namespace {

using blocking::Clock;
using blocking::Dial;
using blocking::ErrnoText;
using blocking::HostPort;
using blocking::kStopped;
using blocking::PollOne;
using blocking::SleepUnlessStopped;
using blocking::Stopping;
using blocking::UniqueFd;

constexpr std::size_t kReceiveChunk = 64 * 1024;

std::uint32_t ClampMillis(std::chrono::milliseconds timeout) {
  return static_cast<std::uint32_t>(
      std::clamp<long long>(timeout.count(), 0, std::numeric_limits<std::uint32_t>::max()));
}

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
  const std::uint32_t rank_bound = options.max_ranks != 0 ? options.max_ranks : options.world_size;
  Result<std::vector<Message>> challenge =
      ExchangeFrames(fd, decoder, EncodeMessage(Hello{options.rank, rank_bound}), 1,
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
