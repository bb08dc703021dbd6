/*
 * onnx-mini C API: load an ONNX model, inspect it, run it.
 *
 * This is onnx-mini's one stable interface (C99, usable from C and C++). It is
 * exported by libonnx_mini.so; nothing else in that library is public.
 *
 * Conventions
 * - Handles are opaque. Every function that can fail returns an om_status*:
 *   NULL means success; anything else is an error the caller owns and frees
 *   with om_status_free(). Messages name the node, the rule and the values.
 * - No function aborts, throws or crashes on bad arguments: a NULL handle or
 *   pointer, an unknown name, a wrong type or shape, or memory that cannot be
 *   allocated is reported as a status.
 * - Element types are the ONNX TensorProto.DataType codes (1 = float,
 *   7 = int64, 9 = bool, 10 = float16, 16 = bfloat16, ...). String tensors
 *   (code 8, since 0.6) are read and written element by element
 *   (om_tensor_create_strings, om_tensor_get_string, om_tensor_set_string),
 *   not through a data pointer; custom ops do not take them.
 * - Strings returned by the library are owned by the object they come from and
 *   stay valid while it lives.
 *
 * A static KV cache updated in place:
 *
 *     om_tensor* cache;   // wraps the caller's cache memory, no copy
 *     om_tensor_wrap(OM_FLOAT, dims, 4, cache_memory, cache_bytes, &cache);
 *     const char* in_names[] = {"input_ids", ..., "cache_key_0"};
 *     const om_tensor* ins[] = {ids, ..., cache};
 *     const char* out_names[] = {"logits", "present_key_0"};
 *     om_tensor* outs[] = {NULL, cache};  // NULL: allocated by the runtime
 *     om_status* st = om_session_run(session, in_names, ins, n, out_names, outs, 2);
 *     // outs[0] is a new tensor (om_tensor_free it); the cache was updated in place.
 */
#ifndef ONNX_MINI_H_
#define ONNX_MINI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OM_VERSION_MAJOR 0
#define OM_VERSION_MINOR 6
#define OM_VERSION_PATCH 0

/* The library's version, "MAJOR.MINOR.PATCH" (of the library loaded, which
 * may be newer than the header compiled against). Never fails. */
const char* om_version(void);

/* ---- Status ---------------------------------------------------------------- */

typedef enum om_status_code {
  OM_OK = 0,
  OM_INVALID_ARGUMENT = 1, /* bad model, input, name, type, shape or value */
  OM_NOT_FOUND = 2,        /* a file that does not exist */
  OM_NOT_IMPLEMENTED = 3,  /* an op, opset or element type onnx-mini lacks */
  OM_OUT_OF_MEMORY = 4,    /* an allocation failed */
  OM_INTERNAL = 5,         /* anything else (a bug: please report it) */
  OM_CANCELLED = 6         /* a run stopped by its run options (terminate flag, deadline); since 0.4 */
} om_status_code;

typedef struct om_status om_status;

/* A new status with a code and a message (copied), for custom op callbacks to
 * return. Returns NULL for OM_OK. */
om_status* om_status_create(om_status_code code, const char* message);
/* The code of a status; OM_OK for NULL. */
om_status_code om_status_get_code(const om_status* status);
/* The message of a status; "" for NULL. Valid until the status is freed. */
const char* om_status_message(const om_status* status);
/* Frees a status; NULL is allowed. */
void om_status_free(om_status* status);

/* ---- Element types ---------------------------------------------------------- */

enum {
  OM_FLOAT = 1, OM_UINT8 = 2, OM_INT8 = 3, OM_UINT16 = 4, OM_INT16 = 5, OM_INT32 = 6,
  OM_INT64 = 7, OM_STRING = 8, OM_BOOL = 9, OM_FLOAT16 = 10, OM_DOUBLE = 11, OM_UINT32 = 12,
  OM_UINT64 = 13, OM_COMPLEX64 = 14, OM_COMPLEX128 = 15, OM_BFLOAT16 = 16,
  OM_FLOAT8E4M3FN = 17, OM_FLOAT8E4M3FNUZ = 18, OM_FLOAT8E5M2 = 19, OM_FLOAT8E5M2FNUZ = 20,
  OM_UINT4 = 21, OM_INT4 = 22, OM_FLOAT4E2M1 = 23, OM_FLOAT8E8M0 = 24, OM_UINT2 = 25, OM_INT2 = 26
};

