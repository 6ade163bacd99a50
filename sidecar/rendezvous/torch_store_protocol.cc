// The TCPStore request decoder: a resumable walk over each query's field layout, so a request
// that arrives in pieces is never re-parsed from its start.
#include "sidecar/rendezvous/torch_store_protocol.h"

#include <limits>
#include <utility>

namespace ringleader::rendezvous::torch_store {
namespace {

enum class Field : std::uint8_t { kKey, kValue, kU32, kI64 };

// A query's fields in wire order; a counted query sends a u64 count, then that many items of
// `fields`.
struct Layout {
  std::array<Field, 3> fields{};
  std::uint8_t size = 0;
  bool counted = false;

  // The fewest bytes one item (or the whole request, uncounted) takes.
  std::uint64_t MinItemBytes() const {
    std::uint64_t bytes = 0;
    for (std::uint8_t i = 0; i < size; ++i) {
      bytes += fields[i] == Field::kU32 ? 4 : 8;
    }
    return bytes;
  }
};

Layout LayoutOf(Query query) {
  switch (query) {
    case Query::kValidate:
    case Query::kPing:
      return {{Field::kU32}, 1, false};
    case Query::kSet:
    case Query::kAppend:
    case Query::kQueuePush:
      return {{Field::kKey, Field::kValue}, 2, false};
    case Query::kCompareSet:
      return {{Field::kKey, Field::kValue, Field::kValue}, 3, false};
    case Query::kGet:
    case Query::kDeleteKey:
    case Query::kQueuePop:
    case Query::kQueueLen:
      return {{Field::kKey}, 1, false};
    case Query::kAdd:
    case Query::kBarrier:
      return {{Field::kKey, Field::kI64}, 2, false};
    case Query::kGetNumKeys:
    case Query::kCancelWait:
    case Query::kListKeys:
      return {{}, 0, false};
    case Query::kCheck:
    case Query::kWait:
    case Query::kMultiGet:
      return {{Field::kKey}, 1, true};
    case Query::kMultiSet:
      return {{Field::kKey, Field::kValue}, 2, true};
  }
  return {};
}

// PyTorch 1.13's type bytes (its QueryType enum); WATCH_KEY (7) is left out on purpose.
constexpr std::array<std::optional<Query>, 9> kTorch1Types = {
    Query::kSet,   Query::kCompareSet, Query::kGet,        Query::kAdd,      Query::kCheck,
    Query::kWait,  Query::kGetNumKeys, std::nullopt,       Query::kDeleteKey};
constexpr std::uint8_t kTorch1WatchKey = 7;

std::uint64_t LittleEndian(std::string_view bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = bytes.size(); i > 0; --i) {
    value = (value << 8) | static_cast<std::uint8_t>(bytes[i - 1]);
  }
  return value;
}

void AppendLittleEndian(std::string& out, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) {
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
}

std::string TypeText(std::uint8_t type) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::to_string(type) + " (0x" + kHex[type >> 4] + kHex[type & 0xf] + ")";
}

// How many bytes a string that is still only a length needs kept in memory before it is
// complete; beyond this a string's buffer grows as its bytes arrive.
constexpr std::size_t kKeepBufferBytes = 64 * 1024;

}  // namespace

std::string_view DialectName(Dialect dialect) {
  switch (dialect) {
    case Dialect::kUndetermined: return "undetermined";
    case Dialect::kTorch1: return "torch1";
    case Dialect::kTorch2: return "torch2";
  }
  return "undetermined";
}

std::string_view QueryName(Query query) {
  switch (query) {
    case Query::kValidate: return "validate";
    case Query::kSet: return "set";
    case Query::kCompareSet: return "compare_set";
    case Query::kGet: return "get";
    case Query::kAdd: return "add";
    case Query::kCheck: return "check";
    case Query::kWait: return "wait";
    case Query::kGetNumKeys: return "get_num_keys";
    case Query::kDeleteKey: return "delete_key";
    case Query::kAppend: return "append";
    case Query::kMultiGet: return "multi_get";
    case Query::kMultiSet: return "multi_set";
    case Query::kCancelWait: return "cancel_wait";
    case Query::kPing: return "ping";
    case Query::kQueuePush: return "queue_push";
    case Query::kQueuePop: return "queue_pop";
    case Query::kQueueLen: return "queue_len";
    case Query::kListKeys: return "list_keys";
    case Query::kBarrier: return "barrier";
  }
  return "unknown";
}

