// tl-ctl: commands for a running job over its authenticated control channel
// (control/, docs/design/control-channel.md).
//
// Exit status: 0 done; 3 the job refused the request; 2 bad input (flags, values, a missing
// or unreadable key or address file, a key the job does not accept); 1 the job cannot be
// reached, did not answer in time, or failed to carry the request out.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/cli/cli.h"
#include "common/cli/host_list.h"
#include "control/control_client.h"

namespace {

using namespace tl::control;

constexpr const char* kProgram = "tl-ctl";
constexpr int kExitRefused = 3;

const char* kHelp =
    "Usage: tl-ctl COMMAND JOB [flags]\n"
    "\n"
    "Commands for a running job started by tl-launch, over its authenticated control channel.\n"
    "JOB is the job's output folder (it holds control.json and control.key); instead of it,\n"
    "--address HOST:PORT --key-file FILE.\n"
    "\n"
    "Commands:\n"
    "  status JOB [--json]          step, epoch, processes and hosts, placement, images/s,\n"
    "                               last rescale (--json: the job's JSON as it is)\n"
    "  rescale JOB --processes P [--placement E1,E2,...] [--hosts HOST:N[,HOST:N...]]\n"
    "                               run on P processes (new ones start on --hosts), with that\n"
    "                               many ESTs each (default: even)\n"
    "  rescale JOB --remove-ranks R1,R2,...\n"
    "                               give the devices of these ranks back\n"
    "  placement JOB E1,E2,...      same processes, ESTs moved\n"
    "  plan JOB [--json]            --placement auto: the last plan (measured seconds and\n"
    "                               bytes per EST per process, the plan, predicted step\n"
    "                               times, the decision)\n"
    "  checkpoint JOB               write a checkpoint now and keep training\n"
    "  stop JOB [--checkpoint]      stop the job, after a checkpoint with --checkpoint\n"
    "\n"
    "Flags of every command:\n"
    "  --address HOST:PORT          the job's control address instead of JOB\n"
    "  --key-file FILE              the job's control.key, with --address\n"
    "  --timeout SECONDS            how long to wait for the answer (default 120: a rescale\n"
    "                               waits for a step boundary and new processes)\n"
    "  --at-step S                  (not status) apply at the step boundary after step S\n"
    "                               instead of the next one; refused once S has passed\n"
    "  -h, --help                   print this help and exit\n"
    "\n"
    "Exit status: 0 done; 3 the job refused; 2 bad input; 1 the job cannot be reached,\n"
    "did not answer in time, or failed.\n";

struct Flags {
  std::string job;       // JOB, or with --address the command's own argument
  std::string argument;  // placement's ESTs per process
  std::string address;
  std::string keyFile;
  double timeout = 120;
  int processes = 0;
  std::string placement;
  std::string hosts;
  std::string removeRanks;
  bool json = false;
  bool checkpoint = false;
  int64_t atStep = 0;
};

std::vector<int> intList(const std::string& text, const std::string& what, int min) {
  std::vector<int> out;
  for (int64_t x : tl::cli::parseIntList(text, what)) {
    TL_REQUIRE(x >= min && x <= kMaxProcesses, what, ": ", x, " is out of range (", min, "-",
               kMaxProcesses, ")");
    out.push_back(int(x));
  }
  return out;
}

std::vector<HostSlots> hostList(const std::string& text) {
  return tl::cli::parseHostList(text, "--hosts", {/*countRequired=*/true, kMaxProcesses});
}

CLI::App* addCommand(CLI::App& app, const std::string& name, const std::string& help, Flags& f) {
  CLI::App* sub = app.add_subcommand(name, help);
  sub->add_option("job", f.job)->description("the job's output folder");
  sub->add_option("--address", f.address)->description("HOST:PORT of the job's control channel");
  sub->add_option("--key-file", f.keyFile)->description("the job's control.key, with --address");
  tl::cli::addDouble(*sub, "--timeout", &f.timeout, "seconds to wait for the answer", 0.1, 86400);
  return sub;
}

// The job named by JOB or by --address and --key-file; the positionals left are returned.
Target target(Flags& f, std::vector<std::string>* rest) {
  rest->clear();
  for (const std::string* p : {&f.job, &f.argument}) {
    if (!p->empty()) rest->push_back(*p);
  }
  if (!f.address.empty()) {
    TL_REQUIRE(!f.keyFile.empty(), "--address needs --key-file (the job's control.key)");
    return targetFromAddress(f.address, f.keyFile);
  }
  TL_REQUIRE(f.keyFile.empty(),
             "--key-file goes with --address; with JOB the key is JOB/control.key");
  TL_REQUIRE(!rest->empty(),
             "which job? Give its output folder, or --address and --key-file "
             "(see tl-ctl --help)");
  const std::string dir = rest->front();
  rest->erase(rest->begin());
  return targetFromJobDir(dir);
}

std::string scalarText(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.1f", v.get<double>());
    return buffer;
  }
  if (v.is_array()) {
    std::string s;
    for (const auto& x : v) {
      if (x.is_structured()) return v.dump();
      s += (s.empty() ? "" : ",") + scalarText(x);
    }
    return s.empty() ? "-" : s;
  }
  if (v.is_null()) return "-";
  return v.dump();
}