/* The ONNX name of an element type ("FLOAT16"), or "UNDEFINED". Never fails. */
const char* om_elem_type_name(int32_t elem_type);

/* ---- Tensors ---------------------------------------------------------------- */

typedef struct om_tensor om_tensor;

/* A new tensor that owns zero-filled, 64-byte aligned memory. `dims` holds
 * `rank` non-negative sizes (may be NULL when rank is 0: a scalar). An
 * OM_STRING tensor holds empty strings. */
om_status* om_tensor_create(int32_t elem_type, const int64_t* dims, size_t rank, om_tensor** out);
/* A tensor over the caller's memory, without copying: `data` must hold at
 * least the tensor's byte size (`byte_size` says how much it holds) and stay
 * valid until the tensor is freed. Not for OM_STRING (OM_INVALID_ARGUMENT):
 * use om_tensor_create_strings. Packed 4- and 2-bit types store two or
 * four elements per byte, the first in the low bits.
 *
 * Alignment: `data` must be aligned to the element's C type: its size for a
 * scalar type (2 for float16, 4 for float, 8 for int64 and double), the size
 * of one part for complex64 (4) and complex128 (8), 1 for 8-bit and packed
 * types. Misaligned memory is OM_INVALID_ARGUMENT (copy it to aligned memory).
 *
 * bool: any nonzero byte is true. A run whose bool input holds bytes other
 * than 0 and 1 reads a normalized copy (the caller's memory is not changed),
 * counted against the session's memory limit. */
om_status* om_tensor_wrap(int32_t elem_type, const int64_t* dims, size_t rank, void* data,
                          size_t byte_size, om_tensor** out);
/* Frees a tensor (not wrapped memory); NULL is allowed. */
void om_tensor_free(om_tensor* tensor);

/* The element type code. */
om_status* om_tensor_elem_type(const om_tensor* tensor, int32_t* elem_type);
/* The shape: `*dims` points at `*rank` sizes owned by the tensor. */
om_status* om_tensor_shape(const om_tensor* tensor, const int64_t** dims, size_t* rank);
/* The number of elements. */
om_status* om_tensor_element_count(const om_tensor* tensor, int64_t* count);
/* The element memory (the caller's memory for a wrapped tensor).
 * OM_INVALID_ARGUMENT for a string tensor (om_tensor_get_string). */
om_status* om_tensor_data(om_tensor* tensor, void** data);
/* The same, read-only: for the const tensors a custom op's inputs are. */
om_status* om_tensor_const_data(const om_tensor* tensor, const void** data);
/* The size of the element memory in bytes. A string tensor has no element
 * memory of its own to copy: OM_INVALID_ARGUMENT (each element's length
 * comes from om_tensor_get_string). */
om_status* om_tensor_byte_size(const om_tensor* tensor, size_t* bytes);

/* ---- String tensors (since 0.6) ---------------------------------------------- */

/* A new string tensor (OM_STRING) of `count` elements, `count` equal to the
 * product of the `rank` dims: element i (row-major) is copied from strings[i],
 * lengths[i] bytes, which may include NUL bytes; `lengths` NULL: each
 * strings[i] is NUL-terminated. strings[i] may be NULL only for a length of 0.
 * OM_INVALID_ARGUMENT for a count that is not the dims' product or a NULL
 * string; *out is NULL on error. Free it with om_tensor_free. Since 0.6. */
om_status* om_tensor_create_strings(const int64_t* dims, size_t rank, const char* const* strings,
                                    const size_t* lengths, size_t count, om_tensor** out);
