// The rendezvous wire protocol (protocol.h): framing, and each message's encoder and decoder.
#include "sidecar/rendezvous/protocol.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>

namespace ringleader::rendezvous {
namespace {

// ---- Big-endian writing ----

void PutU16(std::string* out, std::uint16_t v) {
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v & 0xFF));
}

void PutU32(std::string* out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((v >> shift) & 0xFF));
  }
}

void PutI64(std::string* out, std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  for (int shift = 56; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((u >> shift) & 0xFF));
  }
}

void PutBytes(std::string* out, std::string_view bytes) {
  assert(bytes.size() <= std::numeric_limits<std::uint32_t>::max());
  PutU32(out, static_cast<std::uint32_t>(bytes.size()));
  out->append(bytes);
}

template <std::size_t N>
void PutFixed(std::string* out, const std::array<std::uint8_t, N>& bytes) {
  for (std::uint8_t b : bytes) {
    out->push_back(static_cast<char>(b));
  }
}

std::uint32_t LoadU32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  }
  return v;
}

std::uint16_t LoadU16(const char* p) {
  return static_cast<std::uint16_t>((static_cast<std::uint8_t>(p[0]) << 8) |
                                    static_cast<std::uint8_t>(p[1]));
}

// ---- Bounds-checked reading of one payload; the first failure sticks ----

class Reader {
 public:
  Reader(std::string_view payload, std::string_view message) : rest_(payload), message_(message) {}

  bool U32(std::string_view field, std::uint32_t* out) {
    if (!Need(field, 4)) {
      return false;
    }
    *out = LoadU32(rest_.data());
    rest_.remove_prefix(4);
    return true;
  }

  bool I64(std::string_view field, std::int64_t* out) {
    if (!Need(field, 8)) {
      return false;
    }
    std::uint64_t u = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      u = (u << 8) | static_cast<std::uint8_t>(rest_[i]);
    }
    *out = static_cast<std::int64_t>(u);  // two's complement (guaranteed since C++20)
    rest_.remove_prefix(8);
    return true;
  }

  template <std::size_t N>
  bool Fixed(std::string_view field, std::array<std::uint8_t, N>* out) {
    if (!Need(field, N)) {
      return false;
    }
    for (std::size_t i = 0; i < N; ++i) {
      (*out)[i] = static_cast<std::uint8_t>(rest_[i]);
    }
    rest_.remove_prefix(N);
    return true;
  }

  // A u32 length, checked against bound and the bytes left, then that many bytes.
  bool Bytes(std::string_view field, std::size_t bound, std::string* out) {
    std::uint32_t length = 0;
    if (!U32(field, &length)) {
      return false;
    }
    if (length > bound) {
      return Fail(field, "length " + std::to_string(length) + " exceeds " + std::to_string(bound));
    }
    if (length > rest_.size()) {
      return Fail(field, "length " + std::to_string(length) + " exceeds the " +
                             std::to_string(rest_.size()) + " bytes left in the payload");
    }
    out->assign(rest_.data(), length);
    rest_.remove_prefix(length);
    return true;
  }

  // A u32 count, checked against bound and against the bytes left (each entry takes at least
  // min_entry_bytes), so a vector can be reserved safely.
  bool Count(std::string_view field, std::size_t bound, std::size_t min_entry_bytes,
             std::uint32_t* out) {
    if (!U32(field, out)) {
      return false;
    }
    if (*out > bound) {
      return Fail(field, "count " + std::to_string(*out) + " exceeds " + std::to_string(bound));
    }
    if (static_cast<std::uint64_t>(*out) * min_entry_bytes > rest_.size()) {
      return Fail(field, "count " + std::to_string(*out) + " does not fit in the " +
                             std::to_string(rest_.size()) + " bytes left in the payload");
    }
    return true;
  }

  bool Finish() {
    if (!rest_.empty()) {
      error_ = std::string(message_) + ": " + std::to_string(rest_.size()) +
               " trailing bytes after the last field";
      return false;
    }
    return true;
  }

  bool Fail(std::string_view field, const std::string& what) {
    error_ = std::string(message_) + "." + std::string(field) + ": " + what;
    return false;
  }

  std::string TakeError() { return std::move(error_); }

 private:
  bool Need(std::string_view field, std::size_t n) {
    if (rest_.size() < n) {
      return Fail(field, "truncated (needs " + std::to_string(n) + " bytes, " +
                             std::to_string(rest_.size()) + " left)");
    }
    return true;
  }

  std::string_view rest_;
  std::string_view message_;
  std::string error_;
};

