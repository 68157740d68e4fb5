// The hand-over between a job's control server thread and its training loop: the mailbox they
// share, and PendingRequest, the training loop's side of one request (control_server.h).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "control/control_server.h"
#include "control/tcp.h"

namespace tl::control::detail {

// What the training loop and the server thread share. The server thread queues requests and
// sends replies; the training loop takes requests and posts replies, then wakes the thread.
struct Mailbox {
  struct Queued {
    Request request;
    uint64_t connection = 0;
  };
  std::mutex mu;
  bool open = true;  // false once the server thread stopped: replies go nowhere
  std::deque<Queued> queue;
  std::vector<std::pair<uint64_t, Reply>> replies;
  Fd wakeRead, wakeWrite;

  Mailbox();  // tl::Error when the wake-up pipe cannot be made
  void wake();
};

}  // namespace tl::control::detail
