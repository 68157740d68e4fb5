// The lead's request checks (elastic/rescale/request_check.h) as a table: every refusal the
// end-to-end bad-request case sends through tl-ctl (tests/elastic/test_inplace_rescale.cpp),
// the ones it cannot reach cheaply, and the commands accepted requests become.
#include <gtest/gtest.h>

#include "elastic/rescale/request_check.h"

namespace tl::elastic {
namespace {

using control::Command;
using control::Request;

// The e2e job: 4 logical workers on 2 processes (2,2), 3 slots, 100 steps, after step 5,
// with a checkpoint folder, able to start processes.
JobLayout twoProcesses() { return {4, {2, 2}, 5, 100, true}; }
ProcessSlots threeSlots() { return {true, 3, false, 2, 0}; }
JobLayout fourProcesses() { return {4, {1, 1, 1, 1}, 5, 100, true}; }

Request rescale(int processes, std::vector<int> removeRanks = {}) {
  Request r;
  r.command = Command::Rescale;
  r.processes = processes;
  r.removeRanks = std::move(removeRanks);
  return r;
}

Request placement(std::vector<int> counts) {
  Request r;
  r.command = Command::Placement;
  r.placement = std::move(counts);
  return r;
}

Request of(Command command, int64_t atStep = 0, bool checkpoint = false) {
  Request r;
  r.command = command;
  r.atStep = atStep;
  r.checkpoint = checkpoint;
  return r;
}

Request withHosts(Request r, std::vector<control::HostSlots> hosts) {
  r.hosts = std::move(hosts);
  return r;
}

Request withPlacement(Request r, std::vector<int> counts) {
  r.placement = std::move(counts);
  return r;
}

struct Refusal {
  std::string name;
  TakenRequest taken;
  JobLayout layout;
  ProcessSlots slots;
  std::string says;
};

TakenRequest taken(Request r, int64_t arrivedAfter = 5, UnreachableHosts unreachable = {}) {
  return {std::move(r), arrivedAfter, std::move(unreachable)};
}

TEST(RequestCheck, RefusesWhatCannotBeDoneAndSaysWhy) {
  JobLayout finished = twoProcesses();
  finished.stepsDone = 100;
  JobLayout noFolder = twoProcesses();
  noFolder.checkpointFolder = false;
  ProcessSlots cannotStart = threeSlots();
  cannotStart.canStartProcesses = false;
  ProcessSlots eightSlots = threeSlots();
  eightSlots.slots = 8;
  ProcessSlots afterAGrow = {true, 3, false, 2, 1};
  const JobLayout four = fourProcesses();
  const JobLayout three = {4, {1, 1, 2}, 5, 100, true};
  const std::vector<Refusal> table = {
      // The end-to-end case's refusals.
      {"too many processes", taken(rescale(5)), twoProcesses(), threeSlots(), "--processes 5: the job has 4 logical workers, so at most 4 processes"},
      {"placement sum", taken(placement({3, 2})), twoProcesses(), threeSlots(), "placement 3,2 sums to 5 but the job has 4 logical workers"},
      {"placement entries", taken(placement({1, 1, 2})), twoProcesses(), threeSlots(), "placement 1,1,2 has 3 entries for 2 processes"},
      {"remove the lead", taken(rescale(0, {0})), twoProcesses(), threeSlots(), "--remove-ranks: rank 0 is the job's lead"},
      {"remove a rank it lacks", taken(rescale(0, {7})), twoProcesses(), threeSlots(), "--remove-ranks: the job has ranks 0 to 1, not 7"},
      {"past the slots", taken(rescale(4)), twoProcesses(), threeSlots(),
       "more processes than there are slots: mpirun's allocation has 3 slots and 2 are in use (2 started with the job, 0 by grows)"},
      {"unreachable host", taken(withHosts(rescale(3), {{"no-such-host.invalid", 1}}), 5, {{"no-such-host.invalid", "Name or service not known"}}),
       twoProcesses(), threeSlots(), "--hosts: host 'no-such-host.invalid' cannot be reached: Name or service not known"},
      {"hosts count", taken(withHosts(rescale(3), {{"localhost", 2}})), twoProcesses(), threeSlots(), "--hosts names 2 new processes but the rescale starts 1"},
      {"at-step passed", taken(of(Command::Checkpoint, 1), 5), twoProcesses(), threeSlots(), "--at-step 1 has passed: the job was after step 5 when the request arrived"},
      {"at-step past the end", taken(of(Command::Stop, 100000)), twoProcesses(), threeSlots(), "--at-step 100000: the job ends after step 100"},
      // The ones it lacks.
      {"finished", taken(of(Command::Checkpoint)), finished, threeSlots(), "the job has finished"},
      {"empty process", taken(placement({4, 0})), twoProcesses(), threeSlots(), "placement 4,0: every process needs at least one logical worker"},
      {"rescale placement entries", taken(withPlacement(rescale(3), {2, 2})), twoProcesses(), eightSlots, "--placement 2,2 has 2 entries for 3 processes"},
      {"checkpoint without folder", taken(of(Command::Checkpoint)), noFolder, threeSlots(), "the job has no checkpoint folder (start it with --checkpoint-dir or --output-dir)"},
      {"stop --checkpoint without folder", taken(of(Command::Stop, 0, true)), noFolder, threeSlots(), "stop --checkpoint: the job has no checkpoint folder"},
      {"keeps too many", taken(rescale(1, {1})), four, threeSlots(),
       "--processes 1 with --remove-ranks 1 would keep 3 processes; remove more ranks or ask for more processes"},
      {"cannot start processes", taken(rescale(3)), twoProcesses(), cannotStart, "this job cannot start processes"},
      {"slots used by an earlier grow", taken(rescale(4)), three, afterAGrow,
       "mpirun's allocation has 3 slots and 3 are in use (2 started with the job, 1 by grows)"},
      {"nothing changes", taken(rescale(2)), twoProcesses(), threeSlots(), "the job already runs on 2 processes with placement 2,2"},
      {"unknown command", taken(of(Command::Status)), twoProcesses(), threeSlots(), "unknown command"},
  };
  for (const Refusal& c : table) {
    const RequestVerdict v = checkRequest(c.taken, c.layout, c.slots);
    EXPECT_FALSE(v.accepted()) << c.name;
    EXPECT_NE(v.refusal.find(c.says), std::string::npos) << c.name << ": " << v.refusal;
  }
}

struct Acceptance {
  std::string name;
  TakenRequest taken;
  JobLayout layout;
  ProcessSlots slots;
  LayoutCommand command;
};

LayoutCommand command(LayoutCommand::Kind kind, int64_t joiners, std::vector<int> target, std::vector<int> leave,
                      bool checkpoint = false) {
  LayoutCommand c;
  c.kind = kind;
  c.joiners = joiners;
  c.target = std::move(target);
  c.leave = std::move(leave);
  c.checkpoint = checkpoint;
  return c;
}

TEST(RequestCheck, AcceptedRequestsBecomeTheCommandEveryMemberApplies) {
  ProcessSlots oversubscribed = threeSlots();
  oversubscribed.oversubscribe = true;
  ProcessSlots unknownSlots = threeSlots();
  unknownSlots.slots = 0;
  const JobLayout four = fourProcesses();
  const std::vector<Acceptance> table = {
      {"placement", taken(placement({3, 1})), twoProcesses(), threeSlots(), command(LayoutCommand::Placement, 0, {3, 1}, {0, 0})},
      {"checkpoint", taken(of(Command::Checkpoint, 7)), twoProcesses(), threeSlots(), command(LayoutCommand::Checkpoint, 0, {}, {})},
      {"stop with a checkpoint", taken(of(Command::Stop, 0, true)), twoProcesses(), threeSlots(), command(LayoutCommand::Stop, 0, {}, {}, true)},
      {"grow into the last slot", taken(rescale(3)), twoProcesses(), threeSlots(), command(LayoutCommand::Rescale, 1, {2, 1, 1}, {0, 0, 0})},
      {"grow on named hosts", taken(withHosts(rescale(3), {{"localhost", 1}})), twoProcesses(), threeSlots(),
       command(LayoutCommand::Rescale, 1, {2, 1, 1}, {0, 0, 0})},
      {"grow past the slots, oversubscribed", taken(rescale(4)), twoProcesses(), oversubscribed,
       command(LayoutCommand::Rescale, 2, {1, 1, 1, 1}, {0, 0, 0, 0})},
      {"grow with unknown slots", taken(rescale(4)), twoProcesses(), unknownSlots, command(LayoutCommand::Rescale, 2, {1, 1, 1, 1}, {0, 0, 0, 0})},
      {"shrink gives back the highest ranks", taken(rescale(2)), four, threeSlots(), command(LayoutCommand::Rescale, 0, {2, 2}, {0, 0, 1, 1})},
      {"shrink by named ranks", taken(rescale(0, {1, 3})), four, threeSlots(), command(LayoutCommand::Rescale, 0, {2, 2}, {0, 1, 0, 1})},
      {"replace a rank", taken(withPlacement(rescale(2, {1}), {3, 1})), twoProcesses(), threeSlots(),
       command(LayoutCommand::Rescale, 1, {3, 1}, {0, 1, 0})},
      {"rescale to another placement only", taken(withPlacement(rescale(2), {3, 1})), twoProcesses(), threeSlots(),
       command(LayoutCommand::Rescale, 0, {3, 1}, {0, 0})},
      {"at-step still ahead", taken(of(Command::Checkpoint, 9), 5), twoProcesses(), threeSlots(), command(LayoutCommand::Checkpoint, 0, {}, {})},
  };
  for (const Acceptance& c : table) {
    const RequestVerdict v = checkRequest(c.taken, c.layout, c.slots);
    EXPECT_TRUE(v.accepted()) << c.name << ": " << v.refusal;
    EXPECT_EQ(toJson(v.command), toJson(c.command)) << c.name;
  }
}

TEST(RequestCheck, EvenCountsGiveTheFirstProcessesOneMore) {
  EXPECT_EQ(evenCounts(4, 2), (std::vector<int>{2, 2}));
  EXPECT_EQ(evenCounts(5, 3), (std::vector<int>{2, 2, 1}));
  EXPECT_EQ(evenCounts(3, 3), (std::vector<int>{1, 1, 1}));
}

}  // namespace
}  // namespace tl::elastic