// The status JSON as "key  value" lines, the usual keys first.
std::string statusText(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return body + "\n";
  const std::vector<std::string> first = {
      "step", "epoch", "processes", "hosts", "placement", "images_per_second", "last_rescale"};
  std::vector<std::string> keys;
  for (const auto& k : first) {
    if (j.contains(k)) keys.push_back(k);
  }
  for (const auto& [k, v] : j.items()) {
    if (std::find(first.begin(), first.end(), k) == first.end()) keys.push_back(k);
  }
  size_t width = 0;
  for (const auto& k : keys) width = std::max(width, k.size());
  std::string out;
  for (const auto& k : keys) {
    std::string label = k;
    std::replace(label.begin(), label.end(), '_', ' ');
    out += label + std::string(width + 2 - k.size(), ' ') + scalarText(j[k]) + "\n";
  }
  return out;
}

// Plan figures are small (seconds per EST): four significant digits instead of one decimal.
std::string planValue(const nlohmann::json& v) {
  if (v.is_number_float()) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.4g", v.get<double>());
    return buffer;
  }
  if (v.is_array()) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + planValue(x);
    return s;
  }
  return scalarText(v);
}

// The `plan` part of the status JSON (--placement auto), as lines; empty when the job has none.
std::string planText(const std::string& body, bool json, bool& hasPlan) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  hasPlan = j.is_object() && j.contains("plan");
  if (!hasPlan) return "";
  const nlohmann::json& plan = j["plan"];
  if (json) return plan.dump() + "\n";
  if (plan.empty()) return "no plan yet: the job is measuring (the first comes after --replan-window steps)\n";
  std::string out;
  for (const char* k : {"step", "placement", "seconds_per_est", "bytes_per_est", "memory_limit_mb", "plan",
                        "predicted_step_s", "planned_step_s", "ideal_step_s", "predicted_gain", "decision",
                        "replans"}) {
    if (!plan.contains(k)) continue;
    std::string label = k;
    std::replace(label.begin(), label.end(), '_', ' ');
    out += label + std::string(18 - label.size(), ' ') + planValue(plan[k]) + "\n";
  }
  return out;
}

int report(const Reply& reply, const Request& request, bool json, bool plan) {
  if (plan && reply.outcome == Outcome::Done) {
    bool hasPlan = false;
    const std::string text = planText(reply.body, json, hasPlan);
    if (!hasPlan) {
      std::cerr << kProgram << ": refused: the job does not place its ESTs automatically (--placement auto)\n";
      return kExitRefused;
    }
    std::cout << text;
    return tl::cli::kExitOk;
  }
  switch (reply.outcome) {
    case Outcome::Done:
      if (request.command == Command::Status) {
        std::cout << (json ? reply.body + "\n" : statusText(reply.body));
      } else {
        std::cout << (reply.message.empty() ? describe(request) + ": done" : reply.message) << "\n";
      }
      return tl::cli::kExitOk;
    case Outcome::Refused:
      std::cerr << kProgram << ": refused: " << reply.message << "\n";
      return kExitRefused;
    case Outcome::Moved:
      std::cerr << kProgram << ": " << reply.message << "; the job's control moved again, "
                << "try once more\n";
      return tl::cli::kExitFailure;
    case Outcome::Failed:
      break;
  }
  std::cerr << kProgram << ": failed: " << reply.message << "\n";
  return tl::cli::kExitFailure;
}

