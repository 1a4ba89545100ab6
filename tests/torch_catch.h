// Include this first in every test that uses LibTorch. c10's logging defines a glog-style CHECK
// that aborts the process; Catch2 defines CHECK too, and whichever comes last wins. Torch first,
// c10's CHECK removed, then Catch2: CHECK is Catch2's assertion in every test.
#pragma once

#include <torch/torch.h>
#undef CHECK
#include <catch2/catch.hpp>
