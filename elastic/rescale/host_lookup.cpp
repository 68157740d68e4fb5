#include "elastic/rescale/host_lookup.h"

#include <netdb.h>

#include <mutex>
#include <set>
#include <thread>

namespace tl::elastic {

std::optional<std::string> unresolvable(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found) ::freeaddrinfo(found);
  if (rc != 0) return std::string(::gai_strerror(rc));
  return std::nullopt;
}

// Shared with the thread, so that the thread may outlive the HostLookup.
struct HostLookup::State {
  mutable std::mutex mutex;
  bool done = false;
  UnreachableHosts unreachable;
};

HostLookup::HostLookup(std::vector<std::string> hosts) : state_(std::make_shared<State>()) {
  const std::set<std::string> names(hosts.begin(), hosts.end());
  std::thread([state = state_, names] {
    UnreachableHosts found;
    for (const std::string& host : names) {
      if (auto why = unresolvable(host)) found[host] = *why;
    }
    std::lock_guard<std::mutex> lock(state->mutex);
    state->unreachable = std::move(found);
    state->done = true;
  }).detach();
}

HostLookup::~HostLookup() = default;

bool HostLookup::done() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done;
}

UnreachableHosts HostLookup::unreachable() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->unreachable;
}

}  // namespace tl::elastic
