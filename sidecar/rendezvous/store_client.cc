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

// Refusals that a later attempt may not meet: the server was busy, not wrong about us, or it is
// the old rank 0 of another gang attempt, still answering under the job's DNS name.
bool IsRetryableRefusal(std::string_view reason) {
  return reason == "too many connections" || reason == "handshake timeout" ||
         reason == "internal error" || reason.starts_with("attempt mismatch") ||
         reason.ends_with(kRetryWithChallenge);
}

struct HandshakeOutcome {
  bool ok = false;
  bool final_refusal = false;  // a refusal not worth retrying
  bool retry_with_challenge = false;  // the server did not take the early proof
  std::string error;
};

// The Hello with an early proof (auth.h), or, with `challenge` (or when the CSPRNG fails), the
// Hello that asks for a Challenge.
Hello MakeHello(const ClientOptions& options, bool challenge) {
  Hello hello;
  hello.rank = options.rank;
  hello.world_size = options.max_ranks != 0 ? options.max_ranks : options.world_size;
  hello.attempt = options.attempt.value_or(kAnyAttempt);
  const std::optional<Nonce> nonce = challenge ? std::nullopt : MakeNonce();
  if (nonce) {
    hello.sent_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    hello.nonce = *nonce;
    hello.early_proof = ComputeEarlyProof(options.token, hello);
  }
  return hello;
}

