#include "control/control_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/files.h"
#include "control/control_key.h"
#include "control/control_mailbox.h"
#include "control/tcp.h"

namespace tl::control {

// ---------------------------------------------------------------------------------------------
// The server thread

namespace {

constexpr int kAcceptBacklog = 128;
constexpr int kMaxAcceptsPerRound = 256;
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr auto kLogInterval = std::chrono::seconds(10);

// One log line per reason every kLogInterval, saying how many were not logged in between.
class LogLimiter {
 public:
  void warn(const std::string& reason, const std::string& line) {
    State& s = states_[reason];
    const auto now = Clock::now();
    if (s.logged && now - s.last < kLogInterval) {
      ++s.suppressed;
      return;
    }
    if (s.suppressed > 0) {
      spdlog::warn("control: {} (and {} more like it in the last {} s)", line, s.suppressed,
                   std::chrono::duration_cast<std::chrono::seconds>(now - s.last).count());
    } else {
      spdlog::warn("control: {}", line);
    }
    s = State{true, now, 0};
  }

 private:
  struct State {
    bool logged = false;
    Clock::time_point last;
    uint64_t suppressed = 0;
  };
  std::map<std::string, State> states_;
};

std::string peerName(const sockaddr_storage& address, socklen_t length) {
  char host[NI_MAXHOST], service[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host, sizeof(host),
                    service, sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "an unknown peer";
  return formatHostPort(host, std::atoi(service));
}

// A one-line message no longer than the protocol allows.
std::string clipMessage(std::string message) {
  if (message.size() > kMaxMessage) message.resize(kMaxMessage);
  return message;
}

}  // namespace

class ControlServer::Loop {
 public:
  Loop(ControlServer& server, Fd listener) : server_(server), listener_(std::move(listener)) {}

  void run() {
    while (!stopping_.load()) round();
    shutdown();
  }

  void stop() {
    stopping_.store(true);
    server_.mailbox_->wake();
  }

 private:
  enum class State { Reading, Waiting, Writing };
  struct Connection {
    Fd fd;
    State state = State::Reading;
    std::string in;
    std::string out;
    size_t sent = 0;
    Clock::time_point deadline;
    Nonce nonce{};
    std::string peer;
  };

