#include "tools/submit/report.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "tools/submit/csv.h"

namespace tl::submit {
namespace {

struct ReportRow {
  std::string job, line, folder, start, end, startS, endS, completion, imagesPerS, finalLoss,
      status;
};

ReportRow rowOf(const SubmitJob& job, const JobOutcome& o) {
  ReportRow r;
  r.job = job.name;
  r.line = std::to_string(job.line);
  r.folder = job.outputFolder;
  r.status = o.status();
  if (!o.started) return r;
  r.start = localTimeText(o.start);
  r.end = localTimeText(o.end);
  r.startS = fixed(o.startSeconds, 3);
  r.endS = fixed(o.endSeconds, 3);
  r.completion = fixed(o.completionSeconds(), 3);
  if (o.exitCode == 0 && o.hasNumbers) {
    r.imagesPerS = fixed(o.imagesPerSecond, 1);
    r.finalLoss = fixed(o.finalLoss, 4);
  }
  return r;
}

}  // namespace

std::string localTimeText(std::chrono::system_clock::time_point t) {
  auto seconds = std::chrono::system_clock::to_time_t(t);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm local{};
  localtime_r(&seconds, &local);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &local);
  char out[80];
  std::snprintf(out, sizeof out, "%s.%03lld", buf, (long long)millis);
  return out;
}

std::string reportCsv(const std::vector<SubmitJob>& jobs, const std::vector<JobOutcome>& outcomes) {
  std::string out =
      "job,line,output_folder,start,end,start_s,end_s,completion_s,images_per_s,final_loss,exit_"
      "status\n";
  for (size_t i = 0; i < jobs.size(); ++i) {
    ReportRow r = rowOf(jobs[i], outcomes[i]);
    for (const auto* field : {&r.job, &r.line, &r.folder, &r.start, &r.end, &r.startS, &r.endS,
                              &r.completion, &r.imagesPerS, &r.finalLoss}) {
      out += csvField(*field) + ",";
    }
    out += csvField(r.status) + "\n";
  }
  return out;
}

std::string reportTable(const std::vector<SubmitJob>& jobs,
                        const std::vector<JobOutcome>& outcomes) {
  std::vector<std::vector<std::string>> cells = {
      {"job", "start", "end", "completion s", "images/s", "final loss", "exit status"}};
  for (size_t i = 0; i < jobs.size(); ++i) {
    ReportRow r = rowOf(jobs[i], outcomes[i]);
    // The table shows the time of day only; the CSV has the date too.
    auto timeOfDay = [](const std::string& t) { return t.size() > 11 ? t.substr(11) : t; };
    cells.push_back({r.job, timeOfDay(r.start), timeOfDay(r.end), r.completion,
                     r.imagesPerS.empty() ? "-" : r.imagesPerS,
                     r.finalLoss.empty() ? "-" : r.finalLoss, r.status});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (size_t k = 0; k < cells.size(); ++k) {
    std::string line;
    for (size_t c = 0; c < cells[k].size(); ++c) {
      const std::string& cell = cells[k][c];
      std::string pad(width[c] - cell.size(), ' ');
      bool leftAligned = c == 0 || c + 1 == cells[k].size();
      line += (c ? "  " : "") + (leftAligned ? cell + pad : pad + cell);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (k == 0) out += std::string(line.size(), '-') + "\n";
  }
  return out;
}

}  // namespace tl::submit
