/* Tests of the C API, written in C99 against runtime/onnx_mini.h only.
 * Usage: capi_test TESTDATA_DIR   (the repository's testdata/ folder) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "onnx_mini.h"

static const char* testdata;
static int failures;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

/* Expects success; prints the message otherwise. */
#define OK(call)                                                                              \
  do {                                                                                        \
    om_status* st_ = (call);                                                                  \
    if (st_ != NULL) {                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, om_status_message(st_)); \
      ++failures;                                                                             \
      om_status_free(st_);                                                                    \
    }                                                                                         \
  } while (0)

/* Expects the error `code` with `substring` in its message. */
static void expect_error(om_status* st, om_status_code code, const char* substring, const char* what, int line) {
  if (st == NULL) {
    fprintf(stderr, "capi_test.c:%d: %s succeeded, expected error %d (%s)\n", line, what, (int)code, substring);
    ++failures;
    return;
  }
  if (om_status_get_code(st) != code || strstr(om_status_message(st), substring) == NULL) {
    fprintf(stderr, "capi_test.c:%d: %s: got error %d \"%s\", expected %d containing \"%s\"\n", line, what,
            (int)om_status_get_code(st), om_status_message(st), (int)code, substring);
    ++failures;
  }
  om_status_free(st);
}
#define ERR(call, code, substring) expect_error((call), (code), (substring), #call, __LINE__)

static char* path_of(const char* name) {
  static char buffer[4096];
  snprintf(buffer, sizeof buffer, "%s/%s", testdata, name);
  return buffer;
}

static om_session* load(const char* name) {
  om_session* s = NULL;
  OK(om_session_create(path_of(name), NULL, &s));
  return s;
}

/* ---- status, version, types ---- */

static void test_status_and_version(void) {
  om_status* st = om_status_create(OM_INVALID_ARGUMENT, "bad thing");
  CHECK(om_status_get_code(st) == OM_INVALID_ARGUMENT);
  CHECK(strcmp(om_status_message(st), "bad thing") == 0);
  om_status_free(st);
  CHECK(om_status_create(OM_OK, "fine") == NULL);
  CHECK(om_status_get_code(NULL) == OM_OK);
  CHECK(strcmp(om_status_message(NULL), "") == 0);
  om_status_free(NULL);
  char expected[32];
  snprintf(expected, sizeof expected, "%d.%d.%d", OM_VERSION_MAJOR, OM_VERSION_MINOR, OM_VERSION_PATCH);
  CHECK(strcmp(om_version(), expected) == 0);
  CHECK(strcmp(om_elem_type_name(OM_FLOAT16), "FLOAT16") == 0);
  CHECK(strcmp(om_elem_type_name(999), "UNDEFINED") == 0);
}

/* ---- tensors ---- */

static void test_tensors(void) {
  const int64_t dims[2] = {2, 3};
  om_tensor* t = NULL;
  OK(om_tensor_create(OM_FLOAT, dims, 2, &t));
  int32_t type = 0;
  OK(om_tensor_elem_type(t, &type));
  CHECK(type == OM_FLOAT);
  const int64_t* shape = NULL;
  size_t rank = 0;
  OK(om_tensor_shape(t, &shape, &rank));
  CHECK(rank == 2 && shape[0] == 2 && shape[1] == 3);
  int64_t count = 0;
  OK(om_tensor_element_count(t, &count));
  CHECK(count == 6);
  size_t bytes = 0;
  OK(om_tensor_byte_size(t, &bytes));
  CHECK(bytes == 24);
  void* data = NULL;
  OK(om_tensor_data(t, &data));
  CHECK(data != NULL && ((uintptr_t)data % 64) == 0);
  for (int i = 0; i < 6; ++i) CHECK(((float*)data)[i] == 0.0f); /* zero-filled */
  const void* const_data = NULL;
  OK(om_tensor_const_data(t, &const_data));
  CHECK(const_data == data);
  om_tensor_free(t);

  /* A scalar, an empty tensor, a packed type. */
  OK(om_tensor_create(OM_INT64, NULL, 0, &t));
  OK(om_tensor_element_count(t, &count));
  CHECK(count == 1);
  om_tensor_free(t);
  const int64_t empty[2] = {0, 5};
  OK(om_tensor_create(OM_FLOAT, empty, 2, &t));
  OK(om_tensor_byte_size(t, &bytes));
  CHECK(bytes == 0);
  om_tensor_free(t);
  const int64_t five[1] = {5};
  OK(om_tensor_create(OM_INT4, five, 1, &t));
  OK(om_tensor_byte_size(t, &bytes));
  CHECK(bytes == 3);
  om_tensor_free(t);

  /* Wrapping caller memory: no copy. */
  float memory[6] = {1, 2, 3, 4, 5, 6};
  OK(om_tensor_wrap(OM_FLOAT, dims, 2, memory, sizeof memory, &t));
  OK(om_tensor_data(t, &data));
  CHECK(data == (void*)memory);
  om_tensor_free(t);
  CHECK(memory[5] == 6); /* freeing a wrapper leaves the memory alone */

  /* Errors. */
  t = (om_tensor*)1;
  ERR(om_tensor_create(OM_FLOAT, dims, 2, NULL), OM_INVALID_ARGUMENT, "out is NULL");
  ERR(om_tensor_create(77, dims, 2, &t), OM_INVALID_ARGUMENT, "unknown element type 77");
  CHECK(t == NULL);
  ERR(om_tensor_wrap(OM_STRING, dims, 2, memory, sizeof memory, &t), OM_INVALID_ARGUMENT, "string tensors cannot be wrapped");
  CHECK(t == NULL);
  const int64_t negative[2] = {2, -3};
  ERR(om_tensor_create(OM_FLOAT, negative, 2, &t), OM_INVALID_ARGUMENT, "dim 1 is -3");
  ERR(om_tensor_create(OM_FLOAT, NULL, 2, &t), OM_INVALID_ARGUMENT, "dims is NULL");
  const int64_t huge[3] = {1 << 30, 1 << 30, 1 << 30};
  ERR(om_tensor_create(OM_FLOAT, huge, 3, &t), OM_INVALID_ARGUMENT, "too many elements");
  const int64_t big[2] = {1 << 20, 1 << 20}; /* 4 TiB: more than onnx-mini allocates */
  om_status* st = om_tensor_create(OM_FLOAT, big, 2, &t);
  CHECK(st != NULL && t == NULL);
  om_status_free(st);
  ERR(om_tensor_wrap(OM_FLOAT, dims, 2, memory, sizeof memory - 1, &t), OM_INVALID_ARGUMENT,
      "needs 24 bytes, the memory given holds 23");
  ERR(om_tensor_wrap(OM_FLOAT, dims, 2, NULL, 24, &t), OM_INVALID_ARGUMENT, "data is NULL");
  ERR(om_tensor_elem_type(NULL, &type), OM_INVALID_ARGUMENT, "tensor is NULL");
  ERR(om_tensor_shape(NULL, &shape, &rank), OM_INVALID_ARGUMENT, "tensor is NULL");
  ERR(om_tensor_data(NULL, &data), OM_INVALID_ARGUMENT, "tensor is NULL");
  ERR(om_tensor_const_data(NULL, (const void**)&data), OM_INVALID_ARGUMENT, "tensor is NULL");
  ERR(om_tensor_const_data(t, NULL), OM_INVALID_ARGUMENT, "data is NULL");
  ERR(om_tensor_byte_size(NULL, &bytes), OM_INVALID_ARGUMENT, "tensor is NULL");
  ERR(om_tensor_element_count(NULL, &count), OM_INVALID_ARGUMENT, "tensor is NULL");
  om_tensor_free(NULL);
}

/* ---- options and sessions ---- */

static om_status* run_default(const om_session* s, float* x, om_tensor** y, om_tensor** y_shape);

static void test_options(void) {
  om_session_options* o = NULL;
  OK(om_session_options_create(&o));
  OK(om_session_options_set_intra_op_threads(o, 1));
  ERR(om_session_options_set_intra_op_threads(o, -1), OM_INVALID_ARGUMENT, "must be >= 0");
  ERR(om_session_options_set_intra_op_threads(NULL, 1), OM_INVALID_ARGUMENT, "options is NULL");
  OK(om_session_options_set_graph_rewrites(o, 0));
  OK(om_session_options_set_graph_rewrites(o, 1));
  ERR(om_session_options_set_graph_rewrites(o, 2), OM_INVALID_ARGUMENT, "must be 0 or 1, got 2");
  ERR(om_session_options_set_graph_rewrites(NULL, 0), OM_INVALID_ARGUMENT, "options is NULL");
  OK(om_session_options_add_config_entry(o, "session.qdq_matmulnbits_accuracy_level", "0"));
  ERR(om_session_options_add_config_entry(o, "session.qdq_matmulnbits_accuracy_level", "5"), OM_INVALID_ARGUMENT,
      "must be 0 to 4, got '5'");
  ERR(om_session_options_add_config_entry(o, "session.intra_op.allow_spinning", "0"), OM_NOT_IMPLEMENTED,
      "not implemented: session config entry 'session.intra_op.allow_spinning'");
  ERR(om_session_options_add_config_entry(o, NULL, "0"), OM_INVALID_ARGUMENT, "key is NULL");
  ERR(om_session_options_create(NULL), OM_INVALID_ARGUMENT, "out is NULL");
  om_session* s = NULL;
  OK(om_session_create(path_of("default.onnx"), o, &s));
  om_session_options_free(o); /* the session keeps its own copy */
  CHECK(s != NULL);
  om_session_free(s);
  om_session_options_free(NULL);

  /* The memory limit: 16 bytes cannot hold default.onnx's outputs. */
  OK(om_session_options_create(&o));
  OK(om_session_options_set_memory_limit(o, 16));
  ERR(om_session_options_set_memory_limit(NULL, 16), OM_INVALID_ARGUMENT, "options is NULL");
  s = NULL;
  OK(om_session_create(path_of("default.onnx"), o, &s));
  om_session_options_free(o);
  if (s != NULL) {
    float x[8] = {0};
    om_tensor *y = NULL, *y_shape = NULL;
    ERR(run_default(s, x, &y, &y_shape), OM_OUT_OF_MEMORY, "exceed the session's memory limit of 16 bytes");
    CHECK(y == NULL && y_shape == NULL);
    om_session_free(s);
  }
}

/* The default model: y = Transpose(x * w + b) with x, w [2,4], b [4]; y_shape = Shape(y). */
static const float kW[8] = {1, 2, 3, 4, 5, 6, 7, 8}, kB[4] = {0.5f, -0.5f, 1, -1};

static float expected_y(const float* x, int i) { /* y[c][r] = x[r][c] * w[r][c] + b[c] */
  const int c = i / 2, r = i % 2;
  return x[r * 4 + c] * kW[r * 4 + c] + kB[c];
}

static void test_introspection(void) {
  om_session* s = load("default.onnx");
  if (s == NULL) return;
  size_t n = 0;
  OK(om_session_input_count(s, &n));
  CHECK(n == 1);
  OK(om_session_output_count(s, &n));
  CHECK(n == 2);
  om_value_info info;
  OK(om_session_input_info(s, 0, &info));
  CHECK(strcmp(info.name, "x") == 0 && info.elem_type == OM_FLOAT && info.rank == 2);
  CHECK(info.dims[0] == 2 && info.dims[1] == 4 && strcmp(info.dim_names[0], "") == 0);
  OK(om_session_output_info(s, 1, &info));
  CHECK(strcmp(info.name, "y_shape") == 0 && info.elem_type == OM_INT64 && info.rank == 1 && info.dims[0] == 2);
  ERR(om_session_input_info(s, 1, &info), OM_INVALID_ARGUMENT, "input index 1 is out of range (the model has 1)");
  ERR(om_session_output_info(s, 5, &info), OM_INVALID_ARGUMENT, "output index 5 is out of range");
  ERR(om_session_input_info(NULL, 0, &info), OM_INVALID_ARGUMENT, "session is NULL");
  ERR(om_session_input_count(s, NULL), OM_INVALID_ARGUMENT, "count is NULL");
  ERR(om_session_output_count(NULL, &n), OM_INVALID_ARGUMENT, "session is NULL");
  ERR(om_session_output_info(s, 0, NULL), OM_INVALID_ARGUMENT, "info is NULL");
  om_session_free(s);

  /* Symbolic dims: the scatter model's cache is [batch, cache, 2]. */
  s = load("capi/scatter.onnx");
  if (s == NULL) return;
  OK(om_session_input_info(s, 0, &info));
  CHECK(strcmp(info.name, "cache") == 0 && info.rank == 3 && info.dims[0] == -1 && info.dims[2] == 2);
  CHECK(strcmp(info.dim_names[0], "batch") == 0 && strcmp(info.dim_names[1], "cache") == 0);
  om_session_free(s);
}

