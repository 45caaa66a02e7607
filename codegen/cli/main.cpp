#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>&);
  const char* summary;
};

const Command kCommands[] = {
    {"inspect", tunecast::cli::cmd_inspect, "show a model's layers, shapes, vocabulary and sizes"},
    {"import-keras", tunecast::cli::cmd_import_keras,
     "compile MIOpen's frugally-deep Keras models (KTN or TunaNet) into a blob"},
    {"compile", tunecast::cli::cmd_compile,
     "compile a trainer export (*.tcir.json) and rules, or a kernel definition alone, into a blob"},
    {"predict", tunecast::cli::cmd_predict,
     "predict tuning parameters for a problem (constrained greedy or beam search)"},
    {"emit-cpp", tunecast::cli::cmd_emit_cpp,
     "generate a C++ predictor (constant weights and sizes, compiled constraints)"},
    {"embed", tunecast::cli::cmd_embed, "embed a blob in C++ as an aligned byte array"},
    {"table", tunecast::cli::cmd_table,
     "predict a list of problems into a C++ table, a MIOpen perf DB or text"},
    {"eval", tunecast::cli::cmd_eval,
     "score a model on a perf DB (perfect@k, per-parameter accuracy) next to baselines"},
    {"check", tunecast::cli::cmd_check,
     "check a kernel definition (docs/kernels.md), alone or against recorded timings"},
    {"import-timings", tunecast::cli::cmd_import_timings,
     "add measurements (CSV, Kernel Tuner, timing DBs) to a timing DB keyed by a kernel definition"},
    {"tune", tunecast::cli::cmd_tune,
     "tune a problem or a list: the predictor's candidates (without one, a surrogate), benchmarked"},
    {"eval-search", tunecast::cli::cmd_eval_search,
     "compare tuning strategies per benchmark budget on recorded timings"},
};

void print_help(FILE* out) {
  std::fprintf(out,
      "tunecast: compile and run kernel tuning-parameter predictors\n\n"
      "usage: tunecast COMMAND [options]   (tunecast COMMAND --help for details; tunecast --version)\n\n"
      "commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-14s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {  // a usage error: the usage on stderr
    print_help(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "help") == 0) {
    print_help(stdout);
    return 0;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  // --version anywhere before a --help: every command answers it.
  for (const std::string& arg : std::vector<std::string>(argv + 1, argv + argc)) {
    if (arg == "--help" || arg == "-h") break;
    if (arg == "--version") {
      std::printf("tunecast %s\n", TUNECAST_VERSION);
      return 0;
    }
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) == 0) return c.run(args);
  }
  std::fprintf(stderr, "tunecast: unknown command '%s' (try tunecast --help)\n", argv[1]);
  return 2;
}
