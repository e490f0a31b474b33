// The expression language's parser (docs/guide.md, "Expressions"): text -> tokens ->
// an Expr tree, with the limits that keep hostile input bounded (length, nesting, height).
// The tree itself (printing, binding columns and fields) is in expr.cpp.
#include "motes/expr/expr.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <charconv>
#include <system_error>

namespace motes {

namespace {

using K = Expr::Kind;

struct Token {
  enum Type { end, number, ident, op, lparen, rparen, comma, string, lbracket, rbracket } type;
  std::string text;
  double value = 0;
  size_t pos = 0;
  long double exact = 0;  // number: an integer literal exactly (below 2^64), else value
};

// The exact value of a number's text: an integer literal (digits only) as written, when it
// is below 2^64 (long double holds those exactly); anything else as parsed to double.
long double exact_literal(const std::string& text, double value) {
  uint64_t u;
  auto r = std::from_chars(text.data(), text.data() + text.size(), u);
  if (r.ec == std::errc() && r.ptr == text.data() + text.size()) return (long double)u;
  return value;
}

constexpr size_t kMaxExpressionBytes = 4 << 20;  // room for `id in (...)` with 200,000 ids
constexpr int kMaxNesting = 200;      // parentheses, nots and unary signs inside each other
constexpr uint32_t kMaxHeight = 512;  // nodes on the longest root-to-leaf path (a + b + ... is left-deep)

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) { tokenize(); }

  // A condition (`where`) or a value (a histogram axis), whichever is asked for.
  ExprPtr parse(bool condition) {
    if (tokens_.size() == 1) throw UsageError("empty expression");
    ExprPtr e = parse_or();
    if (peek().type != Token::end) error(peek(), "unexpected '" + peek().text + "'");
    if (condition && !e->is_boolean())
      throw UsageError("expression '" + text_ + "' is a number, not a condition (compare it, e.g. '... > 0')");
    if (!condition && e->is_boolean())
      throw UsageError("expression '" + text_ + "' is a condition, not a number (a value is a column, arithmetic "
                       "or field('name'))");
    return e;
  }

 private:
  const std::string& text_;
  std::vector<Token> tokens_;
  size_t at_ = 0;
  int depth_ = 0;

  [[noreturn]] void error(const Token& t, const std::string& what) const { error_at(t.pos, what); }
  [[noreturn]] void error_at(size_t pos, const std::string& what) const {
    // A long expression is quoted around the position only (messages stay readable).
    std::string shown = text_;
    if (shown.size() > 120) {
      size_t from = pos > 50 ? pos - 50 : 0;
      shown = (from ? "..." : "") + shown.substr(from, 100) + (from + 100 < shown.size() ? "..." : "");
    }
    throw UsageError("syntax error at position " + std::to_string(pos + 1) + " of '" + printable(shown) + "': " + what);
  }

