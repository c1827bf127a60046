/*===- input.c - Reading a classifier's input from a file -----------------===*/

#include "input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(char *error, size_t error_size, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(error, error_size, format, args);
  va_end(args);
}

static int ends_with(const char *text, const char *suffix) {
  size_t length = strlen(text), suffix_length = strlen(suffix);
  return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

/* Reads the whole file; NULL with `error` filled on failure. */
static unsigned char *read_file(const char *path, size_t *out_size, char *error,
                                size_t error_size) {
  FILE *file = fopen(path, "rb");
  if (!file) {
    fail(error, error_size, "cannot open %s", path);
    return NULL;
  }
  unsigned char *bytes = NULL;
  size_t size = 0, capacity = 0, got;
  do {
    if (size == capacity) {
      capacity = capacity ? 2 * capacity : 1 << 16;
      unsigned char *grown = realloc(bytes, capacity);
      if (!grown) {
        free(bytes);
        fclose(file);
        fail(error, error_size, "out of memory reading %s", path);
        return NULL;
      }
      bytes = grown;
    }
    got = fread(bytes + size, 1, capacity - size, file);
    size += got;
  } while (got > 0);
  int failed = ferror(file);
  fclose(file);
  if (failed) {
    free(bytes);
    fail(error, error_size, "cannot read %s", path);
    return NULL;
  }
  *out_size = size;
  return bytes;
}

static size_t element_count(const int64_t *shape, size_t rank) {
  size_t count = 1;
  for (size_t i = 0; i < rank; ++i)
    count *= (size_t)shape[i];
  return count;
}

/* A .npy file (format 1.0, 2.0 or 3.0) of little-endian float32 in C order. */
static float *read_npy(const char *path, const int64_t *shape, size_t rank, char *error,
                       size_t error_size) {
  size_t size;
  unsigned char *bytes = read_file(path, &size, error, error_size);
  if (!bytes)
    return NULL;
  float *data = NULL;
  if (size < 12 || memcmp(bytes, "\x93NUMPY", 6) != 0 || bytes[6] < 1 || bytes[6] > 3) {
    fail(error, error_size, "%s is not a .npy file", path);
    goto done;
  }
  size_t header_offset = bytes[6] == 1 ? 10 : 12;
  size_t header_size = bytes[6] == 1 ? (size_t)(bytes[8] | bytes[9] << 8)
                                     : (size_t)bytes[8] | (size_t)bytes[9] << 8 |
                                           (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
  if (header_size > size - header_offset) {
    fail(error, error_size, "%s: the .npy header is cut short", path);
    goto done;
  }
  char header[4096];
  size_t copied = header_size < sizeof header - 1 ? header_size : sizeof header - 1;
  memcpy(header, bytes + header_offset, copied);
  header[copied] = '\0';
  if (!strstr(header, "'descr': '<f4'") || !strstr(header, "'fortran_order': False")) {
    fail(error, error_size, "%s: expected float32 ('<f4') in C order, the header says %s", path,
         header);
    goto done;
  }
  size_t count = element_count(shape, rank);
  size_t payload = size - header_offset - header_size;
  if (payload != count * sizeof(float)) {
    fail(error, error_size, "%s holds %zu float32 values, the model's input takes %zu", path,
         payload / sizeof(float), count);
    goto done;
  }
  data = malloc(payload);
  if (!data) {
    fail(error, error_size, "out of memory");
    goto done;
  }
  memcpy(data, bytes + header_offset + header_size, payload);
done:
  free(bytes);
  return data;
}

/* The next header number of a PNM file, skipping whitespace and comments. */
static int pnm_number(const unsigned char *bytes, size_t size, size_t *at, long *out) {
  for (;;) {
    while (*at < size && strchr(" \t\r\n", bytes[*at]))
      ++*at;
    if (*at < size && bytes[*at] == '#') {
      while (*at < size && bytes[*at] != '\n')
        ++*at;
      continue;
    }
    break;
  }
  long value = 0;
  size_t start = *at;
  while (*at < size && bytes[*at] >= '0' && bytes[*at] <= '9' && value < 1L << 24)
    value = 10 * value + (bytes[(*at)++] - '0');
  *out = value;
  return *at > start;
}

/* A binary PGM (P5) or PPM (P6) image with 8-bit samples, resized to the
 * NCHW input's height and width and scaled to [0, 1]. */
static float *read_pnm(const char *path, const int64_t *shape, size_t rank, char *error,
                       size_t error_size) {
  if (rank != 4 || (shape[1] != 1 && shape[1] != 3)) {
    fail(error, error_size, "an image needs an NCHW input with 1 or 3 channels");
    return NULL;
  }
  size_t size;
  unsigned char *bytes = read_file(path, &size, error, error_size);
  if (!bytes)
    return NULL;
  float *data = NULL;
  size_t at = 2;
  long width, height, max_value;
  int channels = size >= 2 && bytes[0] == 'P' ? (bytes[1] == '5' ? 1 : bytes[1] == '6' ? 3 : 0) : 0;
  if (!channels || !pnm_number(bytes, size, &at, &width) ||
      !pnm_number(bytes, size, &at, &height) || !pnm_number(bytes, size, &at, &max_value) ||
      width <= 0 || height <= 0 || max_value <= 0 || max_value > 255 || at >= size) {
    fail(error, error_size, "%s is not a binary PGM or PPM image with 8-bit samples", path);
    goto done;
  }
  const unsigned char *pixels = bytes + at + 1; /* one whitespace ends the header */
  if ((size_t)(bytes + size - pixels) < (size_t)(width * height * channels)) {
    fail(error, error_size, "%s: the pixels are cut short", path);
    goto done;
  }
  size_t batch = (size_t)shape[0], planes = (size_t)shape[1];
  size_t out_height = (size_t)shape[2], out_width = (size_t)shape[3];
  data = malloc(element_count(shape, rank) * sizeof(float));
  if (!data) {
    fail(error, error_size, "out of memory");
    goto done;
  }
  /* Bilinear, sampling at pixel centres; every image of the batch is the
   * same picture. */
  for (size_t c = 0; c < planes; ++c)
    for (size_t y = 0; y < out_height; ++y)
      for (size_t x = 0; x < out_width; ++x) {
        float sy = ((float)y + 0.5f) * (float)height / (float)out_height - 0.5f;
        float sx = ((float)x + 0.5f) * (float)width / (float)out_width - 0.5f;
        sy = sy < 0 ? 0 : sy;
        sx = sx < 0 ? 0 : sx;
        long y0 = (long)sy, x0 = (long)sx;
        long y1 = y0 + 1 < height ? y0 + 1 : y0, x1 = x0 + 1 < width ? x0 + 1 : x0;
        float fy = sy - (float)y0, fx = sx - (float)x0;
        float value = 0;
        /* A gray image feeds all three planes of a colour input; a colour
         * image feeds a gray input its average. */
        int first = channels == 3 && planes == 3 ? (int)c : 0;
        int used = channels == 3 && planes == 1 ? 3 : 1;
        for (int k = first; k < first + used; ++k) {
          float top = pixels[(y0 * width + x0) * channels + k] * (1 - fx) +
                      pixels[(y0 * width + x1) * channels + k] * fx;
          float bottom = pixels[(y1 * width + x0) * channels + k] * (1 - fx) +
                         pixels[(y1 * width + x1) * channels + k] * fx;
          value += top * (1 - fy) + bottom * fy;
        }
        value /= (float)used * (float)max_value;
        for (size_t n = 0; n < batch; ++n)
          data[((n * planes + c) * out_height + y) * out_width + x] = value;
      }
done:
  free(bytes);
  return data;
}

float *classify_read_input(const char *path, const int64_t *shape, size_t rank, char *error,
                           size_t error_size) {
  if (ends_with(path, ".npy"))
    return read_npy(path, shape, rank, error, error_size);
  if (ends_with(path, ".pgm") || ends_with(path, ".ppm"))
    return read_pnm(path, shape, rank, error, error_size);
  fail(error, error_size, "%s: expected a .npy tensor or a .pgm/.ppm image", path);
  return NULL;
}

void classify_top_k(const float *scores, size_t count, size_t k, size_t *out_indices) {
  for (size_t rank = 0; rank < k; ++rank) {
    size_t best = count;
    for (size_t i = 0; i < count; ++i) {
      int taken = 0;
      for (size_t j = 0; j < rank; ++j)
        taken |= out_indices[j] == i;
      if (!taken && (best == count || scores[i] > scores[best]))
        best = i;
    }
    out_indices[rank] = best;
  }
}
