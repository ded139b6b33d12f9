/*
 * tracepipe's C API (C11): libtracepipe_c, for tracers written in C, Rust,
 * Go, Python (ctypes) or anything else that calls C.
 *
 *   #include <tracepipe/tracepipe_c.h>     pkg-config tracepipe-c, or CMake
 *                                          find_package(tracepipe-c) and tracepipe::c
 *
 *   static tracepipe_tracepoint tp_done;   one per event site, static storage
 *   tracepipe_event *done;                 the declared event (a handle)
 *   tracepipe_instance *inst;              one instance: a ring buffer and its events
 *
 *   tracepipe_event_declare(&spec, &tp_done, &done);
 *   tracepipe_instance_create(NULL, &inst);
 *   tracepipe_instance_enable(inst, done, 1);
 *   tracepipe_instance_set_filter(inst, done, "latency_us > 1000");
 *   if (TRACEPIPE_TRACEPOINT_ENABLED(tp_done))      one load, as TRACEPIPE_TRACE
 *     tracepipe_trace(done, &rec, sizeof rec);      stage -> filter -> commit
 *   tracepipe_instance_write_trace_dat(inst, "out.dat", 0);   trace-cmd report out.dat
 *
 * The C library runs the engine of the C++ library (docs/core.md): events
 * declared here go through the same write path (per-thread staging, the
 * kernel's filter language compiled to the same program, the per-CPU ring
 * buffer), and trace.dat files, triggers, hist, the recorder and flight files
 * are those of the C++ API. The library holds its own copy of that engine:
 * its events, instances and threads are not those of a C++ tracepipe linked
 * into the same process.
 *
 * ABI rules
 *   - Handles are opaque pointers; the library allocates and frees them.
 *   - Option and result structs start with `struct_size`, which the caller
 *     sets to sizeof the struct it was compiled with (the *_INIT macros do).
 *     A smaller size (an older caller) leaves the newer fields at their
 *     defaults (every default is 0); a larger one (a newer caller) is
 *     accepted if the bytes this library does not know are zero, else
 *     TRACEPIPE_EINVAL. Result structs are filled up to struct_size.
 *     Mirrors the kernel's extensible structs (include/linux/uaccess.h:
 *     copy_struct_from_user, as for clone3 and openat2).
 *   - No C++ type, exception or allocation crosses the boundary: strings
 *     go out through caller buffers (snprintf-style: the return value is
 *     the full length, the text is cut to fit and always NUL-terminated
 *     when the buffer has room for one byte).
 *   - Every function that can fail returns a tracepipe_status; the text of
 *     the failure (the kernel's filter error with its caret, a config
 *     file's line, ...) is then tracepipe_last_error(), per thread.
 *   - Only tracepipe_* symbols are exported, versioned TRACEPIPE_C_1.
 *
 * Threads: control functions (create, enable, filters, triggers, exports,
 * recorder) may be called from any thread, concurrently with each other and
 * with writers; they may block and allocate, so never from a signal handler
 * nor from inside an emit. Emit functions (tracepipe_trace*, tracepipe_emit*)
 * run on any thread and in signal handlers, lock-free, without allocation or
 * system call once the thread is registered (its first emit registers it;
 * tracepipe_thread_prepare() does it beforehand).
 */
#ifndef TRACEPIPE_TRACEPIPE_C_H
#define TRACEPIPE_TRACEPIPE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TRACEPIPE_C_API __attribute__((visibility("default")))
#else
#define TRACEPIPE_C_API
#endif

/** An extensible struct with struct_size set and every other member 0 (its
 *  default): what the TRACEPIPE_*_INIT macros expand to. */
#ifdef __cplusplus
#define TRACEPIPE_STRUCT_INIT(T) \
  ([] {                          \
    T t_{};                      \
    t_.struct_size = sizeof t_;  \
    return t_;                   \
  }())
#else
#define TRACEPIPE_STRUCT_INIT(T) \
  { .struct_size = sizeof(T) }
#endif

/** The ABI this header describes (tracepipe_abi_version() is the library's). */
#define TRACEPIPE_C_ABI_VERSION 1
/** Bytes of the common header every record starts with (common_type,
 *  common_flags, common_preempt_count, common_pid), written by the library. */