static void test_load_errors(void) {
  om_session* s = (om_session*)1;
  ERR(om_session_create(path_of("no/such/model.onnx"), NULL, &s), OM_NOT_FOUND, "cannot open model");
  CHECK(s == NULL);
  ERR(om_session_create(NULL, NULL, &s), OM_INVALID_ARGUMENT, "model_path is NULL");
  ERR(om_session_create(path_of("default.onnx"), NULL, NULL), OM_INVALID_ARGUMENT, "out is NULL");
  const char garbage[] = "this is not a protobuf \xff\xff\xff\xff";
  ERR(om_session_create_from_memory(garbage, sizeof garbage, NULL, NULL, &s), OM_INVALID_ARGUMENT, "");
  CHECK(s == NULL);
  ERR(om_session_create_from_memory(NULL, 10, NULL, NULL, &s), OM_INVALID_ARGUMENT, "model_data is NULL");
  /* The custom op's model, before the op is registered. */
  ERR(om_session_create(path_of("capi/custom.onnx"), NULL, &s), OM_NOT_IMPLEMENTED,
      "not implemented: com.example::Affine opset 1");
  /* External data outside the base folder is refused: the model from memory without a folder. */
  FILE* f = fopen(path_of("conformance/test_mini_external_data/model.onnx"), "rb");
  CHECK(f != NULL);
  if (f == NULL) return;
  char bytes[4096];
  const size_t size = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  ERR(om_session_create_from_memory(bytes, size, NULL, NULL, &s), OM_INVALID_ARGUMENT, "external data");
  /* With the folder it loads: x - w with w = [10, 20, 30]. */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/conformance/test_mini_external_data", testdata);
  OK(om_session_create_from_memory(bytes, size, dir, NULL, &s));
  if (s == NULL) return;
  int32_t x[3] = {1, 2, 3};
  const int64_t dims[1] = {3};
  om_tensor* in = NULL;
  OK(om_tensor_wrap(OM_INT32, dims, 1, x, sizeof x, &in));
  const char* in_names[] = {"x"};
  const char* out_names[] = {"y"};
  om_tensor* out[1] = {NULL};
  OK(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1));
  if (out[0] != NULL) {
    void* data = NULL;
    OK(om_tensor_data(out[0], &data));
    CHECK(((int32_t*)data)[0] == -9 && ((int32_t*)data)[2] == -27);
  }
  om_tensor_free(out[0]);
  om_tensor_free(in);
  om_session_free(s);
}

/* Runs the default model on x; returns the two fresh outputs. */
static om_status* run_default(const om_session* s, float* x, om_tensor** y, om_tensor** y_shape) {
  const int64_t dims[2] = {2, 4};
  om_tensor* in = NULL;
  om_status* st = om_tensor_wrap(OM_FLOAT, dims, 2, x, 8 * sizeof(float), &in);
  if (st != NULL) return st;
  const char* in_names[] = {"x"};
  const char* out_names[] = {"y", "y_shape"};
  om_tensor* out[2] = {NULL, NULL};
  st = om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 2);
  om_tensor_free(in);
  *y = out[0];
  *y_shape = out[1];
  return st;
}

static void test_run(void) {
  om_session* s = load("default.onnx");
  if (s == NULL) return;
  float x[8];
  for (int i = 0; i < 8; ++i) x[i] = 0.25f * (float)i - 1.0f;
  om_tensor *y = NULL, *y_shape = NULL;
  OK(run_default(s, x, &y, &y_shape));
  if (y != NULL && y_shape != NULL) {
    const int64_t* shape = NULL;
    size_t rank = 0;
    OK(om_tensor_shape(y, &shape, &rank));
    CHECK(rank == 2 && shape[0] == 4 && shape[1] == 2);
    void* data = NULL;
    OK(om_tensor_data(y, &data));
    for (int i = 0; i < 8; ++i) CHECK(((float*)data)[i] == expected_y(x, i));
    OK(om_tensor_data(y_shape, &data));
    CHECK(((int64_t*)data)[0] == 4 && ((int64_t*)data)[1] == 2);
  }
  om_tensor_free(y);
  om_tensor_free(y_shape);

  /* Outputs by name, a subset, in any order; a caller's buffer is written into. */
  const int64_t dims[2] = {2, 4}, ydims[2] = {4, 2};
  om_tensor *in = NULL, *bound = NULL;
  float ybuf[8] = {0};
  OK(om_tensor_wrap(OM_FLOAT, dims, 2, x, sizeof x, &in));
  OK(om_tensor_wrap(OM_FLOAT, ydims, 2, ybuf, sizeof ybuf, &bound));
  const char* in_names[] = {"x"};
  const om_tensor* ins[] = {in};
  const char* only_y[] = {"y"};
  om_tensor* outs[1] = {bound};
  OK(om_session_run(s, in_names, ins, 1, only_y, outs, 1));
  CHECK(outs[0] == bound);
  for (int i = 0; i < 8; ++i) CHECK(ybuf[i] == expected_y(x, i));
  const char* shape_only[] = {"y_shape"};
  outs[0] = NULL;
  OK(om_session_run(s, in_names, ins, 1, shape_only, outs, 1));
  om_tensor_free(outs[0]);
  OK(om_session_run(s, in_names, ins, 1, NULL, NULL, 0)); /* no output asked for */

  /* Errors: each leaves the NULL slots NULL. */
  memset(ybuf, 0, sizeof ybuf);
  outs[0] = NULL;
  const char* unknown_in[] = {"z"};
  ERR(om_session_run(s, unknown_in, ins, 1, only_y, outs, 1), OM_INVALID_ARGUMENT, "'z' is not an input of the model");
  ERR(om_session_run(s, NULL, NULL, 0, only_y, outs, 1), OM_INVALID_ARGUMENT, "input 'x' is missing");
  const char* unknown_out[] = {"w"};
  ERR(om_session_run(s, in_names, ins, 1, unknown_out, outs, 1), OM_INVALID_ARGUMENT, "'w' is not an output of the model");
  const char* twice[] = {"y", "y"};
  om_tensor* two[2] = {NULL, NULL};
  ERR(om_session_run(s, in_names, ins, 1, twice, two, 2), OM_INVALID_ARGUMENT, "output 'y' is asked for twice");
  CHECK(two[0] == NULL && two[1] == NULL);
  CHECK(outs[0] == NULL);
  ERR(om_session_run(NULL, in_names, ins, 1, only_y, outs, 1), OM_INVALID_ARGUMENT, "session is NULL");
  const om_tensor* null_in[] = {NULL};
  ERR(om_session_run(s, in_names, null_in, 1, only_y, outs, 1), OM_INVALID_ARGUMENT, "input 'x' is NULL");
  ERR(om_session_run(s, in_names, ins, 1, only_y, NULL, 1), OM_INVALID_ARGUMENT, "outputs are NULL");

  /* Wrong input dtype and shape. */
  int32_t xi[8] = {0};
  om_tensor* wrong = NULL;
  OK(om_tensor_wrap(OM_INT32, dims, 2, xi, sizeof xi, &wrong));
  const om_tensor* wrong_ins[] = {wrong};
  ERR(om_session_run(s, in_names, wrong_ins, 1, only_y, outs, 1), OM_INVALID_ARGUMENT, "input 'x' must be float, got int32");
  om_tensor_free(wrong);
  const int64_t dims_bad[2] = {4, 2};
  OK(om_tensor_wrap(OM_FLOAT, dims_bad, 2, x, sizeof x, &wrong));
  wrong_ins[0] = wrong;
  ERR(om_session_run(s, in_names, wrong_ins, 1, only_y, outs, 1), OM_INVALID_ARGUMENT, "input 'x' must have shape float[2,4], got [4,2]");
  om_tensor_free(wrong);

  /* A bound output of the wrong size or type: an error, nothing written. */
  float small[6] = {0};
  const int64_t sdims[2] = {3, 2};
  OK(om_tensor_wrap(OM_FLOAT, sdims, 2, small, sizeof small, &wrong));
  outs[0] = wrong;
  ERR(om_session_run(s, in_names, ins, 1, only_y, outs, 1), OM_INVALID_ARGUMENT,
      "output 'y': the caller's buffer is float[3,2] but the output is float[4,2]");
  for (int i = 0; i < 6; ++i) CHECK(small[i] == 0);
  om_tensor_free(wrong);
  double wide[8] = {0};
  OK(om_tensor_wrap(OM_DOUBLE, ydims, 2, wide, sizeof wide, &wrong));
  outs[0] = wrong;
  ERR(om_session_run(s, in_names, ins, 1, only_y, outs, 1), OM_INVALID_ARGUMENT, "the caller's buffer is double[4,2]");
  for (int i = 0; i < 8; ++i) CHECK(wide[i] == 0);
  om_tensor_free(wrong);

  /* The session is still usable. */
  outs[0] = bound;
  OK(om_session_run(s, in_names, ins, 1, only_y, outs, 1));
  CHECK(ybuf[3] == expected_y(x, 3));
  om_tensor_free(in);
  om_tensor_free(bound);
  om_session_free(s);
}

/* ---- a static cache updated in place ---- */

/* scatter.onnx: present = TensorScatter(cache [B,M,2], update [B,1,2], write_indices [B]), axis 1;
 * update_neg = Neg(update). scatter_read.onnx adds old_neg = Neg(cache), read after the scatter. */
static void run_scatter(const char* model, int reads_cache_later) {
  om_session* s = load(model);
  if (s == NULL) return;
  enum { B = 2, M = 4 };
  float cache[B * M * 2];
  for (int i = 0; i < B * M * 2; ++i) cache[i] = (float)i;
  float update[B * 2] = {100, 101, 200, 201};
  int64_t idx[B] = {1, 3};
  const int64_t cdims[3] = {B, M, 2}, udims[3] = {B, 1, 2}, idims[1] = {B};
  om_tensor *tc = NULL, *tu = NULL, *ti = NULL;
  OK(om_tensor_wrap(OM_FLOAT, cdims, 3, cache, sizeof cache, &tc));
  OK(om_tensor_wrap(OM_FLOAT, udims, 3, update, sizeof update, &tu));
  OK(om_tensor_wrap(OM_INT64, idims, 1, idx, sizeof idx, &ti));
  const char* in_names[] = {"cache", "update", "write_indices"};
  const om_tensor* ins[] = {tc, tu, ti};
  const char* out_names[3] = {"present", "update_neg", "old_neg"};
  om_tensor* outs[3] = {tc, NULL, NULL}; /* present written over the cache itself */
  const size_t n_out = reads_cache_later ? 3 : 2;
  OK(om_session_run(s, in_names, ins, 3, out_names, outs, n_out));
  for (int b = 0; b < B; ++b)
    for (int m = 0; m < M; ++m)
      for (int k = 0; k < 2; ++k) {
        const int i = (b * M + m) * 2 + k;
        const float want = m == idx[b] ? update[b * 2 + k] : (float)i;
        CHECK(cache[i] == want);
      }
  CHECK(outs[0] == tc);
  if (outs[1] != NULL) {
    void* data = NULL;
    OK(om_tensor_data(outs[1], &data));
    CHECK(((float*)data)[3] == -201);
  }
  if (reads_cache_later && outs[2] != NULL) { /* the later reader saw the cache before the update */
    void* data = NULL;
    OK(om_tensor_data(outs[2], &data));
    for (int i = 0; i < B * M * 2; ++i) CHECK(((float*)data)[i] == -(float)i);
  }
  om_tensor_free(outs[1]);
  om_tensor_free(outs[2]);

  /* An index out of range: an error that names it, and the cache is untouched. */
  float before[B * M * 2];
  memcpy(before, cache, sizeof cache);
  idx[1] = 4;
  outs[1] = outs[2] = NULL;
  ERR(om_session_run(s, in_names, ins, 3, out_names, outs, n_out), OM_INVALID_ARGUMENT, "TensorScatter");
  CHECK(memcmp(before, cache, sizeof cache) == 0);
  CHECK(outs[1] == NULL && outs[2] == NULL);

  /* A bound present of the wrong cache length: an error, nothing written. */
  float other[B * 3 * 2] = {0};
  const int64_t odims[3] = {B, 3, 2};
  om_tensor* to = NULL;
  OK(om_tensor_wrap(OM_FLOAT, odims, 3, other, sizeof other, &to));
  idx[1] = 0;
  outs[0] = to;
  ERR(om_session_run(s, in_names, ins, 3, out_names, outs, n_out), OM_INVALID_ARGUMENT,
      "output 'present': the caller's buffer is float[2,3,2] but the output is float[batch,cache,2] with the inputs given");
  CHECK(memcmp(before, cache, sizeof cache) == 0);
  for (int i = 0; i < B * 3 * 2; ++i) CHECK(other[i] == 0); /* the bound buffer itself */
  om_tensor_free(to);

  /* A cache of the wrong shape bound as its own output: the input is what is wrong. */
  const int64_t wdims[3] = {B, 2 * M, 1};
  OK(om_tensor_wrap(OM_FLOAT, wdims, 3, cache, sizeof cache, &to));
  const om_tensor* wrong_ins[] = {to, tu, ti};
  outs[0] = to;
  ERR(om_session_run(s, in_names, wrong_ins, 3, out_names, outs, n_out), OM_INVALID_ARGUMENT,
      "input 'cache' must have shape float[batch,cache,2], got [2,8,1]");
  CHECK(memcmp(before, cache, sizeof cache) == 0);
  om_tensor_free(to);
  om_tensor_free(tc);
  om_tensor_free(tu);
  om_tensor_free(ti);
  om_session_free(s);
}