int run(int argc, char** argv) {
  Flags f;
  auto app = tl::cli::makeApp(kProgram, "Commands for a running job.");
  tl::cli::useHelpText(*app, kHelp);
  CLI::App* status = addCommand(*app, "status", "print the job's status", f);
  status->add_flag("--json", f.json)->description("print the job's status JSON as it is");
  CLI::App* planCmd = addCommand(*app, "plan", "print the job's automatic placement plan", f);
  planCmd->add_flag("--json", f.json)->description("print the plan's JSON as it is");
  CLI::App* rescale = addCommand(*app, "rescale", "change the job's processes", f);
  tl::cli::addInt(*rescale, "--processes", &f.processes, "new process count", 1, kMaxProcesses);
  rescale->add_option("--placement", f.placement)->description("ESTs per process, e.g. 2,1,1");
  rescale->add_option("--hosts", f.hosts)->description("HOST:N[,HOST:N...] for new processes");
  rescale->add_option("--remove-ranks", f.removeRanks)->description("ranks that leave");
  CLI::App* placement = addCommand(*app, "placement", "move ESTs between the processes", f);
  placement->add_option("placement", f.argument)->description("ESTs per process, e.g. 3,1");
  CLI::App* checkpoint = addCommand(*app, "checkpoint", "write a checkpoint, keep training", f);
  CLI::App* stop = addCommand(*app, "stop", "stop the job", f);
  stop->add_flag("--checkpoint", f.checkpoint)->description("write a checkpoint first");
  for (CLI::App* c : {rescale, placement, checkpoint, stop}) {
    c->add_option("--at-step", f.atStep)
        ->description("apply at the step boundary after this step (default: the next one)")
        ->check(CLI::Range(int64_t(1), kMaxAtStep));
  }
  if (!tl::cli::parse(*app, argc, argv)) return tl::cli::kExitOk;
  TL_REQUIRE(!app->get_subcommands().empty(), "which command? (see tl-ctl --help)");

  std::vector<std::string> rest;
  Target t = target(f, &rest);
  Request r;
  const bool plan = planCmd->parsed();
  if (status->parsed() || plan) {
    r.command = Command::Status;
  } else if (rescale->parsed()) {
    r.command = Command::Rescale;
    r.processes = f.processes;
    if (!f.placement.empty()) r.placement = intList(f.placement, "--placement", 1);
    if (!f.hosts.empty()) r.hosts = hostList(f.hosts);
    if (!f.removeRanks.empty()) r.removeRanks = intList(f.removeRanks, "--remove-ranks", 0);
    TL_REQUIRE(r.processes > 0 || !r.removeRanks.empty(),
               "rescale needs --processes or --remove-ranks (see tl-ctl --help)");
  } else if (placement->parsed()) {
    r.command = Command::Placement;
    TL_REQUIRE(rest.size() == 1, "placement needs the ESTs per process, e.g. `tl-ctl placement ",
               "JOB 3,1`");
    r.placement = intList(rest.front(), "placement", 1);
    rest.clear();
  } else if (checkpoint->parsed()) {
    r.command = Command::Checkpoint;
  } else if (stop->parsed()) {
    r.command = Command::Stop;
    r.checkpoint = f.checkpoint;
  }
  if (!status->parsed() && !plan) r.atStep = f.atStep;
  TL_REQUIRE(rest.empty(), "unexpected argument '", rest.empty() ? "" : rest.front(),
             "' (see tl-ctl --help)");
  const std::string why = checkRequest(r);
  TL_REQUIRE(why.empty(), why);

  Reply reply;
  try {
    reply = send(t, r, f.timeout);
    if (reply.outcome == Outcome::Moved && !t.jobDir.empty()) {
      std::cerr << kProgram << ": " << reply.message << " (reading " << t.jobDir
                << "/control.json again)\n";
      t = targetFromJobDir(t.jobDir);
      reply = send(t, r, f.timeout);
    }
  } catch (const RejectedError& e) {
    if (e.why() == Rejection::Unauthenticated)
      throw tl::InputError(std::string(e.what()) + "; is the key the job's control.key?");
    throw;
  }
  return report(reply, r, f.json, plan);
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return run(argc, argv); });
}
