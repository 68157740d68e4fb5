// tl-sched end to end: three small real jobs (MLP on synthetic CIFAR, CPU) on process slots
// under the elastic policy (two slots) and under tl-sched's default, hetero-goodput (two fast
// slots and a slow one). The second job's arrival makes the first shrink in place, a job that
// outlives another grows back, and every job must end with the params_sha256 of the same job
// run in DDP mode with no rescale; the records must agree with the events.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/support/run_command.h"

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

struct TraceJob {
  std::string id;
  double arrival;
  int ests, minGpus, maxGpus, steps;
};

// Steps are work / (batch 8 x ESTs).
const std::vector<TraceJob> kJobs = {
    {"j1", 0, 2, 1, 2, 800},
    {"j2", 1, 1, 1, 1, 30},
    {"j3", 2, 2, 1, 2, 150},
};

std::string commonFlags(const std::string& data) {
  return "--dataset cifar10 --data-dir " + data + " --seed 3 --log-every 0";
}

std::vector<std::map<std::string, std::string>> readCsv(const std::string& path) {
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::istringstream h(line);
  for (std::string f; std::getline(h, f, ',');) header.push_back(f);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::istringstream fields(line);
    size_t i = 0;
    for (std::string f; std::getline(fields, f, ',') && i < header.size(); ++i) row[header[i]] = f;
    rows.push_back(row);
  }
  return rows;
}

// The data and the DDP references (N processes, one EST each, no control channel), made once
// for the tests below and run side by side.
struct References {
  std::string data, error;
  std::map<std::string, std::string> dir;
  std::map<std::string, int> exit;
};

const References& references() {
  static const References refs = [] {
    References r;
    r.data = tl::testing::makeSyntheticCifar("sched_real_data", 256, 64, 4, &r.error);
    if (!r.error.empty()) return r;
    for (const auto& j : kJobs) {
      r.exit[j.id] = -1;
      r.dir[j.id] = freshDir("sched_real_ref_" + j.id);
    }
    std::vector<std::thread> threads;
    for (const auto& j : kJobs) {
      threads.emplace_back([&r, j] {
        const std::string d = r.dir.at(j.id);
        r.exit.at(j.id) = runCommand(tl::testing::mpirunPrefix(j.ests) + TL_LAUNCH_BIN + " --model mlp --batch 8 --steps " +
                                         std::to_string(j.steps) + " --logical-workers " + std::to_string(j.ests) + " " +
                                         commonFlags(r.data) + " --control-bind none --output-dir " + d + "/out",
                                     300, d)
                              .exitCode;
      });
    }
    for (auto& t : threads) t.join();
    return r;
  }();
  return refs;
}

