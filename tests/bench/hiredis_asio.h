// Drives hiredis' asynchronous API from a Boost.Asio executor: the context's event hooks (addRead,
// delRead, addWrite, delWrite, cleanup) become one-shot waits on its socket.
#pragma once

#include <memory>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/system/error_code.hpp>
#include <hiredis/async.h>

namespace ringleader::bench {

// Attach() hooks a fresh context (from redisAsyncConnect, before its first command) to an
// executor; callbacks then run on that executor's thread. The adapter keeps itself alive until
// hiredis calls cleanup as it frees the context, and never closes the socket, which hiredis owns.
class HiredisAsio : public std::enable_shared_from_this<HiredisAsio> {
  struct Key {};  // only Attach constructs one

 public:
  static void Attach(redisAsyncContext* context, const boost::asio::any_io_executor& executor) {
    auto adapter = std::make_shared<HiredisAsio>(Key{}, context, executor);
    adapter->self_ = adapter;
    context->ev.data = adapter.get();
    context->ev.addRead = [](void* data) { From(data).Want(From(data).read_); };
    context->ev.delRead = [](void* data) { From(data).read_.wanted = false; };
    context->ev.addWrite = [](void* data) { From(data).Want(From(data).write_); };
    context->ev.delWrite = [](void* data) { From(data).write_.wanted = false; };
    context->ev.cleanup = [](void* data) { From(data).Detach(); };
  }

  HiredisAsio(Key, redisAsyncContext* context, const boost::asio::any_io_executor& executor)
      : context_(context), socket_(executor, context->c.fd) {}

 private:
  // One direction: whether hiredis wants its events and whether a wait is queued for them.
  // A wait left queued after hiredis stops wanting the events finds `wanted` false and ends.
  struct Direction {
    boost::asio::posix::descriptor_base::wait_type type;
    bool wanted = false;
    bool waiting = false;
  };

  static HiredisAsio& From(void* data) { return *static_cast<HiredisAsio*>(data); }

  void Want(Direction& direction) {
    direction.wanted = true;
    Arm(direction);
  }

  void Arm(Direction& direction) {
    if (direction.waiting || context_ == nullptr) {
      return;
    }
    direction.waiting = true;
    socket_.async_wait(direction.type, [self = shared_from_this(),
                                        &direction](const boost::system::error_code& error) {
      direction.waiting = false;
      if (error || self->context_ == nullptr || !direction.wanted) {
        return;
      }
      // Either call may free the context (cleanup clears context_) or ask for more events.
      if (&direction == &self->read_) {
        redisAsyncHandleRead(self->context_);
      } else {
        redisAsyncHandleWrite(self->context_);
      }
      if (self->context_ != nullptr && direction.wanted) {
        self->Arm(direction);
      }
    });
  }

  // hiredis is freeing the context and will close the socket next: give the descriptor back
  // (cancelling queued waits) and let the last queued wait, or this call, destroy the adapter.
  void Detach() {
    const std::shared_ptr<HiredisAsio> last = std::move(self_);
    context_ = nullptr;
    socket_.release();
  }

  redisAsyncContext* context_;
  boost::asio::posix::stream_descriptor socket_;
  Direction read_{boost::asio::posix::descriptor_base::wait_read};
  Direction write_{boost::asio::posix::descriptor_base::wait_write};
  std::shared_ptr<HiredisAsio> self_;
};

}  // namespace ringleader::bench
