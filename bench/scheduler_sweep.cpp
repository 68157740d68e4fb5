// bench_scheduler --sweep: tl-sim's policies on the pollux and easyscale presets at offered
// loads 0.5 .. 2.0 over the arrival window (tl-sim --load: the arrival rate is scaled, the
// durations are kept), seeds 1..N, elastic jobs allowed 4x their request and max = request
// (elasticity only by shrinking and moving), at tl's in-place pause and checkpoint-restart's
// cost. Ratios are per seed (yarn-cs's or las's mean JCT over the policy's, same trace), then
// their mean and spread (min..max) over seeds. The large preset runs at one load.
#include "bench/scheduler_sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

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

struct Cell {  // one (preset, growth, cost, load, policy) over seeds
  Stat meanJct, overYarn, overLas, queueShare, windowUtil;
};

using Key = std::tuple<std::string, int, std::string, double, std::string>;

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Simulates every policy on one trace; adds each one's figures to `cells`.
void runTrace(const Preset& p, const std::vector<JobSpec>& trace, const std::string& costLabel,
              double cost, std::map<Key, Cell>& cells, double load) {
  const ProfileSet profiles = ProfileSet::builtin();
  const ThroughputModel model(p.cluster, profiles);
  std::map<std::string, SimSummary> s;
  for (const auto& name : policyNames()) {
    auto policy = makePolicy(name, model, {cost});
    s[name] = simulate(trace, model, *policy, {cost}).summary;
  }
  for (const auto& [name, sum] : s) {
    Cell& c = cells[{p.name, p.generator.growFactor, costLabel, load, name}];
    c.meanJct.v.push_back(sum.meanJct);
    c.overYarn.v.push_back(s["yarn-cs"].meanJct / sum.meanJct);
    c.overLas.v.push_back(s["las"].meanJct / sum.meanJct);
    c.queueShare.v.push_back(sum.queueingShare);
    c.windowUtil.v.push_back(sum.windowUtilisation);
  }
}

std::string spread(const Stat& s) {
  return fixed(s.mean(), 2) + " (" + fixed(s.lo(), 2) + "-" + fixed(s.hi(), 2) + ")";
}

}  // namespace

