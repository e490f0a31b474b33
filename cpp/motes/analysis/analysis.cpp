#include "motes/analysis/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

#include "motes/query/derive.hpp"
#include "motes/query/evaluate.hpp"

namespace motes {

namespace {

// Bin edges and bin lookup exactly as numpy.histogram computes them (float64).
class Binner {
 public:
  explicit Binner(const Axis& a) : bins_(a.bins), lo_(a.lo), hi_(a.hi) {
    if (a.bins == 0) throw UsageError("histogram needs at least one bin");
    if (a.bins > (1u << 24)) throw UsageError("histogram has too many bins (" + std::to_string(a.bins) + ")");
    if (!(std::isfinite(a.lo) && std::isfinite(a.hi) && a.lo < a.hi))
      throw UsageError("histogram range [" + number_text(a.lo) + ", " + number_text(a.hi) + "] is not a finite, increasing interval");
    double step = (a.hi - a.lo) / double(a.bins);
    edges_.resize(a.bins + 1);
    for (uint32_t k = 0; k <= a.bins; ++k) edges_[k] = double(k) * step + a.lo;
    edges_[a.bins] = a.hi;
    // As numpy refuses: a range whose width overflows float64 (edges inf and NaN), or too
    // narrow for this many distinct edges.
    if (!std::isfinite(a.hi - a.lo))
      throw UsageError("histogram range [" + number_text(a.lo) + ", " + number_text(a.hi) +
                       "] is too wide: its width overflows float64; give a narrower range");
    for (uint32_t k = 0; k < a.bins; ++k)
      if (!(edges_[k] < edges_[k + 1]))
        throw UsageError("histogram range [" + number_text(a.lo) + ", " + number_text(a.hi) + "] is too narrow for " +
                         std::to_string(a.bins) + " bins of float64 width; give fewer bins or a wider range");
  }
  // -1 when v falls outside [lo, hi] or is NaN.
  int64_t bin(double v) const {
    if (!(v >= lo_ && v <= hi_)) return -1;
    int64_t i = int64_t(((v - lo_) / (hi_ - lo_)) * double(bins_));
    if (i >= int64_t(bins_)) i = bins_ - 1;
    while (i > 0 && v < edges_[size_t(i)]) --i;
    while (i < int64_t(bins_) - 1 && v >= edges_[size_t(i) + 1]) ++i;
    return i;
  }

 private:
  uint32_t bins_;
  double lo_, hi_;
  std::vector<double> edges_;
};

// The values an analysis reads, per part (parts are opened by the query before their
// chunks reach a sink): a column's through a BlockReader, an expression's evaluated.
class ValueData {
 public:
  ValueData(const Query& q, const Values& v) : q_(q), v_(v) {
    if (!v.expression && v.column >= q.collection().schema().size()) throw UsageError("column index out of range");
    dtype_ = v.expression ? DType::f64 : q.collection().schema()[v.column].dtype;
  }
  // The values' type: the column's, float64 for an expression.
  DType dtype() const { return dtype_; }
  // The values in one part, looked up once per work chunk (the collection's lookup locks).
  class InPart {
   public:
    InPart(std::shared_ptr<const ParticleFile> file, const Values& v) : file_(std::move(file)) {
      if (v.expression) eval_ = std::make_unique<Evaluator>(*file_, *v.expression);
      else in_ = &file_->values(v.column);
    }
    // Values of rows [start, start + n) (n <= kPiece), valid until the next call.
    const void* span(BlockReader& r, uint64_t start, uint64_t n) {
      if (!eval_) return r.span(*in_, start, n);
      buf_.resize(n);
      eval_->values(start, uint32_t(n), buf_.data());
      return buf_.data();
    }

   private:
    std::shared_ptr<const ParticleFile> file_;
    const BlockStream* in_ = nullptr;
    std::unique_ptr<Evaluator> eval_;
    std::vector<double> buf_;
  };
  InPart of(uint32_t part) const { return InPart(q_.collection().part(part), v_); }

 private:
  const Query& q_;
  const Values& v_;
  DType dtype_;
};

// Rows per piece of a segment read at once (bounded buffers; the same order as whole segments).
constexpr uint64_t kPiece = 1 << 16;

// Calls f(start, n) for the pieces of the segments, in order.
template <class F>
void for_each_piece(const std::vector<Segment>& segs, F&& f) {
  for (const Segment& seg : segs)
    for (uint64_t done = 0; done < seg.count; done += kPiece) f(seg.start + done, std::min(kPiece, seg.count - done));
}

// A span's values as doubles: the dtype dispatched once per span, not once per value
// (float64 spans are used in place).
class Doubles {
 public:
  const double* of(DType t, const void* values, uint64_t n) {
    if (t == DType::f64) return static_cast<const double*>(values);
    buf_.resize(n);
    dispatch_dtype(t, [&](auto tag) {
      using T = decltype(tag);
      const T* v = static_cast<const T*>(values);
      for (uint64_t i = 0; i < n; ++i) buf_[i] = double(v[i]);
    });
    return buf_.data();
  }

