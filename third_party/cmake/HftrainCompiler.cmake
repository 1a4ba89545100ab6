# Warnings and compiler caching for every hftrain target.
add_library(hftrain_warnings INTERFACE)
target_compile_options(hftrain_warnings INTERFACE -Wall -Wextra -Wshadow)
if(HFTRAIN_WERROR)
  target_compile_options(hftrain_warnings INTERFACE -Werror)
endif()

# ccache when present. Precompiled headers need the sloppiness below or every PCH user misses.
find_program(HFTRAIN_CCACHE ccache)
if(HFTRAIN_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      ${HFTRAIN_CCACHE})
  message(STATUS "hftrain: compiling through ccache (${HFTRAIN_CCACHE})")
endif()

# GCC 12 at -O2/-O3 reports impossible -Wrestrict overlaps inside std::string's inline code
# (GCC bug 105651). It is a false positive in libstdc++, not in our code, so it is silenced for
# GCC 12 only and stays on for every other compiler.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(hftrain_warnings INTERFACE -Wno-restrict)
endif()
