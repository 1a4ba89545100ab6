// `hftrain plan RECIPE [overrides] --nproc N`: what each rank would hold under every sharding
// strategy (parameters, gradients, optimizer state by the ZeRO formulas, and the buffers), without
// training. The parameter count comes from the model's shape (nothing is allocated).
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "recipe_options.h"
#include "config/overrides.h"
#include "config/recipe.h"
#include "config/resolve.h"
#include "parallel/plan/activation_plan.h"
#include "parallel/plan/memory_plan.h"
#include "model/document_mask.h"
#include "model/hf_modules.h"
#include "model/spec.h"
#include "peft/lora.h"
#include "peft/quantized_linear.h"
#include "train/model_from.h"
#include "train/wiring.h"
#include "util/env.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

struct PlanArgs {
  std::vector<std::string> args;
  int nproc = 0;
  int nproc_per_node = 0;
};

int run_plan(const PlanArgs& a) {
  config::ResolveOptions options = recipe_options(a.args, "plan", "hftrain plan gpt2-124m --nproc 8");
  const config::Config cfg = train::resolve_with_model_from(options).values;
  int64_t psi = 0;
  parallel::UnitSizes units;
  std::vector<model::HfLinear> linears;  // LoRA's candidates
  std::string first_block;               // the parameter-name prefix of the first block
  int64_t in_full = 0;                   // what LoRA trains in full besides (a classifier's head)
  std::string experts;                   // a mixture of experts: its shape and the parameters a token uses
  if (cfg.model.arch == config::ModelArch::kBert) {
    // model.from's encoder as its config.json has it (biases, heads, labels), else the model.*
    // shape with a two-label classifier.
    std::optional<train::ModelSource> source;
    if (cfg.model.from) source = train::read_model_source(*cfg.model.from);
    const model::BertSpec bert = train::bert_spec(cfg, source && source->bert ? source : std::nullopt);
    psi = bert.parameter_count();
    units = {bert.root_parameter_count(), bert.block_parameter_count()};
    linears = model::hf_linear_modules(bert);
    first_block = bert.prefix() + (bert.modernbert() ? "layers.0." : "encoder.layer.0.");
    // The classifier and the head below it (RoBERTa's classifier.dense, ModernBERT's head.*,
    // DeBERTa's pooler.dense).
    const int64_t c = bert.hidden_size;
    const int64_t modernbert_head =
        bert.modernbert_head() ? c * c + (bert.classifier_bias ? c : 0) + (bert.norm_bias ? 2 * c : c) : 0;
    in_full = bert.num_labels * (c + 1) + (bert.roberta_head() || bert.deberta_pooler() ? c * (c + 1) : 0) +
              modernbert_head;
  } else {
    const model::ModelSpec spec = model::ModelSpec::from_config(cfg.model);
    psi = spec.parameter_count();
    units = {spec.root_parameter_count(), spec.block_parameter_count()};
    if (spec.n_experts > 0) {
      experts = "mixture of experts: " + std::to_string(spec.n_experts) + " experts of " +
                std::to_string(spec.expert_d_ff) + ", " + std::to_string(spec.experts_per_token) +
                " per token; active per token: " + std::to_string(spec.active_parameter_count()) + " of " +
                std::to_string(psi) + " parameters\n";
    }
    linears = model::hf_linear_modules(spec);
    first_block = "layers.0.";
  }
  if (cfg.peft.method == config::PeftMethod::kLora) {
    // Only the adapters train: the table below counts them; the frozen base sits beside it.
    const auto targets = peft::select_lora_targets(linears, cfg.peft.lora.target_modules, cfg.model.arch);
    int64_t trained = in_full, in_block = 0;
    for (const auto& t : targets) {
      const int64_t n = cfg.peft.lora.r * (t.in_features + t.rows) + (cfg.peft.lora.use_dora ? t.rows : 0);
      trained += n;
      if (t.dense.rfind(first_block, 0) == 0) in_block += n;
    }
    // The frozen base: fp32, a decoder's block linear layers quantized under peft.quantize_base.
    double base_bytes = 4.0 * static_cast<double>(psi - in_full);
    const config::QuantizeBase q = cfg.model.arch == config::ModelArch::kBert ? config::QuantizeBase::kNone
                                                                              : cfg.peft.quantize_base;
    if (q != config::QuantizeBase::kNone) {
      for (const auto& m : linears) {
        if (m.output_layer) continue;
        base_bytes += static_cast<double>(peft::quantized_bytes(m.rows, m.in_features, q)) -
                      4.0 * static_cast<double>(m.rows * m.in_features);
      }
    }
    std::cout << "LoRA r=" << cfg.peft.lora.r << " on " << targets.size() << " modules: " << trained
              << " trainable parameters (" << 100.0 * static_cast<double>(trained) / static_cast<double>(psi)
              << "%" << (in_full ? ", the classifier's included" : "") << "), " << psi - in_full << " frozen, "
              << parallel::format_bytes(base_bytes) << " of base weights on every rank ("
              << (q == config::QuantizeBase::kNone ? std::string("fp32")
                                                   : std::string("linear layers ") + peft::quantize_base_name(q) +
                                                         ", the rest fp32")
              << "; other peft.modules_to_save not counted)\n";
    psi = trained;
    units = {in_full, in_block};
  }
  if (a.nproc_per_node > 0 && a.nproc % a.nproc_per_node != 0) {
    throw util::UsageError("--nproc " + std::to_string(a.nproc) + " is not a multiple of --nproc-per-node " +
                               std::to_string(a.nproc_per_node),
                           "give the job's ranks and the ranks of each node, e.g. --nproc 16 --nproc-per-node 8");
  }
  std::cout << "model: Ψ = " << psi << " parameters\n"
            << experts
            << "ranks: N = " << a.nproc << "; optimizer state K = "
            << parallel::optimizer_state_bytes_per_parameter(cfg.optimizer) << " bytes per parameter; buckets of "
            << parallel::format_bytes(static_cast<double>(cfg.distributed.bucket_size)) << "\n"
            << "bytes per rank, fp32 master weights (trainer.precision bf16/fp16 computes through autocast; "
               "activations after the table):\n\n"
            << parallel::memory_table(psi, a.nproc, cfg.optimizer, cfg.distributed.bucket_size, units, a.nproc_per_node);
  switch (cfg.optimizer.name) {
    case config::OptimizerName::kAdafactor:
    case config::OptimizerName::kGaloreAdamW:
      // ShardingStrategy::create refuses the strategies that cut parameters for these.
      std::cout << "(optimizer.name's state is neither element-wise nor block-wise: it runs under ddp and zero1, the zero1 row "
                   "partitioned by whole parameters; the other rows do not apply)\n";
      break;
    default: break;
  }
  if (cfg.model.arch != config::ModelArch::kBert) {
    const model::ModelSpec spec = model::ModelSpec::from_config(cfg.model);
    parallel::ActivationShape shape{.batch = cfg.trainer.micro_batch_size,
                                    .seq_len = cfg.data.seq_len,
                                    .n_layer = spec.n_layer,
                                    .d_model = spec.d_model,
                                    .n_head = spec.n_head,
                                    .n_kv_head = spec.n_kv_head,
                                    .head_dim = spec.head_dim(),
                                    .d_ff = spec.d_ff,
                                    .vocab = spec.vocab_size,
                                    .gated_mlp = spec.gated_mlp(),
                                    .rope = !spec.learned_positions(),
                                    .dropout = spec.dropout,
                                    .element_bytes = cfg.trainer.precision == config::Precision::kFp32 ? 4 : 2,
                                    .checkpointing = cfg.model.activation_checkpointing};
    std::string note;
    try {
      shape.document_mask = train::document_masking(cfg);
      // On CUDA in bf16/fp16 (trainer.device auto counts as CUDA: plan runs where the job will not).
      const bool cuda = cfg.trainer.device != config::DeviceChoice::kCpu;
      const auto dtype = cfg.trainer.precision == config::Precision::kFp16 ? torch::kHalf : torch::kBFloat16;
      shape.variable_length = cuda && cfg.trainer.precision != config::Precision::kFp32 &&
                              model::variable_length_attention(torch::Device(torch::kCUDA, 0), dtype, spec.head_dim());
    } catch (const util::DataError&) {
      note = "  (the training data was not found, so its document masking default is not known; counted without)\n";
    }
    std::cout << "\n" << parallel::activation_summary(shape) << note;
  }
  return util::kExitOk;
}

}  // namespace

void add_plan_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand("plan", "Print the memory each rank would hold under every sharding strategy");
  sub->add_option("args", a->args, "RECIPE (a file or a shipped recipe name), then overrides: a.b=VALUE");
  sub->add_option("--nproc", a->nproc, "Number of ranks (processes in the whole job)")
      ->required()
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--nproc-per-node", a->nproc_per_node,
                  "Ranks in each node: adds the hybrid row (zero3 inside a node, replicated across nodes)")
      ->check(CLI::Range(1, 1000000));
  sub->callback([a, &runner] { runner = [a] { return run_plan(*a); }; });
}

}  // namespace hftrain::app
