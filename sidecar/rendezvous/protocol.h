// The rendezvous store's wire protocol, version 2. This comment is the single spec.
//
// Framing. Every message is one frame: a 12-byte header, then the payload. All integers on the
// wire are big-endian.
//   magic    u32  0x524C525A ("RLRZ")
//   version  u16  2
//   type     u16  a MessageType below
//   length   u32  payload bytes that follow (at most the receiver's bound, by default
//                 kDefaultMaxPayload: the largest legal message)
// A receiver checks magic, version, type and length from the header alone, before it buffers
// any payload; any failure is fatal to the connection (FrameDecoder stays failed). Version 1
// (a Hello of rank and world size, answered by a Challenge) is refused as unsupported: every
// sidecar of a job runs the same image.
//
// Payload fields. u32/u16 are unsigned, i64 is two's complement, all big-endian. A "bytes"
// field is a u32 length then that many bytes (keys and values are byte strings, not text); a
// "bytes[]" field is a u32 count then that many bytes fields. Fixed-size fields (the 32-byte
// nonces and proofs) have no length prefix. Every length and count is checked against its bound
// and against the bytes left in the payload before anything is allocated; a payload with bytes
// left after its last field is an error.
//
// Handshake (the job token never crosses the wire; see auth.h):
//   C->S  Hello      1  rank u32, world_size u32, attempt u32, sent_at_ms i64, nonce [32],
//                       early_proof [32]                    (world_size >= 1, rank < world_size)
//         world_size is the store's rank bound (the job's replicas; an elastic job's
//         maxReplicas), the same in every client of one store; it need not be the barrier's.
//         attempt is the gang attempt the rank belongs to, or kAnyAttempt. A server that serves
//         another attempt refuses the Hello ("attempt mismatch"): during a gang restart the old
//         rank 0 may still answer under the job's DNS name with the same token.
//         sent_at_ms is the client's wall clock (Unix milliseconds) and nonce 32 random bytes;
//         early_proof = HMAC-SHA256(token, kEarlyProofLabel || rank || world_size || attempt ||
//         sent_at_ms || nonce). A server welcomes a Hello with a valid early proof at once when
//         sent_at_ms is within kEarlyProofWindow of its own clock and it has not welcomed that
//         nonce before; a valid early proof outside the window, or seen before, is refused
//         ("stale early proof"), and the client retries with a Hello whose sent_at_ms is 0,
//         which asks for a Challenge instead (nonce and early_proof then unused).
//   S->C  Challenge  2  nonce [32]      (only for a Hello with sent_at_ms 0)
//   C->S  Proof      3  hmac [32]   HMAC-SHA256(token, "ringleader-rendezvous-v1"||nonce||rank)
//   S->C  Welcome    4  (empty)
//   S->C  Refused    5  reason bytes (<= kMaxTextBytes); the server then closes
// Requests may follow a Hello with an early proof, or a Proof, in the same write (a request
// anywhere else before the Welcome is a protocol violation). A client need not wait for the
// Welcome: the server handles frames in order, so requests sent behind the frame that
// authenticates run only once it is accepted, and die unread with a refused connection. A
// rank's whole join (Hello, Set, Barrier, Get) is thus one write. Requests queued behind a
// pending Wait or Barrier run once it is answered.
// Before the Welcome the peer is unknown, so a server bounds each frame by the one handshake
// message its state allows, from the header alone: a Hello (payload == kHelloPayloadBytes)
// before anything else, then, after a Challenge, a Proof (<= kProofBytes); any other type or a
// longer length is refused before a payload byte is buffered. Bytes read behind a handshake
// frame are decoded only once that frame is accepted and the connection welcomed: nothing an
// unauthenticated peer sends is kept past the handshake frame. One reply each, in order:
//   Set         16  key bytes, value bytes                  -> Ok
//   Get         17  key bytes                               -> Value | NotFound
//   Wait        18  keys bytes[] (<= kMaxWaitKeys), timeout_ms u32  -> Ok | TimedOut
//   Add         19  key bytes, delta i64                    -> Counter (the new value)
//   CompareSet  20  key bytes, expected bytes, desired bytes -> Value (the value now stored)
//   Barrier     21  name bytes (<= kMaxKeyBytes), timeout_ms u32  -> Ok | TimedOut
// Replies (server to client):
//   Ok          32  (empty)
//   Value       33  value bytes
//   Counter     34  value i64
//   NotFound    35  (empty)
//   TimedOut    36  missing bytes (<= kMaxTextBytes): the missing keys or ranks, as text
//   Error       37  message bytes (<= kMaxTextBytes)
// Any request may also be answered by Error. Bounds: key <= kMaxKeyBytes (4 KiB), value <=
// kMaxValueBytes (1 MiB), text <= kMaxTextBytes (64 KiB; senders truncate).
//
// Encoders do not check bounds: a caller that encodes an over-bound field gets a message its
// peer refuses. Decoders never throw on bad bytes; they return an error naming the field, e.g.
// "Set.key: length 5000 exceeds 4096".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ringleader::rendezvous {