// The Hello and the Welcome: one round trip with an early proof, `ahead` (request frames) in the
// same write; with `challenge`, the Challenge and the Proof first, `ahead` in the Proof's write.
// The server answers `ahead` only once it has welcomed the rank; their replies stay in decoder.
HandshakeOutcome Handshake(int fd, FrameDecoder& decoder, const ClientOptions& options,
                           bool challenge, std::string_view ahead, Clock::time_point deadline) {
  const auto refused = [](const Refused& r) {
    HandshakeOutcome outcome{false, !IsRetryableRefusal(r.reason), false, "refused: " + r.reason};
    outcome.retry_with_challenge = r.reason.ends_with(kRetryWithChallenge);
    return outcome;
  };
  const Hello hello = MakeHello(options, challenge);
  std::string frames = EncodeMessage(hello);
  if (hello.sent_at_ms == 0) {
    Result<std::vector<Message>> reply =
        ExchangeFrames(fd, decoder, frames, 1, deadline, options.stop);
    if (!reply) {
      return {false, false, false, "handshake: " + reply.error()};
    }
    if (const auto* r = std::get_if<Refused>(&reply.value()[0])) {
      return refused(*r);
    }
    const auto* c = std::get_if<Challenge>(&reply.value()[0]);
    if (c == nullptr) {
      return {false, false, false, "handshake: expected Challenge"};
    }
    frames = EncodeMessage(Proof{ComputeProof(options.token, c->nonce, options.rank)});
  }
  frames.append(ahead);
  Result<std::vector<Message>> welcome =
      ExchangeFrames(fd, decoder, frames, 1, deadline, options.stop);
  if (!welcome) {
    return {false, false, false, "handshake: " + welcome.error()};
  }
  if (const auto* r = std::get_if<Refused>(&welcome.value()[0])) {
    return refused(*r);
  }
  if (!std::holds_alternative<Welcome>(welcome.value()[0])) {
    return {false, false, false, "handshake: expected Welcome"};
  }
  return {true, false, false, ""};
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

Result<std::unique_ptr<StoreClient>> StoreClient::Connect(const ClientOptions& options) {
  return ConnectSending(options, [] { return std::string(); });
}

Result<std::unique_ptr<StoreClient>> StoreClient::ConnectSending(
    const ClientOptions& options, const std::function<std::string()>& ahead) {
  using R = Result<std::unique_ptr<StoreClient>>;
  const std::string server_name =
      "rendezvous server " + HostPort(options.host, options.port) + " (rank 0)";
  const Clock::time_point start = Clock::now();
  std::mt19937_64 random(std::random_device{}());
  auto backoff = std::max(options.initial_backoff, std::chrono::milliseconds(1));
  std::string last_error;
  bool challenge = false;  // once a server has not taken an early proof, ask for a Challenge
  while (true) {
    const Clock::time_point attempt_deadline =
        std::min(options.deadline, Clock::now() + options.io_timeout);
    Result<int> dialed = Dial(options.host, options.port, attempt_deadline, options.stop);
    std::string error;
    bool again_at_once = false;
    if (dialed) {
      UniqueFd fd(dialed.value());
      FrameDecoder decoder(options.max_frame_payload);
      HandshakeOutcome outcome =
          Handshake(fd.get(), decoder, options, challenge, ahead(), attempt_deadline);
      if (outcome.ok) {
        return std::make_unique<StoreClient>(Passkey(), fd.release(), std::move(decoder),
                                             server_name, options);
      }
      if (outcome.final_refusal) {
        return R::Failure(server_name + " " + outcome.error + " (rank " +
                          std::to_string(options.rank) + " of " +
                          std::to_string(options.world_size) + ")");
      }
      // The server's clock and ours disagree (or a nonce came back): the challenge needs none.
      again_at_once = outcome.retry_with_challenge && !challenge;
      challenge = challenge || outcome.retry_with_challenge;
      error = std::move(outcome.error);
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
    if (again_at_once) {
      continue;
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

StoreClient::StoreClient(Passkey, int fd, FrameDecoder decoder, std::string server_name,
                         const ClientOptions& options)
    : fd_(fd),
      server_name_(std::move(server_name)),
      rank_(options.rank),
      world_size_(options.world_size),
      io_timeout_(options.io_timeout),
      stop_(options.stop),
      decoder_(std::move(decoder)) {}

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

namespace {

std::string SetBarrierGetFrames(const SetBarrierGet& request) {
  std::string frames =
      EncodeMessage(rendezvous::Set{request.key, request.value}) +
      EncodeMessage(rendezvous::Barrier{request.barrier, ClampMillis(request.timeout)});
  for (const std::string& get : request.keys) {
    frames += EncodeMessage(rendezvous::Get{get});
  }
  return frames;
}

}  // namespace

Result<SetBarrierGetOutcome> StoreClient::SetBarrierMultiGet(std::string_view key,
                                                             std::string_view value,
                                                             std::string_view barrier,
                                                             std::chrono::milliseconds timeout,
                                                             const std::vector<std::string>& keys) {
  const SetBarrierGet request{std::string(key), std::string(value), std::string(barrier), timeout,
                              keys};
  std::lock_guard<std::mutex> lock(mutex_);
  return SetBarrierGetReplies(request, SetBarrierGetFrames(request));
}

Result<std::unique_ptr<StoreClient>> StoreClient::ConnectSendingSetBarrierMultiGet(
    const ClientOptions& options, const SetBarrierGet& request) {
  // Each try sends what is left of the barrier's timeout, so that it ends when it would have
  // had the rank connected at once.
  const Clock::time_point start = Clock::now();
  return ConnectSending(options, [&] {
    SetBarrierGet left = request;
    left.timeout = std::max(std::chrono::milliseconds(1),
                            request.timeout - std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  Clock::now() - start));
    return SetBarrierGetFrames(left);
  });
}

Result<SetBarrierGetOutcome> StoreClient::AwaitSetBarrierMultiGet(const SetBarrierGet& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  return SetBarrierGetReplies(request, "");  // sent with the handshake
}

Result<SetBarrierGetOutcome> StoreClient::SetBarrierGetReplies(const SetBarrierGet& request,
                                                               const std::string& frames) {
  using R = Result<SetBarrierGetOutcome>;
  Result<std::vector<Message>> got = Exchange("Set+Barrier+Get", frames, 2 + request.keys.size(),
                                              Clock::now() + io_timeout_ + request.timeout);
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
