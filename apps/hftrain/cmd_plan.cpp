// `hftrain plan RECIPE [overrides] --nproc N [--memory 80GB]`: what each rank would hold under every
// sharding strategy (parameters, gradients, optimizer state by the ZeRO formulas, and the buffers),
// at the recipe's tensor and pipeline parallelism, without training; with --memory, every layout
// (tensor parallelism x pipeline parallelism x strategy) that fits a device. The parameter count comes from the model's
// shape (nothing is allocated).
#include <functional>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "config/overrides.h"
#include "config/recipe.h"
#include "config/resolve.h"
#include "config/units.h"
#include "model/decoder/document_mask.h"
#include "model/decoder/tp_plan.h"
#include "model/hf/hf_modules.h"
#include "model/spec.h"
#include "parallel/plan/activation_plan.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/plan/pipeline_plan.h"
#include "peft/lora.h"
#include "peft/quantized_linear.h"
#include "recipe_options.h"
#include "train/build/model_from.h"
#include "train/build/pipeline_setup.h"
#include "train/build/tp_setup.h"
#include "train/build/wiring.h"
#include "util/env.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

struct PlanArgs {
  std::vector<std::string> args;
  int nproc = 0;
  int nproc_per_node = 0;
  std::string memory;  // --memory: a device's bytes ("80GB"), or empty
};

// A decoder's activations for one micro-batch at tensor parallelism `tp`.
parallel::ActivationShape activation_shape(const config::Config& cfg, const model::ModelSpec& spec, int tp) {
  return {.batch = cfg.trainer.micro_batch_size,
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
          .checkpointing = cfg.model.activation_checkpointing,
          .tensor_parallel = tp,
          .sequence_parallel = tp > 1 && cfg.distributed.sequence_parallel};
}