inline constexpr std::uint32_t kMagic = 0x524C525A;  // "RLRZ"
inline constexpr std::uint16_t kVersion = 2;
inline constexpr std::size_t kHeaderBytes = 12;

inline constexpr std::size_t kMaxKeyBytes = 4 * 1024;
inline constexpr std::size_t kMaxValueBytes = 1024 * 1024;
inline constexpr std::size_t kMaxTextBytes = 64 * 1024;
inline constexpr std::size_t kMaxWaitKeys = 4096;
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kProofBytes = 32;
// rank, world_size, attempt (u32 each), sent_at_ms (i64), nonce and early_proof (32 bytes each)
inline constexpr std::size_t kHelloPayloadBytes = 3 * 4 + 8 + kNonceBytes + kProofBytes;
// A Hello's attempt that matches any gang attempt the server serves.
inline constexpr std::uint32_t kAnyAttempt = 0xFFFFFFFF;

// The largest legal payload: CompareSet with a maximal key and two maximal values (Wait with
// 4096 maximal keys would be larger, 16 MiB; such a Wait is refused by the frame bound).
inline constexpr std::size_t kDefaultMaxPayload = 3 * 4 + kMaxKeyBytes + 2 * kMaxValueBytes;

// A key the server answers itself: the ranks with an authenticated connection open now, as
// "0,1,3". A rank whose process died has no connection, so survivors of a failed collective can
// tell a dead peer from a stuck one. Set on it is refused.
inline constexpr std::string_view kConnectedRanksKey = "ringleader/connected-ranks";

// A key the server answers itself: the gang attempt it serves (ServerOptions::attempt), as
// decimal text. During a gang restart the old rank 0 may still be reachable under the job's DNS
// name with the same token; a new rank reads this first and leaves a store of another attempt.
inline constexpr std::string_view kAttemptKey = "ringleader/attempt";

// How a Refused for a stale early proof ends: the client's next try asks for a Challenge.
inline constexpr std::string_view kRetryWithChallenge = "retry with a challenge";

enum class MessageType : std::uint16_t {
  kHello = 1,
  kChallenge = 2,
  kProof = 3,
  kWelcome = 4,
  kRefused = 5,
  kSet = 16,
  kGet = 17,
  kWait = 18,
  kAdd = 19,
  kCompareSet = 20,
  kBarrier = 21,
  kOk = 32,
  kValue = 33,
  kCounter = 34,
  kNotFound = 35,
  kTimedOut = 36,
  kError = 37,
};

// True for the values listed above.
bool IsKnownMessageType(std::uint16_t type);
std::string_view MessageTypeName(MessageType type);

// A decoded value or an error message naming the offending field. Never throws on bad input.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  static Result Failure(std::string error) { return Result(ErrorText{std::move(error)}); }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }
  // Precondition: ok().
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  // Empty when ok().
  const std::string& error() const {
    static const std::string kNone;
    return ok() ? kNone : std::get<ErrorText>(state_).text;
  }

 private:
  struct ErrorText {
    std::string text;
  };
  explicit Result(ErrorText error) : state_(std::move(error)) {}
  std::variant<T, ErrorText> state_;
};

// ---- Framing ----

struct Frame {
  MessageType type = MessageType::kOk;
  std::string payload;
  bool operator==(const Frame&) const = default;
};

