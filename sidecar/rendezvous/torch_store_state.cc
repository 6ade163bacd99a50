// The trainers' TCPStore contents and its waits (see the header for the semantics).
#include "sidecar/rendezvous/torch_store_state.h"

#include <algorithm>
#include <charconv>
#include <unordered_set>
#include <utility>

namespace ringleader::rendezvous::torch_store {
namespace {

// Decimal text as ADD and BARRIER keep it; nullopt for anything else.
std::optional<std::int64_t> ParseCount(const std::string& text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || stop != end) {
    return std::nullopt;
  }
  return value;
}

// A key as a log line shows it: at most 64 bytes, bytes outside printable ASCII as \xNN.
std::string Printable(std::string_view key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (const char c : key.substr(0, 64)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      text.push_back(c);
    } else {
      text += "\\x";
      text.push_back(kHex[byte >> 4]);
      text.push_back(kHex[byte & 0xf]);
    }
  }
  return key.size() > 64 ? text + "..." : text;
}

// Whether `request` has the keys and values its query needs (the decoder always gives them).
bool WellFormed(const Request& request) {
  switch (request.query) {
    case Query::kSet:
    case Query::kAppend:
    case Query::kQueuePush:
      return request.keys.size() == 1 && request.values.size() == 1;
    case Query::kCompareSet:
      return request.keys.size() == 1 && request.values.size() == 2;
    case Query::kGet:
    case Query::kAdd:
    case Query::kDeleteKey:
    case Query::kBarrier:
    case Query::kQueuePop:
    case Query::kQueueLen:
      return request.keys.size() == 1;
    case Query::kMultiSet:
      return request.keys.size() == request.values.size();
    default:
      return true;
  }
}

}  // namespace

std::optional<TorchStoreState::Refusal> TorchStoreState::Apply(Request request, Waiter& waiter,
                                                               std::string& reply) {
  if (!WellFormed(request)) {
    return Refusal{std::string(QueryName(request.query)) + ": wrong number of keys or values"};
  }
  const auto key = [&request]() -> std::string& { return request.keys.front(); };
  switch (request.query) {
    case Query::kValidate:
      return std::nullopt;
    case Query::kPing:
      AppendUint32(reply, request.nonce);
      return std::nullopt;
    case Query::kSet:
      Store(std::move(key()), std::move(request.values.front()));
      return std::nullopt;
    case Query::kMultiSet:
      for (std::size_t i = 0; i < request.keys.size(); ++i) {
        Store(std::move(request.keys[i]), std::move(request.values[i]));
      }
      return std::nullopt;
    case Query::kAppend: {
      const auto it = data_.find(key());
      if (it == data_.end()) {
        Store(std::move(key()), std::move(request.values.front()));
      } else {
        it->second += request.values.front();
        Notify(it->first);
      }
      return std::nullopt;
    }
    case Query::kGet: {
      const auto it = data_.find(key());
      AppendString(reply, it == data_.end() ? std::string_view() : std::string_view(it->second));
      return std::nullopt;
    }
    case Query::kMultiGet:
      for (const std::string& each : request.keys) {
        const auto it = data_.find(each);
        AppendString(reply, it == data_.end() ? std::string_view() : std::string_view(it->second));
      }
      return std::nullopt;
    case Query::kCompareSet: {
      std::string& expected = request.values[0];
      std::string& desired = request.values[1];
      const auto it = data_.find(key());
      if (it == data_.end()) {
        if (!expected.empty()) {
          AppendString(reply, expected);
          return std::nullopt;
        }
        AppendString(reply, desired);
        Store(std::move(key()), std::move(desired));
        return std::nullopt;
      }
      if (it->second == expected) {
        it->second = std::move(desired);
        Notify(it->first);
      }
      AppendString(reply, it->second);
      return std::nullopt;
    }
    case Query::kAdd: {
      std::int64_t sum = 0;
      if (std::optional<Refusal> refused = Add(key(), request.number, /*notify=*/true, &sum)) {
        return refused;
      }
      AppendInt64(reply, sum);
      return std::nullopt;
    }
    case Query::kDeleteKey:
      AppendInt64(reply, static_cast<std::int64_t>(data_.erase(key())));
      return std::nullopt;
    case Query::kGetNumKeys:
      AppendInt64(reply, static_cast<std::int64_t>(data_.size()));
      return std::nullopt;
    case Query::kListKeys:
      AppendInt64(reply, static_cast<std::int64_t>(data_.size()));
      for (const auto& [stored, value] : data_) {
        AppendString(reply, stored);
      }
      return std::nullopt;
    case Query::kCheck: {
      const bool ready = std::all_of(request.keys.begin(), request.keys.end(),
                                     [this](const std::string& each) { return Present(each); });
      AppendByte(reply, ready ? kCheckReady : kCheckNotReady);
      return std::nullopt;
    }
    case Query::kWait: {
      std::vector<std::string> missing;
      std::unordered_set<std::string_view> seen;
      for (const std::string& each : request.keys) {
        if (!Present(each) && seen.insert(each).second) {
          missing.push_back(each);
        }
      }
      if (missing.empty()) {
        AppendByte(reply, kStopWaiting);
        return std::nullopt;
      }
      return Register(waiter, std::move(missing));
    }
    case Query::kBarrier: {
      std::int64_t entered = 0;
      // Counted without waking the requests pending on the key: only the last entry does.
      if (std::optional<Refusal> refused = Add(key(), 1, /*notify=*/false, &entered)) {
        return refused;
      }
      if (entered >= request.number) {
        Notify(key());
        AppendByte(reply, kStopWaiting);
        return std::nullopt;
      }
      // Stored now, so this request waits on the key without counting it missing: the entry
      // that completes the barrier notifies it (as any later write of the key would).
      return Register(waiter, {std::move(key())});
    }
    case Query::kCancelWait:
      CancelAll(waiter);
      AppendByte(reply, kWaitCanceled);
      return std::nullopt;
    case Query::kQueuePush: {
      std::deque<std::string>& queue = queues_[key()];
      queue.push_back(std::move(request.values.front()));
      NotifyOne(key());
      return std::nullopt;
    }
    case Query::kQueuePop: {
      const auto it = queues_.find(key());
      if (it == queues_.end()) {
        AppendInt64(reply, 0);
        return std::nullopt;
      }
      AppendInt64(reply, static_cast<std::int64_t>(it->second.size()));
      AppendString(reply, it->second.front());
      it->second.pop_front();
      if (it->second.empty()) {
        queues_.erase(it);
      }
      return std::nullopt;
    }
    case Query::kQueueLen: {
      const auto it = queues_.find(key());
      AppendInt64(reply, it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.size()));
      return std::nullopt;
    }
  }
  return Refusal{"unhandled query " + std::string(QueryName(request.query))};
}

