set(HFTRAIN_DIST_CORE_SOURCES grad_buckets.cpp memory_plan.cpp monitor.cpp)
set(HFTRAIN_DIST_TORCH_SOURCES communicator.cpp grad_hook.cpp grad_reducer.cpp mpi_communicator.cpp nccl_communicator.cpp optimizer_pieces.cpp shard_layout.cpp strategy.cpp unit_storage.cpp world.cpp zero12.cpp zero3.cpp)