template <typename M>
Result<M> Done(Reader& reader, M message) {
  if (!reader.Finish()) {
    return Result<M>::Failure(reader.TakeError());
  }
  return message;
}

template <typename M>
Result<M> Fail(Reader& reader) {
  return Result<M>::Failure(reader.TakeError());
}

// Payloads up to this size are reserved whole once their header is read (see ParseHeader).
constexpr std::size_t kReserveWholeBytes = 256;

// What a string holds on the heap: nothing while its characters fit in the string itself.
std::size_t HeapBytes(const std::string& s) {
  static const std::size_t kInline = std::string().capacity();
  return s.capacity() > kInline ? s.capacity() : 0;
}

std::string Hex32(std::uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) {
    out.push_back(kDigits[(v >> shift) & 0xF]);
  }
  return out;
}

}  // namespace

bool IsKnownMessageType(std::uint16_t type) {
  return (type >= 1 && type <= 5) || (type >= 16 && type <= 21) || (type >= 32 && type <= 37);
}

std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello: return "Hello";
    case MessageType::kChallenge: return "Challenge";
    case MessageType::kProof: return "Proof";
    case MessageType::kWelcome: return "Welcome";
    case MessageType::kRefused: return "Refused";
    case MessageType::kSet: return "Set";
    case MessageType::kGet: return "Get";
    case MessageType::kWait: return "Wait";
    case MessageType::kAdd: return "Add";
    case MessageType::kCompareSet: return "CompareSet";
    case MessageType::kBarrier: return "Barrier";
    case MessageType::kOk: return "Ok";
    case MessageType::kValue: return "Value";
    case MessageType::kCounter: return "Counter";
    case MessageType::kNotFound: return "NotFound";
    case MessageType::kTimedOut: return "TimedOut";
    case MessageType::kError: return "Error";
  }
  return "Unknown";
}

// ---- Framing ----

std::string EncodeFrame(MessageType type, std::string_view payload) {
  assert(payload.size() <= std::numeric_limits<std::uint32_t>::max());
  std::string out;
  out.reserve(kHeaderBytes + payload.size());
  PutU32(&out, kMagic);
  PutU16(&out, kVersion);
  PutU16(&out, static_cast<std::uint16_t>(type));
  PutU32(&out, static_cast<std::uint32_t>(payload.size()));
  out.append(payload);
  return out;
}

FrameDecoder::FrameDecoder(std::size_t max_payload) : max_payload_(max_payload) {}

void FrameDecoder::Fail(FrameErrorCode code, std::string message) {
  error_ = FrameError{code, std::move(message)};
  payload_ = std::string();  // release whatever the frame in progress held
}

void FrameDecoder::ParseHeader() {
  const std::uint32_t magic = LoadU32(header_.data());
  const std::uint16_t version = LoadU16(header_.data() + 4);
  const std::uint16_t type = LoadU16(header_.data() + 6);
  const std::uint32_t length = LoadU32(header_.data() + 8);
  if (magic != kMagic) {
    return Fail(FrameErrorCode::kBadMagic,
                "header.magic: " + Hex32(magic) + " is not " + Hex32(kMagic) + " (\"RLRZ\")");
  }
  if (version != kVersion) {
    return Fail(FrameErrorCode::kUnsupportedVersion,
                "header.version: " + std::to_string(version) + " is not supported (want " +
                    std::to_string(kVersion) + ")");
  }
  if (!IsKnownMessageType(type)) {
    return Fail(FrameErrorCode::kUnknownType,
                "header.type: " + std::to_string(type) + " is not a known message type");
  }
  if (only_type_ && type != static_cast<std::uint16_t>(*only_type_)) {
    return Fail(FrameErrorCode::kUnexpectedType,
                "header.type: expected " + std::string(MessageTypeName(*only_type_)) + ", got " +
                    std::string(MessageTypeName(static_cast<MessageType>(type))));
  }
  if (only_type_ && length > std::min(only_max_payload_, max_payload_)) {
    return Fail(FrameErrorCode::kPayloadTooLarge,
                "header.length: " + std::to_string(length) + " exceeds " +
                    std::to_string(std::min(only_max_payload_, max_payload_)) + " (a " +
                    std::string(MessageTypeName(*only_type_)) + ")");
  }
  if (length > max_payload_) {
    return Fail(FrameErrorCode::kPayloadTooLarge, "header.length: " + std::to_string(length) +
                                                      " exceeds " + std::to_string(max_payload_));
  }
  type_ = static_cast<MessageType>(type);
  payload_length_ = length;
  payload_.clear();
  // A small payload is reserved whole, so it is one allocation of its own size; a larger one
  // grows only with the bytes that arrive, so a header alone cannot make the decoder allocate.
  if (length <= kReserveWholeBytes) {
    payload_.reserve(length);
  }
  in_payload_ = true;
}

