#include "train/build/wiring.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include <torch/cuda.h>

#include "model/spec.h"
#include "optim/ema.h"
#include "optim/optimizer.h"
#include "train/build/model_from.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace hftrain::train {

std::vector<std::pair<std::string, std::string>> chat_template_files(const config::Config& c) {
  const std::filesystem::path tokenizer_file = c.tokenizer.path.value_or("");
  const auto tmpl = tokenizer::resolve_chat_template(c.data.chat_template, tokenizer_file);
  if (!tmpl) return {};
  std::vector<std::pair<std::string, std::string>> files{{"chat_template.jinja", tmpl->source()}};
  std::error_code ec;
  const auto config_file = tokenizer_file.parent_path() / "tokenizer_config.json";
  if (!tokenizer_file.empty() && std::filesystem::is_regular_file(config_file, ec)) {
    files.emplace_back("tokenizer_config.json", util::read_file<util::DataError>(config_file, "tokenizer config"));
  }
  return files;
}

tokenizer::TokenizerOptions tokenizer_options(const config::Config& c) {
  tokenizer::TokenizerOptions o;
  o.kind = c.tokenizer.type == config::TokenizerType::kByte ? tokenizer::TokenizerKind::kByte
                                                            : tokenizer::TokenizerKind::kBpe;
  o.path = c.tokenizer.path.value_or("");
  o.eos_token = c.tokenizer.eos_token.value_or("");
  o.pad_token = c.tokenizer.pad_token.value_or("");
  return o;
}

namespace {

data::SourceFormat source_format(config::DataFormat f) {
  static constexpr data::SourceFormat kFormats[] = {data::SourceFormat::kAuto, data::SourceFormat::kText,
                                                    data::SourceFormat::kJsonl, data::SourceFormat::kChat,
                                                    data::SourceFormat::kTokens};
  return kFormats[static_cast<int>(f)];
}

// A data.train / data.validation entry: its own fields where it sets them, data.*'s otherwise.
data::SourceSpec source(const config::DataSource& entry, const config::DataConfig& d) {
  data::SourceSpec s;
  s.path = entry.path;
  s.name = entry.name;
  s.weight = entry.weight;
  s.exclude = d.exclude;
  s.format = source_format(entry.format.value_or(d.format));
  s.separator = entry.separator.value_or(d.separator);
  s.text_field = entry.text_field.value_or(d.text_field);
  s.prompt_field = entry.prompt_field.value_or(d.prompt_field);
  s.response_field = entry.response_field.value_or(d.response_field);
  s.messages_field = entry.messages_field.value_or(d.messages_field);
  s.dtype = d.token_dtype == config::TokenWidth::kUint16 ? data::TokenDtype::kUint16 : data::TokenDtype::kUint32;
  return s;
}

}  // namespace

namespace {

// The effective data.document_mask for these training sources: one pass over their files. An
// explicit true on token shards (which carry no document index) warns.
bool masking(const config::Config& c, const std::vector<data::SourceSpec>& train) {
  if (c.data.packing != config::Packing::kPack) return false;
  if (!c.data.document_mask) return data::records_only(train);
  if (!*c.data.document_mask) return false;
  for (const auto& spec : train) {
    const auto files = data::expand_source(spec);
    if (std::any_of(files.begin(), files.end(),
                    [&](const auto& f) { return data::resolve_format(spec, f) == data::SourceFormat::kTokens; })) {
      util::log::warn("data.document_mask: " + spec.path + " holds token shards, which carry no document index; "
                      "their documents stay joined (each shard is one document)");
      break;
    }
  }
  return true;
}

}  // namespace

bool document_masking(const config::Config& c) {
  std::vector<data::SourceSpec> train;
  for (const auto& p : c.data.train) train.push_back(source(p, c.data));
  return masking(c, train);
}