 private:
  std::vector<double> buf_;
};

}  // namespace

Values values_of(const Collection& collection, const std::string& text, const std::vector<FieldRef>& fields) {
  const auto& schema = collection.schema();
  for (size_t c = 0; c < schema.size(); ++c)
    if (schema[c].name == text) return Values(c);
  ExprPtr e = parse_value(text);
  expand_derived(*e, collection);  // a derived quantity's name: its expression
  if (e->kind == Expr::Kind::column) return Values(collection.column(e->name));  // UsageError listing the columns
  std::vector<std::string> names;
  for (const ColumnSpec& c : schema) names.push_back(c.name);
  bind_columns(*e, names);
  bind_fields(*e, fields);
  return Values(std::shared_ptr<const Expr>(std::move(e)));
}

Range histogram_range(std::optional<Range> given, std::optional<Range> found) {
  Range r = given ? *given : found ? *found : Range{0.0, 1.0};
  if (r.lo == r.hi) r = {r.lo - 0.5, r.hi + 0.5};
  return r;
}

uint64_t count(Query& q) {
  std::vector<uint64_t> per(q.threads(), 0);
  uint64_t total = 0;  // parts an index counts (Query::run's `counted`), then the rest
  q.run([&](unsigned w, size_t, uint32_t, const std::vector<Segment>& segs) {
    for (const Segment& s : segs) per[w] += s.count;
  }, Query::Schedule::dynamic, &total);
  for (uint64_t c : per) total += c;
  return total;
}

ColumnStats stats(Query& q, const Values& values) {
  ValueData col(q, values);
  // Partials per work chunk, merged in chunk order: the same sum whatever thread ran what.
  std::vector<ColumnStats> per;
  std::mutex m;
  q.run([&](unsigned, size_t chunk, uint32_t part, const std::vector<Segment>& segs) {
    ColumnStats s;
    BlockReader reader;
    auto in = col.of(part);
    dispatch_dtype(col.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (const Segment& seg : segs) s.count += seg.count;
      for_each_piece(segs, [&](uint64_t start, uint64_t n) {
        const T* p = static_cast<const T*>(in.span(reader, start, n));
        for (uint64_t i = 0; i < n; ++i) {
          double v = double(p[i]);
          if (std::isnan(v)) continue;
          if (s.valid == 0) s.min = s.max = v;
          s.min = std::min(s.min, v);
          s.max = std::max(s.max, v);
          s.sum += v;
          ++s.valid;
        }
      });
    });
    std::lock_guard lock(m);
    if (per.size() <= chunk) per.resize(chunk + 1);
    per[chunk] = s;
  });
  ColumnStats out;
  for (const ColumnStats& s : per) out.add(s);
  return out;
}

std::vector<double> histogram(Query& q, const Axis& x, std::optional<Values> weight) {
  Binner bx(x);
  ValueData xc(q, x.values);
  std::optional<ValueData> wc;
  if (weight) wc.emplace(q, *weight);
  std::vector<std::vector<double>> per(q.threads(), std::vector<double>(x.bins, 0.0));
  q.run([&](unsigned w, size_t, uint32_t part, const std::vector<Segment>& segs) {
    std::vector<double>& h = per[w];
    BlockReader reader;
    Doubles xs, ws;
    auto xin = xc.of(part);
    std::optional<ValueData::InPart> win;
    if (wc) win.emplace(wc->of(part));
    for_each_piece(segs, [&](uint64_t start, uint64_t n) {
      const double* xd = xs.of(xc.dtype(), xin.span(reader, start, n), n);
      const double* wd = win ? ws.of(wc->dtype(), win->span(reader, start, n), n) : nullptr;
      for (uint64_t p = 0; p < n; ++p) {
        int64_t b = bx.bin(xd[p]);
        if (b >= 0) h[size_t(b)] += wd ? wd[p] : 1.0;
      }
    });
  }, Query::Schedule::fixed);
  for (size_t k = 1; k < per.size(); ++k)
    for (size_t b = 0; b < x.bins; ++b) per[0][b] += per[k][b];
  return per[0];
}

std::vector<double> histogram2d(Query& q, const Axis& x, const Axis& y, std::optional<Values> weight) {
  Binner bx(x), by(y);
  if (uint64_t(x.bins) * y.bins > (1ull << 26)) throw UsageError("2-D histogram has more than 2^26 bins");
  ValueData xc(q, x.values), yc(q, y.values);
  std::optional<ValueData> wc;
  if (weight) wc.emplace(q, *weight);
  size_t cells = size_t(x.bins) * y.bins;
  std::vector<std::vector<double>> per(q.threads());
  q.run([&](unsigned w, size_t, uint32_t part, const std::vector<Segment>& segs) {
    std::vector<double>& h = per[w];
    if (h.empty()) h.assign(cells, 0.0);
    BlockReader reader;
    Doubles xs, ys, ws;
    auto xin = xc.of(part), yin = yc.of(part);
    std::optional<ValueData::InPart> win;
    if (wc) win.emplace(wc->of(part));
    for_each_piece(segs, [&](uint64_t start, uint64_t n) {
      const double* xd = xs.of(xc.dtype(), xin.span(reader, start, n), n);
      const double* yd = ys.of(yc.dtype(), yin.span(reader, start, n), n);
      const double* wd = win ? ws.of(wc->dtype(), win->span(reader, start, n), n) : nullptr;
      for (uint64_t p = 0; p < n; ++p) {
        int64_t i = bx.bin(xd[p]);
        if (i < 0) continue;
        int64_t j = by.bin(yd[p]);
        if (j < 0) continue;
        h[size_t(i) * y.bins + size_t(j)] += wd ? wd[p] : 1.0;
      }
    });
  }, Query::Schedule::fixed);
  std::vector<double> out(cells, 0.0);
  for (const auto& h : per)
    for (size_t c = 0; c < h.size(); ++c) out[c] += h[c];
  return out;
}

}  // namespace motes
