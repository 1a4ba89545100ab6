// NF4, blockwise 8-bit and LLM.int8 quantization against bitsandbytes 0.50 bit for bit: the
// fixtures in tests/fixtures/quantize come from tests/conformance/gen_quantize_fixtures.py.
#include "../torch_catch.h"  // first: see the file

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "model/weights/safetensors.h"
#include "peft/quantize.h"
#include "util/error.h"

using namespace hftrain;
using peft::CodeRounding;

namespace {

struct Fixture {
  std::map<std::string, torch::Tensor> tensors;
  std::map<std::string, std::string> meta;

  const torch::Tensor& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw std::runtime_error("fixture tensor " + name + " is missing");
    return it->second;
  }
  std::vector<std::string> cases() const {
    std::vector<std::string> out;
    std::stringstream ss(meta.at("cases"));
    for (std::string c; std::getline(ss, c, ',');) out.push_back(c);
    return out;
  }
  int64_t block_size(const std::string& c) const { return std::stoll(meta.at(c + ".block_size")); }
};

Fixture load(const std::string& file) {
  Fixture f;
  const auto path = std::filesystem::path(HFTRAIN_TEST_FIXTURES_DIR) / "quantize" / file;
  for (auto& [name, t] : model::read_safetensors(path, &f.meta)) f.tensors[name] = t;
  return f;
}

// Same dtype, same element count and the same bytes (so -0.0 differs from 0.0, and NaN payloads
// count): what "equal to bitsandbytes" means here. Shapes are compared where they matter.
bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.numel() != b.numel()) return false;
  auto x = a.contiguous().to(torch::kCPU).reshape(-1);
  auto y = b.contiguous().to(torch::kCPU).reshape(-1);
  return std::memcmp(x.data_ptr(), y.data_ptr(),
                     static_cast<size_t>(x.numel()) * x.element_size()) == 0;
}

// Where two tensors first differ, for a failure message.
std::string first_difference(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type()) return "dtypes differ";
  if (a.numel() != b.numel()) return "sizes differ";
  auto x = a.to(torch::kCPU).reshape(-1).to(torch::kFloat64);
  auto y = b.to(torch::kCPU).reshape(-1).to(torch::kFloat64);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double u = x[i].item<double>(), v = y[i].item<double>();
    if (u != v || std::signbit(u) != std::signbit(v)) {
      std::ostringstream s;
      s.precision(9);
      s << "first difference at " << i << ": " << u << " vs " << v;
      return s.str();
    }
  }
  return "bytes differ";
}

#define CHECK_BITS(a, b)              \
  do {                                \
    INFO(first_difference((a), (b))); \
    CHECK(same_bits((a), (b)));       \
  } while (0)

// The codes of a packed NF4 tensor, element order.
torch::Tensor unpack(const torch::Tensor& packed) {
  auto b = packed.reshape(-1).to(torch::kInt64);
  return torch::stack({b.floor_divide(16), b.remainder(16)}, 1).reshape(-1);
}

}  // namespace

TEST_CASE("peft quantize: the NF4 codebook and the dynamic maps equal bitsandbytes'",
          "[peft][quantize]") {
  auto maps = load("maps.safetensors");
  const auto& cb = peft::nf4_codebook();
  auto ours = torch::tensor(std::vector<float>(cb.begin(), cb.end()), torch::kFloat32);
  CHECK_BITS(ours, maps.at("nf4"));
  CHECK_BITS(peft::dynamic_map(true), maps.at("dynamic_signed"));
  CHECK_BITS(peft::dynamic_map(false), maps.at("dynamic_unsigned"));
  CHECK(peft::dynamic_map(true).size(0) == 256);
}

TEST_CASE("peft quantize: NF4 packed bytes, absmax and dequantized values equal bitsandbytes'",
          "[peft][quantize]") {
  auto f = load("nf4.safetensors");
  for (const auto& c : f.cases()) {
    INFO("case " << c);
    const auto& x = f.at(c + "/input");
    const int64_t bs = f.block_size(c);

    auto plain = peft::quantize_nf4(x, bs, /*double_quant=*/false);
    CHECK(plain.packed.sizes() == f.at(c + "/packed").sizes());
    CHECK_BITS(plain.packed, f.at(c + "/packed"));
    CHECK_BITS(plain.absmax, f.at(c + "/absmax"));
    CHECK(plain.shape == x.sizes().vec());
    CHECK(plain.dtype == x.scalar_type());
    auto deq = peft::dequantize_nf4(plain, x.scalar_type());
    CHECK(deq.sizes() == x.sizes());
    CHECK_BITS(deq, f.at(c + "/dequant"));

    auto nested = peft::quantize_nf4(x, bs, /*double_quant=*/true);
    CHECK_BITS(nested.packed, f.at(c + "/packed"));
    CHECK_FALSE(nested.absmax.defined());
    CHECK_BITS(nested.absmax_codes, f.at(c + "/nested_absmax_codes"));
    CHECK_BITS(nested.absmax_scales, f.at(c + "/nested_absmax_scales"));
    CHECK_BITS(nested.absmax_code_map, f.at(c + "/nested_code"));
    CHECK_BITS(torch::tensor({nested.absmax_offset}), f.at(c + "/nested_offset"));
    CHECK(nested.absmax_block_size == 256);
    CHECK_BITS(peft::dequantize_nf4(nested, x.scalar_type()), f.at(c + "/nested_dequant"));
  }
}

