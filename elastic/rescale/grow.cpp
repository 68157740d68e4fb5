#include "elastic/rescale/grow.h"

#include <algorithm>
#include <utility>

#include "common/check.h"
#include "common/clock.h"

namespace tl::elastic {
namespace {

using nlohmann::json;

}  // namespace

json toJson(const JoinOffer& o) {
  return {{"job", toJson(o.job)},
          {"gpu_comm", o.gpuComm},
          {"checkpoint_dir", o.checkpointDir},
          {"checkpoint_every", o.checkpointEvery},
          {"stop_at_step", o.stopAtStep},
          {"recovery_dir", o.recoveryDir},
          {"auto_placement", toJson(o.autoPlacement)},
          {"warm_up", o.warmUp}};
}

JoinOffer joinOfferFromJson(const json& j) {
  JoinOffer o;
  o.job = jobConfigFromJson(j.at("job"));
  o.gpuComm = j.at("gpu_comm").get<std::string>();
  o.checkpointDir = j.at("checkpoint_dir").get<std::string>();
  o.checkpointEvery = j.at("checkpoint_every").get<int64_t>();
  o.stopAtStep = j.at("stop_at_step").get<int64_t>();
  o.recoveryDir = j.value("recovery_dir", std::string());
  o.autoPlacement = autoPlacementFromJson(j.at("auto_placement"));
  o.warmUp = j.value("warm_up", 2);
  return o;
}

Grow::Grow(const std::string& program, int count, const std::vector<control::HostSlots>& hosts,
           const MemberList& members, JoinOffer offer) {
  std::vector<std::string> where;
  for (const auto& h : hosts)
    for (int i = 0; i < h.count; ++i) where.push_back(h.host);
  where.resize(size_t(count));
  // Devices in use per host: a started process takes the lowest free index on its host.
  std::vector<std::pair<std::string, int>> used;
  for (size_t r = 0; r < members.hosts.size(); ++r) used.emplace_back(members.hosts[r], members.devices[r]);
  thread_ = std::thread([this, where, used, offer, program]() mutable {
    try {
      for (const std::string& host : where) {
        auto process = comm::SpawnedProcess::start(program, {"--joining-running-job"}, host);
        const json hello = json::parse(process->receive());
        const std::string itsHost = hello.at("hello").get<std::string>();
        int device = 0;
        while (std::any_of(used.begin(), used.end(),
                           [&](const auto& u) { return u.first == itsHost && u.second == device; }))
          ++device;
        used.emplace_back(itsHost, device);
        offer.job.deviceIndex = device;
        process->send(toJson(offer).dump());
        processes_.push_back(std::move(process));
        ready_.push_back(false);
      }
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    started_.store(true);
  });
}

Grow::~Grow() {
  if (thread_.joinable()) thread_.join();
}

std::optional<std::string> Grow::poll(double timeoutSeconds) {
  if (!started_.load()) return std::nullopt;
  std::string failure = error_;
  for (size_t i = 0; failure.empty() && i < processes_.size(); ++i) {
    if (ready_[i] || !processes_[i]) continue;
    if (auto message = processes_[i]->poll()) {
      const json m = json::parse(*message);
      if (m.contains("ready")) {
        ready_[i] = true;
      } else {
        failure = m.value("failed", std::string("the started process failed"));
        processes_[i].reset();  // it reported a failure and is gone
      }
    }
  }
  if (failure.empty() && secondsSince(begin_) > timeoutSeconds)
    failure = str("the started processes were not ready within --join-timeout ", timeoutSeconds, " s");
  if (!failure.empty()) return failure;
  if (ready() && startSeconds_ == 0) startSeconds_ = secondsSince(begin_);
  return std::nullopt;
}

bool Grow::ready() const {
  return started_.load() && std::all_of(ready_.begin(), ready_.end(), [](bool b) { return b; });
}

comm::SpawnedProcess* Grow::join(int64_t j, const LayoutCommand& command, const std::vector<int>& current) {
  LayoutCommand withCurrent = command;
  withCurrent.current = current;
  comm::SpawnedProcess* process = processes_.at(size_t(j)).get();
  process->send(json{{"join", {{"index", j}, {"after", command.joiners - 1 - j}, {"command", toJson(withCurrent)}}}}.dump());
  return process;
}

void Grow::cancel(const std::string& why) {
  if (thread_.joinable()) thread_.join();
  for (auto& p : processes_) {
    if (!p) continue;
    try {
      p->send(json{{"cancel", why}}.dump());
    } catch (const std::exception&) {
    }
  }
  processes_.clear();
}

}  // namespace tl::elastic
