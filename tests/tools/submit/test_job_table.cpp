// tl-submit's job table: CSV syntax, every row error with its line number, and the mpirun
// command each row becomes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "common/check.h"
#include "tools/submit/csv.h"
#include "tools/submit/job_table.h"
#include "tools/submit/mpirun_command.h"

namespace {

using namespace tl::submit;

const std::string kHeader =
    "arch,depth,batch,workers,output_folder,port,submit_interval,cuda_device\n";

JobTable parse(const std::string& text, const JobTableOptions& options = {}) {
  return parseJobTable(text, "jobs.csv", options);
}

std::string onlyError(const std::string& text, const JobTableOptions& options = {}) {
  JobTable t = parse(text, options);
  EXPECT_EQ(t.errors.size(), 1u) << ::testing::PrintToString(t.errors);
  return t.errors.empty() ? "" : t.errors[0];
}

TEST(Csv, QuotedFieldsHoldCommasQuotesAndNewlines) {
  auto records =
      parseCsv("a, b ,\"c,d\"\n\n# a comment\n\"x \"\"y\"\"\",\"two\nlines\",\n", "t.csv");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].line, 1);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{"a", "b", "c,d"}));
  EXPECT_EQ(records[1].line, 4);
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"x \"y\"", "two\nlines", ""}));
}

TEST(Csv, CrLfLineEndings) {
  auto records = parseCsv("a,b\r\n1,2\r\n", "t.csv");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"1", "2"}));
}

TEST(Csv, UnterminatedQuoteNamesTheLineItStarts) {
  try {
    parseCsv("a,b\n1,\"open\n\n", "t.csv");
    FAIL();
  } catch (const tl::InputError& e) {
    EXPECT_STREQ(e.what(), "t.csv:2: unterminated quoted field");
  }
}

TEST(Csv, FieldQuotingRoundTrips) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
}

TEST(JobTable, ParsesRequiredAndOptionalColumns) {
  JobTable t = parse(
      "arch,depth,batch,workers,output_folder,port,submit_interval,cuda_device,processes,dataset,"
      "data_dir,steps,"
      "device,lr,seed,extra,logical_workers,name\n"
      "resnet,20,32,auto,out/a,5000,0,0 1,2,cifar10,/d,5,cuda,0.1,7,--eval --log-every 0,4,first\n"
      "cnn,,64,3,out/b,,1.5,,1,,,,sim:2000,,,,,\n"
      "\"resnet56\",0,8,0,\"out/with,comma\",6000,0,,1,,,,,,,,,\n");
  ASSERT_TRUE(t.errors.empty()) << ::testing::PrintToString(t.errors);
  ASSERT_EQ(t.jobs.size(), 3u);
  const SubmitJob& a = t.jobs[0];
  EXPECT_EQ(a.line, 2);
  EXPECT_EQ(a.name, "first");
  EXPECT_EQ(a.model, "resnet");
  EXPECT_EQ(a.depth, 20);
  EXPECT_TRUE(a.autoWorkers);
  EXPECT_EQ(a.cudaVisibleDevices(), "0,1");
  EXPECT_EQ(a.processes, 2);
  EXPECT_EQ(a.logicalWorkers, 4);
  EXPECT_EQ(a.extraFlags, (std::vector<std::string>{"--eval", "--log-every", "0"}));
  const SubmitJob& b = t.jobs[1];
  EXPECT_EQ(b.name, "b");
  EXPECT_EQ(b.model, "cnn");
  EXPECT_EQ(b.depth, 0);
  EXPECT_EQ(b.workers, 3);
  EXPECT_EQ(b.port, 0);
  EXPECT_DOUBLE_EQ(b.submitInterval, 1.5);
  EXPECT_TRUE(b.cudaDevices.empty());
  EXPECT_EQ(b.device, "sim:2000");
  EXPECT_EQ(t.jobs[2].model, "resnet");
  EXPECT_EQ(t.jobs[2].depth, 56);
  EXPECT_EQ(t.jobs[2].outputFolder, "out/with,comma");
}

