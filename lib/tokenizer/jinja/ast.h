// The syntax tree the parser builds and the interpreter walks: expressions (Expr) and statements
// (Stmt), each with the line and column it starts at. A tagged struct per node family keeps the tree
// small to walk; which fields a kind uses is listed beside it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/value.h"

namespace hftrain::tokenizer::jinja {

enum class ExprKind : uint8_t {
  kConst,     // value
  kName,      // name
  kList,      // args: items
  kTuple,     // args: items
  kDict,      // args: key, value, key, value, ...
  kGetattr,   // args[0]: object; name: attribute
  kGetitem,   // args[0]: object, args[1]: key
  kSlice,     // args[0]: object, args[1..3]: start, stop, step (each may be null)
  kCall,      // args[0]: callee, args[1..]: positional; kwargs
  kFilter,    // args[0]: input (null in a filter block or block set), args[1..]: positional; kwargs; name
  kTest,      // args[0]: input, args[1..]: positional; kwargs; name
  kNeg,       // args[0]
  kPos,       // args[0]
  kNot,       // args[0]
  kBinary,    // args[0], args[1]; op
  kAnd,       // args[0], args[1]
  kOr,        // args[0], args[1]
  kConcat,    // args: items (~)
  kCompare,   // args[0]: first, args[1..]: operands; compare_ops
  kCondExpr,  // args[0]: value if true, args[1]: test, args[2]: value if false (may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kConst;
  int line = 0;
  int column = 0;
  int depth = 1;  // nesting depth of the subtree
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  BinaryOp op = BinaryOp::kAdd;
  std::vector<CompareOp> compare_ops;
};

// What {% set %} and {% for %} assign to.
struct Target {
  enum class Kind : uint8_t { kName, kTuple, kNamespaceAttr };
  Kind kind = Kind::kName;
  std::string name;           // kName: the variable; kNamespaceAttr: the namespace variable
  std::string attr;           // kNamespaceAttr
  std::vector<Target> items;  // kTuple
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroDef {
  std::string name;
  int line = 0;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() params
  Body body;
  bool uses_varargs = false;
  bool uses_kwargs = false;
  bool uses_caller = false;
};

enum class StmtKind : uint8_t {
  kData,         // text
  kPrint,        // expr
  kIf,           // branches (test, body); else_body
  kFor,          // target, expr: iterable, cond: filter (may be null), body, else_body
  kSet,          // target, expr
  kSetBlock,     // target, expr: filter chain (null input; may be null), body
  kMacro,        // macro
  kCallBlock,    // macro: the caller, expr: the call
  kFilterBlock,  // expr: filter chain (null input), body
  kGeneration,   // body
  kWith,         // assignments, body
  kBreak,
  kContinue,
};

struct Stmt {
  StmtKind kind = StmtKind::kData;
  int line = 0;
  int column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  Target target;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::shared_ptr<const MacroDef> macro;
  std::vector<std::pair<Target, ExprPtr>> assignments;
};

struct TemplateAst {
  std::string name;
  Body body;
  bool has_generation = false;
};

}  // namespace hftrain::tokenizer::jinja
