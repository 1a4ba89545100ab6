set(HFTRAIN_APP_EXTRA_SOURCES cmd_evaluate.cpp cmd_export.cpp cmd_generate.cpp cmd_tokenizer.cpp)