#define TRACEPIPE_COMMON_HEADER_SIZE 8
/** Longest text a TRACEPIPE_FIELD_STRING field stores (bytes without the NUL). */
#define TRACEPIPE_MAX_STRING 1023
/** tracepipe_value.len for a NUL-terminated text. */
#define TRACEPIPE_STRLEN ((size_t)-1)

/* ── Status ──────────────────────────────────────────────────────────────── */

typedef enum tracepipe_status {
  TRACEPIPE_OK = 0,
  TRACEPIPE_EINVAL = 1,  /**< a bad argument: NULL, out of range, unknown option value */
  TRACEPIPE_EFILTER = 2, /**< a filter that does not compile (kernel error_log text with caret) */
  TRACEPIPE_ETRIGGER =
      3, /**< a trigger command refused (kernel error_log text, or the errno's text) */
  TRACEPIPE_ECONFIG = 4,  /**< a config file refused ("FILE:LINE: KEY: why") */
  TRACEPIPE_EEXIST = 5,   /**< the event name or ID is taken by a different schema */
  TRACEPIPE_ENOENT = 6,   /**< no event matches the name or pattern */
  TRACEPIPE_EIO = 7,      /**< a file or collector could not be written or read */
  TRACEPIPE_ERECOVER = 8, /**< a flight file that cannot be recovered (names the part and offset) */
  TRACEPIPE_ENOMEM = 9,   /**< out of memory */
  TRACEPIPE_EINTERNAL = 10 /**< anything else (the message says what) */
} tracepipe_status;

/** The text of the last failure of a tracepipe_* call on the calling thread
 *  ("" if none yet). For TRACEPIPE_EFILTER it is the kernel's error_log
 *  layout, e.g.
 *      parse_error: Field not found
 *        Command: latency_ux > 1000
 *                 ^
 *  Valid until the next failing call on this thread; a successful call
 *  leaves it unchanged. Any thread (per-thread storage). Go: call it on the
 *  same OS thread as the failed call (runtime.LockOSThread). */
TRACEPIPE_C_API const char* tracepipe_last_error(void);
/** "TRACEPIPE_EFILTER", ...; "?" for an unknown value. Constant. */
TRACEPIPE_C_API const char* tracepipe_status_name(tracepipe_status status);
/** The library's version ("0.1.0") and ABI (TRACEPIPE_C_ABI_VERSION it was built with). */
TRACEPIPE_C_API const char* tracepipe_version(void);
TRACEPIPE_C_API int tracepipe_abi_version(void);

/** One tracing instance: a per-CPU ring buffer, its clock, and per event
 *  enabled / filter / triggers, as /sys/kernel/tracing/instances/NAME. */
typedef struct tracepipe_instance tracepipe_instance;

/* ── Events declared at run time ──────────────────────────────────────────── */

typedef enum tracepipe_field_kind {
  /** An integer of `size` bytes (1, 2, 4, 8), `is_signed`; with array_len N
   *  > 0 a fixed array of N of them ("u32 vals[4]"). */
  TRACEPIPE_FIELD_INT = 0,
  /** char name[array_len]: text stored in place, cut at array_len bytes,
   *  zero-filled (no NUL when it fills the array, as the kernel's memcpy). */
  TRACEPIPE_FIELD_CHARS = 1,
  /** __data_loc char[] name: text of any length up to TRACEPIPE_MAX_STRING,
   *  stored after the fixed part with its NUL. */
  TRACEPIPE_FIELD_STRING = 2
} tracepipe_field_kind;

/** One field of an event, in record order. */
typedef struct tracepipe_field {
  const char* name; /**< a C identifier, unique in the event */
  tracepipe_field_kind kind;
  uint32_t size;      /**< INT: bytes per element (1, 2, 4 or 8); else ignored */
  uint32_t array_len; /**< INT: 0 scalar, N a fixed array; CHARS: N bytes (1..4096) */
  int is_signed;      /**< INT: the format's signed:1 */
  /** INT: the C type the format names ("pid_t", "bool", "unsigned long"),
   *  NULL for the kernel's sized names (u8..u64, s8..s64). */
  const char* type;
} tracepipe_field;