void runLoadSweep(const SweepOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<double> loads{0.5, 0.8, 1.0, 1.3, 1.6, 2.0};
  const std::vector<std::pair<std::string, double>> costs{{"in-place", o.inplace},
                                                          {"ckpt-restart", o.restart}};
  const ProfileSet profiles = ProfileSet::builtin();
  std::map<Key, Cell> cells;
  for (const std::string name : {"pollux", "easyscale"})
    for (int grow : {4, 1})
      for (double load : loads)
        for (int seed = 1; seed <= o.seeds; ++seed) {
          Preset p = preset(name);
          p.generator.growFactor = grow;
          p.generator.arrivalLoad = load;
          p.generator.seed = uint64_t(seed);
          const auto trace = generateTrace(p.generator, profiles);
          for (const auto& [label, cost] : costs) runTrace(p, trace, label, cost, cells, load);
        }
  const double smallSeconds = seconds(start);
  double largeSeconds = 0;
  if (o.large) {
    const auto t = std::chrono::steady_clock::now();
    for (int grow : {4, 1}) {
      Preset p = preset("large");
      p.generator.growFactor = grow;
      p.generator.arrivalLoad = o.largeLoad;
      runTrace(p, generateTrace(p.generator, profiles), "in-place", o.inplace, cells, o.largeLoad);
    }
    largeSeconds = seconds(t);
  }

  std::ostringstream csv;
  csv << "preset,max_gpus,rescale_cost,load,policy,seeds,mean_jct_s,yarn_over_policy,"
         "yarn_over_policy_min,yarn_over_policy_max,las_over_policy,las_over_policy_min,"
         "las_over_policy_max,queueing_share,queueing_share_min,queueing_share_max,"
         "arrival_window_utilisation\n";
  for (const auto& [k, c] : cells) {
    const auto& [name, grow, cost, load, policy] = k;
    csv << name << ',' << (grow == 1 ? "request" : "4x request") << ',' << cost << ','
        << fixed(load, 1) << ',' << policy << ',' << c.meanJct.v.size() << ','
        << fixed(c.meanJct.mean(), 1) << ',' << fixed(c.overYarn.mean(), 4) << ','
        << fixed(c.overYarn.lo(), 4) << ',' << fixed(c.overYarn.hi(), 4) << ','
        << fixed(c.overLas.mean(), 4) << ',' << fixed(c.overLas.lo(), 4) << ','
        << fixed(c.overLas.hi(), 4) << ',' << fixed(c.queueShare.mean(), 4) << ','
        << fixed(c.queueShare.lo(), 4) << ',' << fixed(c.queueShare.hi(), 4) << ','
        << fixed(c.windowUtil.mean(), 4) << '\n';
  }
  writeFileAtomic(joinPath(o.out, "load_sweep.csv"), csv.str());

  // Tables: per preset, growth and cost, a row per policy: yarn-cs/this (min-max) per load.
  for (const std::string name : {"pollux", "easyscale", "large"})
    for (int grow : {4, 1})
      for (const auto& [label, cost] : costs) {
        const std::vector<double> at = name == "large" ? std::vector<double>{o.largeLoad} : loads;
        if (!cells.count({name, grow, label, at[0], "yarn-cs"})) continue;
        std::printf(
            "\n%s, max = %s, rescale cost %s %.1f s: mean JCT yarn-cs/policy, las/policy, "
            "queueing share of JCT (mean over %d seed(s), min-max)\n",
            name.c_str(), grow == 1 ? "request" : "4x request", label.c_str(), cost,
            name == "large" ? 1 : o.seeds);
        std::printf("%-15s %5s %10s %18s %18s %18s %7s\n", "policy", "load", "mean JCT",
                    "yarn-cs/this", "las/this", "queueing share", "util-a");
        for (double load : at)
          for (const auto& policy : policyNames()) {
            const Cell& c = cells.at({name, grow, label, load, policy});
            std::printf("%-15s %5.1f %9.0fs %18s %18s %18s %6.1f%%\n", policy.c_str(), load,
                        c.meanJct.mean(), spread(c.overYarn).c_str(), spread(c.overLas).c_str(),
                        spread(c.queueShare).c_str(), 100 * c.windowUtil.mean());
          }
      }

  // The targets: easyscale, max = request, in-place cost, loads >= 1.3.
  std::printf("\ntargets (easyscale, max = request, in-place pause, loads >= 1.3):\n");
  for (double load : {1.3, 1.6, 2.0}) {
    const auto at = [&](const std::string& policy) -> const Cell& {
      return cells.at({"easyscale", 1, "in-place", load, policy});
    };
    const double yarnShare = at("yarn-cs").queueShare.mean();
    const double overLas = at("elastic-hetero").overLas.mean();
    const double vsGoodput = at("elastic-hetero").meanJct.mean() / at("goodput").meanJct.mean();
    std::printf(
        "  load %.1f: yarn-cs queueing share %.2f (>= 0.33: %s); elastic-hetero las/this "
        "%.2fx (>= 1.5: %s); elastic-hetero JCT / goodput JCT %.3f (<= 1.05: %s)\n",
        load, yarnShare, yarnShare >= 1.0 / 3 ? "met" : "missed", overLas,
        overLas >= 1.5 ? "met" : "missed", vsGoodput, vsGoodput <= 1.05 ? "met" : "missed");
  }

  // Plots: per growth regime, a row per preset: yarn-cs/policy, las/policy, queueing share.
  for (int grow : {4, 1}) {
    std::vector<std::string> panels;
    for (const std::string name : {"pollux", "easyscale"}) {
      std::vector<SweepSeries> overYarn, overLas, share;
      for (const auto& policy : policyNames()) {
        SweepSeries y{policy, {}, {}, {}, {}}, l = y, q = y;
        for (double load : loads) {
          const Cell& c = cells.at({name, grow, "in-place", load, policy});
          using Pair = std::pair<SweepSeries*, const Stat*>;
          for (auto [series, stat] :
               {Pair{&y, &c.overYarn}, Pair{&l, &c.overLas}, Pair{&q, &c.queueShare}}) {
            series->load.push_back(load);
            series->mean.push_back(stat->mean());
            series->lo.push_back(stat->lo());
            series->hi.push_back(stat->hi());
          }
        }
        overYarn.push_back(y), overLas.push_back(l), share.push_back(q);
      }
      const std::string regime = name + (grow == 1 ? ", max = request" : ", max = 4x request");
      panels.push_back(loadSweepPng(regime + ": yarn-cs / policy", "mean JCT ratio", overYarn, 1));
      panels.push_back(loadSweepPng(regime + ": las / policy", "mean JCT ratio", overLas, 1));
      panels.push_back(loadSweepPng(regime + ": queueing", "queueing share of JCT", share));
    }
    writeFileAtomic(joinPath(o.out, grow == 1 ? "load_sweep_request.png" : "load_sweep_4x.png"),
                    gridPng(panels, 3));
  }
  std::printf(
      "\nsweep: %zu loads x 2 presets x 2 growth regimes x %d seeds x 2 costs x %zu policies "
      "in %.1f s; large preset (load %.1f, 2 regimes, in-place) in %.1f s\n",
      loads.size(), o.seeds, policyNames().size(), smallSeconds, o.largeLoad, largeSeconds);
  std::printf("wrote %s/load_sweep.csv, %s/load_sweep_{4x,request}.png\n", o.out.c_str(),
              o.out.c_str());
}

}  // namespace tl::bench
