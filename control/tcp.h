// Small TCP helpers for the control channel: host:port text, listening
// and connecting with a deadline. Descriptors are close-on-exec (processes the job starts do
// not inherit them); sends elsewhere use MSG_NOSIGNAL.
#pragma once

#include <chrono>
#include <string>

#include "common/fd.h"

namespace tl::control {

using Clock = std::chrono::steady_clock;

struct Endpoint {
  std::string host;
  int port = 0;
};

// "HOST:PORT" or "[IPV6]:PORT" -> Endpoint; InputError naming `what` and the text.
Endpoint parseHostPort(const std::string& text, const std::string& what);
// The inverse: brackets around a host with a ':'.
std::string formatHostPort(const std::string& host, int port);

// A non-blocking listening socket on bind:port (port 0: the kernel picks one, returned in
// *actualPort). InputError naming the address when it cannot be resolved or bound.
Fd listenTcp(const std::string& bind, int port, int backlog, int* actualPort);

// A connected, non-blocking socket, or tl::Error "cannot reach HOST:PORT: <reason>" (a
// TimeoutError when `deadline` passes first).
Fd connectTcp(const std::string& host, int port, Clock::time_point deadline);

void setNonBlocking(int fd);

// Milliseconds left until `deadline` for poll(), at least 0.
int msLeft(Clock::time_point deadline);

}  // namespace tl::control
