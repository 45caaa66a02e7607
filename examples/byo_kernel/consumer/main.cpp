// Runs the blocked GEMM with parameters from the embedded default table (shapes it knows) or the
// embedded generated predictor (any other shape), and checks every step: each entry and prediction
// is a valid config (in the parameters' domains and accepted by the definition's rules), the table
// agrees with the predictor, and the GEMM run with it computes the right C. Exit 0 when all hold.
#include <cstdio>
#include <initializer_list>
#include <vector>

#include "../blocked_gemm.h"
#include "Predictor.h"       // tunecast_add_predictor(... EMIT cpp NAMESPACE gemm NAME Predictor)
#include "defaults_table.h"  // tunecast_add_table(... NAMESPACE gemm_defaults NAME defaults_table)

namespace {

int g_failures = 0;

void expect(bool condition, const char* what, long long m, long long n, long long k) {
  if (condition) return;
  std::printf("  FAILED: %s (m=%lld,n=%lld,k=%lld)\n", what, m, n, k);
  ++g_failures;
}

tunecast::Problem make_problem(long long m, long long n, long long k) {
  tunecast::Problem problem;
  problem.set(gemm::Predictor::kField_m, m);
  problem.set(gemm::Predictor::kField_n, n);
  problem.set(gemm::Predictor::kField_k, k);
  return problem;
}

// The domains of gemm.tcr's `param` lines.
bool in_domains(const int64_t* values) {
  auto one_of = [](int64_t v, std::initializer_list<int64_t> set) {
    for (int64_t x : set)
      if (v == x) return true;
    return false;
  };
  return one_of(values[0], {4, 8, 16, 32, 64}) && one_of(values[1], {16, 32, 64, 128, 256}) &&
         one_of(values[2], {16, 32, 64, 128, 256}) && one_of(values[3], {1, 2, 4});
}

// Runs C = A * B with the config and compares it with the naive loop.
bool run_and_check(int m, int n, int k, const int64_t* values) {
  std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n), c(static_cast<size_t>(m) * n),
      reference(c.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729) % 2001) / 1000.0f - 1.0f;
  byo::naive_gemm(m, n, k, a.data(), b.data(), reference.data());
  const byo::GemmConfig config{static_cast<int>(values[0]), static_cast<int>(values[1]), static_cast<int>(values[2]),
                               static_cast<int>(values[3])};
  const byo::GemmStatus status = byo::blocked_gemm(m, n, k, a.data(), b.data(), c.data(), config);
  if (status != byo::GemmStatus::kOk) {
    std::printf("  blocked_gemm refused %lld,%lld,%lld,%lld: %s\n", (long long)values[0], (long long)values[1],
                (long long)values[2], (long long)values[3], byo::status_name(status));
    return false;
  }
  return byo::max_error_ratio(m, n, k, c.data(), reference.data()) <= 1.0;
}

// The predictor's best config for a problem (beam 1, as the table), checked like a table entry.
bool predict(const tunecast::Problem& problem, tunecast::Candidate* best, bool* applicable) {
  static gemm::Predictor::Scratch scratch;  // static storage: the Scratch is a few kB
  tunecast::PredictOptions options;
  options.beam_width = 1;
  tunecast::PredictInfo info;
  const tunecast::Status status = gemm::Predictor::predict(problem, options, &scratch, best, 1, &info);
  if (!status) std::printf("  predict: %s\n", status.message());
  *applicable = info.not_applicable < 0;
  return static_cast<bool>(status);
}

void print_config(const char* source, long long m, long long n, long long k, const int64_t* values) {
  std::printf("m=%-4lld n=%-4lld k=%-4lld %-22s tile_m=%-3lld tile_n=%-3lld tile_k=%-3lld unroll=%lld\n", m, n, k,
              source, (long long)values[0], (long long)values[1], (long long)values[2], (long long)values[3]);
}

}  // namespace

