#include "tools/submit/job_table.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/check.h"
#include "common/files.h"
#include "dataload/dataset.h"
#include "runtime/models/model_names.h"
#include "tools/submit/csv.h"

namespace tl::submit {
namespace {

// One row's problem; the caller adds "<source>:<line>: ".
struct RowError {
  std::string what;
};

[[noreturn]] void rowError(const std::string& column, const std::string& what) {
  throw RowError{column + ": " + what};
}

bool parseWholeInt(const std::string& text, long long* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

long long intField(const std::string& column, const std::string& text, long long min,
                   long long max) {
  long long v = 0;
  if (!parseWholeInt(text, &v)) rowError(column, "expected an integer, got '" + text + "'");
  if (v < min || v > max) {
    rowError(column, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                         ", got " + text);
  }
  return v;
}

double numberField(const std::string& column, const std::string& text, double min) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
    rowError(column, "expected a number, got '" + text + "'");
  }
  if (v < min) rowError(column, "must be at least " + tl::str(min) + ", got " + text);
  return v;
}

std::vector<std::string> splitWords(const std::string& text, const std::string& separators) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t begin = text.find_first_not_of(separators, pos);
    if (begin == std::string::npos) break;
    size_t end = text.find_first_of(separators, begin);
    out.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    pos = end;
  }
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& item : list) out += (out.empty() ? "" : "|") + item;
  return out;
}

// arch + depth -> tl-launch's --model and --depth. "resnet" needs a depth; "resnet20" (a name
// tl-launch does not know) is read as resnet with depth 20.
void setModel(SubmitJob& job, const std::string& arch, const std::string& depthText) {
  const auto models = models::knownModelNames();
  long long depth = depthText.empty() ? 0 : intField("depth", depthText, 0, 10000);
  if (arch.empty()) rowError("arch", "must not be empty (one of " + joined(models) + ")");
  std::string model = arch;
  if (!contains(models, arch) && arch.rfind("resnet", 0) == 0 && arch.size() > 6) {
    long long archDepth = 0;
    if (!parseWholeInt(arch.substr(6), &archDepth) || archDepth <= 0) {
      rowError("arch", "unknown architecture '" + arch + "' (one of " + joined(models) + ")");
    }
    if (depth != 0 && depth != archDepth) {
      rowError("depth",
               "is " + depthText + " but arch '" + arch + "' says " + std::to_string(archDepth));
    }
    model = "resnet";
    depth = archDepth;
  }
  if (!contains(models, model)) {
    rowError("arch", "unknown architecture '" + arch + "' (one of " + joined(models) + ")");
  }
  if (model == "resnet" && depth == 0)
    rowError("depth", "arch resnet needs a depth (6n+2: 20, 32, 56, ...)");
  if (model != "resnet" && depth != 0 && model != "resnet" + std::to_string(depth)) {
    rowError("depth", "applies to arch resnet only, got " + depthText + " for '" + arch + "'");
  }
  job.model = model;
  job.depth = model == "resnet" ? int(depth) : 0;
}

void checkDevice(const std::string& device) {
  if (device.empty() || device == "cpu" || device == "cuda") return;
  if (device.rfind("sim:", 0) == 0) {
    numberField("device", device.substr(4), 1e-9);
    return;
  }
  rowError("device", "expected cpu, cuda or sim:RATE, got '" + device + "'");
}