static void test_cache_in_place(void) {
  run_scatter("capi/scatter.onnx", 0);
  run_scatter("capi/scatter_read.onnx", 1);
}

/* ---- one session, many threads ---- */

struct job {
  const om_session* session;
  int seed;
  int mismatches;
  int errors;
};

static void* run_job(void* arg) {
  struct job* j = (struct job*)arg;
  for (int iter = 0; iter < 200; ++iter) {
    float x[8];
    for (int i = 0; i < 8; ++i) x[i] = (float)((j->seed * 31 + iter * 7 + i) % 17) - 8.0f;
    om_tensor *y = NULL, *y_shape = NULL;
    om_status* st = run_default(j->session, x, &y, &y_shape);
    if (st != NULL) {
      ++j->errors;
      om_status_free(st);
      continue;
    }
    void* data = NULL;
    om_status_free(om_tensor_data(y, &data));
    for (int i = 0; i < 8; ++i)
      if (((float*)data)[i] != expected_y(x, i)) ++j->mismatches;
    om_tensor_free(y);
    om_tensor_free(y_shape);
  }
  return NULL;
}

static void test_threads(void) {
  om_session* s = load("default.onnx");
  if (s == NULL) return;
  enum { kThreads = 8 };
  struct job serial = {s, 1000, 0, 0};
  run_job(&serial);
  CHECK(serial.errors == 0 && serial.mismatches == 0);
  pthread_t threads[kThreads];
  struct job jobs[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    jobs[t].session = s;
    jobs[t].seed = t;
    jobs[t].mismatches = jobs[t].errors = 0;
    CHECK(pthread_create(&threads[t], NULL, run_job, &jobs[t]) == 0);
  }
  for (int t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    CHECK(jobs[t].errors == 0);
    CHECK(jobs[t].mismatches == 0);
  }
  om_session_free(s);
}

/* ---- custom ops ---- */

/* com.example::Affine: y = scale * x + offset (float attributes; offset defaults to 0). */
static om_status* affine_infer(void* user_data, om_infer_context* context) {
  (void)user_data;
  int32_t type = 0;
  const int64_t* dims = NULL;
  int64_t rank = 0;
  om_status* st = om_infer_input(context, 0, &type, &dims, &rank);
  if (st != NULL) return st;
  if (type != OM_FLOAT) return om_status_create(OM_NOT_IMPLEMENTED, "Affine takes float only");
  if (rank < 0) return om_status_create(OM_INVALID_ARGUMENT, "Affine needs a ranked input");
  const om_node* node = NULL;
  float scale = 0;
  if ((st = om_infer_node(context, &node)) != NULL) return st;
  if ((st = om_node_attr_float(node, "scale", &scale)) != NULL) return st;
  return om_infer_set_output(context, 0, OM_FLOAT, dims, (size_t)rank);
}

static om_status* affine_compute(void* user_data, om_kernel_context* context) {
  int* calls = (int*)user_data;
  ++*calls; /* (single-threaded test) */
  const om_node* node = NULL;
  float scale = 0, offset = 0;
  om_status* st = om_kernel_node(context, &node);
  if (st == NULL) st = om_node_attr_float(node, "scale", &scale);
  if (st != NULL) return st;
  st = om_node_attr_float(node, "offset", &offset);
  if (om_status_get_code(st) == OM_NOT_FOUND) {
    om_status_free(st);
    st = NULL;
  }
  if (st != NULL) return st;
  const om_tensor* x = NULL;
  om_tensor* y = NULL;
  if ((st = om_kernel_input(context, 0, &x)) != NULL) return st;
  if ((st = om_kernel_output(context, 0, &y)) != NULL) return st;
  int64_t n = 0;
  const void* xd = NULL;
  void* yd = NULL;
  om_status_free(om_tensor_element_count(x, &n));
  om_status_free(om_tensor_const_data(x, &xd));
  om_status_free(om_tensor_data(y, &yd));
  for (int64_t i = 0; i < n; ++i) ((float*)yd)[i] = scale * ((const float*)xd)[i] + offset;
  if (n > 0 && ((const float*)xd)[0] < -1000) return om_status_create(OM_INVALID_ARGUMENT, "x[0] is below -1000");
  return NULL;
}

static void test_custom_op(void) {
  static int calls = 0;
  om_custom_op op = {"com.example", "Affine", 1, 0, 1, 1, &calls, affine_infer, affine_compute};
  OK(om_register_custom_op(&op));
  ERR(om_register_custom_op(&op), OM_INVALID_ARGUMENT, "overlap");
  om_custom_op builtin = op;
  builtin.domain = "";
  builtin.op_type = "Add";
  ERR(om_register_custom_op(&builtin), OM_INVALID_ARGUMENT, "overlap");
  builtin.domain = "ai.onnx"; /* the default domain's other name */
  ERR(om_register_custom_op(&builtin), OM_INVALID_ARGUMENT, "overlap");
  om_custom_op bad = op;
  bad.op_type = "Other";
  bad.compute = NULL;
  ERR(om_register_custom_op(&bad), OM_INVALID_ARGUMENT, "op->compute is NULL");
  bad.compute = affine_compute;
  bad.since_version = 3;
  bad.last_version = 2;
  ERR(om_register_custom_op(&bad), OM_INVALID_ARGUMENT, "version range 3..2 is empty");
  ERR(om_register_custom_op(NULL), OM_INVALID_ARGUMENT, "op is NULL");

  /* custom.onnx: z = Neg(Affine(x, scale=2, offset=1)), x float [N]. */
  om_session* s = load("capi/custom.onnx");
  if (s == NULL) return;
  float x[3] = {1, 2, 3};
  const int64_t dims[1] = {3};
  om_tensor* in = NULL;
  OK(om_tensor_wrap(OM_FLOAT, dims, 1, x, sizeof x, &in));
  const char* in_names[] = {"x"};
  const char* out_names[] = {"z"};
  om_tensor* out[1] = {NULL};
  OK(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1));
  CHECK(calls == 1);
  if (out[0] != NULL) {
    void* data = NULL;
    OK(om_tensor_data(out[0], &data));
    CHECK(((float*)data)[0] == -3 && ((float*)data)[1] == -5 && ((float*)data)[2] == -7);
  }
  om_tensor_free(out[0]);
  out[0] = NULL;
  /* An error from the compute callback names the node and keeps the session usable. */
  x[0] = -2000;
  ERR(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1), OM_INVALID_ARGUMENT,
      "Affine node 'affine': x[0] is below -1000");
  CHECK(out[0] == NULL);
  x[0] = 1;
  OK(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1));
  om_tensor_free(out[0]);
  om_tensor_free(in);
  om_session_free(s);

  /* The infer callback's error fails session creation: custom_int.onnx feeds it int32. */
  om_session* s2 = NULL;
  ERR(om_session_create(path_of("capi/custom_int.onnx"), NULL, &s2), OM_NOT_IMPLEMENTED, "Affine takes float only");
  CHECK(s2 == NULL);
}

/* Runs an Affine model (z = -(2x + 1)) on x = {1, 2, 3} and checks z. */
static void run_affine(const char* model) {
  om_session* s = load(model);
  if (s == NULL) return;
  float x[3] = {1, 2, 3};
  const int64_t dims[1] = {3};
  om_tensor* in = NULL;
  OK(om_tensor_wrap(OM_FLOAT, dims, 1, x, sizeof x, &in));
  const char* in_names[] = {"x"};
  const char* out_names[] = {"z"};
  om_tensor* out[1] = {NULL};
  OK(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1));
  if (out[0] != NULL) {
    const void* data = NULL;
    OK(om_tensor_const_data(out[0], &data));
    CHECK(((const float*)data)[0] == -3 && ((const float*)data)[1] == -5 && ((const float*)data)[2] == -7);
  }
  om_tensor_free(out[0]);
  om_tensor_free(in);
  om_session_free(s);
}

static void test_custom_op_registration(void) {
  /* Registered as "ai.onnx": found for a node of the default domain (written ""),
   * and "" is then the same op. */
  static int calls = 0;
  om_custom_op op = {"ai.onnx", "AffineCustom", 1, 0, 1, 1, &calls, affine_infer, affine_compute};
  OK(om_register_custom_op(&op));
  om_custom_op same = op;
  same.domain = "";
  ERR(om_register_custom_op(&same), OM_INVALID_ARGUMENT, "ai.onnx::AffineCustom: versions 1.. overlap");
  run_affine("capi/custom_default_domain.onnx");
  CHECK(calls == 1);

  /* A refused registration leaves no definition behind: com.left::Affine 2.. is
   * registered, 1..2 refused (overlap), then 1..1 registered: opset 1 runs 1..1's. */
  static int calls_later = 0, calls_refused = 0, calls_one = 0;
  om_custom_op later = {"com.left", "Affine", 2, 0, 1, 1, &calls_later, affine_infer, affine_compute};
  OK(om_register_custom_op(&later));
  om_custom_op refused = later;
  refused.since_version = 1;
  refused.last_version = 2;
  refused.user_data = &calls_refused;
  ERR(om_register_custom_op(&refused), OM_INVALID_ARGUMENT, "com.left::Affine: versions 1..2 overlap");
  om_custom_op one = refused;
  one.last_version = 1;
  one.user_data = &calls_one;
  OK(om_register_custom_op(&one));
  run_affine("capi/custom_left.onnx");
  CHECK(calls_one == 1 && calls_refused == 0 && calls_later == 0);
}

/* com.example::Positives: y = the positive elements of x (float [n] -> [?]).
 * Its size depends on x's values: infer leaves it -1 and compute allocates
 * it. user_data: 1 makes compute forget to allocate. */
static om_status* positives_infer(void* user_data, om_infer_context* context) {
  (void)user_data;
  const int64_t unknown[1] = {-1};
  return om_infer_set_output(context, 0, OM_FLOAT, unknown, 1);
}

static int positives_output_refused = 0;

static om_status* positives_compute(void* user_data, om_kernel_context* context) {
  const om_tensor* x = NULL;
  om_tensor* y = NULL;
  om_status* st = om_kernel_input(context, 0, &x);
  if (st != NULL) return st;
  /* Not allocated yet: om_kernel_output refuses, naming the way. */
  st = om_kernel_output(context, 0, &y);
  positives_output_refused = om_status_get_code(st) == OM_INVALID_ARGUMENT &&
                             strstr(om_status_message(st), "om_kernel_allocate_output") != NULL;
  om_status_free(st);
  if (*(int*)user_data == 1) return NULL;
  int64_t n = 0, count = 0;
  const void* xd = NULL;
  om_status_free(om_tensor_element_count(x, &n));
  om_status_free(om_tensor_const_data(x, &xd));
  for (int64_t i = 0; i < n; ++i) count += ((const float*)xd)[i] > 0;
  /* A shape that does not fit infer's rank is refused. */
  const int64_t wrong[2] = {count, 1};
  st = om_kernel_allocate_output(context, 0, wrong, 2, &y);
  if (om_status_get_code(st) != OM_INVALID_ARGUMENT) return om_status_create(OM_INTERNAL, "rank 2 was accepted");
  om_status_free(st);
  if ((st = om_kernel_allocate_output(context, 0, &count, 1, &y)) != NULL) return st;
  void* yd = NULL;
  om_status_free(om_tensor_data(y, &yd));
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i)
    if (((const float*)xd)[i] > 0) ((float*)yd)[k++] = ((const float*)xd)[i];
  return NULL;
}

