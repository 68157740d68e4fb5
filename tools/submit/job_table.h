// The job table tl-submit reads: a CSV file with a header row and one job per row.
//
// Required columns: arch, depth, batch, workers, output_folder, port, submit_interval,
// cuda_device. Optional: name, processes, logical_workers, dataset, data_dir, steps, epochs,
// device, lr, seed, model_file, model_returns, extra. tools/submit/README.md says what each means.
#pragma once

#include <string>
#include <vector>

namespace tl::submit {

struct SubmitJob {
  int line = 0;              // line of the CSV the row starts on
  std::string name;          // report label; default: the output folder's last component
  std::string model;         // tl-launch --model; empty with modelFile
  std::string modelFile;     // tl-launch --model-file (a TorchScript module); empty: model
  std::string modelReturns;  // tl-launch --model-returns (logits|loss); empty: not given
  int depth = 0;             // tl-launch --depth (resnet only); 0: none
  int batch = 0;
  bool autoWorkers = false;  // workers = auto: the node coordinator sizes the loader pool
  int workers = 0;
  std::string outputFolder;
  int port = 0;                  // first TCP port of the job's range for Open MPI; 0: MPI's default
  double submitInterval = 0;     // seconds after the previous submission
  std::vector<int> cudaDevices;  // empty: CUDA_VISIBLE_DEVICES is left as it is
  int processes = 1;             // mpirun -np
  int logicalWorkers = 0;        // 0: tl-launch's default (one per process)
  std::string dataset, dataDir, device;  // empty: tl-launch's default
  long long steps = -1, epochs = -1;     // -1: not given
  double lr = -1;                        // negative: not given
  long long seed = -1;                   // negative: not given
  std::vector<std::string> extraFlags;   // passed to tl-launch as they are

  std::string cudaVisibleDevices() const;  // "0,1"
};

struct JobTableOptions {
  int portRange = 32;       // ports per job starting at `port`
  bool concurrent = false;  // jobs may run at the same time: their port ranges must not overlap
};

// Parses and checks the whole table. Every problem found is returned as
// "<source>:<line>: <column>: <what is wrong>"; `jobs` is meaningful only when there are none.
struct JobTable {
  std::vector<SubmitJob> jobs;
  std::vector<std::string> errors;
};
JobTable parseJobTable(const std::string& text, const std::string& source,
                       const JobTableOptions& options = {});

// Reads `path` and parses it; an unreadable file is an error too.
JobTable readJobTable(const std::string& path, const JobTableOptions& options = {});

// The columns, in the order the report and --help list them.
const std::vector<std::string>& requiredColumns();
const std::vector<std::string>& optionalColumns();

}  // namespace tl::submit