/* Element `index` (row-major, 0 to count - 1) of a string tensor: *data
 * points at its *length bytes, followed by a NUL byte (the element may hold
 * NUL bytes too: trust *length). The bytes are owned by the tensor and stay
 * valid until that element is set again or the tensor (and every handle
 * sharing its elements) is freed. OM_INVALID_ARGUMENT for an index out of
 * range or a tensor of another element type; nothing written then. Since 0.6. */
om_status* om_tensor_get_string(const om_tensor* tensor, int64_t index, const char** data, size_t* length);
/* Sets element `index` of a string tensor to `length` bytes copied from
 * `data` (NULL only for a length of 0). The same errors as
 * om_tensor_get_string; the element is unchanged on error. Do not set an
 * element of a tensor that is an input of a run in progress. Since 0.6. */
om_status* om_tensor_set_string(om_tensor* tensor, int64_t index, const char* data, size_t length);

/* ---- Session options -------------------------------------------------------- */

typedef struct om_session_options om_session_options;

/* New options with the defaults: all cores. */
om_status* om_session_options_create(om_session_options** out);
/* Threads each run of the session uses for its kernels (ONNX Runtime's
 * intra_op_num_threads); 0 means all cores, the default. */
om_status* om_session_options_set_intra_op_threads(om_session_options* options, int threads);
/* The most bytes the session's tensors (outputs, intermediate values, folded
 * constants) may hold at once, all concurrent runs together, checked before
 * each allocation: a run that would exceed it fails with OM_OUT_OF_MEMORY.
 * 0 means the default, 3/4 of physical memory. */
om_status* om_session_options_set_memory_limit(om_session_options* options, uint64_t bytes);
/* Whether the session rewrites decomposed patterns (RMSNorm written as
 * Pow/ReduceMean/Sqrt/..., Pow(x, 2)) into fused kernels before planning:
 * 1 (the default) rewrites, 0 runs the graph as written; other values are
 * refused. */
om_status* om_session_options_set_graph_rewrites(om_session_options* options, int enabled);
/* A session configuration entry by ONNX Runtime's key (its
 * AddSessionConfigEntry; since 0.5). Known keys:
 *   "session.qdq_matmulnbits_accuracy_level": "0".."4", the accuracy level at
 *   which DequantizeLinear (4/8-bit, blocked) + MatMul runs once fused: "4" (the
 *   default, as ONNX Runtime) rounds the activations to int8 per block, lower
 *   levels compute in float.
 * Other keys are refused with OM_NOT_IMPLEMENTED, values out of range with
 * OM_INVALID_ARGUMENT. */
om_status* om_session_options_add_config_entry(om_session_options* options, const char* key, const char* value);
/* Profiling (ONNX Runtime's enable_profiling and profile_file_prefix) for
 * sessions made with these options: every node run (inside If, Loop, Scan and
 * SequenceMap bodies too, at every iteration) is recorded with its start,
 * duration, thread, op type, name, input and output types and shapes, and
 * om_session_end_profiling writes the record as a Chrome trace. `file_prefix`
 * (copied) names the file: "<file_prefix>_<YYYY-MM-DD_HH-MM-SS_mmm>.json" (the
 * local time the recording began, as ONNX Runtime names it), relative to the
 * working directory unless the prefix is a path. NULL or "" turns profiling
 * off. Since 0.6. */
om_status* om_session_options_enable_profiling(om_session_options* options, const char* file_prefix);
/* Frees options; NULL is allowed. Sessions keep their own copy. */
void om_session_options_free(om_session_options* options);

/* ---- Run options (since 0.4) ------------------------------------------------ */

/* How a run may be stopped before it ends (ONNX Runtime's RunOptions): a
 * terminate flag and a deadline, for om_session_run_with_options and
 * om_session_run_values_with_options. A run checks them before every node
 * (in every subgraph too), at every iteration of Loop, Scan and SequenceMap
 * and at every time step of RNN, GRU and LSTM; other kernels (a large
 * product, a custom op) are not interrupted. A stopped run
 * returns OM_CANCELLED ("run cancelled: ..."), leaves the NULL output slots
 * NULL and writes no bound output; the session stays usable. Once a run has
 * written into a bound output (a KV cache an op updates in place, or any
 * bound output its producing op writes directly) it is no longer stopped and
 * finishes: a bound output holds a whole run's result or is untouched. */
