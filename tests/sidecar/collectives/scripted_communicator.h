// A communicator that moves no data: rank `rank` of `size`, counting the calls it gets, whose
// AllGatherDouble answers come from a script. For testing the probe runner's arithmetic alone.
#pragma once

#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

#include "sidecar/collectives/communicator.h"

namespace ringleader::collectives::testing {

class ScriptedCommunicator final : public Communicator {
 public:
  // Each AllGatherDouble call takes the next answer; an exhausted script answers zeros.
  ScriptedCommunicator(int rank, int size, std::deque<std::vector<double>> gathers)
      : rank_(rank), size_(size), gathers_(std::move(gathers)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "scripted"; }
  std::string_view transport() const override { return "none"; }

  std::unique_ptr<Buffers> Allocate(std::size_t send_elems, std::size_t recv_elems) override {
    ++allocations_;
    return std::make_unique<HostBuffers>(send_elems, recv_elems, &largest_copy_);
  }
  void Synchronize() override { ++synchronizes_; }
  std::vector<double> AllGatherDouble(double value) override {
    gathered_.push_back(value);
    if (gathers_.empty()) {
      return std::vector<double>(static_cast<std::size_t>(size_), 0.0);
    }
    std::vector<double> answer = std::move(gathers_.front());
    gathers_.pop_front();
    return answer;
  }

  int runs() const { return runs_; }
  int synchronizes() const { return synchronizes_; }
  int allocations() const { return allocations_; }
  const std::vector<double>& gathered() const { return gathered_; }  // values this rank offered
  // The most elements one host copy into or out of its buffers moved.
  std::size_t largest_copy() const { return largest_copy_; }

 protected:
  void DoRun(Collective, Buffers&, std::size_t, Peers) override { ++runs_; }

 private:
  class HostBuffers final : public Buffers {
   public:
    HostBuffers(std::size_t send_elems, std::size_t recv_elems, std::size_t* largest_copy)
        : send_(send_elems), recv_(recv_elems), largest_copy_(largest_copy) {}
    std::size_t send_elems() const override { return send_.size(); }
    std::size_t recv_elems() const override { return recv_.size(); }

   protected:
    void DoWriteSend(std::size_t offset, std::span<const float> data) override {
      Note(data.size());
      std::copy(data.begin(), data.end(), send_.begin() + static_cast<std::ptrdiff_t>(offset));
    }
    void DoWriteRecv(std::size_t offset, std::span<const float> data) override {
      Note(data.size());
      std::copy(data.begin(), data.end(), recv_.begin() + static_cast<std::ptrdiff_t>(offset));
    }
    void DoReadRecv(std::size_t offset, std::span<float> out) override {
      Note(out.size());
      std::copy_n(recv_.begin() + static_cast<std::ptrdiff_t>(offset), out.size(), out.begin());
    }

   private:
    void Note(std::size_t elems) { *largest_copy_ = std::max(*largest_copy_, elems); }

    std::vector<float> send_;
    std::vector<float> recv_;
    std::size_t* largest_copy_;
  };

  const int rank_;
  const int size_;
  std::deque<std::vector<double>> gathers_;
  std::vector<double> gathered_;
  int runs_ = 0;
  int allocations_ = 0;
  int synchronizes_ = 0;
  std::size_t largest_copy_ = 0;
};

}  // namespace ringleader::collectives::testing
