#include "optim/adamw_8bit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <torch/torch.h>

#include "optim/state_io.h"
#include "peft/quantize.h"
#include "util/error.h"

namespace hftrain::optim {

// ---- Block-wise 8-bit quantization -------------------------------------------------------------
// The code maps are peft's (peft/quantize.h: bitsandbytes' create_dynamic_map). Written from
// bitsandbytes' quantize_blockwise and dequantize_blockwise kernels with the same fp32
// arithmetic: absmax and dequantized values agree with bitsandbytes' bit for bit, the codes are the exact nearest ones
// (as its CUDA kernels round; its CPU build approximates, see adamw_8bit.h).
namespace detail {

namespace {

// Midpoints between consecutive codes, 0.5 (a + b) in fp32: x rounds to code i when
// mid[i - 1] < x <= mid[i] (bucketize, right=false), so a tie goes to the lower code.
torch::Tensor midpoints_of(const torch::Tensor& map) {
  return (map.narrow(0, 0, map.numel() - 1) + map.narrow(0, 1, map.numel() - 1)) * 0.5;
}

// The nearest-code search. bucketize over the midpoints is exact but slow on the CPU (a binary
// search per element). The same answer, element-wise: a table over the top 16 bits of x's fp32
// pattern (sign, exponent, 7 mantissa bits) holds the code of the smallest value with those bits,
// and one comparison with that code's upper midpoint finishes. Exact whenever no such bucket of
// values holds two midpoints, which is checked when the table is built (a map where it fails is
// searched with bucketize); both dynamic maps pass: their closest codes, 0.007 apart just below 1,
// are wider apart than a bucket there (2^-8).
struct CodeSearch {
  torch::Tensor mid;       // 255 midpoints
  torch::Tensor mid_next;  // 256: mid, then +inf (above the last code nothing rounds up)
  torch::Tensor table;     // int32 [65536]; undefined: search with bucketize
};

CodeSearch code_search(const torch::Tensor& map) {
  CodeSearch s;
  s.mid = midpoints_of(map);
  s.mid_next = torch::cat(
      {s.mid, torch::full({1}, std::numeric_limits<float>::infinity(), s.mid.options())});
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(map.device());
  const torch::Tensor bucket = torch::arange(65536, i64);
  // The fp32 patterns b << 16 and b << 16 | 0xFFFF as int32 (two's complement), then as floats.
  torch::Tensor lo_bits = bucket * 65536;
  lo_bits = torch::where(bucket >= 32768, lo_bits - (int64_t{1} << 32), lo_bits);
  const torch::Tensor a = lo_bits.to(torch::kInt32).view(torch::kFloat32);
  const torch::Tensor b = (lo_bits + 0xFFFF).to(torch::kInt32).view(torch::kFloat32);
  auto in_range = [](const torch::Tensor& v) { return torch::nan_to_num(v, 0.0).clamp(-1.0, 1.0); };
  const torch::Tensor low = in_range(torch::minimum(a, b)), high = in_range(torch::maximum(a, b));
  torch::Tensor low_code = torch::bucketize(low, s.mid, /*out_int32=*/true, /*right=*/false);
  const torch::Tensor high_code =
      torch::bucketize(high, s.mid, /*out_int32=*/true, /*right=*/false);
  if ((high_code - low_code).max().item<int64_t>() <= 1) s.table = low_code;
  return s;
}

// The index of the code nearest each element of x (fp32, in [-1, 1]), int32 of x's shape.
torch::Tensor nearest_codes(const torch::Tensor& x, const CodeSearch& s) {
  if (!s.table.defined()) return torch::bucketize(x, s.mid, /*out_int32=*/true, /*right=*/false);
  const torch::Tensor bucket =
      x.contiguous().view(torch::kInt32).bitwise_right_shift(16).bitwise_and_(0xFFFF);
  torch::Tensor code = s.table.index_select(0, bucket.view(-1));
  const torch::Tensor upper = s.mid_next.index_select(0, code);
  code.add_(x.reshape(-1).gt(upper));
  return code.view(x.sizes());
}

// One run of whole blocks or the trailing partial block: x (rows, width) fp32 contiguous.
void quantize_rows(const torch::Tensor& x, const CodeSearch& search, torch::Tensor codes,
                   torch::Tensor absmax) {
  torch::Tensor amax = x.abs().amax(1);
  // x * (1 / absmax) as bitsandbytes (not x / absmax), clamped to the map's range.
  torch::Tensor normalized = (x * amax.reciprocal().unsqueeze(1)).clamp_(-1.0, 1.0);
  torch::Tensor index = nearest_codes(normalized, search);
  index.masked_fill_((amax == 0).unsqueeze(1), 0);  // an all-zero block: code 0, as bitsandbytes
  codes.copy_(index);
  absmax.copy_(amax);
}

// Splits the flat `n` elements into whole blocks and a partial tail and calls fn(start, rows,
// width, block index) for each part.
template <typename Fn>
void for_block_runs(int64_t n, int64_t block, Fn&& fn) {
  const int64_t full = n / block;
  if (full > 0) fn(int64_t{0}, full, block, int64_t{0});
  if (n % block != 0) fn(full * block, int64_t{1}, n % block, full);
}

// The flat-range versions the optimizer runs on chunks: x, codes flat contiguous (codes uint8),
// absmax flat (one per block of the range); the range starts on a block boundary.
void quantize_flat(const torch::Tensor& x, const CodeSearch& search, int64_t block,
                   torch::Tensor& codes, torch::Tensor& absmax) {
  for_block_runs(x.numel(), block, [&](int64_t start, int64_t rows, int64_t width, int64_t b) {
    quantize_rows(x.narrow(0, start, rows * width).view({rows, width}), search,
                  codes.narrow(0, start, rows * width).view({rows, width}),
                  absmax.narrow(0, b, rows));
  });
}

torch::Tensor dequantize_flat(const torch::Tensor& codes, const torch::Tensor& absmax,
                              const torch::Tensor& map, int64_t block) {
  torch::Tensor values = map.index_select(0, codes.to(torch::kInt32));
  for_block_runs(values.numel(), block, [&](int64_t start, int64_t rows, int64_t width, int64_t b) {
    values.narrow(0, start, rows * width)
        .view({rows, width})
        .mul_(absmax.narrow(0, b, rows).unsqueeze(1));
  });
  return values;
}

int64_t blocks_of(int64_t n, int64_t block) {
  return (n + block - 1) / block;
}

}  // namespace

Quantized8bit quantize_blockwise(const torch::Tensor& x, const torch::Tensor& map,
                                 int64_t block_size) {
  TORCH_CHECK(block_size > 0, "quantize_blockwise: block size must be positive");
  torch::NoGradGuard no_grad;
  const torch::Tensor flat = x.to(torch::kFloat32).contiguous().view(-1);
  const CodeSearch search = code_search(map.to(flat.device(), torch::kFloat32));
  Quantized8bit out{torch::empty(x.sizes(), x.options().dtype(torch::kUInt8)),
                    torch::empty({blocks_of(flat.numel(), block_size)}, flat.options())};
  torch::Tensor codes = out.codes.view(-1);
  quantize_flat(flat, search, block_size, codes, out.absmax);
  return out;
}

torch::Tensor dequantize_blockwise(const torch::Tensor& codes, const torch::Tensor& absmax,
                                   const torch::Tensor& map, int64_t block_size) {
  TORCH_CHECK(block_size > 0, "dequantize_blockwise: block size must be positive");
  TORCH_CHECK(codes.scalar_type() == torch::kUInt8, "dequantize_blockwise: codes must be uint8");
  TORCH_CHECK(absmax.numel() == blocks_of(codes.numel(), block_size),
              "dequantize_blockwise: one absmax per block expected");
  torch::NoGradGuard no_grad;
  const torch::Tensor values =
      dequantize_flat(codes.contiguous().view(-1), absmax.to(torch::kFloat32).contiguous().view(-1),
                      map.to(codes.device(), torch::kFloat32), block_size);
  return values.view(codes.sizes());
}

}  // namespace detail

// ---- The optimizer -----------------------------------------------------------------------------
namespace {

constexpr const char* kName = "adamw_8bit";

// Parameters are updated in chunks of this many elements (rounded to whole blocks): the fp32
// moments, gradient and parameter copies of one chunk are the transient memory of a step. Every
// operation is element-wise or per block, so the chunking does not change the arithmetic.
constexpr int64_t kChunkElements = int64_t{1} << 22;

struct ParamState {
  int64_t step = 0;       // 0: no state yet (the tensors below are undefined)
  torch::Tensor exp_avg;  // fp32 moments: parameters with fewer than min_8bit_size elements
  torch::Tensor exp_avg_sq;
  torch::Tensor state1;   // uint8 codes of exp_avg (signed map), the parameter's shape
  torch::Tensor state2;   // uint8 codes of exp_avg_sq (unsigned map)
  torch::Tensor absmax1;  // fp32, one per block
  torch::Tensor absmax2;
};

class AdamW8bit : public Optimizer {
 public:
  AdamW8bit(std::vector<ParamGroup> groups, const AdamW8bitSettings& settings)
      : Optimizer(std::move(groups)),
        settings_(settings),
        signed_map_(peft::dynamic_map(true)),
        unsigned_map_(peft::dynamic_map(false)) {
    // Whether each parameter keeps 8-bit moments: by the whole parameter's size, also where the
    // optimizer holds a piece of it (ZeRO), so that every rank decides as one process would.
    for (const auto& g : groups_) {
      for (size_t i = 0; i < g.params.size(); ++i) {
        const int64_t whole = g.whole_numels.empty() ? g.params[i].numel() : g.whole_numels[i];
        eight_bit_.push_back(whole >= settings_.min_8bit_size);
      }
    }
    state_.resize(eight_bit_.size());
  }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& g : groups_) {
      for (auto& p : g.params) {
        const bool eight_bit = eight_bit_[k];
        auto& st = state_[k++];
        if (!p.grad().defined()) continue;
        if (st.step == 0) init(p, eight_bit, st);
        ++st.step;
        if (st.state1.defined()) {
          update_8bit(p, st, g.lr, g.weight_decay);
        } else {
          update_32bit(p, st, g.lr, g.weight_decay);
        }
      }
    }
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta(kName, groups_);
    out.meta["steps"] = detail::export_param_states(
        groups_, state_, [&](const std::string& name, const auto& st) -> std::optional<int64_t> {
          if (st.step == 0) return std::nullopt;
          detail::add_tensor(out, name, "exp_avg", st.exp_avg);
          detail::add_tensor(out, name, "exp_avg_sq", st.exp_avg_sq);
          detail::add_tensor(out, name, "state1", st.state1);
          detail::add_tensor(out, name, "state2", st.state2);
          detail::add_tensor(out, name, "absmax1", st.absmax1);
          detail::add_tensor(out, name, "absmax2", st.absmax2);
          return st.step;
        });
    out.meta["hyperparameters"] = {{"betas", {settings_.beta1, settings_.beta2}},
                                   {"eps", settings_.eps},
                                   {"min_8bit_size", settings_.min_8bit_size},
                                   {"block_size", settings_.block_size}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{kName, /*counts_steps=*/true, [&](size_t, size_t index, const torch::Tensor& p) {
                                 return specs(p, eight_bit_[index]);
                               }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);

    std::vector<ParamState> fresh(loaded.size());
    size_t k = 0;
    for (const auto& g : groups_) {
      for (size_t i = 0; i < g.names.size(); ++i, ++k) {
        auto& in = loaded[k];
        if (!in.has_state) continue;
        auto& st = fresh[k];
        st.step = in.step;
        for (auto& t : in.tensors) t = t.contiguous();
        if (in.tensors.size() == 2) {
          st.exp_avg = in.tensors[0];
          st.exp_avg_sq = in.tensors[1];
        } else {
          st.state1 = in.tensors[0];
          st.state2 = in.tensors[1];
          st.absmax1 = in.tensors[2];
          st.absmax2 = in.tensors[3];
        }
      }
    }
    state_ = std::move(fresh);
  }

