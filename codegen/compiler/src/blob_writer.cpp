#include "tunecast/codegen/blob_writer.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "tunecast/kernel_types.h"
#include "tunecast/model.h"

namespace tunecast::codegen {
namespace {

namespace fb = ::tunecast::schema;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

constexpr size_t kWeightAlignment = 32;

bool is_packed(const ir::Layer& layer, bool recurrent) {
  switch (layer.type) {
    case ir::LayerType::Dense:
    case ir::LayerType::Conv1D:
      return true;
    case ir::LayerType::Lstm:
      return recurrent || !layer.token_input;
    default:
      return false;
  }
}

Offset<flatbuffers::Vector<float>> aligned_floats(FlatBufferBuilder& b, const std::vector<float>& v) {
  b.ForceVectorAlignment(v.size(), sizeof(float), kWeightAlignment);
  return b.CreateVector(v);
}

// Packed matrices take the requested storage; tables (gathers, not products) stay float.
Offset<fb::Matrix> write_matrix(FlatBufferBuilder& b, const ir::Matrix& m, bool packed,
                                const BlobOptions& options) {
  if (m.empty()) return 0;
  if (packed && options.weights == WeightStorage::kFp16) {
    const std::vector<float> panels = pack_panels(m);
    std::vector<uint16_t> halves(panels.size());
    for (size_t i = 0; i < panels.size(); ++i) halves[i] = float_to_half(panels[i]);
    b.ForceVectorAlignment(halves.size(), sizeof(uint16_t), kWeightAlignment);
    const auto data = b.CreateVector(halves);
    fb::MatrixBuilder mb(b);
    mb.add_rows(m.rows);
    mb.add_cols(m.cols);
    mb.add_panel_width(kernels::kPanelWidth);
    mb.add_half_data(data);
    return mb.Finish();
  }
  const auto data = aligned_floats(b, packed ? pack_panels(m) : m.data);
  return fb::CreateMatrix(b, m.rows, m.cols, packed ? kernels::kPanelWidth : 0, data);
}

// Biases are padded with zeros to whole panels so products can add them panel by panel.
Offset<flatbuffers::Vector<float>> write_bias(FlatBufferBuilder& b, const std::vector<float>& bias) {
  if (bias.empty()) return 0;
  std::vector<float> padded = bias;
  padded.resize((bias.size() + kernels::kPanelWidth - 1) / kernels::kPanelWidth *
                    kernels::kPanelWidth,
                0.0f);
  return aligned_floats(b, padded);
}

Offset<fb::Program> write_program(FlatBufferBuilder& b, const ir::Program& p) {
  return fb::CreateProgram(b, b.CreateVector(p.code), b.CreateVector(p.constants));
}

Offset<fb::Graph> write_graph(FlatBufferBuilder& b, const ir::Graph& g, const BlobOptions& options) {
  std::vector<Offset<fb::Layer>> layers;
  for (const ir::Layer& l : g.layers) {
    const auto name = b.CreateString(l.name);
    const auto inputs = b.CreateVector(l.inputs);
    const auto outputs = b.CreateVector(l.outputs);
    const auto kernel = write_matrix(b, l.kernel, is_packed(l, false), options);
    const auto recurrent = write_matrix(b, l.recurrent, is_packed(l, true), options);
    const auto bias = write_bias(b, l.bias);
    fb::LayerBuilder lb(b);
    lb.add_type(l.type);
    lb.add_name(name);
    lb.add_inputs(inputs);
    lb.add_outputs(outputs);
    lb.add_units(l.units);
    lb.add_activation(l.activation);
    if (!kernel.IsNull()) lb.add_kernel(kernel);
    if (!recurrent.IsNull()) lb.add_recurrent(recurrent);
    if (!bias.IsNull()) lb.add_bias(bias);
    lb.add_return_sequences(l.return_sequences);
    lb.add_reverse(l.reverse);
    lb.add_recurrent_activation(l.recurrent_activation);
    lb.add_cell_activation(l.cell_activation);
    lb.add_token_input(l.token_input);
    lb.add_kernel_size(l.kernel_size);
    lb.add_padding_same(l.padding_same);
    layers.push_back(lb.Finish());
  }
  std::vector<Offset<fb::Value>> values;
  for (const ir::Value& v : g.values) {
    values.push_back(fb::CreateValue(b, b.CreateString(v.name), v.rows, v.cols));
  }
  return fb::CreateGraph(b, b.CreateString(g.name), g.batched, b.CreateVector(values),
                         b.CreateVector(g.inputs), b.CreateVector(g.outputs),
                         b.CreateVector(layers));
}

Offset<fb::Encoding> write_encoding(FlatBufferBuilder& b, const ir::Encoding& e) {
  std::vector<Offset<fb::FeatureEncoding>> features;
  for (const ir::FeatureEncoding& f : e.features) {
    features.push_back(fb::CreateFeatureEncoding(b, f.row, f.col, f.transform, f.width, f.mean,
                                                 f.std, write_program(b, f.program),
                                                 b.CreateString(f.text)));
  }
  std::vector<Offset<flatbuffers::String>> fields;
  for (const std::string& name : e.required_fields) fields.push_back(b.CreateString(name));
  std::vector<Offset<fb::FeatureRange>> ranges;
  for (const ir::FeatureRange& r : e.ranges) {
    ranges.push_back(fb::CreateFeatureRange(b, b.CreateString(r.field), r.min, r.max));
  }
  return fb::CreateEncoding(b, e.rows, e.cols, b.CreateVector(features), b.CreateVector(fields),
                            b.CreateVector(ranges));
}

}  // namespace

std::vector<float> pack_panels(const ir::Matrix& m) {
  const size_t panels = (m.cols + kernels::kPanelWidth - 1) / kernels::kPanelWidth;
  std::vector<float> packed(kernels::packed_size(m.rows, m.cols), 0.0f);
  for (size_t p = 0; p < panels; ++p) {
    for (size_t r = 0; r < m.rows; ++r) {
      for (size_t j = 0; j < static_cast<size_t>(kernels::kPanelWidth); ++j) {
        const size_t col = p * kernels::kPanelWidth + j;
        if (col < m.cols) {
          packed[(p * m.rows + r) * kernels::kPanelWidth + j] = m.data[r * m.cols + col];
        }
      }
    }
  }
  return packed;
}

uint16_t float_to_half(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // inf or NaN (quiet, payload kept where it fits)
    return sign | (magnitude > 0x7f800000u ? 0x7e00u | ((magnitude >> 13) & 0x3ffu) : 0x7c00u);
  }
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: inf
  if (magnitude < 0x38800000u) {                          // below 2^-14: subnormal or zero
    if (magnitude < 0x33000000u) return sign;             // at most half the smallest subnormal
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24 bits dropped
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  // Normal: rebias the exponent, round the mantissa to 10 bits (nearest, ties to even); a carry
  // into the exponent is the correctly rounded result.
  uint32_t half = ((magnitude - 0x38000000u) >> 13);
  const uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

std::string strip_absolute_paths(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  auto ends_path = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == ',' || c == ';' || c == '"' || c == '\'' ||
           c == ')' || c == ']';
  };
  size_t i = 0;
  while (i < text.size()) {
    const bool token_start = i == 0 || ends_path(text[i - 1]) || text[i - 1] == '=' ||
                             text[i - 1] == '(' || text[i - 1] == '[' || text[i - 1] == ':';
    const bool absolute = text[i] == '/' || (text[i] == '~' && i + 1 < text.size() && text[i + 1] == '/');
    if (!token_start || !absolute) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && !ends_path(text[end])) ++end;
    std::string path = text.substr(i, end - i);
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    const size_t slash = path.rfind('/');
    out += slash == std::string::npos ? path : path.substr(slash + 1);
    i = end;
  }
  return out;
}

