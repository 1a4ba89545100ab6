# The metrics stage (relative to lib/metrics). Torch-free: the trainer measures and passes numbers.
set(HFTRAIN_METRICS_CORE_SOURCES
  append_file.cpp
  crc32c.cpp
  format.cpp
  jsonl_writer.cpp
  memory.cpp
  mfu.cpp
  progress.cpp
  proto_wire.cpp
  records.cpp
  recorder.cpp
  tb_event.cpp
  tb_writer.cpp
  throughput.cpp)
set(HFTRAIN_METRICS_TORCH_SOURCES)
# Accuracy and F1 of classification, from a mergeable confusion matrix.
list(APPEND HFTRAIN_METRICS_CORE_SOURCES classification.cpp)
# Entity-level precision, recall and F1 of sequence tagging (seqeval's), mergeable counts.
list(APPEND HFTRAIN_METRICS_CORE_SOURCES entities.cpp)
# Experiment tracking: an HTTP client over libcurl, MLflow's REST API, the batching tracker.
list(APPEND HFTRAIN_METRICS_CORE_SOURCES http_client.cpp mlflow_client.cpp mlflow_tracker.cpp)
