#include "tools/run/grow_back.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "control/control_client.h"

namespace tl::run {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

GrowBack::GrowBack(std::string outputDir, int processes) : shared_(std::make_shared<Shared>()) {
  shared_->outputDir = std::move(outputDir);
  shared_->processes = processes;
  // Records of earlier launches (a restart, a resumed job) are not this launch's recoveries.
  std::error_code ec;
  const auto size = std::filesystem::file_size(shared_->outputDir + "/metrics.jsonl", ec);
  if (!ec) offset_ = size;
}

GrowBack::~GrowBack() {
  if (!thread_.joinable()) return;
  if (shared_->busy.load()) {
    thread_.detach();  // the job ended with the request in flight: it fails on its own
  } else {
    thread_.join();
  }
}

void GrowBack::poll() {
  if (now() - lastPoll_ < 0.5) return;
  lastPoll_ = now();
  std::ifstream in(shared_->outputDir + "/metrics.jsonl", std::ios::binary);
  if (!in) return;
  in.seekg(std::streamoff(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += chunk.size();
  partial_ += chunk;
  size_t start = 0;
  for (size_t end; (end = partial_.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = partial_.substr(start, end - start);
    if (line.find("\"type\":\"recovery\"") == std::string::npos) continue;
    const nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (r.is_object() && r.value("mode", "") == "in-place") ++recoveriesSeen_;
  }
  partial_.erase(0, start);
  if (recoveriesSeen_ > requested_ && !shared_->busy.load()) {
    requested_ = recoveriesSeen_;
    if (thread_.joinable()) thread_.join();
    shared_->busy.store(true);
    thread_ = std::thread([shared = shared_] { request(shared); });
  }
}

// One authenticated rescale request; the job answers once the grow is applied (its new
// processes start while it trains), or says why not (no slots, the job ending, ...).
void GrowBack::request(const std::shared_ptr<Shared>& shared) {
  std::string outcome;
  try {
    control::Request r;
    r.command = control::Command::Rescale;
    r.processes = shared->processes;
    const control::Reply reply = control::send(control::targetFromJobDir(shared->outputDir), r, 600);
    outcome = std::string(reply.outcome == control::Outcome::Done ? "" : "not done: ") + reply.message;
  } catch (const std::exception& e) {
    outcome = std::string("not done: ") + e.what();
  }
  std::fprintf(stderr, "tl-run: growing back to %d processes in place: %s\n", shared->processes, outcome.c_str());
  shared->busy.store(false);
}

}  // namespace tl::run