typedef struct tracepipe_event_spec {
  size_t struct_size; /**< sizeof(tracepipe_event_spec) */
  const char* system; /**< "app" (events/SYSTEM/NAME) */
  const char* name;   /**< "request_done" */
  const tracepipe_field* fields;
  size_t field_count;       /**< at most 64 */
  size_t field_struct_size; /**< sizeof(tracepipe_field); 0 = this header's */
  /** The format's print fmt; NULL generates `"a=%u b=%s", REC->a, __get_str(b)`
   *  (every field as name=value; arrays with __print_array). */
  const char* print_fmt;
} tracepipe_event_spec;
#define TRACEPIPE_EVENT_SPEC_INIT TRACEPIPE_STRUCT_INIT(tracepipe_event_spec)

/** A declared event: its schema, ID and layout. Lives until the process
 *  ends (the registry never removes an event); thread-safe to use from any
 *  thread. */
typedef struct tracepipe_event tracepipe_event;

/** The enabled word of one event site, for TRACEPIPE_TRACEPOINT_ENABLED:
 *  zero-initialised static storage, bound by tracepipe_event_declare().
 *  Members are the library's. */
typedef struct tracepipe_tracepoint {
  void* state_; /**< non-NULL while some instance may have the event enabled */
} tracepipe_tracepoint;

/** True when some instance may have the event bound to `tp` enabled: one
 *  relaxed load of a static word and one branch predicted not taken, the
 *  cost of TRACEPIPE_TRACE's disabled check in C++. A hint:
 *  tracepipe_trace() checks again. Any thread, signal handlers included.
 *  The kernel's trace_<name>_enabled() (include/linux/tracepoint.h). */
#define TRACEPIPE_TRACEPOINT_ENABLED(tp) \
  __builtin_expect(__atomic_load_n(&(tp).state_, __ATOMIC_RELAXED) != 0, 0)

/** Emits `args` (tracepipe_trace's) only if enabled: the arguments are not
 *  evaluated otherwise. A statement. */
#define TRACEPIPE_C_TRACE(tp, event, record, size)                                    \
  do {                                                                                \
    if (TRACEPIPE_TRACEPOINT_ENABLED(tp)) tracepipe_trace((event), (record), (size)); \
  } while (0)

/** Declares (registers) an event. Layout: after the 8-byte common header,
 *  each field at its natural alignment (integers to their element size,
 *  char arrays to 1, __data_loc words to 4), the fixed part padded to its
 *  largest alignment: the layout a C struct of the same members has, so a
 *  struct { uint32_t id; char m[8]; } is the record's body. The ID is
 *  assigned from 16384 up. Declaring the same schema again returns the same
 *  handle; the same name with another schema is TRACEPIPE_EEXIST.
 *  `tp` (may be NULL): the event site's word, bound to this event; it must
 *  live as long as the process (static storage) and be bound to one event
 *  only (TRACEPIPE_EINVAL otherwise). *out is set on success.
 *  Errors: EINVAL (names, sizes, kinds; the message names the field), EEXIST.
 *  Thread-safe (takes the registry's lock); not for signal handlers. */
TRACEPIPE_C_API tracepipe_status tracepipe_event_declare(const tracepipe_event_spec* spec,
                                                         tracepipe_tracepoint* tp,
                                                         tracepipe_event** out);
/** A declared event by "SYSTEM:NAME" (or system and name apart: pass NULL
 *  for `name` to split `system` at ':'). NULL if not declared. Thread-safe. */
TRACEPIPE_C_API tracepipe_event* tracepipe_event_find(const char* system, const char* name);
/* The event's layout and format: any thread, lock-free (the handle is
 * immutable); 0 / UINT32_MAX / "" for a NULL event. */
/** The record's common_type. */
TRACEPIPE_C_API uint16_t tracepipe_event_id(const tracepipe_event* event);
/** Bytes of the record's fixed part, common header included (the format's
 *  largest offset + size, tail-padded): a packed record's body is this
 *  minus TRACEPIPE_COMMON_HEADER_SIZE, plus any string data. */
