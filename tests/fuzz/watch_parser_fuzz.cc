// libFuzzer target for WatchStreamParser: arbitrary bytes, split at fuzzer-chosen points,
// must give events or a WatchStreamError - never a crash, a hang or unbounded memory - and
// the same events however the bytes are split.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "operator/kube/watch_parser.h"

namespace {

constexpr std::size_t kMaxEventBytes = 64 * 1024;

// All events of `data` fed in pieces of the given sizes (cycled); false when it failed.
bool ParseInPieces(std::string_view data, const std::vector<std::size_t>& pieces,
                   std::vector<ringleader::kube::WatchEvent>& events) {
  ringleader::kube::WatchStreamParser parser(kMaxEventBytes);
  try {
    std::size_t offset = 0;
    std::size_t i = 0;
    while (offset < data.size()) {
      const std::size_t n = std::min(pieces[i++ % pieces.size()], data.size() - offset);
      for (auto& event : parser.Push(data.substr(offset, n))) {
        events.push_back(std::move(event));
      }
      offset += n;
    }
    return true;
  } catch (const ringleader::kube::WatchStreamError&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  // The first byte picks the split pattern; the rest is the stream.
  const std::uint8_t seed = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<ringleader::kube::WatchEvent> whole;
  const bool whole_ok = ParseInPieces(stream, {stream.size() + 1}, whole);

  std::vector<ringleader::kube::WatchEvent> split;
  const bool split_ok = ParseInPieces(
      stream, {static_cast<std::size_t>(seed % 7) + 1, static_cast<std::size_t>(seed / 7) + 1},
      split);

  // Splitting may only change where a failure is noticed, never the events before it.
  if (whole_ok != split_ok) {
    std::abort();
  }
  if (whole_ok) {
    if (whole.size() != split.size()) {
      std::abort();
    }
    for (std::size_t i = 0; i < whole.size(); ++i) {
      if (whole[i].type != split[i].type || whole[i].object != split[i].object) {
        std::abort();
      }
    }
  }
  return 0;
}
