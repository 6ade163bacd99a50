// PyTorch's TCPStore wire protocol, the one its trainers speak to MASTER_PORT, as the sidecar
// serves it (torch_store_server.h): an incremental decoder of client requests and the reply
// encoders, no I/O. This comment is the spec; it was learnt from PyTorch's client and servers
// (TCPStore.cpp, TCPStoreBackend.cpp, TCPStoreLibUvBackend.cpp) and checked against the bytes
// real 1.13 and 2.15 clients send.
//
// Framing. There is none: a request is a query type byte followed by its fields, back to back.
// Integers are the client's native byte order (little-endian on every platform PyTorch ships
// for; decoded here as little-endian):
//   u32, u64, i64   4 or 8 bytes
//   string          u64 length, then that many bytes (keys and values are byte strings)
//   count           u64, how many items follow
// Two dialects share that shape and differ in their type bytes. A 2.x client opens every
// connection with VALIDATE (byte 0, u32 magic 0x3C85F7CE), then PING. A 1.13 client sends no
// validation, and its SET is byte 0 followed by a u64 key length. The first five bytes tell them
// apart: 0 then the magic is 2.x; anything else is 1.13 (a SET whose key length had the magic
// as its low 32 bits would be over a GiB, beyond any frame bound).
//
//   query         1.13  2.x   fields                          reply
//   VALIDATE        -    0    magic u32                       (none; first request only)
//   SET             0    1    key string, value string        (none)
//   COMPARE_SET     1    2    key, expected, desired strings  string: the value now stored,
//                                                             or expected if the key is missing
//   GET             2    3    key string                      string ("" for a missing key)
//   ADD             3    4    key string, delta i64           i64: the new value
//   CHECK           4    5    count, count key strings        u8: 0 all exist, 1 not
//   WAIT            5    6    count, count key strings        u8 0 (STOP_WAITING) once all exist
//   GETNUMKEYS      6    7    -                               i64
//   WATCH_KEY       7    -    (not served: closes)
//   DELETE_KEY      8    8    key string                      i64: keys deleted (0 or 1)
//   APPEND          -    9    key string, value string        (none)
//   MULTI_GET       -   10    count, count key strings        count strings
//   MULTI_SET       -   11    count, count (key, value) pairs (none)
//   CANCEL_WAIT     -   12    -                               u8 1 (WAIT_CANCELED), after a
//                                                             STOP_WAITING if that came first
//   PING            -   13    nonce u32                       u32: the nonce
//   QUEUE_PUSH      -   14    key string, value string        (none)
//   QUEUE_POP       -   15    key string                      i64 length before the pop, then
//                                                             the value if it was not 0
//   QUEUE_LEN       -   16    key string                      i64
//   LIST_KEYS       -   17    -                               i64 count, count strings
//   BARRIER         -   18    key string, world_size i64      u8 0 once world_size entered
// Any other type byte is unknown: the connection is closed (there is no error reply).
//
// Bounds. A request's whole size is bounded (RequestDecoder's max_request_bytes, and a smaller
// max_first_request_bytes until one request has decoded), checked from each length and count as
// soon as its 8 bytes are in, before anything is allocated for what it announces. A count
// bounds itself by the bytes its items would need at least. The decoder buffers only bytes that
// really arrived.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::rendezvous::torch_store {

inline constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;

enum class Dialect : std::uint8_t {
  kUndetermined,  // no request decoded yet
  kTorch1,        // PyTorch 1.13 and before: no validation
  kTorch2,        // PyTorch 2.x: VALIDATE first
};
std::string_view DialectName(Dialect dialect);  // "undetermined", "torch1", "torch2"

// Every query the server knows, in one numbering for both dialects.
enum class Query : std::uint8_t {
  kValidate,
  kSet,
  kCompareSet,
  kGet,
  kAdd,
  kCheck,
  kWait,
  kGetNumKeys,
  kDeleteKey,
  kAppend,
  kMultiGet,
  kMultiSet,
  kCancelWait,
  kPing,
  kQueuePush,
  kQueuePop,
  kQueueLen,
  kListKeys,
  kBarrier,
};
inline constexpr std::size_t kQueryCount = 19;
// "validate", "set", "compare_set", ..., "barrier": the metrics' label values.
std::string_view QueryName(Query query);
// All of them, in enum order.
const std::array<Query, kQueryCount>& AllQueries();

