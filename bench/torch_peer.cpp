// libtorch peer: runs an ir::Model graph by graph with ATen ops, the way a PyTorch port of the
// Keras model would (nn.Linear = addmm, nn.Embedding = index_select, nn.LSTM = at::lstm).
// Keras and PyTorch share the LSTM gate order (i, f, g/c, o); the IR keeps Keras' [in, 4u]
// kernels, so PyTorch's weight_ih is kernel^T and bias_hh is zero.
#include "torch_peer.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdio>

namespace tunecast::bench {
namespace {

using ir::Activation;
using ir::LayerType;

at::Tensor matrix(const ir::Matrix& m) {
  return torch::from_blob(const_cast<float*>(m.data.data()),
                          {static_cast<int64_t>(m.rows), static_cast<int64_t>(m.cols)})
      .clone();
}

at::Tensor vector_of(const std::vector<float>& v, int64_t n) {
  if (v.empty()) return torch::zeros({n});
  return torch::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())}).clone();
}

at::Tensor activate(Activation a, const at::Tensor& x) {
  switch (a) {
    case Activation::Relu: return at::relu(x);
    case Activation::Tanh: return at::tanh(x);
    case Activation::Sigmoid: return at::sigmoid(x);
    case Activation::Softmax: return at::softmax(x, 1);
    case Activation::HardSigmoid: return at::clamp(x * 0.2 + 0.5, 0.0, 1.0);
    default: return x;
  }
}

// Weights of one layer in the form its ATen op wants.
struct LayerWeights {
  at::Tensor kernel, bias;           // Dense [in, out] / [out]; Embedding table; token LSTM table
  at::Tensor w_ih, w_hh, b_ih, b_hh; // LSTM, PyTorch layout
  at::Tensor recurrent;              // [u, 4u] for the hand-written cell
  bool fused_lstm = false;           // at::lstm applies (sigmoid/tanh, dense input)
};

class Peer final : public TorchPeer {
 public:
  Peer(const ir::Model& model) : model_(model) {
    for (const ir::Graph& g : model.graphs) {
      std::vector<LayerWeights> weights;
      for (const ir::Layer& l : g.layers) {
        LayerWeights w;
        if (!l.kernel.empty()) w.kernel = matrix(l.kernel);
        if (l.type == LayerType::Lstm) {
          const int64_t gates = 4 * static_cast<int64_t>(l.units);
          w.bias = vector_of(l.bias, gates);
          w.recurrent = matrix(l.recurrent);
          w.fused_lstm = !l.token_input && l.recurrent_activation == Activation::Sigmoid &&
                         l.cell_activation == Activation::Tanh;
          if (w.fused_lstm) {
            w.w_ih = w.kernel.t().contiguous();
            w.w_hh = w.recurrent.t().contiguous();
            w.b_ih = w.bias;
            w.b_hh = torch::zeros({gates});
          }
        } else if (!l.bias.empty()) {
          w.bias = vector_of(l.bias, static_cast<int64_t>(l.bias.size()));
        }
        weights.push_back(std::move(w));
      }
      weights_.push_back(std::move(weights));
    }
  }