const std::array<Query, kQueryCount>& AllQueries() {
  static const std::array<Query, kQueryCount> all = [] {
    std::array<Query, kQueryCount> queries{};
    for (std::size_t i = 0; i < kQueryCount; ++i) {
      queries[i] = static_cast<Query>(i);
    }
    return queries;
  }();
  return all;
}

RequestDecoder::RequestDecoder(std::size_t max_request_bytes, std::size_t max_first_request_bytes)
    : max_request_bytes_(max_request_bytes),
      max_first_request_bytes_(std::min(max_first_request_bytes, max_request_bytes)) {}

bool RequestDecoder::Feed(std::string_view bytes) {
  if (error_) {
    return false;
  }
  // Consumed bytes go first, so the buffer holds only the request in progress and what follows.
  if (read_ == buffer_.size()) {
    buffer_.clear();
    read_ = 0;
    if (buffer_.capacity() > kKeepBufferBytes && bytes.size() <= kKeepBufferBytes) {
      std::string().swap(buffer_);
    }
  } else if (read_ > 0) {
    buffer_.erase(0, read_);
    read_ = 0;
  }
  buffer_.append(bytes);
  Decode();
  return !error_;
}

std::optional<Request> RequestDecoder::Next() {
  std::optional<Request> request = std::move(ready_);
  ready_.reset();
  if (request && !error_) {
    Decode();
  }
  return request;
}

std::size_t RequestDecoder::BufferedBytes() const {
  std::size_t bytes = buffer_.capacity();
  for (const std::string& key : request_.keys) {
    bytes += key.capacity();
  }
  for (const std::string& value : request_.values) {
    bytes += value.capacity();
  }
  return bytes;
}

std::string_view RequestDecoder::Take(std::size_t n) {
  const std::string_view taken(buffer_.data() + read_, n);
  read_ += n;
  request_bytes_ += n;
  return taken;
}

bool RequestDecoder::Fits(std::uint64_t more) const {
  return request_bytes_ <= Bound() && more <= Bound() - request_bytes_;
}

void RequestDecoder::Fail(DecodeErrorCode code, std::string message) {
  error_ = DecodeError{code, type_byte_, dialect_, std::move(message)};
  // Nothing more will be decoded: give the memory back now.
  std::string().swap(buffer_);
  read_ = 0;
  request_ = Request{};
}

bool RequestDecoder::StartRequest() {
  if (Available() < 1) {
    return false;
  }
  const auto type = static_cast<std::uint8_t>(buffer_[read_]);
  if (dialect_ == Dialect::kUndetermined) {
    if (type == 0) {
      if (Available() < 5) {
        return false;
      }
      const std::uint64_t magic = LittleEndian(std::string_view(buffer_).substr(read_ + 1, 4));
      dialect_ = magic == kValidationMagic ? Dialect::kTorch2 : Dialect::kTorch1;
    } else {
      dialect_ = Dialect::kTorch1;
    }
  }
  type_byte_ = type;
  std::optional<Query> query;
  if (dialect_ == Dialect::kTorch2) {
    if (type == 0 && decoded_any_) {
      Fail(DecodeErrorCode::kProtocolViolation,
           "VALIDATE (type 0) after the first request in the torch2 dialect");
      return false;
    }
    if (type < kQueryCount) {
      query = static_cast<Query>(type);
    }
  } else if (type < kTorch1Types.size()) {
    query = kTorch1Types[type];
  }
  if (!query) {
    Fail(DecodeErrorCode::kUnknownQuery,
         type == kTorch1WatchKey && dialect_ == Dialect::kTorch1
             ? "query type " + TypeText(type) + " (WATCH_KEY) of the torch1 dialect is not served"
             : "unknown query type " + TypeText(type) + " in the " +
                   std::string(DialectName(dialect_)) + " dialect");
    return false;
  }
  request_ = Request{};
  request_.query = *query;
  request_bytes_ = 0;
  Take(1);
  BeginFields();
  return true;
}

void RequestDecoder::BeginFields() {
  field_ = 0;
  if (LayoutOf(request_.query).counted) {
    step_ = Step::kCount;
    return;
  }
  items_left_ = 1;
  NextField();
}

// Moves to the field at field_ of the current item, or to the next item, or to the end.
void RequestDecoder::NextField() {
  const Layout layout = LayoutOf(request_.query);
  if (field_ == layout.size) {
    --items_left_;
    if (items_left_ == 0 || layout.size == 0) {
      step_ = Step::kDone;
      return;
    }
    field_ = 0;
  }
  const Field field = layout.fields[field_];
  if (field == Field::kKey || field == Field::kValue) {
    string_is_key_ = field == Field::kKey;
    step_ = Step::kLength;
  } else {
    step_ = Step::kFixed;
  }
}

