// The storage of a gathered unit's flat buffer, freed and allocated again in place: every view of
// the buffer (the model's parameters, and the views autograd saved of them) shares the one
// StorageImpl, so they all see the data again once it is gathered (as PyTorch's FSDP does with
// untyped_storage().resize_()).
#pragma once

#include <torch/types.h>

namespace hftrain::parallel {

// Releases the memory; the tensor keeps its sizes but must not be read until allocate_storage.
void free_storage(const torch::Tensor& t);
// Gives the tensor's storage room for all its elements again (contents undefined).
void allocate_storage(const torch::Tensor& t);
bool has_storage(const torch::Tensor& t);

}  // namespace hftrain::parallel
