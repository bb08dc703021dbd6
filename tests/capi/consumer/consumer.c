/* A program that uses an installed onnx-mini: loads a model, runs it on
 * caller memory, prints the first output value. Usage: consumer MODEL */
#include <stdio.h>

#include <onnx_mini.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  om_session* session = NULL;
  om_status* st = om_session_create(argv[1], NULL, &session);
  if (st != NULL) {
    fprintf(stderr, "consumer: %s\n", om_status_message(st));
    om_status_free(st);
    return 1;
  }
  float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const int64_t dims[2] = {2, 4};
  om_tensor* input = NULL;
  st = om_tensor_wrap(OM_FLOAT, dims, 2, x, sizeof x, &input);
  const char* in_names[] = {"x"};
  const char* out_names[] = {"y"};
  om_tensor* outputs[1] = {NULL};
  if (st == NULL) st = om_session_run(session, in_names, (const om_tensor* const*)&input, 1, out_names, outputs, 1);
  void* data = NULL;
  if (st == NULL) st = om_tensor_data(outputs[0], &data);
  int rc = 0;
  if (st != NULL) {
    fprintf(stderr, "consumer: %s\n", om_status_message(st));
    rc = 1;
  } else {
    printf("onnx-mini %s: y[0] = %g\n", om_version(), ((float*)data)[0]);
  }
  om_status_free(st);
  om_tensor_free(outputs[0]);
  om_tensor_free(input);
  om_session_free(session);
  return rc;
}
