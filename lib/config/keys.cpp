// hftrain's config schema. Each key is declared in one place, keys_<group>.cpp (keys.h), and
// enters together with the code that reads it, so that no key is ever accepted and then ignored.
#include "config/keys.h"

namespace hftrain::config {
namespace {

Schema build() {
  Schema s;
  add_model_keys(s);
  add_data_keys(s);
  add_training_keys(s);
  add_trainer_keys(s);
  add_run_keys(s);
  return s;
}

}  // namespace

const Schema& product_schema() {
  static const Schema schema = build();
  return schema;
}

}  // namespace hftrain::config
