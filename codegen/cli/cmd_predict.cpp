// predict: one problem in, the k best valid parameter vectors out.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/codegen/problem_forms.h"
#include "tunecast/predict.h"

namespace tunecast::cli {
namespace {

// "0.5, 1, -2e3" (or separated by white space, as pasted from a file): finite numbers. An empty
// item between commas is an error (a doubled comma is more likely a typo than a value to skip); a
// trailing comma is not.
Status parse_features(const std::string& text, std::vector<float>* out) {
  out->clear();
  auto is_separator = [](char c) { return c == ',' || std::isspace(static_cast<unsigned char>(c)); };
  bool after_comma = true;  // at the start, a comma also leaves an empty first item
  for (size_t i = 0; i < text.size();) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text[i] == ',') {
      if (after_comma) {
        return Status::error(StatusCode::kInvalidArgument, "--features: value %zu is empty", out->size() + 1);
      }
      after_comma = true;
      ++i;
    } else {
      size_t end = i;
      while (end < text.size() && !is_separator(text[end])) ++end;
      const std::string item = text.substr(i, end - i);
      char* stop = nullptr;
      const float v = std::strtof(item.c_str(), &stop);
      if (*stop != '\0' || !std::isfinite(v)) {
        return Status::error(StatusCode::kInvalidArgument, "--features: value %zu ('%.40s%s') is not a finite number",
                             out->size() + 1, item.c_str(), item.size() > 40 ? "..." : "");
      }
      out->push_back(v);
      after_comma = false;
      i = end;
    }
  }
  return Status::ok();
}

}  // namespace

