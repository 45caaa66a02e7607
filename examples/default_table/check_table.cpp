// Loads the default-table library with dlopen() and checks every entry against the blob runtime
// (the same model, embedded as a blob) on the same problems.
#include <dlfcn.h>

#include <cstdio>
#include <vector>

#include "model_blob.h"
#include "problems.h"
#include "tunecast/predict.h"

int main() {
  void* library = dlopen(DEFAULT_TABLE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "check_table: %s\n", dlerror());
    return 1;
  }
  using TableFn = const example::DefaultEntry* (*)(int*);
  const auto table_fn = reinterpret_cast<TableFn>(dlsym(library, "default_table"));
  if (table_fn == nullptr) {
    std::fprintf(stderr, "check_table: no symbol default_table\n");
    return 1;
  }
  int count = 0;
  const example::DefaultEntry* table = table_fn(&count);

  tunecast::Model model;
  tunecast::Status status = tunecast::Model::load(example::model_blob_data(), example::model_blob_size(), &model);
  if (!status) {
    std::fprintf(stderr, "check_table: %s\n", status.message());
    return 1;
  }
  std::vector<unsigned char> scratch(model.scratch_bytes(example::kBeam));
  tunecast::PredictOptions options;
  options.beam_width = example::kBeam;
  int mismatches = count == example::kProblemCount ? 0 : 1;
  for (int i = 0; i < count && i < example::kProblemCount; ++i) {
    tunecast::Problem problem;
    status = tunecast::parse_problem(example::kProblems[i], &problem);
    tunecast::Candidate best[example::kBeam];
    tunecast::PredictInfo info;
    if (status) status = tunecast::predict(model, problem, options, scratch.data(), scratch.size(), best, 1, &info);
    bool same = table[i].status == static_cast<int>(status.code()) && table[i].length == (status ? best[0].length : 0) &&
                table[i].not_applicable == info.not_applicable;
    for (int p = 0; same && p < table[i].length; ++p) same = table[i].values[p] == best[0].values[p];
    std::printf("%-60s %s", example::kProblems[i], same ? "ok  " : "DIFF");
    for (int p = 0; p < table[i].length; ++p) std::printf(" %lld", table[i].values[p]);
    std::printf("%s%s\n", table[i].status ? " (no prediction)" : "",
                table[i].not_applicable >= 0 ? " (the kernel does not apply)" : "");
    mismatches += !same;
  }
  // The model's rules carry ConvAsm1x1U's applicability: the 1x1 problems meet it, the 3x3 one not.
  if (count == example::kProblemCount &&
      (table[0].not_applicable != -1 || table[example::kProblemCount - 1].not_applicable < 0)) {
    std::printf("check_table: applicability not as expected (first entry %d, last %d)\n", table[0].not_applicable,
                table[example::kProblemCount - 1].not_applicable);
    ++mismatches;
  }
  dlclose(library);
  std::printf("check_table: %d of %d entries match the blob runtime\n", count - mismatches, count);
  return mismatches == 0 ? 0 : 1;
}