TEST_CASE("peft quantize: blockwise 8-bit codes, absmax and values equal bitsandbytes'",
          "[peft][quantize]") {
  auto f = load("blockwise8.safetensors");
  auto maps = load("maps.safetensors");
  for (const auto& c : f.cases()) {
    INFO("case " << c);
    const auto& x = f.at(f.meta.at(c + ".input"));
    const int64_t bs = f.block_size(c);
    const auto& code =
        maps.at(f.meta.at(c + ".signed") == "1" ? "dynamic_signed" : "dynamic_unsigned");

    auto cpu = peft::quantize_blockwise(x, code, bs, CodeRounding::kBitsandbytesCpu);
    CHECK(cpu.codes.sizes() == x.sizes());
    CHECK_BITS(cpu.codes, f.at(c + "/cpu_codes"));
    CHECK_BITS(cpu.absmax, f.at(c + "/cpu_absmax"));
    CHECK_BITS(peft::dequantize_blockwise(cpu, code), f.at(c + "/cpu_dequant"));

    auto nearest = peft::quantize_blockwise(x, code, bs, CodeRounding::kNearest);
    CHECK_BITS(nearest.codes, f.at(c + "/nearest_codes"));
    CHECK_BITS(nearest.absmax, f.at(c + "/nearest_absmax"));
  }
}

TEST_CASE("peft quantize: int8 row-wise codes and row absmax equal bitsandbytes' LLM.int8",
          "[peft][quantize]") {
  auto f = load("int8.safetensors");
  for (const auto& c : f.cases()) {
    INFO("case " << c);
    auto q = peft::quantize_int8_rowwise(f.at(c + "/input"));
    CHECK_BITS(q.codes, f.at(c + "/codes"));
    CHECK_BITS(q.row_absmax, f.at(c + "/row_absmax"));
    CHECK_BITS(peft::dequantize_int8_rowwise(q, torch::kFloat32), f.at(c + "/dequant"));
  }
}

TEST_CASE("peft quantize: ties and zeros round as bitsandbytes rounds them", "[peft][quantize]") {
  const auto& cb = peft::nf4_codebook();
  // NF4: a value on the float32 midpoint of two codes takes the lower code.
  std::vector<float> v = {1.0f};
  for (size_t i = 0; i + 1 < cb.size(); ++i) v.push_back((cb[i] + cb[i + 1]) * 0.5f);
  auto q = unpack(peft::quantize_nf4(torch::tensor(v), 64, false).packed);
  CHECK(q[0].item<int64_t>() == 15);
  for (int64_t i = 0; i < 15; ++i) CHECK(q[i + 1].item<int64_t>() == i);

  // 8-bit nearest: the same rule on the dynamic map.
  auto code = peft::dynamic_map(true);
  auto mid = (code.slice(0, 0, 255) + code.slice(0, 1)) * 0.5;
  auto x = torch::cat({torch::ones({1}), mid});
  auto n = peft::quantize_blockwise(x, code, 256, CodeRounding::kNearest).codes.to(torch::kInt64);
  CHECK(torch::equal(n.slice(0, 1), torch::arange(255)));

  // bitsandbytes' CPU kernel bins the value first: 0 inside a block is not the code 0 (index 127)
  // but the code nearest the bin above it; an all-zero block is all index 0.
  auto z = peft::quantize_blockwise(torch::tensor({1.0f, 0.0f, 1e-6f, -1e-6f}), code, 256);
  CHECK(code[127].item<float>() == 0.0f);
  CHECK(z.codes[1].item<uint8_t>() == 131);
  CHECK(z.codes[2].item<uint8_t>() == 131);
  CHECK(z.codes[3].item<uint8_t>() == 123);
  auto zeros = peft::quantize_blockwise(torch::zeros({300}), code, 256);
  CHECK(zeros.codes.to(torch::kInt64).sum().item<int64_t>() == 0);
  CHECK(peft::dequantize_blockwise(zeros, code).abs().max().item<float>() == 0.0f);
  // The nearest rule maps 0 to the code 0 and an all-zero block to it too.
  auto zn =
      peft::quantize_blockwise(torch::tensor({1.0f, 0.0f, 0.0f}), code, 2, CodeRounding::kNearest);
  CHECK(zn.codes[1].item<uint8_t>() == 127);
  CHECK(zn.codes[2].item<uint8_t>() == 127);
  CHECK(zn.absmax[1].item<float>() > 0.0f);  // the ragged block's absmax clamped to 1e-38

  // NF4 of an odd element count: the padding nibble is code 7 (the value 0).
  auto odd = peft::quantize_nf4(torch::randn({5, 13}), 64, false);
  CHECK((odd.packed.reshape(-1)[-1].item<uint8_t>() & 15) == 7);
}