static void test_custom_op_late_shape(void) {
  static int mode = 0;
  om_custom_op op = {"com.example", "Positives", 1, 0, 1, 1, &mode, positives_infer, positives_compute};
  OK(om_register_custom_op(&op));
  om_session* s = load("capi/custom_positives.onnx");
  if (s == NULL) return;
  float x[5] = {1, -2, 3, 0, 5};
  const int64_t dims[1] = {5};
  om_tensor* in = NULL;
  OK(om_tensor_wrap(OM_FLOAT, dims, 1, x, sizeof x, &in));
  const char* in_names[] = {"x"};
  const char* out_names[] = {"z"};
  om_tensor* out[1] = {NULL};
  OK(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1));
  CHECK(positives_output_refused);
  if (out[0] != NULL) {
    const int64_t* shape = NULL;
    size_t rank = 0;
    void* data = NULL;
    OK(om_tensor_shape(out[0], &shape, &rank));
    OK(om_tensor_data(out[0], &data));
    CHECK(rank == 1 && shape[0] == 3);
    CHECK(((float*)data)[0] == -1 && ((float*)data)[1] == -3 && ((float*)data)[2] == -5);
  }
  om_tensor_free(out[0]);
  out[0] = NULL;
  /* A compute callback that leaves the output unallocated: a clear error, the session stays usable. */
  mode = 1;
  ERR(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1), OM_INVALID_ARGUMENT,
      "Positives node 'positives': the custom op's compute callback did not allocate output 0");
  CHECK(out[0] == NULL);
  mode = 0;
  x[1] = 2;
  OK(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1));
  if (out[0] != NULL) {
    const int64_t* shape = NULL;
    size_t rank = 0;
    OK(om_tensor_shape(out[0], &shape, &rank));
    CHECK(rank == 1 && shape[0] == 4);
  }
  om_tensor_free(out[0]);
  om_tensor_free(in);
  om_session_free(s);
}

/* com.example::Mask: y = x > 0 as bool, stored as the byte 255 (C code may
 * store any byte in a bool); the runtime reads it as true. */
static om_status* mask_infer(void* user_data, om_infer_context* context) {
  (void)user_data;
  int32_t type = 0;
  const int64_t* dims = NULL;
  int64_t rank = 0;
  om_status* st = om_infer_input(context, 0, &type, &dims, &rank);
  if (st != NULL) return st;
  return om_infer_set_output(context, 0, OM_BOOL, dims, (size_t)rank);
}

static om_status* mask_compute(void* user_data, om_kernel_context* context) {
  (void)user_data;
  const om_tensor* x = NULL;
  om_tensor* y = NULL;
  om_status* st = om_kernel_input(context, 0, &x);
  if (st == NULL) st = om_kernel_output(context, 0, &y);
  if (st != NULL) return st;
  int64_t n = 0;
  const void* xd = NULL;
  void* yd = NULL;
  om_status_free(om_tensor_element_count(x, &n));
  om_status_free(om_tensor_const_data(x, &xd));
  om_status_free(om_tensor_data(y, &yd));
  for (int64_t i = 0; i < n; ++i) ((unsigned char*)yd)[i] = ((const float*)xd)[i] > 0 ? 255 : 0;
  return NULL;
}

static void test_custom_op_bool_bytes(void) {
  om_custom_op op = {"com.example", "Mask", 1, 0, 1, 1, NULL, mask_infer, mask_compute};
  OK(om_register_custom_op(&op));
  om_session* s = load("capi/custom_mask.onnx");
  if (s == NULL) return;
  float x[3] = {1, -1, 2};
  const int64_t dims[1] = {3};
  om_tensor* in = NULL;
  OK(om_tensor_wrap(OM_FLOAT, dims, 1, x, sizeof x, &in));
  const char* in_names[] = {"x"};
  const char* out_names[] = {"z"};
  om_tensor* out[1] = {NULL};
  OK(om_session_run(s, in_names, (const om_tensor* const*)&in, 1, out_names, out, 1));
  if (out[0] != NULL) {
    void* data = NULL;
    OK(om_tensor_data(out[0], &data));
    const unsigned char want[3] = {0, 1, 0}; /* Not(255) is 0, not 254 */
    CHECK(memcmp(data, want, 3) == 0);
  }
  om_tensor_free(out[0]);
  om_tensor_free(in);
  om_session_free(s);
}

/* ---- sequences and optionals ---- */

static void test_sequences_and_optionals(void) {
  /* sequence.onnx: longer = SequenceInsert(seq, x), count = SequenceLength(longer),
   * has = OptionalHasElement(opt), maybe = Identity(opt). */
  om_session* s = load("capi/sequence.onnx");
  int32_t kind = OM_TYPE_TENSOR;
  om_value_info info;
  OK(om_session_input_kind(s, 1, &kind));
  CHECK(kind == OM_TYPE_SEQUENCE);
  OK(om_session_input_info(s, 1, &info));
  /* A sequence's shape is [] (onnxruntime's), its elem_type the items'. */
  CHECK(strcmp(info.name, "seq") == 0 && info.elem_type == OM_FLOAT && info.rank == 0);
  OK(om_session_output_info(s, 0, &info));
  CHECK(strcmp(info.name, "longer") == 0 && info.elem_type == OM_FLOAT && info.rank == 0);
  OK(om_session_input_info(s, 2, &info)); /* an optional tensor: its tensor's shape */
  CHECK(strcmp(info.name, "opt") == 0 && info.elem_type == OM_FLOAT && info.rank == 1 && info.dims[0] == -1);
  OK(om_session_input_kind(s, 2, &kind));
  CHECK(kind == OM_TYPE_OPTIONAL_TENSOR);
  OK(om_session_output_kind(s, 1, &kind));
  CHECK(kind == OM_TYPE_TENSOR);
  ERR(om_session_output_kind(s, 4, &kind), OM_INVALID_ARGUMENT, "output index 4 is out of range");

  float a[2] = {1, 2}, b[3] = {3, 4, 5}, x[2] = {6, 7};
  const int64_t two = 2, three = 3;
  om_tensor *ta = NULL, *tb = NULL, *tx = NULL;
  OK(om_tensor_wrap(OM_FLOAT, &two, 1, a, sizeof a, &ta));
  OK(om_tensor_wrap(OM_FLOAT, &three, 1, b, sizeof b, &tb));
  OK(om_tensor_wrap(OM_FLOAT, &two, 1, x, sizeof x, &tx));
  const om_tensor* items[2] = {ta, tb};
  om_value *seq = NULL, *vx = NULL, *none = NULL, *bad = NULL;
  OK(om_value_create_sequence(OM_FLOAT, items, 2, &seq));
  OK(om_value_create_tensor(tx, &vx));
  OK(om_value_create_none(&none));
  ERR(om_value_create_sequence(OM_INT64, items, 2, &bad), OM_INVALID_ARGUMENT, "item 0 is float");
  CHECK(bad == NULL);
  ERR(om_value_create_sequence(OM_FLOAT, NULL, 1, &bad), OM_INVALID_ARGUMENT, "items is NULL");
  ERR(om_value_create_sequence(999, items, 0, &bad), OM_INVALID_ARGUMENT, "unknown element type 999");
  OK(om_value_create_sequence(OM_STRING, NULL, 0, &bad)); /* an empty sequence of strings */
  om_value_free(bad);
  bad = NULL;
  bad = (om_value*)&bad; /* set to NULL on error, even for a NULL argument */
  ERR(om_value_create_tensor(NULL, &bad), OM_INVALID_ARGUMENT, "tensor is NULL");
  CHECK(bad == NULL);
  ERR(om_value_create_none(NULL), OM_INVALID_ARGUMENT, "out is NULL");

  /* The tensor interface refuses the model and says which function runs it. */
  const om_tensor* tensor_inputs[1] = {tx};
  const char* x_name[1] = {"x"};
  om_tensor* tensor_out[1] = {NULL};
  const char* count_name[1] = {"count"};
  ERR(om_session_run(s, x_name, tensor_inputs, 1, count_name, tensor_out, 1), OM_INVALID_ARGUMENT,
      "om_session_run_values");

  const char* in_names[3] = {"x", "seq", "opt"};
  const om_value* ins[3] = {vx, seq, none};
  const char* out_names[4] = {"maybe", "longer", "count", "has"};
  om_value* outs[4] = {NULL, NULL, NULL, NULL};
  OK(om_session_run_values(s, in_names, ins, 3, out_names, outs, 4));
  int32_t vk = OM_VALUE_TENSOR;
  size_t n = 0;
  int32_t et = 0;
  OK(om_value_get_kind(outs[0], &vk));
  CHECK(vk == OM_VALUE_NONE);
  OK(om_value_tensor_count(outs[0], &n));
  CHECK(n == 0);
  OK(om_value_elem_type(outs[0], &et));
  CHECK(et == 0);
  OK(om_value_get_kind(outs[1], &vk));
  OK(om_value_tensor_count(outs[1], &n));
  OK(om_value_elem_type(outs[1], &et));
  CHECK(vk == OM_VALUE_SEQUENCE && n == 3 && et == OM_FLOAT);
  om_tensor* item = NULL;
  const void* data = NULL;
  const int64_t* dims = NULL;
  size_t rank = 0;
  OK(om_value_get_tensor(outs[1], 2, &item));
  OK(om_tensor_shape(item, &dims, &rank));
  OK(om_tensor_const_data(item, &data));
  CHECK(rank == 1 && dims[0] == 2 && ((const float*)data)[0] == 6 && ((const float*)data)[1] == 7);
  om_tensor_free(item);
  OK(om_value_get_tensor(outs[1], 1, &item));
  OK(om_tensor_const_data(item, &data));
  CHECK(((const float*)data)[2] == 5);
  om_tensor_free(item);
  ERR(om_value_get_tensor(outs[1], 3, &item), OM_INVALID_ARGUMENT, "tensor index 3 is out of range");
  CHECK(item == NULL);
  OK(om_value_get_tensor(outs[2], 0, &item));
  OK(om_tensor_const_data(item, &data));
  CHECK(*(const int64_t*)data == 3);
  om_tensor_free(item);
  /* An item's handle outlives its value. */
  OK(om_value_get_tensor(outs[1], 0, &item));
  om_value_free(outs[1]);
  outs[1] = NULL;
  OK(om_tensor_const_data(item, &data));
  CHECK(((const float*)data)[0] == 1 && ((const float*)data)[1] == 2);
  om_tensor_free(item);
  OK(om_value_get_tensor(outs[3], 0, &item));
  OK(om_tensor_const_data(item, &data));
  CHECK(*(const unsigned char*)data == 0);
  om_tensor_free(item);
  for (int k = 0; k < 4; ++k) om_value_free(outs[k]);

  /* The optional given an element; a wrong kind of input; a slot that is not NULL. */
  ins[2] = vx;
  om_value* has[1] = {NULL};
  const char* has_name[1] = {"has"};
  OK(om_session_run_values(s, in_names, ins, 3, has_name, has, 1));
  OK(om_value_get_tensor(has[0], 0, &item));
  OK(om_tensor_const_data(item, &data));
  CHECK(*(const unsigned char*)data == 1);
  om_tensor_free(item);
  ERR(om_session_run_values(s, in_names, ins, 3, has_name, has, 1), OM_INVALID_ARGUMENT, "the slot must be NULL");
  om_value_free(has[0]);
  has[0] = NULL;
  ins[1] = vx; /* a tensor where a sequence is declared */
  ERR(om_session_run_values(s, in_names, ins, 3, has_name, has, 1), OM_INVALID_ARGUMENT, "seq");
  CHECK(has[0] == NULL);
  ins[1] = none; /* none where a sequence (not an optional) is declared */
  ERR(om_session_run_values(s, in_names, ins, 3, has_name, has, 1), OM_INVALID_ARGUMENT, "seq");
  const char* twice[2] = {"has", "has"};
  om_value* two_outs[2] = {NULL, NULL};
  ins[1] = seq;
  ERR(om_session_run_values(s, in_names, ins, 3, twice, two_outs, 2), OM_INVALID_ARGUMENT, "asked for twice");
  CHECK(two_outs[0] == NULL && two_outs[1] == NULL);
  const char* unknown[1] = {"nope"};
  ins[1] = seq;
  ERR(om_session_run_values(s, in_names, ins, 3, unknown, has, 1), OM_INVALID_ARGUMENT, "not an output");

  om_value_free(seq);
  om_value_free(vx);
  om_value_free(none);
  om_value_free(NULL);
  om_session_free(s);

  /* A tensor-only model runs through om_session_run_values too. default.onnx:
   * y = Transpose(x * w + b), y_shape = Shape(y), x float [2, 4]. */
  s = load("default.onnx");
  float xs[8] = {0};
  const int64_t dims24[2] = {2, 4};
  om_tensor* t24 = NULL;
  OK(om_tensor_wrap(OM_FLOAT, dims24, 2, xs, sizeof xs, &t24));
  om_value* v24 = NULL;
  OK(om_value_create_tensor(t24, &v24));
  om_tensor_free(t24); /* the value keeps what it needs; xs stays alive */
  const char* x_only[1] = {"x"};
  const om_value* x_in[1] = {v24};
  const char* shape_name[1] = {"y_shape"};
  om_value* shape_out[1] = {NULL};
  OK(om_session_run_values(s, x_only, x_in, 1, shape_name, shape_out, 1));
  OK(om_value_get_tensor(shape_out[0], 0, &item));
  OK(om_tensor_const_data(item, &data));
  CHECK(((const int64_t*)data)[0] == 4 && ((const int64_t*)data)[1] == 2);
  om_tensor_free(item);
  om_value_free(shape_out[0]);
  om_value_free(v24);
  om_tensor_free(ta);
  om_tensor_free(tb);
  om_tensor_free(tx);
  om_session_free(s);
}