TRACEPIPE_C_API uint32_t tracepipe_event_fixed_size(const tracepipe_event* event);
TRACEPIPE_C_API uint32_t tracepipe_event_field_count(const tracepipe_event* event);
/** Offset of field `index` from the record's start (common header
 *  included, as the format file says); UINT32_MAX for a bad index. */
TRACEPIPE_C_API uint32_t tracepipe_event_field_offset(const tracepipe_event* event, uint32_t index);
/** The format file text (events/SYSTEM/NAME/format) into buf; returns its
 *  length (snprintf-style). */
TRACEPIPE_C_API size_t tracepipe_event_format(const tracepipe_event* event, char* buf, size_t cap);

/* ── Emitting ─────────────────────────────────────────────────────────────── */

typedef enum tracepipe_emit_result {
  TRACEPIPE_EMIT_KEPT = 0,      /**< committed to the ring buffer */
  TRACEPIPE_EMIT_DISCARDED = 1, /**< rejected by the filter, or soft-disabled */
  TRACEPIPE_EMIT_LOST = 2,      /**< the ring refused it (full, paused, too big), counted */
  TRACEPIPE_EMIT_DISABLED = 3,  /**< the event is not enabled in the instance */
  TRACEPIPE_EMIT_INVALID = 4    /**< a body shorter than the fixed part, or a bad value count */
} tracepipe_emit_result;

/** One field's value for the field-by-field calls. */
typedef struct tracepipe_value {
  /** INT scalar: the value (a signed one as its two's complement; cut to
   *  the field's size). */
  uint64_t num;
  /** INT array: `len` elements of the field's size (fewer: the rest 0).
   *  CHARS and STRING: `len` bytes of text, or TRACEPIPE_STRLEN for a
   *  NUL-terminated one (NULL: empty). */
  const void* data;
  size_t len;
} tracepipe_value;

/** Tracepoint-style: emits into every instance that has the event enabled,
 *  each with its own filter (stage -> filter -> commit, the C++
 *  EventDecl::trace path; a one-compare filter rejects on the caller's bytes
 *  without a copy or a clock read). `body`: the record after its common
 *  header, `size` bytes: the fixed part (tracepipe_event_fixed_size() - 8)
 *  and, for STRING fields, their text, each __data_loc word holding (length
 *  with NUL << 16) | offset from the record's start. A body shorter than the
 *  fixed part is ignored. Any thread, signal handlers included; no
 *  allocation, lock or system call once the thread is registered. */
TRACEPIPE_C_API void tracepipe_trace(const tracepipe_event* event, const void* body, size_t size);
/** Same, field by field: `values[i]` for field i, `count` == the field count
 *  (else nothing is emitted). */
TRACEPIPE_C_API void tracepipe_trace_values(const tracepipe_event* event,
                                            const tracepipe_value* values, size_t count);
/** Emits into one instance only (the C++ EventDecl::emit path), and says how
 *  it ended. Same body and thread rules as tracepipe_trace. */
TRACEPIPE_C_API tracepipe_emit_result tracepipe_emit(tracepipe_instance* instance,
                                                     const tracepipe_event* event, const void* body,
                                                     size_t size);
TRACEPIPE_C_API tracepipe_emit_result tracepipe_emit_values(tracepipe_instance* instance,
                                                            const tracepipe_event* event,
                                                            const tracepipe_value* values,
                                                            size_t count);
/** Registers the calling thread now (pid, comm, counters) so that its first
 *  event allocates nothing. Call it in threads whose signal handlers emit.
 *  TRACEPIPE_ENOMEM on failure. */
TRACEPIPE_C_API tracepipe_status tracepipe_thread_prepare(void);

/* ── Instances ────────────────────────────────────────────────────────────── */

typedef enum tracepipe_buffer_mode {
  TRACEPIPE_MODE_OVERWRITE =
      0, /**< oldest records overwritten, counted as overrun (options/overwrite = 1) */
  TRACEPIPE_MODE_DROP_NEWEST = 1 /**< new records dropped when full, counted as lost */
} tracepipe_buffer_mode;