data::DataOptions data_options(const config::Config& c, int rank, int world_size) {
  data::DataOptions o;
  o.loader.rank = rank;
  o.loader.world_size = world_size;
  for (const auto& p : c.data.train) o.dataset.train.push_back(source(p, c.data));
  for (const auto& p : c.data.validation) o.dataset.validation.push_back(source(p, c.data));
  o.dataset.validation_fraction = c.data.validation_fraction;
  o.dataset.split_seed = static_cast<uint64_t>(c.run.seed);
  o.dataset.chat.model_template = tokenizer::resolve_chat_template(c.data.chat_template, c.tokenizer.path.value_or(""));
  o.dataset.cache.enabled = c.data.cache;
  o.dataset.cache.dir = c.data.cache_dir;
  o.dataset.cache.threads = static_cast<int>(c.data.num_workers);
  o.packing.seq_len = c.data.seq_len;
  o.packing.mode = c.data.packing == config::Packing::kPack ? data::PackingMode::kPack : data::PackingMode::kPad;
  o.packing.pad_to_multiple_of = c.data.pad_to_multiple_of;
  o.packing.document_mask = masking(c, o.dataset.train);
  o.loader.batch_size = c.trainer.micro_batch_size;
  o.loader.sampler.seed = static_cast<uint64_t>(c.run.seed);
  o.loader.sampler.shuffle = c.data.shuffle;
  o.loader.prefetch_batches = c.data.prefetch_batches;
  o.loader.num_workers = c.data.num_workers;
  return o;
}

std::optional<model::ModelSpec> decoder_spec(const config::Config& config) {
  if (config.model.arch == config::ModelArch::kBert) return std::nullopt;
  model::ModelSpec spec = model::ModelSpec::from_config(config.model);
  // A reward model: the decoder's body with a one-output score head in place of its output layer.
  if (config.preference.objective == config::PreferenceObjective::kReward) spec.score_outputs = 1;
  return spec;
}

model::BertSpec bert_spec(const config::Config& c, const std::optional<ModelSource>& source,
                          std::optional<int64_t> pad_id) {
  if (source && !source->bert) {
    throw util::ConfigError("model.arch is bert, but " + source->spec_file.string() + " describes a decoder",
                            "name a BERT directory (BertModel, BertForSequenceClassification) in model.from, or "
                            "use model.arch=gpt2 or llama");
  }
  model::BertSpec s;
  if (source) {
    s = *source->bert;
  } else {
    // The family's structure (ModernBertConfig's, DeBERTa-v3's, BERT's or RoBERTa's defaults), then
    // the model.* shape; what model.* leaves unset keeps the family's default.
    const auto& m = c.model;
    const bool modernbert = m.encoder == config::Encoder::kModernBert;
    const bool deberta = m.encoder == config::Encoder::kDebertaV2;
    if (modernbert) s = model::modernbert_defaults(m.n_layer);
    if (deberta) s = model::deberta_v3_defaults(m.n_layer);
    if (m.encoder == config::Encoder::kRoberta) {
      s.family = config::Encoder::kRoberta;
      s.type_vocab_size = 1;
      s.layer_norm_eps = 1e-5;
    }
    s.vocab_size = m.vocab_size;
    s.hidden_size = m.d_model;
    s.num_hidden_layers = m.n_layer;
    s.num_attention_heads = m.n_head;
    s.intermediate_size = m.d_ff.value_or(modernbert ? 3 * m.d_model / 2 : 4 * m.d_model);
    s.max_position_embeddings = m.max_seq_len;
    s.layer_norm_eps = m.norm_eps.value_or(s.layer_norm_eps);
    s.initializer_range = m.init_std;
    if (modernbert) {
      s.attention_probs_dropout_prob = s.embedding_dropout = s.mlp_dropout = m.dropout;
      s.bos_token_id = s.eos_token_id = s.cls_token_id = s.sep_token_id = std::nullopt;
    } else {
      s.hidden_dropout_prob = s.attention_probs_dropout_prob = m.dropout;
    }
    s.pad_token_id = modernbert || deberta ? pad_id : std::nullopt;
    // deberta-v3's 256 buckets over 512 positions: half the positions, at most 256 (none below 8).
    if (deberta) s.position_buckets = m.max_seq_len >= 8 ? std::min<int64_t>(256, m.max_seq_len / 2) : -1;
    if (s.roberta()) {  // positions pad + 1, ...: the table holds pad + 1 more rows
      s.pad_token_id = pad_id.value_or(1);
      s.max_position_embeddings = m.max_seq_len + *s.pad_token_id + 1;
    }
  }
  s.with_classifier = true;
  s.per_token = c.model.task == config::Task::kTokenClassification;
  return s;
}

