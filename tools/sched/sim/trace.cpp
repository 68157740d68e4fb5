#include "tools/sched/sim/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "common/check.h"
#include "common/files.h"
#include "tools/submit/csv.h"

namespace tl::sched {
namespace {

constexpr int kMaxReported = 20;

struct RowError {};  // one bad row: its message is already recorded

class RowReader {
 public:
  RowReader(const std::map<std::string, int>& columns, const submit::CsvRecord& record,
            const std::string& source, std::vector<std::string>& errors)
      : columns_(columns), record_(record), source_(source), errors_(errors) {}

  bool present(const std::string& column) const {
    auto it = columns_.find(column);
    return it != columns_.end() && size_t(it->second) < record_.fields.size() &&
           !record_.fields[it->second].empty();
  }
  std::string text(const std::string& column) const {
    if (!present(column)) fail(column, "missing");
    return record_.fields[columns_.at(column)];
  }
  double number(const std::string& column, double min) const {
    const std::string t = text(column);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (!(end && *end == '\0' && std::isfinite(v))) fail(column, "expected a number, got '" + t + "'");
    if (v < min) fail(column, "must be >= " + str(min) + ", got " + t);
    return v;
  }
  int whole(const std::string& column, int min) const {
    const double v = number(column, min);
    if (v != std::floor(v) || v > 1e6) fail(column, "expected a whole number, got " + text(column));
    return int(v);
  }
  [[noreturn]] void fail(const std::string& column, const std::string& what) const {
    errors_.push_back(source_ + ":" + std::to_string(record_.line) + ": " + column + ": " + what);
    throw RowError{};
  }

 private:
  const std::map<std::string, int>& columns_;
  const submit::CsvRecord& record_;
  const std::string& source_;
  std::vector<std::string>& errors_;
};

}  // namespace

std::vector<JobSpec> parseTrace(const std::string& text, const std::string& source) {
  const auto records = submit::parseCsv(text, source);
  TL_REQUIRE(!records.empty(), source,
             ": empty trace (need a header: id,arrival_s,model,work_samples,min_gpus,max_gpus)");
  std::map<std::string, int> columns;
  const std::set<std::string> known{"id",       "arrival_s", "model", "work_samples",
                                    "min_gpus", "max_gpus",  "ests",  "queue", "request_gpus"};
  for (size_t i = 0; i < records[0].fields.size(); ++i) {
    const auto& name = records[0].fields[i];
    TL_REQUIRE(known.count(name), source, ":", records[0].line, ": unknown column '", name,
               "' (known: id, arrival_s, model, work_samples, min_gpus, max_gpus, request_gpus, ests, queue)");
    TL_REQUIRE(columns.emplace(name, int(i)).second, source, ":", records[0].line, ": column '",
               name, "' is given twice");
  }
  for (const char* required : {"id", "arrival_s", "model", "work_samples", "min_gpus", "max_gpus"})
    TL_REQUIRE(columns.count(required), source, ":", records[0].line, ": the header lacks column '",
               required, "'");

  std::vector<JobSpec> jobs;
  std::vector<std::string> errors;
  std::map<std::string, int> idLines;
  for (size_t i = 1; i < records.size(); ++i) {
    const auto& record = records[i];
    RowReader row(columns, record, source, errors);
    try {
      if (record.fields.size() != records[0].fields.size())
        row.fail("row", "expected " + std::to_string(records[0].fields.size()) + " fields, got " +
                            std::to_string(record.fields.size()));
      JobSpec job;
      job.id = row.text("id");
      auto [it, fresh] = idLines.emplace(job.id, record.line);
      if (!fresh) row.fail("id", "'" + job.id + "' is already used on line " + std::to_string(it->second));
      job.arrival = row.number("arrival_s", 0);
      job.model = row.text("model");
      job.work = row.number("work_samples", 0);
      if (!(job.work > 0)) row.fail("work_samples", "must be > 0, got " + row.text("work_samples"));
      job.minGpus = row.whole("min_gpus", 1);
      job.maxGpus = row.whole("max_gpus", 1);
      if (job.maxGpus < job.minGpus)
        row.fail("max_gpus", "must be >= min_gpus (" + std::to_string(job.minGpus) + "), got " +
                                 std::to_string(job.maxGpus));
      if (row.present("request_gpus")) {
        job.requestGpus = row.whole("request_gpus", 1);
        if (job.requestGpus < job.minGpus || job.requestGpus > job.maxGpus)
          row.fail("request_gpus", "must be between min_gpus and max_gpus (" + std::to_string(job.minGpus) +
                                       ".." + std::to_string(job.maxGpus) + "), got " +
                                       std::to_string(job.requestGpus));
      }
      if (row.present("ests")) {
        job.ests = row.whole("ests", 1);
        if (job.ests < job.maxGpus)
          row.fail("ests", "must be >= max_gpus (" + std::to_string(job.maxGpus) + "), got " +
                               std::to_string(job.ests));
      }
      if (row.present("queue")) job.queue = row.text("queue");
      jobs.push_back(job);
    } catch (const RowError&) {
    }
  }
  if (!errors.empty()) {
    std::ostringstream msg;
    msg << errors.size() << " bad row(s) in the trace:";
    for (size_t i = 0; i < errors.size() && i < size_t(kMaxReported); ++i) msg << "\n  " << errors[i];
    if (errors.size() > size_t(kMaxReported)) msg << "\n  ... and " << errors.size() - kMaxReported << " more";
    throw InputError(msg.str());
  }
  TL_REQUIRE(!jobs.empty(), source, ": the trace has no jobs");
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const JobSpec& a, const JobSpec& b) { return a.arrival < b.arrival; });
  return jobs;
}

std::vector<JobSpec> readTrace(const std::string& path) { return parseTrace(readFile(path), path); }

std::string formatTrace(const std::vector<JobSpec>& jobs) {
  std::ostringstream out;
  out.precision(17);
  out << "id,arrival_s,model,work_samples,min_gpus,max_gpus,request_gpus,ests,queue\n";
  for (const auto& j : jobs)
    out << submit::csvField(j.id) << ',' << j.arrival << ',' << submit::csvField(j.model) << ','
        << j.work << ',' << j.minGpus << ',' << j.maxGpus << ',' << j.gangGpus() << ','
        << j.logicalWorkers() << ','
        << submit::csvField(j.queue) << '\n';
  return out.str();
}

void checkTraceFits(const std::vector<JobSpec>& jobs, const ClusterSpec& cluster) {
  int largestKind = 0;
  for (const auto& k : cluster.kinds) largestKind = std::max(largestKind, k.count);
  for (const auto& j : jobs) {
    TL_REQUIRE(j.gangGpus() <= largestKind, "job ", j.id, ": its gang of ", j.gangGpus(), " GPUs",
               " exceeds the largest GPU kind of the cluster (", largestKind,
               " GPUs): non-elastic policies could never start it");
    if (cluster.queues.empty()) continue;
    const int q = cluster.queueIndex(j.queue);
    TL_REQUIRE(q >= 0, "job ", j.id, ": unknown queue '", j.queue, "'");
    const double cap = cluster.queues[q].maxShare * cluster.totalGpus();
    TL_REQUIRE(j.gangGpus() <= cap + 1e-9, "job ", j.id, ": its gang of ", j.gangGpus(),
               " GPUs exceeds queue ", j.queue, "'s maximum share (", cap, " GPUs)");
  }
}

}  // namespace tl::sched