typedef struct om_run_options om_run_options;

/* New options: no terminate flag set, no deadline. */
om_status* om_run_options_create(om_run_options** out);
/* Sets (1) or clears (0) the terminate flag; other values are refused. Any
 * thread may call it while runs with these options are in flight: they stop
 * at their next check (a relaxed atomic store and load). Runs never clear it:
 * while it is set, a run with these options stops before its first node. */
om_status* om_run_options_set_terminate(om_run_options* options, int terminate);
/* A deadline for each run with these options: it stops once `timeout_ms`
 * milliseconds have passed since it started. 0 (the default) means none;
 * negative values are refused. Read when a run starts. */
om_status* om_run_options_set_timeout_ms(om_run_options* options, int64_t timeout_ms);
/* Frees options; NULL is allowed. No run with them may be in flight. */
void om_run_options_free(om_run_options* options);

/* ---- Sessions --------------------------------------------------------------- */

typedef struct om_session om_session;

/* Loads, validates and plans a model file. External data is read from the
 * model's folder, never from outside it. `options` may be NULL (defaults).
 * Ops, opsets or element types onnx-mini lacks fail here, with
 * OM_NOT_IMPLEMENTED. */
om_status* om_session_create(const char* model_path, const om_session_options* options,
                             om_session** out);
/* The same from a serialized ModelProto in memory (copied; the caller may
 * free it after the call). External data is read from `base_dir`; NULL or ""
 * refuses external data. */
om_status* om_session_create_from_memory(const void* model_data, size_t model_size,
                                         const char* base_dir, const om_session_options* options,
                                         om_session** out);
/* Frees a session; NULL is allowed. No run of it may be in progress. */
void om_session_free(om_session* session);

/* What the model declares (and inference derived) about one input or output.
 * Every pointer is owned by the session. */
typedef struct om_value_info {
  const char* name;
  int32_t elem_type;            /* 0 when unknown */
  int64_t rank;                 /* -1 when unknown; then dims and dim_names are NULL */
  const int64_t* dims;          /* rank sizes; -1 for a dim not known before running */
  const char* const* dim_names; /* rank symbolic names (dim_param); "" when none */
} om_value_info;

/* Graph inputs (initializers excluded) and outputs. */
om_status* om_session_input_count(const om_session* session, size_t* count);
om_status* om_session_output_count(const om_session* session, size_t* count);
om_status* om_session_input_info(const om_session* session, size_t index, om_value_info* info);
om_status* om_session_output_info(const om_session* session, size_t index, om_value_info* info);

/* ---- Model metadata (since 0.6) ---------------------------------------------- */

/* What the model says about itself (ModelProto's fields; ONNX Runtime's
 * ModelMetadata). A field the model leaves out is "" (0 for the version, no
 * entries for the lists). Every pointer is owned by the session. */
typedef struct om_model_metadata {
  const char* producer_name;
  const char* producer_version;
  const char* domain;
  const char* description;          /* the model's doc_string */
  const char* graph_name;
  const char* graph_description;    /* the graph's doc_string */
  int64_t version;                  /* model_version */
  size_t custom_count;              /* metadata_props, in the model's order */
  const char* const* custom_keys;
  const char* const* custom_values;
  size_t opset_count;               /* opset_import, in the model's order */
  const char* const* opset_domains; /* "" for ai.onnx (written "" or "ai.onnx") */
  const int64_t* opset_versions;
} om_model_metadata;

/* The model's metadata; every pointer owned by the session, valid while it
 * lives. OM_INVALID_ARGUMENT for a NULL argument. Since 0.6. */
om_status* om_session_metadata(const om_session* session, om_model_metadata* out);

