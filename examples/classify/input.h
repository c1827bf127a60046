/*===- input.h - Reading a classifier's input from a file -----------------===*
 *
 * Shared by the C and C++ examples: an image (binary PGM or PPM, 8-bit) or a
 * tensor (.npy of float32) becomes the float32 data of a model input.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TESSEL_EXAMPLES_CLASSIFY_INPUT_H
#define TESSEL_EXAMPLES_CLASSIFY_INPUT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads `path` as the data of an input of shape `shape` (rank `rank`):
 *   *.npy        float32, C order, with as many elements as the shape;
 *   *.pgm, *.ppm an image for an NCHW input with 1 or 3 channels, resized
 *                (bilinear) to its height and width, pixels scaled to [0, 1].
 * On success returns a malloc'ed array of the shape's element count that
 * the caller frees; on failure returns NULL and writes why to `error`. */
float *classify_read_input(const char *path, const int64_t *shape, size_t rank, char *error,
                           size_t error_size);

/* The indices of the `k` largest of `scores[0..count)`, largest first, into
 * `out_indices` (k <= count). */
void classify_top_k(const float *scores, size_t count, size_t k, size_t *out_indices);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_EXAMPLES_CLASSIFY_INPUT_H */
