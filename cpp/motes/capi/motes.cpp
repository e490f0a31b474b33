// The C API over the dataset writer: errors become status codes and a per-thread message.
#include "motes/capi/motes.h"

#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "motes/capi/writer_state.hpp"
#include "motes/core/version.hpp"
#include "motes/dataset/species.hpp"
#include "motes/expr/expr.hpp"
#include "motes/parallel/background_job.hpp"
#include "motes/particles/track.hpp"

// Every dtype of the core's table (core/types.hpp) is a motes_dtype of motes.h, with the
// table's code (the file format's).
#define MOTES_CAPI_CHECK_DTYPE(name, code, type, numpy_name, c_name)                   \
  static_assert(c_name == code && uint8_t(motes::DType::name) == code, "motes.h's " #c_name \
                                                                       " differs from the dtype table (core/types.hpp)");
MOTES_DTYPES(MOTES_CAPI_CHECK_DTYPE)
#undef MOTES_CAPI_CHECK_DTYPE

namespace {

motes::ColumnView* find_column(motes_writer* w, const char* species, const char* name) {
  for (auto& [sp, cols] : w->species)
    if (sp == species)
      for (auto& c : cols)
        if (c.spec.name == name) return &c;
  return nullptr;
}

// Adds every declared column this step did not set, empty, and the declared units
// of columns set without one. Declared species come first, in declaration order.
void complete_declared_columns(motes_writer* w) {
  std::vector<motes::SpeciesColumns> out;
  auto species_of = [&](const std::string& name) -> std::vector<motes::ColumnView>& {
    for (auto& sp : out)
      if (sp.first == name) return sp.second;
    out.push_back({name, {}});
    return out.back().second;
  };
  for (const auto& [sp, spec] : w->declared) {
    motes::ColumnView* set = find_column(w, sp.c_str(), spec.name.c_str());
    motes::ColumnView v;
    if (set) {
      v = *set;
      if (v.spec.unit.empty()) v.spec.unit = spec.unit;
    } else {
      v.spec = spec;
    }
    species_of(sp).push_back(v);
  }
  for (const auto& [sp, cols] : w->species)
    for (const motes::ColumnView& c : cols) {
      bool declared = false;
      for (const auto& [dsp, spec] : w->declared) declared |= dsp == sp && spec.name == c.spec.name;
      if (!declared) species_of(sp).push_back(c);
    }
  w->species = std::move(out);
}

}  // namespace

motes::fields::FieldSpec c_field_spec(const char* name, motes_dtype dtype, int ndim, const uint64_t* dims, int components,
                                      const char* const* component_names, const double* origin, const double* spacing,
                                      int cell_centred, const char* unit) {
  const std::string what = "field '" + std::string(name) + "'";
  if (!motes::dtype_valid(uint8_t(dtype))) throw motes::UsageError(what + ": unknown dtype " + std::to_string(int(dtype)));
  if (ndim < 1 || ndim > 3) throw motes::UsageError(what + ": ndim must be 1, 2 or 3");
  if (components < 1 || components > 64) throw motes::UsageError(what + ": components must be 1 to 64");
  motes::fields::FieldSpec spec;
  spec.name = name;
  spec.dtype = motes::DType(dtype);
  spec.ndim = ndim;
  for (int a = 0; a < ndim; ++a) {
    spec.dims[size_t(a)] = dims[a];
    spec.origin[size_t(a)] = origin ? origin[a] : 0.0;
    spec.spacing[size_t(a)] = spacing ? spacing[a] : 1.0;
  }
  spec.centering = cell_centred ? motes::fields::Centering::cell : motes::fields::Centering::node;
  if (unit) spec.unit = unit;
  if (components > 1)
    for (int c = 0; c < components; ++c)
      spec.components.push_back(component_names && component_names[c] ? component_names[c] : std::to_string(c));
  spec.check();
  return spec;
}

