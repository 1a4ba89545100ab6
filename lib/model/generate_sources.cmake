list(APPEND HFTRAIN_MODEL_TORCH_SOURCES sampling.cpp saved_model.cpp)
