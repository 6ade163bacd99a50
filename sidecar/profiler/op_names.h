// What the plugin makes of NCCL's descriptor strings: the operation, the element size, and the
// nccl-tests size and bandwidth of a call (through the sidecar's own bus_bandwidth.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "sidecar/collectives/bus_bandwidth.h"
#include "sidecar/profiler/snapshot_protocol.h"

namespace ringleader::profiler {

// NCCL's func name ("AllReduce", "Send", ...; ncclFuncToString) as an Op; nullopt for others
// (e.g. "SendRecv", which NCCL does not report per operation) and for null.
std::optional<Op> ParseOp(const char* func);

// Bytes per element of NCCL's datatype name ("ncclFloat32", "ncclBfloat16", ...;
// ncclDatatypeToString, and the aliases such as "ncclFloat"); 0 for unknown names and null.
std::size_t DatatypeBytes(const char* datatype);

// The nccl-tests arithmetic each op follows. Reduce, gather and scatter have no Collective of
// their own; nccl-tests gives reduce broadcast's size and factor (1), and gather and scatter
// all_gather's (count x n, (n-1)/n). Send and recv are one side of a sendrecv.
collectives::Collective BandwidthModel(Op op);

// nccl-tests' size S of one call of `count` elements per rank.
std::uint64_t ReportedBytes(Op op, std::size_t count, std::size_t elem_bytes, int nranks);

// algbw and busbw of `bytes` (summed S) moved in `gpu_ns`, by nccl-tests' arithmetic.
collectives::Bandwidth CellBandwidth(Op op, std::uint64_t bytes, std::uint64_t gpu_ns, int nranks);

}  // namespace ringleader::profiler
