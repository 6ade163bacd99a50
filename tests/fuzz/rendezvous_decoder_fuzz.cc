// libFuzzer target for the rendezvous wire protocol: arbitrary bytes from a peer, split at
// fuzzer-chosen points, must give frames or a decoder error - never a crash, a hang or an
// allocation beyond the frame bound - and the same frames however they are split. Every frame
// that decodes to a message must re-encode to exactly its own bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/rendezvous/protocol.h"

namespace {

namespace rz = ringleader::rendezvous;

// A small bound so that the fuzzer reaches "payload too large" as easily as a full frame.
constexpr std::size_t kMaxPayload = 4096;

// Frames of `data` fed in pieces of the given sizes (cycled), and whether the decoder failed.
std::vector<rz::Frame> DecodeInPieces(std::string_view data, const std::vector<std::size_t>& pieces,
                                      bool* failed) {
  rz::FrameDecoder decoder(kMaxPayload);
  std::vector<rz::Frame> frames;
  std::size_t offset = 0;
  std::size_t i = 0;
  while (offset < data.size()) {
    const std::size_t n = std::min(pieces[i++ % pieces.size()], data.size() - offset);
    decoder.Feed(data.substr(offset, n));
    while (auto frame = decoder.Next()) {
      frames.push_back(std::move(*frame));
    }
    offset += n;
  }
  *failed = decoder.failed();
  return frames;
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
  for (const rz::Frame& frame : whole) {
    if (frame.payload.size() > kMaxPayload) {
      std::abort();  // the bound was not enforced
    }
    const auto message = rz::DecodeMessage(frame);
    if (message.ok() && rz::EncodeMessage(message.value()) != rz::EncodeFrame(frame.type, frame.payload)) {
      std::abort();  // decode then encode must give the bytes back
    }
  }
  return 0;
}