  void tokenize() {
    size_t i = 0, n = text_.size();
    while (i < n) {
      char c = text_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      size_t start = i;
      if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(text_[i + 1])))) {
        // Decimal only, whatever the C locale (strtod would read "0.5" as 0 under a
        // decimal-comma locale, and would accept hex such as 0x10).
        double v = 0;
        auto r = std::from_chars(text_.data() + i, text_.data() + n, v, std::chars_format::general);
        if (r.ec == std::errc::result_out_of_range) {
          error_at(i, "number '" + text_.substr(start, size_t(r.ptr - (text_.data() + start))) + "' is out of range");
        }
        if (r.ec != std::errc()) error_at(i, "malformed number");
        i = size_t(r.ptr - text_.data());
        if (i < n && (std::isalnum(static_cast<unsigned char>(text_[i])) || text_[i] == '_' || text_[i] == '.'))
          error_at(i, "malformed number");
        const std::string digits = text_.substr(start, i - start);
        tokens_.push_back({Token::number, digits, v, start, exact_literal(digits, v)});
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (i < n && (std::isalnum(static_cast<unsigned char>(text_[i])) || text_[i] == '_')) ++i;
        tokens_.push_back({Token::ident, text_.substr(start, i - start), 0, start});
      } else if (c == '\'' || c == '"') {  // a quoted name (field('Bz')): no escapes
        size_t close = text_.find(c, i + 1);
        if (close == std::string::npos) error_at(i, "unterminated quoted name");
        tokens_.push_back({Token::string, text_.substr(i + 1, close - i - 1), 0, i});
        i = close + 1;
      } else if (c == ',') {
        tokens_.push_back({Token::comma, ",", 0, i++});
      } else if (c == '(') {
        tokens_.push_back({Token::lparen, "(", 0, i++});
      } else if (c == ')') {
        tokens_.push_back({Token::rparen, ")", 0, i++});
      } else if (c == '[') {
        tokens_.push_back({Token::lbracket, "[", 0, i++});
      } else if (c == ']') {
        tokens_.push_back({Token::rbracket, "]", 0, i++});
      } else {
        static const char* ops[] = {"**", "<=", ">=", "==", "!=", "&&", "||", "<", ">", "+", "-", "*", "/", "&", "|", "~", "!"};
        bool found = false;
        for (const char* op : ops) {
          size_t len = std::strlen(op);
          if (text_.compare(i, len, op) == 0) {
            tokens_.push_back({Token::op, op, 0, i});
            i += len;
            found = true;
            break;
          }
        }
        if (!found) {
          size_t len = static_cast<unsigned char>(c) >= 0x80 ? std::max<size_t>(1, utf8_length(text_, i)) : 1;
          error_at(i, c == '=' ? "'=' is not an operator (did you mean '=='?)"
                               : "unexpected character '" + printable(text_.substr(i, len)) + "'");
        }
      }
    }
    tokens_.push_back({Token::end, "end of expression", 0, n});
  }

  const Token& peek() const { return tokens_[at_]; }
  bool accept_op(const char* op) {
    if (peek().type == Token::op && peek().text == op) return ++at_, true;
    return false;
  }
  bool accept_word(const char* w) {
    if (peek().type == Token::ident && peek().text == w) return ++at_, true;
    return false;
  }

  // A node; every tree walk (binding, pruning, evaluation, printing) recurses, so the height
  // is bounded here, where a long chain such as x + x + ... + x is built without recursion.
  ExprPtr make(K k, ExprPtr a = nullptr, ExprPtr b = nullptr) const {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    if (a) e->height = std::max(e->height, a->height + 1), e->args.push_back(std::move(a));
    if (b) e->height = std::max(e->height, b->height + 1), e->args.push_back(std::move(b));
    if (e->height > kMaxHeight)
      error(peek(), "expression is too deep (more than " + std::to_string(kMaxHeight) +
                        " nested operations; split a long sum or product into parenthesised groups)");
    return e;
  }

  void need_boolean(const ExprPtr& e, const Token& t, const char* op) const {
    if (!e->is_boolean()) error(t, std::string("'") + op + "' needs conditions on both sides, got '" + e->to_string() + "'");
  }
  void need_number(const ExprPtr& e, const Token& t, const std::string& op) const {
    if (e->is_boolean()) error(t, "'" + op + "' needs numbers, got the condition '" + e->to_string() + "' (add parentheses?)");
  }

  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.error(p.peek(), "expression nested too deeply (parentheses, not, unary signs)");
    }
    ~Nest() { --p.depth_; }
  };

  ExprPtr parse_or() {
    Nest guard(*this);
    ExprPtr left = parse_and();
    for (;;) {
      const Token& t = peek();
      if (!(accept_word("or") || accept_op("|") || accept_op("||"))) return left;
      ExprPtr right = parse_and();
      need_boolean(left, t, "or");
      need_boolean(right, t, "or");
      left = make(K::or_, std::move(left), std::move(right));
    }
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    for (;;) {
      const Token& t = peek();
      if (!(accept_word("and") || accept_op("&") || accept_op("&&"))) return left;
      ExprPtr right = parse_not();
      need_boolean(left, t, "and");
      need_boolean(right, t, "and");
      left = make(K::and_, std::move(left), std::move(right));
    }
  }

  ExprPtr parse_not() {
    Nest guard(*this);
    const Token& t = peek();
    if (accept_word("not") || accept_op("~") || accept_op("!")) {
      ExprPtr e = parse_not();
      if (!e->is_boolean()) error(t, "'not' needs a condition, got '" + e->to_string() + "'");
      return make(K::not_, std::move(e));
    }
    return parse_compare();
  }

  static bool comparison_kind(const std::string& op, K& k) {
    if (op == "<") k = K::lt; else if (op == "<=") k = K::le; else if (op == ">") k = K::gt;
    else if (op == ">=") k = K::ge; else if (op == "==") k = K::eq; else if (op == "!=") k = K::ne;
    else return false;
    return true;
  }

  // `x in (...)` or `x not in (...)` after the operand x.
  bool at_in() const {
    const Token& t = peek();
    if (t.type != Token::ident) return false;
    if (t.text == "in") return true;
    return t.text == "not" && at_ + 1 < tokens_.size() && tokens_[at_ + 1].type == Token::ident && tokens_[at_ + 1].text == "in";
  }

  // One literal of an in-list: a signed number or inf. Integers are read exactly.
  long double parse_literal() {
    bool negative = false;
    if (accept_op("-")) negative = true;
    else accept_op("+");
    const Token& t = peek();
    long double v;
    if (t.type == Token::number) {
      v = t.exact;
    } else if (t.type == Token::ident && t.text == "inf") {
      v = INFINITY;
    } else {
      error(t, "expected a number in the list after 'in', got '" + t.text + "'");
    }
    ++at_;
    return negative ? -v : v;
  }

  ExprPtr parse_in(ExprPtr operand) {
    const Token& t = peek();
    const bool negated = t.text == "not";
    at_ += negated ? 2 : 1;
    need_number(operand, t, negated ? "not in" : "in");
    const Token open = peek();
    if (open.type != Token::lparen && open.type != Token::lbracket)
      error(open, "expected '(' or '[' with the list of values after 'in', got '" + open.text + "'");
    ++at_;
    const Token::Type close = open.type == Token::lparen ? Token::rparen : Token::rbracket;
    auto list = std::make_shared<InList>();
    while (peek().type != close) {
      list->values.push_back(parse_literal());
      if (peek().type == Token::comma) ++at_;
      else if (peek().type != close) error(peek(), std::string("expected ',' or '") + (close == Token::rparen ? ")" : "]") + "' in the list after 'in', got '" + peek().text + "'");
    }
    ++at_;
    std::sort(list->values.begin(), list->values.end());
    list->values.erase(std::unique(list->values.begin(), list->values.end()), list->values.end());
    for (long double v : list->values) list->rounded.push_back(double(v));
    ExprPtr e = make(K::in_, std::move(operand));
    e->list = std::move(list);
    return negated ? make(K::not_, std::move(e)) : std::move(e);
  }

  ExprPtr parse_compare() {
    ExprPtr left = parse_sum();
    if (at_in()) return parse_in(std::move(left));
    ExprPtr result;
    K k;
    while (peek().type == Token::op && comparison_kind(peek().text, k)) {
      const Token& t = tokens_[at_++];
      need_number(left, t, t.text);
      ExprPtr right = parse_sum();
      need_number(right, t, t.text);
      ExprPtr cmp = make(k, left->clone(), right->clone());
      result = result ? make(K::and_, std::move(result), std::move(cmp)) : std::move(cmp);
      left = std::move(right);
    }
    return result ? std::move(result) : std::move(left);
  }

  ExprPtr parse_sum() {
    ExprPtr left = parse_product();
    for (;;) {
      const Token& t = peek();
      K k;
      if (accept_op("+")) k = K::add;
      else if (accept_op("-")) k = K::sub;
      else return left;
      ExprPtr right = parse_product();
      need_number(left, t, t.text);
      need_number(right, t, t.text);
      left = make(k, std::move(left), std::move(right));
    }
  }

  ExprPtr parse_product() {
    ExprPtr left = parse_unary();
    for (;;) {
      const Token& t = peek();
      K k;
      if (accept_op("*")) k = K::mul;
      else if (accept_op("/")) k = K::div;
      else return left;
      ExprPtr right = parse_unary();
      need_number(left, t, t.text);
      need_number(right, t, t.text);
      left = make(k, std::move(left), std::move(right));
    }
  }

  ExprPtr parse_unary() {
    Nest guard(*this);
    const Token& t = peek();
    if (accept_op("-")) {
      ExprPtr e = parse_unary();
      need_number(e, t, "-");
      if (e->kind == K::number) return e->value = -e->value, e->exact = -e->exact, std::move(e);
      return make(K::negate, std::move(e));
    }
    if (accept_op("+")) return parse_unary();
    return parse_power();
  }

  ExprPtr parse_power() {
    ExprPtr base = parse_atom();
    const Token& t = peek();
    if (accept_op("**")) {
      ExprPtr exponent = parse_unary();
      need_number(base, t, "**");
      need_number(exponent, t, "**");
      return make(K::pow, std::move(base), std::move(exponent));
    }
    return base;
  }

  // field('name'[, 'component']), after its word: the field sampled at each point's position.
  ExprPtr parse_field() {
    ++at_;
    if (peek().type != Token::string) error(peek(), "field( takes a quoted field name, e.g. field('Bz')");
    auto e = make(K::field);
    e->name = peek().text;
    if (!valid_name(e->name)) error(peek(), "'" + printable(e->name) + "' is not a field name");
    ++at_;
    if (peek().type == Token::comma) {
      ++at_;
      if (peek().type != Token::string) error(peek(), "field('" + e->name + "', ...) takes a quoted component");
      e->component = peek().text;
      if (!valid_name(e->component)) error(peek(), "'" + printable(e->component) + "' is not a component name");
      ++at_;
    }
    if (peek().type != Token::rparen) error(peek(), "expected ')' to close field(");
    ++at_;
    for (const char* axis : kPositionColumns) {  // sampled at each point's position
      auto c = make(K::column);
      c->name = axis;
      e->args.push_back(std::move(c));
    }
    return e;
  }

  // function(sum), after the function's name `t`.
  ExprPtr parse_call(const Token& t) {
    const Function* fn = find_function(t.text);
    if (!fn) error(t, "unknown function '" + t.text + "' (functions: " + function_names() + ")");
    ++at_;
    ExprPtr arg = parse_sum();
    need_number(arg, t, t.text);
    if (peek().type != Token::rparen) error(peek(), "expected ')' to close " + t.text + "(");
    ++at_;
    auto e = make(K::call, std::move(arg));
    e->name = t.text;
    e->function = fn;
    return e;
  }

  ExprPtr parse_atom() {
    Nest guard(*this);
    const Token t = peek();
    switch (t.type) {
      case Token::number: {
        ++at_;
        auto e = make(K::number);
        e->value = t.value;
        e->exact = t.exact;
        return e;
      }
      case Token::ident: {
        for (size_t w = 0; w < kOperatorWords; ++w)
          if (t.text == kReservedWords[w]) error(t, "expected a value, got '" + t.text + "'");
        ++at_;
        if (t.text == "inf" || t.text == "nan") {
          auto e = make(K::number);
          e->value = t.text == "inf" ? INFINITY : NAN;
          e->exact = e->value;
          return e;
        }
        if (t.text == "field" && peek().type == Token::lparen) return parse_field();
        if (peek().type == Token::lparen) return parse_call(t);
        auto e = make(K::column);
        e->name = t.text;
        return e;
      }
      case Token::lparen: {
        ++at_;
        ExprPtr e = parse_or();
        if (peek().type != Token::rparen) error(peek(), "expected ')', got '" + peek().text + "'");
        ++at_;
        return e;
      }
      case Token::rparen:
        error(t, "unexpected ')'");
      case Token::lbracket:
      case Token::rbracket:
        error(t, "unexpected '" + t.text + "' (brackets hold the list after 'in')");
      case Token::op:
        error(t, "expected a value, got '" + t.text + "'");
      case Token::end:
        error(t, "expression ends where a value is expected");
    }
    error(t, "unexpected token");
  }
};

}  // namespace

namespace {
ExprPtr parse_text(const std::string& text, bool condition) {
  if (text.size() > kMaxExpressionBytes) throw UsageError("expression longer than " + std::to_string(kMaxExpressionBytes >> 20) + " MiB");
  return Parser(text).parse(condition);
}
}  // namespace

ExprPtr parse_expression(const std::string& text) { return parse_text(text, true); }

ExprPtr parse_value(const std::string& text) { return parse_text(text, false); }

}  // namespace motes