TEST_CASE("peft quantize: round trips stay within half a code gap of each block's absmax",
          "[peft][quantize]") {
  torch::manual_seed(7);
  auto w = torch::randn({37, 61}) * 0.05;
  w.view(-1).slice(0, 100, 103).mul_(40.0);  // outliers
  const auto& cb = peft::nf4_codebook();
  float gap = 0;
  for (size_t i = 0; i + 1 < cb.size(); ++i) gap = std::max(gap, cb[i + 1] - cb[i]);

  for (bool dq : {false, true}) {
    INFO("double_quant " << dq);
    auto q = peft::quantize_nf4(w, 64, dq);
    auto back = peft::dequantize_nf4(q);
    auto err = (back - w).abs().reshape(-1);
    auto absmax = peft::nf4_absmax(q);
    auto bound = absmax.repeat_interleave(64).slice(0, 0, w.numel()) * (gap / 2 * 1.0001f);
    if (dq) {  // the nested absmax is itself off by up to half a dynamic-map gap of its scale
      auto plain = peft::quantize_nf4(w, 64, false).absmax;
      auto absmax_err = (absmax - plain).abs().max().item<float>();
      CHECK(absmax_err <= 0.02f * plain.abs().max().item<float>());
      bound = bound + (absmax_err * 1.0001f);
    }
    CHECK((err <= bound).all().item<bool>());
    CHECK(back.sizes() == w.sizes());
  }

  auto code = peft::dynamic_map(true);
  auto gaps = (code.slice(0, 1) - code.slice(0, 0, 255)).max().item<float>();
  for (auto r : {CodeRounding::kBitsandbytesCpu, CodeRounding::kNearest}) {
    auto q = peft::quantize_blockwise(w, code, 256, r);
    auto err = (peft::dequantize_blockwise(q, code) - w).abs().reshape(-1);
    auto bound = q.absmax.repeat_interleave(256).slice(0, 0, w.numel()) * (gaps / 2 + 1e-4f);
    CHECK((err <= bound).all().item<bool>());
  }

  auto i8 = peft::quantize_int8_rowwise(w.to(torch::kBFloat16));
  auto back = peft::dequantize_int8_rowwise(i8, torch::kFloat32);
  auto ref = w.to(torch::kBFloat16).to(torch::kFloat32);
  CHECK(((back - ref).abs() <= i8.row_absmax.unsqueeze(1) * (0.5f / 127 * 1.0001f))
            .all()
            .item<bool>());
  CHECK(peft::dequantize_int8_rowwise(i8, torch::kBFloat16).scalar_type() == torch::kBFloat16);
}

