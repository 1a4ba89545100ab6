# build_info.cpp is regenerated at every build from the git revision, but only rewritten (and so
# recompiled) when the revision or the dirty flag changed.
set(HFTRAIN_BUILD_INFO_CPP "${CMAKE_BINARY_DIR}/generated/build_info_values.cpp")
add_custom_target(hftrain_revision
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DOUT=${HFTRAIN_BUILD_INFO_CPP}
          -DVERSION=${PROJECT_VERSION} -DTORCH_VERSION=${Torch_VERSION}
          -DHAVE_CUDA=${HFTRAIN_HAVE_CUDA} -DHAVE_NCCL=${HFTRAIN_HAVE_NCCL} -DHAVE_MPI=${HFTRAIN_HAVE_MPI}
          -P ${CMAKE_CURRENT_LIST_DIR}/HftrainWriteBuildInfo.cmake
  BYPRODUCTS ${HFTRAIN_BUILD_INFO_CPP}
  COMMENT "" VERBATIM)