  const ServerOptions& options() const { return server_.options_; }
  Clock::duration deadlineSpan() const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options().requestDeadlineSeconds));
  }

  void round() {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    fds.push_back({server_.mailbox_->wakeRead.get(), POLLIN, 0});
    const auto now = Clock::now();
    const bool accepting = now >= acceptPausedUntil_;
    fds.push_back({accepting ? listener_.get() : -1, POLLIN, 0});
    Clock::time_point wakeAt = now + std::chrono::seconds(1);
    if (!accepting) wakeAt = std::min(wakeAt, acceptPausedUntil_);
    for (auto& [id, c] : connections_) {
      fds.push_back({c.fd.get(), short(c.state == State::Writing ? POLLOUT : POLLIN), 0});
      ids.push_back(id);
      if (c.state != State::Waiting) wakeAt = std::min(wakeAt, c.deadline);
    }
    int rc = ::poll(fds.data(), nfds_t(fds.size()), msLeft(wakeAt) + 1);
    if (rc < 0 && errno != EINTR) {
      spdlog::error("control: poll failed: {}", std::strerror(errno));
      std::this_thread::sleep_for(kAcceptPause);  // never spin
      return;
    }
    if (rc > 0 && fds[0].revents != 0) collectReplies();
    if (rc > 0 && fds[1].revents != 0) acceptNew();
    for (size_t i = 0; rc > 0 && i < ids.size(); ++i) {
      const short events = fds[i + 2].revents;
      if (events == 0) continue;
      auto it = connections_.find(ids[i]);
      if (it == connections_.end()) continue;  // evicted during this round
      if (it->second.state == State::Writing) {
        writeSome(it);
      } else if (it->second.state == State::Reading) {
        readSome(it);
      } else {
        close(it);  // waiting: the client closed, or sent more than one request
      }
    }
    expire();
  }

  // --- accepting ----------------------------------------------------------------------------

  void acceptNew() {
    for (int i = 0; i < kMaxAcceptsPerRound; ++i) {
      sockaddr_storage address{};
      socklen_t length = sizeof(address);
      Fd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&address), &length,
                      SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd.valid()) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        // Out of descriptors or memory: stop accepting for a moment instead of spinning on a
        // listener that stays readable.
        log_.warn("accept",
                  str("cannot accept connections: ", std::strerror(errno), "; pausing for 100 ms"));
        acceptPausedUntil_ = Clock::now() + kAcceptPause;
        return;
      }
      const std::string peer = peerName(address, length);
      if (connections_.size() >= size_t(std::max(1, options().maxConnections)) &&
          !evictOldestReader()) {
        ++server_.dropped_;
        log_.warn("busy", str("refused a connection from ", peer, ": ", connections_.size(),
                              " connections are waiting for the training loop"));
        sendRejection(fd.get(), Rejection::Busy);
        continue;
      }
      Connection c;
      c.fd = std::move(fd);
      c.deadline = Clock::now() + deadlineSpan();
      c.peer = peer;
      connections_.emplace(nextId_++, std::move(c));
      server_.openConnections_.store(connections_.size());
    }
  }

  // Drops the connection that has been sending its request for longest, to make room.
  bool evictOldestReader() {
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
      if (it->second.state != State::Reading) continue;
      ++server_.dropped_;
      log_.warn("evicted", str("dropped a connection from ", it->second.peer,
                               " that had not sent a request: more than ", options().maxConnections,
                               " connections"));
      close(it);
      return true;
    }
    return false;
  }

  // --- reading a request --------------------------------------------------------------------

  void readSome(std::map<uint64_t, Connection>::iterator it) {
    Connection& c = it->second;
    for (;;) {
      size_t want = kHeaderSize;
      std::optional<FrameHeader> header;
      if (c.in.size() >= kHeaderSize) {
        std::string error;
        header = parseHeader(c.in, &error);  // valid: checked when the header arrived
        want = header->frameSize();
      }
      if (c.in.size() == want) return handleFrame(it, *header);
      char buffer[4096];
      const size_t n = std::min(sizeof(buffer), want - c.in.size());
      const ssize_t got = ::recv(c.fd.get(), buffer, n, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (got <= 0) {
        if (!c.in.empty()) {
          ++server_.dropped_;
          log_.warn("cut", str("dropped a request from ", c.peer, ": connection closed after ",
                               c.in.size(), " bytes"));
        }
        return close(it);
      }
      c.in.append(buffer, size_t(got));
      if (c.in.size() == kHeaderSize) {
        std::string error;
        auto parsed = parseHeader(c.in, &error);
        if (!parsed || parsed->kind != FrameKind::Request) {
          if (parsed) error = "not a request frame";
          const bool oversized = error.find("payload of") != std::string::npos;
          ++(oversized ? server_.dropped_ : server_.refused_);
          log_.warn(oversized ? "oversized" : "malformed",
                    str("refused a request from ", c.peer, ": ", error));
          sendRejection(c.fd.get(), Rejection::Malformed);
          return close(it);
        }
      }
    }
  }

  void handleFrame(std::map<uint64_t, Connection>::iterator it, const FrameHeader& header) {
    Connection& c = it->second;
    if (!macMatches(c.in, server_.key_)) return refuse(it, Rejection::Unauthenticated);
    const int64_t skewMs = int64_t(options().clockSkewSeconds * 1000);
    const int64_t now = nowMs();
    if (header.timestampMs < now - skewMs || header.timestampMs > now + skewMs)
      return refuse(it, Rejection::Stale);
    forgetOldNonces(now);
    if (!seen_.insert(header.nonce).second) return refuse(it, Rejection::Replayed);
    // Kept for twice the skew: a frame older than that is stale anyway.
    nonceOrder_.emplace_back(now + 2 * skewMs, header.nonce);
    c.nonce = header.nonce;

    std::string error;
    auto request = decodeRequestPayload(
        std::string_view(c.in).substr(kHeaderSize, header.payloadLength), &error);
    c.in.clear();
    c.in.shrink_to_fit();
    if (!request) {
      ++server_.refused_;
      log_.warn("invalid", str("refused an authenticated request from ", c.peer, ": ", error));
      return sendReply(it, {Outcome::Refused, "bad request: " + error, ""});
    }
    if (request->command == Command::Status) return sendReply(it, status());
    std::lock_guard<std::mutex> lock(server_.mailbox_->mu);
    if (server_.mailbox_->queue.size() >= options().maxQueued) {
      return sendReply(it, {Outcome::Refused,
                            str("busy: ", server_.mailbox_->queue.size(),
                                " requests are waiting for the training loop already"),
                            ""});
    }
    spdlog::info("control: '{}' from {} waits for the next step boundary", describe(*request),
                 c.peer);
    server_.mailbox_->queue.push_back({std::move(*request), it->first});
    c.state = State::Waiting;
  }

  Reply status() {
    if (!options().status) return {Outcome::Failed, "this job publishes no status", ""};
    try {
      Reply r{Outcome::Done, "", options().status()};
      if (r.body.size() > kMaxBody)
        return {Outcome::Failed,
                str("the status is ", r.body.size(), " bytes, over the limit of ", kMaxBody), ""};
      return r;
    } catch (const std::exception& e) {
      return {Outcome::Failed, str("the job could not say its status: ", e.what()), ""};
    }
  }

  void forgetOldNonces(int64_t now) {
    while (!nonceOrder_.empty() && nonceOrder_.front().first < now) {
      seen_.erase(nonceOrder_.front().second);
      nonceOrder_.pop_front();
    }
  }

  void refuse(std::map<uint64_t, Connection>::iterator it, Rejection why) {
    ++server_.refused_;
    log_.warn(rejectionText(why),
              str("refused a request from ", it->second.peer, ": ", rejectionText(why)));
    sendRejection(it->second.fd.get(), why);
    close(it);
  }

  // Best effort and never blocking: the peer is not trusted to read.
  static void sendRejection(int fd, Rejection why) {
    const std::string frame = encodeRejection(why);
    (void)!::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  // --- replying -----------------------------------------------------------------------------

  void sendReply(std::map<uint64_t, Connection>::iterator it, Reply r) {
    Connection& c = it->second;
    r.message = clipMessage(std::move(r.message));
    if (r.body.size() > kMaxBody) {
      r = {Outcome::Failed,
           str("the reply is ", r.body.size(), " bytes, over the limit of ", kMaxBody), ""};
    }
    c.out = encodeReply(r, server_.key_, nowMs(), c.nonce);
    c.sent = 0;
    c.state = State::Writing;
    c.deadline = Clock::now() + deadlineSpan();
    writeSome(it);
  }

  void writeSome(std::map<uint64_t, Connection>::iterator it) {
    Connection& c = it->second;
    while (c.sent < c.out.size()) {
      const ssize_t n =
          ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) return close(it);  // the client stopped waiting
      c.sent += size_t(n);
    }
    ++server_.served_;
    close(it);
  }

  void collectReplies() {
    char drain[256];
    while (::read(server_.mailbox_->wakeRead.get(), drain, sizeof(drain)) > 0) {
    }
    std::vector<std::pair<uint64_t, Reply>> replies;
    {
      std::lock_guard<std::mutex> lock(server_.mailbox_->mu);
      replies.swap(server_.mailbox_->replies);
    }
    for (auto& [id, reply] : replies) {
      auto it = connections_.find(id);
      if (it == connections_.end() || it->second.state != State::Waiting) continue;
      sendReply(it, std::move(reply));
    }
  }

  // --- deadlines and shutdown ---------------------------------------------------------------

  void expire() {
    const auto now = Clock::now();
    for (auto it = connections_.begin(); it != connections_.end();) {
      auto next = std::next(it);
      const Connection& c = it->second;
      if (c.state != State::Waiting && now >= c.deadline) {
        ++server_.dropped_;
        log_.warn("deadline",
                  str("dropped a connection from ", c.peer, ": ",
                      c.state == State::Reading ? "no complete request" : "reply not read",
                      " within ", options().requestDeadlineSeconds, " s"));
        close(it);
      }
      it = next;
    }
  }

  void close(std::map<uint64_t, Connection>::iterator it) {
    connections_.erase(it);
    server_.openConnections_.store(connections_.size());
  }

  // Replies already posted go out; requests never taken are answered Moved (a new lead
  // process will serve them); taken ones that have no answer get Failed.
  void shutdown() {
    std::deque<detail::Mailbox::Queued> queued;
    {
      std::lock_guard<std::mutex> lock(server_.mailbox_->mu);
      server_.mailbox_->open = false;
      queued.swap(server_.mailbox_->queue);
    }
    collectReplies();
    for (const auto& q : queued) {
      auto it = connections_.find(q.connection);
      if (it != connections_.end() && it->second.state == State::Waiting)
        sendReply(it, {Outcome::Moved, "the job's control moved; send again", ""});
    }
    for (auto it = connections_.begin(); it != connections_.end();) {
      auto next = std::next(it);
      if (it->second.state == State::Waiting) {
        sendReply(it, {Outcome::Failed,
                       "the job's control stopped before answering; the request may or may not "
                       "have been carried out",
                       ""});
      }
      it = next;
    }
    connections_.clear();
    server_.openConnections_.store(0);
  }

  ControlServer& server_;
  Fd listener_;
  std::atomic<bool> stopping_{false};
  std::map<uint64_t, Connection> connections_;  // by id: oldest first
  uint64_t nextId_ = 1;
  Clock::time_point acceptPausedUntil_;
  std::set<Nonce> seen_;
  std::deque<std::pair<int64_t, Nonce>> nonceOrder_;  // (forget after, nonce), oldest first
  LogLimiter log_;
};

