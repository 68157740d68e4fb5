// bench_scheduler --sweep: tl's policy (hetero-goodput) against every baseline tl-sim ships
// (yarn-cs, las, elastic, elastic-hetero, goodput) on the presets at offered loads 0.5 .. 2.0
// (tl-sim --load: work offered inside the arrival window at request size = L x capacity x
// window), with elastic jobs allowed max = 4x their request and max = request (elasticity only
// by shrinking and moving), seeds 1..N, every policy charged tl's in-place pause. For each cell
// (preset, max, load) and seed: tl's mean JCT, p99 JCT and makespan over the best baseline's
// in that seed (the baseline with the lowest figure), then their mean and spread over seeds.
// A cell is "won" when the mean ratio is <= 1, "lost" when even the best seed's is > 1 and
// "even" when the spread over seeds covers 1.
#include "bench/scheduler_sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "common/check.h"
#include "common/files.h"
#include "tools/sched/sim/generator.h"
#include "tools/sched/sim/policy.h"
#include "tools/sched/sim/report.h"
#include "tools/sched/sim/simulator.h"
#include "tools/submit/csv.h"

namespace tl::bench {
namespace {

using namespace tl::sched;
using submit::fixed;

constexpr const char* kTl = "hetero-goodput";

struct Stat {
  std::vector<double> v;
  double mean() const {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / double(v.size());
  }
  double lo() const { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
  double hi() const { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
};

struct PolicyCell {  // one (preset, max, load, policy) over seeds
  Stat meanJct, p99Jct, makespan, queueShare, windowUtil, jobs;
};

struct Verdict {  // one (preset, max, load): tl over the best baseline, per seed
  Stat mean, p99, makespan, goodputOverTl;
  std::map<std::string, int> bestMean;  // which baseline was best for mean JCT, per seed
};

using CellKey = std::tuple<std::string, int, double>;  // preset, grow factor, load

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string spread(const Stat& s, int digits = 2) {
  return fixed(s.mean(), digits) + " (" + fixed(s.lo(), digits) + "-" + fixed(s.hi(), digits) +
         ")";
}

std::string regime(int grow) { return grow == 1 ? "request" : "4x request"; }

}  // namespace

void plotLoadSweep(const std::string& from, const std::string& out) {
  // Columns by name, so the plot reads what the sweep wrote (or a merge of several sweeps).
  const auto read = [&](const std::string& file) {
    const std::string path = joinPath(from, file);
    auto records = submit::parseCsv(readFile(path), path);
    TL_REQUIRE(!records.empty(), path, ": no header");
    std::map<std::string, size_t> column;
    for (size_t i = 0; i < records[0].fields.size(); ++i) column[records[0].fields[i]] = i;
    records.erase(records.begin());
    return std::make_pair(column, records);
  };
  const auto text = [](const submit::CsvRecord& r, const std::map<std::string, size_t>& c,
                       const std::string& name) {
    TL_REQUIRE(c.count(name) && c.at(name) < r.fields.size(), "sweep CSV line ", r.line,
               ": no column ", name);
    return r.fields[c.at(name)];
  };
  const auto number = [&](const submit::CsvRecord& r, const std::map<std::string, size_t>& c,
                          const std::string& name) { return std::stod(text(r, c, name)); };
  // A line per preset and max ("req": max = request, "4x": max = 4x request), in preset order.
  static const Rgb palette[] = {{214, 80, 30}, {240, 160, 120}, {40, 90, 200},
                                {130, 170, 240}, {40, 150, 60}, {140, 210, 140}};
  std::map<std::pair<size_t, int>, std::pair<SweepSeries, SweepSeries>> lines;
  const auto line = [&](const std::string& preset, const std::string& max) -> auto& {
    const size_t rank = size_t(std::find(presetNames().begin(), presetNames().end(), preset) -
                               presetNames().begin());
    const int grown = max == "request" ? 0 : 1;
    auto [it, added] = lines.try_emplace({rank, grown});
    if (added) {
      const size_t colour = 2 * rank + size_t(grown);
      SweepSeries s{preset + (max == "request" ? " req" : " 4x"), {}, {}, {}, {}, true,
                    palette[colour % 6]};
      it->second = {s, s};
    }
    return it->second;
  };
  const auto [vc, verdict] = read("load_sweep_verdict.csv");
  for (const auto& r : verdict) {
    SweepSeries& s = line(text(r, vc, "preset"), text(r, vc, "max_gpus")).first;
    s.load.push_back(number(r, vc, "load"));
    s.mean.push_back(number(r, vc, "tl_over_best_mean_jct"));
    s.lo.push_back(number(r, vc, "min")), s.hi.push_back(number(r, vc, "max"));
  }
  const auto [pc, policies] = read("load_sweep.csv");
  for (const auto& r : policies) {
    if (text(r, pc, "policy") != "yarn-cs") continue;
    SweepSeries& s = line(text(r, pc, "preset"), text(r, pc, "max_gpus")).second;
    s.load.push_back(number(r, pc, "load"));
    s.mean.push_back(number(r, pc, "queueing_share"));
    s.lo.push_back(number(r, pc, "queueing_share_min"));
    s.hi.push_back(number(r, pc, "queueing_share_max"));
  }
  std::vector<SweepSeries> ratio, queue;
  for (const auto& [key, both] : lines) ratio.push_back(both.first), queue.push_back(both.second);
  writeFileAtomic(joinPath(out, "load_sweep_verdict.png"),
                  loadSweepPng(std::string(kTl) + " / best baseline", "mean JCT ratio", ratio, 1,
                               900, 500));
  writeFileAtomic(joinPath(out, "load_sweep_queueing.png"),
                  loadSweepPng("yarn-cs: queueing share of JCT", "queueing share", queue, 0, 900,
                               500));
}

void runLoadSweep(const SweepOptions& o) {
  const ProfileSet profiles = ProfileSet::builtin();
  std::map<std::tuple<std::string, int, double, std::string>, PolicyCell> cells;
  std::map<CellKey, Verdict> verdicts;
  std::map<std::string, double> presetSeconds;
  std::vector<std::string> baselines;
  for (const auto& name : policyNames())
    if (name != kTl) baselines.push_back(name);

  for (const auto& name : o.presets) {
    const bool large = name == "large";
    const auto t0 = std::chrono::steady_clock::now();
    for (int grow : {1, 4})
      for (double load : large ? o.largeLoads : o.loads)
        for (int seed = o.firstSeed; seed < o.firstSeed + (large ? o.largeSeeds : o.seeds);
             ++seed) {
          Preset p = preset(name);
          p.generator.growFactor = grow;
          p.generator.arrivalLoad = load;
          p.generator.seed = uint64_t(seed);
          const auto trace = generateTrace(p.generator, profiles);
          const ThroughputModel model(p.cluster, profiles);
          std::map<std::string, SimSummary> s;
          for (const auto& policyName : policyNames()) {
            auto policy = makePolicy(policyName, model, {o.inplace});
            s[policyName] = simulate(trace, model, *policy, {o.inplace}).summary;
            PolicyCell& c = cells[{name, grow, load, policyName}];
            const auto& r = s[policyName];
            c.meanJct.v.push_back(r.meanJct);
            c.p99Jct.v.push_back(r.p99Jct);
            c.makespan.v.push_back(r.makespan);
            c.queueShare.v.push_back(r.queueingShare);
            c.windowUtil.v.push_back(r.windowUtilisation);
            c.jobs.v.push_back(r.jobs);
          }
          double bestMean = 1e300, bestP99 = 1e300, bestMakespan = 1e300;
          std::string bestName;
          for (const auto& b : baselines) {
            if (s[b].meanJct < bestMean) bestMean = s[b].meanJct, bestName = b;
            bestP99 = std::min(bestP99, s[b].p99Jct);
            bestMakespan = std::min(bestMakespan, s[b].makespan);
          }
          Verdict& v = verdicts[{name, grow, load}];
          v.mean.v.push_back(s[kTl].meanJct / bestMean);
          v.p99.v.push_back(s[kTl].p99Jct / bestP99);
          v.makespan.v.push_back(s[kTl].makespan / bestMakespan);
          v.goodputOverTl.v.push_back(s["goodput"].meanJct / s[kTl].meanJct);
          ++v.bestMean[bestName];
        }
    presetSeconds[name] = seconds(t0);
  }

  // Every policy's figures.
  std::ostringstream csv;
  csv << "preset,max_gpus,load,policy,seeds,jobs,mean_jct_s,mean_jct_min_s,mean_jct_max_s,"
         "p99_jct_s,makespan_s,queueing_share,queueing_share_min,queueing_share_max,"
         "arrival_window_utilisation\n";
  for (const auto& [k, c] : cells) {
    const auto& [name, grow, load, policy] = k;
    csv << name << ',' << regime(grow) << ',' << fixed(load, 1) << ',' << policy << ','
        << c.meanJct.v.size() << ',' << fixed(c.jobs.mean(), 0) << ',' << fixed(c.meanJct.mean(), 1)
        << ',' << fixed(c.meanJct.lo(), 1) << ',' << fixed(c.meanJct.hi(), 1) << ','
        << fixed(c.p99Jct.mean(), 1) << ',' << fixed(c.makespan.mean(), 1) << ','
        << fixed(c.queueShare.mean(), 4) << ',' << fixed(c.queueShare.lo(), 4) << ','
        << fixed(c.queueShare.hi(), 4) << ',' << fixed(c.windowUtil.mean(), 4) << '\n';
  }
  writeFileAtomic(joinPath(o.out, "load_sweep.csv"), csv.str());

  for (const auto& name : o.presets)
    for (int grow : {1, 4}) {
      const bool large = name == "large";
      const int n = large ? o.largeSeeds : o.seeds;
      std::printf("\n%s, max = %s, in-place pause %.1f s (mean over seeds %d..%d; spread min-max)\n",
                  name.c_str(), regime(grow).c_str(), o.inplace, o.firstSeed, o.firstSeed + n - 1);
      std::printf("%-15s %5s %7s %10s %10s %11s %20s %7s\n", "policy", "load", "jobs", "mean JCT",
                  "p99 JCT", "makespan", "queueing share", "util-a");
      for (double load : large ? o.largeLoads : o.loads)
        for (const auto& policy : policyNames()) {
          const PolicyCell& c = cells.at({name, grow, load, policy});
          std::printf("%-15s %5.1f %7.0f %9.0fs %9.0fs %10.0fs %20s %6.1f%%\n", policy.c_str(),
                      load, c.jobs.mean(), c.meanJct.mean(), c.p99Jct.mean(), c.makespan.mean(),
                      spread(c.queueShare).c_str(), 100 * c.windowUtil.mean());
        }
    }

  // The verdict: tl's policy over the best baseline, per cell.
  std::ostringstream vcsv;
  vcsv << "preset,max_gpus,load,seeds,tl_over_best_mean_jct,min,max,best_baseline,"
          "tl_over_best_p99_jct,tl_over_best_makespan,goodput_over_tl_mean_jct,"
          "yarn_cs_queueing_share,result\n";
  std::printf("\n%s / best baseline (lowest figure among %zu baselines, per seed), mean over seeds "
              "(min-max)\n",
              kTl, baselines.size());
  std::printf("%-10s %-11s %5s %20s %-16s %20s %20s %10s %7s %s\n", "preset", "max", "load",
              "mean JCT", "best (mean JCT)", "p99 JCT", "makespan", "goodput/tl", "yarn-q",
              "result");
  int won = 0, even = 0, lost = 0;
  std::vector<std::string> losses;
  for (const auto& [k, v] : verdicts) {
    const auto& [name, grow, load] = k;
    std::string best;
    for (const auto& [b, n] : v.bestMean) best += (best.empty() ? "" : "/") + b;
    const double yarnShare = cells.at({name, grow, load, "yarn-cs"}).queueShare.mean();
    const char* result = v.mean.mean() <= 1 ? "won" : v.mean.lo() > 1 ? "LOST" : "even";
    (v.mean.mean() <= 1 ? won : v.mean.lo() > 1 ? lost : even)++;
    if (v.mean.mean() > 1)
      losses.push_back(name + " max=" + regime(grow) + " load " + fixed(load, 1) + ": " +
                       fixed(v.mean.mean(), 3) + " vs " + best);
    std::printf("%-10s %-11s %5.1f %20s %-16s %20s %20s %9.2fx %6.1f%% %s\n", name.c_str(),
                regime(grow).c_str(), load, spread(v.mean, 3).c_str(), best.c_str(),
                spread(v.p99, 3).c_str(), spread(v.makespan, 3).c_str(), v.goodputOverTl.mean(),
                100 * yarnShare, result);
    vcsv << name << ',' << regime(grow) << ',' << fixed(load, 1) << ',' << v.mean.v.size() << ','
         << fixed(v.mean.mean(), 4) << ',' << fixed(v.mean.lo(), 4) << ',' << fixed(v.mean.hi(), 4)
         << ',' << best << ',' << fixed(v.p99.mean(), 4) << ',' << fixed(v.makespan.mean(), 4)
         << ',' << fixed(v.goodputOverTl.mean(), 4) << ',' << fixed(yarnShare, 4) << ','
         << result << '\n';
  }
  writeFileAtomic(joinPath(o.out, "load_sweep_verdict.csv"), vcsv.str());

  std::printf("\ntargets:\n  %s / best baseline mean JCT <= 1.00: %d of %zu cells won, %d even "
              "(spread covers 1), %d lost\n",
              kTl, won, verdicts.size(), even, lost);
  for (const auto& l : losses) std::printf("    above 1: %s\n", l.c_str());
  for (const auto& name : o.presets) {
    if (name == "pollux") continue;  // one GPU kind: not a heterogeneous preset
    for (int grow : {1, 4})
      for (double load : name == "large" ? o.largeLoads : o.loads) {
        if (load < 1.3) continue;
        const double r = verdicts.at({name, grow, load}).goodputOverTl.mean();
        std::printf("  %s max=%s load %.1f: goodput / %s mean JCT %.2fx (>= 1.20: %s)\n",
                    name.c_str(), regime(grow).c_str(), load, kTl, r, r >= 1.2 ? "met" : "missed");
      }
  }
  for (const auto& name : o.presets)
    for (int grow : {1, 4})
      for (double load : name == "large" ? o.largeLoads : o.loads) {
        if (load < 1.3) continue;
        const double q = cells.at({name, grow, load, "yarn-cs"}).queueShare.mean();
        std::printf("  %s max=%s load %.1f: yarn-cs queueing share %.2f (>= 0.33: %s)\n",
                    name.c_str(), regime(grow).c_str(), load, q, q >= 1.0 / 3 ? "met" : "missed");
      }

  plotLoadSweep(o.out, o.out);

  std::printf("\nsweep: %zu policies, loads", policyNames().size());
  for (double l : o.loads) std::printf(" %.1f", l);
  std::printf(" x %d seed(s) (large: loads", o.seeds);
  for (double l : o.largeLoads) std::printf(" %.1f", l);
  std::printf(" x %d seed(s)) x max {request, 4x request}\n", o.largeSeeds);
  for (const auto& [name, secs] : presetSeconds)
    std::printf("  %s: %.1f s\n", name.c_str(), secs);
  std::printf("wrote %s/load_sweep{,_verdict}.csv, %s/load_sweep_{verdict,queueing}.png\n",
              o.out.c_str(), o.out.c_str());
}

}  // namespace tl::bench
