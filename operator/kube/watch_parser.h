// Splits a watch response body into events. Pure: bytes in, events out, no I/O, so it is
// unit-tested and fuzzed on its own.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "operator/kube/watch_event.h"

namespace ringleader::kube {

// A watch stream that is not a sequence of {"type":..., "object":{...}} JSON objects, or an
// event over the size limit. The stream cannot be trusted after this.
class WatchStreamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class WatchStreamParser {
 public:
  static constexpr std::size_t kDefaultMaxEventBytes = 16 * 1024 * 1024;
  static constexpr int kMaxNestingDepth = 512;

  explicit WatchStreamParser(std::size_t max_event_bytes = kDefaultMaxEventBytes);

  // Feeds the next bytes of the body, split anywhere. Returns the events completed by them,
  // in order. Events may be separated by any JSON whitespace, or by nothing (pretty-printed
  // or concatenated objects). Memory held is at most max_event_bytes plus nothing from
  // `chunk` beyond the current partial event.
  // Throws WatchStreamError for: a top-level value that is not an object, malformed JSON,
  // a missing/unknown "type", a non-object "object", nesting deeper than kMaxNestingDepth,
  // an event longer than max_event_bytes. After a throw every further Push throws too.
  std::vector<WatchEvent> Push(std::string_view chunk);

  // True when bytes of an unfinished event are buffered (a stream cut mid-event).
  bool HasPartialEvent() const { return in_event_; }

 private:
  [[noreturn]] void Fail(const std::string& what);
  void Complete(std::vector<WatchEvent>& events);

  const std::size_t max_event_bytes_;
  std::string event_;    // bytes of the current, unfinished top-level object
  bool in_event_ = false;
  bool in_string_ = false;
  bool escaped_ = false;
  int depth_ = 0;
  std::string failure_;  // set once failed
};

}  // namespace ringleader::kube
