// libFuzzer target: any bytes given as a particle file (format 1 or 2, read from memory
// through a byte source) must open cleanly or be rejected with motes::Error, never crash;
// an accepted file must answer queries (through its id and tail indexes too) and decode
// every block. Built with
// FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, checksum mismatches are ignored so the fuzzer
// reaches the structural checks (and the block decoders) behind them.
#include <cstdint>
#include <string>

#include "motes/analysis/analysis.hpp"
#include "motes/io/byte_source.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/derived_check.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto file = motes::ParticleFile::open(motes::memory_source(std::string(reinterpret_cast<const char*>(data), size)), true);
    for (const char* where : {"", "x < 0.5", "x > 0.25 and not (y == 1)", "x * y + z > 0.1"}) {
      motes::QuerySpec spec;
      spec.where = where;
      spec.quality_to = 0.7;
      spec.threads = 1;
      motes::Query q(file, spec);
      motes::Selection s(q);
      std::vector<char> buf(s.size() * 8 + 8);
      for (size_t c = 0; c < file->schema().size(); ++c) s.gather(c, 0, s.size(), buf.data(), 1);
      motes::histogram(q, motes::Axis{file->column("x"), 8, 0.0, 1.0});
    }
    // The id index (format 2.1): lookups of ids present and absent, and their rows gathered.
    if (const motes::IdIndex* ids = file->id_index()) {
      const uint64_t keys[] = {0, 1, 7, 1000, uint64_t(1) << 63, UINT64_MAX};
      std::vector<int64_t> rows(6);
      ids->find(keys, 6, rows.data());
      std::vector<char> out(6 * 8);
      motes::gather_rows(file->values(ids->column()), rows.data(), 6, out.data());
    }
    // Tail indexes (format 2.2), their covers (2.3) and derived quantities' (2.4, at columns +
    // d): tests of every kind against a few constants, through the index alone and through a
    // query the planner may answer with it (a derived quantity's expression as the file prints it).
    const size_t columns = file->schema().size();
    for (size_t c = 0; c < columns + file->derived().size(); ++c) {
      const motes::TailIndex* tail = file->tail_index(c);
      if (!tail) continue;
      for (auto test : {motes::TailTest::lt, motes::TailTest::le, motes::TailTest::gt, motes::TailTest::ge, motes::TailTest::eq})
        for (uint64_t constant : {uint64_t(0), ~uint64_t(0), uint64_t(0x3FF0000000000000)})
          if (tail->covers(test, &constant)) {
            // Covered hits (format 2.3): every column the cover holds, read from beside the index.
            const motes::TailHits h = tail->hits(test, &constant, true);
            std::vector<uint64_t> out(h.rows.size() + 1);
            for (uint32_t k = 0; k < file->schema().size(); ++k)
              if (h.covers(k)) h.gather(k, 0, h.rows.size(), out.data());
          }
      for (const char* op : {" > 1e30", " < -1e30", " == 0"}) {
        motes::QuerySpec spec;
        spec.where = (c < columns ? file->schema()[c].name : "(" + file->derived()[c - columns].expression + ")") + op;
        spec.threads = 1;
        try {
          motes::Query q(file, spec);
          motes::Selection s(q);
          std::vector<char> buf(s.size() * 8 + 8);
          for (size_t k = 0; k < file->schema().size(); ++k) s.gather(k, 0, s.size(), buf.data(), 1);
        } catch (const motes::UsageError&) {  // a column name the language reserves; an expression that does not parse
        }
      }
    }
    motes::verify_derived(*file);  // derived quantities computed again (format 2.4)
  } catch (const motes::Error&) {
  }
  return 0;
}