int run_plan(const PlanArgs& a) {
  config::ResolveOptions options = recipe_options(a.args, "plan", "hftrain plan gpt2-124m --nproc 8");
  const config::Config cfg = train::resolve_with_model_from(options).values;
  const bool bf16_params = cfg.trainer.param_dtype == config::ParamDtype::kBf16;
  int64_t psi = 0;
  parallel::UnitSizes units;
  std::vector<model::HfLinear> linears;  // LoRA's candidates
  std::string first_block;               // the parameter-name prefix of the first block
  int64_t in_full = 0;                   // what LoRA trains in full besides (a classifier's head)
  std::string experts;                   // a mixture of experts: its shape and the parameters a token uses
  const int tp = static_cast<int>(cfg.distributed.tensor_parallel);
  const int pp = static_cast<int>(cfg.distributed.pipeline_parallel);
  const std::optional<model::ModelSpec> decoder = train::decoder_spec(cfg);
  // The run's own refusals, before any figure.
  if (tp > 1) train::check_tensor_parallel(cfg, decoder ? &*decoder : nullptr);
  train::check_pipeline_parallel(cfg, decoder ? &*decoder : nullptr);
  model::TpShare share;                // tensor parallelism: what is split and what is whole
  std::function<bool(int)> splits_by;  // whether the model's heads and units divide by tp
  if (cfg.model.arch == config::ModelArch::kBert) {
    // model.from's encoder as its config.json has it (biases, heads, labels), else the model.*
    // shape with a two-label classifier.
    std::optional<train::ModelSource> source;
    if (cfg.model.from) source = train::read_model_source(*cfg.model.from);
    const model::BertSpec bert = train::bert_spec(cfg, source && source->bert ? source : std::nullopt);
    if (tp > 1) train::check_encoder_tensor_parallel(bert, cfg);
    share = model::tp_share(bert);
    splits_by = [bert](int t) {
      return !bert.modernbert() && !bert.deberta() && bert.num_attention_heads % t == 0 &&
             bert.intermediate_size % t == 0;
    };
    psi = bert.parameter_count();
    units = {bert.root_parameter_count(), bert.block_parameter_count()};
    linears = model::hf_linear_modules(bert);
    first_block = bert.prefix() + (bert.modernbert() ? "layers.0." : "encoder.layer.0.");
    // The classifier and the head below it (RoBERTa's classifier.dense, ModernBERT's head.*,
    // DeBERTa's pooler.dense).
    const int64_t c = bert.hidden_size;
    const int64_t modernbert_head =
        bert.modernbert_head() ? c * c + (bert.classifier_bias ? c : 0) + (bert.norm_bias ? 2 * c : c) : 0;
    in_full =
        bert.num_labels * (c + 1) + (bert.roberta_head() || bert.deberta_pooler() ? c * (c + 1) : 0) + modernbert_head;
  } else {
    const model::ModelSpec& spec = *decoder;
    share = model::tp_share(spec);
    splits_by = [spec](int t) {
      return (spec.n_experts == 0 || (spec.expert_d_ff % t == 0 && spec.shared_expert_d_ff % t == 0)) &&
             spec.n_head % t == 0 && spec.n_kv_head % t == 0 && spec.d_ff % t == 0;
    };
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
    const config::QuantizeBase q =
        cfg.model.arch == config::ModelArch::kBert ? config::QuantizeBase::kNone : cfg.peft.quantize_base;
    if (q != config::QuantizeBase::kNone) {
      for (const auto& m : linears) {
        if (m.output_layer) continue;
        base_bytes += static_cast<double>(peft::quantized_bytes(m.rows, m.in_features, q)) -
                      4.0 * static_cast<double>(m.rows * m.in_features);
      }
    }
    std::cout << "LoRA r=" << cfg.peft.lora.r << " on " << targets.size() << " modules: " << trained
              << " trainable parameters (" << 100.0 * static_cast<double>(trained) / static_cast<double>(psi) << "%"
              << (in_full ? ", the classifier's included" : "") << "), " << psi - in_full << " frozen, "
              << parallel::format_bytes(base_bytes) << " of base weights on every rank ("
              << (q == config::QuantizeBase::kNone
                      ? std::string("fp32")
                      : std::string("linear layers ") + peft::quantize_base_name(q) + ", the rest fp32")
              << "; other peft.modules_to_save not counted)\n";
    psi = trained;
    units = {in_full, in_block};
  }
  if (a.nproc_per_node > 0 && a.nproc % a.nproc_per_node != 0) {
    throw util::UsageError("--nproc " + std::to_string(a.nproc) + " is not a multiple of --nproc-per-node " +
                               std::to_string(a.nproc_per_node),
                           "give the job's ranks and the ranks of each node, e.g. --nproc 16 --nproc-per-node 8");
  }
  if (a.nproc % (tp * pp) != 0) {
    throw util::ConfigError((pp > 1 ? "distributed.tensor_parallel x distributed.pipeline_parallel = " +
                                          std::to_string(tp) + " x " + std::to_string(pp)
                                    : "distributed.tensor_parallel=" + std::to_string(tp)) +
                                " does not divide --nproc " + std::to_string(a.nproc) +
                                " (world = data parallel x tensor parallel x pipeline parallel)",
                            "give --nproc a multiple of " + std::to_string(tp * pp));
  }
  // A tensor-parallel rank's Ψ: its pieces of the split parameters plus those every rank holds;
  // zero3's units shrink alike (mostly split).
  const auto per_rank = [&](int t) { return t == 1 ? psi : share.per_rank(t); };
  const auto units_at = [&](int t) {
    return parallel::UnitSizes{units.root / t + (units.root % t != 0), units.block / t + (units.block % t != 0)};
  };
  // Pipeline parallelism: each stage's blocks, parameters and activations; a rank holds its stage's
  // share of the model (the largest stage's in the table).
  std::vector<parallel::StagePlan> stages;
  // The stages at pipeline parallelism `p` for one micro-batch of `shape`.
  const auto stage_plans = [&](const parallel::ActivationShape& shape, int p) {
    const model::ModelSpec& spec = *decoder;
    config::Config at = cfg;
    at.distributed.pipeline_parallel = p;
    if (p != pp) {  // the other layouts without this run's boundaries or interleaving
      at.distributed.pipeline_stages.clear();
      at.distributed.pipeline_virtual_stages = 1;
    }
    std::vector<int64_t> layers;
    for (int64_t i = 0; i < spec.n_layer; ++i) layers.push_back(spec.layer_parameter_count(i));
    const train::StageExtras extras = train::stage_extras(spec);
    return parallel::plan_stages(shape, train::pipeline_boundaries(at.distributed, spec), layers, extras.first,
                                 extras.last, extras.copy, train::pipeline_schedule(cfg),
                                 static_cast<int>(cfg.trainer.grad_accum_steps),
                                 static_cast<int>(at.distributed.pipeline_virtual_stages));
  };
  const auto largest = [](const std::vector<parallel::StagePlan>& plans) {
    parallel::StagePlan most;
    for (const auto& p : plans) {
      if (p.parameters > most.parameters) most.parameters = p.parameters;
      most.activations = std::max(most.activations, p.activations);
    }
    return most;
  };
  // A rank's Ψ at tp x pp: its stage's share of its tensor-parallel Ψ (the largest stage's).
  const auto rank_psi = [&](int t, const std::vector<parallel::StagePlan>& plans) {
    if (plans.empty()) return per_rank(t);
    const double share_of_model = static_cast<double>(largest(plans).parameters) / static_cast<double>(psi);
    return static_cast<int64_t>(static_cast<double>(per_rank(t)) * share_of_model + 0.5);
  };
  if (pp > 1) stages = stage_plans(activation_shape(cfg, *decoder, tp), pp);  // Ψ now; activations again below
  std::cout << "model: Ψ = " << psi << " parameters\n" << experts;
  if (tp > 1) {
    std::cout << "tensor parallel " << tp << ": Ψ per rank = " << share.split << " split / " << tp << " + "
              << share.whole << " whole on every rank = " << per_rank(tp) << "\n";
  }
  if (pp > 1) {
    std::cout << "pipeline parallel " << pp
              << ": Ψ per rank = its stage's share (the largest stage: " << largest(stages).parameters << " of " << psi
              << " parameters) = " << rank_psi(tp, stages) << "\n";
  }
  const int dp = a.nproc / (tp * pp);
  std::cout << "ranks: " << a.nproc
            << (tp > 1 || pp > 1
                    ? std::string(" = ") + (tp > 1 ? "tensor parallel " + std::to_string(tp) + " x " : "") +
                          (pp > 1 ? "pipeline parallel " + std::to_string(pp) + " x " : "") +
                          "data parallel N = " + std::to_string(dp)
                    : "; N = " + std::to_string(a.nproc))
            << "; optimizer state K = "
            << parallel::optimizer_state_bytes_per_parameter(cfg.optimizer, cfg.trainer.ema.enabled)
            << " bytes per parameter" << (cfg.trainer.ema.enabled ? " (4 of them trainer.ema's average)" : "")
            << "; buckets of "
            << parallel::format_bytes(static_cast<double>(cfg.distributed.bucket_size)) << "\n"
            << (bf16_params ? "bytes per rank, bf16 weights and gradients with fp32 master weights "
                              "(trainer.param_dtype=bf16: 2 + 2 + 4 + K bytes a parameter; runs under ddp; "
                              "activations after the table):\n\n"
                            : "bytes per rank, fp32 master weights (trainer.precision bf16/fp16 computes through "
                              "autocast; activations after the table):\n\n")
            << parallel::memory_table(rank_psi(tp, stages), dp, cfg.optimizer, cfg.distributed.bucket_size,
                                      units_at(tp), tp > 1 || pp > 1 ? 0 : a.nproc_per_node, bf16_params,
                                      cfg.trainer.ema.enabled);
  if (cfg.preference.objective != config::PreferenceObjective::kNone) {
    // Preference training: each micro-batch runs its pairs' chosen and rejected rows together; DPO's
    // reference is either a frozen copy of the whole model on every rank or the adapters turned off.
    const bool copy = train::dpo_reference_copy(cfg);
    const bool reward = cfg.preference.objective == config::PreferenceObjective::kReward;
    std::cout << "preference."
              << (copy ? std::string("objective=") +
                             (cfg.preference.objective == config::PreferenceObjective::kKto ? "kto" : "dpo") +
                             ": the reference, a frozen copy of the starting weights, adds "
                       : std::string("objective: no reference copy ("))
              << (copy ? parallel::format_bytes(static_cast<double>(psi) * (bf16_params ? 2.0 : 4.0)) +
                             " on every rank (Ψ x " + (bf16_params ? "2" : "4") +
                             " B, not sharded; preference.reference=adapters_off with LoRA holds none)"
                       : std::string(train::precomputed_reference(cfg)
                                         ? "the reference log-probs are computed before training, 8 bytes a pair)"
                                     : cfg.preference.objective == config::PreferenceObjective::kDpo
                                         ? "the adapters are turned off for it)"
                                         : "SimPO, ORPO and reward models have none)"))
              << "; a micro-batch of B pairs runs 2B rows (trainer.micro_batch_size=" << cfg.trainer.micro_batch_size
              << " pairs: " << 2 * cfg.trainer.micro_batch_size << " rows), and scores "
              << (reward ? "one score per row (the score head in place of the output layer)\n"
                         : "their full logits\n");
  }
  switch (cfg.optimizer.name) {
    case config::OptimizerName::kAdafactor:
    case config::OptimizerName::kGaloreAdamW:
    case config::OptimizerName::kMuon:
    case config::OptimizerName::kApolloAdamW:
      // ShardingStrategy::create refuses the strategies that cut parameters for these.
      std::cout << "(optimizer.name's state is neither element-wise nor block-wise: it runs under ddp and zero1, the "
                   "zero1 row "
                   "partitioned by whole parameters; the other rows do not apply)\n";
      break;
    default:
      break;
  }
  bool document_mask = false, variable_length = false;
  if (decoder) {
    const model::ModelSpec& spec = *decoder;
    parallel::ActivationShape shape = activation_shape(cfg, spec, tp);
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
    if (pp > 1) {
      stages = stage_plans(shape, pp);  // with this run's document masking
      std::cout << parallel::pipeline_summary(stages, train::pipeline_schedule(cfg),
                                              static_cast<int>(cfg.trainer.grad_accum_steps),
                                              static_cast<int>(cfg.distributed.pipeline_virtual_stages));
    }
    document_mask = shape.document_mask;
    variable_length = shape.variable_length;
  }
  if (!a.memory.empty()) {
    const config::Parsed<int64_t> bytes = config::parse_size(a.memory);
    if (const std::string* bad = std::get_if<std::string>(&bytes)) {
      throw util::UsageError("--memory " + a.memory + ": " + *bad, "give a device's memory, e.g. --memory 80GB");
    }
    // Every tensor and pipeline parallelism that divides the ranks and the model (and that the
    // model splits at: pipeline stages for decoders without adapters, at most a block each).
    std::vector<parallel::LayoutCandidate> candidates;
    const bool lora = cfg.peft.method != config::PeftMethod::kNone;
    for (int t = 1; t <= a.nproc; ++t) {
      if (a.nproc % t != 0 || (t > 1 && (!splits_by(t) || lora))) continue;
      for (int p = 1; t * p <= a.nproc; ++p) {
        if (a.nproc % (t * p) != 0) continue;
        if (p > 1 && (!decoder || lora || decoder->n_experts > 0 || p > decoder->n_layer)) continue;
        double activations = 0;
        int64_t held = per_rank(t);
        if (decoder) {
          parallel::ActivationShape shape = activation_shape(cfg, *decoder, t);
          shape.document_mask = document_mask;
          shape.variable_length = variable_length;
          activations = parallel::estimate_activations(shape).total();
          if (p > 1) {  // the largest stage's parameters and the most any stage holds of activations
            const auto plans = stage_plans(shape, p);
            activations = largest(plans).activations;
            held = rank_psi(t, plans);
          }
        }
        candidates.push_back({t, p, held, units_at(t), activations});
      }
    }
    std::cout << "\n"
              << parallel::fitting_layouts(candidates, a.nproc, cfg.optimizer, cfg.distributed.bucket_size,
                                           static_cast<double>(std::get<int64_t>(bytes)), bf16_params,
                                           cfg.trainer.ema.enabled);
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
  sub->add_option("--memory", a->memory,
                  "A device's memory (80GB, 24GiB): also list every layout (tensor x pipeline parallelism x strategy) "
                  "that fits");
  sub->add_option("--nproc-per-node", a->nproc_per_node,
                  "Ranks in each node: adds the hybrid row (zero3 inside a node, replicated across nodes)")
      ->check(CLI::Range(1, 1000000));
  sub->callback([a, &runner] { runner = [a] { return run_plan(*a); }; });
}

}  // namespace hftrain::app