// Frames in arrival order. Unlike std::deque it allocates nothing while empty: every connection
// has two, and tens of thousands connect at a job's start, each holding a few frames at most.
class FrameQueue {
 public:
  bool empty() const { return next_ == frames_.size(); }
  std::size_t size() const { return frames_.size() - next_; }
  void push_back(Frame frame) { frames_.push_back(std::move(frame)); }
  // Precondition: !empty().
  Frame& front() { return frames_[next_]; }
  void pop_front() {
    frames_[next_].payload = std::string();
    if (++next_ == frames_.size()) {
      frames_.clear();  // keeps the capacity for the connection's next frames
      next_ = 0;
    }
  }
  void clear() {
    frames_.clear();
    next_ = 0;
  }
  auto begin() const { return frames_.begin() + static_cast<std::ptrdiff_t>(next_); }
  auto end() const { return frames_.end(); }

 private:
  std::vector<Frame> frames_;
  std::size_t next_ = 0;  // frames before it were taken
};

// The header followed by the payload. Precondition: payload.size() fits in a u32.
std::string EncodeFrame(MessageType type, std::string_view payload);

enum class FrameErrorCode : std::uint8_t {
  kBadMagic,
  kUnsupportedVersion,
  kUnknownType,
  kPayloadTooLarge,
  kUnexpectedType,  // a known type other than the one ExpectOnly() allows
};

struct FrameError {
  FrameErrorCode code = FrameErrorCode::kBadMagic;
  std::string message;  // names the header field, e.g. "header.version: 2 is not supported"
};

// Incremental frame decoder for one connection: feed it whatever byte chunks arrive, take
// complete frames with Next(). After the first error it stays failed and ignores further input.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t max_payload = kDefaultMaxPayload);

  // Consumes all of data. Returns false once the decoder has failed.
  bool Feed(std::string_view data);
  // The oldest complete frame not yet taken, if any (frames decoded before an error remain).
  std::optional<Frame> Next();

  bool failed() const { return error_.has_value(); }
  // Set once failed.
  const std::optional<FrameError>& error() const { return error_; }

  // From the next header on, only a frame of `type` with a payload of at most `max_payload`
  // bytes (and within the constructor's bound) is accepted, checked from the header alone
  // (kUnexpectedType, kPayloadTooLarge): the one handshake message a server waits for.
  void ExpectOnly(MessageType type, std::size_t max_payload);
  // From the next header on, any known type within the constructor's bound (the default).
  void ExpectAny();

  // The most bytes that can still belong to the frame in progress: the rest of its header, then
  // its payload (taken at the bound while the header is incomplete). A reader that feeds no more
  // than this cannot run past a frame of the size the header announces.
  std::size_t BytesToFrameEnd() const;

  // Heap bytes held: the frame in progress and complete frames not yet taken.
  std::size_t BufferedBytes() const;

  // Bytes reserved for the frame in progress, to let tests show that a header announcing a huge
  // payload allocates nothing.
  std::size_t BufferCapacityForTest() const { return payload_.capacity(); }

 private:
  void Fail(FrameErrorCode code, std::string message);
  void ParseHeader();

  std::size_t max_payload_;
  std::optional<MessageType> only_type_;  // set by ExpectOnly
  std::size_t only_max_payload_ = 0;
  std::array<char, kHeaderBytes> header_{};
  std::size_t header_filled_ = 0;
  bool in_payload_ = false;
  MessageType type_ = MessageType::kOk;
  std::size_t payload_length_ = 0;
  std::string payload_;
  FrameQueue ready_;
  std::optional<FrameError> error_;
};

// ---- Messages ----
// Each has kType, Encode() (the payload only) and Decode(payload). EncodeMessage adds the frame.

using Nonce = std::array<std::uint8_t, kNonceBytes>;
using ProofBytes = std::array<std::uint8_t, kProofBytes>;

struct Hello {
  static constexpr MessageType kType = MessageType::kHello;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 0;
  std::uint32_t attempt = kAnyAttempt;
  std::int64_t sent_at_ms = 0;  // 0: no early proof, answer with a Challenge
  Nonce nonce{};
  ProofBytes early_proof{};
  std::string Encode() const;
  static Result<Hello> Decode(std::string_view payload);
  bool operator==(const Hello&) const = default;
};

struct Challenge {
  static constexpr MessageType kType = MessageType::kChallenge;
  Nonce nonce{};
  std::string Encode() const;
  static Result<Challenge> Decode(std::string_view payload);
  bool operator==(const Challenge&) const = default;
};

