// Writes a run's metrics with the real Recorder, for tests/conformance/metrics_tensorboard.py to
// read back with TensorBoard's own loader. Usage: metrics_tb_writer <run_dir> <first_step> <count>
// A run whose first step is not 10 acts as a resume from the step before it.
// Step s (multiples of 10) logs loss 10/s, lr s*1e-5, grad_norm 0.5; every 20th step an eval with
// eval_loss 5/s.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "metrics/recorder.h"
#include "util/error.h"

int main(int argc, char** argv) {
  using namespace hftrain::metrics;
  if (argc != 4) {
    std::cerr << "usage: metrics_tb_writer <run_dir> <first_step> <count>\n";
    return 2;
  }
  try {
    RecorderOptions o;
    o.run_dir = argv[1];
    o.total_steps = 1000;
    o.console = false;
    o.tensorboard_options.hostname = "conformance";
    o.start_step = (std::atol(argv[2]) - 1) * 10;  // a resume continues from the step before its first
    o.mfu = MfuOptions{.model = {.non_embedding_params = 1'000'000,
                                 .num_layers = 2,
                                 .num_heads = 4,
                                 .head_dim = 16,
                                 .seq_len = 128},
                       .device_name = "NVIDIA H100 80GB HBM3"};
    Recorder recorder(o);
    const long first = std::atol(argv[2]);
    const long count = std::atol(argv[3]);
    for (long i = 0; i < count; ++i) {
      const int64_t step = (first + i) * 10;
      StepMetrics m;
      m.step = step;
      m.epoch = static_cast<double>(step) / 1000.0;
      m.loss = 10.0 / static_cast<double>(step);
      m.lr = static_cast<double>(step) * 1e-5;
      m.grad_norm = 0.5;
      m.tokens_seen = step * 2048;
      m.tokens_per_s = 20480;
      m.step_time_ms = 100;
      m.data_wait_ms = 1;
      m.peak_mem_mb = 4096;
      recorder.log_step(m);
      if (step % 20 == 0)
        recorder.log_eval(
            {.step = step, .epoch = m.epoch, .eval_loss = 5.0 / static_cast<double>(step)});
    }
  } catch (const hftrain::util::Error& e) {
    std::cerr << e.describe() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