 private:
  // The state tensors of `p`, in the order load_state() reads them; as init() allocates them.
  std::vector<detail::TensorSpec> specs(const torch::Tensor& p, bool eight_bit) const {
    const std::vector<int64_t> shape = p.sizes().vec();
    if (!eight_bit) {
      return {{"exp_avg", shape, torch::kFloat32}, {"exp_avg_sq", shape, torch::kFloat32}};
    }
    const std::vector<int64_t> blocks = {(p.numel() + settings_.block_size - 1) /
                                         settings_.block_size};
    return {{"state1", shape, torch::kUInt8},
            {"state2", shape, torch::kUInt8},
            {"absmax1", blocks, torch::kFloat32},
            {"absmax2", blocks, torch::kFloat32}};
  }

  void init(const torch::Tensor& p, bool eight_bit, ParamState& st) const {
    const auto f32 = p.options().dtype(torch::kFloat32);
    if (!eight_bit) {
      st.exp_avg = torch::zeros(p.sizes(), f32);
      st.exp_avg_sq = torch::zeros(p.sizes(), f32);
      return;
    }
    // Zero codes and zero absmax, as bitsandbytes starts: they dequantize to (signed) zeros.
    const auto u8 = p.options().dtype(torch::kUInt8);
    const int64_t blocks = (p.numel() + settings_.block_size - 1) / settings_.block_size;
    st.state1 = torch::zeros(p.sizes(), u8);
    st.state2 = torch::zeros(p.sizes(), u8);
    st.absmax1 = torch::zeros({blocks}, f32);
    st.absmax2 = torch::zeros({blocks}, f32);
  }

