// Building and checking a process's local ranks.
#include "sidecar/collectives/local_ranks.h"

#include <stdexcept>
#include <string>

namespace ringleader::collectives {

LocalRanks LocalRanks::Connect(int count, const Factory& make) {
  if (count < 1) {
    throw std::invalid_argument("local ranks: needs at least one, got " + std::to_string(count));
  }
  std::vector<std::unique_ptr<Communicator>> comms(static_cast<std::size_t>(count));
  FirstFailure failure;
  std::vector<std::thread> builders;
  for (int local = 0; local < count; ++local) {
    builders.emplace_back([&, local] {
      try {
        comms[static_cast<std::size_t>(local)] = make(local);
      } catch (...) {
        failure.Capture(std::current_exception());
      }
    });
  }
  for (std::thread& builder : builders) {
    builder.join();
  }
  failure.RethrowIfAny();
  return LocalRanks(std::move(comms));
}

LocalRanks::LocalRanks(std::vector<std::unique_ptr<Communicator>> comms)
    : comms_(std::move(comms)) {
  if (comms_.empty()) {
    throw std::invalid_argument("local ranks: needs at least one communicator");
  }
  for (std::size_t local = 0; local < comms_.size(); ++local) {
    if (!comms_[local]) {
      throw std::invalid_argument("local ranks: local rank " + std::to_string(local) +
                                  " has no communicator");
    }
    const Communicator& comm = *comms_[local];
    const int expected_rank = comms_.front()->rank() + static_cast<int>(local);
    if (comm.rank() != expected_rank || comm.size() != comms_.front()->size()) {
      throw std::invalid_argument(
          "local ranks: local rank " + std::to_string(local) + " is rank " +
          std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) + ", expected " +
          std::to_string(expected_rank) + " of " + std::to_string(comms_.front()->size()));
    }
  }
}

}  // namespace ringleader::collectives