/* om_session_run_values copies only the outputs asked for: sequence.onnx's
 * `longer` (3 MB of items) over a 2 MB memory limit fails when asked for, and
 * does not stop a run that asks only for `count`. */
static void test_run_values_copies_what_is_asked(void) {
  om_session_options* options = NULL;
  OK(om_session_options_create(&options));
  OK(om_session_options_set_memory_limit(options, 2u << 20));
  om_session* s = NULL;
  OK(om_session_create(path_of("capi/sequence.onnx"), options, &s));
  om_session_options_free(options);
  if (s == NULL) return;
  const int64_t n = 1 << 18; /* 1 MB of float */
  float* memory = (float*)calloc(3 * (size_t)n, sizeof(float));
  om_tensor *ta = NULL, *tb = NULL, *tx = NULL;
  OK(om_tensor_wrap(OM_FLOAT, &n, 1, memory, (size_t)n * sizeof(float), &ta));
  OK(om_tensor_wrap(OM_FLOAT, &n, 1, memory + n, (size_t)n * sizeof(float), &tb));
  OK(om_tensor_wrap(OM_FLOAT, &n, 1, memory + 2 * n, (size_t)n * sizeof(float), &tx));
  const om_tensor* items[2] = {ta, tb};
  om_value *seq = NULL, *vx = NULL, *none = NULL;
  OK(om_value_create_sequence(OM_FLOAT, items, 2, &seq));
  OK(om_value_create_tensor(tx, &vx));
  OK(om_value_create_none(&none));
  const char* in_names[3] = {"x", "seq", "opt"};
  const om_value* ins[3] = {vx, seq, none};
  const char* longer_name[1] = {"longer"};
  const char* count_name[1] = {"count"};
  om_value* out[1] = {NULL};
  ERR(om_session_run_values(s, in_names, ins, 3, longer_name, out, 1), OM_OUT_OF_MEMORY, "");
  CHECK(out[0] == NULL);
  OK(om_session_run_values(s, in_names, ins, 3, count_name, out, 1));
  om_tensor* item = NULL;
  const void* data = NULL;
  if (out[0] != NULL) {
    OK(om_value_get_tensor(out[0], 0, &item));
    OK(om_tensor_const_data(item, &data));
    CHECK(data != NULL && *(const int64_t*)data == 3);
    om_tensor_free(item);
  }
  om_value_free(out[0]);
  om_value_free(seq);
  om_value_free(vx);
  om_value_free(none);
  om_tensor_free(ta);
  om_tensor_free(tb);
  om_tensor_free(tx);
  free(memory);
  om_session_free(s);
}

/* ---- string tensors (since 0.6) ---- */

/* Element `i` of string tensor `t` is the `length` bytes of `want`. */
static void expect_string(const om_tensor* t, int64_t i, const char* want, size_t length, int line) {
  const char* data = NULL;
  size_t got = 0;
  om_status* st = om_tensor_get_string(t, i, &data, &got);
  if (st != NULL || got != length || memcmp(data, want, length) != 0 || data[length] != '\0') {
    fprintf(stderr, "capi_test.c:%d: string %ld is not \"%s\" (%zu bytes): %s\n", line, (long)i, want, length,
            st ? om_status_message(st) : "other bytes");
    ++failures;
  }
  om_status_free(st);
}
#define CHECK_STRING(t, i, want) expect_string((t), (i), (want), strlen(want), __LINE__)

static void test_string_tensors(void) {
  const int64_t dims[2] = {2, 2};
  const char* words[4] = {"one", "", "three", "four"};
  om_tensor* t = NULL;
  OK(om_tensor_create_strings(dims, 2, words, NULL, 4, &t));
  int32_t type = 0;
  int64_t count = 0;
  OK(om_tensor_elem_type(t, &type));
  OK(om_tensor_element_count(t, &count));
  CHECK(type == OM_STRING && count == 4);
  for (int i = 0; i < 4; ++i) CHECK_STRING(t, i, words[i]);
  /* Elements are copied: the caller's strings may go. Set, with NUL bytes. */
  OK(om_tensor_set_string(t, 1, "a\0b", 3));
  expect_string(t, 1, "a\0b", 3, __LINE__);
  OK(om_tensor_set_string(t, 0, NULL, 0));
  CHECK_STRING(t, 0, "");
  CHECK_STRING(t, 2, "three");

  /* Errors, each leaving the outputs and the element alone. */
  const char* data = "untouched";
  size_t length = 99;
  ERR(om_tensor_get_string(t, 4, &data, &length), OM_INVALID_ARGUMENT, "string index 4 is out of range (the tensor has 4");
  ERR(om_tensor_get_string(t, -1, &data, &length), OM_INVALID_ARGUMENT, "string index -1 is out of range");
  CHECK(strcmp(data, "untouched") == 0 && length == 99);
  ERR(om_tensor_set_string(t, 4, "x", 1), OM_INVALID_ARGUMENT, "string index 4 is out of range");
  ERR(om_tensor_set_string(t, 2, NULL, 1), OM_INVALID_ARGUMENT, "data is NULL");
  CHECK_STRING(t, 2, "three");
  ERR(om_tensor_get_string(NULL, 0, &data, &length), OM_INVALID_ARGUMENT, "tensor is NULL");
  ERR(om_tensor_get_string(t, 0, NULL, &length), OM_INVALID_ARGUMENT, "data is NULL");
  ERR(om_tensor_get_string(t, 0, &data, NULL), OM_INVALID_ARGUMENT, "length is NULL");
  ERR(om_tensor_set_string(NULL, 0, "x", 1), OM_INVALID_ARGUMENT, "tensor is NULL");
  void* raw = NULL;
  const void* const_raw = NULL;
  size_t bytes = 0;
  ERR(om_tensor_data(t, &raw), OM_INVALID_ARGUMENT, "om_tensor_get_string");
  ERR(om_tensor_const_data(t, &const_raw), OM_INVALID_ARGUMENT, "om_tensor_get_string");
  ERR(om_tensor_byte_size(t, &bytes), OM_INVALID_ARGUMENT, "a string tensor has no byte size");
  CHECK(raw == NULL && const_raw == NULL && bytes == 0);
  om_tensor* numbers = NULL;
  OK(om_tensor_create(OM_FLOAT, dims, 2, &numbers));
  ERR(om_tensor_get_string(numbers, 0, &data, &length), OM_INVALID_ARGUMENT, "the tensor is float, not a string tensor");
  ERR(om_tensor_set_string(numbers, 0, "x", 1), OM_INVALID_ARGUMENT, "not a string tensor");
  om_tensor_free(numbers);
  om_tensor_free(t);

  om_tensor* bad = (om_tensor*)&bad;
  ERR(om_tensor_create_strings(dims, 2, words, NULL, 3, &bad), OM_INVALID_ARGUMENT,
      "count is 3 but shape [2,2] has 4 elements");
  CHECK(bad == NULL);
  const char* holes[2] = {"x", NULL};
  const size_t hole_lengths[2] = {1, 0};
  const int64_t two = 2;
  ERR(om_tensor_create_strings(&two, 1, holes, NULL, 2, &bad), OM_INVALID_ARGUMENT, "string 1 is NULL");
  ERR(om_tensor_create_strings(&two, 1, NULL, NULL, 2, &bad), OM_INVALID_ARGUMENT, "strings is NULL");
  ERR(om_tensor_create_strings(&two, 1, words, NULL, 2, NULL), OM_INVALID_ARGUMENT, "out is NULL");
  OK(om_tensor_create_strings(&two, 1, holes, hole_lengths, 2, &t)); /* NULL for a length of 0 */
  CHECK_STRING(t, 0, "x");
  CHECK_STRING(t, 1, "");
  om_tensor_free(t);
  OK(om_tensor_create_strings(NULL, 0, words, NULL, 1, &t)); /* a scalar */
  CHECK_STRING(t, 0, "one");
  om_tensor_free(t);
  const int64_t none[1] = {0};
  OK(om_tensor_create_strings(none, 1, NULL, NULL, 0, &t)); /* empty */
  ERR(om_tensor_get_string(t, 0, &data, &length), OM_INVALID_ARGUMENT, "out of range (the tensor has 0");
  om_tensor_free(t);
  /* om_tensor_create makes empty strings. */
  OK(om_tensor_create(OM_STRING, dims, 2, &t));
  for (int i = 0; i < 4; ++i) CHECK_STRING(t, i, "");
  om_tensor_free(t);
}