/* Runs a model whose inputs and outputs are tensors (om_session_run_values
 * runs any model). Every graph input must be given by name, with its
 * declared element type and a shape that fits the declared one; an input
 * declared a scalar may also be given as shape [1] (as onnxruntime takes it;
 * since 0.6) and runs as given, as onnxruntime 1.30 runs it (an output that
 * is that input has shape [1]), in om_session_run_values too. Inputs are read in
 * place (never copied) and not modified, except through a bound output.
 *
 * Outputs are asked for by name, any subset in any order. outputs[i] == NULL
 * makes the runtime allocate the result and store a new tensor there, which
 * the caller frees. A non-NULL outputs[i] is written into: its type and shape
 * must be the result's, else OM_INVALID_ARGUMENT. The check comes before
 * anything is written when the result's shape follows from the inputs'
 * shapes (as a KV cache's does); an output whose shape depends on input
 * values is checked when it is computed, after which other bound outputs
 * may already hold new values. It may be the very tensor passed as
 * an input (a static KV cache): an op that updates that input in place (such
 * as TensorScatter) then writes only what changes, when no later step of the
 * model reads the input; otherwise the result is computed elsewhere and
 * copied in at the end, after every result has been read (an output that is
 * a view of that input gets the input's values from before the run). A
 * buffer may overlap an input in any other way too (at an offset, say): its
 * result is then computed elsewhere and moved in. Two bound outputs may not
 * overlap each other (nor be the same tensor): OM_INVALID_ARGUMENT, before
 * anything runs.
 *
 * String tensors are inputs and outputs like any other (since 0.6): a bound
 * string output is a string tensor of the result's shape (om_tensor_create
 * with OM_STRING), whose elements the run replaces.
 *
 * One session may run from many threads at once (with distinct bound outputs).
 * On error, the NULL output slots stay NULL. */
om_status* om_session_run(const om_session* session, const char* const* input_names,
                          const om_tensor* const* inputs, size_t input_count,
                          const char* const* output_names, om_tensor** outputs, size_t output_count);
/* om_session_run that run options may stop (OM_CANCELLED); NULL options
 * runs as om_session_run. Since 0.4. */
om_status* om_session_run_with_options(const om_session* session, const om_run_options* run_options,
                                       const char* const* input_names, const om_tensor* const* inputs,
                                       size_t input_count, const char* const* output_names,
                                       om_tensor** outputs, size_t output_count);

/* ---- Profiling (since 0.6) -------------------------------------------------- */

/* Writes the events recorded since the session was made (or since the last
 * om_session_end_profiling) to a new trace file and starts a new recording:
 * each call writes the runs since the one before. The file is a JSON array of
 * Chrome trace events in ONNX Runtime's profile format ("ph": "X", times in
 * microseconds), which Perfetto and chrome://tracing open: per node run a
 * "Node" event named "<node>_kernel_time" with args op_name, provider,
 * node_index, activation_size, parameter_size, output_size, input_type_shape
 * and output_type_shape ([{"float":[1,64]}]); a node inside a subgraph is
 * named through its parents ("If_0/then_branch/Conv_3_kernel_time"), a node
 * without a name "<op_type>_<index>". "Session" events: session_initialization,
 * model_run per run, SequentialExecutor::Execute per graph or subgraph run. Past
 * a million events a recording keeps no more, and ends with a
 * "dropped_events" event (args count). *path (owned by the session, valid
 * until the session is freed) is the file written; it is
 * written whole or not at all (OM_INVALID_ARGUMENT when it cannot be written;
 * the events are then kept for the next call). OM_INVALID_ARGUMENT when
 * profiling is off. Runs may go on in other threads meanwhile; calls to this
 * function are serialized. Since 0.6. */
om_status* om_session_end_profiling(om_session* session, const char** path);

/* ---- Sequences and optionals ------------------------------------------------ */

/* A graph input or output may hold more than one tensor; the kind says which.
 * om_value_info describes a tensor, or the tensor an optional holds; for a
 * sequence (or an optional sequence) its elem_type is the items' and its
 * rank is 0 with no dims, as onnxruntime reports a seq(tensor(float)) input
 * (shape [], type "seq(tensor(float))"; since 0.6: the items' rank before). */