data::ClassificationOptions classification_options(const config::Config& c, const std::optional<ModelSource>& source) {
  data::ClassificationOptions o;
  for (const auto& p : c.data.train) o.train.push_back(p.path);
  for (const auto& p : c.data.validation) o.validation.push_back(p.path);
  o.validation_fraction = c.data.validation_fraction;
  o.split_seed = static_cast<uint64_t>(c.run.seed);
  o.records.text_column = c.data.text_field;
  o.records.text_pair_column = c.data.text_pair_field;
  o.records.label_column = c.data.label_field;
  o.tagging = c.model.task == config::Task::kTokenClassification;
  o.tagged.words_field = c.data.text_field;
  o.tagged.tags_field = c.data.label_field;
  o.max_length = c.data.seq_len;
  o.pad_to_multiple_of = c.data.pad_to_multiple_of;
  // A classifier of the same task names its classes (a sequence classifier's labels are no tags).
  if (source && source->bert && source->bert->with_classifier && source->bert->per_token == o.tagging &&
      !source->id2label.empty()) {
    bool named = false;
    for (size_t i = 0; i < source->id2label.size(); ++i) named |= source->id2label[i] != "LABEL_" + std::to_string(i);
    if (named) o.labels = data::LabelSet{source->id2label};
  }
  return o;
}

// DPO's reference is a frozen copy of the starting weights (preference.reference=copy, or auto without
// LoRA), not the base with its adapters off.
bool dpo_reference_copy(const config::Config& config) {
  const config::PreferenceConfig& p = config.preference;
  return (p.objective == config::PreferenceObjective::kDpo || p.objective == config::PreferenceObjective::kKto) &&
         (p.reference == config::PreferenceReference::kCopy ||
          (p.reference == config::PreferenceReference::kAuto && config.peft.method != config::PeftMethod::kLora));
}

bool precomputed_reference(const config::Config& config) {
  return config.preference.objective == config::PreferenceObjective::kDpo &&
         config.preference.reference == config::PreferenceReference::kPrecomputed;
}

std::string reference_weights_key(const config::Config& c, const torch::Device& device) {
  std::ostringstream key;
  key << "reference-logps v1; device " << device.type() << "; precision " << static_cast<int>(c.trainer.precision)
      << "; param_dtype " << static_cast<int>(c.trainer.param_dtype) << "; pairs per batch "
      << c.trainer.micro_batch_size << "; pad multiple " << c.data.pad_to_multiple_of << "; ";
  if (c.model.from) {
    const ModelSource source = read_model_source(*c.model.from);
    key << "from " << std::filesystem::absolute(source.dir).string();
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(source.dir)) {
      if (entry.path().extension() == ".safetensors") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      key << "; " << f.filename().string() << " " << std::filesystem::file_size(f) << " "
          << std::filesystem::last_write_time(f).time_since_epoch().count();
    }
  } else {
    key << "fresh, seed " << c.run.seed << "; " << model::ModelSpec::from_config(c.model).to_json();
  }
  return key.str();
}

data::PreferenceOptions preference_options(const config::Config& c,
                                           std::shared_ptr<const tokenizer::ChatTemplate>& chat) {
  data::PreferenceOptions o;
  for (const auto& p : c.data.train) o.train.push_back(p.path);
  for (const auto& p : c.data.validation) o.validation.push_back(p.path);
  o.validation_fraction = c.data.validation_fraction;
  o.split_seed = static_cast<uint64_t>(c.run.seed);
  if (!c.data.prompt_field.empty()) o.fields.prompt = c.data.prompt_field;
  if (!c.data.margin_field.empty()) o.fields.margin = c.data.margin_field;
  o.limits = {c.data.seq_len, c.data.max_prompt_len,
              /*drop_long=*/c.preference.objective == config::PreferenceObjective::kReward};
  o.pad_to_multiple_of = c.data.pad_to_multiple_of;
  chat = tokenizer::resolve_chat_template(c.data.chat_template, c.tokenizer.path.value_or(""));
  o.chat_template = chat.get();
  return o;
}

data::KtoOptions kto_options(const config::Config& c, std::shared_ptr<const tokenizer::ChatTemplate>& chat) {
  data::KtoOptions o;
  o.preference = preference_options(c, chat);
  o.fields.paired = o.preference.fields;
  o.fields.prompt = o.preference.fields.prompt;
  if (!c.data.completion_field.empty()) o.fields.completion = c.data.completion_field;
  if (!c.data.label_field.empty()) o.fields.label = c.data.label_field;
  return o;
}