TEST(JobTable, EveryRowErrorNamesItsLine) {
  struct Case {
    std::string row, expected;
  };
  std::vector<Case> cases = {
      {"cnn,,32,x,o1,,0,", "jobs.csv:3: workers: expected a number or 'auto', got 'x'"},
      {"cnn,,32,-1,o1,,0,", "jobs.csv:3: workers: must be between 0 and 256 or 'auto', got -1"},
      {"cnn,,32,1,o1,,-2,", "jobs.csv:3: submit_interval: must be at least 0, got -2"},
      {"cnn,,32,1,o1,,soon,", "jobs.csv:3: submit_interval: expected a number, got 'soon'"},
      {"cnn,,0,1,o1,,0,", "jobs.csv:3: batch: must be between 1 and 16777216, got 0"},
      {"cnn,,3.5,1,o1,,0,", "jobs.csv:3: batch: expected an integer, got '3.5'"},
      {"cnn,,32,1,o1,80,0,", "jobs.csv:3: port: must be between 1024 and 65504, got 80"},
      {"cnn,,32,1,o1,,0,gpu0", "jobs.csv:3: cuda_device: expected an integer, got 'gpu0'"},
      {"vgg,,32,1,o1,,0,", "jobs.csv:3: arch: unknown architecture 'vgg'"},
      {"resnet,,32,1,o1,,0,", "jobs.csv:3: depth: arch resnet needs a depth"},
      {"cnn,20,32,1,o1,,0,", "jobs.csv:3: depth: applies to arch resnet only, got 20 for 'cnn'"},
      {"resnet20,32,32,1,o1,,0,", "jobs.csv:3: depth: is 32 but arch 'resnet20' says 20"},
      {"cnn,,32,1,,,0,", "jobs.csv:3: output_folder: must not be empty"},
      {"cnn,,32,1,o1,,0", "jobs.csv:3: expected 8 fields, got 7"},
      {"cnn,,32,1,o1,,0,,extra", "jobs.csv:3: expected 8 fields, got 9"},
  };
  for (const auto& c : cases) {
    std::string error = onlyError(kHeader + "cnn,,32,1,ok,,0,\n" + c.row + "\n");
    EXPECT_EQ(error.rfind(c.expected, 0), 0u) << "row '" << c.row << "' gave: " << error;
  }
}

TEST(JobTable, OptionalColumnErrors) {
  const std::string header =
      "arch,depth,batch,workers,output_folder,port,submit_interval,cuda_device,";
  EXPECT_EQ(onlyError(header + "device\ncnn,,1,1,o,,0,,tpu\n"),
            "jobs.csv:2: device: expected cpu, cuda or sim:RATE, got 'tpu'");
  EXPECT_EQ(onlyError(header + "device\ncnn,,1,1,o,,0,,sim:fast\n"),
            "jobs.csv:2: device: expected a number, got 'fast'");
  EXPECT_EQ(onlyError(header + "processes\ncnn,,1,1,o,,0,,0\n"),
            "jobs.csv:2: processes: must be between 1 and 4096, got 0");
  EXPECT_EQ(onlyError(header + "steps,epochs\ncnn,,1,1,o,,0,,5,1\n"),
            "jobs.csv:2: steps: give steps or epochs, not both");
  EXPECT_EQ(onlyError(header + "dataset\ncnn,,1,1,o,,0,,imagenet\n")
                .rfind("jobs.csv:2: dataset: unknown dataset 'imagenet'", 0),
            0u);
  EXPECT_EQ(onlyError(header + "lr\ncnn,,1,1,o,,0,,fast\n"),
            "jobs.csv:2: lr: expected a number, got 'fast'");
}

