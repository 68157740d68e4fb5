#include "tools/plot/run_report.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <sstream>

#include "common/check.h"

namespace tl::plot {
namespace {

constexpr Colour kRescaleColour{0, 110, 230};
constexpr Colour kPlanColour{230, 120, 0};
constexpr Colour kFailureColour{200, 30, 30};
constexpr Colour kRecoveryColour{0, 170, 90};

double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}

std::string joinRanks(const nlohmann::json& ranks) {
  std::string out;
  if (!ranks.is_array()) return out;
  for (const auto& r : ranks) {
    if (!out.empty()) out += ",";
    out += r.dump();
  }
  return out;
}

}  // namespace

RunCurves readRunCurves(const std::string& text, const std::string& path) {
  RunCurves c;
  std::map<double, double> lastStepOfEpoch;  // epoch -> its last step seen
  std::istringstream in(text);
  std::string line;
  int lineNumber = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(str(path, ": line ", lineNumber, ": not JSON (", e.what(), ")"));
    }
    TL_REQUIRE(j.is_object() && j.contains("type") && j["type"].is_string(), path, ": line ",
               lineNumber, ": expected a JSON object with a \"type\"");
    const std::string type = j["type"];
    const double step = number(j, "step");
    if (type == "step") {
      TL_REQUIRE(!std::isnan(step), path, ": line ", lineNumber, ": a step record without \"step\"");
      c.loss.emplace_back(step, number(j, "loss"));
      c.lr.emplace_back(step, number(j, "lr"));
      if (j.contains("grad_norm")) c.gradNorm.emplace_back(step, number(j, "grad_norm"));
      c.throughput.emplace_back(step, number(j, "images_per_s"));
      const double epoch = number(j, "epoch");
      if (!std::isnan(epoch)) lastStepOfEpoch[epoch] = step;
      if (j.contains("val_loss")) {
        c.evalLoss.emplace_back(step, number(j, "val_loss"));
        c.evalLabel = "validation loss";
      }
    } else if ((type == "eval" || type == "validation") && j.contains("val_loss") && !std::isnan(step)) {
      c.evalLoss.emplace_back(step, number(j, "val_loss"));
      c.evalLabel = "validation loss";
    } else if (type == "epoch" && j.contains("test_loss") && c.evalLabel != "validation loss") {
      const auto it = lastStepOfEpoch.find(number(j, "epoch"));
      if (it != lastStepOfEpoch.end()) {
        c.evalLoss.emplace_back(it->second, number(j, "test_loss"));
        c.evalLabel = "test loss";
      }
    } else if (type == "rescale" && !std::isnan(step)) {
      c.events.push_back({step, "rescale " + j.value("from", std::string("?")) + " > " +
                                    j.value("to", std::string("?")), kRescaleColour});
    } else if (type == "plan" && !std::isnan(step) && j.contains("placement")) {
      c.events.push_back({step, "re-plan " + j.value("placement", std::string("?")), kPlanColour});
    } else if (type == "failure") {
      const double at = number(j, "boundary_step");
      if (!std::isnan(at)) {
        c.events.push_back({at, "lost rank " + joinRanks(j.value("lost_ranks", nlohmann::json::array())),
                            kFailureColour});
      }
    } else if (type == "recovery" && !std::isnan(step)) {
      c.events.push_back({step, "recovered on " + std::to_string(j.value("processes", 0)), kRecoveryColour});
    }
  }
  TL_REQUIRE(!c.loss.empty(), path, ": no step record (is it a tl-launch metrics.jsonl?)");
  return c;
}

std::vector<Panel> runPanels(const RunCurves& c) {
  std::vector<Panel> panels;
  auto panel = [&](const std::string& title, const std::string& yLabel, std::vector<Series> series) {
    Panel p;
    p.plot.title = title;
    p.plot.xLabel = "step";
    p.plot.yLabel = yLabel;
    p.plot.series = std::move(series);
    p.marks = c.events;
    panels.push_back(std::move(p));
  };
  std::vector<Series> losses{Series{"training loss", c.loss, false, false}};
  if (!c.evalLoss.empty()) losses.push_back(Series{c.evalLabel, c.evalLoss, false, true});
  panel("loss", "loss", std::move(losses));
  panel("learning rate", "lr", {Series{"lr", c.lr, false, false}});
  if (!c.gradNorm.empty()) panel("gradient norm (before clipping)", "L2 norm", {Series{"grad norm", c.gradNorm, false, false}});
  panel("throughput", "samples/s", {Series{"samples/s", c.throughput, false, false}});
  return panels;
}

}  // namespace tl::plot
