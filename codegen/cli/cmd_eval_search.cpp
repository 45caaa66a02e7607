// eval-search: tuning strategies side by side on the held-out problems of a timing DB, at each
// benchmark budget: the speed each gets (recorded optimum / time found) and the benchmarks it
// spends. The strategies live in codegen/evaluation/src/search_eval.cpp; docs/search.md describes them.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli.h"
#include "tunecast/codegen/file_io.h"
#include "tunecast/codegen/dataset_split.h"
#include "tunecast/codegen/search_eval.h"
#include "tunecast/codegen/timing_db.h"

namespace tunecast::cli {
namespace {

bool ends_with_any(const std::string& path, std::initializer_list<const char*> extensions) {
  for (const char* ext : extensions) {
    const size_t n = std::strlen(ext);
    if (path.size() > n && path.compare(path.size() - n, n, ext) == 0) return true;
  }
  return false;
}

std::string shell_word(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

Status parse_budgets(const std::string& text, std::vector<int>* out) {
  std::vector<int64_t> values;
  if (!parse_param_list(text, &values) || values.empty()) {
    return Status::error(StatusCode::kInvalidArgument, "--budgets '%s' is not a comma-separated list of integers",
                         text.c_str());
  }
  for (int64_t v : values) {
    if (v < 1 || v > kMaxSearchBudget) {
      return Status::error(StatusCode::kInvalidArgument, "--budgets: %lld is outside 1..%d", static_cast<long long>(v),
                           kMaxSearchBudget);
    }
    if (std::find(out->begin(), out->end(), v) != out->end()) {
      return Status::error(StatusCode::kInvalidArgument, "--budgets: %lld is given twice", static_cast<long long>(v));
    }
    out->push_back(static_cast<int>(v));
  }
  std::sort(out->begin(), out->end());
  return Status::ok();
}

}  // namespace

int cmd_eval_search(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv,
                             {"timings", "split", "split-seed", "budgets", "plot", "solver", "limit", "seed",
                              "random-runs", "default", "search-width", "beam", "explore", "max-radius", "max-moved",
                              "recheck", "arch", "precision", "strategies", "configs", "problem", "prior"},
                             {"json"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast eval-search MODEL.tcm|KERNEL.tcr --timings DB [--split test|val|train|all] [--split-seed N]\n"
        "                            [--budgets 1,2,5,10,20,50,100] [--json] [--plot FILE.png]\n"
        "                            [--solver NAME] [--limit N] [--seed S] [--random-runs R]\n"
        "                            [--default V1,V2,...] [--search-width W] [--beam W] [--explore E]\n"
        "                            [--max-radius R] [--max-moved M] [--recheck RUNS] [--arch A]\n"
        "                            [--precision P] [--strategies S1,S2,...] [--configs FILE]\n"
        "                            [--prior TIMINGS,...] [--problem FIELDS]\n\n"
        "Replays tuning strategies on the problems of a timing DB (recorded exhaustive measurements,\n"
        "docs/search.md) and reports, at each budget B of benchmarks, the geometric mean and the 10th\n"
        "percentile over problems of the speed found (recorded optimum / time of the best config\n"
        "found, <= 1) and the mean benchmarks spent. Strategies:\n"
        "  predictor_top1    the predictor's first candidate, no benchmark (the same at every B)\n"
        "  predictor_top_b   the best of its first B distinct candidates (beam max(B, W))\n"
        "  predictor_search  tunecast::search: the beam's best candidates, then coordinate descent\n"
        "  default_search    coordinate descent from the kernel's default config over the recorded\n"
        "                    values, without the model and its rules (Droplet Search as published)\n"
        "  free_search       tunecast::search without the predictor over the space (the definition's\n"
        "                    domains when the model carries them, else the recorded values): a\n"
        "                    space-filling start (or --prior's best configs), then a Gaussian process's\n"
        "                    expected improvement, the rules checked; mean of --random-runs seeds\n"
        "  config_list       the kernel's own autotune list (--configs), in its order, truncated at B\n"
        "  random            B uniform valid configs, mean of --random-runs runs (default 10)\n"
        "  exhaustive        every valid config in one seeded random order, truncated at B\n"
        "                    (MIOpen's GenericSearch)\n"
        "With a kernel definition (KERNEL.tcr) instead of a model, the predictor strategies are left\n"
        "out. A timing DB keyed by a definition (docs/kernels.md) splits its problems by their\n"
        "canonical text without the architecture, as the trainer does.\n"
        "A strategy that finds nothing that runs is charged the problem's slowest recorded time.\n"
        "Valid: passing the model's constraints; invalid_proposed counts benchmarked configs that\n"
        "break them (0 for every strategy that uses the model). The search overhead (time spent in\n"
        "the search, benchmarks excluded: replayed benchmarks cost nothing) is reported per benchmark.\n\n"
        "  --split       held-out problems by the trainer's split (docs/training.md; default test);\n"
        "                --split-seed defaults to the model's metadata split_seed, else 0\n"
        "  --default     the kernel's default config in the model's parameter order (default: the\n"
        "                DB's meta default_config); without one default_search is left out\n"
        "  --search-width W  top-1 and top-B beams (default: the model's search_width, else 1)\n"
        "  --beam, --explore, --max-radius, --max-moved, --recheck: the search's options (tune --help)\n"
        "  --seed S      random and exhaustive orders, and free_search's seeds (default 0): run r\n"
        "                of problem i searches with seed S * 1099511628211 + i * 11400714819323198485\n"
        "                + r (mod 2^64), so with --seed 0 run r of the first problem is tune --seed r\n"
        "  --precision P only the problems of that data type (the dtype field's value)\n"
        "  --configs F   one config per line (the model's parameter order): the config_list strategy\n"
        "  --prior T,... recordings of the same kernel on other GPUs or problems (timing DBs, Kernel\n"
        "                Tuner files): free_search starts from their best configs (tune --help)\n"
        "  --timings may also be a Kernel Tuner T4 or cache file (.json, .json.gz: one problem, with\n"
        "                --problem FIELDS unless the definition's fields all have defaults)\n"
        "  --limit N     the first N problems only\n"
        "  --strategies  only these strategies, comma-separated (default: all)\n"
        "  --plot F      also writes F.json and draws speed against budget with /usr/bin/python3\n"
        "                tools/plot_eval_search.py (needs python3-matplotlib)\n"
        "--json prints {\"n\", \"budgets\", \"strategies\": {NAME: {\"B\": {\"geomean_speed\", \"p10_speed\",\n"
        "\"mean_benchmarks\", \"invalid_proposed\", \"failed_benchmarks\", \"none_found\",\n"
        "\"overhead_us_per_benchmark\"}}}, ...}; by default a table.\n");
    return 0;
  }
  if (!status) return usage_error("eval-search", status.message());
  if (args.positional().size() != 1 || !args.has("timings")) {
    return usage_error("eval-search", "expected MODEL and --timings DB");
  }
  std::string split = args.get("split", "test");
  if (split != "all" && split != "train" && split != "val" && split != "test") {
    return usage_error("eval-search", "--split must be all, train, val or test");
  }
  codegen::SearchEvalOptions options;
  status = parse_budgets(args.get("budgets", "1,2,5,10,20,50,100"), &options.budgets);
  int limit = 0, recheck = 0;
  uint64_t seed = 0;
  if (status) status = args.get_int("limit", 0, &limit);
  if (status) status = args.get_seed("seed", &seed);
  if (status) status = args.get_int("random-runs", 10, &options.random_runs);
  if (status) status = args.get_int("max-radius", 0, &options.search.max_radius);
  if (status) status = args.get_int("max-moved", options.search.max_moved, &options.search.max_moved);
  if (status) status = args.get_int("recheck", 0, &recheck);
  if (status && limit < 0) status = Status::error(StatusCode::kInvalidArgument, "--limit must be 0 (all) or more");
  if (status && options.random_runs < 1) status = Status::error(StatusCode::kInvalidArgument, "--random-runs must be at least 1");
  if (!status) return usage_error("eval-search", status.message());
  options.seed = seed;
  options.search.recheck_runs = recheck;
  if (args.has("plot")) {
    if (!ends_with_any(args.get("plot"), {".png", ".svg", ".pdf", ".PNG", ".SVG", ".PDF"})) {
      return usage_error("eval-search", "--plot " + args.get("plot") + ": the plot's name must end with .png, .svg or .pdf");
    }
    status = codegen::check_output_path(args.get("plot"));
    if (!status) return fail(status);
  }
  LoadedModel loaded;
  status = load_model_or_definition(args.positional()[0], &loaded);
  if (!status) return fail(status);
  const Model& model = loaded.model;
  const ProblemSchema schema = model.problem_schema();
  options.with_predictor = model.has_predictor();
  if (model.has_predictor() && (!model.is_seq2seq() || model.root()->encoding() == nullptr)) {
    return fail(Status::error(StatusCode::kInvalidArgument,
                              "%s needs a feature encoding to be evaluated from recorded problems",
                              args.positional()[0].c_str()));
  }
  // --precision and --arch: the problem's dtype and architecture fields (the convolution's, or a
  // definition's field named dtype and its architecture field).
  int dtype_field = -1, arch_field = -1;
  schema.find_field("dtype", &dtype_field);
  for (int f = 0; f < schema.field_count(); ++f) {
    if (schema.field_kind(f) == FieldKind::kArchitecture && arch_field < 0) arch_field = f;
  }
  std::optional<int64_t> precision;
  if (args.has("precision")) {
    int64_t value = 0;
    if (dtype_field < 0 || !schema.find_symbol(dtype_field, args.get("precision"), &value)) {
      return usage_error("eval-search", "unknown precision '" + args.get("precision") + "' (a value of the problem's dtype field)");
    }
    precision = value;
  }
  std::optional<int64_t> arch;
  if (args.has("arch")) {
    int64_t value = 0;
    if (arch_field < 0 || !schema.find_symbol(arch_field, args.get("arch"), &value)) {
      return usage_error("eval-search", "unknown arch '" + args.get("arch") + "'");
    }
    arch = value;
  }
  int width = 1;
  if (model.has_predictor()) status = model_search_width(model, &width);
  if (!status) return fail(status);
  options.search_width = width;
  status = args.get_int("search-width", width, &options.search_width);
  if (status) status = check_beam_width("search width", options.search_width);
  options.search.beam_width = std::max(32, options.search_width);
  if (status) status = args.get_int("beam", options.search.beam_width, &options.search.beam_width);
  if (status) status = check_beam_width("beam width", options.search.beam_width);
  if (status) status = args.get_int("explore", -1, &options.search.explore);
  if (status && args.has("explore") && (options.search.explore < 1 || options.search.explore > options.search.beam_width)) {
    status = Status::error(StatusCode::kInvalidArgument, "--explore %d is outside 1..%d (the beam width)",
                           options.search.explore, options.search.beam_width);
  }
  if (!status) return usage_error("eval-search", status.message());
  if (args.has("strategies")) {
    status = parse_list(args.get("strategies"), "--strategies", &options.strategies);
    if (!status) return usage_error("eval-search", status.message());
    const std::vector<std::string>& known = codegen::search_strategy_names();
    for (const std::string& name : options.strategies) {
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string all;
        for (const std::string& k : known) all += (all.empty() ? "" : ", ") + k;
        return usage_error("eval-search", "--strategies: unknown strategy '" + name + "' (" + all + ")");
      }
    }
  }
  int split_seed = 0;
  if (const char* text = model.metadata("split_seed")) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (end != text && *end == '\0' && value >= INT_MIN && value <= INT_MAX) split_seed = static_cast<int>(value);
  }
  status = args.get_int("split-seed", split_seed, &split_seed);
  if (!status) return usage_error("eval-search", status.message());

  // A Kernel Tuner file (one problem, e.g. a benchmark hub cache) is read through a temporary
  // timing DB of the definition; every one of its (one) problems is evaluated.
  std::string timings_path = args.get("timings");
  struct TempFile {
    std::string path;
    ~TempFile() {
      if (!path.empty()) std::remove(path.c_str());
    }
  } converted;
  if (!codegen::is_timing_db_file(timings_path)) {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/tunecast-eval-XXXXXX";
    const int fd = mkstemp(pattern.data());
    if (fd < 0) return fail(Status::error(StatusCode::kIoError, "cannot create a temporary file in %s", pattern.c_str()));
    close(fd);
    std::remove(pattern.c_str());  // the recorder creates it
    converted.path = pattern;
    status = import_kernel_tuner_file(model, timings_path, args.get("problem"), converted.path);
    if (!status) return fail(status);
    timings_path = converted.path;
    if (split != "all") {
      std::fprintf(stderr, "eval-search: note: %s holds one problem: it is evaluated whatever its split (--split all)\n",
                   args.get("timings").c_str());
      split = "all";
    }
  }
  codegen::TimingDb db;
  status = codegen::TimingDb::open(timings_path, args.get("solver"), &db, &schema);
  if (!status) return fail(status);
  std::vector<std::string> names;
  for (int p = 0; p < model.parameter_count(); ++p) names.push_back(model.parameter_name(p));
  std::vector<int> positions;
  status = codegen::map_parameters(names, db.parameter_names(), &positions);
  if (!status) return fail(Status::error(status.code(), "--timings %s: %s", args.get("timings").c_str(), status.message()));
  if (const char* solver = model.metadata("solver"); solver != nullptr && db.solver() != solver) {
    std::fprintf(stderr, "eval-search: note: the model predicts %s, the timings are %s's\n", solver, db.solver().c_str());
  }
  // The default config, in the model's order.
  if (args.has("default")) {
    if (!parse_param_list(args.get("default"), &options.default_config) ||
        options.default_config.size() != names.size()) {
      return usage_error("eval-search", "--default needs " + std::to_string(names.size()) + " comma-separated integers (" +
                                            [&] { std::string t; for (const auto& n : names) t += (t.empty() ? "" : ",") + n; return t; }() + ")");
    }
  } else if (const std::optional<std::string> text = db.meta("default_config")) {
    std::vector<int64_t> recorded;
    if (!parse_param_list(*text, &recorded) || recorded.size() != names.size()) {
      return fail(Status::error(StatusCode::kInvalidArgument, "--timings %s: meta default_config '%s' is not %zu integers",
                                args.get("timings").c_str(), text->c_str(), names.size()));
    }
    options.default_config.resize(names.size());
    for (size_t p = 0; p < names.size(); ++p) options.default_config[p] = recorded[positions.empty() ? p : positions[p]];
  } else if (options.strategies.empty() ||
             std::find(options.strategies.begin(), options.strategies.end(), "default_search") != options.strategies.end()) {
    std::fprintf(stderr, "eval-search: note: no default config (--default, or the DB's meta default_config): "
                         "default_search left out\n");
  }

  // The kernel's own autotune list (--configs): one config per line, the model's parameter order.
  if (args.has("configs")) {
    status = for_each_list_line(args.get("configs"), [&](int number, const std::string& line) -> Status {
      std::vector<int64_t> config;
      if (!parse_param_list(line, &config) || config.size() != names.size()) {
        return Status::error(StatusCode::kInvalidArgument, "%s:%d: expected %zu comma-separated integers",
                             args.get("configs").c_str(), number, names.size());
      }
      options.config_list.push_back(std::move(config));
      return Status::ok();
    });
    if (!status) return usage_error("eval-search", status.message());
    if (options.config_list.empty()) return usage_error("eval-search", "--configs " + args.get("configs") + " lists no config");
  }

  if (args.has("prior")) {
    status = read_prior_configs(model, args.get("prior"), kPriorConfigs, &options.prior_configs);
    if (!status) return fail(status);
  }

  // The held-out problems: a definition's by their canonical text without the architecture.
  auto split_of = [&](const codegen::TimingProblem& p) {
    if (!db.keyed_by_definition()) return codegen::split_of(p.problem, split_seed);
    std::string descriptor;
    for (int f = 0; f < schema.field_count(); ++f) {
      if (f == arch_field) continue;
      const char* symbol = schema.field_kind(f) == FieldKind::kInteger ? nullptr : schema.symbol_name(f, p.problem.get(f));
      descriptor += std::string(descriptor.empty() ? "" : ",") + schema.field_name(f) + "=" +
                    (symbol ? symbol : std::to_string(p.problem.get(f)));
    }
    return codegen::split_of_descriptor(descriptor, split_seed);
  };
  std::vector<const codegen::TimingProblem*> chosen;
  for (const codegen::TimingProblem& p : db.problems()) {
    if (split != "all" && split != codegen::split_name(split_of(p))) continue;
    if (precision && p.problem.get(dtype_field) != *precision) continue;
    chosen.push_back(&p);
    if (limit > 0 && static_cast<int>(chosen.size()) >= limit) break;
  }
  if (chosen.empty()) {
    return fail(Status::error(StatusCode::kNotFound, "no %s problems in %s (split seed %d)%s", split.c_str(),
                              args.get("timings").c_str(), split_seed,
                              split != "all" ? ": --split all evaluates every problem it holds" : ""));
  }
  codegen::SearchEvaluation evaluation(options);
  if (evaluation.cells().empty()) {  // every strategy asked for is left out: say why, not an empty table
    return usage_error("eval-search",
                       "none of --strategies can run here (the predictor strategies need a trained model, "
                       "default_search --default or the DB's meta default_config, config_list --configs)");
  }
  size_t without_optimum = 0;
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  for (size_t i = 0; i < chosen.size(); ++i) {
    codegen::SearchCase c;
    c.problem = chosen[i]->problem;
    if (arch) c.problem.set(arch_field, *arch);
    c.positions = positions;
    status = db.timings(chosen[i]->config_id, &c.timings);
    if (!status) return fail(status);
    if (c.timings.size() > 0 && c.timings.configs()[0].size() != names.size()) {
      return fail(Status::error(StatusCode::kInvalidArgument,
                                "--timings %s: config %lld's recorded configs have %zu values, the model has %zu parameters",
                                args.get("timings").c_str(), static_cast<long long>(chosen[i]->config_id),
                                c.timings.configs()[0].size(), names.size()));
    }
    if (!c.timings.has_optimum()) {
      ++without_optimum;
      continue;
    }
    status = evaluation.add(model, c, i);
    if (!status) {
      return fail(Status::error(status.code(), "%s (the problem of config %lld)", status.message(),
                                static_cast<long long>(chosen[i]->config_id)));
    }
    const auto now = std::chrono::steady_clock::now();
    if (!args.has("json") && now - last >= std::chrono::seconds(2)) {
      last = now;
      std::fprintf(stderr, "eval-search: %zu / %zu problems\n", i + 1, chosen.size());
    }
  }
  if (without_optimum > 0) {
    std::fprintf(stderr, "eval-search: note: %zu problem%s with no config that ran left out\n", without_optimum,
                 without_optimum == 1 ? "" : "s");
  }
  if (evaluation.problems() == 0) {
    return fail(Status::error(StatusCode::kNotFound, "no %s problem of %s has a config that ran", split.c_str(),
                              args.get("timings").c_str()));
  }
  if (evaluation.unrecorded() > 0) {
    std::fprintf(stderr, "eval-search: note: %lld proposed configs were not in the recording (answered as fail)\n",
                 static_cast<long long>(evaluation.unrecorded()));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  nlohmann::json j;
  j["model"] = args.positional()[0];
  j["timings"] = args.get("timings");
  j["solver"] = db.solver();
  j["split"] = split;
  j["split_seed"] = split_seed;
  j["n"] = evaluation.problems();
  j["budgets"] = options.budgets;
  j["search_width"] = options.search_width;
  j["beam"] = options.search.beam_width;
  j["explore"] = options.search.explore;
  j["max_moved"] = options.search.max_moved;
  j["random_runs"] = options.random_runs;
  j["seed"] = seed;
  j["default_config"] = options.default_config.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.default_config);
  j["unrecorded"] = evaluation.unrecorded();
  j["seconds"] = seconds;
  if (const std::optional<std::string> unit = db.meta("time_unit")) j["unit"] = *unit;
  nlohmann::json strategies = nlohmann::json::object();
  int64_t constrained_invalid = 0;
  for (const std::string& name : codegen::search_strategy_names()) {
    const auto it = evaluation.cells().find(name);
    if (it == evaluation.cells().end()) continue;
    nlohmann::json per_budget = nlohmann::json::object();
    for (size_t b = 0; b < options.budgets.size(); ++b) {
      const codegen::StrategyCell& cell = it->second[b];
      nlohmann::json entry = {{"geomean_speed", cell.geomean_speed()},
                              {"p10_speed", cell.p10_speed()},
                              {"mean_benchmarks", cell.mean_benchmarks()},
                              {"invalid_proposed", cell.invalid},
                              {"failed_benchmarks", cell.failed},
                              {"none_found", cell.none_found}};
      if (cell.overhead_benchmarks > 0) entry["overhead_us_per_benchmark"] = cell.overhead_us_per_benchmark();
      per_budget[std::to_string(options.budgets[b])] = entry;
      // default_search and config_list do not consult the rules (a public list may hold configs
      // they reject for a problem: each is benchmarked and fails, as for its users).
      if (name != codegen::kDefaultSearch && name != codegen::kConfigList) constrained_invalid += cell.invalid;
    }
    strategies[name] = per_budget;
  }
  j["strategies"] = strategies;
  j["invalid_proposed_constrained"] = constrained_invalid;
  if (constrained_invalid > 0) {
    std::fprintf(stderr, "eval-search: warning: the strategies that use the model proposed %lld configs that break its "
                         "constraints (expected 0)\n", static_cast<long long>(constrained_invalid));
  }

  if (args.has("plot")) {
    const std::string json_path = args.get("plot") + ".json";
    status = codegen::write_file_atomic(json_path, json_text(j, 2));
    if (!status) return fail(status);
    const std::string command = "/usr/bin/python3 " + shell_word(tool_script("plot_eval_search.py")) + " " +
                                shell_word(json_path) + " " + shell_word(args.get("plot"));
    if (std::system(command.c_str()) != 0) {
      return fail(Status::error(StatusCode::kIoError,
                                "plotting failed (the results are in %s; plot_eval_search.py said why above): %s",
                                json_path.c_str(), command.c_str()));
    }
  }
  if (args.has("json")) {
    std::printf("%s\n", json_text(j, 2).c_str());
    return 0;
  }

  std::printf("%s on %s (%s), split %s: %d problems; speed = recorded optimum / time found\n",
              args.positional()[0].c_str(), args.get("timings").c_str(), db.solver().c_str(), split.c_str(),
              evaluation.problems());
  auto table = [&](const char* title, auto value) {
    std::printf("%-18s", title);
    for (int b : options.budgets) std::printf(" %7d", b);
    std::printf("\n");
    for (const std::string& name : codegen::search_strategy_names()) {
      const auto it = evaluation.cells().find(name);
      if (it == evaluation.cells().end()) continue;
      std::printf("  %-16s", name.c_str());
      for (size_t b = 0; b < options.budgets.size(); ++b) std::printf(" %7s", value(it->second[b]).c_str());
      std::printf("\n");
    }
  };
  auto fixed = [](double v, int digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return std::string(text);
  };
  table("geomean speed", [&](const codegen::StrategyCell& c) { return fixed(c.geomean_speed(), 3); });
  table("p10 speed", [&](const codegen::StrategyCell& c) { return fixed(c.p10_speed(), 3); });
  table("mean benchmarks", [&](const codegen::StrategyCell& c) { return fixed(c.mean_benchmarks(), 1); });
  table("overhead us/bench", [&](const codegen::StrategyCell& c) {
    return c.overhead_benchmarks > 0 ? fixed(c.overhead_us_per_benchmark(), 1) : std::string("-");
  });
  if (options.with_predictor) {  // a definition's strategies propose nothing its rules reject
    std::printf("invalid configs proposed by the strategies that use the model: %lld\n",
                static_cast<long long>(constrained_invalid));
  }
  if (args.has("plot")) {  // status, not a result: stderr
    std::fprintf(stderr, "eval-search: wrote %s (its figures: %s.json)\n", args.get("plot").c_str(), args.get("plot").c_str());
  }
  return 0;
}

}  // namespace tunecast::cli