void FrameDecoder::ExpectOnly(MessageType type, std::size_t max_payload) {
  only_type_ = type;
  only_max_payload_ = max_payload;
}

void FrameDecoder::ExpectAny() { only_type_.reset(); }

std::size_t FrameDecoder::BytesToFrameEnd() const {
  if (in_payload_) {
    return payload_length_ - payload_.size();
  }
  const std::size_t bound = only_type_ ? std::min(only_max_payload_, max_payload_) : max_payload_;
  return kHeaderBytes - header_filled_ + bound;
}

std::size_t FrameDecoder::BufferedBytes() const {
  std::size_t bytes = HeapBytes(payload_);
  for (const Frame& frame : ready_) {
    bytes += HeapBytes(frame.payload);
  }
  return bytes;
}

bool FrameDecoder::Feed(std::string_view data) {
  while (!failed()) {
    if (!in_payload_) {
      const std::size_t take = std::min(kHeaderBytes - header_filled_, data.size());
      std::memcpy(header_.data() + header_filled_, data.data(), take);
      header_filled_ += take;
      data.remove_prefix(take);
      if (header_filled_ < kHeaderBytes) {
        break;  // need more input
      }
      header_filled_ = 0;
      ParseHeader();
      continue;
    }
    // The payload grows only with bytes that actually arrived (never more than the bound).
    const std::size_t take = std::min(payload_length_ - payload_.size(), data.size());
    payload_.append(data.data(), take);
    data.remove_prefix(take);
    if (payload_.size() < payload_length_) {
      break;  // need more input
    }
    ready_.push_back(Frame{type_, std::move(payload_)});
    payload_ = std::string();
    in_payload_ = false;
    if (data.empty()) {
      break;
    }
  }
  return !failed();
}

std::optional<Frame> FrameDecoder::Next() {
  if (ready_.empty()) {
    return std::nullopt;
  }
  Frame frame = std::move(ready_.front());
  ready_.pop_front();
  return frame;
}

// ---- Messages ----

std::string Hello::Encode() const {
  std::string out;
  PutU32(&out, rank);
  PutU32(&out, world_size);
  PutU32(&out, attempt);
  PutI64(&out, sent_at_ms);
  PutFixed(&out, nonce);
  PutFixed(&out, early_proof);
  return out;
}

Result<Hello> Hello::Decode(std::string_view payload) {
  Reader r(payload, "Hello");
  Hello m;
  if (!r.U32("rank", &m.rank) || !r.U32("world_size", &m.world_size) ||
      !r.U32("attempt", &m.attempt) || !r.I64("sent_at_ms", &m.sent_at_ms) ||
      !r.Fixed("nonce", &m.nonce) || !r.Fixed("early_proof", &m.early_proof)) {
    return Fail<Hello>(r);
  }
  if (m.sent_at_ms < 0) {
    r.Fail("sent_at_ms", "must not be negative");
    return Fail<Hello>(r);
  }
  if (m.world_size == 0) {
    r.Fail("world_size", "must be at least 1");
    return Fail<Hello>(r);
  }
  if (m.rank >= m.world_size) {
    r.Fail("rank", std::to_string(m.rank) + " is not below world_size " +
                       std::to_string(m.world_size));
    return Fail<Hello>(r);
  }
  return Done(r, m);
}

std::string Challenge::Encode() const {
  std::string out;
  PutFixed(&out, nonce);
  return out;
}

