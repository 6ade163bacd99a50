// libFuzzer target for what the native sidecar reads from its Pod's run dir: the preflight
// container's result (JSON) and NCCL's INFO log. Arbitrary bytes must give a result or a
// PreflightResultError, and a transport summary, never a crash; a result that was read writes
// back to the same document, and NCCL's log gives one summary however it is split.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sidecar/collectives/nccl_transport.h"
#include "sidecar/service/preflight_result.h"

namespace {

void CheckPreflightResult(std::string_view text) {
  const nlohmann::json document = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    return;
  }
  try {
    const auto result = ringleader::sidecar::PreflightResultFromJson(document, "preflight.json");
    const nlohmann::json written = ringleader::sidecar::PreflightResultToJson(result);
    const auto again = ringleader::sidecar::PreflightResultFromJson(written, "again");
    if (ringleader::sidecar::PreflightResultToJson(again) != written) {
      std::abort();  // what the sidecar reads must survive its own round trip
    }
  } catch (const ringleader::sidecar::PreflightResultError&) {
  }
}

void CheckNcclLog(std::string_view text) {
  using ringleader::collectives::NcclLogParser;
  const auto whole = ringleader::collectives::SummariseNcclDebugText(text);
  NcclLogParser pieces;
  const std::size_t step = text.empty() ? 1 : 1 + static_cast<unsigned char>(text[0]) % 97;
  for (std::size_t at = 0; at < text.size(); at += step) {
    pieces.Feed(text.substr(at, step));
  }
  pieces.EndSource();
  const auto split = pieces.Summary();
  if (split.connections != whole.connections || split.network != whole.network ||
      split.lines != whole.lines) {
    std::abort();  // a chunk boundary must not change what NCCL said
  }
  (void)ringleader::collectives::NcclTransportLabel(whole);
  (void)ringleader::collectives::RdmaFallbackReason(whole, true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  // The first byte picks the file, the rest is its content.
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    CheckPreflightResult(text);
  } else {
    CheckNcclLog(text);
  }
  return 0;
}
