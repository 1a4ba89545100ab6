// Where each parameter of a tensor-parallel decoder lies in the whole one: which rows or columns of
// it a rank holds. The model is built and initialised (or loaded) whole, every rank alike, and then
// each rank keeps its pieces (tp_take); checkpoints and exports put the pieces back together
// (tp_gather), so that a saved model is whole whatever the layout was.
//
//   qkv_proj (rows: q, k, v)      rank r: its heads' rows of q, of k and of v (three segments)
//   gate_up_proj (rows: gate, up) rank r: its d_ff rows of gate and of up (two segments)
//   up_proj                       rank r: its d_ff rows
//   o_proj, down_proj             rank r: its columns (the input features of its heads / d_ff)
//   embed_tokens, lm_head         rank r: its rows of the vocabulary (vocab_slice)
//   norms, biases of o_proj and down_proj, embed_positions, q/k norms: whole on every rank
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "model/encoder/bert_spec.h"
#include "model/spec.h"
#include "model/decoder/tensor_parallel.h"

namespace hftrain::model {

struct TpSplit {
  int64_t dim = -1;  // the dimension cut; -1: the parameter is whole on every rank
  int64_t whole = 0;  // the whole parameter's size along `dim`
  std::vector<std::pair<int64_t, int64_t>> segments;  // (offset, length) along `dim`, concatenated
  bool split() const { return dim >= 0; }
  int64_t length() const;  // the piece's size along `dim`
};

// The parameter `name` of the decoder described by `spec` (whole sizes) as `rank` of `size` holds it.
TpSplit decoder_tp_split(const ModelSpec& spec, const std::string& name, int rank, int size);

// The same for a BERT, RoBERTa or XLM-R encoder (Hugging Face's names): query, key, value and the
// intermediate layer by rows (each rank its heads, its intermediate units), the attention output
// and output layers by columns, the word embeddings by vocabulary rows; everything else whole.
TpSplit encoder_tp_split(const BertSpec& spec, const std::string& name, int rank, int size);

// What a tensor-parallel rank holds, by the spec alone (`hftrain plan`): the elements of the split
// parameters (whole sizes; a rank holds about 1/tp of them) and of those every rank holds whole.
struct TpShare {
  int64_t split = 0;
  int64_t whole = 0;
  int64_t per_rank(int tp) const { return (split + tp - 1) / tp + whole; }
};
TpShare tp_share(const ModelSpec& spec);
TpShare tp_share(const BertSpec& spec);

// This rank's piece of `whole` (contiguous, a copy); `whole` itself when the split keeps it whole.
torch::Tensor tp_take(const torch::Tensor& whole, const TpSplit& split);
// Each parameter of `params` replaced in place (set_data) by its piece for `rank` of `size`, as
// `split_of` says (a model's tensor_parallelize, after its weights are in place).
void keep_pieces(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                 const std::function<TpSplit(const std::string&, int, int)>& split_of, int rank, int size);

// The whole tensor from every rank's piece (collective over `group`): `piece` is this rank's;
// `splits[r]` rank r's split of the same parameter.
torch::Tensor tp_gather(const torch::Tensor& piece, const std::vector<TpSplit>& splits, TpGroup& group);

}  // namespace hftrain::model
