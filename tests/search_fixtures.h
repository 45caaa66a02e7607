// A tiny tunable "kernel" for the tuning-search tests: a seq2seq predictor over four parameters
// (bm, bn, bk: 1..128 in powers of two; warps: 1..8) with validity rules, a smooth synthetic
// time landscape whose optimum moves with the problem, configs that fail although the rules allow
// them (out of resources), and a writer of an exhaustive timing DB (tunecast's perf-DB-like
// SQLite, docs/search.md) recorded from that landscape, so the search, `tunecast tune --replay`
// and `tunecast eval-search` run without GPU data.
#pragma once

#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tiny_models.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/problem.h"
#include "tunecast/status.h"

namespace tunecast_test {

// Token t (1..8) means 2^(t-1); token 0 ends. warps may only take tokens 1..4 (1, 2, 4, 8).
inline constexpr int kSearchTokens = 9;
inline constexpr int64_t kSearchTokenValues[kSearchTokens] = {-1, 1, 2, 4, 8, 16, 32, 64, 128};
inline constexpr const char* kSearchParams[4] = {"bm", "bn", "bk", "warps"};

inline const char* search_rules_text() {
  return "params bm, bn, bk, warps\n"
         "input 1 x 1\n"
         "encode 0 0 log2 n * c\n"
         "require bm >= 4 && bn >= 4\n"
         "require bm * bn <= 8192\n"
         "require bk <= k\n"
         "require bm * bn >= warps * 64\n";
}

// The decoder's next-token scores depend on the previous token only: from the start it leans to
// 32, then to middling values, so the beam's candidates differ from the optimum of most problems.
inline tiny_ir::Model search_model() {
  tiny_ir::Model m = tiny_seq2seq();
  m.name = "tiny_search";
  tiny_ir::Graph& dec = m.graphs[1];
  dec.values[dec.layers[0].outputs[0]].cols = kSearchTokens;  // logits
  tiny_ir::Layer& table = dec.layers[0];
  table.kernel.rows = kSearchTokens;
  table.kernel.cols = kSearchTokens;
  table.kernel.data.clear();
  for (int previous = 0; previous < kSearchTokens; ++previous) {
    const int preferred = previous == 0 ? 6 : 1 + (previous * 3 + 2) % 8;
    for (int t = 0; t < kSearchTokens; ++t) {
      table.kernel.data.push_back(t == 0 ? -10.0f : -0.35f * static_cast<float>((t - preferred) * (t - preferred)));
    }
  }
  m.vocabulary.token_values.assign(kSearchTokenValues, kSearchTokenValues + kSearchTokens);
  m.vocabulary.end_tokens = {0};
  m.vocabulary.parameters = {{"bm", {}}, {"bn", {}}, {"bk", {}}, {"warps", {1, 2, 3, 4}}};
  m.metadata["solver"] = "TinyGemm";
  m.metadata["source"] = "tiny_search";
  tunecast::rules::CompiledRules rules;
  const tunecast::Status status = tunecast::rules::compile(search_rules_text(), "tiny_search.tcr", &rules);
  if (!status) return m;  // the caller's load fails and says why
  m.constraints = rules.constraints;
  m.applicability = rules.applicability;
  m.encoding = rules.encoding;
  m.encoding->required_fields = rules.fields_used;
  return m;
}

// The landscape: quadratic in log2 of each parameter around an optimum that depends on the
// problem (c, k, n, h), with a cross term, scaled by the problem's size.
struct Landscape {
  int opt[4];  // log2 of the optimal bm, bn, bk, warps
  double scale;

  explicit Landscape(const tunecast::Problem& p) {
    using F = tunecast::ProblemField;
    opt[0] = 3 + static_cast<int>(p.get(F::kC) % 5);  // 8..128
    opt[1] = 3 + static_cast<int>(p.get(F::kK) % 4);  // 8..64
    opt[2] = 2 + static_cast<int>(p.get(F::kN) % 4);  // 4..32
    opt[3] = static_cast<int>(p.get(F::kH) % 4);      // 1..8
    scale = 1.0 + static_cast<double>(p.get(F::kN) * p.get(F::kC) * p.get(F::kK)) * 1e-5;
  }
  // Fails (out of resources) beyond a shared-memory budget the rules do not know.
  static bool fails(const int64_t* v) { return v[0] * v[1] * v[2] > 131072; }
  double time(const int64_t* v) const {
    double d[4];
    for (int i = 0; i < 4; ++i) d[i] = std::log2(static_cast<double>(v[i])) - opt[i];
    return scale * (10.0 + 1.5 * d[0] * d[0] + 1.0 * d[1] * d[1] + 2.0 * d[2] * d[2] + 0.5 * d[3] * d[3] +
                    0.5 * d[0] * d[1]);
  }
};

// The problems of the synthetic DB: forward 1x1, FP32 and FP16, sizes varied so that the optimum
// moves. Split seed 0 puts a few of them in test.
inline std::vector<std::string> synthetic_problem_texts(int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    const int n = 1 + (i * 7) % 16, c = 16 + 16 * ((i * 5) % 13), k = 16 + 16 * ((i * 3) % 11);
    const int hw = 7 + (i * 11) % 50;
    out.push_back(std::string("dir=F,dtype=") + (i % 2 ? "FP16" : "FP32") + ",n=" + std::to_string(n) +
                  ",c=" + std::to_string(c) + ",k=" + std::to_string(k) + ",h=" + std::to_string(hw) +
                  ",w=" + std::to_string(hw) + ",y=1,x=1");
  }
  return out;
}