SubmitJob jobFromRow(const std::map<std::string, std::string>& row,
                     const JobTableOptions& options) {
  auto get = [&](const std::string& column) {
    auto it = row.find(column);
    return it == row.end() ? std::string() : it->second;
  };
  SubmitJob job;
  job.modelFile = get("model_file");
  job.modelReturns = get("model_returns");
  if (!job.modelFile.empty()) {
    // A TorchScript module replaces the built-in architecture: the two are exclusive.
    if (!get("arch").empty())
      rowError("arch", "give arch or model_file, not both (model_file is '" + job.modelFile + "')");
    if (!get("depth").empty() && get("depth") != "0")
      rowError("depth", "applies to arch resnet only, not to model_file");
  } else {
    if (get("arch").empty()) {
      rowError("arch", "must not be empty (one of " + joined(models::knownModelNames()) +
                           "), unless model_file names a TorchScript module");
    }
    setModel(job, get("arch"), get("depth"));
  }
  if (!job.modelReturns.empty() && job.modelReturns != "logits" && job.modelReturns != "loss")
    rowError("model_returns", "expected logits or loss, got '" + job.modelReturns + "'");
  if (!job.modelReturns.empty() && job.modelFile.empty())
    rowError("model_returns", "applies to model_file only");
  job.batch = int(intField("batch", get("batch"), 1, 1 << 24));
  const std::string workers = get("workers");
  if (workers == "auto") {
    job.autoWorkers = true;
  } else {
    long long w = 0;
    if (!parseWholeInt(workers, &w))
      rowError("workers", "expected a number or 'auto', got '" + workers + "'");
    if (w < 0 || w > 256)
      rowError("workers", "must be between 0 and 256 or 'auto', got " + workers);
    job.workers = int(w);
  }
  job.outputFolder = get("output_folder");
  if (job.outputFolder.empty()) rowError("output_folder", "must not be empty");
  if (!get("port").empty())
    job.port = int(intField("port", get("port"), 1024, 65535 - options.portRange + 1));
  if (!get("submit_interval").empty())
    job.submitInterval = numberField("submit_interval", get("submit_interval"), 0);
  for (const auto& d : splitWords(get("cuda_device"), " \t,")) {
    job.cudaDevices.push_back(int(intField("cuda_device", d, 0, 1023)));
  }
  if (!get("processes").empty())
    job.processes = int(intField("processes", get("processes"), 1, 4096));
  if (!get("logical_workers").empty()) {
    job.logicalWorkers = int(intField("logical_workers", get("logical_workers"), 1, 1 << 20));
  }
  job.dataset = get("dataset");
  if (!job.dataset.empty() && !contains(data::datasetKinds(), job.dataset)) {
    rowError("dataset",
             "unknown dataset '" + job.dataset + "' (one of " + joined(data::datasetKinds()) + ")");
  }
  job.dataDir = get("data_dir");
  if (!get("steps").empty()) job.steps = intField("steps", get("steps"), 0, 1LL << 40);
  if (!get("epochs").empty()) job.epochs = intField("epochs", get("epochs"), 0, 1LL << 20);
  if (job.steps >= 0 && job.epochs >= 0) rowError("steps", "give steps or epochs, not both");
  job.device = get("device");
  checkDevice(job.device);
  if (!get("lr").empty()) job.lr = numberField("lr", get("lr"), 0);
  if (!get("seed").empty()) job.seed = intField("seed", get("seed"), 0, 1LL << 62);
  job.extraFlags = splitWords(get("extra"), " \t");
  job.name = get("name");
  if (job.name.empty()) {
    job.name = std::filesystem::path(job.outputFolder).lexically_normal().filename().string();
    if (job.name.empty())
      job.name = std::filesystem::path(job.outputFolder)
                     .lexically_normal()
                     .parent_path()
                     .filename()
                     .string();
  }
  return job;
}

// The folder `path` names once symlinks (as far as the path exists), "." and ".." are
// resolved: two spellings of one folder give the same key.
std::string folderKey(const std::string& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  std::filesystem::path resolved = std::filesystem::weakly_canonical(absolute, ec);
  std::string key = (ec ? absolute.lexically_normal() : resolved).string();
  while (key.size() > 1 && key.back() == '/') key.pop_back();
  return key;
}

