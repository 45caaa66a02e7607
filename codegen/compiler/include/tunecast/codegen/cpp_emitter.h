// Verified blob -> C++ predictor (tunecast emit-cpp). The generated pair NAME.h / NAME.cpp holds
// the weights as aligned constant arrays (panel-packed exactly as in the blob), runs every layer
// through tunecast/layers.h with compile-time sizes, compiles each constraint and feature program
// from bytecode to a C++ expression (tunecast/checked_int.h keeps the VM's failure rules), and
// runs the beam search shared with the blob runtime (tunecast/beam_search.h): same inputs, same
// bits. Host-only.
#pragma once

#include <string>

#include "tunecast/model.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

struct CppEmitOptions {
  std::string name_space = "tunecast_generated";  // may be nested: "miopen::ktn"
  std::string name = "Predictor";                   // struct name, and the files' stem
  int max_beam = 16;                                // the Scratch is sized for this many beams
  // Also emit a predict() overload over a thread_local Scratch. Off by default: static TLS is
  // zeroed, hence resident, in every thread of a process, whether it predicts or not.
  bool thread_local_scratch = false;
  std::string source = "";                          // shown in the header comment (the .tcm path)
};

struct CppSources {
  std::string header;  // NAME.h
  std::string source;  // NAME.cpp (includes "NAME.h")
};

// Whether `name_space` is a C++ namespace name, possibly nested ("miopen::ktn").
bool is_cpp_namespace(const std::string& name_space);

// Emits a predictor for a loaded sequence-to-sequence model. Fails with kUnsupported for a model
// the generator cannot express (feed-forward models, bytecode shapes the rules compiler never
// produces) and kInvalidArgument for bad names.
Status emit_cpp(const Model& model, const CppEmitOptions& options, CppSources* out);

// The blob itself as C++: NAME.h declares `const unsigned char* NAME_data()` and
// `size_t NAME_size()` in `name_space`; NAME.cpp holds the bytes in an alignas(32) array.
Status emit_embedded_blob(const void* blob, size_t size, const std::string& name_space,
                          const std::string& name, const std::string& source_name,
                          std::string* header, std::string* source);

// Compiles one constraint or feature program to a C++ expression over the locals that
// emit_cpp declares (problem fields by name, parameters by `param_names`) and a CheckedInt `ok`.
// Exposed for tests.
Status decompile_program(const int32_t* code, uint32_t code_size, const int64_t* constants,
                         uint32_t constant_count, const std::string* param_names,
                         std::string* expression, uint32_t* fields_read, uint32_t* params_read);

}  // namespace tunecast::codegen