typedef enum tracepipe_staging {
  TRACEPIPE_STAGING_DEFAULT = 0,    /**< per_thread */
  TRACEPIPE_STAGING_OFF = 1,        /**< always reserve in the ring, then commit or discard */
  TRACEPIPE_STAGING_PER_CPU = 2,    /**< the kernel's per-CPU temp buffer */
  TRACEPIPE_STAGING_PER_THREAD = 3, /**< one temp buffer per thread */
  TRACEPIPE_STAGING_ADAPTIVE =
      4 /**< per event: direct while mostly accepted, staged while mostly rejected */
} tracepipe_staging;

typedef struct tracepipe_instance_options {
  size_t struct_size;      /**< sizeof(tracepipe_instance_options) */
  const char* name;        /**< NULL: "main" */
  uint64_t buffer_size_kb; /**< per CPU (buffer_size_kb); 0: 1408 */
  uint32_t subbuf_size_kb; /**< power of two >= 4 (buffer_subbuf_size_kb); 0: 4 */
  tracepipe_buffer_mode mode;
  const char*
      clock; /**< trace_clock name: "local", "global", "mono", "x86-tsc", ...; NULL: "local" */
  tracepipe_staging staging;
  double adaptive_threshold; /**< 0: 0.9 */
  uint32_t cpus;             /**< per-CPU buffers; 0: the possible CPUs */
  /** Non-zero: the ring lives in a file that survives a crash
   *  (flight_dir/NAME-PID.tpflight; tracepipe_recover() reads it). */
  int flight_recorder;
  const char* flight_dir; /**< NULL: /dev/shm/tracepipe */
} tracepipe_instance_options;
#define TRACEPIPE_INSTANCE_OPTIONS_INIT TRACEPIPE_STRUCT_INIT(tracepipe_instance_options)

/** Builds an instance (options NULL: every default). Every event starts
 *  disabled. Errors: EINVAL (sizes, clock name; the message says which),
 *  EIO (flight file), ENOMEM. Thread-safe. */
TRACEPIPE_C_API tracepipe_status
tracepipe_instance_create(const tracepipe_instance_options* options, tracepipe_instance** out);
/** Builds an instance from a TOML config file (docs/config.md): the
 *  instance named `instance_name` (NULL or "main": the top level) with its
 *  buffers, clock, staging, events, filters and triggers. The events it
 *  names must be declared first. Errors: ECONFIG ("FILE:LINE: KEY: why",
 *  filter errors with the kernel's caret), EINVAL (no such instance). */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_from_config(const char* path,
                                                                const char* instance_name,
                                                                tracepipe_instance** out);
/** Applies a config file's events, filters and triggers of `instance_name`
 *  (NULL: "main") to an existing instance; buffer options are ignored. */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_apply_config(tracepipe_instance* instance,
                                                                 const char* path,
                                                                 const char* instance_name);
/** Disables every event, waits for emits in flight, frees. The instance
 *  must have no recorder left (destroy it first) and no thread may use the
 *  handle during or after the call (emits through tracepipe_trace may go
 *  on: the instance leaves their subscriber lists first). NULL is a no-op. */
TRACEPIPE_C_API void tracepipe_instance_destroy(tracepipe_instance* instance);

/** Enables (on != 0) or disables one event in this instance. Thread-safe;
 *  may wait for a grace period. */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_enable(tracepipe_instance* instance,
                                                           const tracepipe_event* event, int on);
/** Every declared event matching a set_event pattern ("app:*", "app",
 *  "*:request_done"); *matched (may be NULL) gets the count. No match is
 *  TRACEPIPE_ENOENT, as the kernel's EINVAL for a typo. */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_enable_pattern(tracepipe_instance* instance,
                                                                   const char* pattern, int on,
                                                                   size_t* matched);
/** Compiles `expr` (the kernel's filter language, docs/filters.md) against
 *  the event's fields and swaps it in atomically; "0" clears it. On error
 *  TRACEPIPE_EFILTER, the previous filter stays in force, and
 *  tracepipe_last_error() is the kernel's message with its caret. */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_set_filter(tracepipe_instance* instance,
                                                               const tracepipe_event* event,
                                                               const char* expr);
