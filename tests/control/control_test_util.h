// Test support for the control channel: raw TCP connections that send whatever bytes a test
// wants, a stand-in training loop answering queued requests, descriptor counting.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "control/control_server.h"
#include "control/tcp.h"

namespace tl::control::test_util {

inline int openDescriptors() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n - 1;  // the directory's own descriptor
}

inline bool waitFor(const std::function<bool()>& done, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

// A connection to the server that sends raw bytes and reads what comes back until the server
// closes it.
class RawConnection {
 public:
  explicit RawConnection(int port)
      : fd_(connectTcp("127.0.0.1", port, Clock::now() + std::chrono::seconds(5))) {}
  void send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size()));
  }
  // Everything until the server closes the connection; `closed` says whether it did within
  // `seconds`.
  std::string readUntilClosed(double seconds, bool* closed = nullptr) {
    std::string in;
    const auto end = Clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
    if (closed) *closed = false;
    for (;;) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, msLeft(end)) <= 0) return in;
      char buffer[4096];
      const ssize_t n = ::recv(fd_.get(), buffer, sizeof(buffer), 0);
      if (n <= 0) {
        if (closed) *closed = true;
        return in;
      }
      in.append(buffer, size_t(n));
    }
  }
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
};

// The rejection code of a rejection frame, or 0.
inline int rejectionOf(const std::string& frame) {
  if (frame.size() != kHeaderSize + 1) return 0;
  std::string error;
  auto h = parseHeader(frame, &error);
  return h && h->kind == FrameKind::Rejection ? uint8_t(frame.back()) : 0;
}

// The training loop's stand-in: takes queued requests and answers them with `answer`.
class Responder {
 public:
  Responder(ControlServer& server, std::function<Reply(const Request&)> answer)
      : thread_([this, &server, answer] {
          while (!stop_.load()) {
            if (auto p = server.take()) {
              {
                std::lock_guard<std::mutex> lock(mu_);
                seen_.push_back(describe(p->request()));
              }
              p->reply(answer(p->request()));
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
        }) {}
  ~Responder() {
    stop_.store(true);
    thread_.join();
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> seen_;
  std::thread thread_;
};

}  // namespace tl::control::test_util