inline bool search_rules_pass(const tunecast::Problem& p, const int64_t* v) {
  return v[0] >= 4 && v[1] >= 4 && v[0] * v[1] <= 8192 && v[2] <= p.get(tunecast::ProblemField::kK) &&
         v[0] * v[1] >= v[3] * 64;
}

// Writes an exhaustive timing DB over every config of the model's space (8 x 8 x 8 x 4) for each
// problem: configs the rules or the landscape reject are recorded as 'out_of_resources'; with
// `holes`, configs with bk = 128 and warps = 8 are left out of the recording. Returns "" or an error.
inline std::string write_synthetic_timing_db(const std::string& path, const std::vector<std::string>& problems,
                                             bool holes = false, const char* default_config = "16,16,8,2") {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return "cannot create " + path;
  auto exec = [&](const std::string& sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    std::string message = rc == SQLITE_OK ? "" : (error ? error : "sqlite error") + std::string(" in ") + sql;
    sqlite3_free(error);
    return message;
  };
  std::string error = exec(
      "BEGIN;"
      "CREATE TABLE config (id INTEGER PRIMARY KEY ASC, layout TEXT NOT NULL, data_type TEXT NOT NULL,"
      " direction TEXT NOT NULL, spatial_dim INT NOT NULL, in_channels INT NOT NULL, in_h INT NOT NULL,"
      " in_w INT NOT NULL, in_d INT NOT NULL, fil_h INT NOT NULL, fil_w INT NOT NULL, fil_d INT NOT NULL,"
      " out_channels INT NOT NULL, batchsize INT NOT NULL, pad_h INT NOT NULL, pad_w INT NOT NULL,"
      " pad_d INT NOT NULL, conv_stride_h INT NOT NULL, conv_stride_w INT NOT NULL, conv_stride_d INT NOT NULL,"
      " dilation_h INT NOT NULL, dilation_w INT NOT NULL, dilation_d INT NOT NULL, bias INT NOT NULL,"
      " group_count INT NOT NULL);"
      "CREATE TABLE perf_db (id INTEGER PRIMARY KEY ASC, solver TEXT NOT NULL, config INTEGER NOT NULL,"
      " params TEXT NOT NULL);"
      "CREATE TABLE timings (config INTEGER NOT NULL, params TEXT NOT NULL, time_us REAL, status TEXT NOT NULL);"
      "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
      "INSERT INTO meta VALUES ('solver', 'TinyGemm'), ('params', 'bm,bn,bk,warps'), ('time_unit', 'us');");
  if (error.empty() && default_config != nullptr) {
    error = exec(std::string("INSERT INTO meta VALUES ('default_config', '") + default_config + "');");
  }
  for (size_t i = 0; i < problems.size() && error.empty(); ++i) {
    tunecast::Problem p;
    if (!tunecast::parse_problem(problems[i], &p)) return "bad problem " + problems[i];
    using F = tunecast::ProblemField;
    const long long id = static_cast<long long>(i) + 1;
    error = exec("INSERT INTO config VALUES (" + std::to_string(id) + ", 'NCHW', '" +
                 (p.get(F::kDtype) == tunecast::kFp16 ? "FP16" : "FP32") + "', 'F', 2, " +
                 std::to_string(p.get(F::kC)) + ", " + std::to_string(p.get(F::kH)) + ", " +
                 std::to_string(p.get(F::kW)) + ", 1, 1, 1, 1, " + std::to_string(p.get(F::kK)) + ", " +
                 std::to_string(p.get(F::kN)) + ", 0, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1);");
    const Landscape landscape(p);
    std::string rows, best_params;
    double best = 1e300;
    for (int a = 1; a < kSearchTokens; ++a) {
      for (int b = 1; b < kSearchTokens; ++b) {
        for (int c = 1; c < kSearchTokens; ++c) {
          for (int w = 1; w <= 4; ++w) {
            const int64_t v[4] = {kSearchTokenValues[a], kSearchTokenValues[b], kSearchTokenValues[c],
                                  kSearchTokenValues[w]};
            if (holes && v[2] == 128 && v[3] == 8) continue;
            const std::string params = std::to_string(v[0]) + "," + std::to_string(v[1]) + "," +
                                       std::to_string(v[2]) + "," + std::to_string(v[3]);
            const bool ok = search_rules_pass(p, v) && !Landscape::fails(v);
            char time[64];
            std::snprintf(time, sizeof time, "%.6f", landscape.time(v));
            if (ok && landscape.time(v) < best) {
              best = landscape.time(v);
              best_params = params;
            }
            rows += std::string(rows.empty() ? "" : ",") + "(" + std::to_string(id) + ", '" + params + "', " +
                    (ok ? std::string(time) : std::string("NULL")) + ", '" + (ok ? "ok" : "out_of_resources") + "')";
          }
        }
      }
    }
    error = exec("INSERT INTO timings VALUES " + rows + ";");
    if (error.empty()) {
      error = exec("INSERT INTO perf_db VALUES (" + std::to_string(id) + ", 'TinyGemm', " + std::to_string(id) +
                   ", '" + best_params + "');");
    }
  }
  if (error.empty()) error = exec("CREATE INDEX timings_config ON timings(config); COMMIT;");
  sqlite3_close(db);
  return error;
}

}  // namespace tunecast_test
