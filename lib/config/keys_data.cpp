// Config keys of data: what is trained on. Each key enters together with the code
// that reads it (see keys.cpp).
#include "config/keys.h"

namespace hftrain::config {

void add_data_keys(Schema& s) {
  s.section("data", "Training and validation data.", ResumeChange::kDataOrder);
  s.add("data.train", Type::kSourceList, HFTRAIN_FIELD(data.train))
      .def("[]")
      .doc("Training sources: files, folders or globs, or mappings {path, weight, name, format, text_field, ...}; "
           "with weights, samples are drawn from each source in proportion to its weight.");
  s.add("data.validation", Type::kSourceList, HFTRAIN_FIELD(data.validation))
      .def("[]").doc("Validation sources, as data.train (no weights); several are evaluated one by one.");
  s.add("data.seq_len", Type::kInt, HFTRAIN_FIELD(data.seq_len))
      .def("${model.max_seq_len}").min(1).unit("tokens")
      .doc("Tokens per training sequence; at most model.max_seq_len.");
  s.add("data.max_prompt_len", Type::kInt, HFTRAIN_FIELD(data.max_prompt_len))
      .def("0").min(0).unit("tokens")
      .doc("Preference pairs: keep the prompt's last this many tokens (TRL's max_prompt_length); 0 keeps it whole "
           "and drops a pair whose prompt alone fills data.seq_len.");
  s.add("data.validation_fraction", Type::kFloat, HFTRAIN_FIELD(data.validation_fraction))
      .def("0.0")
      .min(0)
      .max(0.5)
      .doc("Without data.validation: the share of training documents held out for validation.");
  s.add("data.format", Type::kChoice, HFTRAIN_FIELD(data.format))
      .choices({"auto", "text", "jsonl", "chat", "tokens"}).def("auto")
      .doc("Source format; auto goes by extension: .jsonl/.json JSONL, .bin token shards, else text.");
  s.add("data.exclude", Type::kStringList, HFTRAIN_FIELD(data.exclude))
      .def("[]").doc("File-name globs to skip, e.g. ['*.dat', '*.u8'] for fortune folders.");
  s.add("data.separator", Type::kString, HFTRAIN_FIELD(data.separator))
      .def("''")
      .doc("Text files: a line equal to this ends a document ('%' for fortunes); '' = one document per file.");
  s.add("data.text_field", Type::kString, HFTRAIN_FIELD(data.text_field))
      .def("text")
      .doc(
          "JSONL: the text field; classification (model.arch=bert): the text column or field; token classification: "
          "the field listing the words (e.g. tokens).");
  s.add("data.text_pair_field", Type::kString, HFTRAIN_FIELD(data.text_pair_field))
      .def("''")
      .doc("Classification: the column or field of a pair's second text (e.g. sentence2); empty for single texts.");
  s.add("data.label_field", Type::kString, HFTRAIN_FIELD(data.label_field))
      .def("label")
      .doc(
          "Classification: the label column or field (names or integer class ids); token classification: the field "
          "listing one tag per word (e.g. ner_tags); KTO: the field marking each answer desirable (true) or not.");
  s.add("data.completion_field", Type::kString, HFTRAIN_FIELD(data.completion_field))
      .def("completion")
      .doc("KTO's unpaired records: the answer field (a string, or a list of messages); data.label_field marks it "
           "desirable (true) or not (false).");
  s.add("data.margin_field", Type::kString, HFTRAIN_FIELD(data.margin_field))
      .def("margin")
      .doc("Preference pairs: the optional number field of how much better chosen is; a reward model subtracts it "
           "inside the Bradley-Terry loss (TRL's margin column).");
  s.add("data.prompt_field", Type::kString, HFTRAIN_FIELD(data.prompt_field))
      .def("prompt")
      .doc("Chat JSONL: the prompt field (no loss).");
  s.add("data.response_field", Type::kString, HFTRAIN_FIELD(data.response_field))
      .def("response").doc("Chat JSONL: the response field (carries the loss).");
  s.add("data.messages_field", Type::kString, HFTRAIN_FIELD(data.messages_field))
      .def("messages").doc("Chat JSONL: a list of {role, content}; only assistant turns carry loss.");
  s.add("data.chat_template", Type::kString, HFTRAIN_FIELD(data.chat_template))
      .def("auto")
      .doc("How chat records are rendered: auto (the tokenizer's own chat template, from chat_template.jinja or "
           "tokenizer_config.json beside tokenizer.path, else hftrain), hftrain (its own <|role|> lines), chatml, or "
           "a Jinja file / tokenizer_config.json / model directory.");
  s.add("data.token_dtype", Type::kChoice, HFTRAIN_FIELD(data.token_dtype))
      .choices({"uint16", "uint32"}).def("uint16").doc("Token shards without an llm.c header: the token width.");
  s.add("data.packing", Type::kChoice, HFTRAIN_FIELD(data.packing))
      .choices({"pack", "pad"}).def("pack")
      .doc("pack: documents joined by end-of-text into full blocks; pad: one document per row, padded.");
  s.add("data.document_mask", Type::kBool, HFTRAIN_FIELD(data.document_mask))
      .nullable()
      .doc("pack: keep packed documents apart (positions restart at each document, attention and targets "
           "never cross a boundary); unset: true when every training source is JSONL or chat, else false.");
  s.add("data.pad_to_multiple_of", Type::kInt, HFTRAIN_FIELD(data.pad_to_multiple_of))
      .def("1").min(1).max(4096).doc("pad: round the batch length up to a multiple of this.");
  s.add("data.shuffle", Type::kBool, HFTRAIN_FIELD(data.shuffle))
      .def("true")
      .doc("Shuffle the sample order every epoch.");
  s.add("data.prefetch_batches", Type::kInt, HFTRAIN_FIELD(data.prefetch_batches))
      .on_resume(ResumeChange::kSafe)
      .def("4").min(0).max(1024).doc("Batches prepared ahead by background threads; 0 loads synchronously.");
  s.add("data.num_workers", Type::kInt, HFTRAIN_FIELD(data.num_workers))
      .on_resume(ResumeChange::kSafe)
      .def("2").min(1).max(256).doc("Threads preparing batches, and encoding text into the token cache.");
  s.add("data.cache", Type::kBool, HFTRAIN_FIELD(data.cache))
      .on_resume(ResumeChange::kSafe)
      .def("true").doc("Cache tokenized text on disk so that the next run starts at once.");
  s.add("data.cache_dir", Type::kString, HFTRAIN_FIELD(data.cache_dir))
      .on_resume(ResumeChange::kSafe)
      .def("''").doc("Token cache folder; '' = $HFTRAIN_CACHE_DIR, else ~/.cache/hftrain/tokens.");
}

}  // namespace hftrain::config
