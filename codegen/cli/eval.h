// `tunecast eval` in parts: its options (cmd_eval.cpp, which also runs the steps in order), the
// evaluated problems and what the model learned of them (eval_problems.cpp), the evaluation loop
// (eval_loop.cpp: the predictions, their scores and the baselines') and the outputs
// (eval_output.cpp: candidates file, JSON, plot, table).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "tunecast/codegen/baselines.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/model.h"

namespace tunecast::cli::eval {

using codegen::ParamVector;

// The command line, checked.
struct Options {
  Args args;                            // paths and switches, as given
  std::vector<int> ks;                  // --beam: the candidate counts scored, in order
  std::vector<std::string> precisions;  // --precision, as given
  std::set<int64_t> dtypes;             // the same as problem values
  std::string split;                    // --split: all, train, val or test
  std::string baselines_fit_on;         // --baselines-fit-on
  std::set<std::string> baseline_splits;
  int seed = 0;                         // --split-seed
  int limit = 0;                        // --limit (0: every problem)
  int threads = 1;
  std::optional<int64_t> arch;          // --arch
  std::string solver;                   // --solver, else the model's metadata solver (cmd_eval)
};

// Parses and checks `argv` (printing the help for --help). Returns the command's exit code when it
// ends here (help, usage error, an output path that cannot be written), else nullopt.
std::optional<int> parse_options(const std::vector<std::string>& argv, Options* out);

// The splits a model (metadata "fit_on", tools/train.py --fit-on) or a baseline learns from;
// empty for an unknown name.
std::set<std::string> fit_splits(const std::string& fit_on);

// "a, b, c".
std::string joined(const std::set<std::string>& items);
std::string joined(const std::vector<std::string>& items);

// What the model learned of the evaluated splits, by its metadata.
struct ModelSplits {
  const char* fit_on = nullptr;         // metadata fit_on (none for imported models)
  int seed = 0;                         // metadata split_seed, else the evaluation's
  std::vector<std::string> in_sample;   // evaluated splits the model learned from
};
Status model_splits(const Model& model, const Options& options, ModelSplits* out);

// The perf DB rows read, and those evaluated.
struct Problems {
  std::vector<PerfDbRow> rows;          // --perfdb's rows of the solver and precisions
  std::vector<PerfDbRow> train_rows;    // --train-perfdb's, likewise
  std::vector<PerfDbRow> evaluated;     // rows of --split, up to --limit
  std::set<std::string> evaluated_descriptors;
};
// Reads the rows; returns the exit code when the command ends here.
std::optional<int> read_problems(const Options& options, const Model& model, Problems* out);

// How many evaluated problems the model learned from (nullopt: unknown), with notes on stderr.
struct InSample {
  std::optional<size_t> known;
  size_t count = 0;
  // Whether any figure is in-sample: true when some evaluated problem was learned, or when the
  // model learned from an evaluated split and which problems is unknown.
  bool any() const { return known ? count > 0 : true; }
};
InSample note_in_sample(const Options& options, const Model& model, const ModelSplits& splits,
                        const Problems& problems);

// Evaluated problems the kernel's rules do not apply to, or with fields outside the model's
// training ranges, counted (with notes on stderr): scored like the rest.
struct ProblemNotes {
  std::map<std::string, size_t> inapplicable_by_condition;  // first failing condition -> problems
  std::map<std::string, size_t> out_of_range_by_field;
  size_t inapplicable = 0;
  size_t out_of_range = 0;
};
ProblemNotes note_problems(const Model& model, const std::vector<PerfDbRow>& evaluated);

// Per-k metrics over a set of problems.
struct Scores {
  std::vector<int> ks;
  std::vector<double> perfect;   // fraction of problems whose tuned vector is among the first k
  std::vector<double> average;   // mean per-parameter accuracy of the best-matching of the first k
  std::vector<double> top1;      // fraction whose first (most probable) of the k candidates is it
  int n = 0;

  Scores() = default;
  explicit Scores(std::vector<int> k_list)
      : ks(std::move(k_list)), perfect(ks.size(), 0.0), average(ks.size(), 0.0), top1(ks.size(), 0.0) {}

  // `candidates_for(i)` gives the candidate list used for k = ks[i].
  template <typename CandidatesFor>
  void add(const ParamVector& target, CandidatesFor candidates_for) {
    ++n;
    for (size_t i = 0; i < ks.size(); ++i) {
      const std::vector<ParamVector>& cands = candidates_for(i);
      const size_t limit = std::min(cands.size(), static_cast<size_t>(ks[i]));
      double best = 0.0;
      bool hit = false;
      for (size_t c = 0; c < limit; ++c) {
        size_t same = 0;
        for (size_t p = 0; p < target.size() && p < cands[c].size(); ++p) same += cands[c][p] == target[p];
        best = std::max(best, static_cast<double>(same) / target.size());
        hit = hit || cands[c] == target;
      }
      perfect[i] += hit;
      average[i] += best;
      top1[i] += limit > 0 && cands[0] == target;
    }
  }
  // One of the sums above at ks[i], as a percentage of the problems.
  double percent(const std::vector<double>& sums, size_t i) const { return n ? 100.0 * sums[i] / n : 0.0; }
  nlohmann::json to_json(const std::vector<double>& sums) const;
};

// One evaluated problem's predictions.
struct ProblemResult {
  std::vector<std::vector<ParamVector>> candidates;  // per k
  std::vector<float> scores;                         // log-probabilities of the last k's candidates
  std::vector<bool> cut_short;  // per k: fewer than k candidates, and the beam had dropped some
  int64_t returned = 0;
  int64_t invalid = 0;
  int64_t removed = 0;
  bool failed = false;
  std::string error;
};

// Runs the runtime's search on every evaluated problem, spread over --threads.
Status predict_problems(const Options& options, const Model& model, int search_width, bool has_constraints,
                        const std::vector<PerfDbRow>& evaluated, std::vector<ProblemResult>* results);

// The baselines' scores on the same problems.
struct Baselines {
  bool ran = false;         // --no-baselines not given, and the model's figures are out-of-sample
  std::string omitted;      // why they were not run beside the model (in-sample figures), else empty
  size_t train_count = 0;   // rows they learned from (0: none left, no scores)
  Scores frequent, nearest;
};
Baselines run_baselines(const Options& options, const Problems& problems, const std::set<std::string>& archs,
                        const InSample& in_sample);

// The evaluated problems' archs (symbols); rows of a DB named without one give none.
std::set<std::string> archs_of(const std::vector<PerfDbRow>& rows);

// Everything an evaluation found, for the outputs.
struct Report {
  int search_width = 1;
  bool has_constraints = false;
  std::set<std::string> archs;
  Scores model;
  std::vector<double> cut_short;  // per k, problems
  int64_t returned = 0, invalid = 0, removed = 0;
  std::vector<std::string> in_sample_splits;
  InSample in_sample;
  ProblemNotes notes;
  Baselines baselines;
};
// The model's scores and totals over every problem's results.
void score_results(const Options& options, const Problems& problems, const std::vector<ProblemResult>& results,
                   Report* report);

// --candidates FILE.jsonl: one line per evaluated problem.
Status write_candidates(const Options& options, const Problems& problems,
                        const std::vector<ProblemResult>& results);
// The --json object (also the plot's input).
nlohmann::json report_json(const Options& options, const Report& report);
// --plot FILE: writes FILE.json and draws it with tools/plot_eval.py.
Status plot(const Options& options, const nlohmann::json& report);
// The text table on stdout.
void print_report(const Options& options, const Report& report);

}  // namespace tunecast::cli::eval