static void test_string_runs(void) {
  /* strings.onnx: upper = StringNormalizer(text, UPPER), match = RegexFullMatch(text, "[a-z]+"),
   * joined = StringConcat(text, "!"), same = Identity(text); text string [n]. */
  om_session* s = load("capi/strings.onnx");
  om_value_info info;
  OK(om_session_input_info(s, 0, &info));
  CHECK(info.elem_type == OM_STRING && info.rank == 1);
  const char* words[5] = {"abc", "Hello", "x y", "", "a\0b"};
  const size_t lengths[5] = {3, 5, 3, 0, 3};
  const int64_t five = 5;
  om_tensor* text = NULL;
  OK(om_tensor_create_strings(&five, 1, words, lengths, 5, &text));
  const char* in_names[1] = {"text"};
  const om_tensor* ins[1] = {text};
  const char* out_names[4] = {"upper", "match", "joined", "same"};
  om_tensor* outs[4] = {NULL, NULL, NULL, NULL};
  OK(om_session_run(s, in_names, ins, 1, out_names, outs, 4));
  CHECK_STRING(outs[0], 0, "ABC");
  CHECK_STRING(outs[0], 1, "HELLO");
  CHECK_STRING(outs[0], 2, "X Y");
  CHECK_STRING(outs[0], 3, "");
  const void* data = NULL;
  OK(om_tensor_const_data(outs[1], &data));
  const unsigned char* match = (const unsigned char*)data;
  CHECK(match[0] == 1 && match[1] == 0 && match[2] == 0 && match[3] == 0 && match[4] == 0);
  CHECK_STRING(outs[2], 0, "abc!");
  CHECK_STRING(outs[2], 3, "!");
  expect_string(outs[2], 4, "a\0b!", 4, __LINE__);
  expect_string(outs[3], 4, "a\0b", 3, __LINE__);
  CHECK_STRING(outs[3], 1, "Hello");
  /* The results are the caller's: setting one leaves the input alone. */
  OK(om_tensor_set_string(outs[3], 0, "changed", 7));
  CHECK_STRING(text, 0, "abc");
  for (int k = 0; k < 4; ++k) om_tensor_free(outs[k]);

  /* Bound string outputs: the run replaces their elements. */
  om_tensor *upper = NULL, *same = NULL;
  OK(om_tensor_create(OM_STRING, &five, 1, &upper));
  const char* stale[5] = {"s", "t", "a", "l", "e"};
  OK(om_tensor_create_strings(&five, 1, stale, NULL, 5, &same));
  om_tensor* bound[2] = {upper, same};
  const char* bound_names[2] = {"upper", "same"};
  OK(om_session_run(s, in_names, ins, 1, bound_names, bound, 2));
  CHECK(bound[0] == upper && bound[1] == same);
  CHECK_STRING(upper, 1, "HELLO");
  CHECK_STRING(upper, 3, "");
  CHECK_STRING(same, 0, "abc");
  CHECK_STRING(same, 3, "");
  expect_string(same, 4, "a\0b", 3, __LINE__);
  /* A bound output that does not fit, or is not a string tensor: nothing written. */
  const int64_t four = 4;
  om_tensor *short_out = NULL, *floats = NULL;
  OK(om_tensor_create(OM_STRING, &four, 1, &short_out));
  OK(om_tensor_create(OM_FLOAT, &five, 1, &floats));
  om_tensor* wrong[2] = {same, short_out};
  const char* wrong_names[2] = {"same", "upper"};
  OK(om_tensor_set_string(same, 0, "kept", 4));
  ERR(om_session_run(s, in_names, ins, 1, wrong_names, wrong, 2), OM_INVALID_ARGUMENT,
      "output 'upper': the caller's buffer is string[4] but the output is string[n]");
  CHECK_STRING(same, 0, "kept");
  wrong[1] = floats;
  ERR(om_session_run(s, in_names, ins, 1, wrong_names, wrong, 2), OM_INVALID_ARGUMENT,
      "the caller's buffer is float[5] but the output is string");
  om_tensor_free(short_out);
  om_tensor_free(floats);
  om_tensor_free(upper);
  om_tensor_free(same);

  /* The input tensor itself bound as outputs: `upper` written into it, `same` (its
   * Identity) keeps the values from before the run. */
  om_tensor* copy = NULL;
  OK(om_tensor_create_strings(&five, 1, words, lengths, 5, &copy));
  const om_tensor* copy_in[1] = {copy};
  om_tensor* into_input[1] = {copy};
  const char* upper_name[1] = {"upper"};
  OK(om_session_run(s, in_names, copy_in, 1, upper_name, into_input, 1));
  CHECK_STRING(copy, 0, "ABC");
  CHECK_STRING(copy, 1, "HELLO");
  const char* same_name[1] = {"same"};
  OK(om_session_run(s, in_names, copy_in, 1, same_name, into_input, 1));
  CHECK_STRING(copy, 0, "ABC");
  CHECK_STRING(copy, 2, "X Y");
  om_tensor_free(copy);

  /* A string tensor where float is declared, and a float tensor where string is. */
  om_tensor* x = NULL;
  OK(om_tensor_create(OM_FLOAT, &five, 1, &x));
  ins[0] = x;
  om_tensor* one_out[1] = {NULL};
  ERR(om_session_run(s, in_names, ins, 1, out_names, one_out, 1), OM_INVALID_ARGUMENT,
      "input 'text' must be string, got float");
  CHECK(one_out[0] == NULL);
  om_tensor_free(x);
  om_session* d = load("default.onnx");
  const int64_t dims24[2] = {2, 4};
  om_tensor* strings24 = NULL;
  OK(om_tensor_create(OM_STRING, dims24, 2, &strings24));
  const char* x_name[1] = {"x"};
  const om_tensor* x_in[1] = {strings24};
  const char* y_name[1] = {"y"};
  ERR(om_session_run(d, x_name, x_in, 1, y_name, one_out, 1), OM_INVALID_ARGUMENT, "must be float, got string");
  om_tensor_free(strings24);
  om_session_free(d);

  /* The same model through om_session_run_values. */
  om_value* vtext = NULL;
  OK(om_value_create_tensor(text, &vtext));
  const om_value* vins[1] = {vtext};
  om_value* vouts[2] = {NULL, NULL};
  const char* vnames[2] = {"joined", "upper"};
  OK(om_session_run_values(s, in_names, vins, 1, vnames, vouts, 2));
  om_tensor* item = NULL;
  int32_t et = 0;
  OK(om_value_elem_type(vouts[0], &et));
  CHECK(et == OM_STRING);
  OK(om_value_get_tensor(vouts[0], 0, &item));
  CHECK_STRING(item, 1, "Hello!");
  om_tensor_free(item);
  OK(om_value_get_tensor(vouts[1], 0, &item));
  CHECK_STRING(item, 2, "X Y");
  om_tensor_free(item);
  om_value_free(vouts[0]);
  om_value_free(vouts[1]);
  om_value_free(vtext);
  om_session_free(s);

  /* string_sequence.onnx: longer = SequenceInsert(seq, text), count = SequenceLength(longer). */
  s = load("capi/string_sequence.onnx");
  OK(om_session_input_info(s, 1, &info));
  CHECK(info.elem_type == OM_STRING);
  const char* first[2] = {"a", "bb"};
  const char* second[1] = {"ccc"};
  const int64_t two = 2, one = 1;
  om_tensor *ta = NULL, *tb = NULL;
  OK(om_tensor_create_strings(&two, 1, first, NULL, 2, &ta));
  OK(om_tensor_create_strings(&one, 1, second, NULL, 1, &tb));
  const om_tensor* items[2] = {ta, tb};
  om_value *seq = NULL, *bad = NULL;
  ERR(om_value_create_sequence(OM_FLOAT, items, 2, &bad), OM_INVALID_ARGUMENT, "item 0 is string");
  OK(om_value_create_sequence(OM_STRING, items, 2, &seq));
  om_tensor_free(ta); /* the sequence keeps its items */
  om_tensor_free(tb);
  OK(om_value_create_tensor(text, &vtext));
  const char* seq_in_names[2] = {"seq", "text"};
  const om_value* seq_ins[2] = {seq, vtext};
  const char* seq_out_names[2] = {"longer", "count"};
  om_value* seq_outs[2] = {NULL, NULL};
  OK(om_session_run_values(s, seq_in_names, seq_ins, 2, seq_out_names, seq_outs, 2));
  size_t n = 0;
  OK(om_value_tensor_count(seq_outs[0], &n));
  OK(om_value_elem_type(seq_outs[0], &et));
  CHECK(n == 3 && et == OM_STRING);
  OK(om_value_get_tensor(seq_outs[0], 0, &item));
  CHECK_STRING(item, 1, "bb");
  om_tensor_free(item);
  OK(om_value_get_tensor(seq_outs[0], 1, &item));
  CHECK_STRING(item, 0, "ccc");
  om_tensor_free(item);
  OK(om_value_get_tensor(seq_outs[0], 2, &item));
  CHECK_STRING(item, 1, "Hello");
  expect_string(item, 4, "a\0b", 3, __LINE__);
  om_tensor_free(item);
  OK(om_value_get_tensor(seq_outs[1], 0, &item));
  OK(om_tensor_const_data(item, &data));
  CHECK(*(const int64_t*)data == 3);
  om_tensor_free(item);
  om_value_free(seq_outs[0]);
  om_value_free(seq_outs[1]);
  om_value_free(seq);
  om_value_free(vtext);
  om_tensor_free(text);
  om_session_free(s);
}

/* ---- model metadata (since 0.6) ---- */

static void test_metadata(void) {
  /* metadata.onnx sets every field; metadata_none.onnx none (no producer, no graph name). */
  om_session* s = load("capi/metadata.onnx");
  om_model_metadata m;
  memset(&m, 0, sizeof m);
  OK(om_session_metadata(s, &m));
  CHECK(strcmp(m.producer_name, "capi-test") == 0);
  CHECK(strcmp(m.producer_version, "1.2.3") == 0);
  CHECK(strcmp(m.domain, "org.example") == 0);
  CHECK(strcmp(m.description, "A model with every metadata field.") == 0);
  CHECK(strcmp(m.graph_name, "negate") == 0);
  CHECK(strcmp(m.graph_description, "Negates x.") == 0);
  CHECK(m.version == 42);
  CHECK(m.custom_count == 2);
  if (m.custom_count == 2) {
    CHECK(strcmp(m.custom_keys[0], "author") == 0 && strcmp(m.custom_values[0], "onnx-mini") == 0);
    CHECK(strcmp(m.custom_keys[1], "license") == 0 && strcmp(m.custom_values[1], "MIT") == 0);
  }
  CHECK(m.opset_count == 2);
  if (m.opset_count == 2) {
    CHECK(strcmp(m.opset_domains[0], "") == 0 && m.opset_versions[0] == 17);
    CHECK(strcmp(m.opset_domains[1], "com.example") == 0 && m.opset_versions[1] == 3);
  }
  /* The same answer again; the errors write nothing. */
  om_model_metadata again;
  OK(om_session_metadata(s, &again));
  CHECK(again.producer_name == m.producer_name && again.custom_keys == m.custom_keys);
  ERR(om_session_metadata(NULL, &m), OM_INVALID_ARGUMENT, "session is NULL");
  ERR(om_session_metadata(s, NULL), OM_INVALID_ARGUMENT, "out is NULL");
  CHECK(strcmp(m.producer_name, "capi-test") == 0);
  om_session_free(s);

  s = load("capi/metadata_none.onnx");
  OK(om_session_metadata(s, &m));
  CHECK(strcmp(m.producer_name, "") == 0 && strcmp(m.producer_version, "") == 0 && strcmp(m.domain, "") == 0);
  CHECK(strcmp(m.description, "") == 0 && strcmp(m.graph_name, "") == 0 && strcmp(m.graph_description, "") == 0);
  CHECK(m.version == 0 && m.custom_count == 0);
  CHECK(m.opset_count == 1 && strcmp(m.opset_domains[0], "") == 0 && m.opset_versions[0] == 17);
  om_session_free(s);
}

/* ---- a declared scalar given as shape [1] (since 0.6) ---- */

static void test_scalar_as_shape_one(void) {
  /* scalar.onnx: y = Mul(x, s), id = Identity(s); x float [3], s a float scalar. */
  om_session* s = load("capi/scalar.onnx");
  if (s == NULL) return;
  float x[3] = {1, 2, 3}, sr[2] = {4, 4};
  const int64_t three = 3, one = 1, two = 2;
  om_tensor *tx = NULL, *ts = NULL, *bad = NULL;
  OK(om_tensor_wrap(OM_FLOAT, &three, 1, x, sizeof x, &tx));
  OK(om_tensor_wrap(OM_FLOAT, &one, 1, sr, sizeof(float), &ts));
  const char* in_names[2] = {"x", "s"};
  const om_tensor* ins[2] = {tx, ts};
  const char* out_names[2] = {"y", "id"};
  om_tensor* outs[2] = {NULL, NULL};
  OK(om_session_run(s, in_names, ins, 2, out_names, outs, 2));
  const void* data = NULL;
  const int64_t* dims = NULL;
  size_t rank = 9;
  if (outs[0] != NULL && outs[1] != NULL) {
    OK(om_tensor_const_data(outs[0], &data));
    CHECK(((const float*)data)[0] == 4 && ((const float*)data)[2] == 12);
    OK(om_tensor_shape(outs[1], &dims, &rank));
    CHECK(rank == 1 && dims[0] == 1); /* as given, as onnxruntime 1.30 returns it */
  }
  om_tensor_free(outs[0]);
  om_tensor_free(outs[1]);
  /* om_session_run_values too. */
  om_value *vx = NULL, *vs = NULL;
  OK(om_value_create_tensor(tx, &vx));
  OK(om_value_create_tensor(ts, &vs));
  const om_value* vins[2] = {vx, vs};
  om_value* vouts[1] = {NULL};
  OK(om_session_run_values(s, in_names, vins, 2, out_names, vouts, 1));
  om_tensor* item = NULL;
  OK(om_value_get_tensor(vouts[0], 0, &item));
  OK(om_tensor_const_data(item, &data));
  CHECK(((const float*)data)[1] == 8);
  om_tensor_free(item);
  om_value_free(vouts[0]);
  om_value_free(vx);
  om_value_free(vs);
  /* Only exactly [1]. */
  OK(om_tensor_wrap(OM_FLOAT, &two, 1, sr, sizeof sr, &bad));
  ins[1] = bad;
  outs[0] = NULL;
  ERR(om_session_run(s, in_names, ins, 2, out_names, outs, 1), OM_INVALID_ARGUMENT,
      "input 's' must have shape float[], got [2]");
  CHECK(outs[0] == NULL);
  om_tensor_free(bad);
  om_tensor_free(tx);
  om_tensor_free(ts);
  om_session_free(s);
}

/* ---- run options: stopping a run ---- */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* loop.onnx: y = x + trips, one Loop iteration per unit. x is [3] = {1, 2, 3}.
 * `y` NULL: the runtime's output (returned in *fresh); else a bound buffer. */
