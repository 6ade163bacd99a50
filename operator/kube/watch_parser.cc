// A byte-level scanner that finds where each top-level JSON object ends (tracking strings,
// escapes and nesting), then hands just that object to nlohmann::json.
#include "operator/kube/watch_parser.h"

namespace ringleader::kube {
namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "ERROR";
}

std::optional<WatchEventType> ParseWatchEventType(std::string_view name) {
  for (WatchEventType type : {WatchEventType::kAdded, WatchEventType::kModified,
                              WatchEventType::kDeleted, WatchEventType::kBookmark,
                              WatchEventType::kError}) {
    if (WatchEventTypeName(type) == name) {
      return type;
    }
  }
  return std::nullopt;
}

std::string ResourceVersionOf(const nlohmann::json& object) {
  if (!object.is_object()) {
    return "";
  }
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return "";
  }
  auto rv = metadata->find("resourceVersion");
  if (rv == metadata->end() || !rv->is_string()) {
    return "";
  }
  return rv->get<std::string>();
}

WatchStreamParser::WatchStreamParser(std::size_t max_event_bytes)
    : max_event_bytes_(max_event_bytes) {}

void WatchStreamParser::Fail(const std::string& what) {
  failure_ = "watch stream: " + what;
  event_.clear();
  event_.shrink_to_fit();
  throw WatchStreamError(failure_);
}

std::vector<WatchEvent> WatchStreamParser::Push(std::string_view chunk) {
  if (!failure_.empty()) {
    throw WatchStreamError(failure_);
  }
  std::vector<WatchEvent> events;
  std::size_t i = 0;
  while (i < chunk.size()) {
    if (!in_event_) {
      const char c = chunk[i];
      if (IsJsonSpace(c)) {
        ++i;
        continue;
      }
      if (c != '{') {
        Fail("expected '{' to start an event, got byte " +
             std::to_string(static_cast<unsigned char>(c)));
      }
      in_event_ = true;
      in_string_ = false;
      escaped_ = false;
      depth_ = 0;
      event_.clear();
    }
    // Scan this event's bytes in the chunk; copy them over in one piece.
    const std::size_t run_start = i;
    bool done = false;
    for (; i < chunk.size(); ++i) {
      const char c = chunk[i];
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
        continue;
      }
      if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        if (++depth_ > kMaxNestingDepth) {
          Fail("event nests deeper than " + std::to_string(kMaxNestingDepth) + " levels");
        }
      } else if (c == '}' || c == ']') {
        if (--depth_ == 0) {
          ++i;
          done = true;
          break;
        }
      }
    }
    const std::size_t run = i - run_start;
    if (event_.size() + run > max_event_bytes_) {
      Fail("event larger than " + std::to_string(max_event_bytes_) + " bytes");
    }
    event_.append(chunk.substr(run_start, run));
    if (done) {
      Complete(events);
    }
  }
  return events;
}

void WatchStreamParser::Complete(std::vector<WatchEvent>& events) {
  in_event_ = false;
  nlohmann::json parsed = nlohmann::json::parse(event_, nullptr, /*allow_exceptions=*/false);
  event_.clear();
  if (parsed.is_discarded()) {
    Fail("malformed JSON event");
  }
  auto type = parsed.find("type");
  if (type == parsed.end() || !type->is_string()) {
    Fail("event has no string \"type\"");
  }
  std::optional<WatchEventType> kind = ParseWatchEventType(type->get_ref<const std::string&>());
  if (!kind) {
    Fail("unknown event type \"" + type->get<std::string>().substr(0, 64) + "\"");
  }
  auto object = parsed.find("object");
  if (object == parsed.end() || !object->is_object()) {
    Fail("event has no \"object\" mapping");
  }
  events.push_back(WatchEvent{*kind, std::move(*object)});
}

}  // namespace ringleader::kube