extern "C" {

const char* motes_last_error(void) { return last_error.c_str(); }

void motes_version(int* major, int* minor, int* patch) {
  if (major) *major = motes::version_major;
  if (minor) *minor = motes::version_minor;
  if (patch) *patch = motes::version_patch;
}

motes_status motes_writer_open(const char* path, motes_writer** writer) {
  return guarded([&] {
    if (!path || !writer) return fail(MOTES_ERROR_USAGE, "motes_writer_open: path and writer must not be NULL");
    *writer = nullptr;
    auto* w = new motes_writer();
    w->dataset = motes::Dataset::create(path);
    *writer = w;
    return MOTES_OK;
  });
}

motes_status motes_writer_set_options(motes_writer* w, uint32_t leaf_size, uint32_t lod_count, uint32_t threads, int sync) {
  return guarded([&] {
    if (!w) return fail(MOTES_ERROR_USAGE, "motes_writer_set_options: writer is NULL");
    motes::LayoutOptions o = w->options.write.layout;
    if (leaf_size) o.leaf_size = leaf_size;
    if (lod_count) o.lod_count = lod_count;
    o.threads = threads;
    motes::check_layout_options(o);
    w->options.write.layout = o;
    w->options.write.sync = sync != 0;
    return MOTES_OK;
  });
}

motes_status motes_writer_define_column(motes_writer* w, const char* species, const char* name, motes_dtype dtype,
                                        const char* unit) {
  return guarded([&] {
    if (!w || !species || !name) return fail(MOTES_ERROR_USAGE, "motes_writer_define_column: NULL argument");
    if (!motes::dtype_valid(uint8_t(dtype)))
      return fail(MOTES_ERROR_USAGE, "column '" + std::string(name) + "': unknown dtype " + std::to_string(int(dtype)));
    for (const auto& [sp, spec] : w->declared)
      if (sp == species && spec.name == name) {
        if (spec.dtype != motes::DType(dtype))
          return fail(MOTES_ERROR_USAGE, "column '" + std::string(name) + "' of species '" + species +
                                             "' is already declared as " + motes::dtype_name(spec.dtype));
        return MOTES_OK;
      }
    w->declared.push_back({species, motes::ColumnSpec{name, motes::DType(dtype), motes::IndexKind::automatic,
                                                      unit ? unit : ""}});
    return MOTES_OK;
  });
}

motes_status motes_writer_add_derived(motes_writer* w, const char* name, const char* expression) {
  return guarded([&] {
    if (!w || !name || !expression) return fail(MOTES_ERROR_USAGE, "motes_writer_add_derived: NULL argument");
    for (const motes::DerivedSpec& d : w->options.write.derived)
      if (d.name == name) return fail(MOTES_ERROR_USAGE, "derived quantity '" + std::string(name) + "' is already declared");
    motes::parse_value(expression);  // its syntax now; its columns when a step is written
    w->options.write.derived.push_back({name, expression});
    return MOTES_OK;
  });
}

motes_status motes_writer_begin_step(motes_writer* w, int64_t step, double time) {
  return guarded([&] {
    if (!w) return fail(MOTES_ERROR_USAGE, "motes_writer_begin_step: writer is NULL");
    w->in_step = true;
    w->step = step;
    w->time = time;
    w->attributes = nlohmann::json::object();
    w->species.clear();
    w->fields.clear();
    w->field_blocks.clear();
    return MOTES_OK;
  });
}

motes_status motes_writer_set_step_attributes(motes_writer* w, const char* json_object) {
  return guarded([&] {
    if (!w || !json_object) return fail(MOTES_ERROR_USAGE, "motes_writer_set_step_attributes: NULL argument");
    if (!w->in_step) return fail(MOTES_ERROR_USAGE, "no step begun: call motes_writer_begin_step first");
    w->attributes = motes::parse_attributes(json_object, "step attributes");  // UsageError: not an object, too deep
    return MOTES_OK;
  });
}

motes_status motes_writer_set_column(motes_writer* w, const char* species, const char* name, motes_dtype dtype,
                                     const void* data, uint64_t count, int64_t stride_bytes) {
  return guarded([&] {
    if (!w || !species || !name) return fail(MOTES_ERROR_USAGE, "motes_writer_set_column: NULL argument");
    if (!w->in_step) return fail(MOTES_ERROR_USAGE, "no step begun: call motes_writer_begin_step first");
    if (!motes::dtype_valid(uint8_t(dtype)))
      return fail(MOTES_ERROR_USAGE, "column '" + std::string(name) + "': unknown dtype " + std::to_string(int(dtype)));
    if (count && !data) return fail(MOTES_ERROR_USAGE, "column '" + std::string(name) + "': data is NULL");
    if (find_column(w, species, name))
      return fail(MOTES_ERROR_USAGE, "column '" + std::string(name) + "' of species '" + species + "' is set twice");
    for (const auto& [sp, spec] : w->declared)
      if (sp == species && spec.name == name && spec.dtype != motes::DType(dtype))
        return fail(MOTES_ERROR_USAGE, "column '" + std::string(name) + "' of species '" + species + "' is declared " +
                                           motes::dtype_name(spec.dtype) + ", set as " +
                                           motes::dtype_name(motes::DType(dtype)));
    motes::ColumnView v;
    v.spec = {name, motes::DType(dtype), motes::IndexKind::automatic, ""};
    v.data = data;
    v.count = count;
    if (stride_bytes != 0) v.stride_bytes = stride_bytes;  // 0: contiguous (motes.h)
    for (auto& [sp, cols] : w->species)
      if (sp == species) return cols.push_back(v), MOTES_OK;
    w->species.push_back({species, {v}});
    return MOTES_OK;
  });
}

motes_status motes_writer_set_unit(motes_writer* w, const char* species, const char* name, const char* unit) {
  return guarded([&] {
    if (!w || !species || !name || !unit) return fail(MOTES_ERROR_USAGE, "motes_writer_set_unit: NULL argument");
    motes::ColumnView* c = find_column(w, species, name);
    if (!c) return fail(MOTES_ERROR_USAGE, "no column '" + std::string(name) + "' of species '" + species + "' is set");
    c->spec.unit = unit;
    return MOTES_OK;
  });
}

motes_status motes_writer_set_field(motes_writer* w, const char* name, motes_dtype dtype, int ndim,
                                    const uint64_t* dims, int components, const void* const* data,
                                    const char* const* component_names, const double* origin, const double* spacing,
                                    int cell_centred, const char* unit) {
  return guarded([&] {
    if (!w || !name || !dims || !data) return fail(MOTES_ERROR_USAGE, "motes_writer_set_field: NULL argument");
    if (!w->in_step) return fail(MOTES_ERROR_USAGE, "no step begun: call motes_writer_begin_step first");
    for (const motes::FieldInput& f : w->fields)
      if (f.spec.name == name) return fail(MOTES_ERROR_USAGE, "field '" + std::string(name) + "' is set twice");
    motes::FieldInput f;
    f.spec = c_field_spec(name, dtype, ndim, dims, components, component_names, origin, spacing, cell_centred, unit);
    for (int c = 0; c < components; ++c) {
      if (!data[c]) return fail(MOTES_ERROR_USAGE, "field '" + std::string(name) + "': component " + std::to_string(c) + " is NULL");
      f.values.push_back(data[c]);
    }
    w->fields.push_back(std::move(f));
    return MOTES_OK;
  });
}

motes_status motes_writer_set_field_tolerance(motes_writer* w, const char* name, double tolerance) {
  return guarded([&] {
    if (!w || !name) return fail(MOTES_ERROR_USAGE, "motes_writer_set_field_tolerance: NULL argument");
    motes::fields::FieldSpec* spec = nullptr;
    for (motes::FieldInput& f : w->fields)
      if (f.spec.name == name) spec = &f.spec;
    for (motes::FieldBlockInput& b : w->field_blocks)
      if (b.spec.name == name) spec = &b.spec;
    if (!spec) return fail(MOTES_ERROR_USAGE, "field '" + std::string(name) + "' is not set in this step");
    motes::fields::FieldSpec changed = *spec;
    changed.tolerance = tolerance;
    changed.check();  // a tolerance that is not finite and >= 0, or on an integer field
    spec->tolerance = tolerance;
    return MOTES_OK;
  });
}

motes_status motes_track(const char* path, int64_t step, const char* species, const char* id_column,
                         const int64_t* ids, uint64_t n, const char* column, double* out, uint8_t* found) {
  return guarded([&] {
    if (!path || !column || (n && (!ids || !out || !found))) return fail(MOTES_ERROR_USAGE, "motes_track: NULL argument");
    const motes::Dataset ds = motes::Dataset::open(path);
    const motes::StepEntry& st = ds.step(step);
    if (!species && st.species.size() != 1)
      return fail(MOTES_ERROR_USAGE, "step " + std::to_string(step) + " has " + std::to_string(st.species.size()) +
                                         " species: name one");
    const motes::SpeciesEntry& e = species ? st.find(species) : st.species[0];
    auto c = motes::open_species(ds.dir(), step, e);
    motes::track_column(*c, id_column ? id_column : "", ids, n, column, out, found);
    return MOTES_OK;
  });
}

motes_status motes_writer_write_step(motes_writer* w) {
  return guarded([&] {
    if (!w) return fail(MOTES_ERROR_USAGE, "motes_writer_write_step: writer is NULL");
    if (!w->in_step) return fail(MOTES_ERROR_USAGE, "no step begun: call motes_writer_begin_step first");
    complete_declared_columns(w);
    if (w->background) {
      motes::StepJob job;
      job.index = w->step;
      job.time = w->time;
      job.attributes = w->attributes;
      job.species = w->species;
      job.fields = w->fields;
      job.options = w->options.write;
      if (w->write_collective)  // every rank queues the same steps in the same order
        motes::make_collective_job(job, w->field_blocks, w->borrow,
                                   [collective = w->write_collective, options = w->options, index = job.index,
                                    time = job.time](const nlohmann::json& attrs,
                                                     const std::vector<motes::SpeciesColumns>& species,
                                                     const std::vector<motes::FieldInput>& fields,
                                                     const std::vector<motes::FieldBlockInput>& blocks) {
                                     collective({index, time, attrs, species, fields, blocks}, options);
                                   });
      else if (job.check(); !w->borrow)  // checked at once, as a synchronous write is
        job.copy_arrays();
      w->background->submit(std::move(job), false);
    } else if (w->write_collective) {
      w->write_collective({w->step, w->time, w->attributes, w->species, w->fields, w->field_blocks}, w->options);
    } else {
      w->dataset->append_step(w->step, w->time, w->attributes, w->species, w->options.write, nullptr, w->fields);
    }
    w->in_step = false;
    w->species.clear();
    w->fields.clear();
    w->field_blocks.clear();
    return MOTES_OK;
  });
}

motes_status motes_writer_set_background(motes_writer* w, uint32_t max_pending, int borrow) {
  return guarded([&] {
    if (!w) return fail(MOTES_ERROR_USAGE, "motes_writer_set_background: writer is NULL");
    if (w->check_background) w->check_background();  // a parallel writer: MPI_THREAD_MULTIPLE
    if (w->background) w->background->flush();  // the steps queued so far, under the old settings
    w->background.reset();
    w->background = std::make_unique<motes::BackgroundWriter>(w->dataset ? &*w->dataset : nullptr, max_pending);
    w->borrow = borrow != 0;
    return MOTES_OK;
  });
}

motes_status motes_writer_flush(motes_writer* w) {
  return guarded([&] {
    if (!w) return fail(MOTES_ERROR_USAGE, "motes_writer_flush: writer is NULL");
    if (w->background) w->background->flush();
    return MOTES_OK;
  });
}

motes_status motes_writer_last_written(motes_writer* w, int64_t* step, int* written) {
  return guarded([&] {
    if (!w) return fail(MOTES_ERROR_USAGE, "motes_writer_last_written: writer is NULL");
    int64_t s = 0;
    const bool any = w->background ? w->background->last_written(&s) : w->dataset && !w->dataset->steps().empty();
    if (!w->background && any) s = w->dataset->steps().back().index;
    if (written) *written = any ? 1 : 0;
    if (step && any) *step = s;
    return MOTES_OK;
  });
}

motes_status motes_writer_close(motes_writer* w) {
  return guarded([&] {
    std::unique_ptr<motes_writer> owned(w);
    if (w && w->background) w->background->flush();  // the queued steps; their first error is returned
    return MOTES_OK;
  });
}

}  // extern "C"