static om_status* run_loop(const om_session* s, const om_run_options* options, int64_t trips, om_tensor* y,
                           om_tensor** fresh) {
  static float x_data[3] = {1, 2, 3};
  const int64_t dims[1] = {3};
  om_tensor *x = NULL, *m = NULL;
  om_status* st = om_tensor_wrap(OM_FLOAT, dims, 1, x_data, sizeof x_data, &x);
  if (st == NULL) st = om_tensor_wrap(OM_INT64, NULL, 0, &trips, sizeof trips, &m);
  if (st == NULL) {
    const char* in_names[] = {"trips", "x"};
    const om_tensor* ins[] = {m, x};
    const char* out_names[] = {"y"};
    om_tensor* outs[] = {y};
    st = om_session_run_with_options(s, options, in_names, ins, 2, out_names, outs, 1);
    if (y == NULL) *fresh = outs[0];
    else CHECK(outs[0] == y);
  }
  om_tensor_free(x);
  om_tensor_free(m);
  return st;
}

/* Checks y = {1, 2, 3} + trips. */
static void check_loop_result(om_tensor* y, int64_t trips) {
  void* data = NULL;
  OK(om_tensor_data(y, &data));
  for (int i = 0; i < 3 && data != NULL; ++i) CHECK(((float*)data)[i] == (float)(i + 1 + trips));
}

struct terminator {
  om_run_options* options;
  long delay_ms;
  double set_at_ms;
};

static void* terminate_later(void* arg) {
  struct terminator* t = (struct terminator*)arg;
  sleep_ms(t->delay_ms);
  t->set_at_ms = now_ms();
  OK(om_run_options_set_terminate(t->options, 1));
  return NULL;
}

static void test_run_options(void) {
  om_session* s = load("capi/loop.onnx");
  if (s == NULL) return;
  const int64_t forever = (int64_t)1 << 62;
  om_run_options* options = NULL;
  OK(om_run_options_create(&options));
  if (options == NULL) return;
  ERR(om_run_options_set_terminate(options, 2), OM_INVALID_ARGUMENT, "terminate must be 0 or 1, got 2");
  ERR(om_run_options_set_timeout_ms(options, -5), OM_INVALID_ARGUMENT, "timeout must be >= 0 ms");
  ERR(om_run_options_set_terminate(NULL, 1), OM_INVALID_ARGUMENT, "options is NULL");
  ERR(om_run_options_create(NULL), OM_INVALID_ARGUMENT, "out is NULL");
  om_run_options_free(NULL);

  /* With options that stop nothing, and with NULL options, a run is a run. */
  om_tensor* y = NULL;
  OK(run_loop(s, options, 5, NULL, &y));
  if (y) check_loop_result(y, 5);
  om_tensor_free(y);
  y = NULL;
  OK(run_loop(s, NULL, 2, NULL, &y));
  if (y) check_loop_result(y, 2);
  om_tensor_free(y);

  /* A Loop of 2^62 iterations, stopped from another thread while it runs:
   * OM_CANCELLED within 100 ms of the flag being set, the slot still NULL.
   * (On a busy machine a thread may wait for a core: the best of three
   * attempts counts.) */
  double latency = 1e9;
  for (int attempt = 0; attempt < 3 && latency >= 100.0; ++attempt) {
    OK(om_run_options_set_terminate(options, 0));
    struct terminator t = {options, 50, 0};
    pthread_t thread;
    const double start = now_ms();
    CHECK(pthread_create(&thread, NULL, terminate_later, &t) == 0);
    y = NULL;
    ERR(run_loop(s, options, forever, NULL, &y), OM_CANCELLED, "run cancelled: terminate flag set");
    const double end = now_ms();
    pthread_join(thread, NULL);
    CHECK(y == NULL);
    CHECK(end - start >= 50.0); /* it was in flight when the flag was set */
    if (end - t.set_at_ms < latency) latency = end - t.set_at_ms;
  }
  CHECK(latency < 100.0); /* and stopped promptly */
  if (latency >= 100.0) fprintf(stderr, "  stopped %.1f ms after the flag\n", latency);

  /* The flag stays set until cleared: runs with these options stop at once,
   * and write nothing into a bound output. */
  const int64_t dims[1] = {3};
  float bound_data[3] = {-7, -7, -7};
  om_tensor* bound = NULL;
  OK(om_tensor_wrap(OM_FLOAT, dims, 1, bound_data, sizeof bound_data, &bound));
  ERR(run_loop(s, options, 4, bound, NULL), OM_CANCELLED, "terminate flag set");
  CHECK(bound_data[0] == -7 && bound_data[1] == -7 && bound_data[2] == -7);
  /* Cleared, the same session and options run again correctly. */
  OK(om_run_options_set_terminate(options, 0));
  OK(run_loop(s, options, 4, bound, NULL));
  CHECK(bound_data[0] == 5 && bound_data[1] == 6 && bound_data[2] == 7);

  /* A deadline: the run of 2^62 iterations stops 100 ms after it started
   * (the best of three attempts, as above). */
  OK(om_run_options_set_timeout_ms(options, 100));
  double elapsed = 1e9;
  for (int attempt = 0; attempt < 3 && elapsed >= 200.0; ++attempt) {
    y = NULL;
    const double deadline_start = now_ms();
    ERR(run_loop(s, options, forever, NULL, &y), OM_CANCELLED, "run cancelled: deadline of 100 ms exceeded at ");
    const double took = now_ms() - deadline_start;
    CHECK(y == NULL);
    CHECK(took >= 100.0);
    if (took < elapsed) elapsed = took;
  }
  CHECK(elapsed < 200.0);
  /* Runs within the deadline are unaffected; the session is still usable. */
  OK(run_loop(s, options, 1000, NULL, &y));
  if (y) check_loop_result(y, 1000);
  om_tensor_free(y);
  OK(om_run_options_set_timeout_ms(options, 0));

  /* om_session_run_values_with_options: stopped the same way, slots NULL. */
  OK(om_run_options_set_terminate(options, 1));
  {
    static float x_data[3] = {1, 2, 3};
    int64_t trips = 3;
    om_tensor *x = NULL, *m = NULL;
    OK(om_tensor_wrap(OM_FLOAT, dims, 1, x_data, sizeof x_data, &x));
    OK(om_tensor_wrap(OM_INT64, NULL, 0, &trips, sizeof trips, &m));
    om_value *xv = NULL, *mv = NULL;
    OK(om_value_create_tensor(x, &xv));
    OK(om_value_create_tensor(m, &mv));
    const char* in_names[] = {"trips", "x"};
    const om_value* ins[] = {mv, xv};
    const char* out_names[] = {"y"};
    om_value* outs[] = {NULL};
    ERR(om_session_run_values_with_options(s, options, in_names, ins, 2, out_names, outs, 1), OM_CANCELLED,
        "run cancelled: terminate flag set");
    CHECK(outs[0] == NULL);
    OK(om_run_options_set_terminate(options, 0));
    OK(om_session_run_values_with_options(s, options, in_names, ins, 2, out_names, outs, 1));
    om_tensor* yt = NULL;
    if (outs[0]) OK(om_value_get_tensor(outs[0], 0, &yt));
    if (yt) check_loop_result(yt, 3);
    om_tensor_free(yt);
    om_value_free(outs[0]);
    om_value_free(xv);
    om_value_free(mv);
    om_tensor_free(x);
    om_tensor_free(m);
  }
  om_tensor_free(bound);
  om_run_options_free(options);
  om_session_free(s);
}

/* Bound outputs that alias inputs or each other (issue #23). */
static void test_aliasing(void) {
  om_session_options* opts = NULL;
  OK(om_session_options_create(&opts));
  OK(om_session_options_set_intra_op_threads(opts, 2));
  om_session* s = NULL;
  OK(om_session_create(path_of("capi/alias.onnx"), opts, &s));
  om_session_options_free(opts);
  if (s == NULL) return;
  const char* in_names[] = {"x"};
  const char* out_names[] = {"neg", "id"};

  /* neg bound to x's own memory beside id, a view of x: id is x from before. */
  float x[4] = {1, 2, 3, 4};
  const int64_t dims[1] = {4};
  om_tensor* tx = NULL;
  OK(om_tensor_wrap(OM_FLOAT, dims, 1, x, sizeof x, &tx));
  const om_tensor* ins[] = {tx};
  om_tensor* outs[2] = {tx, NULL};
  OK(om_session_run(s, in_names, ins, 1, out_names, outs, 2));
  if (outs[1] != NULL) {
    void* data = NULL;
    OK(om_tensor_data(outs[1], &data));
    for (int i = 0; i < 4; ++i) CHECK(((float*)data)[i] == (float)(i + 1));
    om_tensor_free(outs[1]);
  }
  for (int i = 0; i < 4; ++i) CHECK(x[i] == -(float)(i + 1));
  om_tensor_free(tx);

  /* A bound output over the input shifted by one element (4 MiB, 2 threads):
   * every element right. */
  enum { N = 1 << 20 };
  float* memory = malloc((N + 1) * sizeof(float));
  const int64_t ndims[1] = {N};
  om_tensor *in = NULL, *out = NULL;
  for (int i = 0; i <= N; ++i) memory[i] = (float)i;
  OK(om_tensor_wrap(OM_FLOAT, ndims, 1, memory, (size_t)N * sizeof(float), &in));
  OK(om_tensor_wrap(OM_FLOAT, ndims, 1, memory + 1, (size_t)N * sizeof(float), &out));
  const om_tensor* big_ins[] = {in};
  om_tensor* big_outs[1] = {out};
  const char* id_name[] = {"id"};
  OK(om_session_run(s, in_names, big_ins, 1, id_name, big_outs, 1));
  int wrong = 0;
  for (int i = 0; i < N; ++i) wrong += memory[i + 1] != (float)i;
  CHECK(wrong == 0);
  /* And the other way (the output before the input). */
  for (int i = 0; i <= N; ++i) memory[i] = (float)i;
  om_tensor_free(in);
  om_tensor_free(out);
  OK(om_tensor_wrap(OM_FLOAT, ndims, 1, memory + 1, (size_t)N * sizeof(float), &in));
  OK(om_tensor_wrap(OM_FLOAT, ndims, 1, memory, (size_t)N * sizeof(float), &out));
  big_ins[0] = in;
  big_outs[0] = out;
  OK(om_session_run(s, in_names, big_ins, 1, id_name, big_outs, 1));
  wrong = 0;
  for (int i = 0; i < N; ++i) wrong += memory[i] != (float)(i + 1);
  CHECK(wrong == 0);
  om_tensor_free(in);
  om_tensor_free(out);
  free(memory);
  om_session_free(s);

  /* The same tensor bound to two outputs: refused, nothing written. */
  s = load("capi/chain.onnx");
  if (s == NULL) return;
  float xs[9] = {-1, 2, -3, 4, -5, 6, -7, 8, -9}, buffer[10] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  const int64_t xdims[2] = {3, 3};
  om_tensor *t_in = NULL, *t_buf = NULL, *t_shifted = NULL;
  OK(om_tensor_wrap(OM_FLOAT, xdims, 2, xs, sizeof xs, &t_in));
  OK(om_tensor_wrap(OM_FLOAT, xdims, 2, buffer, 9 * sizeof(float), &t_buf));
  OK(om_tensor_wrap(OM_FLOAT, xdims, 2, buffer + 1, 9 * sizeof(float), &t_shifted));
  const char* chain_in[] = {"x"};
  const om_tensor* chain_ins[] = {t_in};
  const char* chain_out[] = {"relu", "relu_t"};
  om_tensor* same[2] = {t_buf, t_buf};
  ERR(om_session_run(s, chain_in, chain_ins, 1, chain_out, same, 2), OM_INVALID_ARGUMENT,
      "outputs 'relu' and 'relu_t' are bound to overlapping memory");
  om_tensor* shifted[2] = {t_shifted, t_buf}; /* two tensors, overlapping memory */
  ERR(om_session_run(s, chain_in, chain_ins, 1, chain_out, shifted, 2), OM_INVALID_ARGUMENT,
      "are bound to overlapping memory");
  for (int i = 0; i < 10; ++i) CHECK(buffer[i] == 9);
  om_tensor_free(t_in);
  om_tensor_free(t_buf);
  om_tensor_free(t_shifted);
  om_session_free(s);

  /* Memory not aligned to the element type is refused by om_tensor_wrap. */
  double storage[4] = {0};
  char* odd = (char*)storage + 1;
  om_tensor* t = NULL;
  ERR(om_tensor_wrap(OM_FLOAT, dims, 1, odd, 16, &t), OM_INVALID_ARGUMENT, "is not aligned to 4 bytes, as float");
  CHECK(t == NULL);
  const int64_t two[1] = {2};
  ERR(om_tensor_wrap(OM_INT64, two, 1, (char*)storage + 4, 24, &t), OM_INVALID_ARGUMENT, "not aligned to 8 bytes");
  ERR(om_tensor_wrap(OM_FLOAT16, dims, 1, odd, 8, &t), OM_INVALID_ARGUMENT, "not aligned to 2 bytes");
  OK(om_tensor_wrap(OM_UINT8, dims, 1, odd, 4, &t)); /* bytes go anywhere */
  om_tensor_free(t);
  t = NULL;
  OK(om_tensor_wrap(OM_FLOAT, dims, 1, (char*)storage + 4, 16, &t));
  om_tensor_free(t);
}

