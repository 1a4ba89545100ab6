// Packing without contamination: a packed batch with document masking (data.document_mask) trains
// exactly what its documents would alone. The batch comes from the data stage's collate; each
// document is then run as its own sequence, and the summed losses and the gradients must agree.
#include "../torch_catch.h"  // first: see the file

#include <random>

#include "data/packing.h"
#include "data/token_corpus.h"
#include "model/document_mask.h"
#include "model/transformer.h"

using namespace hftrain;

namespace {

constexpr uint32_t kEot = 0;

model::ModelSpec spec_of(config::ModelArch arch) {
  model::ModelSpec s;
  s.arch = arch;
  s.n_layer = 2, s.n_head = 4, s.d_model = 32, s.max_seq_len = 64, s.vocab_size = 50, s.norm_eps = 1e-5;
  s.init_std = 0.2;  // large weights: attention that leaked across documents would show
  if (arch == config::ModelArch::kGpt2) {
    s.n_kv_head = 4, s.d_ff = 64, s.tie_embeddings = true;
  } else {
    s.n_kv_head = 2, s.d_ff = 48, s.rope_theta = 10000.0, s.tie_embeddings = false;
  }
  return s;
}

// Documents of skewed lengths (each gets the end-of-text token), some with prompt tokens that
// carry no loss.
struct Corpus {
  std::vector<std::vector<uint32_t>> docs;
  std::vector<std::vector<uint8_t>> train;
};

Corpus make_docs(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  Corpus c;
  for (int d = 0; d < count; ++d) {
    const int len = 1 + static_cast<int>(rng() % (d % 3 == 0 ? 20 : 6));
    std::vector<uint32_t> doc;
    std::vector<uint8_t> flags;
    for (int i = 0; i < len; ++i) {
      doc.push_back(1 + rng() % 49);
      flags.push_back(d % 4 == 1 && i < len / 2 ? 0 : 1);
    }
    flags.push_back(1);  // the end-of-text token
    c.docs.push_back(doc);
    c.train.push_back(flags);
  }
  return c;
}

// The documents one after another, each followed by the end-of-text token.
std::shared_ptr<data::TokenCorpus> corpus_of(const Corpus& c) {
  std::vector<uint32_t> tokens;
  std::vector<uint8_t> mask;
  std::vector<uint64_t> starts;
  for (size_t d = 0; d < c.docs.size(); ++d) {
    starts.push_back(tokens.size());
    tokens.insert(tokens.end(), c.docs[d].begin(), c.docs[d].end());
    tokens.push_back(kEot);
    mask.insert(mask.end(), c.train[d].begin(), c.train[d].end());
  }
  starts.push_back(tokens.size());
  return std::make_shared<data::TokenCorpus>(std::move(tokens), std::move(mask), std::move(starts), "docs");
}

torch::Tensor tensor_of(const std::vector<int64_t>& v, int64_t rows, int64_t cols) {
  return torch::tensor(v, torch::kInt64).view({rows, cols});
}

std::vector<torch::Tensor> grads_of(model::Transformer& m) {
  std::vector<torch::Tensor> out;
  for (auto& p : m->parameters()) out.push_back(p.grad().clone());
  m->zero_grad();
  return out;
}

}  // namespace

TEST_CASE("document mask: block-diagonal causal mask from restarting positions", "[model][packing]") {
  const auto mask = model::document_causal_mask(torch::tensor({0, 1, 2, 0, 1, 0}, torch::kInt64).view({1, 6}));
  REQUIRE(mask.sizes() == torch::IntArrayRef({1, 1, 6, 6}));
  const auto expected = torch::tensor({1, 0, 0, 0, 0, 0,  //
                                       1, 1, 0, 0, 0, 0,  //
                                       1, 1, 1, 0, 0, 0,  //
                                       0, 0, 0, 1, 0, 0,  //
                                       0, 0, 0, 1, 1, 0,  //
                                       0, 0, 0, 0, 0, 1},
                                      torch::kBool)
                            .view({1, 1, 6, 6});
  CHECK(mask.equal(expected));
}

TEST_CASE("document mask: a packed batch's loss and gradients equal its documents run alone",
          "[model][packing]") {
  for (const auto arch : {config::ModelArch::kGpt2, config::ModelArch::kLlama}) {
    DYNAMIC_SECTION((arch == config::ModelArch::kGpt2 ? "gpt2" : "llama (GQA, RoPE)")) {
      const Corpus c = make_docs(arch == config::ModelArch::kGpt2 ? 7 : 11, 24);
      auto corpus = corpus_of(c);
      data::TokenDataset ds({corpus}, {data::Piece{0, 0, corpus->num_tokens()}});
      const data::PackingOptions packing{.seq_len = 24, .mode = data::PackingMode::kPack, .document_mask = true};
      data::SampleIndex index(ds, packing);
      REQUIRE(index.size() >= 3);
      const std::vector<uint64_t> ids{0, 1, 2};
      const data::HostBatch batch = data::collate(ds, index, ids, packing, 0);
      REQUIRE(!batch.position_ids.empty());
      const int64_t B = batch.batch_size, T = batch.seq_len;

      torch::manual_seed(3);
      model::Transformer m(spec_of(arch));
      m->train();
      const auto input = tensor_of(batch.input_ids, B, T);
      const auto labels = tensor_of(batch.labels, B, T);
      const auto positions = tensor_of(batch.position_ids, B, T);
      const auto packed = m->loss_sum(input, labels, 0.0, positions);
      packed.backward();
      const auto packed_grads = grads_of(m);

      // Each document (a run of positions from a 0 to the next) alone, with its own targets.
      torch::Tensor alone = torch::zeros({}, torch::kFloat32);
      int64_t targets = 0, pieces = 0;
      for (int64_t b = 0; b < B; ++b) {
        int64_t start = 0;
        for (int64_t t = 1; t <= T; ++t) {
          if (t < T && batch.position_ids[static_cast<size_t>(b * T + t)] != 0) continue;
          const auto doc_ids = input[b].slice(0, start, t).unsqueeze(0);
          const auto doc_labels = labels[b].slice(0, start, t).unsqueeze(0);
          targets += doc_labels.ne(data::kIgnoreIndex).sum().item<int64_t>();
          alone = alone + m->loss_sum(doc_ids, doc_labels, 0.0);
          ++pieces;
          start = t;
        }
      }
      alone.backward();
      const auto alone_grads = grads_of(m);
      CHECK(pieces > B);  // the rows do hold several documents
      CHECK(targets == batch.num_target_tokens);
      const double scale = 1.0 / static_cast<double>(targets);  // token-weighted mean losses
      CHECK(packed.item<double>() * scale == Approx(alone.item<double>() * scale).margin(1e-5));
      for (size_t i = 0; i < packed_grads.size(); ++i) {
        const double diff = (packed_grads[i] - alone_grads[i]).abs().max().item<double>() * scale;
        INFO("parameter " << i);
        CHECK(diff < 1e-5);
      }

      // Without the positions, the same batch attends across documents: the check above has teeth.
      const auto leaky = m->loss_sum(input, labels, 0.0);
      CHECK(std::abs(leaky.item<double>() - packed.item<double>()) * scale > 1e-3);
    }
  }
}