struct Proof {
  static constexpr MessageType kType = MessageType::kProof;
  ProofBytes hmac{};
  std::string Encode() const;
  static Result<Proof> Decode(std::string_view payload);
  bool operator==(const Proof&) const = default;
};

struct Welcome {
  static constexpr MessageType kType = MessageType::kWelcome;
  std::string Encode() const;
  static Result<Welcome> Decode(std::string_view payload);
  bool operator==(const Welcome&) const = default;
};

struct Refused {
  static constexpr MessageType kType = MessageType::kRefused;
  std::string reason;
  std::string Encode() const;
  static Result<Refused> Decode(std::string_view payload);
  bool operator==(const Refused&) const = default;
};

struct Set {
  static constexpr MessageType kType = MessageType::kSet;
  std::string key;
  std::string value;
  std::string Encode() const;
  static Result<Set> Decode(std::string_view payload);
  bool operator==(const Set&) const = default;
};

struct Get {
  static constexpr MessageType kType = MessageType::kGet;
  std::string key;
  std::string Encode() const;
  static Result<Get> Decode(std::string_view payload);
  bool operator==(const Get&) const = default;
};

struct Wait {
  static constexpr MessageType kType = MessageType::kWait;
  std::vector<std::string> keys;
  std::uint32_t timeout_ms = 0;
  std::string Encode() const;
  static Result<Wait> Decode(std::string_view payload);
  bool operator==(const Wait&) const = default;
};

struct Add {
  static constexpr MessageType kType = MessageType::kAdd;
  std::string key;
  std::int64_t delta = 0;
  std::string Encode() const;
  static Result<Add> Decode(std::string_view payload);
  bool operator==(const Add&) const = default;
};

struct CompareSet {
  static constexpr MessageType kType = MessageType::kCompareSet;
  std::string key;
  std::string expected;
  std::string desired;
  std::string Encode() const;
  static Result<CompareSet> Decode(std::string_view payload);
  bool operator==(const CompareSet&) const = default;
};

struct Barrier {
  static constexpr MessageType kType = MessageType::kBarrier;
  std::string name;
  std::uint32_t timeout_ms = 0;
  std::string Encode() const;
  static Result<Barrier> Decode(std::string_view payload);
  bool operator==(const Barrier&) const = default;
};

struct Ok {
  static constexpr MessageType kType = MessageType::kOk;
  std::string Encode() const;
  static Result<Ok> Decode(std::string_view payload);
  bool operator==(const Ok&) const = default;
};

struct Value {
  static constexpr MessageType kType = MessageType::kValue;
  std::string value;
  std::string Encode() const;
  static Result<Value> Decode(std::string_view payload);
  bool operator==(const Value&) const = default;
};

struct Counter {
  static constexpr MessageType kType = MessageType::kCounter;
  std::int64_t value = 0;
  std::string Encode() const;
  static Result<Counter> Decode(std::string_view payload);
  bool operator==(const Counter&) const = default;
};

struct NotFound {
  static constexpr MessageType kType = MessageType::kNotFound;
  std::string Encode() const;
  static Result<NotFound> Decode(std::string_view payload);
  bool operator==(const NotFound&) const = default;
};

struct TimedOut {
  static constexpr MessageType kType = MessageType::kTimedOut;
  std::string missing;
  std::string Encode() const;
  static Result<TimedOut> Decode(std::string_view payload);
  bool operator==(const TimedOut&) const = default;
};

struct Error {
  static constexpr MessageType kType = MessageType::kError;
  std::string message;
  std::string Encode() const;
  static Result<Error> Decode(std::string_view payload);
  bool operator==(const Error&) const = default;
};

using Message = std::variant<Hello, Challenge, Proof, Welcome, Refused, Set, Get, Wait, Add,
                             CompareSet, Barrier, Ok, Value, Counter, NotFound, TimedOut, Error>;

// The frame (header and payload) for one message.
template <typename M>
std::string EncodeMessage(const M& message) {
  return EncodeFrame(M::kType, message.Encode());
}
std::string EncodeMessage(const Message& message);

// Decodes a frame's payload by its type.
Result<Message> DecodeMessage(const Frame& frame);

}  // namespace ringleader::rendezvous
