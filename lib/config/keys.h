// Internal to lib/config: the key declarations of keys.cpp's schema, one function per group of
// sections, called in the order the README's reference lists them.
#pragma once

#include "config/schema.h"

namespace hftrain::config {

#define HFTRAIN_FIELD(member) [](auto& c) -> auto& { return c.member; }

// Run, model and tokenizer: what is trained, and where it goes.
void add_model_keys(Schema& s);
// Data: what is trained on.
void add_data_keys(Schema& s);
// Optimizer, scheduler and preference: how it is trained.
void add_training_keys(Schema& s);
// The training loop (trainer.*).
void add_trainer_keys(Schema& s);
// Checkpoint, distributed, peft and logging: how the run is carried out.
void add_run_keys(Schema& s);

}  // namespace hftrain::config