int cmd_predict(const std::vector<std::string>& argv) {
  Args args;
  Status status =
      args.parse(argv, {"problem", "features", "beam", "search-width", "among"}, {"greedy", "no-constraints", "json"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast predict MODEL.tcm (--problem FIELDS | --features VALUES)\n"
        "                        [--greedy | --beam K [--search-width W]] [--among FILE] [--no-constraints]\n"
        "                        [--json]\n\n"
        "Runs the encoder once and a constrained beam search over the decoder, printing the K\n"
        "best parameter vectors that satisfy every constraint compiled into the model, best\n"
        "first, with their log-probability scores.\n\n"
        "  --problem   the problem, in any of MIOpen's forms (detected):\n"
        "              fields: \"dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906\"\n"
        "                (pad/stride/dilation/group/layout default to 0/1/1/1/NCHW);\n"
        "              a MIOpenDriver command line as MIOPEN_ENABLE_LOGGING_CMD prints it:\n"
        "                \"MIOpenDriver conv -n 16 -c 64 -H 28 -W 28 -k 128 -y 1 -x 1 -p 0 -q 0 -u 1\n"
        "                -v 1 -l 1 -j 1 -m conv -g 1 -F 1 arch=gfx906\" (convfp16, convbfp16; -F 1, 2\n"
        "                or 4: one direction);\n"
        "              a perf-DB key: \"64-28-28-1x1-128-28-28-16-0x0-1x1-1x1-0-NCHW-FP32-F,arch=gfx906\";\n"
        "              a network config: \"64x28x28x1x1x128x28x28x16xNCHWxFP32x0x0x1x1x1x1x1xF\".\n"
        "              A driver line, key or config is followed by name=value items for what it\n"
        "              lacks (arch, which the shipped models read). Which tensors c and k name:\n"
        "              for dir=F the input's and output's channels (c = C, k = K), h x w the input;\n"
        "              for dir=B and W, as in MIOpen's perf DB, dy's: c = the forward K, k = the\n"
        "              forward C, h x w = the forward output. The driver's -c/-k/-H/-W are always the\n"
        "              forward convolution's and are converted; the problem read is shown on stderr.\n"
        "  --features  the encoder input itself, comma-separated row-major floats (for MIOpen's\n"
        "              KTN: the 8x8 diagonal matrix); constraints need --problem as well\n"
        "  --greedy    one candidate by MIOpen's constrained greedy procedure (beam width 1)\n"
        "  --beam K    K candidates (1..%d, default 1), the best of a beam of max(K, W)\n"
        "  --search-width W  the beam width for few candidates (default: the model's metadata\n"
        "              search_width, else 1); e.g. --beam 1 --search-width 10 prints the best of\n"
        "              a 10-wide beam\n"
        "  --among FILE  only the configs FILE lists (one per line, the model's parameter order,\n"
        "              comma-separated), best first by the model's score; the beam is widened to\n"
        "              the list (at most 256), so a list that fits is ranked exactly. Configs the\n"
        "              rules reject are left out. For pruning an autotune list (docs/triton.md)\n"
        "  --no-constraints  ignore the model's constraints\n"
        "  --json      one JSON object: candidates, out_of_range_fields, applicable (null\n"
        "              without --problem), not_applicable (the failing condition, when one\n"
        "              fails), beam_pruned, ...\n\n"
        "Warnings (stderr, exit 0): a problem field outside the range the model learned from (the\n"
        "value and the range: an extrapolation), and a problem the kernel does not apply to (the\n"
        "first of its rules' `applies` conditions that fails); the candidates are printed all the\n"
        "same. Fewer than K candidates: a last line says whether the search was exhaustive (JSON\n"
        "beam_pruned false: no other vector passes) or hypotheses died at later positions in\n"
        "place of ones the beam dropped (a wider --search-width may find more).\n"
        "Exit status: 0 ok, 2 bad arguments, 3 no valid candidate, 1 other errors.\n",
        kMaxBeamWidth);
    return 0;
  }
  if (!status) return usage_error("predict", status.message());
  if (args.positional().size() != 1) return usage_error("predict", "expected one MODEL");
  if (!args.has("problem") && !args.has("features")) {
    return usage_error("predict", "give --problem or --features");
  }
  if (args.has("greedy") && (args.has("beam") || args.has("search-width"))) {
    return usage_error("predict", "--greedy excludes --beam and --search-width");
  }
  int count = 1;  // candidates to print
  status = args.get_int("beam", 1, &count);
  if (status) status = check_beam_width("beam width", count);
  if (!status) return usage_error("predict", status.message());

  LoadedModel loaded;
  status = load_model_file(args.positional()[0], &loaded);
  if (!status) return fail(status);
  const Model& model = loaded.model;
  if (!model.is_seq2seq()) {
    return fail(Status::error(StatusCode::kInvalidArgument,
                              "%s is not a sequence-to-sequence predictor (see tunecast inspect)",
                              args.positional()[0].c_str()));
  }
  int search_width = 1;  // --greedy: MIOpen's procedure whatever the model recommends
  if (!args.has("greedy")) {
    status = model_search_width(model, &search_width);
    if (!status) return fail(status);
    status = args.get_int("search-width", search_width, &search_width);
    if (status) status = check_beam_width("search width", search_width);
    if (!status) return usage_error("predict", status.message());
  }
  PredictOptions options;
  options.beam_width = std::max(count, search_width);
  options.use_model_constraints = !args.has("no-constraints");

  // --among: only prefixes of the list's configs survive, so a beam as wide as the list (up to
  // kMaxBeamWidth) holds every one that passes the rules and ranks them by the model's score.
  std::vector<std::vector<int64_t>> among;
  int among_lines = 0;
  if (args.has("among")) {
    status = for_each_list_line(args.get("among"), [&](int number, const std::string& line) -> Status {
      ++among_lines;
      std::vector<int64_t> config;
      if (!parse_param_list(line, &config) || config.size() != static_cast<size_t>(model.parameter_count())) {
        return Status::error(StatusCode::kInvalidArgument, "%s:%d: expected %d comma-separated integers (the model's "
                             "parameter order)", args.get("among").c_str(), number, model.parameter_count());
      }
      // A value the model never emits at its position: the config cannot come out of the beam,
      // whatever the rules say. Said, not dropped silently.
      for (int p = 0; p < model.parameter_count(); ++p) {
        auto emits = [&](int t) { return model.token_allowed(p, t) && !model.is_end_token(t); };
        bool emitted = false;
        for (int t = 0; t < model.token_count() && !emitted; ++t) emitted = emits(t) && model.token_value(t) == config[p];
        if (!emitted) {
          std::string values;
          for (int t = 0; t < model.token_count(); ++t) {
            if (emits(t)) values += (values.empty() ? "" : ", ") + std::to_string(model.token_value(t));
          }
          std::fprintf(stderr, "predict: note: %s:%d: %lld is not a value the model emits for %s (%s): left out\n",
                       args.get("among").c_str(), number, static_cast<long long>(config[p]), model.parameter_name(p),
                       values.c_str());
          return Status::ok();
        }
      }
      among.push_back(std::move(config));
      return Status::ok();
    });
    if (status && among_lines == 0) {
      status = Status::error(StatusCode::kInvalidArgument, "--among %s lists no config", args.get("among").c_str());
    }
    if (!status) return status.code() == StatusCode::kInvalidArgument ? usage_error("predict", status.message()) : fail(status);
    if (among.empty()) {  // as when the rules reject them all: no candidate (exit 3)
      return fail(Status::error(StatusCode::kNoValidCandidate,
                                "no valid candidate: none of the %d configs of --among %s is one the model can emit",
                                among_lines, args.get("among").c_str()));
    }
    options.beam_width = std::max(options.beam_width, static_cast<int>(std::min<size_t>(among.size(), kMaxBeamWidth)));
  }
  auto among_check = [&](const Problem*, int position, const int64_t* values) {
    int step = 0;  // the decode step that set `position`: the positions set are those of steps 0..step
    while (step + 1 < model.parameter_count() && model.decode_position(step) != position) ++step;
    for (const std::vector<int64_t>& config : among) {
      bool prefix = true;
      for (int s = 0; s <= step && prefix; ++s) prefix = config[model.decode_position(s)] == values[model.decode_position(s)];
      if (prefix) return true;
    }
    return false;
  };
  if (!among.empty()) options.validator = Validator::from(among_check);

  Problem problem;
  const bool have_problem = args.has("problem");
  if (have_problem) {
    codegen::ProblemForm form = codegen::ProblemForm::kFields;
    const bool convolution = model.problem_schema().builtin();
    status = convolution ? codegen::parse_problem_any(args.get("problem"), &problem, &form)
                         : parse_model_problem(model, args.get("problem"), &problem);
    if (!status) return fail(status);
    if (!convolution) {
      // A kernel definition's problem: nothing of MIOpen's conventions to restate.
    } else if (form != codegen::ProblemForm::kFields) {
      char text[512];
      format_problem(problem, text, sizeof text);
      std::fprintf(stderr, "tunecast: note: the %s reads as --problem \"%s\"\n", codegen::problem_form_name(form),
                   text);
    } else if (problem.get(ProblemField::kDir) != kForward) {
      // Fields of a backward problem are the perf DB's, not the driver's: say so every time, since
      // the driver's order is a silent wrong answer (issue 24).
      std::fprintf(stderr,
                   "tunecast: note: dir=%c fields are the perf DB's: c = the forward K, k = the forward C, h x w ="
                   " the forward output (MIOpenDriver lines are converted: --problem \"MIOpenDriver conv ...\")\n",
                   problem.get(ProblemField::kDir) == kBackwardData ? 'B' : 'W');
    }
  }
  std::vector<unsigned char> scratch(model.scratch_bytes(options.beam_width));
  std::vector<Candidate> candidates(count);
  PredictInfo info;
  if (args.has("features")) {
    std::vector<float> features;
    status = parse_features(args.get("features"), &features);
    if (status) {
      status = predict_from_features(model, features.data(), features.size(),
                                     have_problem ? &problem : nullptr, options, scratch.data(),
                                     scratch.size(), candidates.data(), count, &info);
    }
    // The features are given, but a --problem still has training ranges and applicability to check
    // (also when no candidate is valid: they are often why).
    if ((status || status.code() == StatusCode::kNoValidCandidate) && have_problem) {
      check_applicability(model, problem, &info.not_applicable);
      if (const schema::Encoding* enc = model.root()->encoding()) {
        std::vector<float> encoded(size_t{enc->rows()} * enc->cols());
        (void)encode_problem(model, problem, encoded.data(), encoded.size(), &info.out_of_range_fields);
      }
    }
  } else {
    status = predict(model, problem, options, scratch.data(), scratch.size(), candidates.data(),
                     count, &info);
  }
  // No valid candidate is an answer too: the notes on the problem (often the reason) and the JSON
  // object still come, before the error and its exit status.
  const bool no_candidate = !status && status.code() == StatusCode::kNoValidCandidate;
  if (!status && !no_candidate) return fail(status);
  if (no_candidate) info.candidates = 0;

  const bool constrained = options.use_model_constraints && have_problem &&
                           model.root()->constraints() && model.root()->constraints()->size() > 0;
  if (args.has("json")) {
    nlohmann::json j;
    j["model"] = args.positional()[0];
    j["beam"] = count;
    j["search_width"] = options.beam_width;
    j["constrained"] = constrained;
    std::vector<std::string> names;
    for (int p = 0; p < model.parameter_count(); ++p) names.push_back(model.parameter_name(p));
    j["parameters"] = names;
    nlohmann::json list = nlohmann::json::array();
    for (int i = 0; i < info.candidates; ++i) {
      std::vector<int64_t> values(candidates[i].values, candidates[i].values + candidates[i].length);
      nlohmann::json entry = {{"score", candidates[i].score}, {"values", values}};
      if (model.token_label(0) != nullptr) {
        std::vector<std::string> labels;
        for (int p = 0; p < candidates[i].length; ++p) labels.push_back(model.token_label(candidates[i].tokens[p]));
        entry["labels"] = labels;
      }
      list.push_back(entry);
    }
    j["candidates"] = list;
    j["rejected_by_constraints"] = info.rejected_by_constraints;
    j["beam_pruned"] = info.beam_pruned;
    j["duplicates_merged"] = info.duplicates_merged;
    j["out_of_range_fields"] = field_names(info.out_of_range_fields, model.problem_schema());
    j["applicable"] = have_problem ? nlohmann::json(info.not_applicable < 0) : nlohmann::json(nullptr);
    if (info.not_applicable >= 0) j["not_applicable"] = applicability_text(model, info.not_applicable);
    if (no_candidate) j["error"] = status.message();
    std::printf("%s\n", json_text(j, 2).c_str());
    return no_candidate ? fail(status) : 0;
  }
  for (const std::string& note : out_of_range_notes(model, problem, info.out_of_range_fields)) {
    std::fprintf(stderr,
                 "tunecast: warning: problem field %s: outside what the model learned from; the "
                 "prediction is an extrapolation\n",
                 note.c_str());
  }
  if (info.not_applicable >= 0) {
    std::fprintf(stderr, "tunecast: warning: %s (the kernel's `applies` rules: it does not run there)%s\n",
                 not_applicable_note(model, info.not_applicable).c_str(),
                 constrained && !no_candidate ? "; the candidates still meet its validity rules" : "");
  }
  if (no_candidate) return fail(status);
  std::printf("%d candidate%s (beam %d%s, %s)\n", info.candidates, info.candidates == 1 ? "" : "s",
              options.beam_width,
              options.beam_width > count
                  ? (!among.empty() ? ", as wide as --among's list" : args.has("search-width") ? ", --search-width" : ", the model's search_width")
                  : "",
              constrained ? "constrained"
                          : (have_problem ? "constraints off" : "no --problem: constraints not checked"));
  std::printf("%4s %10s", "rank", "score");
  for (int p = 0; p < model.parameter_count(); ++p) std::printf(" %s", model.parameter_name(p));
  std::printf("\n");
  for (int i = 0; i < info.candidates; ++i) {
    std::printf("%4d %10.4f", i + 1, static_cast<double>(candidates[i].score));
    for (int p = 0; p < candidates[i].length; ++p) {
      const int width = static_cast<int>(std::string(model.parameter_name(p)).size());
      const char* label = model.token_label(candidates[i].tokens[p]);
      if (label != nullptr) {
        std::printf(" %*s", width, label);
      } else {
        std::printf(" %*lld", width, static_cast<long long>(candidates[i].values[p]));
      }
    }
    std::printf("\n");
  }
  if (constrained) {
    std::printf("constraints removed %lld expansions\n",
                static_cast<long long>(info.rejected_by_constraints));
  }
  if (info.duplicates_merged > 0) {
    std::printf("%d hypothes%s decoded to a vector already listed (tokens with equal values): merged\n",
                info.duplicates_merged, info.duplicates_merged == 1 ? "is" : "es");
  }
  if (info.candidates < count) {
    // Fewer than asked: either no other vector passes (the beam never filled), or hypotheses the
    // beam kept died at later positions in place of ones it dropped.
    if (!info.beam_pruned) {
      std::printf("%d of %d: the search was exhaustive, these are all the vectors the model can emit%s\n",
                  info.candidates, count, constrained ? " that pass the constraints" : "");
    } else {
      std::printf("%d of %d: the beam's other hypotheses were rejected at later positions; %s\n",
                  info.candidates, count,
                  options.beam_width < kMaxBeamWidth ? "a wider --search-width may find more"
                                                     : "the search is at its widest");
    }
  }
  return 0;
}

}  // namespace tunecast::cli