// ---------------------------------------------------------------------------------------------
// ControlServer

namespace {

bool wildcard(const std::string& bind) {
  return bind.empty() || bind == "0.0.0.0" || bind == "::" || bind == "[::]";
}

}  // namespace

ControlServer::ControlServer(ServerOptions options)
    : options_(std::move(options)), mailbox_(std::make_shared<detail::Mailbox>()) {
  TL_REQUIRE(!options_.jobDir.empty(), "control channel: no job folder given");
  TL_REQUIRE(options_.clockSkewSeconds > 0 && options_.clockSkewSeconds <= 86400,
             "control channel: clock skew must be between 0 and 86400 s, got ",
             options_.clockSkewSeconds);
  TL_REQUIRE(options_.requestDeadlineSeconds > 0 && options_.requestDeadlineSeconds <= 3600,
             "control channel: request deadline must be between 0 and 3600 s, got ",
             options_.requestDeadlineSeconds);
  TL_REQUIRE(options_.maxConnections >= 1, "control channel: maxConnections must be at least 1");
  ensureWritableDir(options_.jobDir, "job folder");
  key_ = createOrReuseKey(options_.jobDir);
  Fd listener = listenTcp(options_.bind, options_.port, kAcceptBacklog, &port_);
  publishedHost_ = wildcard(options_.bind) ? hostName() : options_.bind;
  addressJson_ =
      nlohmann::json{{"host", publishedHost_}, {"port", port_}, {"pid", int64_t(::getpid())}}
          .dump() +
      "\n";
  writeFileAtomic(addressPath(options_.jobDir), addressJson_);
  loop_ = std::make_unique<Loop>(*this, std::move(listener));
  thread_ = std::thread([this] { loop_->run(); });
  spdlog::info("control: listening on {} (job folder {})", address(), options_.jobDir);
}

ControlServer::~ControlServer() {
  loop_->stop();
  thread_.join();
  loop_.reset();  // closes the listener
  const std::string path = addressPath(options_.jobDir);
  try {
    if (fileExists(path) && readFile(path) == addressJson_) ::unlink(path.c_str());
  } catch (const std::exception&) {
    // Gone or unreadable: nothing of ours to remove.
  }
}

std::optional<PendingRequest> ControlServer::take() {
  std::lock_guard<std::mutex> lock(mailbox_->mu);
  if (mailbox_->queue.empty()) return std::nullopt;
  detail::Mailbox::Queued q = std::move(mailbox_->queue.front());
  mailbox_->queue.pop_front();
  return PendingRequest(std::move(q.request), q.connection, mailbox_);
}

size_t ControlServer::queued() const {
  std::lock_guard<std::mutex> lock(mailbox_->mu);
  return mailbox_->queue.size();
}

std::string ControlServer::address() const { return formatHostPort(publishedHost_, port_); }

ServerCounters ControlServer::counters() const {
  return {served_.load(), refused_.load(), dropped_.load()};
}

}  // namespace tl::control