// One decoded request. Which fields are filled depends on the query (see the table above).
struct Request {
  Query query = Query::kGet;
  std::vector<std::string> keys;    // one for single-key queries; CHECK, WAIT, MULTI_* any
  std::vector<std::string> values;  // SET, APPEND, QUEUE_PUSH: one; COMPARE_SET: expected,
                                    // desired; MULTI_SET: one per key
  std::int64_t number = 0;          // ADD's delta, BARRIER's world size
  std::uint32_t nonce = 0;          // PING's nonce; VALIDATE's magic

  bool operator==(const Request&) const = default;
};

enum class DecodeErrorCode : std::uint8_t {
  kUnknownQuery,        // a type byte the dialect does not have, or does not serve (WATCH_KEY)
  kTooLarge,            // a length or count that would take the request past its bound
  kProtocolViolation,   // VALIDATE after the first request
};
struct DecodeError {
  DecodeErrorCode code = DecodeErrorCode::kUnknownQuery;
  std::uint8_t type_byte = 0;  // the request's type byte
  Dialect dialect = Dialect::kUndetermined;
  std::string message;  // e.g. "unknown query type 19 (0x13) in the torch1 dialect"
};

class RequestDecoder {
 public:
  RequestDecoder(std::size_t max_request_bytes, std::size_t max_first_request_bytes);

  // Takes all of `bytes`. False once the stream is broken (error() says why); requests decoded
  // before the error are still returned by Next().
  bool Feed(std::string_view bytes);
  // The next complete request, if one is in.
  std::optional<Request> Next();

  bool failed() const { return error_.has_value(); }
  const std::optional<DecodeError>& error() const { return error_; }
  Dialect dialect() const { return dialect_; }
  // True once a request has decoded; the larger bound applies from then on.
  bool decoded_any() const { return decoded_any_; }
  // Heap bytes held: the bytes not yet decoded and the request being built.
  std::size_t BufferedBytes() const;

 private:
  enum class Step : std::uint8_t { kType, kFixed, kCount, kLength, kString, kDone };

  // Decodes as far as the buffered bytes allow.
  void Decode();
  bool StartRequest();
  void BeginFields();
  void NextField();
  void Fail(DecodeErrorCode code, std::string message);
  std::size_t Available() const { return buffer_.size() - read_; }
  std::string_view Take(std::size_t n);
  std::size_t Bound() const { return decoded_any_ ? max_request_bytes_ : max_first_request_bytes_; }
  // Whether `more` bytes still fit in the request in progress.
  bool Fits(std::uint64_t more) const;

  std::size_t max_request_bytes_;
  std::size_t max_first_request_bytes_;
  Dialect dialect_ = Dialect::kUndetermined;
  bool decoded_any_ = false;
  std::optional<DecodeError> error_;
  std::string buffer_;     // received bytes; those before read_ are consumed
  std::size_t read_ = 0;
  std::optional<Request> ready_;  // a complete request not yet taken by Next()

  // The request in progress.
  Step step_ = Step::kType;
  std::uint8_t type_byte_ = 0;
  Request request_;
  std::size_t request_bytes_ = 0;  // its bytes consumed so far
  std::size_t field_ = 0;          // index into the query's field layout
  std::uint64_t items_left_ = 0;   // of a counted query, items still to come
  std::uint64_t string_length_ = 0;
  bool string_is_key_ = true;
};

// Reply encoders: each appends one reply's bytes to `out`.
void AppendString(std::string& out, std::string_view value);  // u64 length + bytes
void AppendInt64(std::string& out, std::int64_t value);
void AppendUint32(std::string& out, std::uint32_t value);
void AppendByte(std::string& out, std::uint8_t value);

// Reply decoder for a client (torch_store_client.h): the little-endian integer in `bytes` (a
// u32's 4 or a u64's or i64's 8), as the encoders above write it.
std::uint64_t DecodeLittleEndian(std::string_view bytes);

inline constexpr std::uint8_t kCheckReady = 0;
inline constexpr std::uint8_t kCheckNotReady = 1;
inline constexpr std::uint8_t kStopWaiting = 0;
inline constexpr std::uint8_t kWaitCanceled = 1;

// Request encoders in a dialect, for the client (torch_store_client.h), tests and the fuzz target;
// nullopt for a query the dialect does not have.
std::optional<std::string> EncodeRequest(Dialect dialect, const Request& request);

}  // namespace ringleader::rendezvous::torch_store