void RequestDecoder::Decode() {
  while (!error_ && !ready_) {
    switch (step_) {
      case Step::kType:
        if (!StartRequest()) {
          return;
        }
        break;
      case Step::kCount: {
        if (Available() < 8) {
          return;
        }
        const std::uint64_t count = LittleEndian(Take(8));
        const std::uint64_t per_item = LayoutOf(request_.query).MinItemBytes();
        if (count > std::numeric_limits<std::uint64_t>::max() / per_item ||
            !Fits(count * per_item)) {
          Fail(DecodeErrorCode::kTooLarge,
               std::string(QueryName(request_.query)) + ": " + std::to_string(count) +
                   " keys exceed the request bound of " + std::to_string(Bound()) + " bytes");
          return;
        }
        if (count == 0) {
          step_ = Step::kDone;
          break;
        }
        items_left_ = count;
        field_ = 0;
        NextField();
        break;
      }
      case Step::kLength: {
        if (Available() < 8) {
          return;
        }
        string_length_ = LittleEndian(Take(8));
        if (!Fits(string_length_)) {
          Fail(DecodeErrorCode::kTooLarge,
               std::string(QueryName(request_.query)) + ": a " +
                   (string_is_key_ ? "key" : "value") + " of " + std::to_string(string_length_) +
                   " bytes exceeds the request bound of " + std::to_string(Bound()) + " bytes");
          return;
        }
        step_ = Step::kString;
        break;
      }
      case Step::kString: {
        if (Available() < string_length_) {
          return;
        }
        std::string_view bytes = Take(static_cast<std::size_t>(string_length_));
        (string_is_key_ ? request_.keys : request_.values).emplace_back(bytes);
        ++field_;
        NextField();
        break;
      }
      case Step::kFixed: {
        const Field field = LayoutOf(request_.query).fields[field_];
        const std::size_t size = field == Field::kU32 ? 4 : 8;
        if (Available() < size) {
          return;
        }
        const std::uint64_t value = LittleEndian(Take(size));
        if (field == Field::kU32) {
          request_.nonce = static_cast<std::uint32_t>(value);
        } else {
          request_.number = static_cast<std::int64_t>(value);
        }
        ++field_;
        NextField();
        break;
      }
      case Step::kDone:
        ready_ = std::move(request_);
        request_ = Request{};
        decoded_any_ = true;
        step_ = Step::kType;
        break;
    }
  }
}

void AppendString(std::string& out, std::string_view value) {
  AppendLittleEndian(out, value.size(), 8);
  out.append(value);
}

void AppendInt64(std::string& out, std::int64_t value) {
  AppendLittleEndian(out, static_cast<std::uint64_t>(value), 8);
}

void AppendUint32(std::string& out, std::uint32_t value) { AppendLittleEndian(out, value, 4); }

void AppendByte(std::string& out, std::uint8_t value) { out.push_back(static_cast<char>(value)); }

std::uint64_t DecodeLittleEndian(std::string_view bytes) { return LittleEndian(bytes); }

std::optional<std::string> EncodeRequest(Dialect dialect, const Request& request) {
  std::optional<std::uint8_t> type;
  if (dialect == Dialect::kTorch2) {
    type = static_cast<std::uint8_t>(request.query);
  } else if (dialect == Dialect::kTorch1) {
    for (std::size_t i = 0; i < kTorch1Types.size(); ++i) {
      if (kTorch1Types[i] == request.query) {
        type = static_cast<std::uint8_t>(i);
      }
    }
  }
  if (!type) {
    return std::nullopt;
  }
  std::string out;
  AppendByte(out, *type);
  const Layout layout = LayoutOf(request.query);
  std::size_t items = 1;
  if (layout.counted) {
    items = request.keys.size();
    AppendLittleEndian(out, items, 8);
  }
  std::size_t key = 0;
  std::size_t value = 0;
  for (std::size_t item = 0; item < items && layout.size > 0; ++item) {
    for (std::uint8_t i = 0; i < layout.size; ++i) {
      switch (layout.fields[i]) {
        case Field::kKey:
          AppendString(out, key < request.keys.size() ? request.keys[key] : std::string());
          ++key;
          break;
        case Field::kValue:
          AppendString(out, value < request.values.size() ? request.values[value] : std::string());
          ++value;
          break;
        case Field::kU32:
          AppendUint32(out, request.nonce);
          break;
        case Field::kI64:
          AppendInt64(out, request.number);
          break;
      }
    }
  }
  return out;
}

}  // namespace ringleader::rendezvous::torch_store
