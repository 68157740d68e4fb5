// The job's end of the control channel: a TCP server that authenticates requests
// (control_protocol.h) and hands them to the training loop.
//
// The constructor creates or reuses <job-dir>/control.key (control_key.h), binds, publishes
// {"host","port","pid"} in <job-dir>/control.json and starts the server thread. Status is
// answered on that thread from options.status(); every other request goes into a queue that
// the training loop drains with take() at its step boundaries and answers with
// PendingRequest::reply(). A request's connection stays open until then.
//
// What the server refuses, with a rejection frame when it can and always by closing that
// connection (the job is unaffected): a frame whose MAC does not match (wrong key, tampered),
// a timestamp outside ±clockSkewSeconds, a nonce already seen within the window (replay), a
// bad header or an oversized length. A request not complete within requestDeadlineSeconds of
// its connection is dropped. Past maxConnections, the oldest connection still sending its
// request is dropped for the new one (a flood of idle connections cannot lock a user out); if
// every connection is waiting for the training loop, the new one is refused as busy. Refusals
// are logged through spdlog, at most one line per reason every 10 s.
//
// Threading: one server thread owns the sockets and every connection (poll() on the listener,
// a wake-up pipe and the connections). take(), queued(), counters() and PendingRequest::reply()
// are safe from any thread; reply() only hands the answer to the server thread through the
// pipe. The destructor stops the thread; requests still queued are answered Moved ("the
// job's control moved; send again"), taken requests not yet answered get Failed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "control/control_protocol.h"

namespace tl::control {

namespace detail {
struct Mailbox;  // queue and replies shared by the server thread and the training loop
}

// A request that needs the training loop. Move-only; answer it once with reply(). Destroyed
// without an answer, it answers Failed, so the user is not left waiting for the timeout.
class PendingRequest {
 public:
  PendingRequest(PendingRequest&& other) noexcept;
  PendingRequest& operator=(PendingRequest&& other) noexcept;
  PendingRequest(const PendingRequest&) = delete;
  PendingRequest& operator=(const PendingRequest&) = delete;
  ~PendingRequest();

  const Request& request() const { return request_; }
  // Callable from any thread; the server thread sends it. Later calls are ignored, and so is
  // a reply whose client is gone (it stopped waiting, or the server stopped).
  void reply(Reply r);
  bool replied() const { return replied_; }

 private:
  friend class ControlServer;
  PendingRequest(Request request, uint64_t connection, std::shared_ptr<detail::Mailbox> mailbox);

  Request request_;
  uint64_t connection_ = 0;
  std::shared_ptr<detail::Mailbox> mailbox_;
  bool replied_ = true;  // a moved-from or default object owes no answer
};

struct ServerOptions {
  std::string jobDir;                 // control.key and control.json live here
  std::string bind = "127.0.0.1";     // 0.0.0.0 or :: to accept other hosts
  int port = 0;                       // 0: ephemeral; the port is published in control.json
  double clockSkewSeconds = 60;       // accepted |timestamp - now|; nonces are kept twice as long
  double requestDeadlineSeconds = 5;  // a connection must deliver its request within this
  int maxConnections = 64;
  size_t maxQueued = 16;  // requests waiting for take(); more are refused as busy
  // JSON text for `tl-ctl status`, called on the server thread: must be thread-safe.
  std::function<std::string()> status;
};

struct ServerCounters {
  uint64_t served = 0;   // replies sent (status and queued requests)
  uint64_t refused = 0;  // not authenticated, stale, replayed, malformed, invalid
  uint64_t dropped = 0;  // deadline passed, oversized, evicted or refused as busy
};

class ControlServer {
 public:
  // InputError naming the job folder, key file or bind address when it cannot start.
  explicit ControlServer(ServerOptions options);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // The next non-Status request in arrival order; nullopt when none. Never blocks.
  std::optional<PendingRequest> take();
  size_t queued() const;

  std::string address() const;  // "127.0.0.1:PORT"
  int port() const { return port_; }
  const Key& key() const { return key_; }
  ServerCounters counters() const;
  size_t openConnections() const { return openConnections_.load(); }

 private:
  class Loop;  // the server thread's state (control_server.cpp)

  ServerOptions options_;
  Key key_;
  int port_ = 0;
  std::string publishedHost_;
  std::string addressJson_;  // what control.json holds, to remove only our own
  std::shared_ptr<detail::Mailbox> mailbox_;
  std::unique_ptr<Loop> loop_;
  std::atomic<size_t> openConnections_{0};
  std::atomic<uint64_t> served_{0}, refused_{0}, dropped_{0};
  std::thread thread_;
};

}  // namespace tl::control
