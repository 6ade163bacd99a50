// The replies of one connection on their way to its socket, for both stores' connections
// (store_server.cc, torch_store_server.cc): replies gather while one write is in flight, and the
// next write takes all of them, so a burst of small replies costs one write.
#pragma once

#include <cstddef>
#include <string>

namespace ringleader::rendezvous {

class ReplyBuffer {
 public:
  // Replies not yet handed to a write: append to it.
  std::string& pending() { return pending_; }

  bool write_in_flight() const { return in_flight_; }
  // Every reply has reached the socket: nothing pending, no write in flight.
  bool drained() const { return !in_flight_ && pending_.empty(); }
  // Bytes not yet written, pending or in flight.
  std::size_t size() const { return pending_.size() + writing_.size(); }
  // Heap bytes the two buffers hold, for the store's buffered-bytes accounting.
  std::size_t HeapBytes() const { return Heap(pending_) + Heap(writing_); }

  // Starts a write of everything pending: the bytes to write, valid until Written(), or nullptr
  // when a write is already in flight or nothing is pending.
  const std::string* TakeForWrite() {
    if (in_flight_ || pending_.empty()) {
      return nullptr;
    }
    writing_.swap(pending_);
    pending_.clear();
    in_flight_ = true;
    return &writing_;
  }

  // The write TakeForWrite started has ended. Its buffer is kept for the next write unless it
  // grew past kKeepBytes: a burst of large replies must not pin its memory.
  void Written() {
    in_flight_ = false;
    if (writing_.capacity() > kKeepBytes) {
      std::string().swap(writing_);
    } else {
      writing_.clear();
    }
  }

  // Drops what is pending and gives its memory back (the connection closed). A write in flight
  // keeps its buffer until Written().
  void DropPending() { std::string().swap(pending_); }

 private:
  static constexpr std::size_t kKeepBytes = 64 * 1024;

  static std::size_t Heap(const std::string& s) {
    static const std::size_t kInline = std::string().capacity();
    return s.capacity() > kInline ? s.capacity() : std::size_t{0};
  }

  std::string pending_;
  std::string writing_;  // the write in flight
  bool in_flight_ = false;
};

}  // namespace ringleader::rendezvous