typedef enum om_type_kind {
  OM_TYPE_TENSOR = 0,
  OM_TYPE_SEQUENCE = 1,          /* a sequence of tensors of one element type */
  OM_TYPE_OPTIONAL_TENSOR = 2,   /* a tensor, or nothing */
  OM_TYPE_OPTIONAL_SEQUENCE = 3  /* a sequence, or nothing */
} om_type_kind;

/* The kind of input or output `index`, an om_type_kind value (an index out
 * of range is OM_INVALID_ARGUMENT). int32_t since 0.6 (om_type_kind before),
 * so that other languages bind a fixed size. */
om_status* om_session_input_kind(const om_session* session, size_t index, int32_t* kind);
om_status* om_session_output_kind(const om_session* session, size_t index, int32_t* kind);

/* A run-time value of any kind, for om_session_run_values. An optional that
 * holds an element is that element's value (a tensor or a sequence); one
 * that holds nothing is a none value. */
typedef struct om_value om_value;

typedef enum om_value_kind {
  OM_VALUE_TENSOR = 0,
  OM_VALUE_SEQUENCE = 1,
  OM_VALUE_NONE = 2 /* an optional without an element */
} om_value_kind;

/* New values; *out is NULL on error. A value shares the memory of the
 * tensors it is made of (no copy): the om_tensor handles may be freed right
 * after the call, but memory wrapped with om_tensor_wrap must outlive the
 * value. A sequence's items must all have `elem_type` (OM_STRING too, since
 * 0.6); `count` may be 0 (an empty sequence). */
om_status* om_value_create_tensor(const om_tensor* tensor, om_value** out);
om_status* om_value_create_sequence(int32_t elem_type, const om_tensor* const* items, size_t count,
                                    om_value** out);
om_status* om_value_create_none(om_value** out);
/* Frees a value (not the memory of wrapped tensors); NULL is allowed. */
void om_value_free(om_value* value);

/* The kind of a value, an om_value_kind value (int32_t since 0.6). */
om_status* om_value_get_kind(const om_value* value, int32_t* kind);
/* The tensor's element type, or the sequence's; 0 for none. */
om_status* om_value_elem_type(const om_value* value, int32_t* elem_type);
/* The number of tensors: 1 for a tensor, the length of a sequence, 0 for none. */
om_status* om_value_tensor_count(const om_value* value, size_t* count);
/* Tensor `index` of the value (0 for a tensor value) as a new handle, which
 * the caller frees with om_tensor_free; *tensor is NULL on error. It shares
 * the value's memory and stays valid after om_value_free (but for wrapped
 * memory, which must still be alive). Do not write it while the value is an
 * input of a run in progress. */
om_status* om_value_get_tensor(const om_value* value, size_t index, om_tensor** tensor);

/* Runs any model, its inputs and outputs given as values (a tensor-only model
 * may use either this or om_session_run). Every graph input must be given by
 * name: an optional input takes a none value or its element's value; a none
 * value for any other input is OM_INVALID_ARGUMENT. Inputs are read in place
 * and never modified. Outputs are asked for by name, each once; every output
 * slot must be NULL and receives a new value the caller frees: outputs never
 * share memory with the inputs, but two outputs may share memory with each
 * other (an output and its Identity). Only the outputs asked for are
 * copied out of the run (since 0.6: every sequence output was, against the
 * memory limit). There is no writing into caller
 * memory here (use om_session_run). On error the slots stay NULL. One
 * session may run from many threads at once. */
om_status* om_session_run_values(const om_session* session, const char* const* input_names,
                                 const om_value* const* inputs, size_t input_count,
                                 const char* const* output_names, om_value** outputs, size_t output_count);
/* om_session_run_values that run options may stop (OM_CANCELLED); NULL
 * options runs as om_session_run_values. Since 0.4. */
om_status* om_session_run_values_with_options(const om_session* session, const om_run_options* run_options,
                                              const char* const* input_names, const om_value* const* inputs,
                                              size_t input_count, const char* const* output_names,
                                              om_value** outputs, size_t output_count);