TEST(JobTable, ModelFileReplacesArchAndDepth) {
  const std::string header =
      "arch,depth,batch,workers,output_folder,port,submit_interval,cuda_device,model_file,"
      "model_returns\n";
  JobTable t = parse(header + ",,16,1,out/g,,0,,gpt.pt,loss\n,0,8,1,out/c,,0,,net.pt,\n");
  ASSERT_TRUE(t.errors.empty()) << ::testing::PrintToString(t.errors);
  EXPECT_EQ(t.jobs[0].modelFile, "gpt.pt");
  EXPECT_EQ(t.jobs[0].modelReturns, "loss");
  EXPECT_EQ(t.jobs[0].model, "");
  EXPECT_EQ(t.jobs[1].modelReturns, "");
  EXPECT_EQ(tlLaunchFlags(t.jobs[0]),
            (std::vector<std::string>{"--model-file", "gpt.pt", "--model-returns", "loss",
                                      "--batch", "16", "--workers", "1", "--output-dir", "out/g"}));
  EXPECT_EQ(tlLaunchFlags(t.jobs[1]),
            (std::vector<std::string>{"--model-file", "net.pt", "--batch", "8", "--workers", "1",
                                      "--output-dir", "out/c"}));

  EXPECT_EQ(onlyError(header + "cnn,,16,1,o,,0,,net.pt,\n"),
            "jobs.csv:2: arch: give arch or model_file, not both (model_file is 'net.pt')");
  EXPECT_EQ(onlyError(header + ",20,16,1,o,,0,,net.pt,\n"),
            "jobs.csv:2: depth: applies to arch resnet only, not to model_file");
  EXPECT_EQ(onlyError(header + ",,16,1,o,,0,,net.pt,scores\n"),
            "jobs.csv:2: model_returns: expected logits or loss, got 'scores'");
  EXPECT_EQ(onlyError(header + "cnn,,16,1,o,,0,,,loss\n"),
            "jobs.csv:2: model_returns: applies to model_file only");
  EXPECT_EQ(onlyError(header + ",,16,1,o,,0,,,\n")
                .rfind("jobs.csv:2: arch: must not be empty (one of ", 0),
            0u);
}

TEST(JobTable, HeaderErrors) {
  EXPECT_EQ(
      onlyError("arch,depth,batch,workers,output_folder,port,submit_interval\ncnn,,1,1,o,,0\n"),
      "jobs.csv:1: missing required column 'cuda_device'");
  EXPECT_EQ(onlyError(kHeader.substr(0, kHeader.size() - 1) + ",colour\ncnn,,1,1,o,,0,,red\n")
                .rfind("jobs.csv:1: unknown column 'colour'", 0),
            0u);
  EXPECT_EQ(onlyError(kHeader.substr(0, kHeader.size() - 1) + ",batch\ncnn,,1,1,o,,0,,2\n"),
            "jobs.csv:1: column 'batch' appears twice");
  EXPECT_EQ(onlyError(""),
            "jobs.csv: no header row (expected the columns "
            "arch|depth|batch|workers|output_folder|port|submit_interval|cuda_device)");
  EXPECT_EQ(onlyError(kHeader), "jobs.csv: no jobs (only a header row)");
}

TEST(JobTable, ErrorsOfAllRowsAreReportedTogether) {
  JobTable t =
      parse("# jobs\n" + kHeader + "cnn,,32,x,a,,0,\ncnn,,32,1,b,,0,\n\ncnn,,32,1,c,,-1,\n");
  ASSERT_EQ(t.errors.size(), 2u);
  EXPECT_EQ(t.errors[0].rfind("jobs.csv:3: workers", 0), 0u);
  EXPECT_EQ(t.errors[1].rfind("jobs.csv:6: submit_interval", 0), 0u);
}

TEST(JobTable, DuplicateOutputFolderNamesBothLines) {
  EXPECT_EQ(
      onlyError(kHeader + "cnn,,32,1,out/a,,0,\ncnn,,32,1,out/b,,0,\ncnn,,32,1,out/./a/,,0,\n"),
      "jobs.csv:4: output_folder: 'out/./a/' is already used by the job on line 2");
}

// Two spellings of one folder through a symlink are one folder: two jobs would write the same
// job.log and metrics.jsonl.
TEST(JobTable, OutputFoldersAreComparedAfterResolvingSymlinks) {
  const char* base = std::getenv("TL_TEST_TMP");
  auto dir = std::filesystem::path(base ? base : "/tmp/tl-test") / "job_table_alias";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "real");
  std::filesystem::create_directory_symlink(dir / "real", dir / "alias");
  const std::string real = (dir / "real").string(), alias = (dir / "alias").string();
  EXPECT_EQ(
      onlyError(kHeader + "cnn,,32,1," + real + "/job,,0,\ncnn,,32,1," + alias + "/job,,0,\n"),
      "jobs.csv:3: output_folder: '" + alias + "/job' is already used by the job on line 2");
  EXPECT_EQ(onlyError(kHeader + "cnn,,32,1," + alias + ",,0,\ncnn,,32,1," + real + "/,,0,\n"),
            "jobs.csv:3: output_folder: '" + real + "/' is already used by the job on line 2");
}