  std::vector<int> greedy(const std::vector<float>& features,
                          const std::vector<std::vector<bool>>& allowed) override {
    c10::InferenceMode guard;
    const ir::Seq2Seq& s = *model_.seq2seq;
    const ir::Graph& enc = model_.graphs[s.encoder];
    const ir::Graph& dec = model_.graphs[s.decoder];
    if (masks_.size() != allowed.size()) {
      masks_.clear();
      for (const std::vector<bool>& row : allowed) {
        at::Tensor m = torch::zeros({static_cast<int64_t>(row.size())});
        for (size_t t = 0; t < row.size(); ++t) {
          if (!row[t]) m[t] = -std::numeric_limits<float>::infinity();
        }
        masks_.push_back(m);
      }
    }
    const ir::Value& in = enc.values[enc.inputs[0]];
    std::vector<at::Tensor> ev(enc.values.size());
    ev[enc.inputs[0]] = torch::from_blob(const_cast<float*>(features.data()),
                                         {static_cast<int64_t>(in.rows), static_cast<int64_t>(in.cols)});
    run(s.encoder, &ev);
    std::vector<at::Tensor> dv(dec.values.size());
    dv[dec.inputs[s.token_input]] = torch::full({1, 1}, static_cast<float>(s.start_token));
    for (const ir::StateLink& link : s.states) {
      dv[dec.inputs[link.decoder_input]] = ev[enc.outputs[link.encoder_output]];
    }
    for (const ir::ContextLink& link : s.contexts) {
      dv[dec.inputs[link.decoder_input]] = ev[enc.outputs[link.encoder_output]];
    }
    std::vector<int> tokens;
    for (size_t position = 0; position < allowed.size(); ++position) {
      run(s.decoder, &dv);
      at::Tensor logits = dv[dec.outputs[s.logits_output]];
      at::Tensor scores = s.logits_are_probabilities ? at::log(logits) : at::log_softmax(logits, 1);
      const int token = static_cast<int>((scores[0] + masks_[position]).argmax().item<int64_t>());
      tokens.push_back(token);
      dv[dec.inputs[s.token_input]] = torch::full({1, 1}, static_cast<float>(token));
      for (const ir::StateLink& link : s.states) {
        dv[dec.inputs[link.decoder_input]] = dv[dec.outputs[link.decoder_output]];
      }
    }
    return tokens;
  }

  void prepare_step(int batch) override {
    c10::InferenceMode guard;
    const ir::Seq2Seq& s = *model_.seq2seq;
    const ir::Graph& dec = model_.graphs[s.decoder];
    step_values_.assign(dec.values.size(), at::Tensor());
    for (size_t i = 0; i < dec.inputs.size(); ++i) {
      const ir::Value& v = dec.values[dec.inputs[i]];
      const int64_t rows = v.rows ? v.rows : batch;
      step_values_[dec.inputs[i]] =
          i == s.token_input ? torch::full({rows, 1}, 1.0f) : torch::rand({rows, int64_t{v.cols}}) - 0.5;
    }
  }

  void step() override {
    c10::InferenceMode guard;
    std::vector<at::Tensor> values = step_values_;
    run(model_.seq2seq->decoder, &values);
  }

 private:
  void run(uint32_t graph_index, std::vector<at::Tensor>* values) {
    const ir::Graph& g = model_.graphs[graph_index];
    std::vector<at::Tensor>& v = *values;
    for (size_t li = 0; li < g.layers.size(); ++li) {
      const ir::Layer& l = g.layers[li];
      const LayerWeights& w = weights_[graph_index][li];
      const at::Tensor& x = v[l.inputs[0]];
      switch (l.type) {
        case LayerType::Dense:
          v[l.outputs[0]] = activate(l.activation, w.bias.defined() ? at::addmm(w.bias, x, w.kernel)
                                                                    : at::mm(x, w.kernel));
          break;
        case LayerType::Embedding:
          v[l.outputs[0]] = w.kernel.index_select(0, x.reshape({-1}).to(at::kLong));
          break;
        case LayerType::Lstm:
          lstm(l, w, g.batched, values);
          break;
        case LayerType::Relu: v[l.outputs[0]] = at::relu(x); break;
        case LayerType::Tanh: v[l.outputs[0]] = at::tanh(x); break;
        case LayerType::Sigmoid: v[l.outputs[0]] = at::sigmoid(x); break;
        case LayerType::Softmax: v[l.outputs[0]] = at::softmax(x, 1); break;
        case LayerType::Add: {
          at::Tensor y = x;
          for (size_t i = 1; i < l.inputs.size(); ++i) y = y + v[l.inputs[i]];
          v[l.outputs[0]] = y;
          break;
        }
        case LayerType::Concat: {
          std::vector<at::Tensor> parts;
          for (uint32_t id : l.inputs) parts.push_back(v[id]);
          v[l.outputs[0]] = at::cat(parts, 1);
          break;
        }
        default:
          break;  // excluded by supported()
      }
    }
  }