Result<Challenge> Challenge::Decode(std::string_view payload) {
  Reader r(payload, "Challenge");
  Challenge m;
  if (!r.Fixed("nonce", &m.nonce)) {
    return Fail<Challenge>(r);
  }
  return Done(r, m);
}

std::string Proof::Encode() const {
  std::string out;
  PutFixed(&out, hmac);
  return out;
}

Result<Proof> Proof::Decode(std::string_view payload) {
  Reader r(payload, "Proof");
  Proof m;
  if (!r.Fixed("hmac", &m.hmac)) {
    return Fail<Proof>(r);
  }
  return Done(r, m);
}

std::string Welcome::Encode() const { return {}; }

Result<Welcome> Welcome::Decode(std::string_view payload) {
  Reader r(payload, "Welcome");
  return Done(r, Welcome{});
}

std::string Refused::Encode() const {
  std::string out;
  PutBytes(&out, reason);
  return out;
}

Result<Refused> Refused::Decode(std::string_view payload) {
  Reader r(payload, "Refused");
  Refused m;
  if (!r.Bytes("reason", kMaxTextBytes, &m.reason)) {
    return Fail<Refused>(r);
  }
  return Done(r, std::move(m));
}

std::string Set::Encode() const {
  std::string out;
  PutBytes(&out, key);
  PutBytes(&out, value);
  return out;
}

Result<Set> Set::Decode(std::string_view payload) {
  Reader r(payload, "Set");
  Set m;
  if (!r.Bytes("key", kMaxKeyBytes, &m.key) || !r.Bytes("value", kMaxValueBytes, &m.value)) {
    return Fail<Set>(r);
  }
  return Done(r, std::move(m));
}

std::string Get::Encode() const {
  std::string out;
  PutBytes(&out, key);
  return out;
}

Result<Get> Get::Decode(std::string_view payload) {
  Reader r(payload, "Get");
  Get m;
  if (!r.Bytes("key", kMaxKeyBytes, &m.key)) {
    return Fail<Get>(r);
  }
  return Done(r, std::move(m));
}

std::string Wait::Encode() const {
  std::string out;
  assert(keys.size() <= std::numeric_limits<std::uint32_t>::max());
  PutU32(&out, static_cast<std::uint32_t>(keys.size()));
  for (const std::string& key : keys) {
    PutBytes(&out, key);
  }
  PutU32(&out, timeout_ms);
  return out;
}

Result<Wait> Wait::Decode(std::string_view payload) {
  Reader r(payload, "Wait");
  Wait m;
  std::uint32_t count = 0;
  if (!r.Count("keys", kMaxWaitKeys, 4, &count)) {
    return Fail<Wait>(r);
  }
  m.keys.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::string key;
    if (!r.Bytes("keys[" + std::to_string(i) + "]", kMaxKeyBytes, &key)) {
      return Fail<Wait>(r);
    }
    m.keys.push_back(std::move(key));
  }
  if (!r.U32("timeout_ms", &m.timeout_ms)) {
    return Fail<Wait>(r);
  }
  return Done(r, std::move(m));
}

std::string Add::Encode() const {
  std::string out;
  PutBytes(&out, key);
  PutI64(&out, delta);
  return out;
}

Result<Add> Add::Decode(std::string_view payload) {
  Reader r(payload, "Add");
  Add m;
  if (!r.Bytes("key", kMaxKeyBytes, &m.key) || !r.I64("delta", &m.delta)) {
    return Fail<Add>(r);
  }
  return Done(r, std::move(m));
}

std::string CompareSet::Encode() const {
  std::string out;
  PutBytes(&out, key);
  PutBytes(&out, expected);
  PutBytes(&out, desired);
  return out;
}

Result<CompareSet> CompareSet::Decode(std::string_view payload) {
  Reader r(payload, "CompareSet");
  CompareSet m;
  if (!r.Bytes("key", kMaxKeyBytes, &m.key) ||
      !r.Bytes("expected", kMaxValueBytes, &m.expected) ||
      !r.Bytes("desired", kMaxValueBytes, &m.desired)) {
    return Fail<CompareSet>(r);
  }
  return Done(r, std::move(m));
}

std::string Barrier::Encode() const {
  std::string out;
  PutBytes(&out, name);
  PutU32(&out, timeout_ms);
  return out;
}