// Spreadsheets save CSV with a UTF-8 byte order mark in front of the header.
TEST(JobTable, AByteOrderMarkBeforeTheHeaderIsIgnored) {
  JobTable t = parse("\xEF\xBB\xBF" + kHeader + "cnn,,32,1,out/a,,0,\n");
  EXPECT_TRUE(t.errors.empty()) << ::testing::PrintToString(t.errors);
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].model, "cnn");
  EXPECT_EQ(t.jobs[0].line, 2);
}

TEST(JobTable, OverlappingPortRangesAreAnErrorOnlyForConcurrentJobs) {
  std::string text = kHeader + "cnn,,32,1,a,5000,0,\ncnn,,32,1,b,5016,0,\ncnn,,32,1,c,5064,0,\n";
  EXPECT_TRUE(parse(text).errors.empty());
  JobTableOptions concurrent;
  concurrent.concurrent = true;
  EXPECT_EQ(
      onlyError(text, concurrent)
          .rfind("jobs.csv:3: port: range 5016-5047 overlaps the range of the job on line 2", 0),
      0u);
  concurrent.portRange = 16;
  EXPECT_TRUE(parse(text, concurrent).errors.empty());
}

TEST(JobTable, UnreadableFileIsAnError) {
  JobTable t = readJobTable("/nonexistent/jobs.csv");
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_NE(t.errors[0].find("/nonexistent/jobs.csv"), std::string::npos);
}

TEST(MpirunCommand, RowBecomesMpirunAndTlLaunchFlags) {
  JobTable t = parse(
      "arch,depth,batch,workers,output_folder,port,submit_interval,cuda_device,processes,data_dir,"
      "steps,extra\n"
      "resnet,20,16,auto,out/r,5000,0,2 3,2,/data,4,--eval\n"
      "resnet18,,8,0,out/s,,0,,1,,,\n");
  ASSERT_TRUE(t.errors.empty()) << ::testing::PrintToString(t.errors);
  MpirunOptions o;
  o.mpirun = "/usr/bin/mpirun";
  o.tlLaunch = "/bin/tl-launch";
  o.oversubscribe = true;
  o.allowRunAsRoot = true;
  o.autoWorkersFlags = {"--coordinator-dir", "/run/c"};
  JobCommand a = jobCommand(o, t.jobs[0]);
  EXPECT_EQ(a.argv, (std::vector<std::string>{"/usr/bin/mpirun",
                                              "--oversubscribe",
                                              "--allow-run-as-root",
                                              "--bind-to",
                                              "none",
                                              "-np",
                                              "2",
                                              "--mca",
                                              "btl_tcp_port_min_v4",
                                              "5000",
                                              "--mca",
                                              "btl_tcp_port_range_v4",
                                              "32",
                                              "-x",
                                              "CUDA_VISIBLE_DEVICES",
                                              "/bin/tl-launch",
                                              "--model",
                                              "resnet",
                                              "--depth",
                                              "20",
                                              "--batch",
                                              "16",
                                              "--workers",
                                              "auto",
                                              "--output-dir",
                                              "out/r",
                                              "--data-dir",
                                              "/data",
                                              "--steps",
                                              "4",
                                              "--eval",
                                              "--coordinator-dir",
                                              "/run/c"}));
  EXPECT_EQ(a.setEnv, (std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "2,3"}}));

  o.oversubscribe = o.allowRunAsRoot = false;
  o.bindTo = "";
  JobCommand b = jobCommand(o, t.jobs[1]);
  EXPECT_EQ(b.argv, (std::vector<std::string>{"/usr/bin/mpirun", "-np", "1", "/bin/tl-launch",
                                              "--model", "resnet18", "--batch", "8", "--workers",
                                              "0", "--output-dir", "out/s"}));
  EXPECT_TRUE(b.setEnv.empty());
}

}  // namespace
