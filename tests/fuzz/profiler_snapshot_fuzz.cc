// libFuzzer target for the profiler's snapshot protocol (sidecar/profiler/snapshot_protocol.h):
// bytes from a trainer's plugin, split at fuzzer-chosen points, must give payloads or a frame
// error - never a crash, a hang or an allocation past the frame bound - and the same payloads
// however they are split. Each payload (and the raw input, taken as one) decodes or names a
// field; a snapshot that decodes re-encodes to a frame that decodes to the same snapshot.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/profiler/snapshot_protocol.h"

namespace {

namespace rp = ringleader::profiler;

// A small bound so that the fuzzer reaches "length exceeds" as easily as a full frame.
constexpr std::size_t kMaxPayload = 65536;

std::vector<std::string> DecodeInPieces(std::string_view data,
                                        const std::vector<std::size_t>& pieces, bool* failed) {
  rp::SnapshotFrameDecoder decoder(kMaxPayload);
  std::vector<std::string> payloads;
  std::size_t offset = 0;
  std::size_t i = 0;
  while (offset < data.size()) {
    const std::size_t n = std::min(pieces[i++ % pieces.size()], data.size() - offset);
    decoder.Feed(data.substr(offset, n));
    while (auto payload = decoder.Next()) {
      payloads.push_back(std::move(*payload));
    }
    offset += n;
  }
  *failed = decoder.failed();
  return payloads;
}

void CheckPayload(std::string_view payload) {
  const rp::Decoded<rp::Snapshot> decoded = rp::DecodeSnapshot(payload);
  if (!decoded.ok()) {
    if (decoded.error.empty()) {
      std::abort();  // a failure must say which field
    }
    return;
  }
  const auto frame = rp::EncodeSnapshotFrame(*decoded.value);
  if (!frame) {
    std::abort();  // what decoded is within every bound, so it must encode
  }
  const rp::Decoded<rp::Snapshot> again =
      rp::DecodeSnapshot(std::string_view(*frame).substr(rp::kHeaderBytes));
  if (!again.ok() || !(*again.value == *decoded.value)) {
    std::abort();  // the round trip changed the snapshot
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  // The first byte chooses the piece sizes; the rest is the stream.
  const std::vector<std::size_t> pieces = {static_cast<std::size_t>(data[0] % 13) + 1, 1, 7,
                                           static_cast<std::size_t>(data[0] >> 4) + 2};
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  bool whole_failed = false;
  bool split_failed = false;
  const auto whole = DecodeInPieces(stream, {stream.size() + 1}, &whole_failed);
  const auto split = DecodeInPieces(stream, pieces, &split_failed);
  if (whole != split || whole_failed != split_failed) {
    std::abort();  // the split changed the result
  }
  for (const std::string& payload : whole) {
    if (payload.size() > kMaxPayload) {
      std::abort();  // the bound was not enforced
    }
    CheckPayload(payload);
  }
  CheckPayload(stream);  // the payload decoder on its own, without needing a valid header
  return 0;
}