/** events/SYSTEM/filter: every event of `system` that has the fields takes
 *  `expr`; the others become unfiltered (TRACEPIPE_EFILTER then names them,
 *  the events that took it keep it). ENOENT for a system without events. */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_set_system_filter(tracepipe_instance* instance,
                                                                      const char* system,
                                                                      const char* expr);
/** The active filter as the kernel's filter file shows it ("none"). */
TRACEPIPE_C_API size_t tracepipe_instance_filter(const tracepipe_instance* instance,
                                                 const tracepipe_event* event, char* buf,
                                                 size_t cap);
/** Soft-disable: the event stays armed (its triggers run) but every record is discarded. */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_set_soft_disabled(tracepipe_instance* instance,
                                                                      const tracepipe_event* event,
                                                                      int soft);
/** Writes one trigger command, as `echo CMD >> events/SYS/EVENT/trigger`:
 *  traceon, traceoff, snapshot, stacktrace, enable_event, disable_event,
 *  hist:keys=...; a leading '!' removes. TRACEPIPE_ETRIGGER with the
 *  kernel's error_log text (and caret) on refusal. */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_set_trigger(tracepipe_instance* instance,
                                                                const tracepipe_event* event,
                                                                const char* command);
/** The trigger file (events/SYS/EVENT/trigger). */
TRACEPIPE_C_API size_t tracepipe_instance_trigger_text(const tracepipe_instance* instance,
                                                       const tracepipe_event* event, char* buf,
                                                       size_t cap);
/** The hist file (events/SYS/EVENT/hist): every hist trigger as the kernel
 *  prints it; "" when none. Reads while writers update. */
TRACEPIPE_C_API size_t tracepipe_instance_hist_text(const tracepipe_instance* instance,
                                                    const tracepipe_event* event, char* buf,
                                                    size_t cap);

/** tracing_off / tracing_on: while paused, writes are dropped (counted lost).
 *  Any thread, beside writers; not from a signal handler. */
TRACEPIPE_C_API void tracepipe_instance_pause(tracepipe_instance* instance);
TRACEPIPE_C_API void tracepipe_instance_resume(tracepipe_instance* instance);
TRACEPIPE_C_API int tracepipe_instance_paused(const tracepipe_instance* instance);

/** tracepipe_instance_write_trace_dat flags. */
#define TRACEPIPE_SNAPSHOT_CONSUME \
  1u /**< drain the records (trace_pipe) instead of leaving them (trace) */
#define TRACEPIPE_SNAPSHOT_PAUSE \
  2u /**< pause while writing, so the file is one consistent snapshot */

/** Writes the instance's buffered records as a trace.dat (version 6) that
 *  `trace-cmd report` and KernelShark open: every CPU, the formats of
 *  every declared event, saved cmdlines, the clock. With
 *  TRACEPIPE_SNAPSHOT_PAUSE the instance is paused for the write and
 *  resumed after, unless it was paused already. EIO on failure. Any
 *  thread, beside writers. */
TRACEPIPE_C_API tracepipe_status tracepipe_instance_write_trace_dat(tracepipe_instance* instance,
                                                                    const char* path,
                                                                    unsigned flags);
/** The records as the kernel's `trace` file shows them (not consumed). */
TRACEPIPE_C_API size_t tracepipe_instance_trace_text(const tracepipe_instance* instance, char* buf,
                                                     size_t cap);

/** An event's counters in one instance (exact once the writers are quiet). */
typedef struct tracepipe_event_stats {
  size_t struct_size; /**< sizeof(tracepipe_event_stats) */
  uint64_t kept;      /**< committed */
  uint64_t discarded; /**< filter rejects and soft-disabled drops */
  uint64_t lost;      /**< the ring refused them */
  uint64_t staged;    /**< filtered emits built in a staging buffer */
  uint64_t direct;    /**< filtered emits built directly in the ring */
} tracepipe_event_stats;
#define TRACEPIPE_EVENT_STATS_INIT TRACEPIPE_STRUCT_INIT(tracepipe_event_stats)
TRACEPIPE_C_API tracepipe_status tracepipe_instance_event_stats(const tracepipe_instance* instance,
                                                                const tracepipe_event* event,
                                                                tracepipe_event_stats* out);

