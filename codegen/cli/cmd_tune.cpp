// tune: a tuning search for one problem (tunecast::search): the predictor's best candidates, then
// coordinate descent, measured by the user's benchmark process (--bench-cmd) or looked up in
// recorded measurements (--replay: a timing DB or a Kernel Tuner file). docs/search.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_command.h"
#include "cli.h"
#include "tune_list.h"
#include "tunecast/codegen/timing_db.h"
#include "tunecast/codegen/tuning_cache.h"
#include "tunecast/search.h"

namespace tunecast::cli {
namespace {

using codegen::ProblemTimings;

Status parse_double(const Args& args, const std::string& name, double fallback, double* out) {
  *out = fallback;
  if (!args.has(name)) return Status::ok();
  const std::string text = args.get(name);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value)) {
    return Status::error(StatusCode::kInvalidArgument, "option --%s needs a number, got '%.40s'", name.c_str(),
                         text.c_str());
  }
  *out = value;
  return Status::ok();
}

std::string joined(const std::vector<std::string>& items, const char* separator = ",") {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

// The measurements a replay answers from, and how to print values.
struct Recording {
  ProblemTimings timings;                 // a timing DB's problem, or a Kernel Tuner file's configs
  std::vector<std::string> names;         // the recording's parameter names (may be empty for a DB)
  std::optional<codegen::TuningCache> cache;
  std::string unit;
  std::string description;                // "timing DB X, problem Y" / "T4 file X"
  std::vector<int64_t> default_config;    // a timing DB's meta default_config (recording order)
};

Status read_recording(const std::string& path, const Args& args, const std::optional<Problem>& problem,
                      const Model* model, Recording* out) {
  if (codegen::is_timing_db_file(path)) {
    codegen::TimingDb db;
    const ProblemSchema schema = model ? model->problem_schema() : ProblemSchema();
    TUNECAST_RETURN_IF_ERROR(codegen::TimingDb::open(path, args.get("solver"), &db, model ? &schema : nullptr));
    if (!problem) {
      return Status::error(StatusCode::kInvalidArgument, "--replay %s is a timing DB: give the --problem to look up",
                           path.c_str());
    }
    size_t index = 0;
    char text[1024];
    if (db.keyed_by_definition()) {
      if (model == nullptr) {
        return Status::error(StatusCode::kInvalidArgument,
                             "--replay %s is keyed by a kernel definition: give the KERNEL.tcr (or a model) first",
                             path.c_str());
      }
      format_problem(schema, *problem, text, sizeof text);
      TUNECAST_RETURN_IF_ERROR(db.find_problem_text(text, &index));
    } else {
      TUNECAST_RETURN_IF_ERROR(db.find_problem(*problem, &index));
      format_problem(db.problems()[index].problem, text, sizeof text);
    }
    TUNECAST_RETURN_IF_ERROR(db.timings(db.problems()[index].config_id, &out->timings));
    out->names = db.parameter_names();
    out->unit = db.meta("time_unit").value_or("us");
    out->description = "timing DB " + path + " (" + db.solver() + ", " + text + ")";
    if (const std::optional<std::string> d = db.meta("default_config")) {
      if (!parse_param_list(*d, &out->default_config)) {
        return Status::error(StatusCode::kInvalidArgument, "timing DB %s: meta default_config '%s' is not a list of integers",
                             path.c_str(), d->c_str());
      }
    }
    if (out->timings.size() == 0) {
      return Status::error(StatusCode::kNotFound, "timing DB %s records no timings for %s", path.c_str(), text);
    }
    return Status::ok();
  }
  codegen::TuningCache cache;
  TUNECAST_RETURN_IF_ERROR(codegen::read_tuning_cache(path, &cache));
  out->names = cache.names;
  out->unit = cache.unit;
  out->description = cache.format + " file " + path;
  out->timings = cache.timings;
  out->cache = std::move(cache);
  return Status::ok();
}

// "--start 64,32,8": the values of the recording's parameters (labels for Kernel Tuner's
// non-integer parameters, with or without their JSON quotes).
Status parse_start(const std::string& text, const Recording& rec, size_t count, std::vector<int64_t>* out) {
  out->clear();
  std::vector<std::string> items;
  for (size_t start = 0;;) {
    const size_t end = text.find(',', start);
    items.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (items.size() != count) {
    return Status::error(StatusCode::kInvalidArgument, "--start has %zu values, the space %zu parameters", items.size(),
                         count);
  }
  for (size_t p = 0; p < count; ++p) {
    const std::string& item = items[p];
    if (rec.cache && rec.cache->indexed[p]) {
      const auto& labels = rec.cache->labels[p];
      auto it = std::find_if(labels.begin(), labels.end(),
                             [&](const std::string& l) { return l == item || l == "\"" + item + "\""; });
      if (it == labels.end()) {
        return Status::error(StatusCode::kInvalidArgument, "--start: '%s' is not a value of %s", item.c_str(),
                             rec.names[p].c_str());
      }
      out->push_back(it - labels.begin());
      continue;
    }
    std::vector<int64_t> one;
    if (!parse_param_list(item, &one) || one.size() != 1) {
      return Status::error(StatusCode::kInvalidArgument, "--start: '%s' is not an integer", item.c_str());
    }
    const std::vector<int64_t> recorded = rec.cache ? rec.cache->values[p] : rec.timings.values_of(p);
    if (!std::binary_search(recorded.begin(), recorded.end(), one[0])) {
      std::string listed;
      for (size_t i = 0; i < recorded.size() && i < 12; ++i) listed += (i ? ", " : "") + std::to_string(recorded[i]);
      return Status::error(StatusCode::kInvalidArgument, "--start: %lld is not a recorded value of %s (%s%s)",
                           static_cast<long long>(one[0]), p < rec.names.size() ? rec.names[p].c_str() : "a parameter",
                           listed.c_str(), recorded.size() > 12 ? ", ..." : "");
    }
    out->push_back(one[0]);
  }
  return Status::ok();
}

}  // namespace

int cmd_tune(const std::vector<std::string>& argv) {
  Args args;
  std::vector<std::string> option_names = {"problem", "budget", "bench-cmd", "bench-timeout", "replay", "start",
                                            "beam", "explore", "max-radius", "max-moved", "recheck", "recheck-ratio",
                                            "time-limit", "solver", "seed", "record", "prior"};
  option_names.insert(option_names.end(), kTuneListOptions.begin(), kTuneListOptions.end());
  Status status = args.parse(argv, option_names, {"json", "quiet"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast tune MODEL.tcm|KERNEL.tcr [--problem FIELDS] --budget N (--bench-cmd CMD | --replay TIMINGS)\n"
        "                    [--record DB] [--seed S] [--prior TIMINGS,...]\n"
        "       tunecast tune MODEL.tcm|KERNEL.tcr --problems FILE --budget N --record DB [--bench-cmd CMD]\n"
        "                    [--workers N] [--shard I/N] [-o RESULTS] [--perf-db OUT.db] [--max-restarts R]\n"
        "       tunecast tune --replay KERNEL_TUNER.json --budget N [--start V1,V2,...]\n"
        "                    [--beam W] [--explore E] [--max-radius R] [--max-moved M]\n"
        "                    [--recheck RUNS] [--recheck-ratio X] [--time-limit S] [--bench-timeout S]\n"
        "                    [--solver NAME] [--json] [--quiet]\n\n"
        "Tunes one problem within a budget of benchmarks: the model's constrained beam proposes its\n"
        "best distinct candidates (explore), then coordinate descent moves from the best measured\n"
        "config over each parameter's values (exploit). Every proposal passes the model's\n"
        "constraints before it is measured. With a kernel definition (KERNEL.tcr, docs/kernels.md)\n"
        "instead of a model, configs drawn from its domains (--seed) explore, the rules still check\n"
        "every proposal, and the problem takes the definition's fields. docs/search.md has the details.\n\n"
        "  --problem FIELDS  the problem, name=value,... (a definition's fields; for MIOpen's\n"
        "                    convolution every form predict takes); left out, a definition whose\n"
        "                    fields all have defaults tunes its default problem\n"
        "  --budget N        benchmark calls at most (re-measurements included)\n"
        "  --bench-cmd CMD   started once with /bin/sh -c, TUNECAST_PROBLEM and TUNECAST_PARAMS\n"
        "                    (comma-separated names) in its environment; tunecast writes one\n"
        "                    candidate per line on its stdin (values comma-separated, e.g.\n"
        "                    128,64,32,8,4,3) and reads one line back: a time (microseconds by\n"
        "                    convention) or 'fail', optionally with its kind ('fail compile_fail';\n"
        "                    also out_of_resources, launch_fail, wrong_result: --record keeps it).\n"
        "                    Anything else, end of output, or no answer within --bench-timeout\n"
        "                    seconds (default 600) stops with an error.\n"
        "  --replay TIMINGS  answers from recorded measurements: a timing DB (perf-DB-like\n"
        "                    SQLite with a timings table; --problem picks the row, --solver the\n"
        "                    solver when the DB holds several) or Kernel Tuner's T4 results or\n"
        "                    cache JSON. A config the recording lacks is answered 'fail'.\n"
        "                    Without MODEL: coordinate descent over the recording's values from\n"
        "                    --start (default: a timing DB's default_config, else the first\n"
        "                    config that ran, in file order); no constraints are known.\n"
        "  --record DB       append every measurement (ok, or failed) to a timing DB keyed by the\n"
        "                    kernel's fields (created when absent; docs/kernels.md); measurements it\n"
        "                    already holds for the problem are replayed instead of benchmarked, so a\n"
        "                    killed tune resumes where it stopped\n"
        "  --problems FILE   tune every problem of FILE (one per line, any form --problem takes,\n"
        "                    '#' starts a comment; docs/fleet.md): a queue over --workers N\n"
        "                    benchmark processes (default 1; '{worker}' in CMD is the worker's\n"
        "                    number 0..N-1, also TUNECAST_WORKER), each measurement recorded in\n"
        "                    --record DB (required), a problem done when its search ends (tables\n"
        "                    tuned and perf_db of DB). A rerun skips done problems and resumes the\n"
        "                    others from DB, measuring nothing twice. A process that hangs past\n"
        "                    --bench-timeout or dies is restarted, its candidate recorded as failed\n"
        "                    (timeout, died); more than --max-restarts R (default 3) in a row with\n"
        "                    no answer between stops the run, those failures not kept. Without\n"
        "                    --bench-cmd every answer must come from DB (finishing merged\n"
        "                    shards). Results: a table on stdout or -o RESULTS (problem, values,\n"
        "                    time_us, benchmarks), or with --json one object per line per problem\n"
        "                    as it ends ({\"problem\", \"best\", \"time\", \"benchmarks\", ...});\n"
        "                    progress on stderr\n"
        "  --perf-db OUT.db  also the bests as a MIOpen perf DB (a convolution kernel; one arch),\n"
        "                    merged into OUT.db when it exists (its other rows kept)\n"
        "  --shard I/N       only the problems whose index in FILE (0-based, repeats removed) is\n"
        "                    I mod N: one shard per job of a batch scheduler (SLURM job arrays)\n"
        "  --seed S          the draws of a search without a predictor (a KERNEL.tcr; default 0)\n"
        "  --prior T,...     with a KERNEL.tcr: recordings of the same kernel on other GPUs or\n"
        "                    problems (timing DBs, Kernel Tuner files); the search measures their\n"
        "                    best configs first (by mean log speed over their problems) in place of\n"
        "                    the space-filling start\n"
        "  --beam W          the predictor's beam (default max(32, the model's search_width))\n"
        "  --explore E       beam candidates benchmarked first (default min(W, 0.7 budget)); with a\n"
        "                    definition, the start's configs before the surrogate (default 0.3 budget,\n"
        "                    at least 4)\n"
        "  --max-radius R    widest coordinate step in value positions (default 0: the space's)\n"
        "  --max-moved M     parameters one step changes at once (default 2)\n"
        "  --recheck RUNS    MIOpen's rule: a config within --recheck-ratio (default 1.10) of the\n"
        "                    best is measured RUNS more times, compared by medians (default 0)\n"
        "  --time-limit S    stop before a benchmark once S seconds have passed\n"
        "  --json            {\"best\", \"time\", \"benchmarks\", \"history\": [{\"values\", \"time\",\n"
        "                    \"phase\", \"repeat\"}], ...; with --replay \"optimum\", \"speed\"}\n"
        "  --quiet           no progress lines on stderr\n\n"
        "Progress (one line per benchmark) and notes go to stderr, results to stdout.\n"
        "Exit status: 0 ok, 2 bad arguments, 3 nothing ran successfully, 1 other errors.\n");
    return 0;
  }
  if (!status) return usage_error("tune", status.message());
  if (args.positional().size() > 1) return usage_error("tune", "expected at most one MODEL");
  const bool have_model = args.positional().size() == 1;
  const bool list = args.has("problems");
  if (list) {
    if (!have_model) return usage_error("tune", "--problems needs a MODEL or a KERNEL.tcr definition");
    if (args.has("problem")) return usage_error("tune", "give one of --problem and --problems");
    if (args.has("replay")) return usage_error("tune", "--problems tunes with --bench-cmd (or from --record alone), not --replay");
    if (!args.has("record")) return usage_error("tune", "--problems needs --record DB (the queue's state: measurements and finished problems)");
  } else {
    for (const std::string& name : kTuneListOptions) {
      if (name != "problems" && args.has(name)) return usage_error("tune", "--" + name + " is for a problem list (--problems FILE)");
    }
    if (args.has("bench-cmd") == args.has("replay")) return usage_error("tune", "give one of --bench-cmd and --replay");
  }
  if (!args.has("budget")) return usage_error("tune", "give --budget N (benchmark calls)");
  // --problem may be left out for a definition whose fields all have defaults (a Kernel Tuner
  // space's single problem).
  const bool problem_optional = have_model && !list && is_definition_file(args.positional()[0]);
  if (have_model && !list && !args.has("problem") && !problem_optional) {
    return usage_error("tune", "give --problem (the problem to tune)");
  }
  if (!have_model && args.has("bench-cmd")) {
    return usage_error("tune", "--bench-cmd needs a MODEL or a KERNEL.tcr definition (its domains are the space)");
  }
  if (!have_model && args.has("record")) return usage_error("tune", "--record needs a MODEL or a KERNEL.tcr definition");
  if (have_model && args.has("start")) {
    return usage_error("tune", "--start is for --replay alone (coordinate descent from one config); a MODEL or KERNEL.tcr "
                               "search chooses its own start (a definition's: --explore, --prior)");
  }

  SearchOptions options;
  int recheck = 0;
  double bench_timeout = 600.0;
  status = args.get_int("budget", 0, &options.budget);
  if (status && (options.budget < 1 || options.budget > kMaxSearchBudget)) {  // before any file is written
    status = Status::error(StatusCode::kInvalidArgument, "--budget %d is outside 1..%d", options.budget, kMaxSearchBudget);
  }
  if (status) status = args.get_int("max-radius", options.max_radius, &options.max_radius);
  if (status) status = args.get_int("max-moved", options.max_moved, &options.max_moved);
  if (status) status = args.get_int("recheck", 0, &recheck);
  if (status) status = parse_double(args, "recheck-ratio", options.recheck_ratio, &options.recheck_ratio);
  if (status) status = parse_double(args, "time-limit", 0.0, &options.time_limit);
  if (status) status = parse_double(args, "bench-timeout", 600.0, &bench_timeout);
  if (status) status = args.get_seed("seed", &options.seed);
  if (status && bench_timeout <= 0.0) status = Status::error(StatusCode::kInvalidArgument, "--bench-timeout must be positive");
  if (!status) return usage_error("tune", status.message());
  options.recheck_runs = recheck;

  LoadedModel loaded;
  if (have_model) {
    status = load_model_or_definition(args.positional()[0], &loaded);
    if (!status) return fail(status);
  }
  std::optional<Problem> problem;
  if (problem_optional && !args.has("problem") && loaded.model.problem_schema().builtin()) {
    return usage_error("tune", args.positional()[0] + " declares no field, so its problem is MIOpen's convolution "
                               "(dir=F,n=...,c=...): give --problem, or declare the kernel's own fields "
                               "(docs/kernels.md)");
  }
  if (args.has("problem") || problem_optional) {
    Problem p;
    status = have_model ? parse_model_problem(loaded.model, args.get("problem"), &p) : parse_problem(args.get("problem"), &p);
    if (!status) return fail(status);
    problem = p;
  }

  std::vector<std::string> names;  // the searched parameters, in search order
  std::vector<int64_t> prior_configs;  // --prior's configs, row-major (options.first_configs)
  if (have_model && !loaded.model.has_predictor()) {  // a kernel definition: its domains are the space
    for (int p = 0; p < loaded.model.parameter_count(); ++p) names.push_back(loaded.model.parameter_name(p));
    if (args.has("beam")) return usage_error("tune", "--beam needs a trained model (a definition has no predictor)");
    status = args.get_int("explore", -1, &options.explore);
    if (status && args.has("explore") && options.explore < 1) {
      status = Status::error(StatusCode::kInvalidArgument, "--explore %d must be positive", options.explore);
    }
    if (!status) return usage_error("tune", status.message());
    if (args.has("prior")) {
      std::vector<std::vector<int64_t>> prior;
      status = read_prior_configs(loaded.model, args.get("prior"), kPriorConfigs, &prior);
      if (!status) return fail(status);
      for (const std::vector<int64_t>& config : prior) prior_configs.insert(prior_configs.end(), config.begin(), config.end());
      options.first_configs = prior_configs.data();
      options.first_config_count = static_cast<int>(prior.size());
    }
  } else if (have_model) {
    const Model& model = loaded.model;
    if (!model.is_seq2seq() || model.root()->encoding() == nullptr) {
      return fail(Status::error(StatusCode::kInvalidArgument,
                                "%s cannot tune from a problem: it is not a sequence-to-sequence predictor with a "
                                "feature encoding",
                                args.positional()[0].c_str()));
    }
    for (int p = 0; p < model.parameter_count(); ++p) names.push_back(model.parameter_name(p));
    int width = 1;
    status = model_search_width(model, &width);
    if (!status) return fail(status);
    options.beam_width = std::max(32, width);
    status = args.get_int("beam", options.beam_width, &options.beam_width);
    if (status) status = check_beam_width("beam width", options.beam_width);
    if (status) status = args.get_int("explore", -1, &options.explore);
    if (status && args.has("explore") && (options.explore < 1 || options.explore > options.beam_width)) {
      status = Status::error(StatusCode::kInvalidArgument, "--explore %d is outside 1..%d (the beam width)",
                             options.explore, options.beam_width);
    }
    if (!status) return usage_error("tune", status.message());
  } else if (args.has("beam") || args.has("explore")) {
    return usage_error("tune", "--beam and --explore need a MODEL");
  }
  if (args.has("prior") && !(have_model && !loaded.model.has_predictor())) {
    return usage_error("tune", "--prior is for a search without a predictor: give the KERNEL.tcr");
  }
  if (args.has("seed") && !(have_model && !loaded.model.has_predictor())) {  // nothing else draws
    return usage_error("tune", have_model ? "--seed is for a search without a predictor (a KERNEL.tcr): a model's search "
                                            "draws nothing"
                                          : "--seed is for a search without a predictor (a KERNEL.tcr): --replay without "
                                            "one descends from --start and draws nothing");
  }

  if (list) return tune_problem_list(args, loaded, options, bench_timeout, names);

  // The benchmark: a process, or a recording.
  Recording recording;
  std::vector<int> positions;  // search parameter p -> recording column
  BenchCommand command;
  codegen::Replay replay;
  std::vector<std::vector<int64_t>> space_values;
  std::vector<int64_t> start;
  if (args.has("replay")) {
    status = read_recording(args.get("replay"), args, problem, have_model ? &loaded.model : nullptr, &recording);
    if (!status) return fail(status);
    if (have_model) {
      status = codegen::map_parameters(names, recording.names, &positions);
      if (status && recording.cache) {
        for (size_t p = 0; p < recording.cache->indexed.size(); ++p) {
          if (recording.cache->indexed[p]) {
            status = Status::error(StatusCode::kInvalidArgument, "%s: parameter '%s' has non-integer values: a model's parameters are integers",
                                   args.get("replay").c_str(), recording.names[p].c_str());
          }
        }
      }
      if (status && positions.empty() && recording.timings.size() > 0 &&
          recording.timings.configs()[0].size() != names.size()) {
        status = Status::error(StatusCode::kInvalidArgument, "its configs have %zu values, the model has %zu parameters",
                               recording.timings.configs()[0].size(), names.size());
      }
      if (!status) return fail(Status::error(status.code(), "--replay %s: %s", args.get("replay").c_str(), status.message()));
      if (recording.cache) {
        std::fprintf(stderr, "tune: note: %s holds one problem's measurements; --problem is taken to be it\n",
                     recording.description.c_str());
      }
    } else {
      const size_t count = recording.cache ? recording.cache->names.size()
                                           : (recording.timings.configs().empty() ? 0 : recording.timings.configs()[0].size());
      if (count == 0 || count > static_cast<size_t>(kMaxParameters)) {
        return fail(Status::error(StatusCode::kInvalidArgument, "%s: %zu parameters (1..%d searchable)",
                                  recording.description.c_str(), count, kMaxParameters));
      }
      for (size_t p = 0; p < count; ++p) {
        space_values.push_back(recording.cache ? recording.cache->values[p] : recording.timings.values_of(p));
        if (recording.names.size() != count) names.push_back("p" + std::to_string(p));
      }
      if (recording.names.size() == count) names = recording.names;
      if (args.has("start")) {
        status = parse_start(args.get("start"), recording, count, &start);
        if (!status) return usage_error("tune", status.message());
      } else if (!recording.default_config.empty()) {
        start = recording.default_config;
      } else {
        for (const auto& config : recording.timings.configs()) {
          if (recording.timings.find(config)->ok) {
            start = config;
            break;
          }
        }
        if (start.empty()) return fail(Status::error(StatusCode::kNotFound, "%s: no config ran", recording.description.c_str()));
      }
    }
    replay.timings = &recording.timings;
    replay.positions = positions;
  }
  // The benchmark process starts at the first config that needs measuring: a tune resumed from
  // --record whose answers are all recorded never starts it.
  bool command_started = false;
  Status command_status;
  auto start_command = [&]() {
    command_started = true;
    // The problem as given, else (every field has a default) its canonical text: never empty.
    const std::string given = args.has("problem") || !problem || !have_model ? args.get("problem")
                                                                              : problem_text(loaded.model, *problem);
    command_status = command.start(args.get("bench-cmd"), {"TUNECAST_PROBLEM=" + given, "TUNECAST_PARAMS=" + joined(names)},
                                   bench_timeout);
    return command_status.is_ok();
  };

  // Values as printed: labels for a Kernel Tuner file's non-integer parameters.
  auto value_text = [&](size_t p, int64_t v) {
    return recording.cache ? recording.cache->label(p, v) : std::to_string(v);
  };
  auto values_text = [&](const int64_t* values) {
    std::string text;
    for (size_t p = 0; p < names.size(); ++p) text += (p ? "," : "") + value_text(p, values[p]);
    return text;
  };

  struct Progress {
    bool quiet;
    int budget;
    std::function<std::string(const int64_t*)> text;
  } progress{args.has("quiet"), options.budget, values_text};
  options.observer.context = &progress;
  options.observer.trial = [](void* context, const SearchTrial& trial, int benchmarks, const int64_t* best,
                              double best_time) {
    const Progress& p = *static_cast<const Progress*>(context);
    if (p.quiet) return;
    char time[32] = "fail";
    if (!trial.failed) std::snprintf(time, sizeof time, "%.6g", trial.time);
    std::fprintf(stderr, "tune: %d/%d %s%s %s %s", benchmarks, p.budget,
                 trial.phase == SearchPhase::kExplore ? "explore" : "exploit", trial.repeat ? " (recheck)" : "",
                 p.text(trial.values).c_str(), time);
    if (best != nullptr) {
      std::fprintf(stderr, "  best %.6g (%s)\n", best_time, p.text(best).c_str());
    } else {
      std::fprintf(stderr, "  best: none yet\n");
    }
  };

  // --record: every measurement appended as it is made; what the file already holds for this
  // problem answers first (a killed tune resumes without measuring anything again).
  codegen::TimingRecorder recorder;
  int64_t recorded_problem = 0;
  std::map<std::string, std::deque<codegen::TimingRecorder::Measurement>> resumed;
  int resumed_answers = 0;
  if (args.has("record")) {
    const Model& model = loaded.model;
    const ProblemSchema schema = model.problem_schema();
    codegen::RecordingInfo info;
    const char* solver = model.metadata("solver");
    info.kernel = solver ? solver : "";
    if (info.kernel.empty()) return fail(Status::error(StatusCode::kInvalidArgument, "--record: the model names no kernel (metadata solver)"));
    info.params = names;
    info.definition = loaded.definition_text;
    std::vector<std::string> field_values;
    for (int f = 0; f < schema.field_count(); ++f) {
      if (!problem->has(f)) continue;
      info.fields.push_back(schema.field_name(f));
      info.integer_fields.push_back(schema.field_kind(f) == FieldKind::kInteger);
      const char* symbol = schema.field_kind(f) == FieldKind::kInteger ? nullptr : schema.symbol_name(f, problem->get(f));
      field_values.push_back(symbol ? symbol : std::to_string(problem->get(f)));
    }
    if (schema.builtin()) {  // the convolution's columns: every field, whether this problem sets it or not
      info.fields.clear();
      info.integer_fields.clear();
      field_values.clear();
      for (int f = 0; f < schema.field_count(); ++f) {
        info.fields.push_back(schema.field_name(f));
        info.integer_fields.push_back(schema.field_kind(f) == FieldKind::kInteger);
        const char* symbol = schema.field_kind(f) == FieldKind::kInteger ? nullptr : schema.symbol_name(f, problem->get(f));
        field_values.push_back(!problem->has(f) ? "" : symbol ? symbol : std::to_string(problem->get(f)));
      }
    }
    status = prepare_output(args.get("record"), {args.positional()[0]}, true);
    if (status) status = codegen::TimingRecorder::open(args.get("record"), info, &recorder);
    if (status) status = recorder.problem(problem_text(model, *problem), field_values, &recorded_problem);
    std::vector<codegen::TimingRecorder::Measurement> earlier;
    if (status) status = recorder.measurements(recorded_problem, &earlier);
    if (!status) return fail(status);
    if (recorder.other_definition() && !args.has("quiet")) {
      std::fprintf(stderr, "tune: note: %s was recorded with another text of %s (its rules or domains may differ): "
                           "its measurements still answer the configs they name\n",
                   args.get("record").c_str(), args.positional()[0].c_str());
    }
    const size_t earlier_count = earlier.size();
    resumed = codegen::resume_answers(std::move(earlier));
    if (earlier_count > 0 && !args.has("quiet")) {
      std::fprintf(stderr, "tune: %s already holds %zu measurements of this problem: they answer first (resuming)\n",
                   args.get("record").c_str(), earlier_count);
    }
  }
  Status record_error;
  // A timing DB holds microseconds; a replayed recording answers in its own unit.
  const double record_scale =
      args.has("replay") && !recording.unit.empty() ? codegen::microseconds_per(recording.unit) : 1.0;
  if (args.has("record") && !(record_scale > 0.0)) {
    return fail(Status::error(StatusCode::kInvalidArgument, "--record: %s records times in '%s', not one of ms, s, us, ns",
                              args.get("replay").c_str(), recording.unit.c_str()));
  }
  auto run_benchmark = [&](const int64_t* values, int count, double* time) {
    std::string params;
    for (int p = 0; p < count; ++p) params += (p ? "," : "") + std::to_string(values[p]);
    if (auto it = resumed.find(params); it != resumed.end() && !it->second.empty()) {
      const codegen::TimingRecorder::Measurement m = it->second.front();
      it->second.pop_front();
      ++resumed_answers;
      *time = m.time / record_scale;  // in the unit the other answers come in
      return m.ok ? BenchmarkStatus::kOk : BenchmarkStatus::kFailed;
    }
    if (!args.has("replay") && ((!command_started && !start_command()) || !command_status)) return BenchmarkStatus::kAbort;
    const BenchmarkStatus answer = args.has("replay") ? replay(values, count, time) : command.run(values, count, time);
    // A candidate that hung (killed at --bench-timeout) is kept as failed, as --problems keeps it:
    // the tune stops, and resumed it does not hang on that candidate again. (A command that died
    // stops the tune unrecorded: its death may be its own bug, not the candidate's.)
    const bool hung = !args.has("replay") && command.fault() == BenchCommand::Fault::kTimeout;
    if (args.has("record") && (answer != BenchmarkStatus::kAbort || hung)) {
      codegen::TimingRecorder::Measurement m;
      m.params = params;
      m.ok = answer == BenchmarkStatus::kOk;
      m.time = m.ok ? *time * record_scale : 0.0;
      m.status = m.ok ? "ok" : hung ? "timeout" : args.has("replay") ? "fail" : command.failure_kind();
      record_error = recorder.record(recorded_problem, m);
      if (!record_error) return BenchmarkStatus::kAbort;  // never measure what cannot be kept
    }
    return answer;
  };
  // The explore batch, announced before its first benchmark: a protocol-2 benchmark command gets
  // the configs it will be asked to measure (those the recording does not answer) and may compile
  // them in parallel (docs/search.md, "Protocol 2").
  auto prepare_batch = [&](const int64_t* configs, int config_count, int count) {
    if (args.has("replay")) return;
    std::vector<int64_t> unanswered;
    std::map<std::string, size_t> used;
    for (int i = 0; i < config_count; ++i) {
      const int64_t* values = configs + static_cast<size_t>(i) * count;
      std::string params;
      for (int p = 0; p < count; ++p) params += (p ? "," : "") + std::to_string(values[p]);
      auto it = resumed.find(params);
      if (it != resumed.end() && used[params] < it->second.size()) {
        ++used[params];
        continue;
      }
      unanswered.insert(unanswered.end(), values, values + count);
    }
    if (unanswered.empty()) return;
    if (!command_started && !start_command()) return;
    command.prepare(unanswered.data(), static_cast<int>(unanswered.size()) / count, count);
  };
  std::vector<SearchTrial> history(static_cast<size_t>(std::max(1, std::min(options.budget, kMaxSearchBudget))));
  SearchResult result;
  if (have_model) {
    std::vector<unsigned char> scratch(search_scratch_bytes(loaded.model, options));
    status = search(loaded.model, *problem, options, Benchmark::from(run_benchmark, prepare_batch), scratch.data(), scratch.size(),
                    history.data(), static_cast<int>(history.size()), &result);
  } else {
    SearchSpace space;
    space.parameter_count = static_cast<int>(space_values.size());
    for (size_t p = 0; p < space_values.size(); ++p) {
      space.values[p] = space_values[p].data();
      space.value_counts[p] = static_cast<int>(space_values[p].size());
    }
    std::vector<unsigned char> scratch(search_scratch_bytes(space, options));
    status = search(space, start.data(), options, Benchmark::from(run_benchmark, prepare_batch), scratch.data(), scratch.size(),
                    history.data(), static_cast<int>(history.size()), &result);
  }
  if (!record_error) return fail(record_error);
  if (resumed_answers > 0 && !args.has("quiet")) {
    std::fprintf(stderr, "tune: %d of %d benchmarks answered from %s (measured before)\n", resumed_answers,
                 result.benchmarks, args.get("record").c_str());
  }
  if (!command_status) return fail(command_status);
  if (args.has("bench-cmd") && command_started) {
    if (status.code() == StatusCode::kAborted) return fail(command.error());
    std::string note;
    command.finish(10.0, &note);
    if (!note.empty()) std::fprintf(stderr, "tune: note: %s\n", note.c_str());
  }
  if (!status) {
    if (status.code() == StatusCode::kInvalidArgument && args.has("replay") && !have_model) {
      return usage_error("tune", status.message());
    }
    return fail(status);
  }
  if (have_model) {
    for (const std::string& note : out_of_range_notes(loaded.model, *problem, result.out_of_range_fields)) {
      std::fprintf(stderr, "tune: warning: problem field %s: outside what the model learned from\n", note.c_str());
    }
    if (result.not_applicable >= 0) {
      std::fprintf(stderr, "tune: warning: %s\n", not_applicable_note(loaded.model, result.not_applicable).c_str());
    }
  }
  if (replay.unrecorded > 0) {
    std::fprintf(stderr, "tune: note: %d proposed config%s not in the recording (answered as fail)\n",
                 replay.unrecorded, replay.unrecorded == 1 ? " is" : "s are");
  }
  const bool replaying = args.has("replay");
  const double optimum = replaying && recording.timings.has_optimum() ? recording.timings.optimum() : 0.0;
  const double overhead = result.seconds - result.benchmark_seconds;
  // The optimum's share of the best time; a best of 0 s is the optimum (nothing is faster).
  const double speed = result.found && result.best_time > 0.0 ? optimum / result.best_time : 1.0;

  if (args.has("json")) {
    auto json_values = [&](const int64_t* values) {
      nlohmann::json list = nlohmann::json::array();
      for (size_t p = 0; p < names.size(); ++p) {
        if (recording.cache && recording.cache->indexed[p]) {
          list.push_back(nlohmann::json::parse(value_text(p, values[p])));
        } else {
          list.push_back(values[p]);
        }
      }
      return list;
    };
    nlohmann::json j;
    if (have_model) {
      const char* kernel = loaded.model.metadata("solver");
      if (kernel) j["kernel"] = kernel;
      j["problem"] = problem_text(loaded.model, *problem);
    }
    j["parameters"] = names;
    j["best"] = result.found ? json_values(result.best) : nlohmann::json(nullptr);
    j["time"] = result.found ? nlohmann::json(result.best_time) : nlohmann::json(nullptr);
    j["benchmarks"] = result.benchmarks;
    j["explore_benchmarks"] = result.explore_benchmarks;
    j["failed_benchmarks"] = result.failed_benchmarks;
    j["repeats"] = result.repeats;
    j["skipped_invalid"] = result.skipped_invalid;
    j["stop"] = search_stop_name(result.stop);
    j["search_overhead_seconds"] = overhead;
    if (!recording.unit.empty()) j["unit"] = recording.unit;
    nlohmann::json list = nlohmann::json::array();
    for (int i = 0; i < result.trials; ++i) {
      const SearchTrial& t = history[static_cast<size_t>(i)];
      list.push_back({{"values", json_values(t.values)},
                      {"time", t.failed ? nlohmann::json(nullptr) : nlohmann::json(t.time)},
                      {"phase", t.phase == SearchPhase::kExplore ? "explore" : "exploit"},
                      {"repeat", t.repeat}});
    }
    j["history"] = list;
    if (replaying) {
      j["replay"] = recording.description;
      j["optimum"] = recording.timings.has_optimum() ? nlohmann::json(optimum) : nlohmann::json(nullptr);
      j["speed"] = result.found && recording.timings.has_optimum() ? nlohmann::json(speed) : nlohmann::json(nullptr);
      j["unrecorded"] = replay.unrecorded;
    }
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    const std::string unit = recording.unit.empty() ? "" : " " + recording.unit;
    std::printf("%d benchmarks (%d explore, %d exploit%s%s), stopped: %s\n", result.benchmarks,
                result.explore_benchmarks, result.benchmarks - result.explore_benchmarks,
                result.failed_benchmarks ? (", " + std::to_string(result.failed_benchmarks) + " failed").c_str() : "",
                result.repeats ? (", " + std::to_string(result.repeats) + " re-measurements").c_str() : "",
                search_stop_name(result.stop));
    if (result.found) {
      std::printf("best:");
      for (size_t p = 0; p < names.size(); ++p) {
        std::printf(" %s=%s", names[p].c_str(), value_text(p, result.best[p]).c_str());
      }
      std::printf("  time %.6g%s", result.best_time, unit.c_str());
      if (replaying && recording.timings.has_optimum()) {
        std::printf("  (recorded optimum %.6g: speed %.3f)", optimum, speed);
      }
      std::printf("\n");
      // The fastest configs measured, for a second choice.
      std::vector<const SearchTrial*> measured;
      for (int i = 0; i < result.trials; ++i) {
        const SearchTrial& t = history[static_cast<size_t>(i)];
        if (t.failed || t.repeat) continue;
        measured.push_back(&t);
      }
      std::stable_sort(measured.begin(), measured.end(),
                       [](const SearchTrial* a, const SearchTrial* b) { return a->time < b->time; });
      const size_t shown = std::min<size_t>(measured.size(), 5);
      std::printf("%4s  %-8s", "rank", "phase");
      for (const std::string& n : names) std::printf(" %*s", static_cast<int>(std::max<size_t>(n.size(), 4)), n.c_str());
      std::printf(" %12s\n", ("time" + unit).c_str());
      for (size_t i = 0; i < shown; ++i) {
        std::printf("%4zu  %-8s", i + 1, measured[i]->phase == SearchPhase::kExplore ? "explore" : "exploit");
        for (size_t p = 0; p < names.size(); ++p) {
          std::printf(" %*s", static_cast<int>(std::max<size_t>(names[p].size(), 4)),
                      value_text(p, measured[i]->values[p]).c_str());
        }
        std::printf(" %12.6g\n", measured[i]->time);
      }
    }
    std::printf("search overhead %.3f ms (%.1f us per benchmark), %lld proposal%s removed by the rules before benchmarking\n",
                1e3 * overhead, result.benchmarks ? 1e6 * overhead / result.benchmarks : 0.0,
                static_cast<long long>(result.skipped_invalid), result.skipped_invalid == 1 ? "" : "s");
  }
  if (!result.found && result.benchmarks == 0 && result.skipped_invalid > 0) {
    return fail(Status::error(StatusCode::kNoValidCandidate,
                              "the rules rejected every config the search drew for this problem: perhaps none passes "
                              "them (tunecast check counts the valid configs of the default problem)"));
  }
  if (!result.found) {
    return fail(Status::error(StatusCode::kNoValidCandidate, "no config ran successfully in %d benchmarks",
                              result.benchmarks));
  }
  return 0;
}

}  // namespace tunecast::cli
