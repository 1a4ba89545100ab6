#include <catch2/catch.hpp>

#include "helpers.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

TEST_CASE("${key} copies another key's value, after all overrides", "[config][interpolate]") {
  auto r = resolve("trainer: {max_steps: 10}\nmodel: {max_seq_len: 512}\ndata: {seq_len: '${model.max_seq_len}'}\n",
                   {"model.max_seq_len=256"});
  CHECK(r.values.data.seq_len == 256);
  CHECK_THAT(r.tree.find_path({"data", "seq_len"})->origin().describe(),
             Contains("recipe.yaml:3:17 via ${model.max_seq_len} = command line `model.max_seq_len=256`"));
}

TEST_CASE("interpolation inside strings", "[config][interpolate]") {
  auto c = resolve("trainer: {max_steps: 10}\nrun: {name: exp1, output_dir: 'out/${run.name}-s${run.seed}'}\n").values;
  CHECK(c.run.output_dir == "out/exp1-s1234");
  auto escaped = resolve("trainer: {max_steps: 10}\nrun: {name: 'cost \\${x}'}\n").values;
  CHECK(escaped.run.name == "cost ${x}");
}

TEST_CASE("${env:VAR} and ${env:VAR,default}", "[config][interpolate]") {
  util::MapEnvironment env({{"LR", "0.002"}, {"WHO", "me"}});
  auto c = resolve("trainer: {max_steps: 10}\noptimizer: {lr: '${env:LR}'}\nrun: {name: '${env:WHO}-${env:NOPE,x}'}\n",
                   {}, env).values;
  CHECK(c.optimizer.lr == Approx(0.002));
  CHECK(c.run.name == "me-x");
  CHECK_THAT(resolve_error("trainer: {max_steps: 10}\nrun: {name: '${env:NOPE}'}\n"),
             Contains("uses environment variable NOPE, which is not set") && Contains("${env:NOPE,VALUE}"));
}

TEST_CASE("interpolation cycles are reported with the whole loop", "[config][interpolate]") {
  auto err =
      resolve_error("trainer: {max_steps: 10}\nmodel: {d_model: '${model.n_head}', n_head: '${model.d_model}'}\n");
  CHECK_THAT(err, Contains("interpolation cycle: model.n_head -> model.d_model -> model.n_head"));
  CHECK_THAT(err, !Contains("expects"));  // no follow-on type errors for the unresolved values
  auto self = resolve_error("trainer: {max_steps: 10}\nrun: {name: 'a${run.name}'}\n");
  CHECK_THAT(self, Contains("interpolation cycle: run.name -> run.name"));
}

TEST_CASE("bad references are reported", "[config][interpolate]") {
  CHECK_THAT(resolve_error("trainer: {max_steps: 10}\nrun: {name: '${run.nme}'}\n"),
             Contains("refers to `${run.nme}`, which is not a key") && Contains("did you mean `${run.name}`?"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 10}\nrun: {name: 'a${run.seed'}\n"), Contains("unterminated"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 10}\nrun: {name: 'a${model}'}\n"),
             Contains("is a mapping and cannot be part of a string"));
}