/* bool memory with bytes other than 0 and 1: any nonzero byte is true, and
 * the caller's memory is left alone (issue #23). */
static void test_bool_bytes(void) {
  om_session* s = load("capi/bool_ops.onnx");
  if (s == NULL) return;
  unsigned char mask[5] = {0, 255, 2, 0, 1};
  const int64_t dims[1] = {5};
  om_tensor* tm = NULL;
  OK(om_tensor_wrap(OM_BOOL, dims, 1, mask, sizeof mask, &tm));
  const char* in_names[] = {"m"};
  const om_tensor* ins[] = {tm};
  const char* out_names[] = {"not", "eq", "f", "nz"};
  om_tensor* outs[4] = {NULL, NULL, NULL, NULL};
  OK(om_session_run(s, in_names, ins, 1, out_names, outs, 4));
  const unsigned char want_not[5] = {1, 0, 0, 1, 0}, want_eq[5] = {0, 1, 1, 0, 1};
  const float want_f[5] = {0, 1, 1, 0, 1};
  const int64_t want_nz[3] = {1, 2, 4};
  void* data = NULL;
  if (outs[0] && outs[1] && outs[2] && outs[3]) {
    OK(om_tensor_data(outs[0], &data));
    CHECK(memcmp(data, want_not, 5) == 0);
    OK(om_tensor_data(outs[1], &data));
    CHECK(memcmp(data, want_eq, 5) == 0);
    OK(om_tensor_data(outs[2], &data));
    CHECK(memcmp(data, want_f, sizeof want_f) == 0);
    int64_t count = 0;
    OK(om_tensor_element_count(outs[3], &count));
    CHECK(count == 3);
    OK(om_tensor_data(outs[3], &data));
    if (count == 3) CHECK(memcmp(data, want_nz, sizeof want_nz) == 0);
  } else {
    CHECK(!"every output");
  }
  for (int i = 0; i < 4; ++i) om_tensor_free(outs[i]);
  CHECK(mask[1] == 255 && mask[2] == 2); /* untouched */

  /* Through om_session_run_values too. */
  om_value* v = NULL;
  OK(om_value_create_tensor(tm, &v));
  const om_value* vins[] = {v};
  om_value* vouts[1] = {NULL};
  const char* not_name[] = {"not"};
  OK(om_session_run_values(s, in_names, vins, 1, not_name, vouts, 1));
  if (vouts[0]) {
    om_tensor* t = NULL;
    OK(om_value_get_tensor(vouts[0], 0, &t));
    OK(om_tensor_data(t, &data));
    CHECK(memcmp(data, want_not, 5) == 0);
    om_tensor_free(t);
    om_value_free(vouts[0]);
  }
  om_value_free(v);
  om_tensor_free(tm);
  om_session_free(s);
}

/* ---- profiling ---- */

/* The whole of a file, NUL-terminated (the caller frees it), or NULL. */
static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = size >= 0 ? malloc((size_t)size + 1) : NULL;
  if (text != NULL) text[fread(text, 1, (size_t)size, f)] = '\0';
  fclose(f);
  return text;
}

static int count_of(const char* text, const char* what) {
  int n = 0;
  for (const char* p = text; (p = strstr(p, what)) != NULL; p += strlen(what)) ++n;
  return n;
}

/* profile.onnx: z = If(sum(x) > 0, Relu(x), Neg(x)) + trips * x (a Loop). */
static om_status* run_profiled(const om_session* s, float sign, int64_t trips, float* z) {
  float x_data[6];
  for (int i = 0; i < 6; ++i) x_data[i] = sign * (float)(i + 1);
  const int64_t dims[2] = {2, 3};
  om_tensor *x = NULL, *m = NULL, *out = NULL;
  om_status* st = om_tensor_wrap(OM_FLOAT, dims, 2, x_data, sizeof x_data, &x);
  if (st == NULL) st = om_tensor_wrap(OM_INT64, NULL, 0, &trips, sizeof trips, &m);
  if (st == NULL) {
    const char* in_names[] = {"x", "trips"};
    const om_tensor* ins[] = {x, m};
    const char* out_names[] = {"z"};
    st = om_session_run(s, in_names, ins, 2, out_names, &out, 1);
  }
  void* data = NULL;
  if (st == NULL) st = om_tensor_data(out, &data);
  if (st == NULL) memcpy(z, data, sizeof x_data);
  om_tensor_free(x);
  om_tensor_free(m);
  om_tensor_free(out);
  return st;
}

static void test_profiling(void) {
  ERR(om_session_options_enable_profiling(NULL, "p"), OM_INVALID_ARGUMENT, "options is NULL");
  /* Off: end_profiling is an error. */
  om_session* plain = load("capi/profile.onnx");
  const char* path = NULL;
  if (plain != NULL) ERR(om_session_end_profiling(plain, &path), OM_INVALID_ARGUMENT, "profiling is off");
  om_session_free(plain);
  om_session_options* options = NULL;
  OK(om_session_options_create(&options));
  if (options == NULL) return;
  OK(om_session_options_enable_profiling(options, "unused"));
  OK(om_session_options_enable_profiling(options, "")); /* "" turns it off again */
  om_session* off = NULL;
  OK(om_session_create(path_of("capi/profile.onnx"), options, &off));
  if (off != NULL) ERR(om_session_end_profiling(off, &path), OM_INVALID_ARGUMENT, "profiling is off");
  om_session_free(off);

  char dir[] = "/tmp/capi_profile_XXXXXX";
  if (mkdtemp(dir) == NULL) {
    CHECK(!"mkdtemp");
    om_session_options_free(options);
    return;
  }
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s/trace", dir);
  OK(om_session_options_enable_profiling(options, prefix));
  om_session* s = NULL;
  OK(om_session_create(path_of("capi/profile.onnx"), options, &s));
  om_session_options_free(options); /* the session keeps the prefix */
  if (s == NULL) return;
  ERR(om_session_end_profiling(s, NULL), OM_INVALID_ARGUMENT, "path is NULL");
  ERR(om_session_end_profiling(NULL, &path), OM_INVALID_ARGUMENT, "session is NULL");

  /* Two runs through the then branch and three Loop iterations each. */
  float z[6];
  for (int r = 0; r < 2; ++r) {
    OK(run_profiled(s, 1.0f, 3, z));
    for (int i = 0; i < 6; ++i) CHECK(z[i] == 4.0f * (float)(i + 1));
  }
  path = NULL;
  OK(om_session_end_profiling(s, &path));
  char first[256] = "";
  const char* first_path = path; /* read again after later calls: another thread may hold it */
  if (path != NULL) {
    snprintf(first, sizeof first, "%s", path);
    /* "<prefix>_YYYY-MM-DD_HH-MM-SS_mmm.json" */
    CHECK(strncmp(path, prefix, strlen(prefix)) == 0 && strlen(path) == strlen(prefix) + 29);
    CHECK(strcmp(path + strlen(path) - 5, ".json") == 0);
  }
  char* text = path != NULL ? read_file(path) : NULL;
  CHECK(text != NULL);
  if (text != NULL) {
    CHECK(text[0] == '[' && strcmp(text + strlen(text) - 2, "]\n") == 0);
    /* Per run 5 nodes at the top and in the taken branch, 2 per iteration. */
    CHECK(count_of(text, "\"cat\" : \"Node\"") == 2 * (4 + 1 + 3 * 2));
    CHECK(count_of(text, "_kernel_time\"") == 22);
    CHECK(count_of(text, "\"name\" :\"sum_kernel_time\",\"args\" : {\"op_name\" : \"ReduceSum\"") == 2);
    CHECK(count_of(text, "\"name\" :\"if/then_branch/relu_kernel_time\",\"args\" : {\"op_name\" : \"Relu\"") == 2);
    CHECK(count_of(text, "\"name\" :\"if/else_branch/neg_kernel_time\"") == 0);
    CHECK(count_of(text, "\"name\" :\"loop/body/add_kernel_time\"") == 6);
    CHECK(count_of(text, "\"name\" :\"loop/body/cond_kernel_time\"") == 6);
    CHECK(count_of(text, "\"name\" :\"loop_kernel_time\",\"args\" : {\"op_name\" : \"Loop\"") == 2);
    /* Types and shapes as onnxruntime writes them. */
    CHECK(count_of(text, "\"input_type_shape\" : [{\"float\":[2,3]},{\"float\":[2,3]}],"
                         "\"output_type_shape\" : [{\"float\":[2,3]}]") == 6);
    CHECK(count_of(text, "\"op_name\" : \"ReduceSum\",\"provider\" : \"CPUExecutionProvider\",\"node_index\" : \"0\","
                         "\"activation_size\" : \"24\",\"parameter_size\" : \"0\",\"output_size\" : \"4\","
                         "\"input_type_shape\" : [{\"float\":[2,3]}],\"output_type_shape\" : [{\"float\":[]}]") == 2);
    CHECK(count_of(text, "\"input_type_shape\" : [{\"int64\":[]},{\"float\":[2,3]}]") == 2); /* the Loop */
    CHECK(count_of(text, "\"name\" :\"model_run\"") == 2);
    CHECK(count_of(text, "\"name\" :\"session_initialization\"") == 1);
    CHECK(count_of(text, "\"ph\" : \"X\"") == count_of(text, "\"cat\" : "));
    free(text);
  }

  /* A second end_profiling writes the runs since into a new file. */
  OK(run_profiled(s, -1.0f, 1, z));
  for (int i = 0; i < 6; ++i) CHECK(z[i] == 0.0f);
  path = NULL;
  OK(om_session_end_profiling(s, &path));
  CHECK(path != NULL && strcmp(path, first) != 0);
  char second[256] = "";
  if (path != NULL) snprintf(second, sizeof second, "%s", path);
  text = path != NULL ? read_file(path) : NULL;
  CHECK(text != NULL);
  if (text != NULL) {
    CHECK(count_of(text, "_kernel_time\"") == 4 + 1 + 1 * 2);
    CHECK(count_of(text, "\"name\" :\"if/else_branch/neg_kernel_time\",\"args\" : {\"op_name\" : \"Neg\"") == 1);
    CHECK(count_of(text, "relu") == 0);
    CHECK(count_of(text, "\"name\" :\"model_run\"") == 1);
    CHECK(count_of(text, "session_initialization") == 0);
    free(text);
  }
  char* again = read_file(first); /* the first file is left as it was */
  CHECK(again != NULL && count_of(again, "_kernel_time\"") == 22);
  free(again);
  /* Nothing since: a file with no events. */
  path = NULL;
  OK(om_session_end_profiling(s, &path));
  text = path != NULL ? read_file(path) : NULL;
  CHECK(text != NULL && strcmp(text, "[\n\n]\n") == 0);
  free(text);
  CHECK(path != NULL && strcmp(path, second) != 0 && strcmp(path, first) != 0); /* even within a millisecond */
  CHECK(first_path != NULL && strcmp(first_path, first) == 0); /* each path stays valid with the session */
  /* The three files, then the folder: nothing else was left in it (no temporary). */
  if (path != NULL) CHECK(unlink(path) == 0);
  CHECK(unlink(first) == 0 && unlink(second) == 0);
  CHECK(rmdir(dir) == 0);
  om_session_free(s);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capi_test TESTDATA_DIR\n");
    return 2;
  }
  testdata = argv[1];
  test_status_and_version();
  test_tensors();
  test_options();
  test_introspection();
  test_load_errors();
  test_run();
  test_cache_in_place();
  test_threads();
  test_custom_op();
  test_custom_op_registration();
  test_custom_op_late_shape();
  test_custom_op_bool_bytes();
  test_sequences_and_optionals();
  test_run_values_copies_what_is_asked();
  test_string_tensors();
  test_string_runs();
  test_metadata();
  test_scalar_as_shape_one();
  test_run_options();
  test_aliasing();
  test_bool_bytes();
  test_profiling();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("capi_test: all checks passed\n");
  return 0;
}
