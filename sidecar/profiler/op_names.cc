// NCCL's descriptor strings and nccl-tests' arithmetic for the plugin (op_names.h).
#include "sidecar/profiler/op_names.h"

#include <cstring>

namespace ringleader::profiler {
namespace {

bool Is(const char* text, const char* expected) { return std::strcmp(text, expected) == 0; }

}  // namespace

std::optional<Op> ParseOp(const char* func) {
  if (func == nullptr) {
    return std::nullopt;
  }
  // Dispatch on the first letter: this runs for every operation NCCL starts.
  switch (func[0]) {
    case 'A':
      if (Is(func, "AllReduce")) {
        return Op::kAllReduce;
      }
      if (Is(func, "AllGather")) {
        return Op::kAllGather;
      }
      if (Is(func, "AlltoAll")) {
        return Op::kAllToAll;
      }
      break;
    case 'R':
      if (Is(func, "ReduceScatter")) {
        return Op::kReduceScatter;
      }
      if (Is(func, "Reduce")) {
        return Op::kReduce;
      }
      if (Is(func, "Recv")) {
        return Op::kRecv;
      }
      break;
    case 'B':
      if (Is(func, "Broadcast")) {
        return Op::kBroadcast;
      }
      break;
    case 'S':
      if (Is(func, "Send")) {
        return Op::kSend;
      }
      if (Is(func, "Scatter")) {
        return Op::kScatter;
      }
      break;
    case 'G':
      if (Is(func, "Gather")) {
        return Op::kGather;
      }
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::size_t DatatypeBytes(const char* datatype) {
  if (datatype == nullptr || std::strncmp(datatype, "nccl", 4) != 0) {
    return 0;
  }
  const char* name = datatype + 4;
  struct Entry {
    const char* name;
    std::size_t bytes;
  };
  // The common training types first.
  static constexpr Entry kTypes[] = {
      {"Bfloat16", 2}, {"Float32", 4},    {"Float16", 2},    {"Float", 4},  {"Half", 2},
      {"Float64", 8},  {"Double", 8},     {"Int32", 4},      {"Int", 4},    {"Uint32", 4},
      {"Int64", 8},    {"Uint64", 8},     {"Int8", 1},       {"Char", 1},   {"Uint8", 1},
      {"Float8e4m3", 1}, {"Float8e5m2", 1},
  };
  for (const Entry& type : kTypes) {
    if (Is(name, type.name)) {
      return type.bytes;
    }
  }
  return 0;
}

collectives::Collective BandwidthModel(Op op) {
  switch (op) {
    case Op::kAllReduce: return collectives::Collective::kAllReduce;
    case Op::kAllGather:
    case Op::kGather:
    case Op::kScatter: return collectives::Collective::kAllGather;
    case Op::kReduceScatter: return collectives::Collective::kReduceScatter;
    case Op::kBroadcast:
    case Op::kReduce: return collectives::Collective::kBroadcast;
    case Op::kAllToAll: return collectives::Collective::kAllToAll;
    case Op::kSend:
    case Op::kRecv: break;
  }
  return collectives::Collective::kSendRecv;
}

std::uint64_t ReportedBytes(Op op, std::size_t count, std::size_t elem_bytes, int nranks) {
  return collectives::ReportedBytes(BandwidthModel(op), count, nranks < 1 ? 1 : nranks,
                                    elem_bytes);
}

collectives::Bandwidth CellBandwidth(Op op, std::uint64_t bytes, std::uint64_t gpu_ns,
                                     int nranks) {
  return collectives::ComputeBandwidth(BandwidthModel(op), bytes,
                                       static_cast<double>(gpu_ns) / 1e9,
                                       nranks < 1 ? 1 : nranks);
}

}  // namespace ringleader::profiler
