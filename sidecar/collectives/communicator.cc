// Names, buffer shapes and argument checks shared by every communicator.
#include "sidecar/collectives/communicator.h"

#include <string>

namespace ringleader::collectives {

std::string_view CollectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "unknown";
}

BufferElems ElemsFor(Collective collective, std::size_t count, int world_size) {
  const std::size_t total = count * static_cast<std::size_t>(world_size);
  switch (collective) {
    case Collective::kAllGather:
      return {count, total};
    case Collective::kReduceScatter:
      return {total, count};
    case Collective::kAllToAll:
      return {total, total};
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      break;
  }
  return {count, count};
}

namespace {

void CheckRange(std::string_view what, std::size_t have, std::size_t offset, std::size_t count) {
  if (offset > have || count > have - offset) {
    throw std::invalid_argument(std::string(what) + ": elements " + std::to_string(offset) +
                                " to " + std::to_string(offset) + "+" + std::to_string(count) +
                                " do not fit in a buffer of " + std::to_string(have));
  }
}

}  // namespace

void Buffers::WriteSend(std::size_t offset, std::span<const float> data) {
  CheckRange("WriteSend", send_elems(), offset, data.size());
  DoWriteSend(offset, data);
}

void Buffers::WriteRecv(std::size_t offset, std::span<const float> data) {
  CheckRange("WriteRecv", recv_elems(), offset, data.size());
  DoWriteRecv(offset, data);
}

void Buffers::ReadRecv(std::size_t offset, std::span<float> out) {
  CheckRange("ReadRecv", recv_elems(), offset, out.size());
  DoReadRecv(offset, out);
}

void Communicator::Run(Collective collective, Buffers& buffers, std::size_t count, Peers peers) {
  const std::string name(CollectiveName(collective));
  if (count == 0) {
    throw std::invalid_argument(name + ": count must be positive");
  }
  const BufferElems need = ElemsFor(collective, count, size());
  if (buffers.send_elems() < need.send || buffers.recv_elems() < need.recv) {
    throw std::invalid_argument(name + " of " + std::to_string(count) + " elements needs send " +
                                std::to_string(need.send) + " and recv " +
                                std::to_string(need.recv) + " elements, buffers hold " +
                                std::to_string(buffers.send_elems()) + " and " +
                                std::to_string(buffers.recv_elems()));
  }
  if (collective == Collective::kSendRecv) {
    const auto in_range = [this](int peer) { return peer >= 0 && peer < size(); };
    if (!in_range(peers.send_to) || !in_range(peers.recv_from)) {
      throw std::invalid_argument(name + ": peers " + std::to_string(peers.send_to) + " and " +
                                  std::to_string(peers.recv_from) + " must lie in [0, " +
                                  std::to_string(size()) + ")");
    }
    if ((peers.send_to == rank()) != (peers.recv_from == rank())) {
      throw std::invalid_argument(name +
                                  ": a rank sends to itself only if it receives from itself");
    }
  }
  DoRun(collective, buffers, count, peers);
}

}  // namespace ringleader::collectives
