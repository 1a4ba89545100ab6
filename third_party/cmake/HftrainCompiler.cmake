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

# GCC 12 at -O2/-O3 reports impossible overlaps and sizes inside std::string's inline code
# (-Wrestrict, GCC bug 105651; -Wstringop-overflow "bound ... exceeds maximum object size" for
# `"literal" + std::string`, GCC bug 105329). They are false positives in libstdc++, not in our
# code, so they are silenced for GCC 12 only and stay on for every other compiler.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(hftrain_warnings INTERFACE -Wno-restrict -Wno-stringop-overflow)
endif()