void TorchStoreState::Forget(Waiter& waiter) { CancelAll(waiter); }

std::size_t TorchStoreState::PendingFor(const Waiter& waiter) const {
  const auto it = by_waiter_.find(&waiter);
  return it == by_waiter_.end() ? 0 : it->second.size();
}

bool TorchStoreState::Present(const std::string& key) const {
  return data_.contains(key) || queues_.contains(key);
}

void TorchStoreState::Store(std::string key, std::string value) {
  const auto [it, inserted] = data_.insert_or_assign(std::move(key), std::move(value));
  Notify(it->first);
}

void TorchStoreState::Notify(const std::string& key) {
  auto node = key_waiters_.extract(key);
  if (node.empty()) {
    return;
  }
  for (const WaitId id : node.mapped()) {
    CountDown(id);
  }
}

void TorchStoreState::NotifyOne(const std::string& key) {
  const auto it = key_waiters_.find(key);
  if (it == key_waiters_.end()) {
    return;
  }
  const WaitId oldest = *it->second.begin();
  it->second.erase(it->second.begin());
  if (it->second.empty()) {
    key_waiters_.erase(it);
  }
  CountDown(oldest);
}

void TorchStoreState::CountDown(WaitId id) {
  const auto it = registrations_.find(id);
  if (it == registrations_.end() || --it->second.remaining > 0) {
    return;
  }
  Waiter* waiter = it->second.waiter;
  Drop(id);
  waiter->OnWaitDone();
}

std::optional<TorchStoreState::Refusal> TorchStoreState::Register(Waiter& waiter,
                                                                  std::vector<std::string> keys) {
  std::vector<WaitId>& mine = by_waiter_[&waiter];
  if (mine.size() >= kMaxPendingPerWaiter) {
    return Refusal{"more than " + std::to_string(kMaxPendingPerWaiter) +
                   " waits and barriers pending on one connection"};
  }
  const WaitId id = next_id_++;
  for (const std::string& key : keys) {
    key_waiters_[key].insert(id);
  }
  mine.push_back(id);
  registrations_.emplace(id, Registration{&waiter, keys.size(), std::move(keys)});
  return std::nullopt;
}

// Deregisters `id` from its keys and its waiter.
void TorchStoreState::Drop(WaitId id) {
  const auto it = registrations_.find(id);
  if (it == registrations_.end()) {
    return;
  }
  for (const std::string& key : it->second.keys) {
    const auto waiters = key_waiters_.find(key);
    if (waiters != key_waiters_.end()) {
      waiters->second.erase(id);
      if (waiters->second.empty()) {
        key_waiters_.erase(waiters);
      }
    }
  }
  const auto mine = by_waiter_.find(it->second.waiter);
  if (mine != by_waiter_.end()) {
    std::erase(mine->second, id);
    if (mine->second.empty()) {
      by_waiter_.erase(mine);
    }
  }
  registrations_.erase(it);
}

void TorchStoreState::CancelAll(Waiter& waiter) {
  const auto mine = by_waiter_.find(&waiter);
  if (mine == by_waiter_.end()) {
    return;
  }
  const std::vector<WaitId> ids = mine->second;
  for (const WaitId id : ids) {
    Drop(id);
  }
}

std::optional<TorchStoreState::Refusal> TorchStoreState::Add(const std::string& key,
                                                             std::int64_t delta, bool notify,
                                                             std::int64_t* result) {
  std::int64_t current = 0;
  if (const auto it = data_.find(key); it != data_.end()) {
    const std::optional<std::int64_t> parsed = ParseCount(it->second);
    if (!parsed) {
      return Refusal{"the value of key " + Printable(key) + " is not a decimal integer"};
    }
    current = *parsed;
  }
  if (__builtin_add_overflow(current, delta, result)) {
    return Refusal{"adding " + std::to_string(delta) + " to key " + Printable(key) +
                   " overflows a signed 64-bit integer"};
  }
  if (notify) {
    Store(key, std::to_string(*result));
  } else {
    data_.insert_or_assign(key, std::to_string(*result));
  }
  return std::nullopt;
}

}  // namespace ringleader::rendezvous::torch_store
