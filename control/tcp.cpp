#include "control/tcp.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/check.h"

namespace tl::control {
namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* a) const { ::freeaddrinfo(a); }
};
using AddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo for a numeric port; empty `error` on success.
AddrInfo resolve(const std::string& host, int port, bool passive, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* out = nullptr;
  const std::string service = std::to_string(port);
  const int rc =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out);
  if (rc != 0) {
    *error = rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc);
    return nullptr;
  }
  return AddrInfo(out);
}

}  // namespace

Endpoint parseHostPort(const std::string& text, const std::string& what) {
  Endpoint e;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close != std::string::npos && close + 1 < text.size() && text[close + 1] == ':') {
      e.host = text.substr(1, close - 1);
      port = text.substr(close + 2);
    }
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    e.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  TL_REQUIRE(!e.host.empty() && digits && std::stoi(port) >= 1 && std::stoi(port) <= 65535, what,
             ": expected HOST:PORT with a port of 1-65535, got '", text, "'");
  e.port = std::stoi(port);
  return e;
}

std::string formatHostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

void setNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  TL_CHECK(flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0, std::strerror(errno));
}

int msLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : int(std::min<int64_t>(left.count(), 1 << 30));
}

Fd listenTcp(const std::string& bind, int port, int backlog, int* actualPort) {
  const std::string where = formatHostPort(bind, port);
  TL_REQUIRE(port >= 0 && port <= 65535, "control bind address ", where, ": bad port");
  std::string error;
  AddrInfo info = resolve(bind, port, /*passive=*/true, &error);
  TL_REQUIRE(info, "control bind address '", bind, "' cannot be resolved: ", error);
  const addrinfo* a = info.get();
  Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
  TL_REQUIRE(fd.valid(), "cannot create a socket for ", where, ": ", std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  TL_REQUIRE(::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0,
             "cannot bind the control channel to ", where, ": ", std::strerror(errno));
  TL_REQUIRE(::listen(fd.get(), backlog) == 0, "cannot listen on ", where, ": ",
             std::strerror(errno));
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  TL_CHECK(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &length) == 0);
  *actualPort = bound.ss_family == AF_INET6
                    ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                    : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

Fd connectTcp(const std::string& host, int port, Clock::time_point deadline) {
  const std::string where = formatHostPort(host, port);
  std::string error;
  AddrInfo info = resolve(host, port, /*passive=*/false, &error);
  if (!info) throw Error(str("cannot reach the job at ", where, ": ", error));
  for (const addrinfo* a = info.get(); a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (!fd.valid()) {
      error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      do {
        rc = ::poll(&p, 1, msLeft(deadline));
      } while (rc < 0 && errno == EINTR);
      if (rc == 0)
        throw TimeoutError(str("cannot reach the job at ", where, ": connect timed out"));
      int soError = 0;
      socklen_t length = sizeof(soError);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soError, &length);
      rc = soError == 0 ? 0 : -1;
      errno = soError;
    }
    if (rc != 0) {
      error = std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
  throw Error(str("cannot reach the job at ", where, ": ", error));
}

}  // namespace tl::control