// Checks across rows: one output folder per job, and port ranges apart when jobs overlap.
void checkAcrossRows(const std::vector<SubmitJob>& jobs, const std::string& source,
                     const JobTableOptions& options, std::vector<std::string>& errors) {
  std::map<std::string, int> folderLine;
  for (const auto& job : jobs) {
    const std::string key = folderKey(job.outputFolder);
    auto [it, fresh] = folderLine.emplace(key, job.line);
    if (!fresh) {
      errors.push_back(tl::str(source, ":", job.line, ": output_folder: '", job.outputFolder,
                               "' is already used by the job on line ", it->second));
    }
  }
  if (!options.concurrent) return;
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      const auto &a = jobs[i], &b = jobs[k];
      if (a.port == 0 || b.port == 0 || std::abs(a.port - b.port) >= options.portRange) continue;
      errors.push_back(tl::str(
          source, ":", a.line, ": port: range ", a.port, "-", a.port + options.portRange - 1,
          " overlaps the range of the job on line ", b.line, " (", b.port, "-",
          b.port + options.portRange - 1, "); jobs run at the same time with --background"));
    }
  }
}

}  // namespace

std::string SubmitJob::cudaVisibleDevices() const {
  std::string out;
  for (int d : cudaDevices) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

const std::vector<std::string>& requiredColumns() {
  static const std::vector<std::string> columns = {
      "arch",          "depth", "batch",           "workers",
      "output_folder", "port",  "submit_interval", "cuda_device"};
  return columns;
}

const std::vector<std::string>& optionalColumns() {
  static const std::vector<std::string> columns = {"name",    "processes",  "logical_workers",
                                                   "dataset", "data_dir",   "steps",
                                                   "epochs",  "device",     "lr",
                                                   "seed",    "model_file", "model_returns",
                                                   "extra"};
  return columns;
}

JobTable parseJobTable(const std::string& text, const std::string& source,
                       const JobTableOptions& options) {
  JobTable table;
  std::vector<CsvRecord> records;
  try {
    records = parseCsv(text, source);
  } catch (const InputError& e) {
    table.errors.push_back(e.what());
    return table;
  }
  if (records.empty()) {
    table.errors.push_back(source + ": no header row (expected the columns " +
                           joined(requiredColumns()) + ")");
    return table;
  }
  const CsvRecord& header = records[0];
  std::vector<std::string> columns;
  for (const auto& name : header.fields) {
    std::string column = name;
    std::transform(column.begin(), column.end(), column.begin(), ::tolower);
    if (!contains(requiredColumns(), column) && !contains(optionalColumns(), column)) {
      table.errors.push_back(tl::str(source, ":", header.line, ": unknown column '", name,
                                     "' (columns: ", joined(requiredColumns()), "|",
                                     joined(optionalColumns()), ")"));
    } else if (contains(columns, column)) {
      table.errors.push_back(
          tl::str(source, ":", header.line, ": column '", name, "' appears twice"));
    }
    columns.push_back(column);
  }
  for (const auto& required : requiredColumns()) {
    if (!contains(columns, required)) {
      table.errors.push_back(
          tl::str(source, ":", header.line, ": missing required column '", required, "'"));
    }
  }
  if (!table.errors.empty()) return table;
  if (records.size() == 1) table.errors.push_back(source + ": no jobs (only a header row)");
  for (size_t i = 1; i < records.size(); ++i) {
    const CsvRecord& record = records[i];
    if (record.fields.size() != columns.size()) {
      table.errors.push_back(tl::str(source, ":", record.line, ": expected ", columns.size(),
                                     " fields, got ", record.fields.size()));
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < columns.size(); ++c) row[columns[c]] = record.fields[c];
    try {
      SubmitJob job = jobFromRow(row, options);
      job.line = record.line;
      table.jobs.push_back(job);
    } catch (const RowError& e) {
      table.errors.push_back(tl::str(source, ":", record.line, ": ", e.what));
    }
  }
  checkAcrossRows(table.jobs, source, options, table.errors);
  return table;
}

JobTable readJobTable(const std::string& path, const JobTableOptions& options) {
  std::string text;
  try {
    text = readFile(path);
  } catch (const InputError& e) {
    JobTable table;
    table.errors.push_back(e.what());
    return table;
  }
  return parseJobTable(text, path, options);
}

}  // namespace tl::submit