/** The ring buffer's accounting summed over CPUs (per_cpu/cpuN/stats):
 *  written = read + overrun + lost + discarded + still buffered. */
typedef struct tracepipe_buffer_stats {
  size_t struct_size; /**< sizeof(tracepipe_buffer_stats) */
  uint64_t entries;   /**< records in the buffer now */
  uint64_t overrun;   /**< overwritten before read (overwrite mode) */
  uint64_t lost;      /**< refused: full (drop-newest), paused, too big */
  uint64_t read;      /**< consumed by readers */
  uint64_t bytes;     /**< bytes committed */
  uint32_t cpus;      /**< per-CPU buffers */
} tracepipe_buffer_stats;
#define TRACEPIPE_BUFFER_STATS_INIT TRACEPIPE_STRUCT_INIT(tracepipe_buffer_stats)
TRACEPIPE_C_API tracepipe_status tracepipe_instance_buffer_stats(const tracepipe_instance* instance,
                                                                 tracepipe_buffer_stats* out);
/** The flight file the ring lives in ("" without flight_recorder). */
TRACEPIPE_C_API size_t tracepipe_instance_flight_path(const tracepipe_instance* instance, char* buf,
                                                      size_t cap);

/* ── Recorder: a trace.dat that grows while the program runs ─────────────── */

typedef struct tracepipe_recorder tracepipe_recorder;

typedef struct tracepipe_recorder_options {
  size_t struct_size;      /**< sizeof(tracepipe_recorder_options) */
  const char* output;      /**< the trace.dat to write; or NULL and: */
  const char* collector;   /**< "HOST:PORT" of a `trace-cmd listen` (trace-cmd record -N) */
  uint32_t file_version;   /**< 6 or 7 (sections, compressed); 0: 6 */
  const char* compression; /**< version 7: "zstd", "zlib", "none"; NULL: zstd */
  /** Non-zero: flight-recorder mode (an overwrite buffer is written only at
   *  tracepipe_recorder_trigger() and stop); 0: stream continuously. */
  int flight_recorder;
  uint32_t watermark_percent;    /**< drain a CPU at half this share full; 0: 25 */
  uint32_t flush_interval_ms;    /**< longest a record waits in the ring; 0: 1000 */
  uint32_t collector_timeout_ms; /**< longest one network step; 0: 2000 */
  /* Fields below were added after ABI version 1's first release: a caller
   * built against an older header passes a smaller struct_size and gets
   * their defaults. */
  /** The output's format: "tracedat", "perfetto" or "ctf" (a folder);
   *  NULL: "tracedat" (RecorderOptions::format). */
  const char* format;
  /** Blocking mode (RecorderOptions::block_timeout, LTTng's
   *  --blocking-timeout): a writer that finds its drop-newest buffer full
   *  waits up to this many microseconds for the recorder instead of
   *  dropping; TRACEPIPE_BLOCK_FOREVER: no bound; 0: never waits. EINVAL on
   *  an overwrite buffer. Nested emits (a signal handler) never wait. */
  int64_t block_timeout_us;
} tracepipe_recorder_options;
#define TRACEPIPE_BLOCK_FOREVER ((int64_t)-1)
#define TRACEPIPE_RECORDER_OPTIONS_INIT TRACEPIPE_STRUCT_INIT(tracepipe_recorder_options)

