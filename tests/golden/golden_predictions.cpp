// Golden predictions: the KTN and every shipped predictor over a fixed set of problems, greedy and
// beam 10, checked against tests/golden/predictions.txt at every SIMD level this CPU runs (or the
// levels named), each forced in turn. The contract it checks (docs/benchmarks.md, "Same results
// at every level"): candidate vectors identical at every level; scores bit-identical at the FMA
// levels (avx2, avx512), within kSse2ScoreTolerance of them at sse2. Links the runtime alone, so
// it also runs under qemu-x86_64 -cpu Nehalem / Haswell (tests/CMakeLists.txt).
//
//   tunecast_golden --golden FILE --problems FILE [--levels all|best|sse2,avx2,...]
//                   [--max-problems N] [--write] NAME=BLOB ...
// --write regenerates FILE at the best level (an FMA level, or it refuses).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tunecast/predict.h"
#include "tunecast/simd.h"

namespace {

using namespace tunecast;

// |score(sse2) - score(FMA levels)| allowed: the products round twice without FMA. Scores are
// sums of a few log-probabilities; the largest difference measured is in docs/benchmarks.md.
constexpr double kSse2ScoreTolerance = 1e-4;

struct Row {
  std::string values;
  float score = 0;
};

std::string score_text(float score) {
  char s[48];
  std::snprintf(s, sizeof s, "%a", static_cast<double>(score));
  return s;
}

bool read_file(const std::string& path, std::vector<unsigned char>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// Every prediction of one level, keyed "model | problem | k=K | #rank".
std::map<std::string, Row> predict_all(const std::vector<std::pair<std::string, std::string>>& blobs,
                                       const std::vector<std::pair<std::string, std::string>>& problems,
                                       int max_problems, int* failures) {
  std::map<std::string, Row> rows;
  for (const auto& [name, path] : blobs) {
    std::vector<unsigned char> bytes;
    if (!read_file(path, &bytes)) {
      std::fprintf(stderr, "tunecast_golden: cannot read %s\n", path.c_str());
      ++*failures;
      continue;
    }
    std::vector<unsigned char> aligned(bytes.size() + 64);
    unsigned char* data = aligned.data() + (64 - reinterpret_cast<uintptr_t>(aligned.data()) % 64) % 64;
    std::memcpy(data, bytes.data(), bytes.size());
    Model model;
    Status st = Model::load(data, bytes.size(), &model);
    if (!st) {
      std::fprintf(stderr, "tunecast_golden: %s: %s\n", path.c_str(), st.message());
      ++*failures;
      continue;
    }
    std::vector<unsigned char> scratch(model.scratch_bytes(10));
    int done = 0;
    for (const auto& [model_name, text] : problems) {
      if (model_name != name || done++ >= max_problems) continue;
      Problem problem;
      st = parse_problem(model.problem_schema(), text, &problem);  // the convolution, or a definition's fields
      if (!st) {
        std::fprintf(stderr, "tunecast_golden: %s: %s\n", text.c_str(), st.message());
        ++*failures;
        continue;
      }
      for (int k : {1, 10}) {
        PredictOptions options;
        options.beam_width = k;
        Candidate out[10];
        PredictInfo info;
        st = predict(model, problem, options, scratch.data(), scratch.size(), out, k, &info);
        const std::string key = name + " | " + text + " | k=" + std::to_string(k) + " | #";
        if (!st) {
          rows[key + "0"] = Row{std::string("error: ") + st.message(), 0.0f};
          continue;
        }
        for (int i = 0; i < info.candidates; ++i) {
          std::string values;
          for (int p = 0; p < out[i].length; ++p) values += (p ? "," : "") + std::to_string(out[i].values[p]);
          rows[key + std::to_string(i)] = Row{values, out[i].score};
        }
      }
    }
  }
  return rows;
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + sep.size();
  }
}

int usage(FILE* to) {
  std::fprintf(to,
               "usage: tunecast_golden --golden FILE --problems FILE [--levels all|best|LIST]\n"
               "                       [--max-problems N] [--write] NAME=BLOB ...\n"
               "Checks (or with --write regenerates) golden predictions of each blob over the problems\n"
               "FILE lists for NAME (lines 'NAME problem'), greedy and beam 10, at every SIMD level this\n"
               "CPU runs (all), the best one, or a comma-separated list; --max-problems checks only the\n"
               "first N problems of each model (emulators are slow).\n");
  return to == stdout ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string golden_path, problems_path, levels_text = "all";
  int max_problems = 1 << 30;
  bool write = false;
  std::vector<std::pair<std::string, std::string>> blobs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return usage(stdout);
    if (a == "--write") { write = true; continue; }
    if (a == "--max-problems" && i + 1 < argc) {
      max_problems = std::atoi(argv[++i]);
      continue;
    }
    if ((a == "--golden" || a == "--problems" || a == "--levels") && i + 1 < argc) {
      (a == "--golden" ? golden_path : a == "--problems" ? problems_path : levels_text) = argv[++i];
      continue;
    }
    const size_t eq = a.find('=');
    if (a[0] == '-' || eq == std::string::npos) return usage(stderr);
    blobs.emplace_back(a.substr(0, eq), a.substr(eq + 1));
  }
  if (golden_path.empty() || problems_path.empty() || blobs.empty()) return usage(stderr);