Result<Barrier> Barrier::Decode(std::string_view payload) {
  Reader r(payload, "Barrier");
  Barrier m;
  if (!r.Bytes("name", kMaxKeyBytes, &m.name) || !r.U32("timeout_ms", &m.timeout_ms)) {
    return Fail<Barrier>(r);
  }
  return Done(r, std::move(m));
}

std::string Ok::Encode() const { return {}; }

Result<Ok> Ok::Decode(std::string_view payload) {
  Reader r(payload, "Ok");
  return Done(r, Ok{});
}

std::string Value::Encode() const {
  std::string out;
  PutBytes(&out, value);
  return out;
}

Result<Value> Value::Decode(std::string_view payload) {
  Reader r(payload, "Value");
  Value m;
  if (!r.Bytes("value", kMaxValueBytes, &m.value)) {
    return Fail<Value>(r);
  }
  return Done(r, std::move(m));
}

std::string Counter::Encode() const {
  std::string out;
  PutI64(&out, value);
  return out;
}

Result<Counter> Counter::Decode(std::string_view payload) {
  Reader r(payload, "Counter");
  Counter m;
  if (!r.I64("value", &m.value)) {
    return Fail<Counter>(r);
  }
  return Done(r, m);
}

std::string NotFound::Encode() const { return {}; }

Result<NotFound> NotFound::Decode(std::string_view payload) {
  Reader r(payload, "NotFound");
  return Done(r, NotFound{});
}

std::string TimedOut::Encode() const {
  std::string out;
  PutBytes(&out, missing);
  return out;
}

Result<TimedOut> TimedOut::Decode(std::string_view payload) {
  Reader r(payload, "TimedOut");
  TimedOut m;
  if (!r.Bytes("missing", kMaxTextBytes, &m.missing)) {
    return Fail<TimedOut>(r);
  }
  return Done(r, std::move(m));
}

std::string Error::Encode() const {
  std::string out;
  PutBytes(&out, message);
  return out;
}

Result<Error> Error::Decode(std::string_view payload) {
  Reader r(payload, "Error");
  Error m;
  if (!r.Bytes("message", kMaxTextBytes, &m.message)) {
    return Fail<Error>(r);
  }
  return Done(r, std::move(m));
}

std::string EncodeMessage(const Message& message) {
  return std::visit([](const auto& m) { return EncodeFrame(m.kType, m.Encode()); }, message);
}

namespace {

template <typename M>
Result<Message> Lift(Result<M> decoded) {
  if (!decoded.ok()) {
    return Result<Message>::Failure(decoded.error());
  }
  return Result<Message>(Message(std::move(decoded).value()));
}

}  // namespace

Result<Message> DecodeMessage(const Frame& frame) {
  const std::string_view p = frame.payload;
  switch (frame.type) {
    case MessageType::kHello: return Lift(Hello::Decode(p));
    case MessageType::kChallenge: return Lift(Challenge::Decode(p));
    case MessageType::kProof: return Lift(Proof::Decode(p));
    case MessageType::kWelcome: return Lift(Welcome::Decode(p));
    case MessageType::kRefused: return Lift(Refused::Decode(p));
    case MessageType::kSet: return Lift(Set::Decode(p));
    case MessageType::kGet: return Lift(Get::Decode(p));
    case MessageType::kWait: return Lift(Wait::Decode(p));
    case MessageType::kAdd: return Lift(Add::Decode(p));
    case MessageType::kCompareSet: return Lift(CompareSet::Decode(p));
    case MessageType::kBarrier: return Lift(Barrier::Decode(p));
    case MessageType::kOk: return Lift(Ok::Decode(p));
    case MessageType::kValue: return Lift(Value::Decode(p));
    case MessageType::kCounter: return Lift(Counter::Decode(p));
    case MessageType::kNotFound: return Lift(NotFound::Decode(p));
    case MessageType::kTimedOut: return Lift(TimedOut::Decode(p));
    case MessageType::kError: return Lift(Error::Decode(p));
  }
  return Result<Message>::Failure("header.type: " +
                                  std::to_string(static_cast<unsigned>(frame.type)) +
                                  " is not a known message type");
}

}  // namespace ringleader::rendezvous