typedef struct tracepipe_recorder_stats {
  size_t struct_size; /**< sizeof(tracepipe_recorder_stats) */
  uint64_t records;   /**< written */
  uint64_t pages;
  uint64_t bytes;
  uint64_t dropped;   /**< lost in the ring and marked in the file */
  uint64_t unwritten; /**< consumed but not written (the output failed) */
  int failed;         /**< a fault stopped the output (tracepipe_recorder_error) */
  /* Added after ABI version 1's first release (an older caller's smaller
   * struct_size gets the fields above only). */
  /** Of `dropped`, those whose marks were lost to the output's fault: the
   *  file's records + the marks' counts + unwritten + unmarked = the events
   *  that reached the ring. */
  uint64_t unmarked;
  /** Blocking mode, summed over the CPUs: emits that waited, the time they
   *  waited in all and the longest wait (ns), and those dropped after
   *  waiting block_timeout_us (also in `dropped`). */
  uint64_t block_waits;
  uint64_t block_wait_ns;
  uint64_t block_max_wait_ns;
  uint64_t block_timed_out;
} tracepipe_recorder_stats;
#define TRACEPIPE_RECORDER_STATS_INIT TRACEPIPE_STRUCT_INIT(tracepipe_recorder_stats)

/** Creates the output and starts the recorder thread, which consumes the
 *  instance's records (run no other consuming reader meanwhile). The
 *  instance must outlive the recorder. Errors: EINVAL (both or neither of
 *  output and collector, flight_recorder on a drop-newest buffer, ...), EIO. */
TRACEPIPE_C_API tracepipe_status tracepipe_recorder_start(tracepipe_instance* instance,
                                                          const tracepipe_recorder_options* options,
                                                          tracepipe_recorder** out);
/** Waits at most timeout_ms for the output to take data (a collector's
 *  connection); 1 when ready, 0 on a fault or timeout. Any thread. */
TRACEPIPE_C_API int tracepipe_recorder_wait_ready(tracepipe_recorder* recorder,
                                                  uint32_t timeout_ms);
/** Flight-recorder mode: write what the buffer holds now; stream: flush now.
 *  Any thread; returns at once (the recorder thread writes). */
TRACEPIPE_C_API void tracepipe_recorder_trigger(tracepipe_recorder* recorder);
/** Drains every committed record, finalizes the file and stops the thread
 *  (idempotent); *out (may be NULL) gets the final counters. Any thread
 *  but one of the recorder's callbacks; blocks until the file is complete. */
TRACEPIPE_C_API tracepipe_status tracepipe_recorder_stop(tracepipe_recorder* recorder,
                                                         tracepipe_recorder_stats* out);
/** The first fault ("writing PATH: CAUSE"); "" if none. Any thread. */
TRACEPIPE_C_API size_t tracepipe_recorder_error(const tracepipe_recorder* recorder, char* buf,
                                                size_t cap);
/** Stops (if needed) and frees; the handle is invalid afterwards, and no
 *  other thread may be using it. NULL is a no-op. */
TRACEPIPE_C_API void tracepipe_recorder_destroy(tracepipe_recorder* recorder);

/* ── Flight files ──────────────────────────────────────────────────────────── */

typedef struct tracepipe_recover_options {
  size_t struct_size; /**< sizeof(tracepipe_recover_options) */
  int live;           /**< the writing process may still run */
  int strict;         /**< damage is an error instead of a skipped sub-buffer */
} tracepipe_recover_options;
#define TRACEPIPE_RECOVER_OPTIONS_INIT TRACEPIPE_STRUCT_INIT(tracepipe_recover_options)

typedef struct tracepipe_recover_stats {
  size_t struct_size;   /**< sizeof(tracepipe_recover_stats) */
  uint64_t records;     /**< committed records recovered */
  uint64_t uncommitted; /**< reservations whose writer died before the commit (skipped) */
  uint32_t cpus;
  uint32_t warnings; /**< damaged parts skipped */
  int32_t pid;       /**< the process that wrote the file */
} tracepipe_recover_stats;
#define TRACEPIPE_RECOVER_STATS_INIT TRACEPIPE_STRUCT_INIT(tracepipe_recover_stats)

/** Turns a flight file (a crashed process's, or with `live` a running one's)
 *  into a trace.dat, as `tracepipe recover FILE -o OUT`. options and out
 *  may be NULL. Errors: ERECOVER (names the part and offset), EIO. Thread-safe. */
TRACEPIPE_C_API tracepipe_status tracepipe_recover(const char* flight_file, const char* output,
                                                   const tracepipe_recover_options* options,
                                                   tracepipe_recover_stats* out);

#ifdef __cplusplus
}
#endif

#endif /* TRACEPIPE_TRACEPIPE_C_H */
