set(HFTRAIN_APP_EXTRA_SOURCES cmd_export.cpp cmd_generate.cpp cmd_tokenizer.cpp)