std::vector<std::string> covered_archs(const ir::Model& model) {
  std::vector<std::string> archs;
  const auto it = model.metadata.find("arch");
  if (it == model.metadata.end()) return archs;
  size_t pos = 0;
  const std::string& list = it->second;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    int64_t code = 0;
    char name[kMaxArchNameLength + 1];
    std::string item = list.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    if (arch_code(item, &code) && format_arch(code, name, sizeof name) &&
        std::find(archs.begin(), archs.end(), name) == archs.end()) {
      archs.push_back(name);
    }
    pos = comma + 1;
  }
  return archs;
}

namespace {

void serialize(const ir::Model& model, std::vector<uint8_t>* blob, const BlobOptions& options,
               uint64_t checksum) {
  FlatBufferBuilder b(1 << 20);
  std::vector<Offset<fb::Graph>> graphs;
  for (const ir::Graph& g : model.graphs) graphs.push_back(write_graph(b, g, options));
  const auto graphs_vec = b.CreateVector(graphs);

  Offset<fb::Seq2Seq> seq2seq = 0;
  if (model.seq2seq) {
    const ir::Seq2Seq& s = *model.seq2seq;
    std::vector<Offset<fb::StateLink>> states;
    for (const ir::StateLink& l : s.states) {
      states.push_back(fb::CreateStateLink(b, l.decoder_input, l.encoder_output, l.decoder_output));
    }
    std::vector<Offset<fb::ContextLink>> contexts;
    for (const ir::ContextLink& l : s.contexts) {
      contexts.push_back(fb::CreateContextLink(b, l.decoder_input, l.encoder_output));
    }
    seq2seq = fb::CreateSeq2Seq(b, s.encoder, s.decoder, s.token_input, s.logits_output,
                                s.start_token, b.CreateVector(states), b.CreateVector(contexts),
                                s.logits_are_probabilities);
  }

  Offset<fb::Vocabulary> vocabulary = 0;
  if (!model.vocabulary.token_values.empty()) {
    const ir::Vocabulary& v = model.vocabulary;
    std::vector<Offset<fb::Parameter>> params;
    for (const ir::Parameter& p : v.parameters) {
      params.push_back(fb::CreateParameter(b, b.CreateString(p.name), b.CreateVector(p.tokens),
                                           p.domain.empty() ? 0 : b.CreateVector(p.domain)));
    }
    std::vector<Offset<flatbuffers::String>> labels;
    for (const std::string& label : v.token_labels) labels.push_back(b.CreateString(label));
    vocabulary = fb::CreateVocabulary(b, b.CreateVector(v.token_values), b.CreateVector(v.end_tokens),
                                      b.CreateVector(params), v.end_policy, b.CreateVector(labels),
                                      v.decode_order.empty() ? 0 : b.CreateVector(v.decode_order));
  }

  std::vector<Offset<fb::Constraint>> constraints;
  for (const ir::Constraint& c : model.constraints) {
    constraints.push_back(fb::CreateConstraint(b, c.position, write_program(b, c.program),
                                               b.CreateString(c.text)));
  }
  const auto constraints_vec = b.CreateVector(constraints);
  std::vector<Offset<fb::Constraint>> applicability;
  for (const ir::Constraint& c : model.applicability) {
    applicability.push_back(fb::CreateConstraint(b, 0, write_program(b, c.program), b.CreateString(c.text)));
  }
  // Absent rather than empty when there are none: older blobs stay byte for byte what they were.
  const auto applicability_vec =
      applicability.empty() ? Offset<flatbuffers::Vector<Offset<fb::Constraint>>>() : b.CreateVector(applicability);
  Offset<fb::Encoding> encoding = model.encoding ? write_encoding(b, *model.encoding) : 0;

  std::vector<Offset<fb::MetadataEntry>> metadata;
  for (const auto& [key, value] : model.metadata) {  // std::map: already sorted by key
    // No build paths in a shipped model: "/root/out/s/asm_m80" is written "asm_m80".
    metadata.push_back(fb::CreateMetadataEntry(b, b.CreateString(key),
                                               b.CreateString(strip_absolute_paths(value))));
  }
  const auto metadata_vec = b.CreateVector(metadata);
  const auto name = b.CreateString(model.name);
  std::vector<Offset<flatbuffers::String>> arch_names;
  for (const std::string& arch : covered_archs(model)) arch_names.push_back(b.CreateString(arch));
  const auto archs_vec =
      arch_names.empty() ? Offset<flatbuffers::Vector<Offset<flatbuffers::String>>>() : b.CreateVector(arch_names);

  Offset<fb::ProblemSchema> problem = 0;
  if (!model.problem.empty()) {
    std::vector<Offset<fb::ProblemFieldDef>> fields;
    for (const ir::ProblemFieldDef& f : model.problem) {
      std::vector<Offset<flatbuffers::String>> symbols;
      for (const std::string& symbol : f.symbols) symbols.push_back(b.CreateString(symbol));
      fields.push_back(fb::CreateProblemFieldDef(b, b.CreateString(f.name), static_cast<fb::FieldKind>(f.kind), f.min,
                                                 f.max, symbols.empty() ? 0 : b.CreateVector(symbols), f.has_default,
                                                 f.default_value));
    }
    problem = fb::CreateProblemSchema(b, b.CreateVector(fields));
  }

  fb::ModelBuilder mb(b);
  // A version only where it matters: a version-1 runtime reads every other blob correctly. 3: a
  // problem schema of its own or no graph; 2: a decode order.
  mb.add_format_version(!model.problem.empty() || model.graphs.empty() ? 3
                        : ir::reorders_parameters(model.vocabulary)    ? 2
                                                                       : 1);
  if (!problem.IsNull()) mb.add_problem(problem);
  mb.add_name(name);
  mb.add_graphs(graphs_vec);
  if (!seq2seq.IsNull()) mb.add_seq2seq(seq2seq);
  if (!vocabulary.IsNull()) mb.add_vocabulary(vocabulary);
  mb.add_constraints(constraints_vec);
  if (!encoding.IsNull()) mb.add_encoding(encoding);
  mb.add_metadata(metadata_vec);
  if (!applicability_vec.IsNull()) mb.add_applicability(applicability_vec);
  if (!archs_vec.IsNull()) mb.add_archs(archs_vec);
  mb.add_weights_fnv1a64(checksum);
  fb::FinishModelBuffer(b, mb.Finish());
  blob->assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

}  // namespace

void serialize_blob_unverified(const ir::Model& model, std::vector<uint8_t>* blob,
                               const BlobOptions& options) {
  // Twice: the checksum covers the weight bytes as stored (packed, fp16 or not), and the builder
  // writes the same bytes again with it.
  serialize(model, blob, options, 0);
  const uint64_t checksum = weights_checksum(fb::GetModel(blob->data()));
  serialize(model, blob, options, checksum);
}

Status write_blob(const ir::Model& model, std::vector<uint8_t>* blob, const BlobOptions& options) {
  if (options.weights == WeightStorage::kFp16) {
    for (const ir::Graph& g : model.graphs) {
      for (const ir::Layer& l : g.layers) {
        for (const bool recurrent : {false, true}) {
          if (!is_packed(l, recurrent)) continue;
          for (const float w : (recurrent ? l.recurrent : l.kernel).data) {
            if (!std::isfinite(kernels::half_to_float(float_to_half(w)))) {
              return Status::error(StatusCode::kInvalidArgument,
                                   "layer '%s': weight %g does not fit fp16 (|w| <= 65504); "
                                   "compile with --weights fp32",
                                   l.name.c_str(), static_cast<double>(w));
            }
          }
        }
      }
    }
  }
  std::vector<uint8_t> bytes;
  serialize_blob_unverified(model, &bytes, options);
  // Load what we wrote with the runtime itself, from 32-byte aligned memory as the runtime expects.
  const size_t size = bytes.size();
  std::unique_ptr<void, decltype(&std::free)> aligned(
      std::aligned_alloc(64, (size + 63) / 64 * 64), &std::free);
  std::memcpy(aligned.get(), bytes.data(), size);
  Model loaded;
  Status status = Model::load(aligned.get(), size, &loaded);
  if (!status) {
    return Status::error(status.code(), "the compiled model does not verify: %s", status.message());
  }
  // The first object serialized ends in alignment padding that nothing references (the verifier
  // checks referenced bytes only). Trimming it makes the blob exactly as long as its contents, so
  // a copy cut short by even one byte fails verification (tests/test_bad_inputs.cpp).
  size_t trimmed = size;
  while (trimmed > 0 && bytes[trimmed - 1] == 0 &&
         Model::load(aligned.get(), trimmed - 1, &loaded).is_ok()) {
    --trimmed;
  }
  bytes.resize(trimmed);
  *blob = std::move(bytes);
  return Status::ok();
}

}  // namespace tunecast::codegen
