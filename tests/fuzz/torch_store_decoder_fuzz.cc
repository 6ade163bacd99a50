// libFuzzer target for the trainer store's TCPStore request decoder: arbitrary bytes from a
// peer, split at fuzzer-chosen points, must give requests or a decoder error - never a crash, a
// hang or an allocation beyond the request bound - and the same requests however they are split.
// Each decoded request re-encodes, in the dialect the decoder chose, to exactly the bytes it came
// from. The requests are then applied to the store's state, which must not crash either.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/rendezvous/torch_store_protocol.h"
#include "sidecar/rendezvous/torch_store_state.h"

namespace {

namespace ts = ringleader::rendezvous::torch_store;

// Small bounds so that the fuzzer reaches "too large" as easily as a whole request.
constexpr std::size_t kMaxRequest = 4096;
constexpr std::size_t kMaxFirstRequest = 256;

struct Decoded {
  std::vector<ts::Request> requests;
  bool failed = false;
  ts::Dialect dialect = ts::Dialect::kUndetermined;
};

Decoded DecodeInPieces(std::string_view data, const std::vector<std::size_t>& pieces) {
  ts::RequestDecoder decoder(kMaxRequest, kMaxFirstRequest);
  Decoded decoded;
  std::size_t offset = 0;
  std::size_t i = 0;
  while (offset < data.size()) {
    const std::size_t n = std::min(pieces[i++ % pieces.size()], data.size() - offset);
    decoder.Feed(data.substr(offset, n));
    while (auto request = decoder.Next()) {
      decoded.requests.push_back(std::move(*request));
    }
    // Never holds more than what arrived and the request being built.
    if (decoder.BufferedBytes() > 2 * (data.size() + kMaxRequest) + 1024) {
      std::abort();
    }
    offset += n;
  }
  decoded.failed = decoder.failed();
  decoded.dialect = decoder.dialect();
  return decoded;
}

class NullWaiter final : public ts::Waiter {
 public:
  void OnWaitDone() override { ++done; }
  int done = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  // The first byte chooses the piece sizes; the rest is the stream.
  const std::vector<std::size_t> pieces = {static_cast<std::size_t>(data[0] % 13) + 1, 1, 7,
                                           static_cast<std::size_t>(data[0] >> 4) + 2};
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Decoded whole = DecodeInPieces(stream, {stream.size() + 1});
  const Decoded split = DecodeInPieces(stream, pieces);
  if (whole.requests != split.requests || whole.failed != split.failed ||
      whole.dialect != split.dialect) {
    std::abort();  // the split changed the result
  }
  std::string reencoded;
  for (std::size_t i = 0; i < whole.requests.size(); ++i) {
    const std::optional<std::string> bytes = ts::EncodeRequest(whole.dialect, whole.requests[i]);
    if (!bytes || bytes->size() > (i == 0 ? kMaxFirstRequest : kMaxRequest)) {
      std::abort();  // a request the dialect lacks, or past its bound
    }
    reencoded += *bytes;
  }
  if (stream.substr(0, reencoded.size()) != reencoded) {
    std::abort();  // decode then encode must give the bytes back
  }
  // Two clients' worth of state changes, alternating.
  ts::TorchStoreState state;
  NullWaiter first;
  NullWaiter second;
  std::string reply;
  for (std::size_t i = 0; i < whole.requests.size(); ++i) {
    state.Apply(whole.requests[i], i % 2 == 0 ? first : second, reply);
  }
  state.Forget(first);
  state.Forget(second);
  if (state.PendingTotal() != 0) {
    std::abort();  // a forgotten client's wait stayed registered
  }
  return 0;
}