// Runs kJobs under tl-sched with `policy` on `slots` (NAME:COUNT[:SLOWDOWN],...) and checks
// what every run must show: each job done with its DDP bits, jobs.csv agreeing with
// events.csv, no more processes on a kind than its slots, each job on one kind, a shrink and
// a grow confirmed. Returns the events (and the per-job records through `realOut`).
std::string runAndCheck(const std::string& name, const std::string& policy, const std::string& slots,
                        std::map<std::string, int> slotsOfKind,
                        std::vector<std::map<std::string, std::string>>* realOut) {
  const References& refs = references();
  EXPECT_TRUE(refs.error.empty()) << refs.error;
  for (const auto& j : kJobs) EXPECT_EQ(refs.exit.at(j.id), 0) << j.id;
  const std::string dir = freshDir(name);
  std::ostringstream trace;
  trace << "id,arrival_s,model,work_samples,min_gpus,max_gpus,ests\n";
  for (const auto& j : kJobs)
    trace << j.id << ',' << j.arrival << ",mlp," << j.steps * 8 * j.ests << ',' << j.minGpus << ','
          << j.maxGpus << ',' << j.ests << '\n';
  {
    std::ofstream f(dir + "/trace.csv");
    f << trace.str();
  }

  const std::string out = dir + "/run";
  const auto r = runCommand(std::string(TL_SCHED_BIN) + " --trace " + dir + "/trace.csv --slots " + slots +
                                (policy.empty() ? "" : " --policy " + policy) +
                                " --tick 0.5 --time-limit 240 --tl-launch " + TL_LAUNCH_BIN + " --tl-ctl " + TL_CTL_BIN +
                                " --mpirun " + TL_MPIEXEC + " --launch-flags '" + commonFlags(refs.data) + "' --out " + out,
                            300, dir);
  const std::string events = slurp(out + "/events.csv");
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err << events;
  if (r.exitCode != 0) return events;

  const auto real = readCsv(out + "/real_jobs.csv");
  const auto jobs = readCsv(out + "/jobs.csv");
  if (realOut) *realOut = real;
  EXPECT_EQ(real.size(), kJobs.size());
  EXPECT_EQ(jobs.size(), kJobs.size());
  if (real.size() != kJobs.size() || jobs.size() != kJobs.size()) return events;
  int rescales = 0;
  std::map<std::string, std::string> kindOf;
  for (size_t i = 0; i < kJobs.size(); ++i) {
    const auto& want = kJobs[i];
    EXPECT_EQ(real[i].at("id"), want.id);
    EXPECT_EQ(real[i].at("status"), "done") << events;
    kindOf[want.id] = real[i].at("kind");
    EXPECT_EQ(slotsOfKind.count(kindOf[want.id]), 1u) << want.id << " ran on '" << kindOf[want.id] << "'";
    const auto ref = nlohmann::json::parse(slurp(refs.dir.at(want.id) + "/out/summary.json"));
    const auto mine = nlohmann::json::parse(slurp(out + "/jobs/" + want.id + "/summary.json"));
    // The consistency contract through the scheduler's rescales.
    EXPECT_EQ(real[i].at("params_sha256"), ref["params_sha256"].get<std::string>()) << want.id << "\n" << events;
    EXPECT_EQ(mine["params_sha256"], ref["params_sha256"]) << want.id;
    EXPECT_EQ(std::stoi(real[i].at("rescales")), mine["inplace_rescales"].get<int>()) << want.id;
    rescales += std::stoi(real[i].at("rescales"));
    // A refused rescale (a job that just finished training) is not retried every poll.
    EXPECT_LE(std::stoi(real[i].at("failed_rescales")), 2) << want.id << "\n" << events;
    // The record agrees with itself and with tl-sim's columns.
    const double arrival = std::stod(jobs[i].at("arrival_s")), start = std::stod(jobs[i].at("start_s")),
                 finish = std::stod(jobs[i].at("finish_s"));
    EXPECT_DOUBLE_EQ(arrival, want.arrival);
    EXPECT_GE(start, arrival);
    EXPECT_GT(finish, start);
    EXPECT_NEAR(std::stod(jobs[i].at("jct_s")), finish - arrival, 0.002);
    EXPECT_EQ(jobs[i].at("rescales"), real[i].at("rescales"));
  }
  EXPECT_GE(rescales, 2) << events;

  // Replay the events: times match the records, no kind ever has more processes than slots,
  // and at least one shrink and one grow were confirmed.
  std::map<std::string, int> held;
  std::map<std::string, int> rescaled;
  bool shrank = false, grew = false;
  std::istringstream ev(events);
  std::string line;
  std::getline(ev, line);
  double lastTime = 0;
  while (std::getline(ev, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    EXPECT_GE(f.size(), 4u) << line;
    if (f.size() < 4) continue;
    const double t = std::stod(f[0]);
    EXPECT_GE(t, lastTime) << line;
    lastTime = t;
    const std::string& job = f[1];
    const std::string& what = f[2];
    const int processes = std::stoi(f[3]);
    size_t i = 0;
    while (i < kJobs.size() && kJobs[i].id != job) ++i;
    EXPECT_LT(i, kJobs.size()) << line;
    if (i == kJobs.size()) continue;
    if (what == "start") {
      EXPECT_NEAR(t, std::stod(jobs[i].at("start_s")), 0.002) << line;
      held[job] = processes;
    } else if (what == "rescaled") {
      shrank |= processes < held[job];
      grew |= processes > held[job];
      held[job] = processes;
      ++rescaled[job];
    } else if (what == "finish") {
      EXPECT_NEAR(t, std::stod(jobs[i].at("finish_s")), 0.002) << line;
      held[job] = 0;
    }
    std::map<std::string, int> onKind;
    for (const auto& [id, n] : held) onKind[kindOf[id]] += n;
    for (const auto& [kind, n] : onKind) EXPECT_LE(n, slotsOfKind[kind]) << "more processes than slots of " << kind << " at " << line;
  }
  EXPECT_TRUE(shrank) << events;
  EXPECT_TRUE(grew) << events;
  for (size_t i = 0; i < kJobs.size(); ++i)
    EXPECT_EQ(rescaled[kJobs[i].id], std::stoi(real[i].at("rescales"))) << kJobs[i].id;
  return events;
}

TEST(SchedReal, ElasticPolicyRescalesRealJobsAndKeepsTheirDdpBits) {
  // Two slots of one kind: j2's arrival shrinks j1 in place, j3 waits, a job that outlives
  // another grows.
  runAndCheck("sched_real", "elastic", "cpu:2", {{"cpu", 2}}, nullptr);
}

TEST(SchedReal, DefaultHeteroGoodputAsksOnlyForWhatRealJobsDoAndKeepsTheirDdpBits) {
  // tl-sched's default policy (no --policy) on two fast slots and one at half speed: j1 takes
  // both fast slots, j2's arrival shrinks it (two jobs on one fast slot each score better than
  // j2 on the slow one), j3 takes the slow slot and keeps it (it cannot move), j1 grows back
  // when j2 ends. Every ask the policy makes is one tl-sched carries out as it stands.
  std::vector<std::map<std::string, std::string>> real;
  const std::string events =
      runAndCheck("sched_real_hg", "", "fast:2,slow:1:2", {{"fast", 2}, {"slow", 1}}, &real);
  EXPECT_EQ(events.find(",unrealisable,"), std::string::npos) << events;
  ASSERT_EQ(real.size(), kJobs.size());
  EXPECT_EQ(real[0].at("kind"), "fast") << events;  // the fastest kind with room at its start
}

TEST(SchedReal, BadInputIsOneClearErrorAndNothingStarts) {
  const std::string dir = freshDir("sched_real_bad");
  {
    std::ofstream f(dir + "/trace.csv");
    f << "id,arrival_s,model,work_samples,min_gpus,max_gpus\n"
         "a,0,mlp,800,1,2\n"
         "big,1,mlp,800,3,3\n";
  }
  {
    std::ofstream f(dir + "/profiles.csv");
    f << "model,kind,gpus,samples_per_s\nmlp,cpu,1,100\n";
  }
  const std::string base = std::string(TL_SCHED_BIN) + " --trace " + dir + "/trace.csv --tl-launch " +
                           TL_LAUNCH_BIN + " --tl-ctl " + TL_CTL_BIN;
  struct Case {
    std::string flags, message;
  };
  const std::vector<Case> cases = {
      {"--slots cpu:2", "job big: its gang of 3 GPUs exceeds the largest GPU kind"},
      {"--slots cpu:2,gpu", "--slots: 'gpu' is not NAME:COUNT[:SLOWDOWN]"},
      {"--slots cpu:4:0.5", "--slots cpu: the slowdown must be between 1 and 1000"},
      {"--slots cpu:4 --policy las", "policy las preempts jobs"},
      {"--slots cpu:4 --profiles " + dir + "/trace.csv", "the header must be model,kind,gpus,samples_per_s"},
      // A slot kind the profiles do not know.
      {"--slots cpu:4,gpu:4 --profiles " + dir + "/profiles.csv", "no profile for model mlp on GPU kind gpu"},
  };
  for (const auto& c : cases) {
    const std::string out = dir + "/out";
    const auto r = runCommand(base + " " + c.flags + " --out " + out, 30, dir);
    EXPECT_EQ(r.exitCode, 2) << c.flags << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.flags << "\n" << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.flags;
  }
  // A bad row is reported by line, as tl-sim does.
  {
    std::ofstream f(dir + "/trace.csv");
    f << "id,arrival_s,model,work_samples,min_gpus,max_gpus\na,0,mlp,-5,1,2\n";
  }
  const auto r = runCommand(base + " --slots cpu:2 --out " + dir + "/out", 30, dir);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("trace.csv:2: work_samples"), std::string::npos) << r.err;
}

}  // namespace
