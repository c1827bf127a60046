/*===- classify.c - Top-5 classes of an image, through the C API ----------===*
 *
 *   classify-c model.tsl input.{ppm,pgm,npy}
 *
 * Loads a compiled model, feeds its first input from the file, and prints
 * the five largest scores of its first output.
 *
 *===----------------------------------------------------------------------===*/

#include "input.h"

#include <tessel/runtime.h>

#include <stdio.h>
#include <stdlib.h>

enum { kTopK = 5 };

/* Prints a failed call's status, frees it, and says whether it failed. */
static int failed(tsl_status status, const char *what) {
  if (!status)
    return 0;
  fprintf(stderr, "classify: %s: %s: %s\n", what, tsl_status_code_name(tsl_status_get_code(status)),
          tsl_status_get_message(status));
  tsl_status_free(status);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s model.tsl input.{ppm,pgm,npy}\n", argv[0]);
    return 2;
  }
  int exit_code = 1;
  tsl_module *module = NULL;
  tsl_session *session = NULL;
  tsl_tensor *input = NULL, *output = NULL;
  float *data = NULL;

  if (failed(tsl_module_load_file(argv[1], &module), argv[1]))
    goto done;
  tsl_tensor_info input_info, output_info;
  if (failed(tsl_module_input_info(module, 0, &input_info), "input 0") ||
      failed(tsl_module_output_info(module, 0, &output_info), "output 0"))
    goto done;
  if (input_info.dtype != TSL_F32 || output_info.dtype != TSL_F32) {
    fprintf(stderr, "classify: the model's first input and output must be f32, not %s and %s\n",
            tsl_dtype_name(input_info.dtype), tsl_dtype_name(output_info.dtype));
    goto done;
  }
  char error[512];
  data = classify_read_input(argv[2], input_info.shape, input_info.rank, error, sizeof error);
  if (!data) {
    fprintf(stderr, "classify: %s\n", error);
    goto done;
  }
  size_t count = 1;
  for (size_t i = 0; i < input_info.rank; ++i)
    count *= (size_t)input_info.shape[i];
  if (failed(tsl_tensor_wrap(TSL_F32, input_info.shape, input_info.rank, data,
                             count * sizeof(float), &input),
             "input tensor") ||
      failed(tsl_session_create(module, NULL, &session), "session") ||
      failed(tsl_session_run(session, &input, 1, &output, 1), "run"))
    goto done;

  /* The scores of the first image of the batch. */
  size_t classes = tsl_tensor_byte_size(output) / sizeof(float);
  if (output_info.rank > 0 && output_info.shape[0] > 0)
    classes /= (size_t)output_info.shape[0];
  size_t top[kTopK];
  size_t shown = classes < kTopK ? classes : kTopK;
  const float *scores = tsl_tensor_data(output);
  classify_top_k(scores, classes, shown, top);
  printf("top-%zu of '%s' (%zu classes):\n", shown, output_info.name, classes);
  for (size_t i = 0; i < shown; ++i)
    printf("  %zu. class %zu  score %.6g\n", i + 1, top[i], scores[top[i]]);
  exit_code = 0;

done:
  tsl_tensor_release(output);
  tsl_tensor_release(input);
  tsl_session_release(session);
  tsl_module_release(module);
  free(data);
  return exit_code;
}