int main() {
  std::printf("gemm_app: model %s, %d parameters (%s, %s, %s, %s)\n", gemm::Predictor::kModelName,
              gemm::Predictor::kParameterCount, gemm::Predictor::parameter_name(0), gemm::Predictor::parameter_name(1),
              gemm::Predictor::parameter_name(2), gemm::Predictor::parameter_name(3));

  // 1. Every entry of the default table: valid, the predictor's own choice, and correct when run.
  int table_checked = 0;
  for (const gemm_defaults::Entry& entry : gemm_defaults::kEntries) {
    const long long m = entry.key.m, n = entry.key.n, k = entry.key.k;
    expect(gemm_defaults::find(entry.key) == &entry, "find(key) returns the entry", m, n, k);
    if (!entry.found) {
      std::printf("m=%-4lld n=%-4lld k=%-4lld no candidate in the table\n", m, n, k);
      continue;
    }
    const tunecast::Problem problem = make_problem(m, n, k);
    print_config(entry.applicable ? "table" : "table (not applicable)", m, n, k, entry.values);
    expect(in_domains(entry.values), "the table's values are in the parameters' domains", m, n, k);
    expect(gemm::Predictor::check_candidate(problem, entry.values, gemm_defaults::kParameterCount, nullptr),
           "the table's values pass the definition's rules", m, n, k);
    tunecast::Candidate best;
    bool applicable = false;
    if (predict(problem, &best, &applicable)) {
      bool same = best.length == gemm_defaults::kParameterCount && applicable == entry.applicable;
      for (int p = 0; same && p < best.length; ++p) same = best.values[p] == entry.values[p];
      expect(same, "the table equals the embedded predictor's greedy prediction", m, n, k);
    } else {
      expect(false, "the predictor predicts the table's problem", m, n, k);
    }
    if (entry.applicable)
      expect(run_and_check(m, n, k, entry.values), "the GEMM runs correctly with the table's config", m, n, k);
    ++table_checked;
  }

  // 2. Shapes the table lacks: the nearest entry, and the predictor's own config, both run.
  const long long others[][3] = {{80, 80, 80}, {24, 200, 48}, {160, 32, 192}, {300, 17, 90}};
  for (const auto& shape : others) {
    const long long m = shape[0], n = shape[1], k = shape[2];
    expect(gemm_defaults::find(gemm_defaults::Key{m, n, k}) == nullptr, "find() of a shape not in the table is null", m,
           n, k);
    const gemm_defaults::Entry* near = gemm_defaults::nearest(gemm_defaults::Key{m, n, k});
    expect(near != nullptr, "nearest() finds an entry", m, n, k);
    const tunecast::Problem problem = make_problem(m, n, k);
    if (near != nullptr) {
      print_config("table (nearest entry)", m, n, k, near->values);
      // The nearest entry's config was chosen for another shape: the rules decide whether it is
      // valid here (tile sizes are limited by the shape); only a valid one is run.
      if (gemm::Predictor::check_candidate(problem, near->values, 4, nullptr))
        expect(run_and_check(m, n, k, near->values), "the GEMM runs correctly with the nearest entry's config", m, n,
               k);
      else
        std::printf("  (the nearest entry's config breaks a rule for this shape: not used)\n");
    }
    tunecast::Candidate best;
    bool applicable = false;
    expect(predict(problem, &best, &applicable), "the predictor predicts", m, n, k);
    print_config("predictor", m, n, k, best.values);
    expect(best.length == 4 && in_domains(best.values), "the prediction is in the parameters' domains", m, n, k);
    expect(gemm::Predictor::check_candidate(problem, best.values, best.length, nullptr),
           "the prediction passes the definition's rules", m, n, k);
    expect(run_and_check(static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), best.values),
           "the GEMM runs correctly with the predicted config", m, n, k);
  }

  std::printf("gemm_app: %d table entries and %d other shapes checked, %d failures\n", table_checked,
              static_cast<int>(sizeof others / sizeof others[0]), g_failures);
  return g_failures == 0 ? 0 : 1;
}
