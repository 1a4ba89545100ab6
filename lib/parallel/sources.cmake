# The multi-process stage's sources (relative to lib/parallel), one sub-folder per concept:
#   comm/           communicators (interface, Open MPI, NCCL), the world (store, backend,
#                   sub-groups), the monitor (phases, budgets, timeout diagnosis)
#   plan/           the memory formulas of each strategy (`hftrain plan`)
#   data_parallel/  gradient buckets, hooks and the overlapped reducer; the strategies (single,
#                   ddp, zero1/2, zero3, hybrid, cpu_offload); shard layout; the memory report
#   tensor/         tensor parallelism: the model's TpGroup over a communicator, and the whole
#                   parameters and optimizer state a checkpoint moves (the layers are model/'s)
#   pipeline/       pipeline parallelism's plan: the stages' blocks, the schedules (gpipe, 1f1b)
#                   and the transfers around each op (the loop that follows it is train/'s)
#   seam/           the training loop's one seam with all of the above (Parallelism): a step's
#                   reductions, the whole model for saves and loads, the optimizer's pieces
set(HFTRAIN_PARALLEL_CORE_SOURCES
  comm/monitor.cpp
  comm/ompi_server.cpp
  plan/memory_plan.cpp
  plan/activation_plan.cpp
  plan/pipeline_plan.cpp
  data_parallel/grad_buckets.cpp
  pipeline/schedule.cpp)
set(HFTRAIN_PARALLEL_TORCH_SOURCES
  comm/communicator.cpp
  comm/mpi_communicator.cpp
  comm/nccl_communicator.cpp
  comm/rendezvous_store.cpp
  comm/world.cpp
  comm/world_mesh.cpp
  data_parallel/grad_hook.cpp
  data_parallel/grad_reducer.cpp
  data_parallel/memory_report.cpp
  data_parallel/optimizer_pieces.cpp
  data_parallel/param_partition.cpp
  data_parallel/shard_layout.cpp
  data_parallel/strategy.cpp
  data_parallel/unit_storage.cpp
  data_parallel/zero12.cpp
  data_parallel/zero3.cpp
  tensor/tp_group.cpp
  seam/parallelism.cpp
  seam/stage_optimizer.cpp)