  std::vector<std::pair<std::string, std::string>> problems;
  {
    std::ifstream in(problems_path);
    if (!in) {
      std::fprintf(stderr, "tunecast_golden: cannot read %s\n", problems_path.c_str());
      return 2;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t space = line.find(' ');
      problems.emplace_back(line.substr(0, space), line.substr(space + 1));
    }
  }

  std::vector<SimdLevel> levels;
  if (levels_text == "all") {
    for (SimdLevel l : {SimdLevel::kSse2, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
      if (simd_level_supported(l)) levels.push_back(l);
    }
  } else {
    for (const std::string& name : split(levels_text, ",")) {
      SimdLevel l;
      Status st = parse_simd_level(name.c_str(), &l);
      if (!st) {
        std::fprintf(stderr, "tunecast_golden: --levels: %s\n", st.message());
        return 2;
      }
      if (!simd_level_supported(l)) {  // named, so expected: under qemu, a CPU model without it
        std::fprintf(stderr, "tunecast_golden: this CPU does not run the %s level\n", simd_level_name(l));
        return 1;
      }
      levels.push_back(l);
    }
  }

  int failures = 0;
  if (write) {
    const SimdLevel best = best_simd_level();
    if (best == SimdLevel::kSse2) {
      std::fprintf(stderr, "tunecast_golden: --write needs an FMA level (avx2 or avx512)\n");
      return 2;
    }
    set_simd_level(best);
    const auto rows = predict_all(blobs, problems, max_problems, &failures);
    if (failures) return 1;
    const std::string temp = golden_path + ".tmp";
    {
      std::ofstream out(temp);
      out << "# Golden predictions (tests/golden/golden_predictions.cpp): model | problem | beam | rank"
             " | values | score (hex float). Written at the "
          << simd_level_name(best) << " level.\n";
      for (const auto& [key, row] : rows) out << key << " | " << row.values << " | " << score_text(row.score) << "\n";
    }
    if (std::rename(temp.c_str(), golden_path.c_str()) != 0) {
      std::fprintf(stderr, "tunecast_golden: cannot write %s\n", golden_path.c_str());
      return 1;
    }
    std::fprintf(stderr, "tunecast_golden: wrote %zu predictions to %s\n", rows.size(), golden_path.c_str());
    return 0;
  }

  // The golden rows of the models given (a model whose blob is absent is not checked).
  std::map<std::string, Row> golden;
  {
    std::ifstream in(golden_path);
    if (!in) {
      std::fprintf(stderr, "tunecast_golden: cannot read %s\n", golden_path.c_str());
      return 2;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const std::vector<std::string> f = split(line, " | ");
      if (f.size() != 6) {
        std::fprintf(stderr, "tunecast_golden: bad line in %s: %s\n", golden_path.c_str(), line.c_str());
        return 2;
      }
      bool wanted = false;
      for (const auto& b : blobs) wanted = wanted || b.first == f[0];
      if (!wanted) continue;
      golden[f[0] + " | " + f[1] + " | " + f[2] + " | " + f[3]] =
          Row{f[4], static_cast<float>(std::strtod(f[5].c_str(), nullptr))};
    }
  }

  int passed = 0, failed = 0;
  for (SimdLevel level : levels) {
    set_simd_level(level);
    const auto rows = predict_all(blobs, problems, max_problems, &failures);
    int level_failed = 0;
    double worst = 0;
    size_t checked = 0;
    for (const auto& [key, want] : golden) {
      auto it = rows.find(key);
      if (it == rows.end() && max_problems < (1 << 30)) continue;  // a problem left out by --max-problems
      ++checked;
      bool ok = it != rows.end() && it->second.values == want.values;
      if (ok) {
        const double diff = std::fabs(static_cast<double>(it->second.score) - want.score);
        worst = std::max(worst, diff);
        ok = level == SimdLevel::kSse2 ? diff <= kSse2ScoreTolerance
                                       : std::memcmp(&it->second.score, &want.score, sizeof(float)) == 0;
      }
      if (!ok && ++level_failed <= 10) {
        std::printf("  [%s] %s: want %s %s, got %s\n", simd_level_name(level), key.c_str(), want.values.c_str(),
                    score_text(want.score).c_str(),
                    it == rows.end() ? "nothing" : (it->second.values + " " + score_text(it->second.score)).c_str());
      }
    }
    if (rows.size() != checked) {
      std::printf("  [%s] %zu predictions, the golden file has %zu of them\n", simd_level_name(level),
                  rows.size(), checked);
      ++level_failed;
    }
    std::printf("tunecast_golden: level %s: %zu golden predictions, %d differ; largest score difference %.3g\n",
                simd_level_name(level), checked, level_failed, worst);
    (level_failed ? failed : passed) += 1;
  }
  if (golden.empty()) {
    std::printf("tunecast_golden: no golden prediction of the models given\n");
    ++failed;
  }
  std::printf("tunecast_golden: %d level(s) agree with the golden file, %d do not\n", passed, failed + failures);
  return failed + failures ? 1 : 0;
}
