set(HFTRAIN_LAUNCH_CORE_SOURCES launch_env.cpp restarts.cpp spawner.cpp sweep_plan.cpp)
set(HFTRAIN_LAUNCH_TORCH_SOURCES)
