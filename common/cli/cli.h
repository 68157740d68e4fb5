// tl_cli: what the command lines of the tl tools share (tl-launch adds its flag table),
// on CLI11. Tools declare their flags on a CLI::App (set up by makeApp), parse with parse(),
// and run inside run(), which turns whatever escapes into one line on stderr:
//   <program>: error: <message>
// naming the program once, and an exit status (kExitBadInput for bad flags, values or files).
// Torch-free: tools that do not train link this and nothing of libtorch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tl::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;   // the work failed (a job, an internal error)
constexpr int kExitBadInput = 2;  // bad flags, values or files: nothing was done
constexpr int kExitInterrupted = 130;

// An App with tl's conventions: -h/--help, --version ("<program> 0.9.0 (git abc1234)"), a flag
// given twice is an error naming it, an unknown flag or stray argument is an error naming it
// (not CLI11's own wording), and `--name=value` as well as `--name value`. `help` is printed by --help as the description.
std::unique_ptr<CLI::App> makeApp(const std::string& program, const std::string& help);

// --help prints `text` for the app and for the subcommands added after this call (a tool whose
// help is written by hand, e.g. tl-data's).
void useHelpText(CLI::App& app, std::string text);

// Parses argv[1..] (or `args`). Returns false after printing the help (or the version) to
// stdout when -h/--help (--version) was given; throws InputError for bad input, e.g. "unknown
// flag '--x' (see tl-submit --help)".
// With `helpText`, the help goes there instead of stdout (tl-launch prints it on one rank).
bool parse(CLI::App& app, int argc, const char* const* argv);
bool parse(CLI::App& app, std::vector<std::string> args, std::string* helpText = nullptr);

// Runs a tool's body and returns its exit status: what body returns, kExitBadInput when it
// throws InputError, kExitFailure for any other exception, each with one line on stderr.
int run(const std::string& program, const std::function<int()>& body);

// Typed flags with range checks, in tl's wording ("--port-range: must be between 1 and 10000,
// got 0"; "--max-iterations: expected an integer, got 'x'"). The default shown by --help is
// the target's value when the flag is added.
CLI::Option* addInt(CLI::App& app, const std::string& flag, int* target, const std::string& help,
                    int min, int max = INT32_MAX);
CLI::Option* addInt(CLI::App& app, const std::string& flag, int64_t* target,
                    const std::string& help, int64_t min, int64_t max = INT64_MAX);
CLI::Option* addDouble(CLI::App& app, const std::string& flag, double* target,
                       const std::string& help, double min, double max = 1e300);

// The whole text as a number, or InputError "<what>: expected an integer, got '<text>'".
int64_t parseInt(const std::string& text, const std::string& what);
double parseDouble(const std::string& text, const std::string& what);
// Comma-separated integers, e.g. a worker sweep "0,1,2,4"; empty items are errors.
std::vector<int64_t> parseIntList(const std::string& text, const std::string& what);

// Blank-separated words, e.g. "--mca btl tcp,self" -> {"--mca", "btl", "tcp,self"}.
std::vector<std::string> splitBlanks(const std::string& text);

}  // namespace tl::cli
