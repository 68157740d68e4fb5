#include "control/control_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "control/control_key.h"
#include "control/tcp.h"

namespace tl::control {
namespace {

void waitFor(int fd, short events, Clock::time_point deadline, const std::string& where,
             const char* doing) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, msLeft(deadline));
    if (rc > 0) return;
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0)
      throw TimeoutError(str("no reply from the job at ", where, " while ", doing,
                             "; it may still carry the request out"));
    throw Error(str("cannot talk to the job at ", where, ": ", std::strerror(errno)));
  }
}

void sendAll(int fd, std::string_view bytes, Clock::time_point deadline, const std::string& where) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitFor(fd, POLLOUT, deadline, where, "sending the request");
      continue;
    }
    if (n <= 0) throw Error(str("cannot send to the job at ", where, ": ", std::strerror(errno)));
    bytes.remove_prefix(size_t(n));
  }
}

// Reads exactly `n` more bytes into `out`; false when the peer closed first.
bool receive(int fd, std::string& out, size_t n, Clock::time_point deadline,
             const std::string& where) {
  char buffer[16384];
  while (n > 0) {
    const ssize_t got = ::recv(fd, buffer, std::min(n, sizeof(buffer)), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitFor(fd, POLLIN, deadline, where, "waiting for its reply");
      continue;
    }
    if (got < 0) throw Error(str("lost the job at ", where, ": ", std::strerror(errno)));
    if (got == 0) return false;
    out.append(buffer, size_t(got));
    n -= size_t(got);
  }
  return true;
}

}  // namespace

Target targetFromJobDir(const std::string& dir) {
  const std::string path = addressPath(dir);
  TL_REQUIRE(fileExists(dir), "job folder '", dir, "' does not exist");
  TL_REQUIRE(fileExists(path), "no job is serving control in '", dir, "' (no ", path,
             "; is the job running?)");
  Target t;
  try {
    const auto j = nlohmann::json::parse(readFile(path));
    t.host = j.at("host").get<std::string>();
    t.port = j.at("port").get<int>();
  } catch (const nlohmann::json::exception& e) {
    inputError("'", path, "' is not a control address file: ", e.what());
  }
  TL_REQUIRE(!t.host.empty() && t.port >= 1 && t.port <= 65535, "'", path,
             "' is not a control address file: bad host or port");
  t.key = readKeyFile(keyPath(dir));
  t.jobDir = dir;
  return t;
}

Target targetFromAddress(const std::string& hostPort, const std::string& keyFile) {
  const Endpoint e = parseHostPort(hostPort, "--address");
  Target t;
  t.host = e.host;
  t.port = e.port;
  t.key = readKeyFile(keyFile);
  return t;
}

Reply send(const Target& t, const Request& r, double timeoutSeconds) {
  const std::string where = formatHostPort(t.host, t.port);
  const Nonce nonce = randomNonce();
  const std::string frame = encodeRequest(r, t.key, nowMs(), nonce);  // checks the request
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeoutSeconds));
  Fd fd = connectTcp(t.host, t.port, deadline);
  sendAll(fd.get(), frame, deadline, where);

  std::string in;
  const std::string closed = str("the job at ", where, " closed the connection without a reply");
  if (!receive(fd.get(), in, kHeaderSize, deadline, where)) throw Error(closed);
  std::string error;
  const auto header = parseHeader(in, &error);
  if (!header) throw Error(str("the job at ", where, " sent a bad reply: ", error));
  if (header->kind == FrameKind::Request)
    throw Error(str("the job at ", where, " sent a bad reply: a request frame"));
  if (!receive(fd.get(), in, header->frameSize() - kHeaderSize, deadline, where))
    throw Error(closed);
  if (header->kind == FrameKind::Rejection) {
    const auto why = Rejection(uint8_t(in[kHeaderSize]));
    throw RejectedError(why,
                        str("the job at ", where, " rejected the request: ", rejectionText(why)));
  }
  if (!macMatches(in, t.key))
    throw Error(str("the reply from ", where, " fails authentication (wrong key?)"));
  if (header->nonce != nonce)
    throw Error(str("the reply from ", where, " answers another request (nonce differs)"));
  auto reply =
      decodeReplyPayload(std::string_view(in).substr(kHeaderSize, header->payloadLength), &error);
  if (!reply) throw Error(str("the job at ", where, " sent a bad reply: ", error));
  return *reply;
}

}  // namespace tl::control