  void lstm(const ir::Layer& l, const LayerWeights& w, bool batched, std::vector<at::Tensor>* values) {
    std::vector<at::Tensor>& v = *values;
    const at::Tensor& x = v[l.inputs[0]];
    const int64_t units = l.units;
    const int64_t rows = x.size(0);
    const int64_t batch = batched ? rows : 1;
    at::Tensor h = l.inputs.size() == 3 ? v[l.inputs[1]] : torch::zeros({batch, units});
    at::Tensor c = l.inputs.size() == 3 ? v[l.inputs[2]] : torch::zeros({batch, units});
    if (w.fused_lstm) {
      // nn.LSTM: [time, batch, features]; a step graph is one time step over the beams.
      at::Tensor seq = batched ? x.unsqueeze(0) : x.unsqueeze(1);
      if (l.reverse) seq = seq.flip(0);
      auto out = at::lstm(seq, {h.unsqueeze(0), c.unsqueeze(0)}, {w.w_ih, w.w_hh, w.b_ih, w.b_hh},
                          true, 1, 0.0, false, false, false);
      at::Tensor y = std::get<0>(out);
      if (l.reverse) y = y.flip(0);
      const at::Tensor h_n = std::get<1>(out)[0];
      v[l.outputs[1]] = h_n;
      v[l.outputs[2]] = std::get<2>(out)[0];
      v[l.outputs[0]] = batched ? y[0] : (l.return_sequences ? y.reshape({rows, units}) : h_n);
      return;
    }
    // Token-indexed input projection or non-default activations: the cell by hand.
    at::Tensor z_in = l.token_input
                          ? w.kernel.index_select(0, x.reshape({-1}).to(at::kLong)) + w.bias
                          : at::addmm(w.bias, x, w.kernel);
    std::vector<at::Tensor> seq;
    const int64_t steps = batched ? 1 : rows;
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t t = l.reverse ? steps - 1 - s : s;
      at::Tensor z = batched ? z_in : z_in.narrow(0, t, 1);
      z = at::addmm(z, h, w.recurrent);
      auto gates = z.chunk(4, 1);
      c = activate(l.recurrent_activation, gates[1]) * c +
          activate(l.recurrent_activation, gates[0]) * activate(l.cell_activation, gates[2]);
      h = activate(l.recurrent_activation, gates[3]) * activate(l.cell_activation, c);
      seq.push_back(h);
    }
    if (l.reverse) std::reverse(seq.begin(), seq.end());
    v[l.outputs[1]] = h;
    v[l.outputs[2]] = c;
    v[l.outputs[0]] = batched ? h : (l.return_sequences ? at::cat(seq, 0) : h);
  }

  const ir::Model& model_;
  std::vector<std::vector<LayerWeights>> weights_;
  std::vector<at::Tensor> masks_;
  std::vector<at::Tensor> step_values_;
};

bool supported(const ir::Model& model, std::string* why) {
  if (!model.seq2seq) {
    *why = "not a sequence-to-sequence model";
    return false;
  }
  for (const ir::Graph& g : model.graphs) {
    for (const ir::Layer& l : g.layers) {
      if (l.type == LayerType::Conv1D || l.type == LayerType::Attention) {
        *why = "layer '" + l.name + "' has no libtorch peer implementation";
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<TorchPeer> make_torch_peer(const ir::Model& model, std::string* why) {
  // Once per process: libtorch refuses a second set_num_interop_threads (--simd runs the report
  // once per level).
  static const bool one_thread = [] {
    at::set_num_threads(1);
    at::set_num_interop_threads(1);
    return true;
  }();
  (void)one_thread;
  if (!supported(model, why)) return nullptr;
  return std::make_unique<Peer>(model);
}

std::string torch_description() {
  char text[64];
  std::snprintf(text, sizeof text, "libtorch %s, %d thread", TORCH_VERSION, at::get_num_threads());
  return text;
}

}  // namespace tunecast::bench
