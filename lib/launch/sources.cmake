set(HFTRAIN_LAUNCH_CORE_SOURCES launch_env.cpp restarts.cpp spawner.cpp)
set(HFTRAIN_LAUNCH_TORCH_SOURCES)
