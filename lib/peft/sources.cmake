# Parameter-efficient fine-tuning (relative to lib/peft): LoRA adapters on hftrain's layers and
# the peft library's adapter files.
set(HFTRAIN_PEFT_CORE_SOURCES)
set(HFTRAIN_PEFT_TORCH_SOURCES
  lora.cpp
  peft_files.cpp
  quantize.cpp
  quantized_linear.cpp)