torch::Device pick_device(const config::Config& c, int local_rank) {
  const bool cuda = torch::cuda::is_available();
  bool use_cuda = cuda;
  switch (c.trainer.device) {
    case config::DeviceChoice::kCpu: return torch::kCPU;
    case config::DeviceChoice::kCuda:
      if (!cuda) {
        throw util::ConfigError("trainer.device is cuda, but no CUDA device is visible",
                                "use trainer.device=cpu or auto, or check CUDA_VISIBLE_DEVICES and the driver");
      }
      break;
    case config::DeviceChoice::kAuto: break;
  }
  if (!use_cuda) return torch::kCPU;
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (local_rank >= count) {
    throw util::ConfigError("local rank " + std::to_string(local_rank) + " needs CUDA device " +
                                std::to_string(local_rank) + ", but only " + std::to_string(count) + " are visible",
                            "start at most " + std::to_string(count) + " processes per node (--nproc-per-node), "
                            "or check CUDA_VISIBLE_DEVICES");
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

uint64_t default_stream_seed(const config::Config& config, int tp_group, int64_t step) {
  return static_cast<uint64_t>(config.run.seed) + 7919u * static_cast<uint64_t>(tp_group) +
         104729u * static_cast<uint64_t>(step);
}

uint64_t own_stream_seed(const config::Config& config, int tp_group, int tp_rank) {
  return static_cast<uint64_t>(config.run.seed) + 7919u * static_cast<uint64_t>(tp_group) +
         15485863u * static_cast<uint64_t>(tp_rank + 1);
}

optim::ModelMatrices hidden_matrices(const std::vector<model::HfLinear>& linears) {
  std::map<std::string, std::vector<const model::HfLinear*>> by_weight;
  for (const auto& l : linears) {
    if (!l.output_layer) by_weight[l.dense + ".weight"].push_back(&l);
  }
  optim::ModelMatrices out;
  for (auto& [name, parts] : by_weight) {
    std::sort(parts.begin(), parts.end(), [](auto* a, auto* b) { return a->row_offset < b->row_offset; });
    optim::MatrixParts m;
    m.transposed = parts.front()->conv1d;
    if (parts.size() > 1) {
      for (const auto* p : parts) m.row_parts.push_back(p->rows);
    }
    out.emplace(name, std::move(m));
  }
  return out;
}

parallel::StrategyOptions strategy_options(const config::Config& config, const config::OptimizerConfig& optimizer,
                                           optim::ModelMatrices matrices) {
  parallel::StrategyOptions o;
  o.distributed = config.distributed;
  o.reduce_dtype = torch::kFloat32;
  if (config.distributed.reduce_dtype != config::ReduceDtype::kFp32) {
    if (config.trainer.precision == config::Precision::kBf16) o.reduce_dtype = torch::kBFloat16;
    if (config.trainer.precision == config::Precision::kFp16) o.reduce_dtype = torch::kFloat16;
  }
  o.bf16_params = config.trainer.param_dtype == config::ParamDtype::kBf16;
  o.state_blocks = optim::state_blocks(optimizer);
  o.optimizer = optimizer;
  switch (optimizer.name) {
    case config::OptimizerName::kAdafactor: o.whole_state = "adafactor factors whole weight matrices"; break;
    case config::OptimizerName::kGaloreAdamW:
      o.whole_state = "galore_adamw projects each whole weight matrix's gradient";
      break;
    case config::OptimizerName::kMuon: o.whole_state = "muon orthogonalises each whole weight matrix"; break;
    case config::OptimizerName::kApolloAdamW:
      o.whole_state = "apollo_adamw projects each whole weight matrix's gradient";
      break;
    default: break;
  }
  o.ema_weights = config.trainer.ema.enabled;
  o.make_optimizer = [optimizer, ema = config.trainer.ema, matrices = std::move(matrices)](
                         const optim::NamedParams& params, const std::vector<int64_t>& whole_numels) {
    return optim::with_ema(optim::make_optimizer(optimizer, params, whole_numels, matrices), ema);
  };
  return o;
}

}  // namespace hftrain::train