/* ---- Custom ops ------------------------------------------------------------- */

/* Passed to a custom op's callbacks; valid only during the call. */
typedef struct om_infer_context om_infer_context;
typedef struct om_kernel_context om_kernel_context;

/* An op implemented by the embedder. */
typedef struct om_custom_op {
  const char* domain;  /* e.g. "com.example"; "" or "ai.onnx" is ai.onnx (only ops onnx-mini lacks) */
  const char* op_type;
  int since_version;   /* the opset versions it implements: since..last */
  int last_version;    /* 0: no end */
  size_t input_count;  /* fixed arity; each input may have any element type but string */
  size_t output_count;
  void* user_data;     /* handed back to the callbacks */
  /* Validates the inputs' types and shapes and sets every output's type and
   * shape (om_infer_set_output). Called at session creation (dims -1 where
   * the model does not fix them), and again at each run whose input shapes
   * are not the ones it saw then. An output dim it cannot tell from the input
   * shapes (a size that depends on the input values) stays -1, even when the
   * input shapes are known: compute then allocates that output with
   * om_kernel_allocate_output. The element types it sets must not change
   * from one call to the next. Returns NULL or an error (om_status_create). */
  om_status* (*infer)(void* user_data, om_infer_context* context);
  /* Computes the outputs. Those whose shapes infer set in full are allocated
   * before the call (om_kernel_output); the others must be allocated by it
   * (om_kernel_allocate_output). */
  om_status* (*compute)(void* user_data, om_kernel_context* context);
} om_custom_op;

/* Registers an op for sessions created afterwards (in the whole process).
 * The struct is copied; its strings too. The domain "ai.onnx" is the same as
 * "" (the default domain). An op whose version range overlaps one already
 * registered (built-in or custom) is OM_INVALID_ARGUMENT. */
om_status* om_register_custom_op(const om_custom_op* op);

/* In infer: an input's type and shape (dims -1 where unknown; rank -1 when
 * unknown, then *dims is NULL). */
om_status* om_infer_input(const om_infer_context* context, size_t index, int32_t* elem_type,
                          const int64_t** dims, int64_t* rank);
/* In infer: sets output `index` (dims -1 for unknown sizes). */
om_status* om_infer_set_output(om_infer_context* context, size_t index, int32_t elem_type,
                               const int64_t* dims, size_t rank);
/* The node a callback runs for, in infer and in compute: its attributes. */
typedef struct om_node om_node;
om_status* om_infer_node(const om_infer_context* context, const om_node** node);
om_status* om_kernel_node(const om_kernel_context* context, const om_node** node);
/* The node's integer, float or string attribute: OM_NOT_FOUND when the node
 * has none of that name, OM_INVALID_ARGUMENT when it has another type. */
om_status* om_node_attr_int(const om_node* node, const char* name, int64_t* value);
om_status* om_node_attr_float(const om_node* node, const char* name, float* value);
om_status* om_node_attr_string(const om_node* node, const char* name, const char** value);

/* In compute: input `index` (owned by the runtime, read only) and output `index`
 * (allocated, to be filled in full; owned by the runtime). om_kernel_output is
 * OM_INVALID_ARGUMENT for an output whose shape infer left unknown until it
 * is allocated. */
om_status* om_kernel_input(const om_kernel_context* context, size_t index, const om_tensor** tensor);
om_status* om_kernel_output(om_kernel_context* context, size_t index, om_tensor** tensor);
/* In compute: allocates output `index` with this shape (to be filled in full;
 * owned by the runtime), for an output whose shape infer left unknown. The
 * shape must keep the rank and the dims infer did set; the element type is
 * infer's. Calling it again with the same shape returns the same tensor;
 * for an output already allocated with another shape it is
 * OM_INVALID_ARGUMENT. Since 0.4. */
om_status* om_kernel_allocate_output(om_kernel_context* context, size_t index, const int64_t* dims, size_t rank,
                                     om_tensor** tensor);

#ifdef __cplusplus
}
#endif

#endif /* ONNX_MINI_H_ */
