// libFuzzer target: rules-language text -> compiler; whatever it emits must pass the runtime's
// bytecode verifier (a compiler bug otherwise) and evaluate without undefined behaviour.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "constraint_vm.h"
#include "tunecast/model.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/rules_compiler.h"

namespace {

using namespace tunecast;

vm::ProgramView view_of(const ir::Program& p) {
  return {p.code.data(), static_cast<uint32_t>(p.code.size()), p.constants.data(),
          static_cast<uint32_t>(p.constants.size())};
}

int g_field_count = kProblemFieldCount;  // the text's problem: the convolution's, or its own fields

void must_verify(const ir::Program& program, uint32_t readable_mask, const std::string& what) {
  const Status status = vm::verify_reading(view_of(program), readable_mask, what.c_str(), g_field_count);
  if (!status) {
    std::fprintf(stderr, "compiler emitted bytecode the verifier rejects: %s\n", status.message());
    std::abort();
  }
}

}  // namespace

namespace tunecast_fuzz {

// One input; also linked into tunecast_tests (tests/test_regressions.cpp) without the entry point.
int rules_one_input(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  rules::CompiledRules out;
  rules::CompileOptions options;
  options.defines["img_reading"] = 1;
  if (!rules::compile(text, "fuzz.tcr", options, &out)) return 0;
  g_field_count = out.problem.empty() ? kProblemFieldCount : static_cast<int>(out.problem.size());
  // A definition with every domain compiles alone into a model that must load (format version 3),
  // and its default problem parses with the schema the blob carries.
  if (rules::has_domains(out) && out.constraints.size() <= static_cast<size_t>(kMaxConstraints) &&
      out.applicability.size() <= static_cast<size_t>(kMaxConstraints)) {
    ir::Model model;
    if (codegen::definition_model(out, "fuzz.tcr", &model)) {
      std::vector<uint8_t> blob;
      const Status written = codegen::write_blob(model, &blob, codegen::BlobOptions());
      if (!written) {
        std::fprintf(stderr, "a definition that compiles does not make a loadable blob: %s\n", written.message());
        std::abort();
      }
    }
  }

  Problem problem;
  for (int f = 0; f < kProblemFieldCount; ++f) problem.set(static_cast<ProblemField>(f), f % 5);
  int64_t params[kMaxParameters];
  for (int i = 0; i < kMaxParameters; ++i) params[i] = (i * 7) % 9 - 2;
  for (const ir::Constraint& c : out.constraints) {
    must_verify(c.program, vm::readable_params_mask(static_cast<int>(c.position), nullptr), c.text);
    int64_t result;
    vm::evaluate(view_of(c.program), problem, params, &result);
  }
  // The same text for a model that decodes its parameters in reverse order (a vocabulary's
  // decode_order): every constraint must read only what its decode step knows.
  if (out.params.size() > 1 && out.params.size() <= static_cast<size_t>(kMaxParameters)) {
    rules::CompiledRules reordered;
    for (size_t s = 0; s < out.params.size(); ++s) {
      options.decode_order.push_back(static_cast<uint8_t>(out.params.size() - 1 - s));
    }
    options.params = out.params;
    const Status again = rules::compile(text, "fuzz.tcr", options, &reordered);
    if (!again) {
      std::fprintf(stderr, "a text that compiles fails to compile with a decode order: %s\n", again.message());
      std::abort();
    }
    for (const ir::Constraint& c : reordered.constraints) {
      must_verify(c.program, vm::readable_params_mask(static_cast<int>(c.position), options.decode_order.data()),
                  c.text);
    }
  }
  if (out.encoding) {
    for (const ir::FeatureEncoding& f : out.encoding->features) {
      must_verify(f.program, 0u, f.text);
      int64_t result;
      vm::evaluate(view_of(f.program), problem, nullptr, &result);
    }
  }
  return 0;
}

}  // namespace tunecast_fuzz

#ifndef TUNECAST_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tunecast_fuzz::rules_one_input(data, size);
}
#endif
