#include "elastic/rescale/membership.h"

#include <unistd.h>  // ::getpid

#include <algorithm>
#include <chrono>

#include "common/clock.h"
#include "common/files.h"
#include "elastic/placement/layout_text.h"
#include "runtime/comm/json_collectives.h"
#include "runtime/comm/nccl/nccl_communicator.h"

namespace tl::elastic {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

comm::Communicator& Membership::forExecutor(comm::Communicator& raw) {
  if (!recorder) return raw;
  std::unique_ptr<comm::Communicator>& view = views_[&raw];
  if (!view) view = recorder->view(raw);
  return *view;
}

void Membership::retire(std::unique_ptr<comm::Communicator> raw,
                        std::vector<std::unique_ptr<comm::Communicator>>& retired) {
  if (!raw) return;
  auto it = views_.find(raw.get());
  if (it != views_.end()) {
    retired.push_back(std::move(it->second));
    views_.erase(it);
  }
  retired.push_back(std::move(raw));
}

MemberList gatherMembers(comm::Communicator& members, const Membership& membership) {
  const nlohmann::json mine = {{"host", hostName()},
                               {"device", membership.deviceIndex},
                               {"grown", !membership.startedWithTheJob},
                               {"pid", int64_t(::getpid())}};
  MemberList list;
  for (const nlohmann::json& member : comm::allgatherJson(members, mine)) {
    list.hosts.push_back(member.at("host").get<std::string>());
    list.devices.push_back(member.at("device").get<int>());
    list.pids.push_back(member.at("pid").get<int64_t>());
    list.startedByGrows += member.at("grown").get<bool>() ? 1 : 0;
  }
  return list;
}

bool changeMembers(Membership& m, const LayoutCommand& command, est::EstExecutor& executor,
                   comm::ParentLink* joining, bool lead, const JoinerLink& joinerLink, ChangeSeconds& took) {
  // Communicators replaced here stay alive until the layout change is done.
  std::vector<std::unique_ptr<comm::Communicator>> retired;
  const auto t0 = Clock::now();
  if (command.joiners > 0) {
    std::vector<int> current = command.current;
    if (!joining) {
      current = countsOf(executor.placement());
      // Each started process joins in turn; the members keep their ranks.
      for (int64_t j = 0; j < command.joiners; ++j) {
        comm::SpawnedProcess* process = lead ? joinerLink(j, current) : nullptr;
        auto widened = comm::admitProcess(*m.host, process);
        m.retire(std::move(m.host), retired);
        m.host = std::move(widened);
      }
    }
    executor.admit(current, m.forExecutor(*m.host), m.forExecutor(m.device()));
  }
  comm::Communicator& host = *m.host;
  const bool leaving = !command.leave.empty() && command.leave.at(size_t(host.rank())) != 0;
  const bool anyLeave = std::any_of(command.leave.begin(), command.leave.end(), [](int x) { return x != 0; });
  if (anyLeave && m.recorder) m.recorder->beforeLeave(host, command.leave, executor.stepsDone());
  std::unique_ptr<comm::Communicator> newHost;
  if (anyLeave) newHost = host.split(leaving ? -1 : 0, host.rank());
  comm::Communicator* finalHost = leaving ? nullptr : (newHost ? newHost.get() : &host);
  std::unique_ptr<comm::Communicator> newGpu;
  const bool membersChange = anyLeave || command.joiners > 0;
  if (finalHost && m.useNccl && membersChange) newGpu = comm::createNcclCommunicator(*finalHost, m.deviceIndex);
  comm::Communicator* finalDevice = nullptr;
  if (finalHost) {
    if (newGpu) finalDevice = newGpu.get();
    else if (m.useNccl) finalDevice = m.gpu.get();
    else finalDevice = finalHost;
  }
  took.communicators = secondsSince(t0);
  const auto t1 = Clock::now();
  executor.changeLayout(est::Placement::withIdleMembers(command.target),
                        finalHost ? &m.forExecutor(*finalHost) : nullptr,
                        finalDevice ? &m.forExecutor(*finalDevice) : nullptr);
  took.layout = secondsSince(t1);
  took.transfer = executor.lastReplicaSeconds();
  if (leaving) {
    m.retire(std::move(m.host), retired);
    m.retire(std::move(m.gpu), retired);
    return false;
  }
  if (newHost) {
    m.retire(std::move(m.host), retired);
    m.host = std::move(newHost);
  }
  if (newGpu) {
    m.retire(std::move(m.gpu), retired);
    m.gpu = std::move(newGpu);
  }
  return true;
}

}  // namespace tl::elastic