TEST_CASE("peft quantize: bad input is a DataError", "[peft][quantize]") {
  using util::DataError;
  auto code = peft::dynamic_map(true);
  auto w = torch::randn({4, 64});
  CHECK_THROWS_AS(peft::quantize_nf4(torch::ones({64}, torch::kInt32)), DataError);
  CHECK_THROWS_AS(peft::quantize_nf4(torch::ones({64}, torch::kFloat64)), DataError);
  CHECK_THROWS_AS(peft::quantize_nf4(torch::empty({0})), DataError);
  CHECK_THROWS_AS(peft::quantize_nf4(torch::Tensor()), DataError);
  CHECK_THROWS_AS(peft::quantize_nf4(w, 48), DataError);
  CHECK_THROWS_AS(peft::quantize_nf4(w, 0), DataError);
  auto nan = w.clone();
  nan[1][3] = std::nanf("");
  CHECK_THROWS_AS(peft::quantize_nf4(nan), DataError);
  auto inf = w.clone();
  inf[0][0] = INFINITY;
  CHECK_THROWS_AS(peft::quantize_blockwise(inf, code, 64), DataError);
  CHECK_THROWS_WITH(peft::quantize_nf4(torch::ones({64}, torch::kInt64)),
                    Catch::Matchers::Contains("cannot quantize a tensor of dtype Long"));

  CHECK_THROWS_AS(peft::quantize_blockwise(w, code, 0), DataError);
  CHECK_THROWS_AS(peft::quantize_blockwise(w, code.slice(0, 0, 16), 64), DataError);
  CHECK_THROWS_AS(peft::quantize_blockwise(w, code.flip(0), 64), DataError);
  CHECK_THROWS_AS(peft::quantize_blockwise(w, code.to(torch::kFloat64), 64), DataError);
  CHECK_THROWS_AS(peft::quantize_blockwise(w.to(torch::kInt8), code, 64), DataError);

  CHECK_THROWS_AS(peft::quantize_int8_rowwise(torch::randn({8})), DataError);
  CHECK_THROWS_AS(peft::quantize_int8_rowwise(torch::randn({2, 3, 4})), DataError);
  CHECK_THROWS_AS(peft::quantize_int8_rowwise(torch::ones({2, 3}, torch::kInt8)), DataError);

  // Pieces that do not fit together (a damaged or mismatched quantized weight).
  auto q = peft::quantize_nf4(w, 64, true);
  auto bad = q;
  bad.packed = q.packed.slice(0, 1);
  CHECK_THROWS_AS(peft::dequantize_nf4(bad), DataError);
  bad = q;
  bad.shape = {4, 65};
  CHECK_THROWS_AS(peft::dequantize_nf4(bad), DataError);
  bad = q;
  bad.absmax_codes = q.absmax_codes.to(torch::kFloat32);
  CHECK_THROWS_AS(peft::dequantize_nf4(bad), DataError);
  bad = q;
  bad.absmax_scales = torch::Tensor();
  CHECK_THROWS_AS(peft::dequantize_nf4(bad), DataError);
  bad = q;
  bad.double_quant = false;  // no plain absmax
  CHECK_THROWS_AS(peft::dequantize_nf4(bad), DataError);
  CHECK_THROWS_AS(peft::dequantize_nf4(q, torch::kInt32), DataError);

  auto b = peft::quantize_blockwise(w, code, 100);
  auto bb = b;
  bb.block_size = 64;
  CHECK_THROWS_AS(peft::dequantize_blockwise(bb, code), DataError);
  CHECK_THROWS_AS(peft::dequantize_blockwise(b, code.slice(0, 0, 255)), DataError);

  auto i8 = peft::quantize_int8_rowwise(w);
  auto bi = i8;
  bi.row_absmax = i8.row_absmax.slice(0, 1);
  CHECK_THROWS_AS(peft::dequantize_int8_rowwise(bi, torch::kFloat32), DataError);
}

TEST_CASE("peft quantize: CUDA tensors quantize as the CPU does", "[peft][quantize][gpu]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  torch::manual_seed(3);
  auto w = torch::randn({33, 70}) * 0.1;  // ragged last block
  auto wc = w.to(torch::kCUDA);
  auto code = peft::dynamic_map(true);

  auto cpu = peft::quantize_nf4(w, 64, false);
  auto gpu = peft::quantize_nf4(wc, 64, false);
  CHECK(gpu.packed.is_cuda());
  CHECK_BITS(gpu.packed, cpu.packed);
  CHECK_BITS(gpu.absmax, cpu.absmax);
  CHECK_BITS(peft::dequantize_nf4(gpu), peft::dequantize_nf4(cpu));
  // With double quantization the offset is a mean, whose summation order differs per device.
  auto gpu_dq = peft::quantize_nf4(wc, 64, true);
  CHECK_BITS(gpu_dq.packed, cpu.packed);
  CHECK(std::abs(gpu_dq.absmax_offset - peft::quantize_nf4(w, 64, true).absmax_offset) <=
        1e-6f * std::abs(gpu_dq.absmax_offset));

  for (auto r : {CodeRounding::kBitsandbytesCpu, CodeRounding::kNearest}) {
    auto a = peft::quantize_blockwise(w, code, 256, r);
    auto b = peft::quantize_blockwise(wc, code, 256, r);
    CHECK_BITS(b.codes, a.codes);
    CHECK_BITS(b.absmax, a.absmax);
    CHECK_BITS(peft::dequantize_blockwise(b, code), peft::dequantize_blockwise(a, code));
  }
  auto i8 = peft::quantize_int8_rowwise(wc.to(torch::kFloat16));
  auto i8c = peft::quantize_int8_rowwise(w.to(torch::kFloat16));
  CHECK_BITS(i8.codes, i8c.codes);
  CHECK_BITS(i8.row_absmax, i8c.row_absmax);
}
