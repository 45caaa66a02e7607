// Built on a target linked with target_link_libraries' plain signature (CMakeLists.txt). Loads the
// embedded model with its weights checksum checked and predicts on architectures as ROCm names
// them: the model's own (covered), others (predicted, flagged not covered).
#include <cstdio>
#include <vector>

#include "plain_blob.h"
#include "tunecast/predict.h"

int main() {
  tunecast::Model model;
  tunecast::LoadOptions load_options;
  load_options.verify_checksum = true;
  tunecast::Status status =
      tunecast::Model::load(example::plain_blob_data(), example::plain_blob_size(), load_options, &model);
  if (!status) {
    std::fprintf(stderr, "plain_form: %s\n", status.message());
    return 1;
  }
  std::vector<unsigned char> scratch(model.scratch_bytes(1));
  int failures = 0;
  for (const char* arch : {"gfx906", "gfx90a:sramecc+:xnack-", "gfx1100"}) {
    char text[160];
    std::snprintf(text, sizeof text, "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=%s", arch);
    tunecast::Problem problem;
    status = tunecast::parse_problem(text, &problem);
    tunecast::Candidate best;
    tunecast::PredictInfo info;
    if (status) status = tunecast::predict(model, problem, {}, scratch.data(), scratch.size(), &best, 1, &info);
    // The package's models cover the architectures their metadata names (gfx900 and gfx906 for
    // the shipped ones); a KTN covers its own.
    const bool covered = model.covers_arch(problem.get(tunecast::ProblemField::kArch));
    std::printf("plain_form: arch=%-24s %s, %s\n", arch, status ? "predicted" : status.message(),
                info.arch_not_covered ? "not covered by the model" : "covered");
    if (!status && status.code() != tunecast::StatusCode::kNoValidCandidate) ++failures;
    if (info.arch_not_covered == covered) ++failures;
  }
  return failures == 0 ? 0 : 1;
}
