// Whether the hosts a grow names (tl-ctl rescale --hosts) resolve. A name lookup can block for
// seconds, so the lead never makes one on its training thread, where the other members wait in
// the boundary broadcast: HostLookup resolves on a thread of its own, started when the request
// is taken off the control channel, and the request is checked once it is done. Torch-free.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tl::elastic {

// Why `host` cannot be resolved (getaddrinfo's words), or nullopt when it can. Blocks.
std::optional<std::string> unresolvable(const std::string& host);

// Host name -> why it cannot be resolved; hosts that resolve are absent.
using UnreachableHosts = std::map<std::string, std::string>;

class HostLookup {
 public:
  // Starts resolving `hosts` (duplicates once each) at once, on a thread of its own.
  explicit HostLookup(std::vector<std::string> hosts);
  // Never waits for the thread: a lookup still running when this is destroyed finishes alone.
  ~HostLookup();
  HostLookup(const HostLookup&) = delete;
  HostLookup& operator=(const HostLookup&) = delete;

  bool done() const;
  // The hosts that did not resolve; empty until done().
  UnreachableHosts unreachable() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tl::elastic