  // bitsandbytes' 32-bit Adam (optimizer_update_32bit, "adam"), in its order of operations.
  void update_32bit(torch::Tensor& p, ParamState& st, double lr, double weight_decay) const {
    const torch::Tensor grad = p.grad().to(torch::kFloat32);
    torch::Tensor param = p.to(torch::kFloat32);  // p itself when fp32
    const double beta1 = settings_.beta1, beta2 = settings_.beta2;
    st.exp_avg.mul_(beta1).add_(grad, 1.0 - beta1);
    st.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1.0 - beta2);
    const double t = static_cast<double>(st.step);
    const double correction1 = 1.0 - std::pow(beta1, t);
    const double correction2 = std::sqrt(1.0 - std::pow(beta2, t));
    const double step_size = -lr * correction2 / correction1;
    if (weight_decay > 0.0) param.mul_(1.0 - lr * weight_decay);
    const torch::Tensor update =
        st.exp_avg / st.exp_avg_sq.sqrt().add_(settings_.eps * correction2);
    param.add_(update, step_size);
    if (!param.is_same(p)) p.copy_(param);
  }

  // bitsandbytes' 8-bit block-wise Adam (optimizer_update_8bit_blockwise, "adam"), in the order of
  // operations of its CPU implementation, chunk by chunk.
  void update_8bit(torch::Tensor& p, ParamState& st, double lr, double weight_decay) {
    const int64_t block = settings_.block_size;
    const int64_t n = p.numel();
    const int64_t chunk = std::max<int64_t>(1, kChunkElements / block) * block;
    const double beta1 = settings_.beta1, beta2 = settings_.beta2;
    const double t = static_cast<double>(st.step);
    const double correction1 = 1.0 - std::pow(beta1, t);
    const double correction2 = std::sqrt(1.0 - std::pow(beta2, t));

    const torch::Tensor grad = p.grad().contiguous().view(-1);
    const bool contiguous = p.is_contiguous();
    torch::Tensor flat_p = contiguous ? p.view(-1) : p.contiguous().view(-1);
    torch::Tensor codes1 = st.state1.view(-1), codes2 = st.state2.view(-1);
    const Maps& maps = maps_on(p.device());

    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t len = std::min(chunk, n - start);
      const int64_t b0 = start / block, nb = (len + block - 1) / block;
      torch::Tensor c1 = codes1.narrow(0, start, len), c2 = codes2.narrow(0, start, len);
      torch::Tensor a1 = st.absmax1.narrow(0, b0, nb), a2 = st.absmax2.narrow(0, b0, nb);

      torch::Tensor m = detail::dequantize_flat(c1, a1, maps.map1, block);
      torch::Tensor v = detail::dequantize_flat(c2, a2, maps.map2, block);
      const torch::Tensor g = grad.narrow(0, start, len).to(torch::kFloat32);
      torch::Tensor p_slice = flat_p.narrow(0, start, len);
      torch::Tensor param = p_slice.to(torch::kFloat32);  // the slice itself when fp32

      m.mul_(beta1).add_(g, 1.0 - beta1);
      v.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
      const torch::Tensor denom = (v.sqrt() / correction2).add_(settings_.eps);
      if (weight_decay > 0.0) param.mul_(1.0 - lr * weight_decay);
      param.addcdiv_(m, denom, -lr / correction1);
      if (!param.is_same(p_slice)) p_slice.copy_(param);

      detail::quantize_flat(m, maps.search1, block, c1, a1);
      detail::quantize_flat(v, maps.search2, block, c2, a2);
    }
    if (!contiguous) p.copy_(flat_p.view(p.sizes()));
  }

  // The two maps and their midpoints on one device, copied there once.
  struct Maps {
    torch::Tensor map1, map2;  // signed: exp_avg; unsigned: exp_avg_sq
    detail::CodeSearch search1, search2;
  };
  const Maps& maps_on(const c10::Device& device) {
    auto it = maps_.find(device.str());
    if (it == maps_.end()) {
      Maps m;
      m.map1 = signed_map_.to(device);
      m.map2 = unsigned_map_.to(device);
      m.search1 = detail::code_search(m.map1);
      m.search2 = detail::code_search(m.map2);
      it = maps_.emplace(device.str(), std::move(m)).first;
    }
    return it->second;
  }

  AdamW8bitSettings settings_;
  torch::Tensor signed_map_;                    // exp_avg's codes (CPU)
  torch::Tensor unsigned_map_;                  // exp_avg_sq's codes (CPU)
  std::unordered_map<std::string, Maps> maps_;  // by device
  std::vector<bool> eight_bit_;                 // per parameter, in group order: 8-bit moments
  std::vector<ParamState> state_;               // one per parameter, in group order
};

}  // namespace

std::unique_ptr<Optimizer> make_adamw_8bit(std::vector<ParamGroup> groups,
                                           const AdamW8bitSettings& settings) {
  if (settings.block_size < 1)
    throw std::invalid_argument("8-bit AdamW: block_size must be at least 1");
  if (settings.min_8bit_size < 0)
    throw std::invalid_argument("8-bit AdamW: min_8bit_size must not be negative");
  return std::make_unique<AdamW8bit>(std::move(groups), settings);
}

}  // namespace hftrain::optim
